"""Batch sizes, devices and indices: normalising them and predicting result shapes.

Example:
    >>> import torch
    >>> idx = normalize_index((..., slice(0, 2)), torch.Size([3, 4]))
    >>> idx
    (slice(None, None, None), slice(0, 2, None))
    >>> indexed_batch_size(torch.Size([3, 4]), idx)
    torch.Size([3, 2])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

_SIMPLE = (int, slice, type(None))
CPU = torch.device("cpu")
_CUDA = torch.device("cuda")  # (with no index)


def as_size(batch_size: Any) -> torch.Size:
    """``batch_size`` (None, an int, a sequence or a torch.Size) as a torch.Size.

    Raises TypeError for anything else, RuntimeError for a size below -1 (``-1`` marks a
    ragged dim, whose size differs between the elements of a lazy stack).

    >>> as_size(3), as_size([2, 4]), as_size(None)
    (torch.Size([3]), torch.Size([2, 4]), torch.Size([]))
    """
    cls = batch_size.__class__
    if cls is torch.Size:
        size = batch_size
    elif batch_size is None:
        return torch.Size()
    elif cls is list or cls is tuple:  # the common spellings, before the isinstance checks
        size = _sequence_size(batch_size)
    elif isinstance(batch_size, (int, np.integer)):
        size = torch.Size([int(batch_size)])
    elif isinstance(batch_size, torch.Tensor):
        size = torch.Size(batch_size.tolist() if batch_size.ndim else [int(batch_size)])
    else:
        size = _sequence_size(batch_size)
    if size and (size[0] if len(size) == 1 else min(size)) < -1:
        raise RuntimeError(f"a batch size has no negative dims other than -1 (a ragged dim: "
                           f"its size differs between elements), got {list(size)}")
    return size


def _sequence_size(batch_size: Any) -> torch.Size:
    try:
        return torch.Size(batch_size)
    except TypeError as err:
        raise TypeError(
            f"batch_size must be an int or a sequence of ints, got {batch_size!r}"
        ) from err


def as_device(device: Any) -> torch.device | None:
    """``device`` as a torch.device (``"cuda"`` gets its current index), or None.

    >>> as_device("cpu"), as_device(None)
    (device(type='cpu'), None)
    """
    if device is None or device.__class__ is torch.device and (
            device.index is not None or device == CPU):  # (comparing is 6x faster than .type)
        return device
    device = torch.device(device)
    if device == _CUDA and torch.cuda.is_available():
        device = torch.device("cuda", torch.cuda.current_device())
    return device


_PLAIN = (int, slice, type(None), torch.Tensor)


def _as_index_part(part: Any) -> Any:
    if part.__class__ in _PLAIN:
        return part
    if isinstance(part, str):
        raise TypeError(f"an index cannot mix keys (strings) and batch indices, got {part!r}: "
                        "use td[key][idx] or td[idx][key]")
    if isinstance(part, float):
        raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                         f"Variables are valid indices (got float): a batch index is an int, a "
                         f"slice, None, ..., or a tensor of ints or booleans, got {part!r}")
    if isinstance(part, (list, np.ndarray)):
        return torch.as_tensor(np.asarray(part) if isinstance(part, list) else part)
    if isinstance(part, range):
        return torch.arange(part.start, part.stop, part.step)
    if isinstance(part, np.integer):
        return int(part)
    if isinstance(part, np.bool_):
        return bool(part)
    return part


def _dims_consumed(part: Any) -> int:
    if part is None or part is Ellipsis or part is True or part is False:
        return 0
    if part.__class__ is torch.Tensor and part.dtype is torch.bool:
        return max(part.ndim, 1)
    return 1


def normalize_index(index: Any, batch_size: torch.Size) -> tuple[Any, ...]:
    """``index`` as a tuple that addresses only batch dims (``...`` expanded).

    Lists and arrays become tensors. Raises IndexError when the index uses more dims
    than the batch has, TypeError for a string (a key) inside an index.
    """
    parts = index if index.__class__ is tuple else (index,)
    parts = tuple(_as_index_part(p) for p in parts)
    used = sum(_dims_consumed(p) for p in parts)
    ndim = len(batch_size)
    if used > ndim:
        raise IndexError(
            f"too many indices for a TensorDict of batch size {batch_size}: "
            f"index {_describe(index)} addresses {used} dims"
        )
    ellipses = sum(p is Ellipsis for p in parts)
    if ellipses:
        if ellipses > 1:
            raise RuntimeError(f"an index can only have one ellipsis (...), got {index!r}")
        position = parts.index(Ellipsis)
        fill = (slice(None),) * (ndim - used)
        parts = parts[:position] + fill + parts[position + 1:]
    if any(p.__class__ is torch.Tensor for p in parts):
        _check_index_tensors(parts, batch_size)
    return parts


def convert_ellipsis_to_idx(idx: Any, batch_size: Any) -> tuple[Any, ...]:
    """``idx`` with its ``...`` replaced by the full slices it stands for (upstream's name
    of :func:`normalize_index`, taking any sized ``batch_size``).

    >>> convert_ellipsis_to_idx((0, ...), torch.Size([2, 3, 4]))
    (0, slice(None, None, None), slice(None, None, None))
    """
    return normalize_index(idx, torch.Size(batch_size))


def _describe(index: Any) -> str:
    """``index`` for a message: tensors by their shape."""
    parts = index if index.__class__ is tuple else (index,)
    text = [f"tensor of shape {list(p.shape)}" if isinstance(p, torch.Tensor) else repr(p)
            for p in parts]
    return text[0] if index.__class__ is not tuple else f"({', '.join(text)})"


def _check_index_tensors(parts: tuple[Any, ...], batch_size: torch.Size) -> None:
    """Raise IndexError for an index tensor that is not of ints or booleans, or a mask
    whose shape is not the one of the batch dims it covers (``nonzero`` would silently
    accept a shorter one)."""
    dim = 0
    for part in parts:
        if part.__class__ is torch.Tensor:
            if part.dtype is torch.bool and part.ndim:
                covered = batch_size[dim: dim + part.ndim]
                if part.shape != covered:
                    raise IndexError(
                        f"the shape of the mask {list(part.shape)} does not match the batch "
                        f"dims {list(covered)} it indexes (dims {dim}.. of batch size "
                        f"{list(batch_size)})"
                    )
            elif part.is_floating_point() or part.is_complex():
                raise IndexError(f"tensors used as batch indices must be of ints or booleans, "
                                 f"got one of dtype {part.dtype}")
        dim += _dims_consumed(part)


def check_bounds(parts: tuple[Any, ...], batch_size: torch.Size) -> None:
    """Raise IndexError, before anything is written, if an int or an index tensor of
    ``parts`` (normalized, masks turned into indices) is out of range for its batch dim."""
    dim = 0
    for part in parts:
        if part is None or part is True or part is False:
            continue
        if part.__class__ is torch.Tensor and part.dtype is not torch.bool and part.numel():
            size = batch_size[dim]
            low, high = torch.aminmax(part)
            if part.device.type == "cpu":
                low, high = int(low), int(high)
            else:
                low, high = torch.stack((low, high)).tolist()  # one device sync
            bad = low if low < -size else high if high >= size else None
            if bad is not None:
                raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size "
                                 f"{size} (batch size {list(batch_size)})")
        elif part.__class__ is int and not -batch_size[dim] <= part < batch_size[dim]:
            raise IndexError(f"index {part} is out of bounds for dimension {dim} with size "
                             f"{batch_size[dim]} (batch size {list(batch_size)})")
        dim += 1


def masks_to_indices(parts: tuple[Any, ...]) -> tuple[Any, ...]:
    """Normalized ``parts`` with each boolean mask replaced by its long indices, so that
    indexing many leaves computes ``nonzero`` once."""
    if not any(p.__class__ is torch.Tensor and p.dtype is torch.bool and p.ndim
               for p in parts):
        return parts
    out: list[Any] = []
    for part in parts:
        if part.__class__ is torch.Tensor and part.dtype is torch.bool and part.ndim:
            out.extend(part.nonzero(as_tuple=True))
        else:
            out.append(part)
    return tuple(out)


def indexed_batch_size(batch_size: torch.Size, index: Any) -> torch.Size:
    """The batch size that indexing a batch of ``batch_size`` with ``index`` gives."""
    return indexed_size(batch_size, normalize_index(index, batch_size))


def indexed_size(batch_size: torch.Size, parts: tuple[Any, ...]) -> torch.Size:
    """Like :func:`indexed_batch_size`, for an index already through
    :func:`normalize_index`."""
    tensors = [i for i, p in enumerate(parts) if p.__class__ is torch.Tensor]
    simple = all(p.__class__ in _SIMPLE or p.__class__ is torch.Tensor and
                 p.dtype is not torch.bool for p in parts)
    if not simple or (tensors and tensors[-1] - tensors[0] != len(tensors) - 1):
        device = next((p.device for p in parts if isinstance(p, torch.Tensor)), None)
        dummy = torch.zeros((), dtype=torch.uint8, device=device).expand(batch_size)
        return dummy[parts].shape
    out: list[int] = []
    dim = 0
    for i, part in enumerate(parts):
        if part is None:
            out.append(1)
            continue
        size = batch_size[dim]
        if part.__class__ is int:
            if not -size <= part < size:
                raise IndexError(
                    f"index {part} is out of bounds for dimension {dim} with size {size} "
                    f"(batch size {batch_size})"
                )
        elif part.__class__ is slice:
            out.append(len(range(*part.indices(size))))
        elif i == tensors[0]:
            out.extend(part.shape if len(tensors) == 1 else
                       torch.broadcast_shapes(*(parts[j].shape for j in tensors)))
        dim += 1
    return torch.Size(out + list(batch_size[dim:]))


def expand_size(shape: Sequence[int], batch_size: torch.Size) -> torch.Size:
    """``shape`` with ``-1`` entries replaced by the matching dims of ``batch_size``."""
    shape = list(shape)
    offset = len(shape) - len(batch_size)
    for i, size in enumerate(shape):
        if size == -1:
            if i < offset:
                raise RuntimeError(f"cannot use -1 for a new leading dim in expand({shape})")
            shape[i] = batch_size[i - offset]
    return torch.Size(shape)
