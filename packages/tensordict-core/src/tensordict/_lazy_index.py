"""How an index of a lazy stack maps onto its parts: which parts it picks, and the rest of
the index each of them takes (for reads and for checked writes); :class:`LazyIndexMixin`
holds the lazy stack's indexing methods built on them.

Example:
    >>> import torch
    >>> part_choice(torch.tensor([True, False, True]))
    [0, 2]
    >>> index_part("td", (slice(None),))
    'td'
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict._collection import classes, is_tensor_collection
from tensordict._nested_key import NestedKey
from tensordict._plan import WritePlan
from tensordict._shapes import check_bounds, indexed_batch_size, masks_to_indices, normalize_index

_Tensor = torch.Tensor
_SIMPLE = (int, slice, type(None))


def ragged_choice(parts: list[Any], chosen: Any) -> list[Any]:
    """The parts a tensor index of the stack dim of a ragged stack picks."""
    choice = part_choice(chosen)
    if choice is None:
        raise IndexError(f"a lazy stack whose parts differ in batch size can only be indexed "
                         f"along its stack dim by an int, a slice or a 1-D tensor, got "
                         f"{chosen!r}")
    return [parts[i] for i in choice]


def index_part(td: Any, rest: tuple[Any, ...]) -> Any:
    """``td[rest]``, or ``td`` itself when ``rest`` selects everything."""
    if all(p.__class__ is slice and p == slice(None) for p in rest):
        return td
    return td[rest]


def part_choice(part: Any) -> int | slice | list[int] | None:
    """The parts an index of the stack dim picks: an int, a slice or a list (None: other)."""
    if part.__class__ in (int, slice):
        return part
    if isinstance(part, _Tensor) and part.ndim == 1:
        return (part.nonzero().squeeze(-1) if part.dtype is torch.bool else part).tolist()
    return None


def dims_in_place(rest: tuple[Any, ...], stack_part: Any) -> bool:
    """Whether ``td[index]`` keeps its dims in order, so each part can take its own piece:
    ``rest`` (the index of the other dims) holds ints and slices, or slices and one 1-D
    tensor while the stack dim takes a slice (no dims moved to the front)."""
    tensors = [p for p in rest if p.__class__ not in (int, slice)]
    if not tensors:
        return True
    return (len(tensors) == 1 and isinstance(tensors[0], _Tensor) and tensors[0].ndim == 1
            and stack_part.__class__ is slice and all(p.__class__ is not int for p in rest))


def part_plan(td: Any, rest: tuple[Any, ...], value: Any) -> WritePlan:
    """The checked writes of ``td[rest] = value``, ``rest`` possibly empty."""
    return td._plan_at_index(rest if rest else (), value)


def split_value(value: Any, sub_batch: torch.Size, dim: int, count: int) -> list[Any] | None:
    """``value`` (written at a slice of the stack dim) as one piece per part, or None."""
    if isinstance(value, (int, float, bool)) or (isinstance(value, _Tensor) and not value.ndim):
        return [value] * count
    if isinstance(value, dict):
        value = classes.TensorDict(value, batch_size=sub_batch)
    shape = value.batch_size if is_tensor_collection(value) else getattr(value, "shape", None)
    if shape is None or shape[: len(sub_batch)] != sub_batch:
        return None
    if isinstance(value, _Tensor):
        return list(value.unbind(dim))
    return [value[(slice(None),) * dim + (i,)] for i in range(count)]


class LazyIndexMixin:
    """Indexing of :class:`~tensordict.LazyStackedTensorDict`: reads pick parts and index
    each; writes go to the parts the index picks (a whole part through its own fast paths),
    every one checked before the first."""

    __slots__ = ()

    def _index(self, index: Any) -> Any:
        out = self._indexed(index)
        if self._is_locked and not out._is_locked:  # as upstream: views of a locked stack
            out._propagate_lock(True)  # are locked (a write to one would be lost)
        return out

    def _indexed(self, index: Any) -> Any:
        if index.__class__ is int and self._stack_dim == 0:
            try:
                return self.tensordicts[index]
            except IndexError:
                indexed_batch_size(self._batch_size, index)  # raises, naming the batch size
                raise
        parts = normalize_index(index, self._batch_size)
        if all(p.__class__ in _SIMPLE for p in parts):
            return self._index_simple(parts)
        if -1 in self._batch_size:  # only the parts know their sizes: they index themselves
            return self._index_simple(masks_to_indices(parts))
        batch_size = indexed_batch_size(self._batch_size, parts)
        key = parts[0] if len(parts) == 1 else parts
        return self._apply_nest(lambda x: x[key], batch_size=batch_size)

    def _index_simple(self, parts: tuple[Any, ...]) -> Any:
        """Index with ints, slices and None (or, for ragged stacks, anything that indexes
        each part, the stack dim taking at most a 1-D tensor): pick parts, then index each."""
        sd = self._stack_dim
        ragged = -1 in self._batch_size
        if not ragged:
            indexed_batch_size(self._batch_size, parts)  # raises for out-of-range ints
        dim, out_dims = 0, 0
        for position, part in enumerate(parts):
            if part is not None and dim == sd:
                chosen = part
                rest = parts[:position] + parts[position + 1:]
                break
            if part is not None:
                dim += 1
            out_dims += part.__class__ is not int
        else:
            chosen, rest = slice(None), parts
            out_dims += sd - dim
        if chosen.__class__ is int:
            return index_part(self.tensordicts[chosen], rest)
        if chosen.__class__ is slice:
            chosen_parts = self.tensordicts[chosen]
        else:
            chosen_parts = ragged_choice(self.tensordicts, chosen)
        pieces = [index_part(td, rest) for td in chosen_parts]
        if not pieces:
            if ragged:
                raise IndexError(f"the index {parts} selects no part of a lazy stack of "
                                 f"batch size {self._batch_size}: its size is unknown")
            return self._apply_nest(lambda x: x[parts], batch_size=indexed_batch_size(
                self._batch_size, parts))
        return type(self)._from_entries(pieces, out_dims, self._stack_dim_name)

    def _set_at_index(self, index: Any, value: Any) -> None:
        part = self._whole_part(index)
        if part is not None:  # one part, written whole (with its own fast paths)
            part._set_at_index((), value)
        else:
            self._plan_at_index(index, value).run()

    def set_at_(self, key: NestedKey, value: Any, index: Any, *,
                non_blocking: bool = False) -> Any:
        part = self._whole_part(index) if value.__class__ is _Tensor else None
        if part is None:
            return super().set_at_(key, value, index, non_blocking=non_blocking)
        part.set_at_(key, value, (), non_blocking=non_blocking)  # one part's leaf, whole
        return self

    def _whole_part(self, index: Any) -> Any:
        """The part ``self[index]`` is, if ``index`` picks one along the stack dim 0."""
        if index.__class__ is int and not self._stack_dim and \
                -len(self.tensordicts) <= index < len(self.tensordicts):
            return self.tensordicts[index]
        return None

    def _plan_at_index(self, index: Any, value: Any) -> WritePlan:
        """The writes of ``self[index] = value`` into the parts, all checked first."""
        part = self._whole_part(index)
        if part is not None:
            return part_plan(part, (), value)
        parts = normalize_index(index, self._batch_size)
        check_bounds(masks_to_indices(parts), self._batch_size)
        sd = self._stack_dim
        parts += (slice(None),) * (sd + 1 - len(parts))
        chosen, rest = part_choice(parts[sd]), parts[:sd] + parts[sd + 1:]
        if chosen is not None and dims_in_place(rest, parts[sd]):
            if chosen.__class__ is int:
                return part_plan(self.tensordicts[chosen], rest, value)
            targets = self.tensordicts[chosen] if chosen.__class__ is slice else \
                [self.tensordicts[i] for i in chosen]
            sub_batch = indexed_batch_size(self._batch_size, parts)
            sub_dim = sum(p.__class__ is not int for p in parts[:sd])  # the stack dim, indexed
            pieces = split_value(value, sub_batch, sub_dim, len(targets))
            if pieces is not None:
                plan = WritePlan()
                for td, piece in zip(targets, pieces):
                    plan.extend(part_plan(td, rest, piece))
                return plan
        dense = self.contiguous()  # anything else: write densely (a copy), then copy back
        dense[index] = value
        return self._plan_update_(dense, None, False, False)
