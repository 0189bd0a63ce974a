"""A module no test imports: a store recording a class of it must not import it."""

import torch

from tensordict import tensorclass


@tensorclass
class Hidden:
    obs: torch.Tensor
