"""The collections the bad-input tests act on (and the good-input ones write into)."""

from __future__ import annotations

import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack


def dense() -> TensorDict:
    """Batch [3]: float, int and bool leaves, two nested levels, non-tensor data."""
    return TensorDict(
        a=torch.arange(3.0), b=torch.arange(6).view(3, 2),
        n={"c": torch.arange(12.0).view(3, 4), "m": {"d": torch.tensor([[True], [False],
                                                                          [True]])}},
        s="text", batch_size=[3],
    )


def named() -> TensorDict:
    """Batch [3, 4] named ("x", "y"); its sub-TensorDict has a longer batch [3, 4, 5]."""
    return TensorDict(
        a=torch.arange(12.0).view(3, 4),
        n=TensorDict(c=torch.arange(60.0).view(3, 4, 5), batch_size=[3, 4, 5]),
        batch_size=[3, 4], names=["x", "y"],
    )


def scalar() -> TensorDict:
    """Batch []: a 0-dim leaf and a nested vector."""
    return TensorDict(a=torch.tensor(1.5), n={"c": torch.arange(2.0)})


def locked() -> TensorDict:
    return dense().lock_()


def lazy() -> LazyStackedTensorDict:
    """Two parts of batch [3] stacked along dim 0 (batch [2, 3])."""
    second = dense().apply(lambda x: x + 1 if x.dtype is not torch.bool else ~x)
    return lazy_stack([dense(), second])


def lazy1() -> LazyStackedTensorDict:
    """Three parts of batch [2] stacked along dim 1 (batch [2, 3])."""
    return lazy_stack([TensorDict(a=torch.full((2,), float(i)),
                                  n={"c": torch.full((2, 2), float(i))}, batch_size=[2])
                       for i in range(3)], 1)
