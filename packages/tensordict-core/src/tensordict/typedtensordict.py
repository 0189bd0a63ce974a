"""Upstream's ``tensordict.typedtensordict`` module path: :class:`TypedTensorDict`, a
TensorDict whose entries are declared as annotated fields.

A facade: the class lives in core's own module and is re-exported under the path real
code imports (``from tensordict.typedtensordict import TypedTensorDict``).

Example:
    >>> import torch
    >>> from tensordict.typedtensordict import TypedTensorDict
    >>> class Step(TypedTensorDict):
    ...     obs: torch.Tensor
    >>> Step(obs=torch.zeros(2, 3), batch_size=[2]).obs.shape
    torch.Size([2, 3])
"""

from tensordict._typed import TypedTensorDict

__all__ = ["TypedTensorDict"]
