"""What the plugin adds: the number of elements of every tensor leaf."""

from __future__ import annotations

from typing import Any

import torch


def total_numel(td: Any) -> int:
    """The number of elements of all tensor leaves of ``td``, nested ones included.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> total_numel(TensorDict(a=torch.zeros(2, 3), b=TensorDict(c=torch.zeros(2)), batch_size=[2]))
    8
    """
    return sum(
        value.numel()
        for value in td.values(include_nested=True, leaves_only=True)
        if isinstance(value, torch.Tensor)
    )
