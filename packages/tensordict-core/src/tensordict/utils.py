"""Upstream's ``tensordict.utils`` module path: helpers, switches and key utilities.

A facade: everything here lives in core's own modules and is re-exported under the
path real code imports (``from tensordict.utils import NestedKey, expand_right``).

Example:
    >>> import torch
    >>> from tensordict.utils import expand_as_right, unravel_key
    >>> expand_as_right(torch.ones(2), torch.zeros(2, 3)).shape
    torch.Size([2, 3])
    >>> unravel_key(("a", ("b",)))
    ('a', 'b')
"""

from torch.nn import Buffer

from tensordict._base import T, is_tensor_collection, is_tensorclass
from tensordict._collection import acts_as_tensordict
from tensordict._collection import is_non_tensor_class as _is_non_tensor
from tensordict._collection import is_tensorclass as _is_tensorclass
from tensordict._compare import assert_allclose_td, assert_close
from tensordict._dedup import isin, remove_duplicates
from tensordict._deprecation import deprecated_attributes, deprecation_message, warn_deprecated
from tensordict._device import is_bool, is_floating, is_inexact, is_integer
from tensordict._dirtree import print_directory_tree
from tensordict._futures import TensorDictFuture
from tensordict._helpers import (
    LOGGING_LEVEL,
    _maybe_correct_neg_dim,
    _shape,
    _zip_strict,
    console_handler,
    expand_as_right,
    expand_right,
    formatter,
    is_seq_of_nested_key,
    logger,
)
from tensordict._nested_key import NestedKey, unravel_key, unravel_key_list, unravel_key_to_tuple
from tensordict._nested_key import unravel_key_to_tuple as _unravel_key_to_tuple
from tensordict._nontensor import LinkedList, is_non_tensor
from tensordict._options import (
    capture_non_tensor_stack,
    get_printoptions,
    lazy_legacy,
    list_to_stack,
    set_capture_non_tensor_stack,
    set_lazy_legacy,
    set_list_to_stack,
    set_printoptions,
)
from tensordict._parse import parse_tensor_dict_string
from tensordict._restructure import KEY_SEPARATOR
from tensordict._shapes import indexed_batch_size as _getitem_batch_size
from tensordict._timing import timeit

__all__ = [
    "Buffer", "KEY_SEPARATOR", "LOGGING_LEVEL", "LinkedList", "NestedKey", "T",
    "TensorDictFuture", "acts_as_tensordict", "assert_allclose_td", "assert_close",
    "capture_non_tensor_stack",
    "console_handler", "deprecated_attributes", "deprecation_message", "expand_as_right",
    "expand_right", "formatter", "get_printoptions", "is_bool", "is_floating", "is_inexact",
    "is_integer", "is_non_tensor", "is_seq_of_nested_key", "is_tensor_collection",
    "is_tensorclass", "isin", "lazy_legacy", "list_to_stack", "logger",
    "parse_tensor_dict_string", "print_directory_tree", "remove_duplicates",
    "set_capture_non_tensor_stack", "set_lazy_legacy", "set_list_to_stack",
    "set_printoptions", "timeit", "unravel_key", "unravel_key_list", "unravel_key_to_tuple",
    "warn_deprecated",
    "_getitem_batch_size", "_is_non_tensor", "_is_tensorclass", "_maybe_correct_neg_dim",
    "_shape", "_unravel_key_to_tuple", "_zip_strict",
]
