"""``TypedTensorDict``: a collection whose fields are declared as class annotations, as
in a ``TypedDict``, over a TensorDict holding its entries. Experimental, as upstream's.

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

import typing
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

import torch
import torch.utils._pytree as pytree

from tensordict._base import NO_DEFAULT, TensorDictBase
from tensordict._collection import acts_as_tensordict
from tensordict._map import MapMixin
from tensordict._nested_key import is_nested_key
from tensordict._pointwise import PointwiseMixin
from tensordict._pytree import _flatten_td, _flatten_with_keys, _unflatten
from tensordict._repr import Block, _sizes, compact_entries, tensordict_repr
from tensordict._stack import register_typed
from tensordict._td import TensorDict

_MISSING: Any = object()
_OPTIONS = ("shadow", "frozen")
_NO_EFFECT_OPTIONS = ("autocast", "nocast", "tensor_only")
_VALID = ", ".join((*_OPTIONS, *_NO_EFFECT_OPTIONS))
#: methods run by the entries whose results stay plain: comparisons and reductions give
#: TensorDicts, as upstream's
_PLAIN_RESULTS = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "sum", "mean",
                  "std", "var", "prod", "max", "min", "amax", "amin", "nansum", "nanmean",
                  "all", "any", "quantile", "cummax", "cummin", "is_memmap")
#: methods run by the entries whose results keep the class (with the pointwise ops, for
#: the dense fast paths)
_TYPED_RESULTS = ("empty", "memmap", "memmap_like")


class _Field:
    """A declared field: reads the entry (else the default), writes it; no deleter."""

    __slots__ = ("name", "default")

    def __init__(self, name: str, default: Any) -> None:
        self.name, self.default = name, default

    def __get__(self, obj: Any, owner: type) -> Any:
        if obj is None:
            return self
        value = obj._source.get(self.name, _MISSING)
        if value is not _MISSING:
            return value
        if self.default is _MISSING:
            raise AttributeError(self.name)  # __getattr__ words it
        return self.default

    def __set__(self, obj: Any, value: Any) -> None:
        obj._source[self.name] = value

    def __delete__(self, obj: Any) -> None:
        raise AttributeError(f"property of {type(obj).__name__!r} object has no deleter")


def _not_required(annotation: Any) -> bool:
    """Whether ``annotation`` is ``NotRequired[...]`` (also as a string)."""
    if isinstance(annotation, str):
        return annotation.split("[", 1)[0].rsplit(".", 1)[-1] == "NotRequired"
    return typing.get_origin(annotation) is typing.NotRequired


def _missing(cls: type, entries: Any) -> str:
    """The required fields of ``cls`` that ``entries`` lacks, sorted and comma-separated."""
    missing = [name for name in cls.__required_keys__ if name not in entries]
    return ", ".join(sorted(missing)) if missing else ""


def _on_source(name: str, typed: bool) -> Callable[..., Any]:
    """``TensorDict.<name>`` run on the entries, its result as the instance's class if
    ``typed`` (a plain TensorDict otherwise)."""

    def method(self: TypedTensorDict, *args: Any, **kwargs: Any) -> Any:
        out = getattr(self._source, name)(*args, **kwargs)
        return self._typed(out) if typed else out

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"``TensorDict.{name}`` of the entries" + (", as this class." if typed
                                                                else ".")
    return method


@register_typed
class TypedTensorDict(MapMixin, TensorDictBase):
    """A :class:`~tensordict.TensorDictBase` whose fields are declared as class annotations.

    Not a :class:`~tensordict.TensorDict` subclass: an instance holds its entries in a
    TensorDict (``_source``) and answers the whole TensorDict API from it. A subclass gets
    attribute access to its fields (``state.eta``, as ``state["eta"]``), a constructor
    taking them by keyword (a missing required field or an unknown one raises
    ``TypeError``), the fields of its parents, and results of the same class (indexing,
    ``clone``, ``to``, ``apply``, shape ops, ``torch.stack`` with an instance first...);
    comparisons and reductions give plain TensorDicts. A field with a default, or
    annotated ``NotRequired[...]``, is optional; reading an optional field without an
    entry gives its default (``AttributeError`` if it has none). Attributes that are no
    field are set on the instance, not as entries. :meth:`from_tensordict` gives typed
    access to a TensorDict without copying it.

    Options, inherited by subclasses, set with ``class S(TypedTensorDict["frozen"])`` or
    ``class S(TypedTensorDict, frozen=True)``: ``shadow`` lets a field take the name of
    a TensorDictBase attribute (hiding it; otherwise ``AttributeError``), ``frozen`` locks
    what the constructor builds. ``autocast``, ``nocast`` and ``tensor_only`` are
    accepted, have no effect, and warn (deprecated).

    >>> import torch
    >>> from torch import Tensor
    >>> from tensordict import TensorDict, TypedTensorDict
    >>> class Obs(TypedTensorDict):
    ...     pixels: Tensor
    ...     reward: Tensor = None
    >>> obs = Obs.from_tensordict(TensorDict(pixels=torch.zeros(2, 3), batch_size=[2]))
    >>> obs.pixels.shape, obs.reward, isinstance(obs, TensorDict)
    (torch.Size([2, 3]), None, False)
    >>> try:
    ...     Obs(reward=torch.zeros(2))
    ... except TypeError as err:
    ...     print(err)
    Obs() missing required field(s): pixels
    """

    __slots__ = ("_source", "_exit_stack", "__dict__", "__weakref__")
    __expected_keys__: ClassVar[frozenset[str]] = frozenset()
    __required_keys__: ClassVar[frozenset[str]] = frozenset()
    __optional_keys__: ClassVar[frozenset[str]] = frozenset()
    __field_defaults__: ClassVar[dict[str, Any]] = {}
    _shadow: ClassVar[bool] = False
    _frozen: ClassVar[bool] = False

    def __init_subclass__(cls, **options: Any) -> None:
        unknown = set(options) - {*_OPTIONS, *_NO_EFFECT_OPTIONS}
        if unknown:
            raise TypeError(f"{cls.__name__}.__init_subclass__() got unknown options "
                            f"{sorted(unknown)}; valid options: {_VALID}")
        super().__init_subclass__()
        for name in _NO_EFFECT_OPTIONS:
            if name in options:
                warnings.warn(f"The TypedTensorDict option {name!r} has no effect and is "
                              "deprecated. It will be removed in TensorDict 0.17. TensorClass "
                              "supports this option.", DeprecationWarning, stacklevel=2)
        cls._shadow = bool(options.get("shadow", cls._shadow))
        cls._frozen = bool(options.get("frozen", cls._frozen))
        required, optional = set(cls.__required_keys__), set(cls.__optional_keys__)
        defaults = dict(cls.__field_defaults__)
        for name, annotation in cls.__dict__.get("__annotations__", {}).items():
            if name.startswith("_"):
                continue
            if not cls._shadow and hasattr(TensorDictBase, name):
                raise AttributeError(f"Field {name!r} shadows a TensorDictBase attribute. Use "
                                     "TypedTensorDict['shadow'] to allow this.")
            default = cls.__dict__.get(name, _MISSING)
            if isinstance(default, _Field):
                default = default.default
            if default is _MISSING:  # (re)declared without a default
                defaults.pop(name, None)
            else:
                defaults[name] = default
            is_optional = default is not _MISSING or _not_required(annotation)
            (optional if is_optional else required).add(name)
            (required if is_optional else optional).discard(name)
            setattr(cls, name, _Field(name, defaults.get(name, _MISSING)))
        cls.__required_keys__, cls.__optional_keys__ = frozenset(required), frozenset(optional)
        cls.__expected_keys__ = frozenset(required | optional)
        cls.__field_defaults__ = defaults
        pytree.register_pytree_node(cls, _flatten_td, _unflatten,  # torch.func sees the leaves
                                    serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
                                    flatten_with_keys_fn=_flatten_with_keys)

    def __class_getitem__(cls, options: str | tuple[str, ...]) -> type:
        """``TypedTensorDict["frozen", "shadow"]``: a base class with those options."""
        options = (options,) if isinstance(options, str) else tuple(options)
        for option in options:
            if option not in (*_OPTIONS, *_NO_EFFECT_OPTIONS):
                raise ValueError(f"Unknown TypedTensorDict option: {option!r}. Valid options: "
                                 f"{_VALID}")
        name = "_".join((cls.__name__, *options))
        namespace = {"__module__": cls.__module__, "__slots__": (), "_options_only": True}
        return type(cls)(name, (cls,), namespace, **dict.fromkeys(options, True))

    def __init__(self, source: Mapping[str, Any] | None = None, *,
                 batch_size: Sequence[int] | torch.Size | int | None = None,
                 device: Any = None, names: Sequence[str | None] | None = None,
                 non_blocking: bool | None = None, lock: bool = False, **fields: Any) -> None:
        cls = type(self)
        if cls is TypedTensorDict or cls.__dict__.get("_options_only", False):
            raise TypeError(f"{cls.__name__} cannot be instantiated: subclass it and declare "
                            "its fields as annotations")
        if source is None:  # fields by keyword: exactly the declared ones
            unexpected = ", ".join(sorted(set(fields) - cls.__expected_keys__))
            if unexpected:
                raise TypeError(f"{cls.__name__}() got unexpected field(s): {unexpected}")
            missing = _missing(cls, fields)
            if missing:
                raise TypeError(f"{cls.__name__}() missing required field(s): {missing}")
            entries: Mapping[str, Any] = fields
        else:  # a mapping of entries: other keys are kept, a missing field warns
            entries = {**source, **fields}
            missing = _missing(cls, entries)
            if missing:
                warnings.warn(f"{cls.__name__}(dict) returns an instance of {cls.__name__} "
                              f"that misses the required field(s) {missing}. Starting with "
                              "TensorDict 0.17, the default will change to raising the "
                              "TypeError that the constructor raises. Pass these fields, or "
                              "use from_dict(..., check=False) to keep the instance without "
                              "them.", FutureWarning, stacklevel=2)
        self._source = TensorDict(entries, batch_size=batch_size, device=device, names=names,
                                  non_blocking=non_blocking, lock=lock or cls._frozen)
        self._exit_stack = None

    def __getattr__(self, name: str) -> Any:
        if name in type(self).__expected_keys__:  # an optional field without entry or default
            raise AttributeError(f"{type(self).__name__!r} has field {name!r} declared but not "
                                 "set")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getstate__(self) -> dict[str, Any]:
        return {"_source": self._source, **self.__dict__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._source = state.pop("_source")
        self._exit_stack = None
        self.__dict__.update(state)

    @classmethod
    def _wrap(cls, source: TensorDictBase) -> Any:
        """An instance over ``source``'s entries (no check, no copy)."""
        self = object.__new__(cls)
        self._source = source
        self._exit_stack = None
        return self

    @classmethod
    def _from_entries(cls, source: dict[str, Any], batch_size: torch.Size,
                      device: torch.device | None = None,
                      names: tuple[str | None, ...] | None = None) -> Any:
        """An instance of already-validated entries (internal fast path)."""
        return cls._wrap(TensorDict._from_entries(source, batch_size, device, names))

    def _new_like_self(self, entries: dict[str, Any]) -> Any:
        return self._typed(self._source._new_like_self(entries))

    def from_dict_instance(self, input_dict: Mapping[str, Any], **kwargs: Any) -> Any:
        """:meth:`from_dict` called on an instance: an instance of its class."""
        return type(self).from_dict(input_dict, **kwargs)

    def _typed(self, out: Any) -> Any:
        """A result computed by the entries, as this class (self for the entries)."""
        if out is self._source:
            return self
        if out.__class__ is TensorDict or acts_as_tensordict(out):
            return type(self)._wrap(out)
        return out

    @classmethod
    def from_tensordict(cls, td: TensorDictBase | Mapping[str, Any], *,
                        check: bool = True) -> Any:
        """Typed access to ``td``: its entries are shared (no copy, the writes go through;
        another mapping is read into a TensorDict first). ``check=False`` skips the check
        of the required fields.

        >>> import torch
        >>> from torch import Tensor
        >>> from tensordict import TensorDict, TypedTensorDict
        >>> class Pair(TypedTensorDict):
        ...     a: Tensor
        >>> td = TensorDict(a=torch.zeros(2))
        >>> Pair.from_tensordict(td).a is td["a"]
        True
        """
        missing = check and _missing(cls, td)
        if missing:
            raise TypeError(f"{cls.__name__}.from_tensordict() missing required field(s): "
                            f"{missing}")
        if td.__class__ is not TensorDict and not acts_as_tensordict(td):
            td = TensorDict(td)
        return cls._wrap(td)

    @classmethod
    def from_dict(cls, input_dict: Mapping[str, Any], *, auto_batch_size: bool | None = None,
                  batch_size: Any = None, device: Any = None, batch_dims: int | None = None,
                  names: Sequence[str | None] | None = None, check: bool = True) -> Any:
        """An instance of a (nested) dict, built as :meth:`TensorDict.from_dict` does; a
        missing required field warns (``FutureWarning``) unless ``check=False``.

        >>> import torch
        >>> from torch import Tensor
        >>> from tensordict import TypedTensorDict
        >>> class Pair(TypedTensorDict):
        ...     a: Tensor
        >>> Pair.from_dict({"a": torch.zeros(2, 3)}, auto_batch_size=True).batch_size
        torch.Size([2, 3])
        """
        td = TensorDict.from_dict(input_dict, batch_size=batch_size, device=device,
                                  batch_dims=batch_dims, auto_batch_size=bool(auto_batch_size),
                                  names=names)
        missing = check and _missing(cls, td)
        if missing:
            warnings.warn(f"{cls.__name__}.from_dict() returns an instance of {cls.__name__} "
                          f"that misses the required field(s) {missing}. Starting with "
                          "TensorDict 0.17, the default will change to raising the TypeError "
                          "that the constructor raises. Pass these fields, or pass "
                          "check=False to keep the instance without them.", FutureWarning,
                          stacklevel=2)
        return cls._wrap(td)

    # -- the primitives, answered by the entries ----------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._source.batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        self._source.batch_size = value

    @property
    def device(self) -> torch.device | None:
        return self._source.device

    @device.setter
    def device(self, value: Any) -> None:
        self._source.device = value

    @property
    def names(self) -> list[str | None]:
        return self._source.names

    @names.setter
    def names(self, value: Any) -> None:
        self._source.names = value

    @property
    def _is_locked(self) -> Any:
        return self._source._is_locked

    def _propagate_lock(self, locked: Any) -> None:
        self._source._propagate_lock(locked)

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        return self._source._get_str(key, default)

    def get(self, key: Any, *args: Any, **kwargs: Any) -> Any:
        return self._source.get(key, *args, **kwargs)

    get.__doc__ = TensorDictBase.get.__doc__

    def __getitem__(self, index: Any) -> Any:
        if index.__class__ is str or is_nested_key(index):
            return self._source[index]
        return self._index(index)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> TypedTensorDict:
        self._source._set_str(key, value, inplace=inplace, validated=validated,
                              non_blocking=non_blocking)
        return self

    def _validate_value(self, value: Any, key: str, non_blocking: bool = False) -> Any:
        return self._source._validate_value(value, key, non_blocking)

    def _del_str(self, key: str) -> None:
        self._source._del_str(key)

    def _keys_str(self) -> Iterator[str]:
        return self._source._keys_str()

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        return self._typed(self._source._apply_nest(fn, *others, **kwargs))

    def _index(self, index: Any) -> Any:
        return self._typed(self._source._index(index))

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._source._set_at_index(index, value)

    def _plan_at_index(self, index: Any, value: Any) -> Any:
        return self._source._plan_at_index(index, value)

    def __repr__(self) -> str:
        return tensordict_repr(self)

    def _compact_nested_block(self, batch_ndim: int) -> Block:
        """How an instance shows as an entry of a TensorDict's compact repr."""
        extra = self.batch_size[batch_ndim:]
        return f"{type(self).__name__}{_sizes(extra) if extra else ''}", compact_entries(self)


for _name in _PLAIN_RESULTS:
    setattr(TypedTensorDict, _name, _on_source(_name, False))
for _name in (*_TYPED_RESULTS, *(name for name, value in vars(PointwiseMixin).items()
                                   if callable(value) and name not in _PLAIN_RESULTS)):
    setattr(TypedTensorDict, _name, _on_source(_name, True))  # the entries' fast paths
del _name
