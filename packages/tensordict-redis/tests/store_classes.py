"""A tensorclass the tests write to a store (imported by them, so recorded paths resolve)."""

import torch

from tensordict import tensorclass


@tensorclass
class Episode:
    obs: torch.Tensor
    label: str = None
