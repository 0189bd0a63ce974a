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

import importlib
from typing import TYPE_CHECKING, Any

from tensordict import _nontensor_methods, _pytree, _vmap
from tensordict import plugins as _plugins
from tensordict._base import (
    TensorCollection,
    TensorDictBase,
    is_tensor_collection,
    is_tensorclass,
)
from tensordict._collate import collate, register_default_collate
from tensordict._compare import assert_allclose_td, assert_close
from tensordict._consolidate import from_consolidated
from tensordict._convert import (
    from_any,
    from_dict,
    from_namedtuple,
    from_pytree,
    from_struct_array,
    from_tuple,
    make_tensordict,
)
from tensordict._dense_stack import dense_stack_tds
from tensordict._device import is_bool, is_floating, is_inexact, is_integer
from tensordict._functional import from_module, from_modules
from tensordict._group import group_by
from tensordict._keys import default_is_leaf, is_leaf_nontensor
from tensordict._lazy import LazyStackedTensorDict, lazy_stack
from tensordict._merge import merge_tensordicts
from tensordict._nested_key import NestedKey, unravel_key, unravel_key_list, unravel_key_to_tuple
from tensordict._nontensor import (
    LinkedList,
    MetaData,
    NonTensorData,
    NonTensorDataBase,
    is_non_tensor,
)
from tensordict._nontensor_stack import NonTensorStack
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
from tensordict._parse import parse_tensor_dict_string
from tensordict._restructure import KEY_SEPARATOR
from tensordict._stack import cat, maybe_dense_stack, pad, pad_sequence, stack
from tensordict._td import TensorDict
from tensordict._typed import TypedTensorDict
from tensordict._unbatched import UnbatchedTensor
from tensordict._unpad import unpad_sequence
from tensordict._upstream_paths import resolve_on_access
from tensordict._version import __version__
from tensordict.plugins import hookimpl

fromkeys = TensorDict.fromkeys

_pytree.register_nodes()  # torch.func and pytree tools see the tensors of TensorDicts
_vmap.wrap_functorch_steps()  # vmap takes a plain TensorDict as one unit
_nontensor_methods.install()  # NonTensorData gets the TensorDict methods it lacks
register_default_collate()  # a DataLoader without collate_fn stacks TensorDicts
_plugins.install_subpackage_finder()
_plugins.host_methods(TensorCollection)  # plugin methods resolve as TensorCollection's own

__all__ = [
    "stack",
    "pad_sequence",
    "pad",
    "maybe_dense_stack",
    "dense_stack_tds",
    "merge_tensordicts",
    "parse_tensor_dict_string",
    "is_integer",
    "is_inexact",
    "is_floating",
    "is_bool",
    "cat",
    "collate",
    "group_by",
    "unpad_sequence",
    "assert_close",
    "assert_allclose_td",
    "KEY_SEPARATOR",
    "LazyStackedTensorDict",
    "LinkedList",
    "MetaData",
    "NestedKey",
    "NonTensorData",
    "NonTensorDataBase",
    "NonTensorStack",
    "TensorCollection",
    "TensorDict",
    "TensorDictBase",
    "TypedTensorDict",
    "UnbatchedTensor",
    "__version__",
    "capture_non_tensor_stack",
    "default_is_leaf",
    "from_any",
    "from_consolidated",
    "from_dict",
    "from_namedtuple",
    "from_pytree",
    "from_struct_array",
    "from_tuple",
    "from_module",
    "from_modules",
    "fromkeys",
    "get_defaults_to_none",
    "get_printoptions",
    "hookimpl",
    "is_leaf_nontensor",
    "is_non_tensor",
    "is_tensor_collection",
    "is_tensorclass",
    "lazy_legacy",
    "lazy_stack",
    "make_tensordict",
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


if TYPE_CHECKING:  # names plugins add at run time, visible to type checkers and IDEs
    from tensordict._tensorclass_types import TensorClass as TensorClass
    from tensordict._tensorclass_types import tensorclass as tensorclass


#: the modules that ``import tensordict`` alone makes reachable as attributes, as
#: upstream's are (``tensordict.utils.expand_right``), imported on first use: core's
#: facades, and those of plugins (when installed) that upstream imports with tensordict
_SUBMODULES = frozenset({"functional", "tensordict", "typedtensordict", "utils",
                         *_plugins.ATTRIBUTE_MODULES})


def __getattr__(name: str) -> Any:
    """The modules of ``_SUBMODULES``, and names contributed by plugins
    (``tensordict.MemoryMappedTensor``...)."""
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _SUBMODULES:
        try:
            return importlib.import_module(f"tensordict.{name}")
        except ImportError as err:  # a plugin's module, not installed: say which
            raise AttributeError(str(err)) from err
    return _plugins.top_level_name(name)


# A name of ``plugins.NAMED_LIKE_MODULES`` is a plugin's top-level name as an attribute
# (the decorator ``tensordict.tensorclass``) and a module path: importing the module does
# not rebind the attribute.
resolve_on_access(__name__, _plugins.NAMED_LIKE_MODULES, _plugins.top_level_name)
