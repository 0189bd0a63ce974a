"""Small helpers of tensordict.nn: global switches (skip-existing, tensor dispatch, composite
log-prob aggregation) and positive mappings.

>>> import torch
>>> from tensordict.nn import mappings
>>> mappings("biased_softplus_1.0")(torch.zeros(2))
tensor([1., 1.])
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.nn import Buffer  # noqa: F401 (upstream exposes it here)

from tensordict import (  # noqa: F401 (upstream names of this module)
    NestedKey,
    make_tensordict,
    unravel_key_list,
)

__all__ = [
    "add_custom_mapping",
    "biased_softplus",
    "composite_lp_aggregate",
    "expln",
    "inv_softplus",
    "make_tensordict",
    "mappings",
    "set_composite_lp_aggregate",
    "set_skip_existing",
    "skip_existing",
]


# -- switches shared by every thread (or local to one) -----------------------------------
_UNSET = object()


class _Switch:
    """A global value with an optional per-thread override."""

    def __init__(self, default: Any) -> None:
        self._thread = threading.local()
        self._any_local = False  # lets get() skip the thread-local lookup
        self.default = default

    @property
    def local(self) -> Any:
        return getattr(self._thread, "value", _UNSET)

    @local.setter
    def local(self, value: Any) -> None:
        self._any_local = True
        self._thread.value = value

    def get(self) -> Any:
        if not self._any_local:
            return self.default
        local = getattr(self._thread, "value", _UNSET)
        return self.default if local is _UNSET else local


class _SwitchContext:
    """Base of the context managers / decorators that set a :class:`_Switch`."""

    _switch: _Switch

    def __init__(self, value: Any, thread_local: bool) -> None:
        self._value = value
        self._thread_local = thread_local
        self._saved: list[tuple[str, Any]] = []

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self) -> _SwitchContext:
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__, _saved=[])
        return out

    def set(self) -> None:
        """Apply the value permanently (without a ``with`` block)."""
        switch = self._switch
        if self._thread_local:
            switch.local = self._value
        else:
            switch.default = self._value

    def __enter__(self) -> None:
        switch = self._switch
        self._saved.append(("local", switch.local) if self._thread_local
                           else ("default", switch.default))
        self.set()

    def __exit__(self, *exc: object) -> None:
        attr, value = self._saved.pop()
        setattr(self._switch, attr, value)


_SKIP_EXISTING = _Switch(False)


def _outputs_present(module: Any, tensordict: Any, in_key_attr: str, out_key_attr: str) -> bool:
    """Whether every out key of ``module`` is in ``tensordict`` and none is also read."""
    out_keys = getattr(module, out_key_attr)
    in_keys = getattr(module, in_key_attr)
    if any(key in in_keys for key in out_keys):
        return False
    return all(tensordict.get(key, None) is not None for key in out_keys if key != "_")


class set_skip_existing(_SwitchContext):  # noqa: N801 (upstream name)
    """Make modules skip their work when all their ``out_keys`` are already present.

    Usable as a context manager or a decorator. Decorating a module's
    ``forward(self, tensordict, ...)`` sets the mode for the call and returns
    ``tensordict`` unchanged when the mode is on and the outputs (read from the attribute
    ``out_key_attr``, none of them an input listed in ``in_key_attr``) are all present;
    ``mode=None`` keeps the current mode (as the built-in modules do). ``None`` is
    not allowed as a context manager.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.nn import TensorDictModule, set_skip_existing
    >>> module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
    >>> td = TensorDict(x=torch.zeros(2), y=torch.full((2,), 5.0), batch_size=[2])
    >>> with set_skip_existing(True):
    ...     module(td)["y"]
    tensor([5., 5.])
    """

    _switch = _SKIP_EXISTING

    def __init__(self, mode: bool | None = True, in_key_attr: str = "in_keys",
                 out_key_attr: str = "out_keys", *, thread_local: bool = False) -> None:
        if mode is not None and not isinstance(mode, bool):
            raise TypeError(f"set_skip_existing mode must be a bool or None, got {mode!r}")
        super().__init__(mode, thread_local)
        self.in_key_attr = in_key_attr
        self.out_key_attr = out_key_attr

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        in_key_attr, out_key_attr = self.in_key_attr, self.out_key_attr

        def run(_self: Any, tensordict: Any, *args: Any, **kwargs: Any) -> Any:
            if _SKIP_EXISTING.get() and _outputs_present(_self, tensordict, in_key_attr,
                                                         out_key_attr):
                return tensordict
            return func(_self, tensordict, *args, **kwargs)

        if self._value is None:
            return functools.wraps(func)(run)

        @functools.wraps(func)
        def wrapper(_self: Any, tensordict: Any, *args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return run(_self, tensordict, *args, **kwargs)

        return wrapper

    def set(self) -> None:
        if self._value is not None:
            super().set()

    def __enter__(self) -> None:
        if self._value is None:
            raise RuntimeError(
                "It seems you are using set_skip_existing as a context manager with ``None`` "
                "input. This behaviour is not allowed."
            )
        super().__enter__()


class _set_skip_existing_None(set_skip_existing):  # noqa: N801 (upstream name)
    """Decorator of a module's ``forward``: skip the call when :func:`skip_existing` is on
    and the module's outputs are all present (the mode itself is left as it is)."""

    def __init__(self) -> None:
        super().__init__(None)


def skip_existing() -> bool:
    """Whether modules currently skip their work when their outputs are present.

    >>> from tensordict.nn import skip_existing
    >>> skip_existing()
    False
    """
    return bool(_SKIP_EXISTING.get())


_DISPATCH = _Switch(True)


def _dispatch_td_nn_modules() -> bool:
    """Whether modules called with tensors instead of a TensorDict build one (see
    :func:`~tensordict.nn.dispatch`)."""
    return bool(_DISPATCH.get())


class _set_dispatch_td_nn_modules(_SwitchContext):  # noqa: N801 (upstream name)
    """Context manager / decorator turning the tensor dispatch of modules on or off: when
    off, ``module(x)`` hands ``x`` to ``forward`` as it is."""

    _switch = _DISPATCH

    def __init__(self, mode: bool) -> None:
        super().__init__(bool(mode), False)


_LP_AGGREGATE = _Switch(False)


def composite_lp_aggregate(nowarn: bool = False) -> bool:
    """Whether composite log-probs (and entropies) are summed into one tensor (default
    ``False``: a TensorDict with one ``<name>_log_prob`` entry per component).

    >>> composite_lp_aggregate()
    False
    """
    return bool(_LP_AGGREGATE.get())


class set_composite_lp_aggregate(_SwitchContext):  # noqa: N801 (upstream name)
    """Context manager / decorator choosing whether composite log-probs are summed;
    ``set_composite_lp_aggregate(mode).set()`` sets it for good (until ``.unset()``).

    >>> with set_composite_lp_aggregate(True):
    ...     composite_lp_aggregate()
    True
    >>> switch = set_composite_lp_aggregate(True)
    >>> switch.set(); composite_lp_aggregate()
    True
    >>> switch.unset(); composite_lp_aggregate()
    False
    """

    _switch = _LP_AGGREGATE

    def __init__(self, mode: bool = True, *, thread_local: bool = False) -> None:
        super().__init__(bool(mode), thread_local)

    def set(self) -> None:
        """Apply the mode for good (:meth:`unset` puts the previous one back)."""
        switch = self._switch
        self._before_set = switch.local if self._thread_local else switch.default
        super().set()

    def unset(self) -> None:
        """Put back the mode that :meth:`set` replaced."""
        if "_before_set" not in self.__dict__:
            raise RuntimeError("set_composite_lp_aggregate.unset() called before set()")
        attr = "local" if self._thread_local else "default"
        setattr(self._switch, attr, self.__dict__.pop("_before_set"))


# -- positive mappings ---------------------------------------------------------------
def inv_softplus(bias: float | torch.Tensor) -> float | torch.Tensor:
    """The inverse of softplus: ``log(exp(bias) - 1)``.

    >>> round(inv_softplus(1.0), 4)
    0.5413
    """
    if isinstance(bias, torch.Tensor):
        return bias.expm1().log()
    return math.log(math.expm1(bias))


class biased_softplus(nn.Module):  # noqa: N801 (upstream name)
    """``softplus(x + b) + min_val`` with ``b`` chosen so that ``f(0) == bias``.

    >>> import torch
    >>> biased_softplus(2.0)(torch.zeros(1))
    tensor([2.])
    """

    def __init__(self, bias: float, min_val: float = 0.01) -> None:
        super().__init__()
        if bias <= min_val:
            raise ValueError(f"biased_softplus needs bias > min_val, got {bias} <= {min_val}")
        self.bias = inv_softplus(bias - min_val)
        self.min_val = min_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.softplus(x + self.bias) + self.min_val


def expln(x: torch.Tensor) -> torch.Tensor:
    """``exp(x)`` for ``x <= 0`` and ``log1p(x) + 1`` above: positive, grows slowly.

    >>> import torch
    >>> expln(torch.tensor([0.0, 1.0]))
    tensor([1.0000, 1.6931])
    """
    return torch.where(x > 0, x.clamp_min(0).log1p() + 1, x.clamp_max(0).exp())


def _identity(x: torch.Tensor) -> torch.Tensor:
    return x


_MAPPINGS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "softplus": nn.functional.softplus,
    "exp": torch.exp,
    "relu": torch.relu,
    "expln": expln,
    "none": _identity,
}


def add_custom_mapping(name: str, mapping: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Register ``mapping`` under ``name`` for :func:`mappings` (and ``scale_mapping=``).

    >>> import torch
    >>> add_custom_mapping("square", torch.square)
    >>> mappings("square")(torch.tensor([3.0]))
    tensor([9.])
    """
    if not callable(mapping):
        raise TypeError(f"mapping {name!r} must be callable, got {type(mapping).__name__}")
    _MAPPINGS[name] = mapping


def mappings(key: str) -> Callable[[torch.Tensor], torch.Tensor]:
    """The positive mapping named ``key``: ``"softplus"``, ``"exp"``, ``"relu"``,
    ``"expln"``, ``"none"``, ``"biased_softplus[_<bias>[_<min>]]"`` or a custom one.

    >>> import torch
    >>> mappings("exp")(torch.zeros(1))
    tensor([1.])
    """
    if key in _MAPPINGS:
        return _MAPPINGS[key]
    if key.startswith("biased_softplus"):
        parts = key.split("_")[2:]
        try:
            numbers = [float(part) for part in parts]
        except ValueError:
            raise NotImplementedError(f"Unknown mapping {key}") from None
        if len(numbers) > 2:
            raise NotImplementedError(f"Unknown mapping {key}")
        return biased_softplus(*(numbers or [1.0]))
    raise NotImplementedError(
        f"Unknown mapping {key}; known: {sorted(_MAPPINGS)} and biased_softplus_<bias>_<min>"
    )
