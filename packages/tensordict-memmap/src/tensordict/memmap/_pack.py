"""``td.pack()`` and :class:`PackLayout`: every leaf of a tensordict in one tensor of
features, and back (upstream tensordict 0.15.3's API).

Each leaf is flattened after the batch dimensions and the leaves are concatenated, in
sorted key order unless a layout gives the order; :meth:`PackLayout.unpack` rebuilds the
tensordict with leaves that view the packed tensor.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(p=torch.zeros(5), v=torch.ones(5, 3), batch_size=[5])
    >>> flat, layout = pack(td)
    >>> flat.shape, layout.keys, layout.offsets
    (torch.Size([5, 4]), ('p', 'v'), (0, 1))
    >>> layout.unpack(flat[:2])["v"].shape
    torch.Size([2, 3])
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from tensordict import NestedKey, NonTensorData, NonTensorStack, TensorDict
from tensordict.memmap import _state


def _sort_key(key: NestedKey) -> str:
    """The order of ``keys(True, True, sort=True)``."""
    return ".".join(key) if key.__class__ is tuple else key


@dataclasses.dataclass(frozen=True)
class PackLayout:
    """The layout of a tensordict packed by ``td.pack()``: the column of each leaf, and
    the nesting, batch shapes and classes that :meth:`unpack` rebuilds. Frozen, hashable,
    compared by value (a module can cache it; ``torch.compile`` treats it as a constant).

    Attributes:
        keys: the leaf keys in column order.
        shapes: the feature shape of each leaf (its shape after the batch dimensions).
        dim: where the packed dimension is, counted from the end (``pack`` stores a
            negative int, so the packed tensor may get extra leading batch dimensions).
        nested: one ``(key, batch_shape, cls)`` per nested collection: its batch shape
            after the root's batch dimensions, and its tensorclass (None: a TensorDict).
        device: the device of the packed tensordict.
        cls: the tensorclass of the packed tensordict, or None.
        offsets: the first column of each leaf (computed).
        numel: the number of columns (computed).

    Only tensorclasses come back with their class; other collections come back as
    TensorDicts.

    >>> layout = PackLayout(keys=("a", ("n", "b")), shapes=([2], (3, 1)),
    ...                     nested=(("n", [], None),))
    >>> layout.offsets, layout.numel, layout.shapes[1]
    ((0, 2), 5, torch.Size([3, 1]))
    """

    keys: tuple[NestedKey, ...]
    shapes: tuple[torch.Size, ...]
    dim: int = -1
    nested: tuple[tuple[NestedKey, torch.Size, type | None], ...] = ()
    device: torch.device | None = None
    cls: type | None = None
    offsets: tuple[int, ...] = dataclasses.field(init=False)
    numel: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        shapes = tuple(torch.Size(shape) for shape in self.shapes)
        offsets, numel = [], 0
        for shape in shapes:
            offsets.append(numel)
            numel += shape.numel()
        set_field = object.__setattr__
        set_field(self, "keys", tuple(self.keys))
        set_field(self, "shapes", shapes)
        set_field(self, "nested", tuple((key, torch.Size(batch), cls)
                                        for key, batch, cls in self.nested))
        set_field(self, "offsets", tuple(offsets))
        set_field(self, "numel", numel)

    def unpack(self, flat: torch.Tensor) -> Any:
        """Rebuild the tensordict from a packed tensor (its leaves view ``flat``). The
        batch size is the shape of ``flat`` without the packed dimension, so ``flat`` may
        have other batch dimensions than the packed tensordict (after an
        ``index_select``, say). The result is on ``flat``'s device if the packed
        tensordict had a device.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(p=torch.zeros(5), v=torch.ones(5, 3), batch_size=[5])
        >>> flat, layout = pack(td)
        >>> out = layout.unpack(flat)
        >>> bool((out == td).all()), out["p"].data_ptr() == flat.data_ptr()
        (True, True)
        """
        ndim = flat.ndim
        if not -ndim <= self.dim < ndim:
            raise IndexError(
                f"dim {self.dim} is out of range for a tensor with {ndim} dimensions.")
        if flat.shape[self.dim] != self.numel:
            raise ValueError(f"Expected {self.numel} entries along dim {self.dim} of the "
                             f"packed tensor, got {flat.shape[self.dim]}.")
        columns = flat if self.dim % ndim == ndim - 1 else flat.movedim(self.dim, -1)
        batch = columns.shape[:-1]
        device = None if self.device is None else flat.device
        plan = self.__dict__.get("_plan") or self._make_plan()
        entries = [dict.fromkeys(names) for names in plan.names]
        for node, name, shape, offset in plan.leaves:
            entries[node][name] = columns.narrow(-1, offset, shape.numel()).unflatten(
                -1, shape) if shape else columns.select(-1, offset)
        for node, parent, name, nested_batch, cls in plan.nested:
            child = TensorDict(entries[node], batch_size=batch + nested_batch, device=device)
            entries[parent][name] = child if cls is None else cls.from_tensordict(child)
        root = TensorDict(entries[0], batch_size=batch, device=device)
        return root if self.cls is None else self.cls.from_tensordict(root)

    def _make_plan(self) -> _Plan:
        """How :meth:`unpack` builds the tensordict, made once per layout (a parent that
        :attr:`nested` does not list is a TensorDict of the root's batch size)."""
        nodes = [(_path(key), batch, cls) for key, batch, cls in self.nested]
        index = {path: node for node, (path, _, _) in enumerate(nodes, 1)}
        for key in self.keys:
            path = _path(key)
            for depth in range(1, len(path)):
                if path[:depth] not in index:
                    index[path[:depth]] = len(nodes) + 1
                    nodes.append((path[:depth], torch.Size(), None))
        names: list[list[str]] = [[] for _ in range(len(nodes) + 1)]

        def place(path: tuple[str, ...]) -> int:
            """Reserve the slot of ``path`` in its parent (the entries keep the order of
            the keys); returns the parent's node."""
            parent = index[path[:-1]] if len(path) > 1 else 0
            if path[-1] not in names[parent]:
                if len(path) > 1:
                    place(path[:-1])
                names[parent].append(path[-1])
            return parent

        leaves = tuple((place(_path(key)), _path(key)[-1], shape, offset)
                       for key, shape, offset in zip(self.keys, self.shapes, self.offsets,
                                                     strict=False))
        nested = [(index[path], place(path), path[-1], batch, cls)
                  for path, batch, cls in nodes]
        nested.sort(key=lambda item: -len(nodes[item[0] - 1][0]))  # deepest first
        plan = _Plan(tuple(map(tuple, names)), leaves, tuple(nested))
        object.__setattr__(self, "_plan", plan)
        return plan


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The nodes of an unpacked tensordict (0: the root, then ``PackLayout.nested``): the
    entry names of each node in order, where each leaf goes, and the nested nodes,
    deepest first, with where each goes."""

    names: tuple[tuple[str, ...], ...]
    leaves: tuple[tuple[int, str, torch.Size, int], ...]
    nested: tuple[tuple[int, int, str, torch.Size, type | None], ...]


def _path(key: NestedKey) -> tuple[str, ...]:
    return (key,) if key.__class__ is str else key


def _walk(td: Any, prefix: tuple[str, ...], batch_dims: int, leaves: dict[NestedKey, Any],
          nested: list[tuple[NestedKey, torch.Size, type | None]]) -> None:
    """Collect the leaves and the nested collections of ``td`` under ``prefix``."""
    for name, value in td.items():
        key: NestedKey = (*prefix, name) if prefix else name
        if isinstance(value, torch.Tensor):
            leaves[key] = value
        elif isinstance(value, (NonTensorData, NonTensorStack)):
            raise TypeError(f"Cannot pack the non-tensor entry {key!r}. Drop the non-tensor "
                            "entries with filter_non_tensor_data() first.")
        else:
            cls = type(value) if getattr(type(value), "_is_tensorclass", False) else None
            nested.append((key, value.batch_size[batch_dims:], cls))
            _walk(value if cls is None else value._tensordict, (*prefix, name), batch_dims,
                  leaves, nested)


def pack(self: Any, dim: int = -1, *, layout: PackLayout | None = None
         ) -> tuple[torch.Tensor, PackLayout]:
    """Pack every leaf into one tensor of features, of shape ``(*batch_size, F)`` for
    ``dim=-1`` (``F``: the features of all the leaves) and contiguous for any ``dim``
    (in ``[-(batch_dims + 1), batch_dims]``, as for :func:`torch.stack`); its
    :class:`PackLayout` inverts it.

    The leaves must share one dtype and one device; non-tensor data cannot be packed
    (drop it with ``filter_non_tensor_data()`` first). A lazy stack packs like its dense
    equivalent if its members have the same keys. ``layout``: pack into this layout (its
    key order; a missing, extra or reshaped leaf raises, and ``dim`` must be its dim).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(p=torch.zeros(5), v=torch.ones(5, 3),
    ...                 nested={"stress": torch.ones(5, 3, 3)}, batch_size=[5])
    >>> flat, layout = td.pack()
    >>> flat.shape, layout.keys
    (torch.Size([5, 13]), (('nested', 'stress'), 'p', 'v'))
    >>> bool((td.pack(layout=layout)[0] == flat).all())
    True
    """
    kind = "tensordict" if self.__class__ is TensorDict else _state.kind(self)
    cls = type(self) if kind == "tensorclass" else None
    td = self._tensordict if cls is not None else self
    if kind == "lazy":
        keys = [set(part.keys(True, True)) for part in td.tensordicts]
        if any(part_keys != keys[0] for part_keys in keys):
            raise RuntimeError("Cannot pack a lazy stack whose members have different keys.")
        td = td.contiguous()
    batch = td.batch_size
    batch_dims = len(batch)
    if not -(batch_dims + 1) <= dim <= batch_dims:
        raise IndexError(f"dim {dim} is out of range for packing a tensordict with "
                         f"{batch_dims} batch dimensions.")
    packed_dim = dim - batch_dims - 1 if dim >= 0 else dim
    leaves: dict[NestedKey, torch.Tensor] = {}
    nested: list[tuple[NestedKey, torch.Size, type | None]] = []
    _walk(td, (), batch_dims, leaves, nested)
    if layout is None:
        keys = tuple(sorted(leaves, key=_sort_key))
        shapes = tuple(leaves[key].shape[batch_dims:] for key in keys)
    else:
        if layout.dim != packed_dim:
            raise ValueError(f"Cannot pack along dim {dim} with a layout packed along dim "
                             f"{layout.dim}.")
        keys = layout.keys
        if len(keys) != len(leaves) or not all(key in leaves for key in keys):
            raise KeyError(f"The leaves of the tensordict differ from the keys of the "
                           f"layout: {sorted(leaves, key=_sort_key)} vs {list(keys)}.")
        shapes = tuple(leaves[key].shape[batch_dims:] for key in keys)
        if shapes != layout.shapes:
            raise ValueError(f"The feature shapes of the leaves differ from those of the "
                             f"layout: {shapes} vs {layout.shapes}.")
    parts = []
    for key, shape in zip(keys, shapes, strict=True):
        leaf = leaves[key]
        if parts and leaf.dtype != parts[0].dtype:
            raise TypeError(f"Cannot pack leaves of different dtypes: {parts[0].dtype} and "
                            f"{leaf.dtype} at {key!r}. Cast the tensordict first, e.g. with "
                            "float().")
        if parts and leaf.device != parts[0].device:
            raise RuntimeError(f"Cannot pack leaves on different devices: {parts[0].device} "
                               f"and {leaf.device} at {key!r}.")
        parts.append(leaf.reshape(*batch, shape.numel()))
    if parts:
        flat = torch.cat(parts, -1)
    else:
        flat = torch.empty(*batch, 0, device=td.device)
    if packed_dim != -1:
        flat = flat.movedim(-1, packed_dim)
    nested.sort(key=lambda item: _sort_key(item[0]))
    return flat.contiguous(), PackLayout(keys, shapes, packed_dim, tuple(nested), td.device,
                                         cls)
