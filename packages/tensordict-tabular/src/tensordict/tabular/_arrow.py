"""Arrow tables and tensordicts: :func:`from_arrow` and :func:`to_arrow`.

Every file format of this package goes through Arrow: Parquet, CSV and JSON are read
into an Arrow table (then converted here) and written from one.

Example:
    >>> import pyarrow as pa
    >>> td = from_arrow(pa.table({"x": [1.0, 2.0], "name": ["a", "b"]}))
    >>> td["x"], list(td.get("name").tolist())
    (tensor([1., 2.], dtype=torch.float64), ['a', 'b'])
    >>> to_arrow(td).column_names
    ['x', 'name']
"""

from __future__ import annotations

import warnings
from typing import Any, Literal

import numpy as np
import pyarrow as pa
import torch

from tensordict import TensorDict, TensorDictBase, is_non_tensor, is_tensorclass
from tensordict.tabular import _columns
from tensordict.utils import acts_as_tensordict

NestedKey = str | tuple[str, ...]
Nulls = Literal["raise", "fill", "mask"]
#: The mode of the file readers: integer columns with nulls become float64 with NaN, as
#: pandas reads them (what upstream's readers give).
NULLS_AS_NAN = "nan"
_DEFAULT_MASK_KEY = "_mask"


def from_arrow(table: Any, *, copy: bool | None = None, nulls: Nulls = "raise",
               mask_key: NestedKey | None = None,
               device: torch.device | str | int | None = None) -> TensorDict:
    """Convert an Arrow table to a TensorDict with one entry per column and the batch
    size ``[num_rows]``.

    Integer and floating-point columns become tensors, booleans are copied (Arrow packs
    them as bits), ``list``/``large_list`` columns of numbers become jagged nested
    tensors, ``fixed_size_list`` and ``arrow.fixed_shape_tensor`` columns tensors with
    trailing dimensions, ``struct`` columns nested TensorDicts, and every other column
    (strings, timestamps...) a NonTensorStack of ``to_pylist()`` values.

    Args:
        table: a ``pyarrow.Table`` or ``RecordBatch``; anything else goes through
            ``pyarrow.table`` first (a dict of lists, a Polars DataFrame...).
        copy: ``None`` views the numeric columns whose buffers Arrow marks as mutable
            and copies the others (a memory-mapped file, say); ``True`` copies every
            column; ``False`` views every column it can (a write into a view of an
            immutable buffer is undefined behaviour).
        nulls: ``"raise"`` (ValueError on a null), ``"fill"`` (NaN for floats, 0/False
            for other tensors, an empty list in jagged tensors, ``None`` in non-tensor
            columns) or ``"mask"`` (fill, and add a boolean entry
            ``(*mask_key, *key)`` that is ``True`` where the row is not null).
        mask_key: where ``nulls="mask"`` puts its masks (default ``"_mask"``).
        device: the device of the result (default: CPU tensors, no device).

    Example:
        >>> import pyarrow as pa
        >>> td = from_arrow(pa.table({"y": [1.0, None]}), nulls="mask")
        >>> td["y"], td["_mask", "y"]
        (tensor([1., nan], dtype=torch.float64), tensor([ True, False]))
    """
    if nulls not in ("raise", "fill", "mask", NULLS_AS_NAN):
        raise ValueError(f"nulls must be 'raise', 'fill' or 'mask', got {nulls!r}")
    if mask_key is not None and nulls != "mask":
        raise ValueError("mask_key is only used with nulls='mask'")
    cols, masks = table_columns(table, copy=copy, nulls=nulls)
    td = _columns.build(cols, _num_rows(table), device=device)
    if masks:
        prefix = _as_tuple(_DEFAULT_MASK_KEY if mask_key is None else mask_key)
        for key, mask in masks.items():
            td.set((*prefix, *key), mask if device is None else mask.to(device))
    return td


def _as_tuple(key: NestedKey) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def _as_table(table: Any) -> pa.Table:
    if isinstance(table, pa.Table):
        return table
    if isinstance(table, pa.RecordBatch):
        return pa.Table.from_batches([table])
    return pa.table(table)


def _num_rows(table: Any) -> int:
    return _as_table(table).num_rows


def table_columns(table: Any, *, copy: bool | None = None, nulls: str = "raise"
                  ) -> tuple[dict[str, Any], dict[tuple[str, ...], torch.Tensor]]:
    """The converted columns of ``table`` by name (see :func:`from_arrow`), and the
    validity masks of the columns with nulls (``nulls="mask"`` only)."""
    table = _as_table(table)
    converter = _Converter(copy, nulls, table.num_rows)
    cols = {}
    for name, chunked in zip(table.column_names, table.columns, strict=True):
        array = chunked.chunk(0) if chunked.num_chunks == 1 else chunked.combine_chunks()
        cols[name] = converter.convert(array, (name,))
    return cols, converter.masks


class _Converter:
    def __init__(self, copy: bool | None, nulls: str, rows: int) -> None:
        self.copy, self.nulls, self.rows = copy, nulls, rows
        self.masks: dict[tuple[str, ...], torch.Tensor] = {}

    def convert(self, array: pa.Array, key: tuple[str, ...]) -> Any:
        kind = array.type
        if array.null_count:
            array = self._nulls(array, key)
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or \
                pa.types.is_boolean(kind):
            return self._tensor(array)
        if pa.types.is_fixed_size_list(kind) and _numeric(kind):
            return self._fixed(array)
        if isinstance(kind, pa.FixedShapeTensorType):
            return torch.from_numpy(array.to_numpy_ndarray().copy())
        if (pa.types.is_list(kind) or pa.types.is_large_list(kind)) and _numeric(kind):
            return self._jagged(array)
        if pa.types.is_struct(kind):
            fields = {kind.field(i).name: child for i, child in enumerate(array.flatten())}
            return TensorDict({name: self.convert(child, (*key, name))
                               for name, child in fields.items()}, batch_size=[len(array)])
        return array.to_pylist()

    def _nulls(self, array: pa.Array, key: tuple[str, ...]) -> pa.Array:
        if self.nulls == "raise":
            raise ValueError(
                f"The Arrow column {key} has {array.null_count} null value(s). Pass "
                "nulls='fill' to fill them, or nulls='mask' to also get a mask entry."
            )
        kind = array.type
        if pa.types.is_struct(kind):
            return array  # its fields carry the nulls (flatten merges them in)
        if self.nulls == "mask":
            self.masks[key] = torch.from_numpy(
                array.is_valid().to_numpy(zero_copy_only=False).copy())
        if pa.types.is_floating(kind):
            return array.fill_null(float("nan"))
        if pa.types.is_integer(kind) and self.nulls == NULLS_AS_NAN:
            return array.cast(pa.float64()).fill_null(float("nan"))
        if pa.types.is_integer(kind) or pa.types.is_boolean(kind):
            return array.fill_null(pa.scalar(0 if pa.types.is_integer(kind) else False,
                                             kind))
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return array.fill_null(pa.scalar([], kind))
        return array  # other columns keep None

    def _tensor(self, array: pa.Array) -> torch.Tensor:
        if pa.types.is_boolean(array.type):  # bits: always a copy
            view = False
        elif self.copy is None:  # view what Arrow lets us write to
            view = all(buffer is None or buffer.is_mutable for buffer in array.buffers())
        else:
            view = not self.copy
        values = array.to_numpy(zero_copy_only=False, writable=not view)
        if not view:
            return torch.from_numpy(values)
        with warnings.catch_warnings():  # a view of a read-only buffer, as asked
            warnings.simplefilter("ignore", UserWarning)
            return torch.from_numpy(values)

    def _fixed(self, array: pa.FixedSizeListArray) -> torch.Tensor:
        values = self.convert(array.flatten(), ())
        return values.reshape(len(array), array.type.list_size, *values.shape[1:])

    def _jagged(self, array: pa.Array) -> torch.Tensor:
        offsets = array.offsets.to_numpy().astype(np.int64)
        values = self.convert(array.values.slice(offsets[0], offsets[-1] - offsets[0]), ())
        return torch.nested.nested_tensor_from_jagged(
            values, torch.from_numpy(offsets - offsets[0]))


def _numeric(kind: pa.DataType) -> bool:
    """Whether a list type holds numbers (possibly in fixed-size lists) at its bottom."""
    while pa.types.is_fixed_size_list(kind) or pa.types.is_list(kind) or \
            pa.types.is_large_list(kind):
        kind = kind.value_type
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or \
        pa.types.is_boolean(kind)


def to_arrow(td: TensorDictBase) -> pa.Table:
    """Convert a tensordict with one batch dimension to an Arrow table, one column per
    entry (the reverse of :func:`from_arrow`).

    1-D tensors become primitive columns, tensors with more dimensions
    ``arrow.fixed_shape_tensor`` columns, jagged nested tensors (ragged dim 1)
    ``large_list`` columns, nested tensordicts ``struct`` columns, and non-tensor
    entries columns of the type ``pyarrow.array`` infers from their values.

    Raises:
        ValueError: the batch size does not have exactly one dimension.
        TypeError: a value Arrow cannot hold (a bfloat16 tensor, mixed Python types).

    Example:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(x=torch.tensor([1.0, 2.0]), image=torch.zeros(2, 3, 4),
        ...                 obs=TensorDict(y=torch.tensor([3, 4]), batch_size=[2]),
        ...                 batch_size=[2])
        >>> to_arrow(td).schema.names
        ['x', 'image', 'obs']
    """
    if td.batch_dims != 1:
        raise ValueError(f"to_arrow needs a tensordict with one batch dimension, got the "
                         f"batch size {td.batch_size}. Call td.reshape(-1) first to flatten "
                         "it.")
    return pa.table(_arrays(td, ()))


def _arrays(td: Any, path: tuple[str, ...]) -> dict[str, pa.Array]:
    if is_tensorclass(td):
        td = td._tensordict
    arrays = {}
    for key in td.keys():
        value = td.get(key)
        where = (*path, key)
        if isinstance(value, torch.Tensor):
            arrays[key] = tensor_array(value, where)
        elif is_non_tensor(value):
            arrays[key] = column_array(_columns.non_tensor_rows(value, td.batch_size[0]),
                                       where)
        elif acts_as_tensordict(value):
            children = _arrays(value, where)
            arrays[key] = pa.StructArray.from_arrays(list(children.values()),
                                                     names=list(children))
        else:
            raise TypeError(f"Cannot convert the value at {where} to an Arrow column: "
                            f"{type(value).__name__} is not supported.")
    return arrays


def tensor_array(tensor: torch.Tensor, where: tuple[str, ...]) -> pa.Array:
    """The Arrow column of ``tensor`` (one row per element of its first dimension)."""
    if tensor.is_nested:
        if tensor._ragged_idx != 1:  # noqa: SLF001
            raise ValueError(f"Cannot convert the nested tensor at {where} to Arrow: its "
                             "ragged dim must be dim 1.")
        offsets = pa.array(tensor.offsets().cpu().numpy().astype(np.int64))
        return pa.LargeListArray.from_arrays(offsets, tensor_array(tensor.values(), where))
    data = tensor.detach().cpu()
    try:
        values = data.numpy()
    except TypeError as err:
        raise TypeError(f"Cannot convert the tensor at {where} to Arrow: {err}") from None
    if values.ndim == 1:
        return pa.array(values)
    return pa.FixedShapeTensorArray.from_numpy_ndarray(np.ascontiguousarray(values))


def column_array(column: Any, where: tuple[str, ...] | str) -> pa.Array:
    """The Arrow column of a column of :func:`tensordict.tabular._columns.columns`."""
    if isinstance(column, torch.Tensor):
        return tensor_array(column, where if isinstance(where, tuple) else (where,))
    try:
        return pa.array(column)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as err:
        raise TypeError(f"Cannot convert the column {where!r} to Arrow: {err}") from None
