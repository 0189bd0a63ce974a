"""Upstream's ``tensordict.base`` module path: ``TensorDictBase`` and its companions.

A facade: every name lives in core's own modules. Top-level constructors (``from_dict``,
``from_h5``...) are the package's, looked up on access (see
:mod:`tensordict._upstream_paths`), so one contributed by a plugin is found here too and
a missing one names the package to install.

Example:
    >>> from tensordict.base import NO_DEFAULT, TensorDictBase, is_tensor_collection
    >>> from tensordict import TensorDict
    >>> isinstance(TensorDict(), TensorDictBase), bool(NO_DEFAULT)
    (True, False)
"""

from tensordict._base import ACCEPTED_CLASSES as _ACCEPTED_CLASSES
from tensordict._base import (
    NO_DEFAULT,
    CompatibleType,
    T,
    TensorCollection,
    TensorDictBase,
    is_tensor_collection,
    is_tensorclass,
)
from tensordict._deprecation import (
    deprecated,
    deprecation_message,
    warn_deprecated,
    warn_deprecated_env_var,
)
from tensordict._helpers import expand_as_right
from tensordict._keys import _NESTED_TENSORS_AS_LISTS
from tensordict._keys import default_is_leaf as _default_is_leaf
from tensordict._keys import is_leaf_nontensor as _is_leaf_nontensor
from tensordict._last_op import LAST_OP_MAPS
from tensordict._nested_key import NestedKey, unravel_key, unravel_key_list
from tensordict._nontensor import is_non_tensor
from tensordict._options import (
    BEST_ATTEMPT_INPLACE,
    capture_non_tensor_stack,
    get_defaults_to_none,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_get_defaults_to_none,
)
from tensordict._restructure import KEY_SEPARATOR
from tensordict._shapes import convert_ellipsis_to_idx
from tensordict._upstream_paths import resolve_on_access
from tensordict.errors import InplaceWriteError as _InplaceWriteError

#: the package's names, provided here too (from core or a plugin)
_FROM_PACKAGE = (
    "from_any", "from_csv", "from_dict", "from_h5", "from_json", "from_namedtuple",
    "from_pandas", "from_parquet", "from_struct_array", "from_tuple", "from_zarr",
    "MemoryMappedTensor",
)
resolve_on_access(__name__, _FROM_PACKAGE)

__all__ = [
    "BEST_ATTEMPT_INPLACE", "LAST_OP_MAPS", "deprecated", "deprecation_message", "expand_as_right",
    "warn_deprecated", "warn_deprecated_env_var", "CompatibleType", "KEY_SEPARATOR",
    "NO_DEFAULT", "NestedKey", "T", "TensorCollection",
    "TensorDictBase", "capture_non_tensor_stack", "convert_ellipsis_to_idx",
    "get_defaults_to_none", "is_non_tensor", "is_tensor_collection", "is_tensorclass",
    "list_to_stack", "set_capture_non_tensor_stack", "set_get_defaults_to_none",
    "unravel_key", "unravel_key_list", "_NESTED_TENSORS_AS_LISTS", "_default_is_leaf",
    "_is_leaf_nontensor", "_ACCEPTED_CLASSES", "_InplaceWriteError",
]
