"""TensorDict as a ``torch.utils._pytree`` node, so pytree tools and ``torch.func`` see
its tensors.

The children of a TensorDict are its tensors, those of its sub-TensorDicts (flattened
into the same node: torch's pytree costs microseconds a node, and the parameters of a
module nest a TensorDict per submodule; a leaf's key path is its nested key) and its
other collections; the batch sizes, dim names, devices and non-tensor entries travel in
the context. Rebuilding follows the leaves, TensorDict by TensorDict:

* ``torch.vmap`` hands the function leaves without the mapped dim and re-stacks the
  outputs. The leaves then sit at another functorch level than when they were flattened,
  and the batched dim is known exactly (``maybe_get_bdim``) on the way in and found from
  the shapes on the way out, so the batch size (and names) lose or gain that dim.
* Otherwise (``tree_map``...) the batch size is kept if every leaf still fits it; else
  the leaves keep their number of feature dims and the batch size is the leading shape
  they share (at most as many dims as before).

A TensorDict with batch dims (or any, inside ``vmap``) but no tensor leaf gets one child
more: a zero-size tensor of shape ``batch_size + (0,)`` that carries the batch size, so
``vmap`` has a tensor to map over (``vmap(f)(TensorDict(batch_size=[4]))`` calls ``f`` on a
batch of ``[]``); it is dropped on rebuilding.

Functorch's steps are wrapped by :mod:`tensordict._vmap`, which takes a plain TensorDict
through ``vmap`` as one unit (this route serves the others), and whose output step says
which vmap level is being left (so leaves made inside ``vmap`` without the mapped dim
count as mapped: vmap expands them). Inside ``torch.compile`` dynamo cannot call
functorch's introspection functions, so there only the leaves' shapes guide the rebuilt
batch size.

A ``LazyStackedTensorDict`` is flattened into its TensorDicts. ``vmap`` takes lazy stacks
as one unit (:mod:`tensordict._vmap_lazy`); through pytree (a stack with hooks, or nested
in another structure) it can return them (the mapped dim is put before the stack dim) and
take them with ``in_dims=None``, but mapping over their dims raises (call
``contiguous()`` first).

Example:
    >>> import torch
    >>> from torch.utils._pytree import tree_map
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.ones(2)}}, [2])
    >>> tree_map(lambda x: x + 1, td)["n", "b"]
    tensor([2., 2.])
    >>> torch.vmap(lambda t: t["a"].sum() + t["n", "b"])(td)
    tensor([1., 1.])
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

import torch
from torch.utils import _pytree as pytree

from tensordict._collection import acts_as_tensordict, classes
from tensordict._vmap import LEAVING
from tensordict._vmap_lazy import fit_non_tensor, inserted_dim

_functorch = torch._C._functorch
_Tensor = torch.Tensor


class _Context:
    """What a flattened TensorDict needs to be rebuilt.

    ``probe``: (index among the subtree's tensor leaves, functorch level, shape) of the
    leaf used to detect vmap entering or leaving. ``layout``: per child, its position in
    the flat list of pytree children, or the context of a sub-TensorDict flattened into
    that list (one pytree node per TensorDict tree: torch's pytree costs microseconds a
    node, and a module's parameters nest a TensorDict per submodule).
    """

    __slots__ = ("cls", "keys", "batch_size", "names", "device", "non_tensor", "probe",
                 "carrier", "layout")

    def __init__(self, cls: type, keys: tuple[str, ...], batch_size: torch.Size,
                 names: tuple[str | None, ...] | None, device: torch.device | None,
                 non_tensor: tuple[tuple[str, Any], ...]) -> None:
        self.cls, self.keys, self.batch_size, self.names = cls, keys, batch_size, names
        self.device, self.non_tensor = device, non_tensor
        self.probe: tuple[int, int, Any] = (0, -1, None)
        self.carrier = False  # the last child is the batch-size carrier, not an entry
        self.layout: tuple[int | _Context, ...] = ()

    def _key(self) -> tuple[Any, ...]:
        return (self.cls, self.keys, len(self.batch_size), self.device,
                tuple(key for key, _ in self.non_tensor), self.carrier,
                tuple(None if part.__class__ is int else part._key() for part in self.layout))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Context) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return (f"{self.cls.__name__}(keys={list(self.keys)}, batch_size={list(self.batch_size)},"
                f" device={self.device})")


def _tensors(children: Iterable[Any]) -> Iterator[_Tensor]:
    """The tensor leaves under ``children``, in flattening order."""
    for child in children:
        if isinstance(child, _Tensor):
            yield child
        elif acts_as_tensordict(child) and not getattr(child, "_is_non_tensor", False):
            yield from _tensors(child._get_str(key) for key in child._keys_str())


def _first_tensor(children: Iterable[Any]) -> _Tensor | None:
    """The first of :func:`_tensors` (without a generator per level: the parameters of a
    module nest several levels deep)."""
    for child in children:
        if isinstance(child, _Tensor):
            return child
        if acts_as_tensordict(child) and not getattr(child, "_is_non_tensor", False):
            found = _first_tensor(child._tensordict.values()
                                  if child.__class__ is classes.TensorDict else
                                  (child._get_str(key) for key in child._keys_str()))
            if found is not None:
                return found
    return None


def _leafless(children: Iterable[Any]) -> bool:
    """True if nothing under ``children`` is a pytree leaf (a tensor, or a placeholder that
    pytree tools put in a rebuilt structure, like vmap's ``in_dims``)."""
    for child in children:
        if not acts_as_tensordict(child):
            return False
        if not child._is_non_tensor and not _leafless(
                child._get_str(key) for key in child._keys_str()):
            return False
    return True


def _no_functorch() -> bool:
    """True outside functorch transforms, and while compiling (dynamo cannot trace the
    functorch introspection functions: inside a compiled function the batch size of a
    rebuilt TensorDict follows the leaves' shapes only)."""
    return torch.compiler.is_compiling() or _functorch.peek_interpreter_stack() is None


def _probe(children: list[Any], first: _Tensor | None) -> tuple[int, int, Any]:
    """(index, level, shape) of the leaf of highest functorch level, inside a transform;
    the level is at least the current transform's, so a leaf made inside ``vmap`` counts
    as mapped on the way out. ``first``: the first tensor leaf under ``children``."""
    current = _functorch.peek_interpreter_stack().level()
    if first is not None and _functorch.maybe_get_level(first) >= current:
        return (0, current, first.shape)  # no live leaf is above the current level
    best = (0, -1, None)
    for index, leaf in enumerate(_tensors(children)):
        level = _functorch.maybe_get_level(leaf)
        if best[2] is None or level > best[1]:
            best = (index, level, leaf.shape)
            if level >= current:  # no live leaf is above the current transform's level
                break
    return best[0], max(best[1], current), best[2]


def _flatten_node(td: Any, flat: list[Any], outside: bool
                  ) -> tuple[_Context, _Tensor | None, bool]:
    """The context of ``td``, its first tensor leaf and whether any pytree leaf is under it
    (a tensor, or a placeholder that pytree tools put in a rebuilt structure, like vmap's
    ``in_dims``); its children are appended to ``flat`` (those of its dense
    sub-TensorDicts in their place, each sub-TensorDict then a context of the layout).
    ``outside``: no functorch transform is active."""
    keys: list[str] = []
    children: list[Any] = []
    layout: list[int | _Context] = []
    non_tensor: list[tuple[str, Any]] = []
    first = None
    leafy = False
    dense = td.__class__ is classes.TensorDict
    for key, value in (td._tensordict.items() if dense else
                       ((key, td._get_str(key)) for key in td._keys_str())):
        if value.__class__ is classes.TensorDict:
            sub, sub_first, sub_leafy = _flatten_node(value, flat, outside)
            layout.append(sub)
            first = sub_first if first is None else first
            leafy = leafy or sub_leafy
        elif isinstance(value, _Tensor):
            layout.append(len(flat))
            flat.append(value)
            first = value if first is None else first
            leafy = True
        elif getattr(value, "_is_non_tensor", False):
            non_tensor.append((key, value))
            continue
        else:  # another tensor collection (a pytree node of its own), or a placeholder
            layout.append(len(flat))
            flat.append(value)
            if acts_as_tensordict(value):
                first = _first_tensor((value,)) if first is None else first
                leafy = leafy or not _leafless((value,))
            else:
                leafy = True
        keys.append(key)
        children.append(value)
    if dense:
        context = _Context(classes.TensorDict, tuple(keys), td._batch_size, td._names,
                           td._device, tuple(non_tensor))
    else:
        context = _Context(type(td), tuple(keys), td.batch_size,
                           td._names if hasattr(td, "_names") else None, td.device,
                           tuple(non_tensor))
    if not leafy and (context.batch_size or not outside):
        # no tensor leaf: a zero-size one carries the batch size (through vmap too)
        carrier = torch.empty((*context.batch_size, 0), device=context.device)
        children.append(carrier)
        layout.append(len(flat))
        flat.append(carrier)
        context.carrier = True
        context.probe = (0, -1, carrier.shape) if outside else _probe(children, carrier)
    else:
        context.probe = (0, -1, None if first is None else first.shape) if outside else \
            _probe(children, first)
    context.layout = tuple(layout)
    return context, first, leafy


def _flatten_td(td: Any) -> tuple[list[Any], _Context]:
    flat: list[Any] = []
    return flat, _flatten_node(td, flat, _no_functorch())[0]


class _NestedPath(tuple):
    """The nested key of a sub-TensorDict's leaf in its root's pytree node, printed
    ``n_b``: ``torch.export`` names the input ``td_n_b``, as it would a node per level."""

    __slots__ = ()

    def __str__(self) -> str:
        return "_".join(self)


class _NestedKey(pytree.MappingKey):
    """The ``MappingKey`` of a sub-TensorDict's leaf: ``key_get`` follows it as
    ``td[("n", "b")]``."""

    def get(self, mapping: Any) -> Any:
        return mapping[tuple(self.key)]


def _flatten_with_keys(td: Any) -> tuple[list[tuple[Any, Any]], _Context]:
    flat, context = _flatten_td(td)
    paths: list[Any] = []

    def name(node: _Context, prefix: tuple[str, ...]) -> None:
        keys = [*node.keys, "<batch size>"] if node.carrier else node.keys
        for key, part in zip(keys, node.layout):
            if part.__class__ is _Context:
                name(part, prefix + (key,))
            else:
                paths.append(_NestedKey(_NestedPath(prefix + (key,))) if prefix else
                             pytree.MappingKey(key))
    name(context, ())
    return list(zip(paths, flat)), context


def _follow_vmap(leaf: _Tensor | None, context: _Context
                 ) -> tuple[torch.Size, tuple[str | None, ...] | None]:
    """The batch size and names after a vmap level was entered or left, if one was."""
    batch_size, names = context.batch_size, context.names
    _, level, shape = context.probe
    if leaf is None or shape is None or torch.compiler.is_compiling():
        return batch_size, names
    current = _functorch.maybe_get_level(leaf)
    if LEAVING and LEAVING[-1] == level:  # unwrapped by vmap: its leaves left the level
        current = -1
    ndim = len(batch_size)
    if current > level and _functorch.is_batchedtensor(leaf):
        dim = _functorch.maybe_get_bdim(leaf)  # entering vmap: this dim is hidden
        if dim < ndim:
            batch_size = batch_size[:dim] + batch_size[dim + 1:]
            names = None if names is None else names[:dim] + names[dim + 1:]
    elif current < level and leaf.dim() == len(shape) + 1:
        dim = inserted_dim(leaf.shape, shape)  # leaving vmap: outputs gained this dim
        if dim <= ndim:
            batch_size = leaf.shape[: ndim + 1]
            names = None if names is None else names[:dim] + (None,) + names[dim:]
    return torch.Size(batch_size), names


def _all_fit(children: list[Any], batch_size: torch.Size) -> bool:
    """Whether every tensor and tensor collection among ``children`` leads with
    ``batch_size``."""
    ndim = len(batch_size)
    for child in children:
        if isinstance(child, _Tensor):
            if child.shape[:ndim] != batch_size:
                return False
        elif acts_as_tensordict(child) and child.batch_size[:ndim] != batch_size:
            return False
    return True


def _fitting_size(children: list[Any], batch_size: torch.Size, leaf: _Tensor | None,
                  context: _Context) -> torch.Size:
    """``batch_size`` if every child fits it, else a batch size the children share.

    Children that gained one same leading dim before ``batch_size`` (stacked results,
    as ``jacrev`` gives them) give it that dim more, as upstream's. Else the number of
    batch dims follows the probe leaf (it keeps its number of feature dims), capped by the
    longest leading shape every child shares. Children that are neither tensors nor
    TensorDicts (pytree tools rebuild the structure with placeholders, e.g. the
    ``in_dims`` of vmap) do not constrain the batch size.
    """
    if _all_fit(children, batch_size):
        return batch_size
    shapes = [c.shape if isinstance(c, _Tensor) else c.batch_size
              for c in children if isinstance(c, _Tensor) or acts_as_tensordict(c)]
    ndim = len(batch_size)
    if shapes and all(len(s) > ndim and s[0] == shapes[0][0] and s[1:ndim + 1] == batch_size
                      for s in shapes):
        return shapes[0][:1] + batch_size
    if leaf is not None and context.probe[2] is not None:
        features = len(context.probe[2]) - len(context.batch_size)
        ndim = max(min(ndim, leaf.dim() - features), 0)
    common: list[int] = []
    for sizes in zip(*(s[:ndim] for s in shapes)):
        if any(size != sizes[0] for size in sizes):
            break
        common.append(sizes[0])
    return torch.Size(common)


def _unflatten(children: Any, context: _Context) -> Any:
    flat = children if children.__class__ is list else list(children)
    return _rebuild(flat, context, _no_functorch())


def _rebuild(flat: list[Any], context: _Context, outside: bool) -> Any:
    """The TensorDict of ``context`` from the flat children (sub-TensorDicts first).
    Outside functorch, of a node flattened outside it, whose children still fit its
    batch size (a round trip, a ``tree_map`` keeping shapes), that batch size is kept."""
    batch_size, names = context.batch_size, context.names
    ndim = len(batch_size)
    keep = outside and context.probe[1] == -1
    children = []
    for part in context.layout:
        if part.__class__ is _Context:
            child = _rebuild(flat, part, outside)
            if keep and child._batch_size is not part.batch_size:  # (kept: it still fits)
                keep = child._batch_size[:ndim] == batch_size
        else:
            child = flat[part]
            if keep and ndim:
                if isinstance(child, _Tensor):
                    keep = child.shape[:ndim] == batch_size
                elif acts_as_tensordict(child):
                    keep = child.batch_size[:ndim] == batch_size
        children.append(child)
    if not keep:
        index = context.probe[0]
        leaf = _first_tensor(children) if index == 0 else \
            next(islice(_tensors(children), index, None), None)
        batch_size, names = _follow_vmap(leaf, context)
        fitted = _fitting_size(children, batch_size, leaf, context)
        if fitted != batch_size:
            batch_size, names = fitted, names if len(fitted) == len(batch_size) else None
    entries = dict(zip(context.keys, children))  # zip drops the carrier
    for key, value in context.non_tensor:
        entries[key] = fit_non_tensor(value, batch_size)
    if names is not None and len(names) != len(batch_size):
        names = None
    return context.cls._from_entries(entries, batch_size, context.device, names)


def _flatten_lazy(td: Any) -> tuple[list[Any], tuple[int, torch.Size]]:
    return list(td.tensordicts), (td.stack_dim, td.tensordicts[0].batch_size)


def _unflatten_lazy(children: Any, context: tuple[int, torch.Size]) -> Any:
    """Restack the parts; a dim that ``vmap`` added to every part (leaving it) moves the
    stack dim. Elsewhere the stack dim stays (``jacrev``'s stacked parts, as upstream)."""
    stack_dim, part_size = context
    children = list(children)
    sizes = {c.batch_size for c in children if acts_as_tensordict(c)}
    if any(len(size) < len(part_size) for size in sizes):
        raise ValueError(
            "vmap cannot map over the dims of a LazyStackedTensorDict (each part would be "
            "mapped on its own first dim, not on the stack): call `.contiguous()` first, or "
            "pass it with in_dims=None"
        )
    grown = next((size for size in sizes if len(size) == len(part_size) + 1), None)
    if grown is not None and LEAVING and inserted_dim(grown, part_size) <= stack_dim:
        stack_dim += 1
    return classes.LazyStackedTensorDict(*children, stack_dim=stack_dim)


def register_lazy_stack(cls: type) -> None:
    """Register ``LazyStackedTensorDict`` (its children are its TensorDicts)."""
    if cls not in pytree.SUPPORTED_NODES:
        pytree.register_pytree_node(
            cls, _flatten_lazy, _unflatten_lazy,
            serialized_type_name="tensordict.LazyStackedTensorDict",
        )


def _flatten_sub(td: Any) -> tuple[list[Any], None]:
    return [td._read()], None


def _unflatten_sub(children: Any, context: None) -> Any:
    """A view is rebuilt as the collection of the entries it read (as upstream's, a
    TensorDict: the rebuilt leaves are not the parent's)."""
    return next(iter(children))


def register_nodes() -> None:
    """Register ``TensorDict``, ``LazyStackedTensorDict`` and the sub-TensorDict views
    (once, by ``tensordict``'s ``__init__``, after defining them)."""
    pytree.register_pytree_node(
        classes.TensorDict, _flatten_td, _unflatten,
        serialized_type_name="tensordict.TensorDict",
        flatten_with_keys_fn=_flatten_with_keys,
    )
    register_lazy_stack(classes.LazyStackedTensorDict)
    pytree.register_pytree_node(
        classes._SubTensorDict, _flatten_sub, _unflatten_sub,
        serialized_type_name="tensordict._SubTensorDict",
    )
