"""Dtype casts that honour the class option ``cast_filter``.

``cast_filter(key, value) -> bool`` (``key`` the nested key as a tuple of str) selects the
tensor leaves a dtype cast applies to, in ``to(dtype)`` and in the shorthands
(``float()``, ``double()``...). A ``cast_filter`` given to the call overrides the class
option, and ``cast_filter=None`` there casts every leaf.

Example:
    >>> import torch
    >>> from tensordict import tensorclass
    >>> @tensorclass(cast_filter=lambda key, value: value.is_floating_point())
    ... class Obs:
    ...     pixels: torch.Tensor
    ...     step: torch.Tensor
    >>> obs = Obs(pixels=torch.zeros(2), step=torch.zeros(2, dtype=torch.long), batch_size=[2])
    >>> half = obs.to(torch.float16)
    >>> half.pixels.dtype, half.step.dtype
    (torch.float16, torch.int64)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tensordict import TensorDict
from tensordict.tensorclasses._forward import method

_UNSET: Any = object()
#: The dtype shorthands of TensorDict and the dtype each one casts to.
SHORTHANDS = {"float": torch.float32, "double": torch.float64, "half": torch.float16,
              "bfloat16": torch.bfloat16, "int": torch.int32, "bool": torch.bool}


def _split_dtype(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, tuple, dict]:
    dtype = kwargs.pop("dtype", None)
    rest = []
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        else:
            rest.append(arg)
    return dtype, tuple(rest), kwargs


def to(self: Any, *args: Any, cast_filter: Any = _UNSET, **kwargs: Any) -> Any:
    """Like ``TensorDict.to``; a dtype cast only reaches the leaves the cast filter keeps
    (the call's ``cast_filter``, else the class option)."""
    keep = type(self)._tc_cast_filter if cast_filter is _UNSET else cast_filter
    dtype, rest, rest_kwargs = _split_dtype(args, dict(kwargs))
    if keep is None or dtype is None:
        return _forward_to(self, *args, **kwargs)
    moved = _forward_to(self, *rest, **rest_kwargs) if rest or rest_kwargs else self

    def cast(key: Any, x: torch.Tensor) -> torch.Tensor:  # the filter sees tuple keys
        return x.to(dtype) if keep(key if isinstance(key, tuple) else (key,), x) else x

    return moved.named_apply(cast, nested_keys=True)


_forward_to = method("to")


def _shorthand(name: str, dtype: torch.dtype) -> Callable[..., Any]:
    def cast(self: Any, *, cast_filter: Any = _UNSET) -> Any:
        return to(self, dtype, cast_filter=cast_filter)

    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"The instance with its tensors cast to {dtype} (see ``cast_filter``)."
    return cast


def install_casts(base: type) -> None:
    """Give ``base`` ``to`` and the dtype shorthands TensorDict has, filter-aware."""
    base.to = to  # type: ignore[attr-defined]
    for name, dtype in SHORTHANDS.items():
        if hasattr(TensorDict, name):
            setattr(base, name, _shorthand(name, dtype))
