"""Continuous distributions and the modules that produce their parameters.

>>> import torch
>>> from tensordict.nn.distributions import NormalParamExtractor
>>> loc, scale = NormalParamExtractor()(torch.zeros(2, 4))
>>> loc.shape, scale
(torch.Size([2, 2]), tensor([[1., 1.],
        [1., 1.]]))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from numbers import Number
from typing import Any

import torch
import torch.fx
from torch import distributions as D
from torch import nn

from tensordict.nn.utils import mappings

__all__ = ["AddStateIndependentNormalScale", "Delta", "NormalParamExtractor", "NormalParamWrapper"]


def _mapping(scale_mapping: str | Callable[[torch.Tensor], torch.Tensor]) -> Any:
    return mappings(scale_mapping) if isinstance(scale_mapping, str) else scale_mapping


class NormalParamExtractor(nn.Module):
    """Split the last dim of a tensor into a location and a positive scale
    (``scale_mapping(x).clamp_min(scale_lb)``); further inputs pass through.

    >>> import torch
    >>> NormalParamExtractor(scale_mapping="exp", scale_lb=0.5)(torch.tensor([[0.0, -10.0]]))
    (tensor([[0.]]), tensor([[0.5000]]))
    """

    def __init__(self, scale_mapping: str = "biased_softplus_1.0",
                 scale_lb: Number = 1e-4) -> None:
        super().__init__()
        self.scale_mapping = _mapping(scale_mapping)
        self.scale_lb = scale_lb

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(loc, scale, *other_inputs)``."""
        tensor, *others = tensors
        if not isinstance(tensor, torch.fx.Proxy) and tensor.shape[-1] % 2:
            raise ValueError(f"NormalParamExtractor needs an even last dim, got shape "
                             f"{tuple(tensor.shape)}")
        loc, scale = tensor.chunk(2, -1)
        return (loc, self.scale_mapping(scale).clamp_min(self.scale_lb), *others)


class NormalParamWrapper(nn.Module):
    """Legacy: call ``operator`` and split its (first) output like
    :class:`NormalParamExtractor` (kept for code written for older tensordict releases;
    prefer ``nn.Sequential(operator, NormalParamExtractor())``).

    >>> import torch
    >>> loc, scale = NormalParamWrapper(torch.nn.Linear(3, 4))(torch.zeros(2, 3))
    >>> loc.shape, scale.shape
    (torch.Size([2, 2]), torch.Size([2, 2]))
    """

    def __init__(self, operator: nn.Module, scale_mapping: str = "biased_softplus_1.0",
                 scale_lb: Number = 1e-4) -> None:
        super().__init__()
        self.operator = operator
        self.extractor = NormalParamExtractor(scale_mapping, scale_lb)

    def forward(self, *args: Any, **kwargs: Any) -> tuple[torch.Tensor, ...]:
        """``(loc, scale, *other_outputs)`` of ``operator(*args, **kwargs)``."""
        out = self.operator(*args, **kwargs)
        return self.extractor(*out) if isinstance(out, tuple) else self.extractor(out)


class AddStateIndependentNormalScale(nn.Module):
    """Append a learned scale that does not depend on the input: ``loc -> (loc, scale)``.

    >>> import torch
    >>> module = AddStateIndependentNormalScale(3)
    >>> loc, scale = module(torch.zeros(2, 3))
    >>> scale
    tensor([[1., 1., 1.],
            [1., 1., 1.]], grad_fn=<ExpandBackward0>)
    """

    def __init__(self, scale_shape: torch.Size | int | tuple[int, ...] | None = None, *,
                 scale_mapping: str = "exp", scale_lb: Number = 1e-4,
                 device: torch.device | str | None = None, make_param: bool = True,
                 init_value: float = 0.0) -> None:
        super().__init__()
        if scale_shape is None:
            scale_shape = torch.Size([])
        elif isinstance(scale_shape, int):
            scale_shape = torch.Size([scale_shape])
        scale = torch.full(tuple(scale_shape), float(init_value), device=device)
        self.state_independent_scale = nn.Parameter(scale) if make_param else scale
        self.scale_mapping = _mapping(scale_mapping)
        self.scale_lb = scale_lb

    def forward(self, *tensors: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(loc, scale, *other_inputs)``."""
        loc, *others = tensors
        scale = self.scale_mapping(self.state_independent_scale).clamp_min(self.scale_lb)
        if loc.shape[loc.ndim - scale.ndim:] != scale.shape:
            raise RuntimeError(f"the last dims of loc {tuple(loc.shape)} must match the "
                               f"scale shape {tuple(scale.shape)}")
        return (loc, scale.expand_as(loc), *others)


class Delta(D.Distribution):
    """A distribution with all its mass on ``param``: sampling returns ``param``,
    ``log_prob`` is ``+inf`` where the value is close to it and ``-inf`` elsewhere.

    By default the last dim of ``param`` is the event dim.

    >>> import torch
    >>> d = Delta(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
    >>> d.batch_shape, d.event_shape
    (torch.Size([2]), torch.Size([2]))
    >>> d.log_prob(torch.tensor([[1.0, 2.0], [3.0, 5.0]]))
    tensor([inf, -inf])
    """

    arg_constraints: dict[str, Any] = {}
    support = D.constraints.real
    has_rsample = True

    def __init__(self, param: torch.Tensor, atol: float = 1e-6, rtol: float = 1e-6,
                 batch_shape: torch.Size | Sequence[int] | None = None,
                 event_shape: torch.Size | Sequence[int] | None = None) -> None:
        if batch_shape is None and event_shape is None:
            event_shape = param.shape[-1:]
        if event_shape is None:
            event_shape = param.shape[len(batch_shape):]
        if batch_shape is None:
            batch_shape = param.shape[: param.ndim - len(event_shape)]
        batch_shape, event_shape = torch.Size(batch_shape), torch.Size(event_shape)
        if batch_shape + event_shape != param.shape:
            raise ValueError(f"Delta: batch_shape {tuple(batch_shape)} + event_shape "
                             f"{tuple(event_shape)} must equal the param shape "
                             f"{tuple(param.shape)}")
        self.param, self.atol, self.rtol = param, atol, rtol
        super().__init__(batch_shape, event_shape, validate_args=False)

    def expand(self, batch_shape: Sequence[int], _instance: Any = None) -> Delta:
        batch_shape = torch.Size(batch_shape)
        return Delta(self.param.expand(batch_shape + self.event_shape), self.atol, self.rtol,
                     batch_shape, self.event_shape)

    def log_prob(self, value: torch.Tensor) -> torch.Tensor:
        close = torch.isclose(value, self.param, atol=self.atol, rtol=self.rtol)
        if self.event_shape:
            close = close.flatten(-len(self.event_shape)).all(-1)
        inf = torch.tensor(float("inf"), dtype=self.param.dtype, device=self.param.device)
        return torch.where(close, inf, -inf)

    def rsample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return self.param.expand(torch.Size(sample_shape) + self.param.shape)

    def sample(self, sample_shape: Sequence[int] = torch.Size()) -> torch.Tensor:
        return self.rsample(sample_shape).detach()

    @property
    def mode(self) -> torch.Tensor:
        return self.param

    @property
    def mean(self) -> torch.Tensor:
        return self.param

    @property
    def deterministic_sample(self) -> torch.Tensor:
        """The value drawn for ``InteractionType.DETERMINISTIC``: ``param``."""
        return self.param
