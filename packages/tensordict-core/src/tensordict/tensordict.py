"""Upstream's older ``tensordict.tensordict`` module path, kept by real code.

>>> from tensordict.tensordict import TensorDict, TensorDictBase
>>> issubclass(TensorDict, TensorDictBase)
True
"""

from typing import Any

from tensordict._base import NO_DEFAULT, TensorDictBase, is_tensor_collection, is_tensorclass
from tensordict._compare import assert_allclose_td
from tensordict._convert import make_tensordict
from tensordict._helpers import expand_as_right, expand_right
from tensordict._lazy import LazyStackedTensorDict
from tensordict._nested_key import NestedKey
from tensordict._stack import pad, pad_sequence
from tensordict._td import TensorDict

_FROM_PACKAGE = ("MemoryMappedTensor", "dense_stack_tds", "merge_tensordicts")


def __getattr__(name: str) -> Any:
    if name in _FROM_PACKAGE:
        import tensordict

        return getattr(tensordict, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "LazyStackedTensorDict", "NO_DEFAULT", "NestedKey", "TensorDict", "TensorDictBase",
    "assert_allclose_td", "expand_as_right", "expand_right", "is_tensor_collection",
    "is_tensorclass", "make_tensordict", "pad", "pad_sequence",
]
