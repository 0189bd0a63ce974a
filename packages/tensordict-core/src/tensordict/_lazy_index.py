"""How an index of a lazy stack maps onto its parts: which parts it picks, and the rest of
the index each of them takes (for reads and for checked writes).

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
from tensordict._plan import WritePlan

_Tensor = torch.Tensor


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
