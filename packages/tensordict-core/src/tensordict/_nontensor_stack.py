"""NonTensorStack: one Python object per batch element, as a lazy stack of NonTensorData.

The parts are the ``NonTensorData`` themselves (equal values are never merged), so
reading ``stack[i]`` gives the part and writing ``stack[i] = obj`` updates it in place:
a stack read from a lazy stack of TensorDicts writes into their entries.

Example:
    >>> from tensordict import NonTensorStack
    >>> stack = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
    >>> stack.tolist(), stack[:, 1].tolist(), stack[0, 0].data
    ([['a', 'b'], ['c', 'd']], ['b', 'd'], 'a')
    >>> stack[1] = "z"
    >>> stack.tolist()
    [['a', 'b'], ['z', 'z']]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import torch

from tensordict._collection import NO_DEFAULT, classes, register_class
from tensordict._lazy import LazyStackedTensorDict
from tensordict._lazy_ops import _moves_elements, restructure
from tensordict._moves import parse_to_args
from tensordict._nontensor import (
    NON_TENSOR_FUNCTIONS,
    NonTensorData,
    is_non_tensor,
    merged_non_tensor,
    same_value,
)
from tensordict._options import capture_non_tensor_stack
from tensordict._serialization import allow_weights_only_load
from tensordict._shape_ops import batch_dim
from tensordict._shapes import as_device, as_size, normalize_index

_NON_UNIQUE = "Cannot get the non-unique data of a NonTensorStack. Use .tolist() instead."


@register_class
class NonTensorStack(LazyStackedTensorDict):
    """A lazy stack of ``NonTensorData``: one object per batch element.

    Args:
        *values: ``NonTensorData``/``NonTensorStack`` parts, or plain objects (wrapped).
        stack_dim, batch_size, device, names, stack_dim_name: as for
            :class:`LazyStackedTensorDict`.

    >>> NonTensorStack("a", "a").tolist()
    ['a', 'a']
    """

    __slots__ = ()
    _is_non_tensor = True

    def __init__(self, *values: Any, stack_dim: int = 0, batch_size: Any = None,
                 device: Any = None, names: Any = None, stack_dim_name: str | None = None,
                 strict_shape: bool = False) -> None:
        parts = [v if is_non_tensor(v) else NonTensorData(v, device=device) for v in values]
        super().__init__(*parts, stack_dim=stack_dim, batch_size=batch_size, device=device,
                         names=names, stack_dim_name=stack_dim_name)

    @classmethod
    def from_list(cls, values: Sequence[Any], batch_size: Sequence[int] | None = None,
                  device: Any = None) -> NonTensorStack:
        """Stack a (nested) list of objects; the batch size defaults to the list's shape
        (a list shallower than ``batch_size`` shares each object over the remaining dims).

        >>> NonTensorStack.from_list([["a", "b"]]).batch_size
        torch.Size([1, 2])
        """
        size = None if batch_size is None else as_size(batch_size)
        depth = None if size is None else len(size)
        device = as_device(device)

        def build(node: Any, level: int) -> Any:
            if isinstance(node, (list, tuple)) and (depth is None or level < depth):
                if not node:
                    return cls(batch_size=[0], device=device)
                return cls(*[build(item, level + 1) for item in node])
            rest = None if size is None else size[level:]  # shared by the remaining dims
            return NonTensorData(node, batch_size=rest, device=device)

        out = build(values, 0)
        if not isinstance(out, NonTensorStack):
            out = cls(out)
        if batch_size is not None and out.batch_size != as_size(batch_size):
            raise ValueError(f"a list of shape {list(out.batch_size)} cannot fill a "
                             f"NonTensorStack of batch size {as_size(batch_size)}")
        return out

    @classmethod
    def from_nontensordata(cls, non_tensor: NonTensorData) -> NonTensorStack:
        """One element per batch element of ``non_tensor`` (see ``maybe_to_stack``)."""
        return non_tensor.maybe_to_stack()

    def maybe_to_stack(self) -> NonTensorStack:
        """A stack whose batched ``NonTensorData`` parts are stacks too."""
        return self._each("maybe_to_stack")

    # -- no entries ------------------------------------------------------------------------
    def _keys_str(self) -> Iterator[str]:
        return iter(())

    def _has_str(self, key: str) -> bool:
        """Never: a NonTensorStack has no entries."""
        return False

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        if default is NO_DEFAULT:
            raise KeyError(f"a NonTensorStack has no entries (looking up {key!r})")
        return default

    def _set_str(self, key: str, value: Any, **kwargs: Any) -> NonTensorStack:
        raise TypeError(f"a NonTensorStack has no entries (writing {key!r})")

    # -- elements --------------------------------------------------------------------------
    def _locate(self, position: int) -> tuple[int, int]:
        """(part, position inside the part) of the flat ``position`` of the batch."""
        count = len(self.tensordicts)
        inner = self.batch_size[self.stack_dim + 1:].numel()
        return (position // inner) % count, (position // (inner * count)) * inner + \
            position % inner

    def _flat(self) -> list[Any]:
        """The objects in row-major order of the batch (part after part when ragged)."""
        flats = list(map(_objects, self.tensordicts))
        if -1 in self.batch_size:
            return [obj for flat in flats for obj in flat]
        located = (self._locate(p) for p in range(self.batch_size.numel()))
        return [flats[k][q] for k, q in located]

    def tolist(self) -> list[Any]:
        """The objects as nested lists of the batch shape (rows of different lengths where
        the stack is ragged; ValueError when its first dim is ragged).

        >>> NonTensorStack(NonTensorData("a", batch_size=[1]),
        ...                NonTensorData("b", batch_size=[2])).tolist()
        [['a'], ['b', 'b']]
        """
        return self._nested(list)

    def all(self, dim: int | None = None) -> Any:
        """True: there is no entry to be false (with ``dim``: an empty TensorDict without
        that dim, as upstream).

        >>> NonTensorStack(0, 0).all(), NonTensorStack(1).any()
        (True, False)
        """
        return True if dim is None else self._reduced(dim)

    def any(self, dim: int | None = None) -> Any:
        """False: there is no entry to be true (see :meth:`all`)."""
        return False if dim is None else self._reduced(dim)

    def _reduced(self, dim: int) -> Any:
        dim = batch_dim(self, dim)
        size = self.batch_size
        return classes.TensorDict(batch_size=size[:dim] + size[dim + 1:], device=self.device)

    def to_dict(self, *args: Any, **kwargs: Any) -> list[Any]:
        """The objects as nested lists (see :meth:`tolist`)."""
        return self.tolist()

    def _nested(self, kind: type[list]) -> list[Any]:
        """:meth:`tolist` with lists of class ``kind`` (``td[key]`` reads LinkedLists)."""
        if self._stack_dim == 0:  # one row per part
            return kind([_nested(part, kind) for part in self.tensordicts])
        size = self.batch_size
        if -1 not in size:
            return _nest(self._flat(), size, kind)
        if size[0] == -1:
            raise ValueError(f"cannot list the elements of a NonTensorStack of batch size "
                             f"{size}: its first dim is ragged")
        return kind(_nested(self[i], kind) for i in range(size[0]))

    @property
    def data(self) -> Any:
        """The object shared by every element (AttributeError when they differ)."""
        flat = self._flat()
        if flat and all(same_value(item, flat[0]) for item in flat):
            return flat[0]
        raise AttributeError(_NON_UNIQUE)

    def _restructure(self, fn: Callable[[torch.Tensor], torch.Tensor],
                     batch_size: torch.Size, names: Any = None) -> Any:
        """The stack moved by a shape op or index ``fn`` (parts kept where possible)."""
        moved = restructure(self, fn, batch_size)
        if moved is not None:
            return moved
        positions = _moves_elements(fn, torch.arange(self.batch_size.numel()).reshape(
            self.batch_size))
        flat = self._flat()
        if positions is None:
            if flat and all(same_value(item, flat[0]) for item in flat):
                return NonTensorData(flat[0], batch_size=batch_size, device=self.device)
            raise RuntimeError("cannot reduce a NonTensorStack holding different values")
        picked = [flat[p] for p in positions.reshape(-1).tolist()]
        if not positions.ndim:
            return NonTensorData(picked[0], device=self.device)
        return type(self).from_list(_nest(picked, positions.shape), positions.shape,
                                    self.device)

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, batch_size: Any = None,
                    device: Any = NO_DEFAULT, **kwargs: Any) -> Any:
        if batch_size is not None:
            return self._restructure(fn, batch_size)
        return self if device is NO_DEFAULT else self.to(device)

    @staticmethod
    def _where_objects(condition: torch.Tensor, mine: Any, theirs: Any) -> Any:
        """``torch.where`` for two non-tensor entries of one batch size (``condition`` over its
        leading dims): the objects of ``mine`` where it is True, else those of ``theirs``.

        >>> NonTensorStack._where_objects(torch.tensor([True, False]), NonTensorStack(1, 2),
        ...                               NonTensorStack(3, 4)).tolist()
        [1, 4]
        """
        if bool(condition.all()) or (mine.__class__ is theirs.__class__ is NonTensorData
                                     and same_value(mine.data, theirs.data)):
            return mine
        if not bool(condition.any()):
            return theirs
        shape = mine.batch_size
        size = shape.numel()
        cond = condition.reshape(condition.shape + (1,) * (len(shape) - condition.ndim))
        picked = torch.where(cond, torch.arange(size).reshape(shape),
                             torch.arange(size, 2 * size).reshape(shape))
        flat = [_objects(mine), _objects(theirs)]
        objects = [flat[p >= size][p % size] for p in picked.reshape(-1).tolist()]
        return NonTensorStack.from_list(_nest(objects, shape), shape, mine.device)

    def _set_at_index(self, index: Any, value: Any) -> None:
        if -1 in self.batch_size:
            self._set_ragged(index, value)
            return
        positions = torch.arange(self.batch_size.numel()).reshape(self.batch_size)
        parts = normalize_index(index, self.batch_size)
        selected = positions[parts[0] if len(parts) == 1 else parts]
        if is_non_tensor(value):
            value = value.tolist() if selected.ndim else value.data
        objects = _flatten(value, selected.shape)
        self._write(dict(zip(selected.reshape(-1).tolist(), objects)))

    def _set_ragged(self, index: Any, value: Any) -> None:
        """Write a whole ragged stack: part by part from a stack of the same layout, or
        one object everywhere (checked before the first write)."""
        whole = index == () or index is Ellipsis or index == slice(None)
        if is_non_tensor(value):
            theirs = value.tensordicts if isinstance(value, NonTensorStack) and \
                value.stack_dim == self.stack_dim else None
            if not whole or theirs is None or [td.batch_size for td in theirs] != \
                    [td.batch_size for td in self.tensordicts]:
                raise RuntimeError(f"cannot write a {type(value).__name__} of batch size "
                                   f"{value.batch_size} at {index!r} into a NonTensorStack of "
                                   f"batch size {self.batch_size}: only a whole write of a "
                                   "stack of parts of the same batch sizes fits it")
        elif not whole:
            raise RuntimeError(f"cannot write at {index!r} into a NonTensorStack of batch "
                               f"size {self.batch_size}: its parts differ in size")
        else:
            theirs = [value] * len(self.tensordicts)
        for k, (part, piece) in enumerate(zip(self.tensordicts, theirs)):
            if isinstance(part, NonTensorData) and not isinstance(piece, NonTensorStack):
                part.data = piece.data if isinstance(piece, NonTensorData) else piece
            else:
                if isinstance(part, NonTensorData):
                    part = self.tensordicts[k] = part.maybe_to_stack()
                part._set_at_index((), piece)

    def _write(self, objects: dict[int, Any]) -> None:
        """Set the objects at flat batch positions, in the parts (written through)."""
        groups: dict[int, dict[int, Any]] = {}
        for position, obj in objects.items():
            part, inner = self._locate(position)
            groups.setdefault(part, {})[inner] = obj
        for k, items in groups.items():
            part = self.tensordicts[k]
            if not isinstance(part, NonTensorStack):
                values = list(items.values())
                if len(items) == part.numel() and all(v is values[0] for v in values):
                    part.data = values[0]
                    continue
                part = self.tensordicts[k] = part.maybe_to_stack()
            part._write(items)

    def update_(self, input_dict_or_td: Any, clone: bool = False, **kwargs: Any) -> Any:
        """Write the elements of another non-tensor entry into this one, in place."""
        self._set_at_index((), input_dict_or_td.clone() if clone else input_dict_or_td)
        return self

    update = update_

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        for part in self.tensordicts:
            if isinstance(part, NonTensorStack):
                part._propagate_lock(locked)

    # -- copies, devices, comparisons --------------------------------------------------------
    def clear_device_(self) -> NonTensorStack:
        """Forget the device of the stack and of its elements; returns self."""
        self._device = None
        for part in self.tensordicts:
            if isinstance(part, NonTensorStack):
                part.clear_device_()
            else:
                part._device = None
        return self

    def to(self, *args: Any, **kwargs: Any) -> NonTensorStack:
        """The stack with its device set (the objects are shared)."""
        device = parse_to_args(*args, **kwargs)[0]
        if device is None:
            return self
        return self._each("to", as_device(device))

    def clone(self, recurse: bool = True, **kwargs: Any) -> NonTensorStack:
        """A copy of the stack (of its objects too with ``recurse=True``)."""
        return self._each("clone", recurse)

    def _rebatch(self, batch_size: torch.Size, device: Any = None, names: Any = None) -> Any:
        """The stack under a parent of batch size ``batch_size`` (widened if it is longer)."""
        own = self.batch_size
        out = self if device is None else self.to(device)
        if batch_size[: len(own)] == own and len(batch_size) > len(own):
            extra = len(batch_size) - len(own)
            return out._restructure(
                lambda x: x.reshape(own + (1,) * extra + x.shape[len(own):]).expand(
                    batch_size + x.shape[len(own):]), batch_size)
        if own[: len(batch_size)] != batch_size:
            raise RuntimeError(f"cannot give a NonTensorStack of batch size {own} the batch "
                               f"size {batch_size}")
        return out

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        if -1 in self.batch_size:  # no tensor of the batch shape: upstream's answer
            if is_non_tensor(other):
                raise RuntimeError(f"cannot compare a NonTensorStack of batch size "
                                   f"{self.batch_size} elementwise: its parts differ in size")
            return False
        if is_non_tensor(other):
            theirs = other._flat() if isinstance(other, NonTensorStack) else \
                [other.data] * self.batch_size.numel()
        else:
            theirs = [other] * self.batch_size.numel()
        flags = [same_value(a, b) for a, b in zip(self._flat(), theirs)]
        return torch.tensor(flags, dtype=torch.bool).reshape(self.batch_size)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        equal = self.__eq__(other)
        return not equal if equal.__class__ is bool else ~equal

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Any,
                           args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
                           ) -> Any:
        handler = NON_TENSOR_FUNCTIONS.get(func)
        if handler is None:
            return super().__torch_function__(func, types, args, kwargs)
        return handler(*args, **(kwargs or {}))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(\n    {self.tolist()!r},\n"
                f"    batch_size={self.batch_size},\n    device={self.device})")


# -- torch.stack / torch.cat --------------------------------------------------------------------
def stack_non_tensor(items: Sequence[Any], dim: int = 0, *, out: Any = None) -> Any:
    """Stack non-tensor data lazily (one ``NonTensorData`` with ``capture_non_tensor_stack``
    when every value is the same).

    >>> stack_non_tensor([NonTensorData("a"), NonTensorData("b")]).tolist()
    ['a', 'b']
    """
    items = list(items)
    if not all(is_non_tensor(item) for item in items):
        return NotImplemented
    size = items[0].batch_size
    dim %= len(size) + 1
    merged = merged_non_tensor(items, size[:dim] + (len(items),) + size[dim:],
                               capture_non_tensor_stack())
    return merged if merged is not None else NonTensorStack(*items, stack_dim=dim)


def cat_non_tensor(items: Sequence[Any], dim: int = 0, *, out: Any = None) -> Any:
    """Concatenate non-tensor data along ``dim``; every element is kept. Entries that
    all hold equal objects give one ``NonTensorData`` (as upstream).

    >>> cat_non_tensor([NonTensorStack("a"), NonTensorData("b", batch_size=[2])]).tolist()
    ['a', 'b', 'b']
    >>> cat_non_tensor([NonTensorData("a", batch_size=[2])] * 2)
    NonTensorData(data=a, batch_size=torch.Size([4]), device=None)
    """
    items = list(items)
    if not all(is_non_tensor(item) for item in items):
        return NotImplemented
    ndim = len(items[0].batch_size)
    if not -ndim <= dim < ndim:
        raise IndexError(f"dim {dim} is out of range to cat non-tensor data of batch size "
                         f"{items[0].batch_size}")
    dim %= ndim
    size = list(items[0].batch_size)
    size[dim] = sum(item.batch_size[dim] for item in items)
    merged = merged_non_tensor(items, torch.Size(size), True)
    if merged is not None:
        return merged
    if dim == 0:
        return NonTensorStack(*[piece for item in items for piece in _rows(item)])
    return NonTensorStack(*[cat_non_tensor(row, dim - 1) for row in zip(*map(_rows, items))])


def _objects(entry: Any) -> list[Any]:
    """The objects of a non-tensor entry in row-major order of its batch."""
    return entry._flat() if isinstance(entry, NonTensorStack) else [entry.data] * entry.numel()


def _rows(item: Any) -> list[Any]:
    """The elements of ``item`` along its first batch dim."""
    if isinstance(item, NonTensorStack):
        return list(item.unbind(0))
    return [item[i] for i in range(item.batch_size[0])]


def broadcast_non_tensor(input: Any, size: Sequence[int]) -> Any:  # noqa: A002
    """``torch.broadcast_to`` of non-tensor data: its ``broadcast_to`` method."""
    return input.broadcast_to(size)


NON_TENSOR_FUNCTIONS.update({torch.stack: stack_non_tensor, torch.cat: cat_non_tensor,
                             torch.broadcast_to: broadcast_non_tensor})


# -- helpers ------------------------------------------------------------------------------------
def _nest(flat: list[Any], shape: torch.Size, kind: type[list] = list) -> Any:
    """``flat`` (row-major) as nested lists (of class ``kind``) of ``shape``."""
    if not shape:
        return flat[0]
    step = shape[1:].numel()
    return kind(_nest(flat[i * step:(i + 1) * step], shape[1:], kind) for i in range(shape[0]))


def _nested(entry: Any, kind: type[list]) -> Any:
    """The elements of a non-tensor entry as nested lists of class ``kind``."""
    if isinstance(entry, NonTensorStack):
        return entry._nested(kind)
    size = entry.batch_size
    return _nest([entry.data] * size.numel(), size, kind) if size else entry.data


def _flatten(value: Any, shape: torch.Size) -> list[Any]:
    """``value`` spread over ``shape``: nested lists of that shape, or one object for all."""
    if not shape:
        return [value]
    if isinstance(value, (list, tuple)) and len(value) == shape[0]:
        return [obj for item in value for obj in _flatten(item, shape[1:])]
    return [value] * shape.numel()


allow_weights_only_load(NonTensorStack)
