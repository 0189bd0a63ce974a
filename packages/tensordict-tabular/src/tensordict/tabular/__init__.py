"""tensordict.tabular: TensorDicts from and to tables (Arrow, Parquet, CSV, JSON, pandas),
and MosaicML Streaming (MDS) datasets (``td.to_mds``, which needs no extra dependency).

Provided by the tensordict-tabular distribution (pandas: the ``[pandas]`` extra). One row
per element of the batch, nested keys as columns joined with a ``separator``, string
columns as NonTensorStacks. It adds ``tensordict.from_arrow``/``to_arrow``/
``from_parquet``/``from_csv``/``from_json``/``from_pandas``, the class methods
``TensorDict.from_parquet``/``from_csv``/``from_json``/``from_pandas`` and the methods
``td.to_parquet``/``to_csv``/``to_json``/``to_pandas``/``to_arrow``/``to_mds``. Writes are
atomic (``to_mds`` checks every sample before the first write).

Example:
    >>> import os, tempfile, torch
    >>> import tensordict
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"obs": {"x": torch.arange(3.0)}, "label": ["a", "b", "c"]}, [3])
    >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
    >>> td.to_parquet(path, separator=".")
    >>> back = tensordict.from_parquet(path, separator=".")
    >>> back["obs", "x"], back[2]["label"]
    (tensor([0., 1., 2.]), 'c')
"""

from tensordict.tabular._arrow import from_arrow, to_arrow
from tensordict.tabular._files import from_csv, from_json, from_parquet, to_csv, to_json, to_parquet
from tensordict.tabular._mds import to_mds
from tensordict.tabular._pandas import from_pandas, to_pandas
from tensordict.tabular._version import __version__ as __version__

__all__ = ["from_arrow", "from_csv", "from_json", "from_pandas", "from_parquet", "to_arrow",
           "to_csv", "to_json", "to_mds", "to_pandas", "to_parquet"]
