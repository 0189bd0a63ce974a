"""How a value is drawn from a distribution for each :class:`InteractionType`.

>>> import torch
>>> from torch.distributions import Normal
>>> from tensordict.nn import InteractionType
>>> draw(Normal(torch.zeros(2), torch.ones(2)), InteractionType.MODE)
tensor([0., 0.])
"""

from __future__ import annotations

from typing import Any

import torch
from torch import distributions as D

from tensordict.nn.interaction import InteractionType

__all__ = ["deterministic_sample", "draw"]


def _property_or_none(dist: D.Distribution, name: str) -> Any:
    try:
        return getattr(dist, name)
    except (NotImplementedError, AttributeError):
        return None


def _samples(dist: D.Distribution, n: int) -> torch.Tensor:
    shape = torch.Size([n])
    return dist.rsample(shape) if dist.has_rsample else dist.sample(shape)


def deterministic_sample(dist: D.Distribution, n_empirical_estimate: int = 1000) -> Any:
    """The distribution's ``deterministic_sample`` if it has one, the mode of a discrete
    distribution, else its mean (else its mode).

    >>> import torch
    >>> from torch.distributions import Categorical
    >>> deterministic_sample(Categorical(logits=torch.tensor([0.0, 2.0])))
    tensor(1)
    """
    value = getattr(type(dist), "deterministic_sample", None)
    if value is not None:
        return dist.deterministic_sample
    support = _property_or_none(dist, "support")
    if support is not None and support.is_discrete:
        return draw(dist, InteractionType.MODE, n_empirical_estimate)
    value = _property_or_none(dist, "mean")
    if value is None:
        return draw(dist, InteractionType.MODE, n_empirical_estimate)
    return value


def draw(dist: D.Distribution, interaction: InteractionType,
         n_empirical_estimate: int = 1000, sample_shape: torch.Size = torch.Size()) -> Any:
    """A value of ``dist`` for ``interaction`` (``sample_shape`` independent draws, or the
    same value expanded); mode, median and mean fall back on an estimate from
    ``n_empirical_estimate`` samples when ``dist`` does not give them.

    >>> import torch
    >>> from torch.distributions import Normal
    >>> draw(Normal(torch.zeros(1), torch.ones(1)), InteractionType.MEAN, sample_shape=(2,))
    tensor([[0.],
            [0.]])
    """
    sample_shape = torch.Size(sample_shape)
    if interaction is InteractionType.RANDOM:
        return dist.rsample(sample_shape) if dist.has_rsample else dist.sample(sample_shape)
    value = _value(dist, interaction, n_empirical_estimate)
    if not sample_shape:
        return value
    if isinstance(value, torch.Tensor):
        return value.expand(sample_shape + value.shape)
    return value.expand(*sample_shape, *value.batch_size)


def _value(dist: D.Distribution, interaction: InteractionType,
           n_empirical_estimate: int) -> Any:
    """The value of a non-random interaction: closed form, else estimated from samples
    (the sample of highest log-prob for the mode)."""
    if interaction is InteractionType.DETERMINISTIC:
        return deterministic_sample(dist, n_empirical_estimate)
    name = interaction.value
    value = _property_or_none(dist, name)
    if value is not None:
        return value
    samples = _samples(dist, n_empirical_estimate)
    if interaction is InteractionType.MEAN:
        return samples.mean(0)
    if interaction is InteractionType.MEDIAN:
        return samples.median(0).values
    log_prob = dist.log_prob(samples)
    best = log_prob.argmax(0)
    index = best.reshape(1, *best.shape, *([1] * len(dist.event_shape)))
    index = index.expand(1, *samples.shape[1:])
    return samples.gather(0, index).squeeze(0)
