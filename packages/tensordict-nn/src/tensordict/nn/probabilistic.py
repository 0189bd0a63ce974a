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

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import distributions as D

from tensordict import (  # noqa: F401 (upstream names of this module)
    NestedKey,
    TensorDict,
    TensorDictBase,
    is_non_tensor,
    is_tensor_collection,
    unravel_key,
)
from tensordict.nn.common import (
    TensorDictModuleBase,
    _module_repr,
    _normalize_keys,
    _set_entry,
    dispatch,
)
from tensordict.nn.distributions.composite import CompositeDistribution, _add_suffix
from tensordict.nn.distributions.continuous import Delta
from tensordict.nn.distributions.discrete import OneHotCategorical  # noqa: F401
from tensordict.nn.distributions.truncated_normal import (  # noqa: F401
    TruncatedNormal,
    TruncatedStandardNormal,
)
from tensordict.nn.distributions.utils import draw
from tensordict.nn.interaction import (
    _INTERACTION,
    InteractionType,
    interaction_type,
    set_interaction_type,
)
from tensordict.nn.sequence import TensorDictSequential
from tensordict.nn.utils import (  # noqa: F401 (set_composite_lp_aggregate: upstream name)
    _set_skip_existing_None,
    composite_lp_aggregate,
    set_composite_lp_aggregate,
)
from tensordict.utils import acts_as_tensordict

__all__ = [
    "InteractionType",
    "ProbabilisticTensorDictModule",
    "ProbabilisticTensorDictSequential",
    "interaction_type",
    "set_interaction_type",
]


class MissingParameterError(KeyError, ValueError):
    """A distribution parameter the input TensorDict lacks: a KeyError naming the key, and
    the ValueError upstream raises for it."""


# -- random generators -------------------------------------------------------------------
@contextlib.contextmanager
def _use_generator(generator: torch.Generator | None) -> Iterator[None]:
    """Draw the default random numbers of ``generator``'s device from ``generator`` inside
    the block (which advances it); the global generator is left as it was.

    >>> import torch
    >>> with _use_generator(torch.Generator().manual_seed(0)):
    ...     inside = torch.randn(2)
    >>> torch.equal(inside, torch.randn(2, generator=torch.Generator().manual_seed(0)))
    True
    """
    if generator is None:
        yield
        return
    device = generator.device
    if device.type == "cpu":
        get_state, set_state = torch.get_rng_state, torch.set_rng_state
    else:
        module = getattr(torch, device.type)
        get_state = functools.partial(module.get_rng_state, device)
        set_state = functools.partial(module.set_rng_state, device=device)
    saved = get_state()
    set_state(generator.get_state())
    try:
        yield
    finally:
        generator.set_state(get_state())
        set_state(saved)


def _seed_generator(seed: Any, key: NestedKey) -> torch.Generator:
    """A generator seeded with ``seed`` (an int or a one-element integer tensor)."""
    if isinstance(seed, torch.Tensor):
        if seed.numel() != 1:
            raise ValueError(f"Generator key {key!r} resolved to a tensor of {seed.numel()} "
                             "elements; expected a scalar seed.")
        return torch.Generator(seed.device).manual_seed(int(seed.item()))
    return torch.Generator().manual_seed(int(seed))


def _composite_sample_keys(distribution_kwargs: dict[str, Any]) -> list[NestedKey]:
    """The sample keys of the composite distribution described by ``distribution_kwargs``
    (``["_"]`` when it has no ``distribution_map``)."""
    names = {unravel_key(k): v for k, v in (distribution_kwargs.get("name_map") or {}).items()}
    keys = [unravel_key(key) for key in distribution_kwargs.get("distribution_map", ())]
    return [names.get(key, key) for key in keys] or ["_"]


def _is_composite(distribution_class: Any) -> bool:
    """Whether ``distribution_class`` builds a :class:`CompositeDistribution` (a subclass,
    or a ``functools.partial`` of one)."""
    while isinstance(distribution_class, functools.partial):
        distribution_class = distribution_class.func
    return isinstance(distribution_class, type) and issubclass(distribution_class,
                                                               CompositeDistribution)


# -- the module --------------------------------------------------------------------------
class ProbabilisticTensorDictModule(TensorDictModuleBase):
    """Build ``distribution_class(**{kwarg: td[key]}, **distribution_kwargs)`` from the
    ``in_keys`` and write a value of it to ``out_keys``.

    Args:
        in_keys: the distribution's parameters: a list of keys (the last part of each
            key is the keyword) or a dict ``{kwarg: key}``.
        out_keys: where the value goes; if omitted, the keys of a
            :class:`CompositeDistribution`'s ``name_map`` / ``distribution_map`` (given in
            ``distribution_kwargs``), else ``["_"]`` (nowhere).
        default_interaction_type: how the value is drawn outside of a
            :class:`set_interaction_type` block (``DETERMINISTIC``: the distribution's
            ``deterministic_sample``, the mode of a discrete one, else its mean).
        return_log_prob: also write the value's log-prob (at :attr:`log_prob_keys`).
        log_prob_keys / log_prob_key: where log-probs go (default
            ``<out_key>_log_prob``; ``"sample_log_prob"`` for a composite distribution
            while :func:`composite_lp_aggregate` is on).
        cache_dist: keep the last distribution built as ``module._dist``.
        n_empirical_estimate: samples used when a mode/median/mean has no closed form.
        num_samples: draw this many values (an int or a shape): the result is a new
            TensorDict with these leading batch dims.
        generator: random draws use this ``torch.Generator`` (an int seeds a new one),
            or the generator / seed stored in the input at this key (a seed stored there
            is replaced by a fresh one drawn from it after sampling).

    >>> import torch
    >>> from torch.distributions import Categorical
    >>> from tensordict import TensorDict
    >>> module = ProbabilisticTensorDictModule(
    ...     in_keys=["logits"], out_keys=["a"], distribution_class=Categorical)
    >>> module(TensorDict(logits=torch.tensor([[0.0, 3.0]]), batch_size=[1]))["a"]
    tensor([1])
    """

    _CHANGE_IN_C_LP_A = (
        "The value returned by composite_lp_aggregate changed between init of {} and its "
        "execution ({} -> {}). Make sure the mode matches."
    )

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
        generator: torch.Generator | int | NestedKey | None = None,
    ) -> None:
        super().__init__()
        distribution_kwargs = distribution_kwargs if distribution_kwargs is not None else {}
        composite = _is_composite(distribution_class)
        dist_keys = None
        if isinstance(in_keys, Mapping):
            dist_keys, in_keys = tuple(in_keys), list(in_keys.values())
        self.in_keys = in_keys
        self.dist_keys: Any = list(self.in_keys) if dist_keys is None else dist_keys
        if out_keys is None:
            out_keys = _composite_sample_keys(distribution_kwargs) if composite else ["_"]
        self._out_keys = _normalize_keys(out_keys, "out_keys")
        self._composite_lp_aggreate_at_init = composite_lp_aggregate(nowarn=True)
        self._set_log_prob_keys(log_prob_keys, log_prob_key)
        if isinstance(default_interaction_type, str):
            default_interaction_type = InteractionType.from_str(default_interaction_type)
        self.default_interaction_type = default_interaction_type
        self.distribution_class = distribution_class
        self.distribution_kwargs = distribution_kwargs
        self.n_empirical_estimate = n_empirical_estimate
        self._dist: D.Distribution | None = None
        self.cache_dist = cache_dist
        self.return_log_prob = return_log_prob
        if isinstance(num_samples, int):
            num_samples = torch.Size([num_samples])
        self.num_samples = num_samples
        self._set_generator(generator)

    def _set_log_prob_keys(self, log_prob_keys: list[NestedKey] | None,
                           log_prob_key: NestedKey | None) -> None:
        if log_prob_keys is not None and log_prob_key is not None:
            raise ValueError("pass log_prob_keys or log_prob_key, not both")
        if log_prob_keys is not None and self._composite_lp_aggreate_at_init:
            raise RuntimeError(
                "composite_lp_aggregate is set to True but log_prob_keys were passed. When "
                "composite_lp_aggregate() returns ``True``, log_prob_key must be used instead."
            )
        self._log_prob_keys = (None if log_prob_keys is None
                               else _normalize_keys(log_prob_keys, "log_prob_keys"))
        self._log_prob_key = None if log_prob_key is None else unravel_key(log_prob_key)

    def _set_generator(self, generator: Any) -> None:
        self._generator: torch.Generator | None = None
        self._generator_key: NestedKey | None = None
        if isinstance(generator, torch.Generator):
            self._generator = generator
        elif isinstance(generator, int) and not isinstance(generator, bool):
            self._generator = torch.Generator().manual_seed(generator)
        elif isinstance(generator, (str, tuple)):
            self._generator_key = unravel_key(generator)
        elif generator is not None:
            raise TypeError("generator must be a torch.Generator, int, NestedKey, or None; "
                            f"got {type(generator).__name__}.")

    # -- keys --------------------------------------------------------------------------
    @property
    def dist_params_keys(self) -> list[NestedKey]:
        """The keys the distribution's parameters are read from."""
        return self.in_keys

    @property
    def dist_sample_keys(self) -> list[NestedKey]:
        """The keys the value is written at (the out keys without the log-prob keys)."""
        return self._out_keys

    @property
    def out_keys_source(self) -> list[NestedKey]:
        """The sample keys, then the log-prob keys when ``return_log_prob``."""
        if self.return_log_prob:
            return [*self._out_keys, *self.log_prob_keys]
        return list(self._out_keys)

    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """Where log-probs are written: the keys given, else ``<sample key>_log_prob``
        per sample key; while :func:`composite_lp_aggregate` is on, one entry
        (``log_prob_key`` or ``"sample_log_prob"``, a sum for a composite distribution)."""
        aggregate = composite_lp_aggregate(nowarn=True)
        if aggregate != self._composite_lp_aggreate_at_init:
            raise RuntimeError(
                f"composite_lp_aggregate is set to `{aggregate}`, but the class was "
                f"instantiated with `{self._composite_lp_aggreate_at_init}` which may affect "
                "the log_prob_keys property."
            )
        if aggregate:
            return [self._log_prob_key or "sample_log_prob"]
        if self._log_prob_keys is not None:
            return list(self._log_prob_keys)
        if self._log_prob_key is not None:
            return [self._log_prob_key]
        return [_add_suffix(key, "_log_prob") for key in self._out_keys]

    @property
    def log_prob_key(self) -> NestedKey:
        """The log-prob key when there is only one (else see :attr:`log_prob_keys`)."""
        keys = self.log_prob_keys
        if len(keys) != 1:
            raise RuntimeError(
                "composite_lp_aggregate is set to ``False``, hence "
                f"{type(self).__name__}.log_prob_key cannot be accessed unless there is one "
                f"and only one element in log_prob_keys (got log_prob_keys={keys}). When "
                "composite_lp_aggregate() returns ``False``, try to use "
                f"{type(self).__name__}.log_prob_keys instead."
            )
        return keys[0]

    def _update_td_lp(self, lp: TensorDictBase) -> None:
        """Move the per-component log-probs of ``lp`` (``<key>_log_prob``) to the custom
        :attr:`log_prob_keys`, in place."""
        for sample_key, lp_key in zip(self.dist_sample_keys, self.log_prob_keys,
                                      strict=True):
            default = _add_suffix(sample_key, "_log_prob")
            if default != lp_key and default in lp.keys(True, True):
                lp.rename_key_(default, lp_key)

    # -- distribution ------------------------------------------------------------------
    def get_dist(self, tensordict: TensorDictBase) -> D.Distribution:
        """The distribution built from ``tensordict``'s parameter entries."""
        kwargs = dict(self.distribution_kwargs)
        names = self.dist_keys
        for name, key in zip(names, self.in_keys):
            value = tensordict.get(key, None)
            if value is None:
                raise MissingParameterError(
                    f"{type(self).__name__}: the distribution parameter {key!r} is missing "
                    f"(keys: {list(tensordict.keys(True, True))})"
                )
            kwargs[name if isinstance(name, str) else name[-1]] = value
        try:
            dist = self.distribution_class(**kwargs)
        except TypeError as err:
            raise TypeError(
                f"distribution keywords and tensordict keys indicated by {type(self).__name__}"
                f".dist_keys must match. Got this error message: \n    {err}\nwith "
                f"dist_keys={list(names)}"
            ) from err
        if self.cache_dist:
            self._dist = dist
        return dist

    build_dist_from_params = get_dist

    def log_prob(self, tensordict: TensorDictBase, *,
                 dist: D.Distribution | None = None) -> torch.Tensor | TensorDictBase:
        """The log-prob of the sample stored in ``tensordict`` (a TensorDict of
        per-component log-probs for a composite distribution, unless aggregated)."""
        dist = self.get_dist(tensordict) if dist is None else dist
        if isinstance(dist, CompositeDistribution):
            log_prob = dist.log_prob(tensordict)
            if acts_as_tensordict(log_prob):
                self._update_td_lp(log_prob)
            return log_prob
        return dist.log_prob(tensordict.get(self.dist_sample_keys[0]))

    def _sample_shape(self) -> torch.Size:
        num_samples = self.num_samples
        return torch.Size([num_samples] if isinstance(num_samples, int) else num_samples or ())

    def _dist_sample(self, dist: D.Distribution, interaction_type: InteractionType | None = None,
                     *, generator: torch.Generator | None = None) -> Any:
        """A value of ``dist`` for ``interaction_type`` (default: the current one, else
        :attr:`default_interaction_type`), ``num_samples`` times, drawn from
        ``generator`` if given."""
        if interaction_type is None:
            interaction_type = _INTERACTION.get() or self.default_interaction_type
        args = (dist, interaction_type, self.n_empirical_estimate, self._sample_shape())
        if generator is None:  # the global generator: no state to swap
            return draw(*args)
        with _use_generator(generator):
            return draw(*args)

    def _resolve_generator(self, tensordict: TensorDictBase
                           ) -> tuple[torch.Generator | None,
                                      Callable[[torch.Generator], None] | None]:
        """The generator to draw from for ``tensordict`` and, when it was seeded from a
        seed stored in ``tensordict``, the function writing the next seed back."""
        key = self._generator_key
        if key is None:
            return self._generator, None
        value = tensordict.get(key, None)
        if value is None:
            return None, None
        if is_non_tensor(value):
            value = value.data
        if isinstance(value, torch.Generator):
            return value, None
        if isinstance(value, bool) or not isinstance(value, (int, torch.Tensor)):
            raise TypeError(f"Generator key {key!r} resolved to a value of type "
                            f"{type(value).__name__}; expected torch.Generator, int, or "
                            "scalar Tensor.")
        generator = _seed_generator(value, key)

        def writeback(gen: torch.Generator) -> None:
            seed = int(torch.randint(0, 2**62, (1,), generator=gen))
            if isinstance(value, torch.Tensor):
                tensordict.set(key, torch.full_like(value, seed))
            else:
                tensordict.set_non_tensor(key, seed)

        return generator, writeback

    @dispatch(auto_batch_size=False)
    @_set_skip_existing_None()
    def forward(self, tensordict: TensorDictBase | None = None,
                tensordict_out: TensorDictBase | None = None,
                _requires_sample: bool = True) -> TensorDictBase:
        """Build the distribution and write a value (and its log-prob) of it."""
        if tensordict_out is None:
            tensordict_out = tensordict
        dist = self.get_dist(tensordict)
        if not _requires_sample:  # draw nothing
            return self._log_prob_of_present(tensordict, tensordict_out, dist)
        generator, writeback = self._resolve_generator(tensordict)
        sample = self._dist_sample(dist, generator=generator)
        if writeback is not None:
            writeback(generator)
        shape = self._sample_shape()
        if shape:
            tensordict_out = tensordict_out.expand(*shape, *tensordict_out.batch_size)
        if acts_as_tensordict(sample):
            tensordict_out.update(sample)
        else:
            values = sample if isinstance(sample, tuple) else (sample,)
            for key, value in zip(self.dist_sample_keys, values):
                if key != "_":
                    _set_entry(tensordict_out, key, value)
        if self.return_log_prob:
            self._write_log_prob(tensordict_out, dist, sample)
        return tensordict_out

    def _log_prob_of_present(self, tensordict: TensorDictBase, out: TensorDictBase,
                             dist: D.Distribution) -> TensorDictBase:
        """Write into ``out``, if :attr:`return_log_prob`, the log-prob of the values
        ``tensordict`` holds at the sample keys (as upstream, when nothing is drawn)."""
        if self.return_log_prob:
            values = tuple(tensordict.get(key, None) for key in self.dist_sample_keys)
            if all(value is not None for value in values):
                self._write_log_prob(out, dist, values if len(values) > 1 else values[0])
        return out

    def _write_log_prob(self, out: TensorDictBase, dist: D.Distribution, sample: Any) -> None:
        if not isinstance(dist, CompositeDistribution):
            values = sample if isinstance(sample, tuple) else (sample,)
            _set_entry(out, self.log_prob_keys[0], dist.log_prob(*values))
            return
        aggregate = composite_lp_aggregate(nowarn=True)
        log_prob = dist.log_prob_composite(sample, include_sum=aggregate)
        if aggregate:  # the per-component log-probs and their sum
            out.set(self.log_prob_key, log_prob.pop(dist.log_prob_key))
        else:
            self._update_td_lp(log_prob)
        out.update(log_prob)

    def __repr__(self) -> str:
        return _module_repr(self, [
            ("in_keys", self.in_keys), ("out_keys", self.out_keys),
            ("distribution_class", self.distribution_class),
            ("distribution_kwargs", self.distribution_kwargs),
            ("default_interaction_type", str(self.default_interaction_type)),
            ("num_samples", self.num_samples),
        ])


def _is_probabilistic(module: Any) -> bool:
    """Whether ``module`` gives a distribution: a probabilistic module or sequence, as
    upstream decides (by class, not by a ``get_dist`` a wrapper may forward)."""
    return isinstance(module, (ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential))


class ProbabilisticTensorDictSequential(TensorDictSequential):
    """A sequence whose last module is probabilistic: the earlier ones compute the
    distribution's parameters.

    With ``return_composite=True`` (the default when the last module is not
    probabilistic or when several are), :meth:`get_dist` runs the whole sequence (on a
    copy of the input) and returns a
    :class:`~tensordict.nn.CompositeDistribution` of every probabilistic module's
    distribution, keyed by their sample keys (each module's value, drawn as the
    current interaction type says, feeds the next modules); :meth:`log_prob` then
    gives the per-sample ``<key>_log_prob`` TensorDict (or their sum while
    :func:`~tensordict.nn.composite_lp_aggregate` is on).

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
        items = list(modules[0].values()) if len(modules) == 1 and isinstance(
            modules[0], Mapping) else list(modules)
        last_is_probabilistic = bool(items) and _is_probabilistic(items[-1])
        if return_composite is None:
            return_composite = not last_is_probabilistic or \
                sum(map(_is_probabilistic, items)) > 1
        if not return_composite and not last_is_probabilistic:
            raise TypeError(
                "The final module passed to ProbabilisticTensorDictSequential must be an "
                "instance of ProbabilisticTensorDictModule or another "
                "ProbabilisticTensorDictSequential (unless return_composite is set to "
                f"``True``), got {type(items[-1]).__name__ if items else None}."
            )
        # subclasses mixing in other sequences (TorchRL's) take only these arguments
        options: dict[str, Any] = {"partial_tolerant": partial_tolerant}
        if selected_out_keys is not None:
            options["selected_out_keys"] = selected_out_keys
        if inplace is not None:
            options["inplace"] = inplace
        super().__init__(*modules, **options)
        self.return_composite = return_composite

    @property
    def _last_module(self) -> Any:
        """The probabilistic module."""
        return list(self._module_iter())[-1]

    def _probabilistic_modules(self) -> list[Any]:
        """The probabilistic modules, last first (the order of the composite keys)."""
        found = [module for module in self._module_iter() if _is_probabilistic(module)]
        if not found:
            raise RuntimeError(f"No distribution module found in {self}.")
        return found[::-1]

    def _gathered(self, name: str) -> list[NestedKey]:
        """The ``name`` keys of the probabilistic module, of all of them if composite."""
        if not self.return_composite:
            return getattr(self._last_module, name)
        return [key for module in self._probabilistic_modules()
                for key in getattr(module, name)]

    @property
    def det_part(self) -> TensorDictSequential:
        """The modules before the probabilistic one."""
        return TensorDictSequential(*list(self._module_iter())[:-1])

    @property
    def default_interaction_type(self) -> InteractionType:
        """The default interaction type of the (last) probabilistic module."""
        return self._probabilistic_modules()[0].default_interaction_type

    @property
    def dist_params_keys(self) -> list[NestedKey]:
        """The parameter keys of the probabilistic module (all of them, last first, if
        composite)."""
        return self._gathered("dist_params_keys")

    @property
    def dist_sample_keys(self) -> list[NestedKey]:
        """The sample keys of the probabilistic module (all of them, last first, if
        composite)."""
        return self._gathered("dist_sample_keys")

    @property
    def num_samples(self) -> int | torch.Size | None:
        """``num_samples`` of the probabilistic module."""
        return self._last_module.num_samples

    @property
    def log_prob_keys(self) -> list[NestedKey]:
        """The log-prob keys of the probabilistic module (all of them, last first, if
        composite)."""
        return self._gathered("log_prob_keys")

    @property
    def log_prob_key(self) -> NestedKey:
        """The log-prob key of the probabilistic module."""
        return self._last_module.log_prob_key

    def _dist_sample(self, dist: D.Distribution, interaction_type: InteractionType | None = None,
                     *, generator: torch.Generator | None = None) -> Any:
        """See :meth:`ProbabilisticTensorDictModule._dist_sample`."""
        return self._last_module._dist_sample(dist, interaction_type, generator=generator)

    def get_dist_params(self, tensordict: TensorDictBase,
                        tensordict_out: TensorDictBase | None = None,
                        **kwargs: Any) -> TensorDictBase:
        """Run the deterministic part (writing the distribution's parameters), under
        the :attr:`default_interaction_type` unless one is set."""
        if tensordict_out is not None:
            tensordict_out.update(tensordict)
            tensordict = tensordict_out
        with self._interaction():
            for module in list(self._module_iter())[:-1]:
                out = module(tensordict, **kwargs)
                if out is not None:
                    tensordict = out
        return tensordict

    def _interaction(self) -> contextlib.AbstractContextManager[Any]:
        """The :attr:`default_interaction_type`, set while the modules run unless one is."""
        if _INTERACTION.get() is not None:
            return contextlib.nullcontext()
        return set_interaction_type(self.default_interaction_type)

    def get_dist(self, tensordict: TensorDictBase,
                 tensordict_out: TensorDictBase | None = None, **kwargs: Any) -> D.Distribution:
        """The distribution for ``tensordict`` (the deterministic part is run first); a
        composite of every probabilistic module's if ``return_composite``."""
        if self.return_composite:
            return self._composite_dist(tensordict, tensordict_out, **kwargs)
        return self._last_module.get_dist(
            self.get_dist_params(tensordict, tensordict_out, **kwargs))

    def _composite_dist(self, tensordict: TensorDictBase,
                        tensordict_out: TensorDictBase | None = None,
                        **kwargs: Any) -> CompositeDistribution:
        """Run the sequence on a copy of ``tensordict``: each probabilistic module gives
        its distribution and a value of it, written for the modules after it."""
        self._probabilistic_modules()  # raises when there is none
        td = tensordict.copy() if tensordict_out is None else \
            tensordict_out.update(tensordict)
        dists: dict[NestedKey, D.Distribution] = {}
        for module in self._module_iter():
            if not _is_probabilistic(module):
                td = module(td, **kwargs)
                continue
            dist = module.get_dist(td)
            sample = module._dist_sample(dist)
            if isinstance(dist, CompositeDistribution):
                dists.update(dist.dists)
                td.update(sample)
                continue
            values = sample if isinstance(sample, tuple) else (sample,)
            for key, value in zip(module.dist_sample_keys, values):
                dists[key] = dist
                _set_entry(td, key, value)
        return CompositeDistribution.from_distributions(td, dists)

    def build_dist_from_params(self, tensordict: TensorDictBase) -> D.Distribution:
        """The distribution from parameters already in ``tensordict``."""
        return self._last_module.get_dist(tensordict)

    def log_prob(self, tensordict: TensorDictBase,
                 tensordict_out: TensorDictBase | None = None, *,
                 dist: D.Distribution | None = None,
                 **kwargs: Any) -> torch.Tensor | TensorDictBase:
        """The log-prob of the sample stored in ``tensordict``."""
        if dist is None:
            dist = self.get_dist(tensordict, tensordict_out, **kwargs)
        if self.return_composite:
            return dist.log_prob(tensordict)
        return self._last_module.log_prob(tensordict, dist=dist)

    @dispatch(auto_batch_size=False)
    @_set_skip_existing_None()
    def forward(self, tensordict: TensorDictBase | None = None,
                tensordict_out: TensorDictBase | None = None,
                _requires_sample: bool | None = None, **kwargs: Any) -> TensorDictBase:
        """Run the sequence (``_requires_sample=False``: stop before drawing), under the
        :attr:`default_interaction_type` unless one is set. As upstream, a value that a
        module before the probabilistic one writes at its sample keys is kept (only its
        log-prob is written: the last module runs with ``_requires_sample=False``).

        >>> from torch.distributions import Normal
        >>> from tensordict.nn import TensorDictModule
        >>> seq = ProbabilisticTensorDictSequential(
        ...     TensorDictModule(lambda x: (x, x.exp(), x + 1), ["obs"], ["loc", "scale", "act"]),
        ...     ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["act"],
        ...                                   distribution_class=Normal))
        >>> seq(TensorDict(obs=torch.zeros(2), batch_size=[2]))["act"]
        tensor([1., 1.])
        """
        with self._interaction():
            if _requires_sample is None:
                if not self._samples_written_before():
                    return self._run_modules(tensordict, tensordict_out, **kwargs)
                _requires_sample = False
            td = self.get_dist_params(tensordict, tensordict_out, **kwargs)
            return self._last_module(td, _requires_sample=_requires_sample)

    def _samples_written_before(self) -> bool:
        """Whether the modules before the (single) probabilistic one write every sample
        key of it."""
        if self.return_composite:
            return False
        *before, last = self._module_iter()
        written = {unravel_key(key) for module in before
                   for key in getattr(module, "out_keys", ())}
        return all(unravel_key(key) in written for key in last.dist_sample_keys)

    def _rebuild(self, modules: list[Any]) -> TensorDictSequential:
        items = list(modules[0].values()) if modules and isinstance(modules[0], Mapping) \
            else modules
        if items and _is_probabilistic(items[-1]):
            return ProbabilisticTensorDictSequential(
                *modules, partial_tolerant=self.partial_tolerant, inplace=self.inplace)
        return super()._rebuild(modules)
