"""Lazy stacks (and TensorDicts holding them) entering and leaving a ``vmap`` level.

:mod:`tensordict._vmap` takes a TensorDict through ``vmap`` as one unit; this module does
it for the units holding lazy stacks, by one rule on the way in and its inverse on the way
out. As for a TensorDict, the function works on a new collection: the keys it sets stay
out of the caller's, while in-place writes reach the caller's tensors.

* Mapped over a dim that is not a lazy stack's stack dim, each part is mapped over its own
  matching dim, and the function sees a lazy stack of the batched parts (the stack dim
  shifts down when the mapped dim was before it). Parts that are lazy stacks themselves
  are seen as TensorDicts, as below.
* Mapped over the stack dim, the function sees one TensorDict: each entry stacked along
  the stack dim and batched there (an entry the parts hold in different shapes cannot be
  batched: it is left out, and reading it raises the RuntimeError reading it from the
  stack raises, as upstream). When the level is left, its writes are cut along the stack dim
  into a copy of the parts (the keys set or replaced, deleted) or into the parts' tensors
  (the entries written in place: ``set_``, ``add_``...), and the TensorDict, returned,
  comes out as the lazy stack of those parts along the output dim (a TensorDict when it
  is a part of a returned lazy stack).
* A lazy stack returned by the function gets the mapped dim back in each part (at the
  output dim, shifted past the stack dim), the stack dim moving up when the output dim is
  at or before it.
* Non-tensor data and unbatched tensors are not mapped: they take the batch size inside,
  and the outer one back (:func:`fit_non_tensor`).

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> stack = lazy_stack([TensorDict(a=torch.zeros(4)), TensorDict(a=torch.ones(4))])
    >>> out = torch.vmap(lambda t: t.set("b", t["a"] + 1))(stack)
    >>> type(out).__name__, out.batch_size, out.tensordicts[1]["b"]
    ('LazyStackedTensorDict', torch.Size([2]), tensor([2., 2., 2., 2.]))
    >>> _ = torch.vmap(lambda t: t["a"].mul_(3))(stack)
    >>> stack.tensordicts[1]["a"]
    tensor([3., 3., 3., 3.])
"""

from __future__ import annotations

from typing import Any

import torch
from torch._functorch import vmap as _vmap_impl

from tensordict._collection import classes
from tensordict._unbatched import UnbatchedTensor
from tensordict.errors import StackMismatchError

_Tensor = torch.Tensor


class _Mapped:
    """A lazy stack seen as one TensorDict (``inside``) mapped over its ``dim``, and each
    entry that TensorDict was given (with the stacked tensor and its version, for a
    tensor), to find the writes to bring back into the parts."""

    __slots__ = ("stack", "inside", "given", "dim")

    def __init__(self, stack: Any, inside: Any, given: dict[str, Any], dim: int) -> None:
        self.stack, self.inside, self.given, self.dim = stack, inside, given, dim


class _RaggedEntries(dict):
    """The entries of a lazy stack seen as one TensorDict, missing those its parts hold in
    different shapes: reading one of those (``td[key]``, ``td.get(key)``, with a default
    too) raises the error reading it from the stack raises."""

    __slots__ = ("errors",)

    def __init__(self, entries: dict[str, Any], errors: dict[str, RuntimeError]) -> None:
        super().__init__(entries)
        self.errors = errors

    def __missing__(self, key: str) -> Any:
        err = self.errors.get(key)
        raise KeyError(key) if err is None else type(err)(*err.args)

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key not in self and key in self.errors else \
            super().get(key, default)


#: per vmap level, the lazy stacks seen as TensorDicts at that level
MAPPED: dict[int, list[_Mapped]] = {}


def holds_lazy(td: Any) -> bool | None:
    """Whether ``td`` (a TensorDict or lazy stack of tensors, TensorDicts and lazy stacks
    only: None otherwise) is or holds a lazy stack."""
    if td.__class__ is classes.LazyStackedTensorDict:
        if td.hook_out is not None or td.hook_in is not None or -1 in td._batch_size:
            return None
        for part in td.tensordicts:
            if holds_lazy(part) is None:
                return None
        return True
    if td.__class__ is not classes.TensorDict:
        return None
    found = False
    for value in td._tensordict.values():
        if isinstance(value, _Tensor) or getattr(value, "_is_non_tensor", False):
            continue
        inner = holds_lazy(value)
        if inner is None:
            return None
        found = found or inner
    return found


def _without(names: Any, dim: int) -> Any:
    return None if names is None else names[:dim] + names[dim + 1:]


def enter(td: Any, in_dim: int, level: int) -> Any:
    """``td`` as the function sees it, mapped over its batch dim ``in_dim`` at ``level``."""
    if td.__class__ is classes.TensorDict:
        size = td._batch_size
        size = size[:in_dim] + size[in_dim + 1:]
        entries = {key: _enter_value(value, in_dim, level, size)
                   for key, value in td._tensordict.items()}
        return classes.TensorDict._from_entries(entries, size, td._device,
                                                _without(td._names, in_dim))
    stack_dim = td._stack_dim
    if in_dim == stack_dim:
        return _enter_dense(td.copy(), in_dim, level)
    part_dim = in_dim - (in_dim > stack_dim)
    parts = [_enter_dense(part.copy(), part_dim, level)
             if part.__class__ is classes.LazyStackedTensorDict else enter(part, part_dim, level)
             for part in td.tensordicts]
    return classes.LazyStackedTensorDict._from_entries(
        parts, stack_dim - (in_dim < stack_dim), td._stack_dim_name)


def _enter_value(value: Any, in_dim: int, level: int, size: torch.Size) -> Any:
    """An entry of a TensorDict (of batch size ``size`` inside) as :func:`enter` gives it:
    unbatched tensors and non-tensor data are not mapped (they take the batch size)."""
    if value.__class__ is UnbatchedTensor:
        return value._rebatch(size)
    if isinstance(value, _Tensor):
        return _vmap_impl._add_batch_dim(value, in_dim, level)
    if value._is_non_tensor:
        return fit_non_tensor(value, size)
    return enter(value, in_dim, level)


def _enter_dense(stack: Any, in_dim: int, level: int) -> Any:
    """The TensorDict of ``stack``'s entries, stacked and batched along ``in_dim``."""
    size = stack._batch_size
    size = size[:in_dim] + size[in_dim + 1:]
    entries: dict[str, Any] = {}
    given: dict[str, Any] = {}
    ragged: dict[str, RuntimeError] = {}
    for key in stack._keys_str():
        try:
            value = stack._get_str(key)
        except StackMismatchError as err:  # held in different shapes: cannot be batched
            ragged[key] = err
            continue
        if isinstance(value, _Tensor) and value.__class__ is not UnbatchedTensor:
            entries[key] = _vmap_impl._add_batch_dim(value, in_dim, level)
            given[key] = (entries[key], value, value._version)
            continue
        # (a sub-stack: its own record brings its writes back; others go as they are)
        entries[key] = _enter_dense(value, in_dim, level) \
            if value.__class__ is classes.LazyStackedTensorDict else \
            _enter_value(value, in_dim, level, size)
        given[key] = (entries[key], None, 0)
    if ragged:
        entries = _RaggedEntries(entries, ragged)
    inside = classes.TensorDict._from_entries(entries, size, stack.device,
                                              _without(stack._names, in_dim))
    MAPPED.setdefault(level, []).append(_Mapped(stack, inside, given, in_dim))
    return inside


def start_level(level: int) -> None:
    """Forget the lazy stacks mapped at ``level`` by an earlier call (one that raised)."""
    MAPPED.pop(level, None)


def write_back(level: int, size: int) -> dict[int, Any]:
    """Bring the writes made inside ``vmap`` into the parts of the lazy stacks seen as
    TensorDicts at ``level``; returns those mapped over their stack dim by ``id`` of the
    TensorDict the function saw."""
    mapped = MAPPED.pop(level, ())
    for record in mapped:
        stack, inside, given, dim = record.stack, record.inside, record.given, record.dim
        for key, value in inside._tensordict.items():
            old = given.get(key)
            if old is not None and old[0] is value:
                if old[1] is not None and old[1]._version != old[2]:
                    # written in place: into the parts' tensors, as the stacked one was
                    stack._set_str(key, old[1], inplace=True, validated=False)
                continue
            value = _leave_value(value, dim, level, size, {}, stack._batch_size)
            stack._set_str(key, value, inplace=False, validated=False)
        for key in given.keys() - inside._tensordict.keys():
            stack._del_str(key)
    return {id(record.inside): record.stack for record in mapped
            if record.dim == record.stack._stack_dim}


def leave(td: Any, out_dim: int, level: int, size: int, mapped: dict[int, Any]) -> Any:
    """``td`` returned by the function, with the mapped dim (of ``size``) back at its batch
    dim ``out_dim``; a TensorDict in ``mapped`` (a lazy stack mapped over its stack dim)
    becomes that stack's parts stacked along ``out_dim``."""
    stack = mapped.get(id(td))
    if stack is not None:
        return classes.LazyStackedTensorDict._from_entries(stack.tensordicts, out_dim,
                                                           stack._stack_dim_name)
    if td.__class__ is classes.TensorDict:
        batch_size, names = td._batch_size, td._names
        batch_size = batch_size[:out_dim] + torch.Size([size]) + batch_size[out_dim:]
        entries = {key: _leave_value(value, out_dim, level, size, mapped, batch_size)
                   for key, value in td._tensordict.items()}
        return classes.TensorDict._from_entries(
            entries, batch_size, td._device,
            None if names is None else names[:out_dim] + (None,) + names[out_dim:])
    stack_dim = td._stack_dim
    parts = [leave(part, out_dim - (out_dim > stack_dim), level, size, {})
             for part in td.tensordicts]
    return classes.LazyStackedTensorDict._from_entries(
        parts, stack_dim + (out_dim <= stack_dim), td._stack_dim_name)


def _leave_value(value: Any, out_dim: int, level: int, size: int, mapped: dict[int, Any],
                 batch_size: torch.Size) -> Any:
    """An entry of a TensorDict of batch size ``batch_size`` (the mapped dim back at
    ``out_dim``) returned by the function, as :func:`leave` leaves it."""
    if value.__class__ is UnbatchedTensor:
        return value._rebatch(batch_size)
    if isinstance(value, _Tensor):
        return _vmap_impl._remove_batch_dim(value, level, size, out_dim)
    if value._is_non_tensor:
        return fit_non_tensor(value, batch_size)
    return leave(value, out_dim, level, size, mapped)


# -- non-tensor entries (of either route) ------------------------------------------------------
def inserted_dim(new: torch.Size, old: torch.Size) -> int:
    """The position of the dim ``new`` has more than ``old`` (first match)."""
    for dim in range(len(new)):
        if new[:dim] + new[dim + 1:] == old:
            return dim
    return len(new)


def fit_non_tensor(value: Any, batch_size: torch.Size) -> Any:
    """``value`` (a non-tensor entry) under a parent of batch size ``batch_size``.

    Non-tensor data cannot be mapped: ``NonTensorData`` takes the new batch size; a
    ``NonTensorStack`` is repeated along the one dim the batch size gained (leaving
    ``vmap``), widened by new trailing dims, and else kept whole (``vmap`` hid one of its
    dims: as upstream, it comes out as it went in).

    >>> from tensordict import NonTensorStack
    >>> fit_non_tensor(NonTensorStack(NonTensorStack("a", "b")), torch.Size([2])).tolist()
    [['a', 'b']]
    >>> fit_non_tensor(NonTensorStack("a", "b"), torch.Size([3, 2])).tolist()[2]
    ['a', 'b']
    """
    own = value.batch_size
    if own == batch_size:
        return value
    if not hasattr(value, "tensordicts"):  # NonTensorData
        return value._rebatch(batch_size)
    if len(batch_size) == len(own) + 1:
        dim = inserted_dim(batch_size, own)
        if dim < len(batch_size):  # vmap left: the stack is the same in each map
            return value.unsqueeze(dim).expand(batch_size)
    if batch_size[: len(own)] == own:  # more trailing dims
        return value._rebatch(batch_size)
    return value  # fewer dims, or vmap hid one of its dims: kept whole
