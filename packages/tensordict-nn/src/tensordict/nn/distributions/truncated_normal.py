"""The normal distribution truncated to ``[a, b]``.

>>> import torch
>>> d = TruncatedNormal(torch.zeros(2), torch.ones(2), -1.0, 2.0)
>>> d.log_prob(torch.tensor([0.5, -1.0]))
tensor([-0.8438, -1.2188])
"""

from __future__ import annotations

import math
from numbers import Number
from typing import Any

import torch
from torch import distributions as D
from torch.distributions import constraints
from torch.distributions.utils import broadcast_all

__all__ = ["TruncatedNormal"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _pdf(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * x * x - _LOG_SQRT_2PI)


class TruncatedNormal(D.Distribution):
    """Normal(``loc``, ``scale``) conditioned on ``a <= x <= b`` (reparameterized).

    >>> import torch
    >>> d = TruncatedNormal(torch.zeros(1), torch.ones(1), 0.0, float("inf"))
    >>> round(d.mean.item(), 4)  # half-normal mean: sqrt(2 / pi)
    0.7979
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "a": constraints.real, "b": constraints.real}
    has_rsample = True

    def __init__(self, loc: Number | torch.Tensor, scale: Number | torch.Tensor,
                 a: Number | torch.Tensor, b: Number | torch.Tensor,
                 validate_args: bool | None = None) -> None:
        self.loc, self.scale, self.a, self.b = broadcast_all(loc, scale, a, b)
        if validate_args is not False and bool((self.a >= self.b).any()):
            raise ValueError("TruncatedNormal needs a < b everywhere")
        eps = torch.finfo(self.loc.dtype).eps
        self._alpha = (self.a - self.loc) / self.scale
        self._beta = (self.b - self.loc) / self.scale
        self._cdf_alpha = torch.special.ndtr(self._alpha)
        self._z = (torch.special.ndtr(self._beta) - self._cdf_alpha).clamp_min(eps)
        super().__init__(self.loc.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.a, self.b)

    def _edge_terms(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(pdf(alpha) - pdf(beta), alpha pdf(alpha) - beta pdf(beta))`` (0 at infinity)."""
        pa, pb = _pdf(self._alpha), _pdf(self._beta)
        apa = torch.where(self._alpha.isinf(), 0.0, self._alpha * pa)
        bpb = torch.where(self._beta.isinf(), 0.0, self._beta * pb)
        return pa - pb, apa - bpb

    @property
    def mean(self) -> torch.Tensor:
        diff, _ = self._edge_terms()
        return self.loc + self.scale * diff / self._z

    @property
    def mode(self) -> torch.Tensor:
        return torch.maximum(torch.minimum(self.loc, self.b), self.a)

    @property
    def variance(self) -> torch.Tensor:
        diff, weighted = self._edge_terms()
        ratio = diff / self._z
        return self.scale**2 * (1 + weighted / self._z - ratio**2)

    def entropy(self) -> torch.Tensor:
        _, weighted = self._edge_terms()
        return (0.5 * math.log(2 * math.pi * math.e) + self.scale.log() + self._z.log()
                + weighted / (2 * self._z))

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        x = (value - self.loc) / self.scale
        return -0.5 * x * x - _LOG_SQRT_2PI - self._z.log() - self.scale.log()

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        x = (value - self.loc) / self.scale
        return ((torch.special.ndtr(x) - self._cdf_alpha) / self._z).clamp(0, 1)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        eps = torch.finfo(self.loc.dtype).eps
        p = (self._cdf_alpha + value * self._z).clamp(eps, 1 - eps)
        x = torch.special.ndtri(p) * self.scale + self.loc
        return torch.maximum(torch.minimum(x, self.b), self.a)

    def rsample(self, sample_shape: torch.Size | tuple[int, ...] = torch.Size()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        u = torch.rand(shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def expand(self, batch_shape: torch.Size, _instance: Any = None) -> TruncatedNormal:
        batch_shape = torch.Size(batch_shape)
        return TruncatedNormal(self.loc.expand(batch_shape), self.scale.expand(batch_shape),
                               self.a.expand(batch_shape), self.b.expand(batch_shape),
                               validate_args=False)
