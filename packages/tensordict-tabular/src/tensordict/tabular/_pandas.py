"""pandas DataFrames and tensordicts: :func:`from_pandas` and :func:`to_pandas`.

pandas is an optional dependency (``tensordict-tabular[pandas]``), imported on first use.

Example:
    >>> import pandas as pd
    >>> td = from_pandas(pd.DataFrame({"a": [1, 2, 3], "name": ["x", "y", "z"]}))
    >>> td["a"], td[1]["name"]
    (tensor([1, 2, 3]), 'y')
    >>> list(to_pandas(td).columns)
    ['a', 'name']
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tensordict import TensorDict, TensorDictBase
from tensordict.tabular import _columns


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as err:
        raise ModuleNotFoundError(
            "this conversion needs pandas: install it, or tensordict-tabular[pandas]",
            name="pandas") from err
    return pandas


def from_pandas(dataframe: Any, *, auto_batch_size: bool = False,
                batch_dims: int | None = None, device: torch.device | str | int | None = None,
                batch_size: torch.Size | None = None, separator: str | None = None,
                dtype: torch.dtype | None = None) -> TensorDict:
    """Convert a pandas DataFrame to a TensorDict, one entry per column, batch size
    ``[num_rows]``.

    Numeric and boolean columns become tensors (a nullable integer column with missing
    values becomes float64 with NaN), a categorical column the tensor of its codes, a
    datetime column an ``int64`` tensor of nanoseconds, and any other column (strings,
    objects) a NonTensorStack with one value per row (upstream stores one NonTensorData
    for the whole column). Column names are converted to ``str``.

    Args:
        dataframe: the DataFrame.
        auto_batch_size: set the batch size to the largest leading shape the entries
            share (exclusive with ``batch_size``).
        batch_dims: with ``auto_batch_size``, the most batch dimensions.
        device: the device of the result.
        batch_size: the batch size of the result (default ``[num_rows]``).
        separator: split the column names on it into nested keys (``"obs.x"`` becomes
            ``("obs", "x")`` with ``separator="."``).
        dtype: cast the numeric and boolean columns to it.

    Example:
        >>> import pandas as pd
        >>> from_pandas(pd.DataFrame({"obs.x": [1.0, 2.0]}), separator=".")["obs", "x"]
        tensor([1., 2.], dtype=torch.float64)
    """
    pandas = _pandas()
    if not isinstance(dataframe, pandas.DataFrame):
        raise TypeError(f"from_pandas expects a pandas DataFrame, got "
                        f"{type(dataframe).__name__}")
    cols = {str(name): _series_column(series, pandas) for name, series in dataframe.items()}
    return _columns.build(cols, len(dataframe), auto_batch_size=auto_batch_size,
                          batch_dims=batch_dims, device=device, batch_size=batch_size,
                          separator=separator, dtype=dtype, op="from_pandas")


def _series_column(series: Any, pandas: Any) -> Any:
    kind = series.dtype
    if isinstance(kind, pandas.CategoricalDtype):
        return torch.from_numpy(series.cat.codes.to_numpy().copy())
    if pandas.api.types.is_datetime64_any_dtype(kind):
        return torch.from_numpy(series.to_numpy(dtype="datetime64[ns]").view(np.int64).copy())
    if pandas.api.types.is_bool_dtype(kind) or pandas.api.types.is_numeric_dtype(kind):
        if not isinstance(kind, np.dtype):  # a nullable extension dtype
            if series.isna().any():
                return torch.from_numpy(series.to_numpy(dtype=np.float64, na_value=np.nan))
            kind = kind.numpy_dtype
        return torch.from_numpy(series.to_numpy(dtype=kind, copy=True))
    return series.tolist()


def to_pandas(td: TensorDictBase, *, separator: str | None = None) -> Any:
    """Convert the tensordict to a pandas DataFrame, one column per leaf.

    Each leaf holds one value per row: a tensor of shape ``[num_rows]``, or non-tensor
    data. A nested tensordict needs a ``separator`` (its keys are joined with it); a
    nested tensorclass without one becomes a column of per-row tensorclasses.

    Raises:
        ValueError: a nested tensordict without ``separator``, a tensor with more than
            one dimension per row, or more than one batch dimension.

    Example:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(a=torch.arange(2), b=TensorDict(c=torch.zeros(2), batch_size=[2]),
        ...                 batch_size=[2])
        >>> print(to_pandas(td, separator="."))
           a  b.c
        0  0  0.0
        1  1  0.0
    """
    pandas = _pandas()
    cols = _columns.columns(td, separator)
    return pandas.DataFrame({name: column.cpu().numpy() if isinstance(column, torch.Tensor)
                             else column for name, column in cols.items()},
                            index=pandas.RangeIndex(_columns.num_rows(td, "to_pandas")))
