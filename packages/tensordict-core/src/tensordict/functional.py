"""Upstream's ``tensordict.functional`` module path: the functions that build, pad, stack
and group TensorDicts.

A facade: everything here lives in core's own modules and is re-exported under the path
real code imports (``from tensordict.functional import pad_sequence``).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.functional import pad_sequence
    >>> tds = [TensorDict(a=torch.ones(n), batch_size=[n]) for n in (1, 2)]
    >>> pad_sequence(tds)["a"]
    tensor([[1., 0.],
            [1., 1.]])
"""

from torch.utils.data import default_collate

from tensordict._base import is_tensorclass
from tensordict._collate import collate
from tensordict._convert import make_tensordict
from tensordict._dense_stack import dense_stack_tds
from tensordict._group import group_by
from tensordict._merge import merge_tensordicts
from tensordict._nested_key import unravel_key
from tensordict._nontensor import is_non_tensor
from tensordict._stack import pad, pad_sequence
from tensordict._unpad import unpad_sequence

__all__ = [
    "collate",
    "default_collate",
    "dense_stack_tds",
    "group_by",
    "is_non_tensor",
    "is_tensorclass",
    "make_tensordict",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
    "unpad_sequence",
    "unravel_key",
]
