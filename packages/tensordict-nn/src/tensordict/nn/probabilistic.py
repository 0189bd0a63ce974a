"""Probabilistic modules: build a distribution from TensorDict entries and write a value.

>>> import torch
>>> from torch.distributions import Normal
>>> from tensordict import TensorDict
>>> from tensordict.nn import ProbabilisticTensorDictModule
>>> module = ProbabilisticTensorDictModule(
...     in_keys=["loc", "scale"], out_keys=["action"], distribution_class=Normal,
...     return_log_prob=True)
>>> td = module(TensorDict(loc=torch.zeros(3), scale=torch.ones(3), batch_size=[3]))
>>> td["action"], td["action_log_prob"]
(tensor([0., 0., 0.]), tensor([-0.9189, -0.9189, -0.9189]))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import distributions as D

from tensordict import NestedKey, TensorDictBase
from tensordict.nn.common import (
    TensorDictModuleBase,
    _module_repr,
    _normalize_keys,
    _set_entry,
)
from tensordict.nn.distributions.composite import (
    CompositeDistribution,
    _suffixed,
    composite_lp_aggregate,
)
from tensordict.nn.distributions.continuous import Delta
from tensordict.nn.distributions.utils import draw
from tensordict.nn.interaction import InteractionType, interaction_type
from tensordict.nn.sequence import TensorDictSequential

__all__ = ["ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential"]


class ProbabilisticTensorDictModule(TensorDictModuleBase):
    """Build ``distribution_class(**{kwarg: td[key]}, **distribution_kwargs)`` from the
    ``in_keys`` and write a value of it to ``out_keys``.

    Args:
        in_keys: the distribution's parameters: a list of keys (the last part of each
            key is the keyword) or a dict ``{kwarg: key}``.
        out_keys: where the value goes (``["_"]``, i.e. nowhere, if omitted); for a
            :class:`CompositeDistribution`, the sample keys.
        default_interaction_type: how the value is drawn outside of a
            :class:`set_interaction_type` block (``DETERMINISTIC``: the distribution's
            ``deterministic_sample``, the mode of a discrete one, else its mean).
        return_log_prob: also write the value's log-prob, at ``<out_key>_log_prob``
            unless ``log_prob_key(s)`` says otherwise.
        cache_dist: keep the last distribution built as ``module._dist``.
        n_empirical_estimate: samples used when a mode/median/mean has no closed form.
        num_samples: draw this many values (an int or a shape): the result is a new
            TensorDict with these leading batch dims.

    >>> import torch
    >>> from torch.distributions import Categorical
    >>> from tensordict import TensorDict
    >>> module = ProbabilisticTensorDictModule(
    ...     in_keys=["logits"], out_keys=["a"], distribution_class=Categorical)
    >>> module(TensorDict(logits=torch.tensor([[0.0, 3.0]]), batch_size=[1]))["a"]
    tensor([1])
    """

    def __init__(
        self,
        in_keys: NestedKey | list[NestedKey] | dict[str, NestedKey],
        out_keys: NestedKey | list[NestedKey] | None = None,
        *,
        default_interaction_type: InteractionType | str = InteractionType.DETERMINISTIC,
        distribution_class: type = Delta,
        distribution_kwargs: dict[str, Any] | None = None,
        return_log_prob: bool = False,
        log_prob_keys: list[NestedKey] | None = None,
        log_prob_key: NestedKey | None = None,
        cache_dist: bool = False,
        n_empirical_estimate: int = 1000,
        num_samples: int | torch.Size | None = None,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if generator is not None:
            raise NotImplementedError(
                "ProbabilisticTensorDictModule: generator= is not supported yet; seed with "
                "torch.manual_seed instead"
            )
        names = None
        if isinstance(in_keys, Mapping):
            names, in_keys = list(in_keys), list(in_keys.values())
        self.in_keys = _normalize_keys(in_keys, "in_keys")
        self._dist_kwarg_names = names or [k if isinstance(k, str) else k[-1]
                                           for k in self.in_keys]
        self.dist_sample_keys = _normalize_keys(["_"] if out_keys is None else out_keys,
                                                "out_keys")
        if isinstance(default_interaction_type, str):
            default_interaction_type = InteractionType.from_str(default_interaction_type)
        self.default_interaction_type = default_interaction_type
        self.distribution_class = distribution_class
        self._is_composite = isinstance(distribution_class, type) and issubclass(
            distribution_class, CompositeDistribution)
        self.distribution_kwargs = distribution_kwargs or {}
        self.return_log_prob = return_log_prob
        if log_prob_key is not None:
            log_prob_keys = [log_prob_key]
        self._given_log_prob_keys = (None if log_prob_keys is None
                                     else _normalize_keys(log_prob_keys, "log_prob_keys"))
        self.cache_dist = cache_dist
        self._dist: D.Distribution | None = None
        self.n_empirical_estimate = n_empirical_estimate
        self.num_samples = num_samples
        self.out_keys = self.dist_sample_keys + (self.log_prob_keys if return_log_prob else [])

    # -- keys --------------------------------------------------------------------------
    @property
    def dist_params_keys(self) -> list[NestedKey]:
        """The keys the distribution's parameters are read from."""
        return self.in_keys


    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """Where log-probs are written: ``<sample key>_log_prob`` per sample key (one
        summed entry, ``"sample_log_prob"`` by default, for an aggregated composite)."""
        if self._given_log_prob_keys is not None:
            return list(self._given_log_prob_keys)
        if not self._is_composite:
            return [_suffixed(self.dist_sample_keys[0], "_log_prob")]
        if composite_lp_aggregate():
            return [self.distribution_kwargs.get("log_prob_key") or "sample_log_prob"]
        return [_suffixed(key, "_log_prob") for key in self.dist_sample_keys]

    @property
    def log_prob_key(self) -> NestedKey:
        """The log-prob key when there is only one (else see :attr:`log_prob_keys`)."""
        keys = self.log_prob_keys
        if len(keys) != 1:
            raise RuntimeError(
                f"this module writes several log-probs {keys}: use log_prob_keys, or "
                "set_composite_lp_aggregate(True) to sum them into one entry"
            )
        return keys[0]

    # -- distribution ------------------------------------------------------------------
    def get_dist(self, tensordict: TensorDictBase) -> D.Distribution:
        """The distribution built from ``tensordict``'s parameter entries."""
        kwargs = dict(self.distribution_kwargs)
        for name, key in zip(self._dist_kwarg_names, self.in_keys):
            value = tensordict.get(key, None)
            if value is None:
                raise KeyError(
                    f"{type(self).__name__}: the distribution parameter {key!r} is missing "
                    f"(keys: {list(tensordict.keys(True, True))})"
                )
            kwargs[name] = value
        try:
            dist = self.distribution_class(**kwargs)
        except TypeError as err:
            raise TypeError(
                f"could not build {getattr(self.distribution_class, '__name__', '?')} from "
                f"the arguments {sorted(kwargs)}: {err}"
            ) from err
        if self.cache_dist:
            self._dist = dist
        return dist

    build_dist_from_params = get_dist

    def _sample_of(self, tensordict: TensorDictBase) -> Any:
        if self._is_composite:
            return tensordict.select(*self.dist_sample_keys)
        return tensordict.get(self.dist_sample_keys[0])

    def log_prob(self, tensordict: TensorDictBase,
                 dist: D.Distribution | None = None) -> torch.Tensor | TensorDictBase:
        """The log-prob of the sample stored in ``tensordict``."""
        dist = self.get_dist(tensordict) if dist is None else dist
        return dist.log_prob(self._sample_of(tensordict))

    def forward(self, tensordict: TensorDictBase,
                tensordict_out: TensorDictBase | None = None,
                _requires_sample: bool = True) -> TensorDictBase:
        """Build the distribution and write a value (and its log-prob) of it."""
        dist = self.get_dist(tensordict)
        shape = torch.Size([] if self.num_samples is None else
                           [self.num_samples] if isinstance(self.num_samples, int)
                           else self.num_samples)
        if tensordict_out is not None:
            out = tensordict_out
        elif shape:  # a new TensorDict with the leading sample dims
            out = tensordict.expand(*shape, *tensordict.batch_size)
        else:
            out = tensordict
        if not _requires_sample:
            return out
        sample = draw(dist, interaction_type() or self.default_interaction_type,
                      self.n_empirical_estimate, shape)
        if isinstance(sample, TensorDictBase):
            out.update(sample)
        else:
            values = sample if isinstance(sample, tuple) else (sample,)
            for key, value in zip(self.dist_sample_keys, values):
                if key != "_":
                    _set_entry(out, key, value)
        if self.return_log_prob:
            log_prob = dist.log_prob(sample)
            if isinstance(log_prob, TensorDictBase):
                out.update(log_prob)
            else:
                _set_entry(out, self.log_prob_keys[0], log_prob)
        return out

    def __repr__(self) -> str:
        return _module_repr(self, [
            ("in_keys", self.in_keys), ("out_keys", self.out_keys),
            ("distribution_class", self.distribution_class),
            ("distribution_kwargs", self.distribution_kwargs),
            ("default_interaction_type", str(self.default_interaction_type)),
        ])


class ProbabilisticTensorDictSequential(TensorDictSequential):
    """A sequence whose last module is probabilistic: the earlier ones compute the
    distribution's parameters.

    >>> import torch
    >>> from torch import nn
    >>> from torch.distributions import Normal
    >>> from tensordict import TensorDict
    >>> from tensordict.nn import TensorDictModule
    >>> from tensordict.nn.distributions import NormalParamExtractor
    >>> seq = ProbabilisticTensorDictSequential(
    ...     TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
    ...                      in_keys=["x"], out_keys=["loc", "scale"]),
    ...     ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
    ...                                   distribution_class=Normal))
    >>> td = TensorDict(x=torch.randn(5, 3), batch_size=[5])
    >>> seq.get_dist(td).batch_shape, seq.log_prob(seq(td)).shape
    (torch.Size([5, 2]), torch.Size([5, 2]))
    """

    def __init__(self, *modules: Any, partial_tolerant: bool = False,
                 return_composite: bool | None = None,
                 selected_out_keys: list[NestedKey] | None = None,
                 inplace: bool | None = None) -> None:
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            last = list(modules[0].values())[-1] if modules[0] else None
        else:
            last = modules[-1] if modules else None
        if not callable(getattr(last, "get_dist", None)):
            raise TypeError(
                "the last module of a ProbabilisticTensorDictSequential must be "
                f"probabilistic (have get_dist), got {type(last).__name__}"
            )
        if return_composite:
            raise NotImplementedError("return_composite=True is not supported yet")
        super().__init__(*modules, partial_tolerant=partial_tolerant,
                         selected_out_keys=selected_out_keys, inplace=inplace)

    @property
    def _last(self) -> Any:
        return list(self._module_iter())[-1]

    @property
    def det_part(self) -> TensorDictSequential:
        """The modules before the probabilistic one."""
        return TensorDictSequential(*list(self._module_iter())[:-1])

    @property
    def default_interaction_type(self) -> InteractionType:
        """The default interaction type of the probabilistic module."""
        return self._last.default_interaction_type

    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """The log-prob keys of the probabilistic module."""
        return self._last.log_prob_keys

    @property
    def log_prob_key(self) -> NestedKey:
        """The log-prob key of the probabilistic module."""
        return self._last.log_prob_key

    def get_dist_params(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Run the deterministic part (writing the distribution's parameters)."""
        modules = list(self._module_iter())[:-1]
        for module in modules:
            tensordict = module(tensordict)
        return tensordict

    def get_dist(self, tensordict: TensorDictBase) -> D.Distribution:
        """The distribution for ``tensordict`` (the deterministic part is run first)."""
        return self._last.get_dist(self.get_dist_params(tensordict))

    def log_prob(self, tensordict: TensorDictBase) -> torch.Tensor | TensorDictBase:
        """The log-prob of the sample stored in ``tensordict``."""
        return self._last.log_prob(tensordict, dist=self.get_dist(tensordict))

    def _rebuild(self, modules: list[Any]) -> TensorDictSequential:
        items = list(modules[0].values()) if modules and isinstance(modules[0], Mapping) \
            else modules
        if items and callable(getattr(items[-1], "get_dist", None)):
            return ProbabilisticTensorDictSequential(
                *modules, partial_tolerant=self.partial_tolerant, inplace=self.inplace)
        return super()._rebuild(modules)
