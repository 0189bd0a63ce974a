"""Upstream's ``tensordict.base`` module path: ``TensorDictBase`` and its companions.

A facade over core's modules. Top-level constructors (``from_dict``, ``from_h5``...)
resolve through the package, so one contributed by a plugin is found here too, and a
missing one names the package to install.

Example:
    >>> from tensordict.base import NO_DEFAULT, TensorDictBase, is_tensor_collection
    >>> from tensordict import TensorDict
    >>> isinstance(TensorDict(), TensorDictBase), bool(NO_DEFAULT)
    (True, False)
"""

from __future__ import annotations

import sys
import types
from typing import Any, TypeVar

import torch

from tensordict._base import (
    NO_DEFAULT,
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
    capture_non_tensor_stack,
    get_defaults_to_none,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_get_defaults_to_none,
)
from tensordict._restructure import KEY_SEPARATOR
from tensordict._shapes import normalize_index
from tensordict.errors import InplaceWriteError as _InplaceWriteError

T = TypeVar("T", bound=TensorDictBase)

#: What can be written into a TensorDict as a value.
CompatibleType = torch.Tensor | TensorCollection

#: Classes whose instances are stored as they are (tensors and tensor collections).
_ACCEPTED_CLASSES = (torch.Tensor, TensorCollection)

_FROM_PACKAGE = (
    "from_any", "from_csv", "from_dict", "from_h5", "from_json", "from_namedtuple",
    "from_pandas", "from_parquet", "from_struct_array", "from_tuple", "from_zarr",
    "MemoryMappedTensor",
)


class _BestAttemptInplace:
    """The type of :data:`BEST_ATTEMPT_INPLACE`: a marker with no truth value."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise NotImplementedError("BEST_ATTEMPT_INPLACE has no truth value: compare it "
                                  "with `is`")


#: ``inplace=`` marker: write in place where an entry exists, else add it.
BEST_ATTEMPT_INPLACE = _BestAttemptInplace()


def convert_ellipsis_to_idx(idx: Any, batch_size: Any) -> tuple[Any, ...]:
    """``idx`` with its ``...`` replaced by the full slices it stands for.

    >>> convert_ellipsis_to_idx((0, ...), torch.Size([2, 3, 4]))
    (0, slice(None, None, None), slice(None, None, None))
    """
    return normalize_index(idx, torch.Size(batch_size))


class _BaseModule(types.ModuleType):
    """``tensordict.base``, whose package-level names resolve on access. Properties of the
    module's class, not a module ``__getattr__``: ``from tensordict.base import x`` run in
    a loop then asks for ``__path__`` without calling Python code."""


def _from_package(name: str) -> property:
    return property(lambda module: getattr(sys.modules["tensordict"], name),
                    doc=f"``tensordict.{name}``")


for _name in _FROM_PACKAGE:
    setattr(_BaseModule, _name, _from_package(_name))
sys.modules[__name__].__class__ = _BaseModule


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
