"""tensordict: a dictionary of tensors that behaves like one tensor.

>>> import torch
>>> from tensordict import TensorDict
>>> td = TensorDict({"obs": torch.zeros(4, 3), "reward": torch.ones(4)}, batch_size=[4])
>>> td[1:3]
TensorDict(batch_size=[2], fields={obs: f32[3], reward: f32[]})
"""

# Must stay first: lets tensordict-nn, -memmap, ... contribute tensordict.<sub> from
# other distributions and from editable (src/) checkouts.
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

from typing import Any

from tensordict import plugins as _plugins
from tensordict._base import TensorCollection, TensorDictBase, is_tensor_collection
from tensordict._dict_api import KEY_SEPARATOR
from tensordict._keys import default_is_leaf, is_leaf_nontensor
from tensordict._nested_key import NestedKey, unravel_key, unravel_key_list, unravel_key_to_tuple
from tensordict._nontensor import LinkedList, NonTensorData, NonTensorStack, is_non_tensor
from tensordict._options import (
    capture_non_tensor_stack,
    get_defaults_to_none,
    get_printoptions,
    lazy_legacy,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_get_defaults_to_none,
    set_lazy_legacy,
    set_list_to_stack,
    set_printoptions,
)
from tensordict._td import TensorDict
from tensordict._version import __version__
from tensordict.plugins import hookimpl

from_dict = TensorDict.from_dict if hasattr(TensorDict, "from_dict") else None
fromkeys = TensorDict.fromkeys

_plugins.install_subpackage_finder()

__all__ = [
    "KEY_SEPARATOR",
    "LinkedList",
    "NestedKey",
    "NonTensorData",
    "NonTensorStack",
    "TensorCollection",
    "TensorDict",
    "TensorDictBase",
    "__version__",
    "capture_non_tensor_stack",
    "default_is_leaf",
    "fromkeys",
    "get_defaults_to_none",
    "get_printoptions",
    "hookimpl",
    "is_leaf_nontensor",
    "is_non_tensor",
    "is_tensor_collection",
    "lazy_legacy",
    "list_to_stack",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
]


def __getattr__(name: str) -> Any:
    """Names contributed by plugins (``tensordict.MemoryMappedTensor``...)."""
    if name.startswith("__"):
        raise AttributeError(name)
    return _plugins.top_level_name(name)
