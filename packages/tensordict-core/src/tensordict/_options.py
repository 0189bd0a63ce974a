"""Global switches, each usable as a call, a context manager or a decorator.

Example:
    >>> import tensordict
    >>> with tensordict.set_lazy_legacy(True):
    ...     tensordict.lazy_legacy()
    True
    >>> tensordict.lazy_legacy()
    False
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

_STATE: dict[str, Any] = {
    "lazy_legacy": False,
    "list_to_stack": True,
    "get_defaults_to_none": True,
    "capture_non_tensor_stack": False,
    "printoptions": {"compact": True},
}


class _Switch:
    """Sets one option now; restores the previous value when used as a context."""

    def __init__(self, name: str, value: Any) -> None:
        self._name, self._value = name, value
        self._previous = _STATE[name]
        _STATE[name] = value

    def __enter__(self) -> _Switch:
        return self

    def __exit__(self, *exc: object) -> None:
        _STATE[self._name] = self._previous

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator use: the option holds only while ``func`` runs."""
        _STATE[self._name] = self._previous
        name, value = self._name, self._value

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with _Switch(name, value):
                return func(*args, **kwargs)

        return wrapper


def set_lazy_legacy(mode: bool = True) -> _Switch:
    """Make ``torch.stack`` of TensorDicts lazy, as in tensordict releases before 0.5."""
    return _Switch("lazy_legacy", bool(mode))


def lazy_legacy() -> bool:
    """Whether ``torch.stack`` of TensorDicts gives a lazy stack."""
    return _STATE["lazy_legacy"]


def set_list_to_stack(mode: bool = True) -> _Switch:
    """Whether a list written to a batched key becomes a per-element stack."""
    return _Switch("list_to_stack", bool(mode))


def list_to_stack() -> bool:
    """Whether a list written to a batched key becomes a per-element stack."""
    return _STATE["list_to_stack"]


def set_get_defaults_to_none(mode: bool = True) -> _Switch:
    """Whether ``td.get(missing)`` returns None (True) or raises KeyError (False)."""
    return _Switch("get_defaults_to_none", bool(mode))


def get_defaults_to_none() -> bool:
    """Whether ``td.get(missing)`` returns None."""
    return _STATE["get_defaults_to_none"]


def set_capture_non_tensor_stack(mode: bool = True) -> _Switch:
    """Whether stacking equal non-tensor values keeps a single value."""
    return _Switch("capture_non_tensor_stack", bool(mode))


def capture_non_tensor_stack() -> bool:
    """Whether stacking equal non-tensor values keeps a single value."""
    return _STATE["capture_non_tensor_stack"]


def set_printoptions(*, compact: bool | None = None) -> _Switch:
    """Choose the repr layout: compact (default) or the verbose multi-line one.

    >>> import torch, tensordict
    >>> td = tensordict.TensorDict(a=torch.zeros(2))
    >>> with tensordict.set_printoptions(compact=False):
    ...     print(td)
    TensorDict(
        fields={
            a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},
        batch_size=torch.Size([]),
        device=None,
        is_shared=False)
    """
    options = dict(_STATE["printoptions"])
    if compact is not None:
        options["compact"] = bool(compact)
    return _Switch("printoptions", options)


def get_printoptions() -> dict[str, Any]:
    """The current repr options."""
    return dict(_STATE["printoptions"])
