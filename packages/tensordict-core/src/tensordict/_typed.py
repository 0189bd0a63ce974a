"""``TypedTensorDict``: a TensorDict subclass whose fields are declared as annotations,
as in a ``TypedDict``. Experimental, as upstream's.

Example:
    >>> import torch
    >>> from torch import Tensor
    >>> from tensordict import TypedTensorDict
    >>> class State(TypedTensorDict):
    ...     eta: Tensor
    ...     X: Tensor
    >>> state = State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])
    >>> state.eta.shape, type(state[0]).__name__
    (torch.Size([5, 3]), 'State')
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import torch

from tensordict._base import TensorDictBase
from tensordict._td import TensorDict

_MISSING: Any = object()
_OPTIONS = ("shadow", "frozen")
_NO_EFFECT_OPTIONS = ("autocast", "nocast", "tensor_only")


class _Field:
    """A declared field: reads the entry (or the default), writes it."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default: Any) -> None:
        self.name, self.default = name, default

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self if self.default is _MISSING else self.default
        if self.name in obj._tensordict:
            return obj[self.name]
        if self.default is _MISSING:
            raise AttributeError(f"{type(obj).__name__} has no entry for the field "
                                 f"{self.name!r}")
        return self.default

    def __set__(self, obj: Any, value: Any) -> None:
        obj[self.name] = value

    def __delete__(self, obj: Any) -> None:
        raise AttributeError(f"cannot delete the field {self.name!r} of a "
                             f"{type(obj).__name__}: delete the entry (del td[key])")


class TypedTensorDict(TensorDict):
    """A :class:`~tensordict.TensorDict` whose fields are declared as class annotations.

    A subclass gets attribute access to its fields (``state.eta``, as ``state["eta"]``),
    a constructor taking them by keyword (a missing field without a default, or an
    unknown one, raises ``TypeError``), the fields of its parents, and every TensorDict
    operation, whose results keep the class. :meth:`from_tensordict` gives typed access
    to an existing TensorDict without copying it.

    Options, inherited by subclasses, set with ``class S(TypedTensorDict["frozen"])`` or
    ``class S(TypedTensorDict, frozen=True)``: ``shadow`` lets a field take the name of
    a TensorDict attribute (hiding it; otherwise ``AttributeError``), ``frozen`` locks
    each new instance. ``autocast``, ``nocast`` and ``tensor_only`` are accepted, have no
    effect, and warn (deprecated).

    >>> import torch
    >>> from torch import Tensor
    >>> from tensordict import TensorDict, TypedTensorDict
    >>> class Obs(TypedTensorDict):
    ...     pixels: Tensor
    ...     reward: Tensor = None
    >>> obs = Obs.from_tensordict(TensorDict(pixels=torch.zeros(2, 3), batch_size=[2]))
    >>> obs.pixels.shape, obs.reward
    (torch.Size([2, 3]), None)
    >>> try:
    ...     Obs(reward=torch.zeros(2))
    ... except TypeError as err:
    ...     print(err)
    Obs() missing required field(s): pixels
    """

    _fields: ClassVar[dict[str, _Field]] = {}
    _shadow: ClassVar[bool] = False
    _frozen: ClassVar[bool] = False

    def __init_subclass__(cls, **options: Any) -> None:
        unknown = set(options) - {*_OPTIONS, *_NO_EFFECT_OPTIONS}
        if unknown:
            raise TypeError(f"{cls.__name__}.__init_subclass__() got unknown options "
                            f"{sorted(unknown)}; valid options: "
                            f"{', '.join((*_OPTIONS, *_NO_EFFECT_OPTIONS))}")
        super().__init_subclass__()
        for name in _NO_EFFECT_OPTIONS:
            if name in options:
                warnings.warn(f"The TypedTensorDict option {name!r} has no effect and is "
                              "deprecated. It will be removed in TensorDict 0.17. TensorClass "
                              "supports this option.", DeprecationWarning, stacklevel=2)
        cls._shadow = bool(options.get("shadow", cls._shadow))
        cls._frozen = bool(options.get("frozen", cls._frozen))
        fields = dict(cls._fields)
        for name in cls.__dict__.get("__annotations__", {}):
            if name.startswith("_"):
                continue
            default = cls.__dict__.get(name, _MISSING)
            if isinstance(default, _Field):
                default = default.default
            if not cls._shadow and hasattr(TensorDict, name):
                raise AttributeError(f"Field {name!r} shadows a TensorDictBase attribute. Use "
                                     "TypedTensorDict['shadow'] to allow this.")
            fields[name] = _Field(name, default)
            setattr(cls, name, fields[name])
        cls._fields = fields

    def __class_getitem__(cls, options: str | tuple[str, ...]) -> type:
        """``TypedTensorDict["frozen", "shadow"]``: a base class with those options."""
        options = (options,) if isinstance(options, str) else tuple(options)
        for option in options:
            if option not in (*_OPTIONS, *_NO_EFFECT_OPTIONS):
                raise ValueError(f"Unknown TypedTensorDict option: {option!r}. Valid options: "
                                 f"{', '.join((*_OPTIONS, *_NO_EFFECT_OPTIONS))}")
        name = "_".join((cls.__name__, *options))
        namespace = {"__module__": cls.__module__, "_options_only": True}
        return type(cls)(name, (cls,), namespace, **dict.fromkeys(options, True))

    def __init__(self, source: Mapping[str, Any] | TensorDictBase | None = None, *,
                 batch_size: Sequence[int] | torch.Size | None = None, device: Any = None,
                 names: Sequence[str | None] | None = None, non_blocking: bool | None = None,
                 lock: bool = False, **fields: Any) -> None:
        cls = type(self)
        if cls is TypedTensorDict or cls.__dict__.get("_options_only", False):
            raise TypeError("TypedTensorDict cannot be instantiated: subclass it and declare "
                            "its fields as annotations")
        unexpected = [name for name in fields if name not in cls._fields]
        if unexpected:
            raise TypeError(f"{cls.__name__}() got unexpected field(s): "
                            f"{', '.join(unexpected)}")
        entries = {**source, **fields} if source is not None else fields
        cls._check_required(entries, f"{cls.__name__}()")
        super().__init__(entries, batch_size=batch_size, device=device, names=names,
                         non_blocking=non_blocking, lock=lock or cls._frozen)

    @classmethod
    def _check_required(cls, entries: Any, where: str) -> None:
        missing = [name for name, field in cls._fields.items()
                   if field.default is _MISSING and name not in entries]
        if missing:
            raise TypeError(f"{where} missing required field(s): {', '.join(missing)}")

    @classmethod
    def _from_entries(cls, source: dict[str, Any], batch_size: torch.Size,
                    device: torch.device | None = None,
                    names: tuple[str | None, ...] | None = None) -> Any:
        """The results of TensorDict operations keep the class."""
        out = TensorDict._from_entries(source, batch_size, device, names)
        typed = object.__new__(cls)
        for slot in TensorDict.__slots__[:-1]:  # every slot but __weakref__
            object.__setattr__(typed, slot, getattr(out, slot))
        return typed

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        """``torch.stack``, ``torch.cat``... of instances keep the class."""
        out = super().__torch_function__(func, types, args, kwargs)
        if type(out) is TensorDict:
            return cls._from_entries(out._tensordict, out.batch_size, out.device, out._names)
        return out

    def _new_like_self(self, entries: dict[str, Any]) -> Any:
        return type(self)._from_entries(entries, self.batch_size, self.device, self._names)

    @classmethod
    def from_tensordict(cls, tensordict: TensorDictBase) -> Any:
        """Typed access to ``tensordict``: a TensorDict shares its entries (no copy, the
        writes go through); another collection is read into a TensorDict first.

        >>> import torch
        >>> from torch import Tensor
        >>> from tensordict import TensorDict, TypedTensorDict
        >>> class Pair(TypedTensorDict):
        ...     a: Tensor
        >>> td = TensorDict(a=torch.zeros(2))
        >>> Pair.from_tensordict(td).a is td["a"]
        True
        """
        cls._check_required(tensordict.keys(), f"{cls.__name__}.from_tensordict()")
        td = tensordict if type(tensordict) is TensorDict else tensordict.to_tensordict()
        return cls._from_entries(td._tensordict, td.batch_size, td.device, td._names)
