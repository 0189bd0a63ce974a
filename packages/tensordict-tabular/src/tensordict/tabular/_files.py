"""Parquet, CSV and JSON files: the ``from_*`` readers and ``to_*`` writers.

Files are read into an Arrow table and converted as :func:`~tensordict.tabular.from_arrow`
does, except that a missing value in an integer column gives a float64 column with NaN
(as pandas, and upstream's readers, give). Writes are atomic: the file is written under
a temporary name in its folder and renamed into place, so a failed write never destroys
a previous file.

Example:
    >>> import os, tempfile, torch
    >>> from tensordict import TensorDict
    >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
    >>> td = TensorDict(obs=torch.arange(3.0), done=torch.zeros(3, dtype=torch.bool),
    ...                 batch_size=[3])
    >>> to_parquet(td, path)
    >>> from_parquet(path)["obs"]
    tensor([0., 1., 2.])
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import torch

from tensordict import TensorDict, TensorDictBase
from tensordict.storage import atomic_write
from tensordict.tabular import _arrow, _columns

PathLike = str | Path
DeviceType = torch.device | str | int


def _existing(path: PathLike) -> str:
    source = os.fspath(path)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"No such file or directory: {source}")
    return source


def _from_table(table: pa.Table, op: str, *, auto_batch_size: bool, batch_dims: int | None,
                device: DeviceType | None, batch_size: torch.Size | None,
                separator: str | None, dtype: torch.dtype | None) -> TensorDict:
    cols, _ = _arrow.table_columns(table, nulls=_arrow.NULLS_AS_NAN)
    return _columns.build(cols, table.num_rows, auto_batch_size=auto_batch_size,
                          batch_dims=batch_dims, device=device, batch_size=batch_size,
                          separator=separator, dtype=dtype, op=op)


def _table(td: TensorDictBase, separator: str | None) -> pa.Table:
    cols = _columns.columns(td, separator)
    return pa.table({name: _arrow.column_array(column, name) for name, column in cols.items()})


def from_parquet(path: PathLike, *, auto_batch_size: bool = False,
                 batch_dims: int | None = None, device: DeviceType | None = None,
                 batch_size: torch.Size | None = None, separator: str | None = None,
                 dtype: torch.dtype | None = None, columns: list[str] | None = None,
                 **kwargs: Any) -> TensorDict:
    """Read a Parquet file into a TensorDict, one entry per column, batch ``[num_rows]``.

    String columns become NonTensorStacks (one value per row). ``columns`` selects the
    columns to read; ``**kwargs`` go to ``pyarrow.parquet.read_table``. The other options
    are :func:`~tensordict.tabular.from_pandas`'s.

    Example:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
        >>> TensorDict(a=torch.arange(2), b=torch.ones(2), batch_size=[2]).to_parquet(path)
        >>> sorted(from_parquet(path, columns=["a"]).keys())
        ['a']
    """
    import pyarrow.parquet as pq

    table = pq.read_table(_existing(path), columns=columns, **kwargs)
    return _from_table(table, "from_parquet", auto_batch_size=auto_batch_size,
                       batch_dims=batch_dims, device=device, batch_size=batch_size,
                       separator=separator, dtype=dtype)


def to_parquet(td: TensorDictBase, path: PathLike, *, separator: str | None = None,
               **kwargs: Any) -> None:
    """Write the tensordict to a Parquet file, one column per leaf (as
    :func:`~tensordict.tabular.to_pandas`); ``**kwargs`` go to
    ``pyarrow.parquet.write_table``.

    Example:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
        >>> td = TensorDict(a=torch.arange(2), b=TensorDict(c=torch.zeros(2), batch_size=[2]),
        ...                 batch_size=[2])
        >>> td.to_parquet(path, separator=".")
        >>> TensorDict.from_parquet(path, separator=".")["b", "c"]
        tensor([0., 0.])
    """
    import pyarrow.parquet as pq

    table = _table(td, separator)
    atomic_write(path, lambda tmp: pq.write_table(table, tmp, **kwargs))


def from_csv(path: PathLike, *, auto_batch_size: bool = False, batch_dims: int | None = None,
             device: DeviceType | None = None, batch_size: torch.Size | None = None,
             separator: str | None = None, dtype: torch.dtype | None = None,
             **kwargs: Any) -> TensorDict:
    """Read a CSV file (with a header row) into a TensorDict, one entry per column.

    Read with ``pyarrow.csv.read_csv`` (``**kwargs``: its ``read_options``,
    ``parse_options``, ``convert_options``); string columns become NonTensorStacks with
    one value per row, an empty field is ``None`` (NaN in a numeric column). The other
    options are :func:`~tensordict.tabular.from_pandas`'s.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
        >>> with open(path, "w") as file:
        ...     _ = file.write("obs.x,name\\n1.5,a\\n2.5,b\\n")
        >>> td = from_csv(path, separator=".")
        >>> td["obs", "x"], td[1]["name"]
        (tensor([1.5000, 2.5000], dtype=torch.float64), 'b')
    """
    import pyarrow.csv

    kwargs.setdefault("convert_options", pyarrow.csv.ConvertOptions(strings_can_be_null=True))
    table = pyarrow.csv.read_csv(_existing(path), **kwargs)
    return _from_table(table, "from_csv", auto_batch_size=auto_batch_size,
                       batch_dims=batch_dims, device=device, batch_size=batch_size,
                       separator=separator, dtype=dtype)


def to_csv(td: TensorDictBase, path: PathLike, *, separator: str | None = None,
           **kwargs: Any) -> None:
    """Write the tensordict to a CSV file with a header row, one column per leaf (as
    :func:`~tensordict.tabular.to_pandas`); ``**kwargs`` go to
    ``pyarrow.csv.write_csv`` (e.g. ``write_options``). Strings are quoted, and so are
    floats, written with a decimal point so that they read back as floats.

    Example:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> path = os.path.join(tempfile.mkdtemp(), "data.csv")
        >>> td = TensorDict(a=torch.arange(2), b=TensorDict(c=torch.zeros(2), batch_size=[2]),
        ...                 batch_size=[2])
        >>> td.to_csv(path, separator=".")
        >>> print(open(path).read())
        "a","b.c"
        0,"0.0"
        1,"0.0"
        <BLANKLINE>
    """
    import pyarrow.csv

    table = _table(td, separator)
    table = pa.table({name: _csv_float(column) if pa.types.is_floating(column.type) else column
                      for name, column in zip(table.column_names, table.columns, strict=True)})
    atomic_write(path, lambda tmp: pyarrow.csv.write_csv(table, tmp, **kwargs))


def _csv_float(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A float column as text that reads back as floats: ``1.0``, not Arrow's ``1``."""
    import pyarrow.compute as pc

    text = pc.cast(column, pa.string())
    return pc.replace_substring_regex(text, pattern=r"^(-?\d+)$", replacement=r"\1.0")


def from_json(path: PathLike, *, auto_batch_size: bool = False, batch_dims: int | None = None,
              device: DeviceType | None = None, batch_size: torch.Size | None = None,
              separator: str | None = None, dtype: torch.dtype | None = None,
              lines: bool = False, **kwargs: Any) -> TensorDict:
    """Read a JSON file of records (``[{"a": 1, "b": 2.0}, ...]``, or one record per line
    with ``lines=True``) into a TensorDict, one entry per field.

    Nested objects become nested TensorDicts, lists of numbers jagged tensors, strings
    NonTensorStacks. ``**kwargs`` go to :func:`json.load` (``pyarrow.json.read_json``
    with ``lines=True``). The other options are :func:`~tensordict.tabular.from_pandas`'s.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "data.json")
        >>> with open(path, "w") as file:
        ...     _ = file.write('[{"a": 1, "obs": {"x": 0.5}}, {"a": 2, "obs": {"x": 1.5}}]')
        >>> from_json(path)["obs", "x"]
        tensor([0.5000, 1.5000], dtype=torch.float64)
    """
    source = _existing(path)
    if lines:
        import pyarrow.json

        table = pyarrow.json.read_json(source, **kwargs)
    else:
        with open(source) as file:
            try:
                records = json.load(file, **kwargs)
            except json.JSONDecodeError as err:
                raise ValueError(f"{source} is not valid JSON: {err}") from None
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            raise ValueError(f"{source} does not hold an array of JSON records (objects); "
                             "to convert a single JSON object, json.load it and pass it to "
                             "TensorDict.from_dict.")
        table = pa.Table.from_pylist(records)
    return _from_table(table, "from_json", auto_batch_size=auto_batch_size,
                       batch_dims=batch_dims, device=device, batch_size=batch_size,
                       separator=separator, dtype=dtype)


def to_json(td: TensorDictBase, path: PathLike, *, separator: str | None = None,
            lines: bool = False, **kwargs: Any) -> None:
    """Write the tensordict to a JSON file as an array of records (one per element, one
    field per leaf, as :func:`~tensordict.tabular.to_pandas`), or one record per line with
    ``lines=True``; ``**kwargs`` go to :func:`json.dumps`.

    Example:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> path = os.path.join(tempfile.mkdtemp(), "data.json")
        >>> td = TensorDict(a=torch.arange(2), b=TensorDict(c=torch.zeros(2), batch_size=[2]),
        ...                 batch_size=[2])
        >>> td.to_json(path, separator=".")
        >>> print(open(path).read())
        [{"a":0,"b.c":0.0},{"a":1,"b.c":0.0}]
    """
    cols = _columns.columns(td, separator)
    values = [column.tolist() if isinstance(column, torch.Tensor) else column
              for column in cols.values()]
    records = [dict(zip(cols, row, strict=True)) for row in zip(*values, strict=True)]
    kwargs.setdefault("separators", (",", ":"))
    if lines:
        text = "".join(json.dumps(record, **kwargs) + "\n" for record in records)
    else:
        text = json.dumps(records, **kwargs)

    def write(tmp: str) -> None:
        with open(tmp, "w") as file:
            file.write(text)

    atomic_write(path, write)
