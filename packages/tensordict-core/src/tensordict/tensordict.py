"""Upstream's older ``tensordict.tensordict`` module path, kept by real code.

>>> from tensordict.tensordict import TensorDict, TensorDictBase
>>> issubclass(TensorDict, TensorDictBase)
True
"""

from tensordict._base import NO_DEFAULT, TensorDictBase, is_tensor_collection, is_tensorclass
from tensordict._compare import assert_allclose_td
from tensordict._convert import make_tensordict
from tensordict._dense_stack import dense_stack_tds
from tensordict._helpers import expand_as_right, expand_right
from tensordict._lazy import LazyStackedTensorDict
from tensordict._merge import merge_tensordicts
from tensordict._nested_key import NestedKey
from tensordict._stack import pad, pad_sequence
from tensordict._td import TensorDict
from tensordict._upstream_paths import resolve_on_access

# a plugin's name, looked up on access
resolve_on_access(__name__, ["MemoryMappedTensor"])

__all__ = [
    "LazyStackedTensorDict", "NO_DEFAULT", "NestedKey", "TensorDict", "TensorDictBase",
    "assert_allclose_td", "dense_stack_tds", "expand_as_right", "expand_right",
    "is_tensor_collection", "is_tensorclass", "make_tensordict", "merge_tensordicts", "pad",
    "pad_sequence",
]
