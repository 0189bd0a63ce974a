"""Reading and writing the rows of a file-backed TensorDict.

An index is split in two: the rows of the first batch dim that the file library reads
directly (an int, a forward slice, sorted row numbers, a mask), and the rest, applied to
the rows read by ordinary TensorDict indexing. An index the libraries cannot read by rows
(``...``, ``None``, several index tensors) reads the whole arrays first.

>>> split_index(torch.tensor([3, 1, 3]), torch.Size([5]))
(array([1, 3]), (tensor([1, 0, 1]),))
>>> split_index((2, slice(0, 1)), torch.Size([5, 4]))
(slice(2, 3, None), (0, slice(0, 1, None)))
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tensordict import TensorDict

_ARRAYS = (torch.Tensor, np.ndarray, list)


def split_index(index: Any, batch: torch.Size) -> tuple[Any, tuple[Any, ...]]:
    """``(rows, rest)`` such that ``x[index] == x[rows][rest]``; ``rows`` is None when
    the whole arrays must be read."""
    parts = index if isinstance(index, tuple) else (index,)
    if not batch or not parts or any(
            part is None or part is Ellipsis or isinstance(part, _ARRAYS) for part in parts[1:]):
        return None, parts
    first, rest = parts[0], parts[1:]
    length = batch[0]
    if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
        row = int(first)
        if not -length <= row < length:
            raise IndexError(f"index {row} is out of bounds for dim 0 of size {length}")
        row %= length
        return slice(row, row + 1), (0, *rest)
    if isinstance(first, slice):
        if first.step is not None and first.step <= 0:
            return None, parts
        return slice(*first.indices(length)), (slice(None), *rest)
    if isinstance(first, _ARRAYS):
        array = np.asarray(first.cpu() if isinstance(first, torch.Tensor) else first)
        if array.dtype == np.bool_ and array.shape == (length,):
            return np.flatnonzero(array), (slice(None), *rest)
        if array.ndim == 1 and np.issubdtype(array.dtype, np.integer):
            if array.size and not (-length <= array.min() and array.max() < length):
                raise IndexError(f"index {array.tolist()} is out of bounds for dim 0 of "
                                 f"size {length}")
            rows, inverse = np.unique(array % length if array.size else array,
                                      return_inverse=True)
            return rows, (torch.from_numpy(inverse.reshape(-1)), *rest)
    return None, parts


def read_rows(ptd: Any, rows: Any) -> TensorDict:
    """The in-memory TensorDict of the ``rows`` of every entry (all of it for None)."""
    from tensordict.persistent import _leaves

    batch = ptd.batch_size
    if rows is not None:
        count = len(range(*rows.indices(batch[0]))) if isinstance(rows, slice) else len(rows)
        batch = torch.Size((count, *batch[1:]))
    out: dict[str, Any] = {}
    file_format, device = ptd._format, ptd.device
    for key in ptd._keys_str():
        node = ptd._group[key]
        if file_format.is_group(node):
            out[key] = read_rows(ptd._get_str(key), rows)
        elif file_format.is_non_tensor(node):
            value = file_format.read_non_tensor(node, ptd.batch_size, device)
            out[key] = value if rows is None else \
                value[rows if isinstance(rows, slice) else torch.from_numpy(rows)]
        else:
            data = file_format.read(node, ... if rows is None else
                                    rows if isinstance(rows, slice) else rows.tolist())
            out[key] = _leaves.from_numpy(data, node, device)
    return TensorDict(out, batch_size=batch, device=device)


def target_batch_size(batch: torch.Size, index: Any) -> torch.Size:
    """The batch size of ``td[index]`` for a TensorDict of batch size ``batch`` (raises
    IndexError for an index out of bounds)."""
    return torch.zeros(()).expand(batch)[index].shape


def write_rows(ptd: Any, node: Any, index: Any, source: torch.Tensor) -> None:
    """``node[index] = source`` for an array of ``ptd``: the rows directly when the
    index is rows alone, else the whole array read, written to and written back."""
    from tensordict.persistent import _leaves

    rows, rest = split_index(index, ptd.batch_size)
    file_format = ptd._format
    if rows is not None and len(rest) == 1:
        array, within = _leaves.to_numpy(source)[0], rest[0]
        if isinstance(within, int):  # one row
            file_format.write(node, rows.start, array)
            return
        if isinstance(within, slice) or torch.equal(within, torch.arange(len(rows))):
            file_format.write(node, rows if isinstance(rows, slice) else rows.tolist(), array)
            return
    whole = _leaves.from_numpy(file_format.read(node, ...), node, None)
    whole[index] = source.to(whole.dtype)
    file_format.write(node, ..., _leaves.to_numpy(whole)[0])
