"""Writing at a batch index: ``td[idx] = value``, with lazy preallocation.

Entries missing from the target are allocated (zeros, with the batch size of the
target) on first write, so ``td = TensorDict(batch_size=[N]); td[i] = sample`` fills a
preallocated TensorDict in any index order. Every write is checked before the first
one happens: a failed ``td[idx] = value`` leaves ``td`` as it was.

The common case, a TensorDict of the same keys and leaf shapes written at an int, a
slice or a 1-d index tensor, takes a fast path (one pass of checks over the paired
leaves, then one ``_foreach_copy_`` or an ``index_put_`` per leaf); anything else, or
anything that does not fit, goes through a :class:`~tensordict._plan.WritePlan`.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(batch_size=[3])
    >>> td[1] = TensorDict({"a": torch.ones(2)}, batch_size=[])
    >>> td["a"]
    tensor([[0., 0.],
            [1., 1.],
            [0., 0.]])
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from operator import attrgetter, itemgetter, ne
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import classes, is_tensor_collection
from tensordict._layout_memo import COPIES
from tensordict._nontensor import NonTensorData, same_value
from tensordict._plan import (
    WritePlan,
    broadcasts_to,
    one_call_copies,
    same_shapes,
    untracked,
    writable_in_place,
)
from tensordict._pointwise import dense_leaf_pairs
from tensordict._shapes import check_bounds, indexed_size, masks_to_indices, normalize_index
from tensordict._stack import entries_of, flatten_nested, map_nested
from tensordict._unbatched import UnbatchedTensor

_Tensor = torch.Tensor
_shape = attrgetter("shape")
_dtype = attrgetter("dtype")
_view = _Tensor.__getitem__  # a plain view of a plain tensor or of a WRITABLE_AS_TENSOR

#: Tensor subclasses that the fast paths of ``td[index] = value`` write into as plain
#: tensors: a plugin adds a subclass whose indexing and copies behave as a plain
#: tensor's (tensordict-memmap adds ``MemoryMappedTensor``).
WRITABLE_AS_TENSOR: set[type] = {_Tensor}


def set_at_index(td: Any, index: Any, value: Any) -> None:
    """Write ``value`` (a TensorDict, mapping, tensor or number) into ``td[index]``."""
    if value.__class__ is not classes.TensorDict or not one_call_copies() or not (
            _copy_rows(td, index, value) if index.__class__ is _Tensor
            else _copy_matching(td, index, value)):  # (dynamo traces no attrgetter)
        plan_at_index(td, index, value).run()


def copy_matching_at(td: Any, index: Any, value: Any) -> bool:
    """:func:`_copy_matching` for a dense TensorDict, or for the part of a lazy stack that
    ``index`` picks whole; False, having written nothing, where it does not apply."""
    if td.__class__ is classes.LazyStackedTensorDict:
        td, index = td._whole_part(index), ()
    return td.__class__ is value.__class__ is classes.TensorDict and \
        one_call_copies() and _copy_matching(td, index, value)


def _copy_matching(td: Any, index: Any, value: Any) -> bool:
    """The fast path of ``td[index] = value`` for the common case: an int, a slice or
    ``()``, ``value`` a TensorDict with the same keys whose every leaf is a plain tensor of the
    very shape of the part of ``td`` it goes to, and targets that can be written in place
    (:func:`~tensordict._plan.writable_in_place`). Everything is checked first, then one
    ``_foreach_copy_`` writes every leaf. Returns False, having written nothing, when the
    case does not apply: the general path then plans the write (and names what does not
    fit).

    >>> td = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    >>> _copy_matching(td, -1, TensorDict(a=torch.ones(2))), td["a"][2]
    (True, tensor([1., 1.]))
    >>> _copy_matching(td, 0, TensorDict(a=torch.ones(1)))  # broadcast: the general path
    False
    """
    batch = td._batch_size
    if index.__class__ is int:
        if not batch or not -batch[0] <= index < batch[0]:
            return False
        ndim = len(batch) - 1
    elif (index.__class__ is slice and index.step is None and batch) or \
            (index.__class__ is tuple and not index):
        ndim = len(batch)  # (``()``: the whole of ``td``, as a lazy stack writes a part)
    else:
        return False
    targets: list[_Tensor] = []
    sources: list[_Tensor] = []
    if len(value._batch_size) != ndim or not dense_leaf_pairs(
            td._tensordict, value._tensordict, targets, sources, WRITABLE_AS_TENSOR):
        return False
    with untracked():  # the views too: nothing here is tracked, once checked
        try:
            views = targets if index.__class__ is tuple else [_view(target, index)
                                                              for target in targets]
        except (TypeError, RuntimeError):  # a slice of odd bounds, a nested tensor...
            return False

        def fits() -> bool:
            return writable_in_place(targets, sources) and same_shapes(views, sources)
        # the views' shapes follow from the leaves' for an int (in range) or ``()``
        if not (fits() if index.__class__ is slice else
                COPIES.fits(("copy at", index.__class__), targets, sources, fits)):
            return False
        if views:
            try:
                torch._foreach_copy_(views, sources)
            except NotImplementedError:  # no kernel (nested tensors, forward AD): none written
                return False
    return True


def _copy_rows(td: Any, index: _Tensor, value: Any) -> bool:
    """The fast path of ``td[index] = value`` for a 1-d tensor of indices (or a mask) on
    the first batch dim: like :func:`_copy_matching` (the index checked once), each leaf
    written by one ``index_put_``, the leaves of equal dtypes as it needs.

    >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
    >>> _copy_rows(td, torch.tensor([0, -1]), TensorDict(a=torch.ones(2), batch_size=[2]))
    True
    >>> td["a"]
    tensor([1., 0., 1.])
    """
    batch = td._batch_size
    if index.ndim != 1 or not batch:
        return False
    if index.dtype is torch.bool:
        if index.shape[0] != batch[0]:
            return False
        index = index.nonzero().squeeze(1)
    elif index.dtype is torch.int64:
        if index.is_cpu and index.shape[0] <= 128:  # a few rows: faster than aminmax
            rows = index.tolist()
            if rows and (min(rows) < -batch[0] or max(rows) >= batch[0]):
                return False  # (the general path raises the IndexError)
        else:
            check_bounds((index,), batch)
    else:
        return False
    size = value._batch_size
    ndim = len(batch)
    if len(size) != ndim or size[0] != index.shape[0] or (ndim > 1 and size[1:] != batch[1:]):
        return False
    targets: list[_Tensor] = []
    sources: list[_Tensor] = []
    if not dense_leaf_pairs(td._tensordict, value._tensordict, targets, sources,
                            WRITABLE_AS_TENSOR):
        return False

    def fits() -> bool:
        tail = itemgetter(slice(ndim, None))  # the dims after the batch
        return writable_in_place(targets) and not any(
            map(ne, map(tail, map(_shape, targets)), map(tail, map(_shape, sources)))) and \
            list(map(_dtype, targets)) == list(map(_dtype, sources))
    if not COPIES.fits("copy rows", targets, sources, fits):
        return False
    parts = (index,)
    for target, source in zip(targets, sources):
        torch.index_put_(target, parts, source)
    return True


def plan_at_index(td: Any, index: Any, value: Any) -> WritePlan:
    """The writes of ``td[index] = value``, every one checked (index bounds once, then the
    shape and dtype of each leaf); nothing is written until the plan runs."""
    writer = _IndexWriter.at(td, index)
    sub_batch = writer.sub_batch
    if getattr(type(value), "_is_tensorclass", False):
        value = value._tensordict
    if isinstance(value, Mapping) and not is_tensor_collection(value):
        try:  # values of the indexed batch size, or broadcast to it (checked leaf by leaf)
            value = classes.TensorDict(value, batch_size=sub_batch)
        except RuntimeError:
            value = classes.TensorDict(value)
    if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
        size = value.batch_size
        if not broadcasts_to(size[: len(sub_batch)], sub_batch):
            raise RuntimeError(f"indexed destination TensorDict batch size is {sub_batch}, "
                               f"which differs from the source batch size {size}: cannot write "
                               f"a TensorDict of batch size {list(size)} at that index")
        writer.collection(td, value, len(size), ())
    else:
        writer.broadcast(td, value, ())
    return writer.plan


def plan_leaf_at_index(td: Any, index: Any, target: torch.Tensor, value: Any,
                       key: Any) -> WritePlan:
    """The checked write ``target[index] = value`` into ``target``, a tensor leaf of ``td``
    (``index`` addresses the batch dims of ``td``)."""
    writer = _IndexWriter.at(td, index)
    writer.tensor(target, value, key)
    return writer.plan


class _IndexWriter:
    """Plans the writes of ``td[index] = value`` entry by entry.

    Shapes are relative to the top-level batch: a leaf of any depth is indexed on its
    leading ``len(batch_size)`` dims.
    """

    def __init__(self, batch_size: torch.Size, sub_batch: torch.Size,
                 parts: tuple[Any, ...]) -> None:
        self.batch_size, self.sub_batch = batch_size, sub_batch
        self.ndim = len(batch_size)
        self.index = parts[0] if len(parts) == 1 else parts
        self.advanced = any(part.__class__ is torch.Tensor for part in parts)
        self.plan = WritePlan()

    @classmethod
    def at(cls, td: Any, index: Any) -> _IndexWriter:
        """A writer at ``index`` of ``td``, the index checked (bounds included)."""
        batch = td.batch_size
        parts = masks_to_indices(normalize_index(index, batch))
        check_bounds(parts, batch)
        return cls(batch, indexed_size(batch, parts), parts)

    def tensor(self, target: torch.Tensor, source: Any, key: Any) -> None:
        shape = self.sub_batch + target.shape[self.ndim:]
        self.plan.copy(target, source, key, index=self.index, shape=shape,
                       advanced=self.advanced)

    def attach(self, parent: Any, key: str, entry: Any) -> None:
        """Plan adding the new (zero-filled) ``entry`` under ``key``."""
        if parent.is_locked:
            raise errors.locked(key=key)
        self.plan.call(partial(parent._set_str, key, entry, inplace=False, validated=True))

    def nested(self, target: Any, value: Any) -> None:
        """Writes into a sub-collection that stores its entries its own way (lazy stack,
        tensorclass...): its own plan."""
        self.plan.extend(target._plan_at_index(self.index, value))

    def collection(self, td: Any, value: Any, value_ndim: int, prefix: tuple[str, ...]) -> None:
        copy, index, advanced = self.plan.copy, self.index, self.advanced
        sub_batch, ndim = self.sub_batch, self.ndim
        for key, source in entries_of(value).items():
            target = td._get_str(key, None)
            path = prefix + (key,) if prefix else key  # (a top-level key named as itself)
            if isinstance(source, torch.Tensor):
                if target is None:
                    target = torch.zeros(self.batch_size + source.shape[value_ndim:],
                                         dtype=source.dtype, device=td.device or source.device)
                    self.attach(td, key, target)
                elif not isinstance(target, torch.Tensor):
                    raise RuntimeError(f"cannot write a tensor into the entry {path!r}, a "
                                       f"{type(target).__name__}")
                elif target.__class__ is UnbatchedTensor:  # shared by the batch: whole
                    copy(target, source, path, shape=target.shape)
                    continue
                copy(target, source, path, index=index, shape=sub_batch + target.shape[ndim:],
                     advanced=advanced)  # self.tensor(), inlined: the loop is hot
            elif getattr(source, "_is_non_tensor", False):
                self.non_tensor(td, key, source)
            else:
                if target is None:
                    size = self.batch_size + source.batch_size[value_ndim:]
                    target = classes.TensorDict._from_entries({}, size, td.device, None)
                    self.attach(td, key, target)
                elif isinstance(target, torch.Tensor) or getattr(target, "_is_non_tensor", False):
                    raise RuntimeError(f"cannot write a {type(source).__name__} into the entry "
                                       f"{path!r}, a {type(target).__name__}")
                if type(target) is classes.TensorDict:
                    self.collection(target, source, value_ndim, prefix + (key,))
                else:
                    self.nested(target, source)

    def broadcast(self, td: Any, value: Any, prefix: tuple[str, ...]) -> None:
        """Plan writing the tensor or number ``value`` into every tensor leaf."""
        for key, entry in entries_of(td).items():
            if isinstance(entry, torch.Tensor):
                self.tensor(entry, value, prefix + (key,) if prefix else key)
            elif getattr(entry, "_is_non_tensor", False):
                continue
            elif type(entry) is classes.TensorDict:
                self.broadcast(entry, value, prefix + (key,))
            else:
                self.nested(entry, value)

    def non_tensor(self, td: Any, key: str, source: Any) -> None:
        """Plan writing ``source`` at the index of the non-tensor entry ``key``: into the
        entry itself (what shares it, a select or a saved file, sees the write) unless
        the write turns one value into a stack, which replaces the entry (in a locked
        TensorDict too, as upstream: its keys stay; not a saved entry, whose file the
        replacement would miss)."""
        new = _written_non_tensor(td, key, self.index, source)
        current = td._get_str(key, None)
        in_place = getattr(current, "_is_non_tensor", False) and (
            isinstance(new, NonTensorData) or not isinstance(current, NonTensorData))
        if in_place or not td.is_locked:
            self.plan.call(partial(td._set_str, key, new, inplace=in_place, validated=True))
        elif type(current) is NonTensorData and type(td) is classes.TensorDict:
            self.plan.call(td._tensordict.__setitem__, key, new)
        else:
            raise errors.locked(key=key)


def _written_non_tensor(td: Any, key: str, index: Any, source: Any) -> Any:
    """The non-tensor entry ``td[key]`` after writing ``source`` at ``index``: one shared
    value while all elements agree (or when ``td`` has no batch dims, one element), a
    NonTensorStack once they differ."""
    current = td._get_str(key, None)
    if isinstance(source, NonTensorData) and (current is None or not td.batch_size or (
            isinstance(current, NonTensorData) and same_value(current.data, source.data))):
        return NonTensorData(source.data, batch_size=td.batch_size, device=td.device)
    if current is None:
        current = NonTensorData(None, batch_size=td.batch_size, device=td.device)
    batch = td.batch_size
    flat = flatten_nested(current.tolist(), len(batch))
    positions = torch.arange(len(flat)).reshape(batch)[index].reshape(-1).tolist()
    values = flatten_nested(source.tolist(), len(source.batch_size))
    values = values * (len(positions) // max(len(values), 1))
    for position, item in zip(positions, values):
        flat[position] = item
    if flat and all(same_value(item, flat[0]) for item in flat):  # (all of it written)
        return NonTensorData(flat[0], batch_size=batch, device=td.device)
    nested = map_nested(torch.arange(len(flat)).reshape(batch).tolist(), flat)
    return classes.NonTensorStack.from_list(nested, batch, td.device)
