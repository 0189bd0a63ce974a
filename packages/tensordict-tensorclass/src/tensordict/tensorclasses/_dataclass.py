"""``from_dataclass``: a dataclass type as a tensorclass type, an instance as an instance.

Example:
    >>> import dataclasses, torch
    >>> @dataclasses.dataclass
    ... class Obs:
    ...     pixels: torch.Tensor
    ...     tag: str = "cam"
    >>> ObsTC = from_dataclass(Obs)
    >>> ObsTC.__name__, ObsTC(torch.zeros(4, 3), batch_size=[4]).tag
    ('Obs_tc', 'cam')
    >>> from_dataclass(Obs(torch.zeros(4, 3)), auto_batch_size=True).batch_size
    torch.Size([4, 3])
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import torch

from tensordict import is_tensorclass
from tensordict.tensorclasses import _fields
from tensordict.tensorclasses._build import tensorclass


def _class_flags(frozen: bool, autocast: bool, nocast: bool, shadow: bool,
                 tensor_only: bool) -> dict[str, bool]:
    """The ``@tensorclass`` options; exclusive ones warn (as upstream) and the one that
    wins is kept: ``tensor_only`` over the casts, ``autocast`` over ``nocast``."""
    if (autocast and nocast) or (tensor_only and (autocast or nocast)):
        warnings.warn(
            f"from_dataclass() got autocast={autocast}, nocast={nocast} and "
            f"tensor_only={tensor_only}, flags that @tensorclass rejects as exclusive. "
            "Starting with TensorDict 0.17, the default will change to raising the "
            "TypeError that @tensorclass raises.",
            FutureWarning,
            stacklevel=3,
        )
        nocast = nocast and not (autocast or tensor_only)
        autocast = autocast and not tensor_only
    return {"frozen": frozen, "autocast": autocast, "nocast": nocast, "shadow": shadow,
            "tensor_only": tensor_only}


def _new_tensorclass(cls: type, flags: dict[str, bool]) -> type:
    """A new tensorclass ``<name>_tc`` with the fields (not the methods) of ``cls``."""
    fields = dataclasses.fields(cls)
    name = f"{cls.__name__}_tc"
    namespace: dict[str, Any] = {
        "__module__": cls.__module__, "__qualname__": name,
        "__annotations__": {f.name: f.type for f in fields},
    }
    for f in fields:
        namespace[f.name] = dataclasses.field(
            default=f.default, default_factory=f.default_factory, init=f.init, repr=f.repr,
            hash=f.hash, compare=f.compare, metadata=f.metadata, kw_only=f.kw_only)
    return tensorclass(type(name, (), namespace), **flags)


def from_dataclass(
    obj: Any,
    *,
    dest_cls: type | None = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    batch_size: torch.Size | None = None,
    frozen: bool = False,
    autocast: bool = False,
    nocast: bool = False,
    inplace: bool = False,
    shadow: bool = False,
    tensor_only: bool = False,
    device: torch.device | None = None,
) -> Any:
    """Convert a dataclass type to a tensorclass type, or an instance to an instance.

    For a type, the result is a new tensorclass ``<name>_tc`` with the same fields (a
    type that is already a tensorclass comes back as it is). For an instance, the
    result is an instance of ``dest_cls``, else of a new ``<name>_tc``, holding a copy
    of the fields (``dataclasses.asdict``: nested dataclasses become dicts).

    Args:
        obj: the dataclass type or instance.
        dest_cls: for an instance, the tensorclass to build (the flags are then unused).
        auto_batch_size: for an instance, the batch size is the longest leading shape
            all its tensors share (at most ``batch_dims`` dims). Exclusive with
            ``batch_size``.
        batch_dims: with ``auto_batch_size``, the most batch dims (ignored otherwise,
            with a FutureWarning).
        batch_size: for an instance, the batch size of the result.
        frozen, autocast, nocast, shadow, tensor_only: the ``@tensorclass`` options of
            the new class (exclusive combinations warn).
        inplace: for a type, the tensorclass keeps the name of ``obj`` (tensorclasses
            here derive from a base, so the result is a new class, never ``obj``).
        device: for an instance, the device of the result.

    >>> import dataclasses, torch
    >>> @dataclasses.dataclass
    ... class X:
    ...     a: torch.Tensor
    ...     b: str = "x"
    >>> from_dataclass(X(torch.zeros(2)), batch_size=[2])
    X_tc(batch_size=[2], fields={a: f32[], b: str})
    """
    if isinstance(obj, type):
        if is_tensorclass(obj):
            return obj
        if not dataclasses.is_dataclass(obj):
            raise TypeError(f"from_dataclass expects a dataclass type or instance, got {obj!r}")
        flags = _class_flags(frozen, autocast, nocast, shadow, tensor_only)
        return tensorclass(obj, **flags) if inplace else _new_tensorclass(obj, flags)
    if not dataclasses.is_dataclass(obj):
        raise TypeError(f"from_dataclass expects a dataclass type or instance, got {obj!r}")
    if tensor_only and (autocast or nocast):
        raise TypeError("tensor_only and autocast or nocast are exclusive features.")
    if auto_batch_size and batch_size is not None:
        raise TypeError("Conflicting batch sizes in from_dataclass: batch_size and "
                        "auto_batch_size cannot be both specified.")
    cls = dest_cls if dest_cls is not None else _new_tensorclass(
        type(obj), _class_flags(frozen, autocast, nocast, shadow, tensor_only))
    values = dataclasses.asdict(obj)
    later = {f.name: values.pop(f.name) for f in dataclasses.fields(cls)
             if not f.init and f.name in values}  # fields the constructor does not take
    result = cls(**values, batch_size=batch_size, device=device)
    for name, value in later.items():
        if value is not None:
            cls._tc_writers[name](result._tensordict, name, value)
    _fields.guard_fast_fields(result)
    if auto_batch_size:
        return result.auto_batch_size_(batch_dims)
    if batch_dims is not None:
        _warn_batch_dims_ignored(result, batch_dims, batch_size)
    return result


def _warn_batch_dims_ignored(result: Any, batch_dims: int, batch_size: Any) -> None:
    """Upstream's FutureWarning: ``batch_dims`` without ``auto_batch_size`` does nothing
    today, and will turn it on."""
    if batch_size is None:
        if result.copy().auto_batch_size_(batch_dims).batch_size == result.batch_size:
            return
        advice = "Pass auto_batch_size=True to get that result now, or drop batch_dims."
    else:
        advice = "Drop batch_dims to keep today's result."
    warnings.warn(
        f"from_dataclass ignores batch_dims={batch_dims} without auto_batch_size=True. "
        "Starting with TensorDict 0.17, the default will change to turning "
        f"auto_batch_size on when batch_dims is given, as from_dict does. {advice}",
        FutureWarning,
        stacklevel=3,
    )
