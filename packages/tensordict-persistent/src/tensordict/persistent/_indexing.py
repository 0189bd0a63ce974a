"""Reading and writing the rows of a file-backed TensorDict.

An index is split (by :func:`tensordict.storage.split_rows`) in two: the rows of the
first batch dim that the file library reads or writes directly, and the rest, applied
to the rows read by ordinary tensor indexing. An index the libraries cannot read by
rows reads the whole arrays first.
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict import TensorDict
from tensordict.storage import split_rows


def read_all(ptd: Any) -> TensorDict:
    """Every entry of ``ptd`` read into an in-memory TensorDict."""
    out: dict[str, Any] = {}
    for key in ptd._keys_str():
        node = ptd._group[key]
        out[key] = read_all(ptd._get_str(key)) if ptd._format.is_group(node) \
            else read_leaf(ptd, node, None)
    return TensorDict(out, batch_size=ptd.batch_size, device=ptd.device)


def read_leaf(ptd: Any, node: Any, rows: Any) -> Any:
    """The ``rows`` of the array or non-tensor entry ``node`` of ``ptd`` (all for None)."""
    from tensordict.persistent import _leaves

    file_format = ptd._format
    if file_format.is_non_tensor(node):
        value = file_format.read_non_tensor(node, ptd.batch_size, ptd.device)
        return value if rows is None else \
            value[rows if isinstance(rows, slice) else torch.from_numpy(rows)]
    data = file_format.read(node, ... if rows is None else
                            rows if isinstance(rows, slice) else rows.tolist())
    return _leaves.from_numpy(data, node, ptd.device)


def write_rows(ptd: Any, node: Any, index: Any, source: torch.Tensor) -> None:
    """``node[index] = source`` for an array of ``ptd``: the rows directly when the
    index is rows alone, else the whole array read, written to and written back."""
    from tensordict.persistent import _leaves

    rows, rest = split_rows(index, ptd.batch_size)
    file_format = ptd._format
    if rows is not None and len(rest) == 1:
        array, within = _leaves.stored_array(node, source), rest[0]
        if isinstance(within, int):  # one row
            file_format.write(node, rows.start, array)
            return
        if isinstance(within, slice) or torch.equal(within, torch.arange(len(rows))):
            file_format.write(node, rows if isinstance(rows, slice) else rows.tolist(), array)
            return
    whole = _leaves.from_numpy(file_format.read(node, ...), node, None)
    whole[index] = source.to(whole.dtype)
    file_format.write(node, ..., _leaves.to_numpy(whole)[0])
