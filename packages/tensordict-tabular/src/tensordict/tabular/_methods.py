"""What tensordict-tabular adds to every tensor collection: the ``from_*`` class methods
and the ``to_*`` methods.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.arange(2), batch_size=[2])
    >>> td.to_arrow().num_rows, TensorDict.from_pandas(td.to_pandas())["a"]
    (2, tensor([0, 1]))
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from tensordict import is_tensorclass
from tensordict.tabular import _arrow, _files, _mds, _pandas


def _constructor(func: Callable[..., Any]) -> classmethod:
    """``func`` as a class method (``TensorDict.from_csv(path)``); on a tensorclass it
    returns that class (``MyClass.from_csv(path)`` is a ``MyClass``), as upstream."""

    def method(cls: type, *args: Any, **kwargs: Any) -> Any:
        td = func(*args, **kwargs)
        return cls.from_tensordict(td) if is_tensorclass(cls) else td

    functools.update_wrapper(method, func, updated=())
    del method.__wrapped__  # type: ignore[attr-defined]
    signature = inspect.signature(func)
    cls_param = inspect.Parameter("cls", inspect.Parameter.POSITIONAL_ONLY)
    method.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[cls_param, *signature.parameters.values()])
    return classmethod(method)


METHODS: dict[str, Any] = {
    "from_parquet": _constructor(_files.from_parquet),
    "from_csv": _constructor(_files.from_csv),
    "from_json": _constructor(_files.from_json),
    "from_pandas": _constructor(_pandas.from_pandas),
    "to_parquet": _files.to_parquet,
    "to_csv": _files.to_csv,
    "to_json": _files.to_json,
    "to_pandas": _pandas.to_pandas,
    "to_arrow": _arrow.to_arrow,
    "to_mds": _mds.to_mds,
}
