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
from tensordict.nn.utils import composite_lp_aggregate, set_composite_lp_aggregate
from tensordict.utils import acts_as_tensordict

__all__ = ["CompositeDistribution", "composite_lp_aggregate", "set_composite_lp_aggregate"]


def _add_suffix(key: NestedKey, suffix: str) -> NestedKey:
    """``key`` with ``suffix`` appended to its last part.

    >>> _add_suffix("a", "_log_prob"), _add_suffix(("a", "b"), "_log_prob")
    ('a_log_prob', ('a', 'b_log_prob'))
    """
    if isinstance(key, str):
        return key + suffix
    return (*key[:-1], key[-1] + suffix)


def _shape(sample_shape: Any) -> torch.Size:
    return torch.Size(() if sample_shape is None else sample_shape)


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
    non-batch dims when ``set_composite_lp_aggregate(True)`` is active. Like upstream,
    ``has_rsample`` is ``False``: ``sample`` never carries gradients, ``rsample`` does.

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
        dists = {}
        for key, dist_class in distribution_map.items():
            key = unravel_key(key)
            dist_params = params.get(key, None)
            if dist_params is None:
                raise KeyError(f"CompositeDistribution: no parameters at {key!r} "
                               f"(params keys: {list(params.keys(True, True))})")
            kwargs = dict(dist_params.items()) if acts_as_tensordict(dist_params) \
                else {}
            dists[key] = dist_class(**kwargs, **extra.get(key, {}))
        self._setup(params.batch_size, dists, name_map, log_prob_key, entropy_key)

    def _setup(self, batch_size: torch.Size, dists: dict[NestedKey, D.Distribution],
               name_map: dict[NestedKey, NestedKey] | None, log_prob_key: NestedKey | None,
               entropy_key: NestedKey | None) -> None:
        names = {unravel_key(k): unravel_key(v) for k, v in (name_map or {}).items()}
        self.dists: dict[NestedKey, D.Distribution] = {
            names.get(unravel_key(k), unravel_key(k)): d for k, d in dists.items()}
        self._log_prob_key = "sample_log_prob" if log_prob_key is None else log_prob_key
        self._entropy_key = "entropy" if entropy_key is None else entropy_key
        D.Distribution.__init__(self, batch_size, validate_args=False)

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
        self._setup(params.batch_size, distributions, name_map, log_prob_key, entropy_key)
        return self

    @property
    def log_prob_key(self) -> NestedKey:
        """Where the summed log-prob is written (``"sample_log_prob"`` by default)."""
        return self._log_prob_key

    @property
    def entropy_key(self) -> NestedKey:
        """Where the summed entropy is written (``"entropy"`` by default)."""
        return self._entropy_key

    # -- values ------------------------------------------------------------------------
    def _per_key(self, fn: Callable[[D.Distribution], torch.Tensor],
                 batch_size: torch.Size) -> TensorDict:
        return TensorDict({key: fn(dist) for key, dist in self.dists.items()},
                          batch_size=batch_size)

    def sample(self, shape: Any = None) -> TensorDict:  # type: ignore[override]
        shape = _shape(shape)
        return self._per_key(lambda d: d.sample(shape), shape + self.batch_shape)

    def rsample(self, shape: Any = None) -> TensorDict:  # type: ignore[override]
        shape = _shape(shape)
        return self._per_key(lambda d: d.rsample(shape), shape + self.batch_shape)

    def sample_and_log_prob(self, shape: Any = None) -> tuple[TensorDict, Any]:
        """A sample and its log-prob (see :meth:`log_prob`).

        >>> import torch
        >>> from torch import distributions as D
        >>> from tensordict import TensorDict
        >>> dist = CompositeDistribution.from_distributions(
        ...     TensorDict(batch_size=[2]), {"a": D.Normal(torch.zeros(2), torch.ones(2))})
        >>> sample, log_prob = dist.sample_and_log_prob((3,))
        >>> log_prob["a_log_prob"].shape
        torch.Size([3, 2])
        """
        sample = self.sample(shape)
        return sample, self.log_prob(sample)

    def rsample_and_log_prob(self, shape: Any = None) -> tuple[TensorDict, Any]:
        """A reparameterized sample and its log-prob (see :meth:`log_prob`)."""
        sample = self.rsample(shape)
        return sample, self.log_prob(sample)

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

    def cdf(self, sample: TensorDictBase) -> TensorDictBase:
        """Write each component's cdf at ``<key>_cdf`` in ``sample`` (returned)."""
        for key, dist in self.dists.items():
            sample.set(_add_suffix(key, "_cdf"), dist.cdf(sample.get(key)))
        return sample

    def icdf(self, sample: TensorDictBase) -> TensorDictBase:
        """Write each component's icdf of ``<key>_cdf`` at ``<key>_icdf`` in ``sample``."""
        for key, dist in self.dists.items():
            sample.set(_add_suffix(key, "_icdf"), dist.icdf(sample.get(_add_suffix(key, "_cdf"))))
        return sample

    # -- log-prob and entropy ----------------------------------------------------------
    @staticmethod
    def _sum(values: dict[NestedKey, torch.Tensor], batch_size: torch.Size) -> Any:
        """The sum of the values, each summed over its dims after ``batch_size``."""
        ndim = len(batch_size)
        total = 0
        for value in values.values():
            total = total + (value.flatten(ndim).sum(-1) if value.ndim > ndim else value)
        return total

    def _combine(self, values: dict[NestedKey, torch.Tensor], suffix: str, aggregate: bool,
                 batch_size: torch.Size, sum_key: NestedKey | None = None) -> Any:
        if aggregate:
            return self._sum(values, batch_size)
        out = TensorDict({_add_suffix(k, suffix): v for k, v in values.items()},
                         batch_size=batch_size)
        if sum_key is not None:
            out.set(sum_key, self._sum(values, batch_size))
        return out

    def _log_probs(self, sample: Any) -> dict[NestedKey, torch.Tensor]:
        if not acts_as_tensordict(sample):
            raise RuntimeError(f"Expected a tensordict sample, but got a "
                               f"{type(sample).__name__} instead.")
        values = {}
        for key, dist in self.dists.items():
            value = sample.get(key, None)
            if value is None:
                raise KeyError(f"CompositeDistribution.log_prob: the sample has no entry "
                               f"{key!r} (keys: {list(sample.keys(True, True))})")
            values[key] = dist.log_prob(value)
        return values

    def log_prob(self, sample: TensorDictBase, *,  # type: ignore[override]
                 aggregate_probabilities: bool | None = None) -> torch.Tensor | TensorDict:
        """Per-component ``<key>_log_prob`` TensorDict, or their sum (see class doc)."""
        aggregate = composite_lp_aggregate() if aggregate_probabilities is None \
            else aggregate_probabilities
        return self._combine(self._log_probs(sample), "_log_prob", aggregate,
                             sample.batch_size)

    def log_prob_composite(self, sample: TensorDictBase, *,
                           include_sum: bool | None = None) -> TensorDict:
        """The per-component log-probs, whatever :func:`composite_lp_aggregate` says; with
        ``include_sum`` their sum too, at :attr:`log_prob_key`."""
        return self._combine(self._log_probs(sample), "_log_prob", False, sample.batch_size,
                             self.log_prob_key if include_sum else None)

    def _entropies(self, samples_mc: int) -> dict[NestedKey, torch.Tensor]:
        values = {}
        for key, dist in self.dists.items():
            try:
                values[key] = dist.entropy()
            except NotImplementedError:
                draws = dist.rsample((samples_mc,)) if dist.has_rsample \
                    else dist.sample((samples_mc,))
                values[key] = -dist.log_prob(draws).mean(0)
        return values

    def entropy(self, samples_mc: int = 1, *,  # type: ignore[override]
                aggregate_probabilities: bool | None = None,
                include_sum: bool | None = None) -> torch.Tensor | TensorDict:
        """Per-component ``<key>_entropy`` TensorDict (with their sum at
        :attr:`entropy_key` if ``include_sum``), or the sum alone when aggregating;
        components without a closed-form entropy use ``samples_mc`` samples."""
        aggregate = composite_lp_aggregate() if aggregate_probabilities is None \
            else aggregate_probabilities
        return self._combine(self._entropies(samples_mc), "_entropy", aggregate,
                             self.batch_shape, self.entropy_key if include_sum else None)

    def entropy_composite(self, samples_mc: int = 1, *,
                          include_sum: bool | None = None) -> TensorDict:
        """The per-component entropies, whatever :func:`composite_lp_aggregate` says."""
        return self.entropy(samples_mc, aggregate_probabilities=False, include_sum=include_sum)

    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """The per-component log-prob keys."""
        return [_add_suffix(key, "_log_prob") for key in self.dists]

    @property
    def sample_keys(self) -> list[NestedKey]:
        """The keys the samples are written at."""
        return list(self.dists)
