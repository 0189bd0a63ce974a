"""The normal distribution truncated to ``[a, b]``, standard and with a location and scale.

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

__all__ = ["TruncatedNormal", "TruncatedStandardNormal"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_HALF_LOG_2PI_E = 0.5 * math.log(2 * math.pi * math.e)


def _pdf(x: torch.Tensor) -> torch.Tensor:
    return torch.exp(-0.5 * x * x - _LOG_SQRT_2PI)


class TruncatedStandardNormal(D.Distribution):
    """The standard normal conditioned on ``a <= x <= b`` (reparameterized).

    >>> import torch
    >>> d = TruncatedStandardNormal(torch.tensor([0.0]), torch.tensor([float("inf")]))
    >>> round(d.mean.item(), 4), round(d.auc.item(), 4)  # half-normal mean, mass kept
    (0.7979, 0.5)
    """

    arg_constraints = {"a": constraints.real, "b": constraints.real}
    has_rsample = True
    eps = 1e-6

    def __init__(self, a: Number | torch.Tensor, b: Number | torch.Tensor,
                 validate_args: bool | None = None) -> None:
        self.a, self.b = broadcast_all(a, b)
        if bool((self.a >= self.b).any()):
            raise ValueError(f"Incorrect truncation range: need a < b, got a={self.a} "
                             f"and b={self.b}")
        self._cdf_a = torch.special.ndtr(self.a)
        self._z = (torch.special.ndtr(self.b) - self._cdf_a).clamp_min(self.eps)
        pa, pb = _pdf(self.a), _pdf(self.b)
        self._pdf_diff = pa - pb
        # a pdf(a) - b pdf(b), each term 0 at an infinite bound
        self._weighted = (torch.where(self.a.isinf(), 0.0, self.a * pa)
                          - torch.where(self.b.isinf(), 0.0, self.b * pb))
        super().__init__(self.a.shape, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self.a, self.b)

    @property
    def auc(self) -> torch.Tensor:
        """The mass of the standard normal inside ``[a, b]``."""
        return self._z

    @property
    def mean(self) -> torch.Tensor:
        return self._pdf_diff / self._z

    @property
    def variance(self) -> torch.Tensor:
        ratio = self._pdf_diff / self._z
        return 1 + self._weighted / self._z - ratio**2

    def entropy(self) -> torch.Tensor:
        return _HALF_LOG_2PI_E + self._z.log() + self._weighted / (2 * self._z)

    def _std_log_prob(self, x: torch.Tensor) -> torch.Tensor:
        return -0.5 * x * x - _LOG_SQRT_2PI - self._z.log()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._std_log_prob(value)

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        return ((torch.special.ndtr(value) - self._cdf_a) / self._z).clamp(0, 1)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        eps = torch.finfo(self._z.dtype).eps
        p = (self._cdf_a + value * self._z).clamp(eps, 1 - eps)
        return torch.maximum(torch.minimum(torch.special.ndtri(p), self.b), self.a)

    def rsample(self, sample_shape: torch.Size | tuple[int, ...] = torch.Size()) -> torch.Tensor:
        shape = self._extended_shape(torch.Size(sample_shape))
        u = torch.rand(shape, dtype=self._z.dtype, device=self._z.device)
        return self.icdf(u)

    def expand(self, batch_shape: torch.Size, _instance: Any = None) -> TruncatedStandardNormal:
        batch_shape = torch.Size(batch_shape)
        return TruncatedStandardNormal(self.a.expand(batch_shape), self.b.expand(batch_shape),
                                       validate_args=False)


class TruncatedNormal(TruncatedStandardNormal):
    """Normal(``loc``, ``scale``) conditioned on ``a <= x <= b`` (reparameterized); the
    attributes ``a`` / ``b`` hold the bounds standardized, ``support`` the given ones.

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
        self.loc, self.scale, self._low, self._high = broadcast_all(loc, scale, a, b)
        super().__init__((self._low - self.loc) / self.scale,
                         (self._high - self.loc) / self.scale, validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self) -> Any:
        return constraints.interval(self._low, self._high)

    @property
    def mean(self) -> torch.Tensor:
        return self.loc + self.scale * super().mean

    @property
    def mode(self) -> torch.Tensor:
        return torch.maximum(torch.minimum(self.loc, self._high), self._low)

    @property
    def variance(self) -> torch.Tensor:
        return self.scale**2 * super().variance

    def entropy(self) -> torch.Tensor:
        return super().entropy() + self.scale.log()

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        if self._validate_args:
            self._validate_sample(value)
        return self._std_log_prob((value - self.loc) / self.scale) - self.scale.log()

    def cdf(self, value: torch.Tensor) -> torch.Tensor:
        return super().cdf((value - self.loc) / self.scale)

    def icdf(self, value: torch.Tensor) -> torch.Tensor:
        x = super().icdf(value) * self.scale + self.loc
        return torch.maximum(torch.minimum(x, self._high), self._low)

    def expand(self, batch_shape: torch.Size, _instance: Any = None) -> TruncatedNormal:
        batch_shape = torch.Size(batch_shape)
        return TruncatedNormal(self.loc.expand(batch_shape), self.scale.expand(batch_shape),
                               self._low.expand(batch_shape), self._high.expand(batch_shape),
                               validate_args=False)
