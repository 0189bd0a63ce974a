"""CompositeDistribution: several distributions, one per (nested) key of a TensorDict.

>>> import torch
>>> from torch import distributions as D
>>> from tensordict import TensorDict
>>> params = TensorDict({"cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
...                      ("nested", "disc"): {"logits": torch.zeros(3, 10)}}, [3])
>>> dist = CompositeDistribution(
...     params, distribution_map={"cont": D.Normal, ("nested", "disc"): D.Categorical})
>>> sample = dist.sample()
>>> sample["cont"].shape, sample["nested", "disc"].shape
(torch.Size([3, 4]), torch.Size([3]))
>>> list(dist.log_prob(sample).keys(True, True))
['cont_log_prob', ('nested', 'disc_log_prob')]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import distributions as D

from tensordict import NestedKey, TensorDict, TensorDictBase, unravel_key
from tensordict.nn.distributions.utils import deterministic_sample
from tensordict.nn.utils import _Switch, _SwitchContext

__all__ = ["CompositeDistribution", "composite_lp_aggregate", "set_composite_lp_aggregate"]

_LP_AGGREGATE = _Switch(False)


def composite_lp_aggregate(nowarn: bool = False) -> bool:
    """Whether composite log-probs (and entropies) are summed into one tensor (default
    ``False``: a TensorDict with one ``<name>_log_prob`` entry per component).

    >>> composite_lp_aggregate()
    False
    """
    return bool(_LP_AGGREGATE.get())


class set_composite_lp_aggregate(_SwitchContext):  # noqa: N801 (upstream name)
    """Context manager / decorator choosing whether composite log-probs are summed.

    >>> with set_composite_lp_aggregate(True):
    ...     composite_lp_aggregate()
    True
    """

    _switch = _LP_AGGREGATE

    def __init__(self, mode: bool = True, *, thread_local: bool = False) -> None:
        super().__init__(bool(mode), thread_local)


def _suffixed(key: NestedKey, suffix: str) -> NestedKey:
    """``("a", "b")`` -> ``("a", "b" + suffix)``."""
    if isinstance(key, str):
        return key + suffix
    return (*key[:-1], key[-1] + suffix)


class CompositeDistribution(D.Distribution):
    """A distribution over a TensorDict of samples, one component per key.

    Args:
        params: a TensorDict whose entry at each key of ``distribution_map`` holds the
            keyword arguments of that component (e.g. ``{"loc": ..., "scale": ...}``).
        distribution_map: ``{key: distribution_class}``.
        name_map: write the sample of a component at another key.
        extra_kwargs: ``{key: dict}`` of extra constructor arguments per component.
        log_prob_key / entropy_key: where the summed log-prob / entropy go when written
            into a TensorDict (defaults ``"sample_log_prob"`` / ``"entropy"``).

    ``log_prob`` and ``entropy`` return a TensorDict of per-component values
    (``<key>_log_prob``, ``<key>_entropy``), or their sum over each component's
    non-batch dims when ``set_composite_lp_aggregate(True)`` is active.

    >>> import torch
    >>> from torch import distributions as D
    >>> from tensordict import TensorDict
    >>> params = TensorDict(a={"loc": torch.zeros(2), "scale": torch.ones(2)}, batch_size=[2])
    >>> dist = CompositeDistribution(params, {"a": D.Normal})
    >>> with set_composite_lp_aggregate(True):
    ...     dist.log_prob(dist.mode)
    tensor([-0.9189, -0.9189])
    """

    arg_constraints: dict[str, Any] = {}

    def __init__(self, params: TensorDictBase, distribution_map: dict[NestedKey, type],
                 *, name_map: dict[NestedKey, NestedKey] | None = None,
                 extra_kwargs: dict[NestedKey, dict[str, Any]] | None = None,
                 log_prob_key: NestedKey | None = None,
                 entropy_key: NestedKey | None = None) -> None:
        extra = {unravel_key(k): v for k, v in (extra_kwargs or {}).items()}
        names = {unravel_key(k): unravel_key(v) for k, v in (name_map or {}).items()}
        dists = {}
        for key, dist_class in distribution_map.items():
            key = unravel_key(key)
            dist_params = params.get(key, None)
            if dist_params is None:
                raise KeyError(f"CompositeDistribution: no parameters at {key!r} "
                               f"(params keys: {list(params.keys(True, True))})")
            kwargs = dict(dist_params.items()) if isinstance(dist_params, TensorDictBase) \
                else {}
            dists[names.get(key, key)] = dist_class(**kwargs, **extra.get(key, {}))
        self.dists: dict[NestedKey, D.Distribution] = dists
        self.log_prob_key = log_prob_key if log_prob_key is not None else "sample_log_prob"
        self.entropy_key = entropy_key if entropy_key is not None else "entropy"
        super().__init__(params.batch_size, validate_args=False)

    @classmethod
    def from_distributions(cls, params: TensorDictBase,
                           distributions: dict[NestedKey, D.Distribution], *,
                           name_map: dict[NestedKey, NestedKey] | None = None,
                           log_prob_key: NestedKey | None = None,
                           entropy_key: NestedKey | None = None) -> CompositeDistribution:
        """A composite of already-built distributions (``params`` gives the batch size).

        >>> import torch
        >>> from torch import distributions as D
        >>> from tensordict import TensorDict
        >>> dist = CompositeDistribution.from_distributions(
        ...     TensorDict(batch_size=[2]), {"a": D.Normal(torch.zeros(2), torch.ones(2))})
        >>> dist.sample().batch_size
        torch.Size([2])
        """
        self = cls.__new__(cls)
        names = {unravel_key(k): unravel_key(v) for k, v in (name_map or {}).items()}
        self.dists = {names.get(unravel_key(k), unravel_key(k)): d
                      for k, d in distributions.items()}
        self.log_prob_key = log_prob_key if log_prob_key is not None else "sample_log_prob"
        self.entropy_key = entropy_key if entropy_key is not None else "entropy"
        D.Distribution.__init__(self, params.batch_size, validate_args=False)
        return self

    # -- values ------------------------------------------------------------------------
    def _per_key(self, fn: Callable[[D.Distribution], torch.Tensor],
                 batch_size: torch.Size) -> TensorDict:
        return TensorDict({key: fn(dist) for key, dist in self.dists.items()},
                          batch_size=batch_size)

    def sample(self, sample_shape: tuple[int, ...] | torch.Size = torch.Size()) -> TensorDict:
        shape = torch.Size(sample_shape)
        return self._per_key(lambda d: d.sample(shape), shape + self.batch_shape)

    def rsample(self, sample_shape: tuple[int, ...] | torch.Size = torch.Size()) -> TensorDict:
        shape = torch.Size(sample_shape)
        return self._per_key(lambda d: d.rsample(shape) if d.has_rsample else d.sample(shape),
                             shape + self.batch_shape)

    @property
    def has_rsample(self) -> bool:  # type: ignore[override]
        return all(d.has_rsample for d in self.dists.values())

    @property
    def mode(self) -> TensorDict:
        return self._per_key(lambda d: d.mode, self.batch_shape)

    @property
    def mean(self) -> TensorDict:
        return self._per_key(lambda d: d.mean, self.batch_shape)

    @property
    def deterministic_sample(self) -> TensorDict:
        """Each component's deterministic sample (see ``InteractionType.DETERMINISTIC``)."""
        return self._per_key(deterministic_sample, self.batch_shape)

    # -- log-prob and entropy ----------------------------------------------------------
    def _combine(self, values: dict[NestedKey, torch.Tensor], suffix: str, aggregate: bool,
                 batch_size: torch.Size) -> torch.Tensor | TensorDict:
        if not aggregate:
            return TensorDict({_suffixed(k, suffix): v for k, v in values.items()},
                              batch_size=batch_size)
        ndim = len(batch_size)
        total = 0
        for value in values.values():
            total = total + (value.flatten(ndim).sum(-1) if value.ndim > ndim else value)
        return total

    def log_prob(self, sample: TensorDictBase, *,  # type: ignore[override]
                 aggregate_probabilities: bool | None = None) -> torch.Tensor | TensorDict:
        """Per-component ``<key>_log_prob`` TensorDict, or their sum (see class doc)."""
        aggregate = composite_lp_aggregate() if aggregate_probabilities is None \
            else aggregate_probabilities
        values = {}
        for key, dist in self.dists.items():
            value = sample.get(key, None)
            if value is None:
                raise KeyError(f"CompositeDistribution.log_prob: the sample has no entry "
                               f"{key!r} (keys: {list(sample.keys(True, True))})")
            values[key] = dist.log_prob(value)
        return self._combine(values, "_log_prob", aggregate, sample.batch_size)

    def log_prob_composite(self, sample: TensorDictBase) -> TensorDict:
        """The per-component log-probs, whatever :func:`composite_lp_aggregate` says."""
        return self.log_prob(sample, aggregate_probabilities=False)

    def entropy(self, samples_mc: int = 1, *,  # type: ignore[override]
                aggregate_probabilities: bool | None = None) -> torch.Tensor | TensorDict:
        """Per-component ``<key>_entropy`` TensorDict, or their sum; components without a
        closed-form entropy use a Monte-Carlo estimate from ``samples_mc`` samples."""
        aggregate = composite_lp_aggregate() if aggregate_probabilities is None \
            else aggregate_probabilities
        values = {}
        for key, dist in self.dists.items():
            try:
                values[key] = dist.entropy()
            except NotImplementedError:
                draws = dist.rsample((samples_mc,)) if dist.has_rsample \
                    else dist.sample((samples_mc,))
                values[key] = -dist.log_prob(draws).mean(0)
        return self._combine(values, "_entropy", aggregate, self.batch_shape)

    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """The per-component log-prob keys."""
        return [_suffixed(key, "_log_prob") for key in self.dists]

    @property
    def sample_keys(self) -> list[NestedKey]:
        """The keys the samples are written at."""
        return list(self.dists)
