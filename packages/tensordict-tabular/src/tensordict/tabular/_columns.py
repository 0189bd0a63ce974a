"""Columns of a table and entries of a tensordict: the rules every format shares.

:func:`columns` turns a tensordict into named columns (one row per element, nested keys
joined with a ``separator``); :func:`build` turns named columns back into a tensordict
(names split on the ``separator``, the batch-size, ``dtype`` and ``device`` options of
every ``from_*`` reader).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.arange(2), b=TensorDict(c=torch.zeros(2), batch_size=[2]),
    ...                 batch_size=[2])
    >>> sorted(columns(td, "."))
    ['a', 'b.c']
    >>> build(columns(td, "."), 2, separator=".")["b", "c"]
    tensor([0., 0.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tensordict import NonTensorStack, TensorDict, errors, is_non_tensor, is_tensorclass
from tensordict.utils import acts_as_tensordict

#: A column: a 1-D tensor, or a list of Python values (one per row).
Column = torch.Tensor | list


def num_rows(td: Any, what: str) -> int:
    """The number of rows of ``td``: its one batch dimension (ValueError otherwise)."""
    if td.batch_dims > 1:
        raise ValueError(f"{what} needs a tensordict with at most one batch dimension, got "
                         f"batch_size={tuple(td.batch_size)}: call td.reshape(-1) first.")
    return td.batch_size[0] if td.batch_dims else 1


def columns(td: Any, separator: str | None) -> dict[str, Column]:
    """One column per leaf of ``td``, named by its key joined with ``separator``.

    Raises ValueError for a nested tensordict without ``separator``, a tensor with more
    than one dimension per row, and two keys that join to the same name.
    """
    rows = num_rows(td, "a table")
    out: dict[str, Column] = {}
    _add_columns(td._tensordict if is_tensorclass(td) else td, (), separator, rows, out)
    return out


def _add_columns(td: Any, path: tuple[str, ...], separator: str | None, rows: int,
                 out: dict[str, Column]) -> None:
    for key in td.keys():
        value = td.get(key)
        where = (*path, key)
        if isinstance(value, torch.Tensor):
            if value.dim() > 1 or (value.dim() == 1 and td.batch_dims == 0):
                raise ValueError(
                    f"Cannot convert tensor with shape {value.shape} at key "
                    f"{_key(where)!r} to a single column. Only 1D tensors (matching the "
                    "batch size) are supported."
                )
            _put(out, where, separator, value.reshape(rows))
        elif is_non_tensor(value):
            _put(out, where, separator, non_tensor_rows(value, rows))
        elif is_tensorclass(value) and separator is None:
            _put(out, where, separator, [value[i] for i in range(rows)] if td.batch_dims
                 else [value])
        elif acts_as_tensordict(value):
            if separator is None:
                raise ValueError(
                    f"Nested TensorDict at key {_key(where)!r} requires a separator "
                    "parameter to flatten it to columns. Use separator='.'."
                )
            _add_columns(value._tensordict if is_tensorclass(value) else value, where,
                         separator, rows, out)
        else:
            raise TypeError(f"Cannot convert the value at key {_key(where)!r} to a column: "
                            f"{type(value).__name__} is not supported.")


def _key(path: tuple[str, ...]) -> str | tuple[str, ...]:
    return path[0] if len(path) == 1 else path


def _put(out: dict[str, Column], path: tuple[str, ...], separator: str | None,
         column: Column) -> None:
    name = path[0] if separator is None else separator.join(path)
    if name in out:
        raise ValueError(f"Two keys of the tensordict give the column name {name!r}: "
                         "choose another separator.")
    out[name] = column


def non_tensor_rows(value: Any, rows: int) -> list:
    """The values of a non-tensor entry, one per row."""
    if isinstance(value, NonTensorStack):
        data = value.tolist()
        return list(data) if value.batch_dims else [list(data)]
    return [value.data] * rows


def build(cols: dict[str, Any], rows: int, *, auto_batch_size: bool = False,
          batch_dims: int | None = None,
          device: torch.device | str | int | None = None,
          batch_size: Sequence[int] | None = None, separator: str | None = None,
          dtype: torch.dtype | None = None, op: str = "from_arrow") -> Any:
    """A TensorDict holding ``cols``: tensors, tensordicts (struct columns) or
    lists of Python values (stored as a NonTensorStack, one value per row).

    Names are split on ``separator``; numeric and boolean tensors are cast to ``dtype``;
    the batch size is ``[rows]`` unless ``batch_size`` or ``auto_batch_size`` says
    otherwise (both: ArgumentError naming ``op``, the function called, a TypeError as
    upstream's and a ValueError); ``device`` moves the result.
    """
    if auto_batch_size and batch_size is not None:
        raise errors.ArgumentError(
            f"Conflicting batch sizes in {op}: batch_size and auto_batch_size cannot be both "
            f"specified (they are exclusive: pass one of them).")
    td = TensorDict(batch_size=[rows])
    for name, column in cols.items():
        if column.__class__ is list:
            column = NonTensorStack.from_list(column, [rows])
        elif dtype is not None:
            column = _cast(column, dtype)
        key = tuple(name.split(separator)) if separator else name
        td.set(key, column)
    if batch_size is not None:
        td.batch_size = torch.Size(batch_size)
    elif auto_batch_size:
        td.auto_batch_size_(batch_dims)
    if device is not None:
        td = td.to(device)
    return td


def _cast(column: Any, dtype: torch.dtype) -> Any:
    if isinstance(column, torch.Tensor):
        return column.to(dtype) if not column.is_nested else column
    return column.apply(lambda leaf: _cast(leaf, dtype))
