"""Tensorclasses defined at module level, so pickling and DataLoader workers can import
them by name (the test modules add this folder to ``sys.path``)."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils.data import Dataset

from tensordict import TensorClass, TensorDict, tensorclass


class Inner(TensorClass):
    x: torch.Tensor
    label: str = "inner"


class Outer(TensorClass):
    inner: Inner
    y: torch.Tensor
    td: TensorDict = None
    extra: Any = None


class FrozenPoint(TensorClass["frozen"]):
    xy: torch.Tensor
    name: str = "p"


@tensorclass
class Decorated:
    image: torch.Tensor
    label: torch.Tensor

    def double(self) -> torch.Tensor:
        return self.image * 2


@tensorclass(frozen=True)
class FrozenDecorated:
    image: torch.Tensor


class Samples(Dataset):
    """A dataset whose items are tensorclass instances (for DataLoader workers)."""

    def __init__(self, n: int) -> None:
        self.data = Outer(
            inner=Inner(x=torch.arange(n, dtype=torch.float32), batch_size=[n]),
            y=torch.arange(2 * n, dtype=torch.float32).reshape(n, 2),
            batch_size=[n],
        )

    def __len__(self) -> int:
        return self.data.batch_size[0]

    def __getitem__(self, index: int) -> Outer:
        return self.data[index]
