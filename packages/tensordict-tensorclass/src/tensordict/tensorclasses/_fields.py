"""How a field is stored and read: writers per casting mode, and the read fast path.

An instance keeps its fields in ``self._tensordict`` (a :class:`~tensordict.TensorDict`),
and its ``__dict__`` *is* that TensorDict's storage dict. A field that holds a tensor,
a TensorDict or a tensorclass is therefore read by Python's ordinary instance-dict
lookup, as fast as a dataclass attribute. A field that may hold non-tensor data has a
:class:`NonTensorField` descriptor on the class instead, which unwraps the stored
``NonTensorData``. A fast field that is ever given non-tensor data gets the descriptor
from then on (see :func:`guard_fast_fields`), so reads are always right.

Example:
    >>> import torch
    >>> from tensordict import TensorClass
    >>> class Sample(TensorClass):
    ...     obs: torch.Tensor
    ...     tag: str
    >>> s = Sample(obs=torch.zeros(2), tag="train", batch_size=[2])
    >>> s.__dict__ is s._tensordict._tensordict, s.tag
    (True, 'train')
"""

from __future__ import annotations

import dataclasses
import sys
import typing
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import torch

from tensordict import NonTensorData, TensorDict, TensorDictBase, is_tensor_collection
from tensordict.extending import unwrap_non_tensor

_Tensor = torch.Tensor
_MISSING: Any = object()

#: ``writer(td, name, value)`` stores ``value`` under the field ``name`` of ``td``.
Writer = Callable[[TensorDict, str, Any], None]


# -- annotations ------------------------------------------------------------------------
def is_tensor_annotation(annotation: Any) -> bool:
    """Whether a field annotated ``annotation`` holds tensors or tensor collections.

    ``Optional[X]`` counts as ``X``; strings and unknown types do not count.

    >>> is_tensor_annotation(torch.Tensor), is_tensor_annotation(typing.Optional[TensorDict])
    (True, True)
    >>> is_tensor_annotation(str), is_tensor_annotation(typing.Any)
    (False, False)
    """
    if typing.get_origin(annotation) is typing.Union or type(annotation).__name__ == "UnionType":
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
        return bool(members) and all(is_tensor_annotation(a) for a in members)
    return isinstance(annotation, type) and (
        issubclass(annotation, (_Tensor, TensorDictBase))
        or getattr(annotation, "_is_tensorclass", False)
    )


def resolved_annotations(cls: type, fields: Any) -> dict[str, Any]:
    """The annotation of each dataclass field of ``cls``, strings evaluated when possible
    (in the module of the class that declares the field)."""
    out: dict[str, Any] = {}
    for f in fields:
        annotation = f.type
        if isinstance(annotation, str):
            owner = next((k for k in cls.__mro__
                          if f.name in k.__dict__.get("__annotations__", {})), cls)
            module = sys.modules.get(owner.__module__)
            try:
                annotation = eval(annotation, dict(vars(module)) if module else {}, {})  # noqa: S307
            except Exception:  # an unresolvable forward reference stays a string
                pass
        out[f.name] = annotation
    return out


# -- writers ------------------------------------------------------------------------------
def _non_tensor(td: TensorDict, value: Any) -> NonTensorData:
    return NonTensorData(value, batch_size=td.batch_size, device=td.device, names=td._names)


def store(td: TensorDict, name: str, value: Any) -> None:
    """The default writer: like ``td.set``, except that a tuple or a plain mapping stays
    one non-tensor value (only ``tensor_only`` classes turn them into tensors and
    TensorDicts)."""
    if isinstance(value, tuple) or (isinstance(value, Mapping)
                                    and not is_tensor_collection(value)):
        td._set_str(name, _non_tensor(td, value), inplace=False, validated=True)
    else:
        td._set_str(name, value, inplace=False, validated=False)


def _scalar_writer(owner: str, annotation: type) -> Writer:
    """int/float/bool fields given a Python number: a 0-d tensor, with upstream's warning
    (non-tensor data when the batch size is not empty: no 0-d tensor fits it)."""

    def write(td: TensorDict, name: str, value: Any) -> None:
        if type(value) is annotation and td.batch_size:
            td._set_str(name, _non_tensor(td, value), inplace=False, validated=True)
            return
        if type(value) is annotation:
            warnings.warn(
                f"The {type(value).__name__} given to the field {name!r} of {owner} is "
                "stored as a 0-d tensor today. Starting with TensorDict 0.17, the default "
                "will change to keeping the Python value of fields annotated "
                "int/float/bool, as NonTensorData. Annotate the field torch.Tensor to "
                "keep the tensor, or use the nocast class option to keep the Python "
                "value now.",
                FutureWarning,
                stacklevel=3,
            )
        store(td, name, value)

    return write


def _nocast_write(td: TensorDict, name: str, value: Any) -> None:
    if isinstance(value, _Tensor) or is_tensor_collection(value):
        store(td, name, value)
    else:
        td._set_str(name, _non_tensor(td, value), inplace=False, validated=True)


def _tensor_only_write(td: TensorDict, name: str, value: Any) -> None:
    if not isinstance(value, _Tensor) and not is_tensor_collection(value):
        if isinstance(value, Mapping):
            value = TensorDict(value, batch_size=td.batch_size, device=td.device)
        else:
            try:
                value = torch.as_tensor(value, device=td.device)
            except (TypeError, ValueError, RuntimeError):
                pass  # not castable: stored as non-tensor data, like td.set would
    td._set_str(name, value, inplace=False, validated=False)


_PYTHON_SCALARS = (int, float, bool, str)


def _autocast_writer(annotation: Any) -> Writer:
    """Cast values to the annotation: ``int`` field given ``torch.ones(())`` stores 1."""

    def write(td: TensorDict, name: str, value: Any) -> None:
        if annotation in _PYTHON_SCALARS:
            if isinstance(value, _Tensor) and value.numel() == 1:
                value = value.item()
            if not isinstance(value, annotation) or (annotation is int and isinstance(value, bool)):
                value = annotation(value)
            td._set_str(name, _non_tensor(td, value), inplace=False, validated=True)
        elif isinstance(annotation, type) and issubclass(annotation, _Tensor):
            if not isinstance(value, _Tensor):
                value = torch.as_tensor(value, device=td.device)
            td._set_str(name, value, inplace=False, validated=False)
        elif getattr(annotation, "_is_tensorclass", False) and isinstance(value, Mapping):
            td._set_str(name, annotation(**value, batch_size=td.batch_size), inplace=False,
                        validated=False)
        else:
            store(td, name, value)

    return write


def stores_tensors_as_given(annotation: Any, *, autocast: bool) -> bool:
    """Whether the writer of a field stores a plain tensor as it is (the inlined path)."""
    return not autocast or is_tensor_annotation(annotation)


def make_writer(owner: str, annotation: Any, *, autocast: bool, nocast: bool,
                tensor_only: bool) -> Writer:
    """The writer of one field under the class options."""
    if nocast:
        return _nocast_write
    if tensor_only:
        return _tensor_only_write
    if autocast:
        return _autocast_writer(annotation)
    if annotation in (int, float, bool):
        return _scalar_writer(owner, annotation)
    return store


# -- reading --------------------------------------------------------------------------------
class NonTensorField:
    """Class-level accessor of a field that may hold non-tensor data: reads the stored
    value and unwraps ``NonTensorData`` (``NonTensorStack`` reads as nested lists)."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default: Any = _MISSING) -> None:
        self.name = name
        self.default = default

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            if self.default is _MISSING:
                raise AttributeError(self.name)
            return self.default
        value = obj._tensordict._get_str(self.name, None)
        if value is None or value.__class__ is _Tensor:
            return value
        return unwrap_non_tensor(value)

    def __set__(self, obj: Any, value: Any) -> None:  # makes this a data descriptor
        type(obj).__setattr__(obj, self.name, value)

    def __delete__(self, obj: Any) -> None:
        type(obj).__delattr__(obj, self.name)


def default_of(field: Any) -> Any:
    """The default of a dataclass field (``_MISSING`` when it has none)."""
    return _MISSING if field.default is dataclasses.MISSING else field.default


def demote(cls: type, names: Any) -> None:
    """Read the fields ``names`` of ``cls`` through :class:`NonTensorField` from now on."""
    owner = next(k for k in cls.__mro__ if "_tc_fast" in k.__dict__)
    for name in list(names):
        if name in owner._tc_fast:
            owner._tc_fast.discard(name)
            default = default_of(owner.__dataclass_fields__[name])
            setattr(owner, name, NonTensorField(name, default))


def guard_fast_fields(obj: Any, names: Any = None) -> None:
    """Demote the fast fields of ``obj`` (``names``, default all) holding non-tensor data."""
    fast = type(obj)._tc_fast
    if not fast:
        return
    get = obj.__dict__.get
    held = [name for name in (fast if names is None else names)
            if get(name).__class__ is not _Tensor and name in fast
            and getattr(get(name), "_is_non_tensor", False)]
    if held:
        demote(type(obj), held)


def attach(obj: Any, td: Any) -> None:
    """Make ``td`` the storage of ``obj`` (its ``__dict__`` becomes the entries' dict).

    ``object.__setattr__`` is spelled out, not aliased: dynamo takes an alias for
    ``torch.Tensor.__setattr__`` and calls the class's own ``__setattr__`` (a recursion).
    """
    object.__setattr__(obj, "_tensordict", td)
    if td.__class__ is TensorDict:
        object.__setattr__(obj, "__dict__", td._tensordict)
        return
    storage = getattr(td, "_tensordict", None) if isinstance(td, TensorDict) else None
    if type(storage) is dict:
        object.__setattr__(obj, "__dict__", storage)
    else:
        # a lazy stack or another backing without one entries dict: every field is
        # read through the TensorDict API
        object.__setattr__(obj, "__dict__", {})
        demote(type(obj), set(type(obj)._tc_fast))
