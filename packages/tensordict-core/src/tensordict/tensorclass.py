"""Upstream's ``tensordict.tensorclass`` module path: tensorclasses and non-tensor data.

A facade: the non-tensor classes are core's, the tensorclass names (``tensorclass``,
``TensorClass``, ``TensorAttrs``, ``from_dataclass``) the tensordict-tensorclass plugin's,
looked up when this module is imported; without the plugin the import raises an
ImportError that names the package to install. The *attribute* ``tensordict.tensorclass``
stays the decorator: importing this module does not rebind it (see
:mod:`tensordict._upstream_paths`).

Example:
    >>> import torch
    >>> import tensordict
    >>> from tensordict.tensorclass import NonTensorData, TensorClass, from_dataclass
    >>> callable(tensordict.tensorclass), NonTensorData("a").data
    (True, 'a')
    >>> class Pair(TensorClass):
    ...     a: torch.Tensor
    >>> Pair(a=torch.zeros(2), batch_size=[2]).batch_size
    torch.Size([2])
"""

# Names beyond ``__all__`` are re-exported explicitly (``X as X``): upstream code imports
# these helpers from this module path too.
from dataclasses import is_dataclass as is_dataclass

from torch.utils.data._utils.collate import default_collate_fn_map as default_collate_fn_map

from tensordict import LazyStackedTensorDict as LazyStackedTensorDict
from tensordict import LinkedList as LinkedList
from tensordict import MetaData, NonTensorData, NonTensorDataBase, NonTensorStack, is_non_tensor
from tensordict import NestedKey as NestedKey
from tensordict import TensorCollection as TensorCollection
from tensordict import TensorDict as TensorDict
from tensordict import TensorDictBase as TensorDictBase
from tensordict import capture_non_tensor_stack as capture_non_tensor_stack
from tensordict import is_tensor_collection as is_tensor_collection
from tensordict import is_tensorclass as is_tensorclass
from tensordict import list_to_stack as list_to_stack
from tensordict.base import NO_DEFAULT as NO_DEFAULT
from tensordict.base import CompatibleType as CompatibleType
from tensordict.extending import TORCH_FUNCTIONS as TD_HANDLED_FUNCTIONS  # noqa: F401
from tensordict.plugins import top_level_name
from tensordict.utils import expand_as_right as expand_as_right
from tensordict.utils import warn_deprecated as warn_deprecated

# the plugin's names: a MissingPluginError (an ImportError) when it is not installed
tensorclass = top_level_name("tensorclass")
TensorClass = top_level_name("TensorClass")
TensorAttrs = top_level_name("TensorAttrs")
from_dataclass = top_level_name("from_dataclass")

__all__ = [
    "MetaData", "NonTensorData", "NonTensorDataBase", "NonTensorStack", "TensorAttrs",
    "TensorClass", "from_dataclass", "is_non_tensor", "tensorclass",
]
