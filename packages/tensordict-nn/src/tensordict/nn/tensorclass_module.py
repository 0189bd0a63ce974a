"""Modules typed by tensorclasses: ``TensorClassModuleBase[In, Out]`` takes an ``In`` and
returns an ``Out``; ``as_td_module()`` turns one into a TensorDict module.

Needs the ``tensordict-tensorclass`` package for the tensorclasses themselves.

>>> import torch
>>> from tensordict.tensorclasses import TensorClass
>>> class Obs(TensorClass):
...     x: torch.Tensor
>>> class Act(TensorClass):
...     y: torch.Tensor
>>> class Policy(TensorClassModuleBase[Obs, Act]):
...     def forward(self, obs: Obs) -> Act:
...         return Act(y=obs.x * 2, batch_size=obs.batch_size)
>>> Policy()(Obs(x=torch.ones(2), batch_size=[2])).y
tensor([2., 2.])
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
import warnings
from abc import ABC, abstractmethod
from typing import Any, Generic, TypeVar

from torch import nn

from tensordict import NestedKey, TensorDictBase
from tensordict.nn.common import TensorDictModuleBase, _module_repr, dispatch

__all__ = ["TensorClassModuleBase", "TensorClassModuleWrapper"]

InputClass = TypeVar("InputClass")
OutputClass = TypeVar("OutputClass")


def _is_tensorclass_type(cls: Any) -> bool:
    try:
        from tensordict.tensorclasses import is_tensorclass
    except ImportError:  # without the package no class is a tensorclass
        return False
    return isinstance(cls, type) and is_tensorclass(cls)


def _field_type(cls: type, annotation: Any) -> Any:
    """``annotation`` resolved in the module of ``cls`` when it is a string (None if it
    cannot be)."""
    if not isinstance(annotation, str):
        return annotation
    holder = types.SimpleNamespace(__annotations__={"field": annotation})
    module = sys.modules.get(cls.__module__)
    try:
        return typing.get_type_hints(holder, vars(module) if module else {})["field"]
    except Exception:  # an annotation naming something out of reach: not a tensorclass
        return None


def _tensor_class_keys(cls: type, prefix: tuple[str, ...] = ()) -> list[NestedKey]:
    """The field keys of a tensorclass, nested tensorclass fields as nested keys."""
    keys: list[NestedKey] = []
    for field in dataclasses.fields(cls):
        key = (*prefix, field.name)
        field_type = _field_type(cls, field.type)
        if _is_tensorclass_type(field_type):
            keys += _tensor_class_keys(field_type, key)
        else:
            keys.append(key[0] if len(key) == 1 else key)
    return keys


class TensorClassModuleBase(Generic[InputClass, OutputClass], ABC, nn.Module):
    """Base of the modules taking an ``InputClass`` and returning an ``OutputClass``
    (tensorclasses or ``torch.Tensor``): subclass ``TensorClassModuleBase[In, Out]`` and
    write ``forward``. The subscript sets the class attributes ``input_type`` and
    ``output_type``; when both are tensorclasses, :meth:`as_td_module` gives a module
    working on TensorDicts (for a :class:`~tensordict.nn.TensorDictSequential`).

    >>> import torch
    >>> class AddOne(TensorClassModuleBase[torch.Tensor, torch.Tensor]):
    ...     def forward(self, x):
    ...         return x + 1
    >>> AddOne()(torch.zeros(1)), AddOne.input_type
    (tensor([1.]), <class 'torch.Tensor'>)
    """

    input_type: type
    output_type: type

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for base in cls.__dict__.get("__orig_bases__", ()):
            if typing.get_origin(base) is TensorClassModuleBase:
                cls.input_type, cls.output_type = typing.get_args(base)

    def __call__(self, x: InputClass) -> OutputClass:  # typed nn.Module.__call__
        return super().__call__(x)

    @abstractmethod
    def forward(self, x: InputClass) -> OutputClass:
        """Compute the output from ``x``."""

    def as_td_module(self) -> TensorClassModuleWrapper:
        """This module as a TensorDict module (see :class:`TensorClassModuleWrapper`).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from tensordict.tensorclasses import TensorClass
        >>> class In(TensorClass):
        ...     x: torch.Tensor
        >>> class Out(TensorClass):
        ...     y: torch.Tensor
        >>> class Double(TensorClassModuleBase[In, Out]):
        ...     def forward(self, inp):
        ...         return Out(y=inp.x * 2, batch_size=inp.batch_size)
        >>> Double().as_td_module()(TensorDict(x=torch.ones(2), batch_size=[2]))["y"]
        tensor([2., 2.])
        """
        input_type = getattr(self, "input_type", None)
        output_type = getattr(self, "output_type", None)
        if input_type is None or output_type is None:
            raise ValueError(
                "Generic input/output types not set in TensorClassModuleBase. To convert "
                f"{type(self).__name__} to TensorDictModule, subclass "
                "TensorClassModuleBase[InputClass, OutputClass] directly, with a class for "
                "each type."
            )
        if not (_is_tensorclass_type(input_type) and _is_tensorclass_type(output_type)):
            raise ValueError(
                "Only TensorClassModuleBase implementations with both input and output type "
                f"as TensorClass can be converted to TensorDictModule (got {input_type} -> "
                f"{output_type})"
            )
        return TensorClassModuleWrapper(self)


class TensorClassModuleWrapper(TensorDictModuleBase):
    """A :class:`TensorClassModuleBase` on TensorDicts: the input entries (the fields of
    the input class, nested keys for nested tensorclasses) are read into an input
    instance, and the output instance is returned as a new TensorDict (nothing is written
    into the input).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.tensorclasses import TensorClass
    >>> class In(TensorClass):
    ...     x: torch.Tensor
    >>> class Out(TensorClass):
    ...     y: torch.Tensor
    >>> class Inc(TensorClassModuleBase[In, Out]):
    ...     def forward(self, inp):
    ...         return Out(y=inp.x + 1, batch_size=inp.batch_size)
    >>> wrapper = TensorClassModuleWrapper(Inc())
    >>> wrapper.in_keys, wrapper.out_keys
    (['x'], ['y'])
    """

    def __init__(self, module: TensorClassModuleBase) -> None:
        super().__init__()
        self.tc_module = module
        self.in_keys = _tensor_class_keys(module.input_type)
        self.out_keys = _tensor_class_keys(module.output_type)

    @dispatch
    def forward(self, tensordict: TensorDictBase, *args: Any, **kwargs: Any) -> TensorDictBase:
        """Run the module on ``tensordict``'s input entries; the outputs as a TensorDict.

        Other arguments (``tensordict_out``...) are ignored with a ``FutureWarning``, as
        upstream: TensorDict 0.17 is to write into ``tensordict_out`` as
        :class:`~tensordict.nn.TensorDictModule` does.
        """
        if args or kwargs:
            ignored = ["positional arguments"] if args else []
            ignored += [repr(key) for key in kwargs]
            warnings.warn(
                f"TensorClassModuleWrapper ignores {', '.join(ignored)}. Starting with "
                "TensorDict 0.17, the default will change to writing the outputs into "
                "tensordict_out and returning it, as TensorDictModule does, and to raising "
                "a TypeError for the other arguments.", FutureWarning, stacklevel=5)
        inputs = self.tc_module.input_type.from_tensordict(
            tensordict.select(*self.in_keys, strict=False))
        return self.tc_module(inputs).to_tensordict()

    def __repr__(self) -> str:
        return _module_repr(self, [("tc_module", self.tc_module), ("in_keys", self.in_keys),
                                   ("out_keys", self.out_keys)])

