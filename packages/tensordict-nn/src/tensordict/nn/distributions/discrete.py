"""Discrete distributions producing one-hot samples.

>>> import torch
>>> d = OneHotCategorical(logits=torch.tensor([[0.0, 1.0, 2.0]]))
>>> d.mode
tensor([[0, 0, 1]])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import distributions as D
from torch.nn import functional as F

__all__ = ["OneHotCategorical", "rand_one_hot"]


def rand_one_hot(values: torch.Tensor, do_softmax: bool = True) -> torch.Tensor:
    """A random one-hot tensor (int64) drawn along the last dim of ``values`` (logits when
    ``do_softmax``, else probabilities).

    >>> import torch
    >>> rand_one_hot(torch.tensor([[0.0, 100.0]]))
    tensor([[0, 1]])
    """
    probs = values.softmax(-1) if do_softmax else values
    index = torch.multinomial(probs.reshape(-1, probs.shape[-1]), 1)
    return F.one_hot(index.reshape(probs.shape[:-1]), probs.shape[-1])


class OneHotCategorical(D.Categorical):
    """A categorical distribution whose samples, mode and ``log_prob`` inputs are one-hot
    vectors (int64).

    >>> import torch
    >>> d = OneHotCategorical(logits=torch.zeros(2, 3))
    >>> d.sample().shape, d.log_prob(torch.tensor([[1, 0, 0], [0, 0, 1]])).shape
    (torch.Size([2, 3]), torch.Size([2]))
    """

    def __init__(self, logits: torch.Tensor | None = None, probs: torch.Tensor | None = None,
                 **kwargs: Any) -> None:
        super().__init__(probs=probs, logits=logits, **kwargs)

    def _one_hot(self, index: torch.Tensor) -> torch.Tensor:
        return F.one_hot(index, self._num_events)

    def sample(self, sample_shape: torch.Size | tuple[int, ...] = torch.Size()) -> torch.Tensor:
        return self._one_hot(super().sample(sample_shape))

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if value.shape[-1] != self._num_events:
            raise ValueError(f"expected one-hot values with {self._num_events} classes in the "
                             f"last dim, got shape {tuple(value.shape)}")
        return super().log_prob(value.argmax(-1))

    @property
    def mode(self) -> torch.Tensor:
        return self._one_hot(self.logits.argmax(-1))

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """The value drawn for ``InteractionType.DETERMINISTIC``: the mode."""
        return self.mode
