"""Building tensorclasses: the ``@tensorclass`` decorator and the ``TensorClass`` base.

Both turn a class with annotated fields into a real dataclass (``dataclasses.fields``,
``asdict`` and ``replace`` work) whose instances store every field in a TensorDict and
behave like one. The ``__init__`` is generated per class: fields by position or keyword,
then the keyword-only ``batch_size``, ``device`` and ``names``.

Example:
    >>> import torch
    >>> from tensordict import tensorclass
    >>> @tensorclass
    ... class Transition:
    ...     obs: torch.Tensor
    ...     reward: torch.Tensor
    >>> t = Transition(torch.zeros(5, 3), reward=torch.ones(5), batch_size=[5])
    >>> t[2:].reward
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

import torch.utils._pytree as pytree

from tensordict import TensorDict, plugins
from tensordict.extending import as_device, as_size
from tensordict.tensorclasses import _fields
from tensordict.tensorclasses._forward import install_plugin_methods
from tensordict.tensorclasses._instance import _DIRECT, _WRITER, TensorClassBase

C = TypeVar("C", bound=type)

#: The options given as ``TensorClass["name", ...]`` or ``@tensorclass(name=True)``.
FLAGS = ("autocast", "nocast", "frozen", "tensor_only", "shadow", "skip_post_init_on_rebuild")
_META_PARAMS = ("batch_size", "device", "names")


@dataclasses.dataclass(frozen=True)
class Options:
    """The options of one tensorclass."""

    autocast: bool = False
    frozen: bool = False
    nocast: bool = False
    tensor_only: bool = False
    shadow: bool = False
    skip_post_init_on_rebuild: bool = False
    cast_filter: Callable[[Any, Any], bool] | None = None
    kw_only: bool = False

    def __post_init__(self) -> None:
        if self.autocast and self.nocast:
            raise TypeError("autocast is exclusive with nocast.")
        if self.tensor_only and (self.autocast or self.nocast):
            raise TypeError("tensor_only is exclusive with autocast and nocast.")


#: Members that a field may shadow all the same (as upstream: ``NonTensorData.data``...).
_SHADOWABLE = frozenset({"data", "fields", "_is_non_tensor"})
#: Top-level functions, not members: ``tensorclass`` and ``is_tensorclass`` are fine field names.
_NOT_MEMBERS = frozenset({"tensorclass", "is_tensorclass"})


def _reserved_names() -> set[str]:
    names = {n for n in dir(TensorClassBase) if not n.startswith("__")}
    names |= {n for n in dir(TensorDict) if not n.startswith("__")}
    names |= {n for n in plugins.PROVIDED_BY if n[:1].islower()} - _NOT_MEMBERS
    return (names | {"batch_size", "device", "names", "_tensordict"}) - _SHADOWABLE


def _check_names(field_names: list[str], options: Options) -> None:
    if options.shadow:
        return
    reserved = _reserved_names()
    for name in field_names:
        if name in reserved or plugins.method(name) is not None:
            raise AttributeError(
                f"Attribute name {name} can't be used with @tensorclass or TensorClass, as "
                "tensorclasses have a member of that name. To allow it, pass shadow=True "
                "(@tensorclass(shadow=True) or TensorClass['shadow'])."
            )


class UnexpectedFieldError(TypeError, AttributeError):
    """A keyword argument of a tensorclass constructor that is no field: the TypeError
    Python raises for an unexpected keyword, and the AttributeError upstream raises."""


def _unexpected(instance: Any, extra: dict[str, Any]) -> UnexpectedFieldError:
    cls = type(instance)
    name = next(iter(extra))
    return UnexpectedFieldError(
        f"Cannot set the attribute {name!r}: {cls.__name__} has no such field. Its fields are "
        f"{sorted(f.name for f in dataclasses.fields(cls))}. ({cls.__qualname__}.__init__() got an "
        f"unexpected keyword argument {name!r})")


def _make_init(cls: type, fields: list[dataclasses.Field]) -> Callable[..., None]:
    """The ``__init__`` of ``cls``: each field stored with its writer, plain tensors inline
    (the same checks as ``TensorDict.__init__``, nothing more)."""
    namespace: dict[str, Any] = {
        "_new": TensorDict._from_entries, "_as_size": as_size, "_as_device": as_device,
        "_guard": _fields.guard_fast_fields,
        "_Tensor": _fields._Tensor, "_MISSING": _fields._MISSING, "_unexpected": _unexpected,
    }
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for f in fields:
        name = f.name
        namespace[f"_w_{name}"] = cls._tc_writers[name]
        default = ""
        if f.default is not dataclasses.MISSING:
            namespace[f"_d_{name}"] = f.default
            default = f"_d_{name}"
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_f_{name}"] = f.default_factory
            default = "_MISSING"
        if not f.init:
            body.append(f"    {name} = {default or 'None'}")
        else:
            (keyword if f.kw_only else positional).append(f"{name}={default}" if default else name)
        if default == "_MISSING":
            body.append(f"    if {name} is _MISSING: {name} = _f_{name}()")
        other = f"_w_{name}(_tc_td_, {name!r}, {name}); _tc_other_ = True"
        if name in cls._tc_tensor_direct:
            body.append(f"    if {name}.__class__ is _Tensor: "
                        f"_tc_set_({name!r}, {name}, inplace=False, validated=False)\n"
                        f"    elif {name} is not None: {other}")
        else:
            body.append(f"    if {name} is not None: {other}")
    field_names = {f.name for f in fields}
    meta = {m: (m if m not in field_names else "None") for m in _META_PARAMS}
    keyword += [f"{m}=None" for m in _META_PARAMS if m not in field_names]
    self_name = "__tc_self__" if "self" in field_names else "self"
    signature = ", ".join([self_name, *positional, *(["*", *keyword] if keyword else []),
                           "**_tc_extra_"])
    device = meta["device"]
    source = [
        f"def __init__({signature}):",
        f"    _tc_td_ = _new({{}}, _as_size({meta['batch_size']}), "
        f"None if {device} is None else _as_device({device}), None)",
        "    _tc_set_ = _tc_td_._set_str",
        "    _tc_other_ = False",
        f"    if _tc_extra_: raise _unexpected({self_name}, _tc_extra_)",
        *body,
        f"    if {meta['names']} is not None: _tc_td_.names = {meta['names']}",
        f"    object.__setattr__({self_name}, '_tensordict', _tc_td_)",
        f"    object.__setattr__({self_name}, '__dict__', _tc_td_._tensordict)",
        f"    if _tc_other_: _guard({self_name})",
    ]
    if cls._tc_has_post_init:
        source.append(f"    {self_name}.__post_init__()")
    if cls._tc_frozen:
        source.append("    _tc_td_.lock_()")
    exec("\n".join(source), namespace)  # noqa: S102 - the generated constructor
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{f.name: f.type for f in fields if f.init}, "return": None}
    shown = inspect.signature(init)  # without **_tc_extra_
    init.__signature__ = shown.replace(parameters=[
        p for p in shown.parameters.values() if p.kind is not p.VAR_KEYWORD])
    return init


def _build(cls: type, options: Options) -> None:
    """Turn ``cls`` (already a TensorClassBase subclass) into a tensorclass, in place."""
    install_plugin_methods(TensorClassBase)  # plugins registered since the last class
    documented = cls.__dict__.get("__doc__") is not None
    own = cls.__dict__.get("__annotations__", {})
    if "_tc_options" not in cls.__dict__:  # not when the decorator re-options a TensorClass
        for name in own:  # a member inherited from TensorClassBase (``data``) is no default
            if name not in cls.__dict__ and hasattr(TensorClassBase, name):
                setattr(cls, name, dataclasses.field())
        dataclasses.dataclass(cls, init=True, repr=False, eq=False, kw_only=options.kw_only)
    fields = list(dataclasses.fields(cls))
    _check_names([f.name for f in fields if f.name in own], options)
    annotations = _fields.resolved_annotations(cls, fields)
    if options.tensor_only:
        for f in fields:
            if not _fields.is_tensor_annotation(annotations.get(f.name)) and \
                    annotations.get(f.name) is not type(None):
                raise TypeError("tensor_only requires types to be Tensor, Tensor-subtypes or None.")
    cls._tc_options = options
    cls._tc_field_set = frozenset(f.name for f in fields)
    cls._tc_writers = {
        f.name: _fields.make_writer(cls.__name__, annotations.get(f.name),
                                    autocast=options.autocast, nocast=options.nocast,
                                    tensor_only=options.tensor_only)
        for f in fields
    }
    cls._tc_tensor_direct = frozenset(
        f.name for f in fields
        if _fields.stores_tensors_as_given(annotations.get(f.name), autocast=options.autocast)
    )
    cls._tc_frozen = options.frozen
    cls._tc_assign = {f.name: _DIRECT if f.name in cls._tc_tensor_direct and not options.frozen
                      else _WRITER for f in fields}
    cls._tc_cast_filter = options.cast_filter
    has_post_init = callable(getattr(cls, "__post_init__", None))
    cls._tc_has_post_init = has_post_init
    cls._tc_post_init_on_rebuild = has_post_init and not options.skip_post_init_on_rebuild
    cls._tc_fast = set()
    for f in fields:
        if _fields.is_tensor_annotation(annotations.get(f.name)) and not options.shadow:
            cls._tc_fast.add(f.name)
            setattr(cls, f.name, None)  # read when the field is unset
        else:
            setattr(cls, f.name, _fields.NonTensorField(f.name, _fields.default_of(f)))
    cls.__init__ = _make_init(cls, fields)  # type: ignore[misc]
    _register_pytree(cls)
    if not documented:  # like dataclasses: the signature, now with batch_size & co
        cls.__doc__ = cls.__name__ + str(inspect.signature(cls)).replace(" -> None", "")


def _register_pytree(cls: type) -> None:
    """Make ``cls`` a pytree node whose one child is its TensorDict (itself a node), so
    ``tree_map``, ``vmap`` and ``torch.compile`` see the tensors."""
    if cls in pytree.SUPPORTED_NODES:
        return
    pytree.register_pytree_node(
        cls,
        lambda obj: ([obj._tensordict], None),
        lambda children, _: cls._from_storage(children[0]),
        serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
    )


def _as_tensorclass_type(cls: type) -> type:
    """``cls`` itself if it derives from TensorClassBase, else a subclass that does."""
    if issubclass(cls, TensorClassBase):
        return cls
    annotations = dict(cls.__dict__.get("__annotations__", {}))
    namespace = {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                 "__doc__": cls.__doc__, "__annotations__": annotations}
    # the fields' defaults (and dataclasses.field() specs) belong to the class built here
    namespace.update((name, cls.__dict__[name]) for name in annotations if name in cls.__dict__)
    return type(cls.__name__, (cls, TensorClassBase), namespace)


@overload
@typing.dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def tensorclass(cls: C, /) -> C: ...


@overload
def tensorclass(
    cls: None = None, /, *, autocast: bool = False, frozen: bool = False, nocast: bool = False,
    shadow: bool = False, tensor_only: bool = False, skip_post_init_on_rebuild: bool = False,
    cast_filter: Callable[[Any, Any], bool] | None = None, kw_only: bool = False,
) -> Callable[[C], C]: ...


def tensorclass(
    cls: Any = None, /, *, autocast: bool = False, frozen: bool = False, nocast: bool = False,
    shadow: bool = False, tensor_only: bool = False, skip_post_init_on_rebuild: bool = False,
    cast_filter: Callable[[Any, Any], bool] | None = None, kw_only: bool = False,
) -> Any:
    """Make a dataclass whose instances behave like a TensorDict.

    Used bare (``@tensorclass``) or with options (``@tensorclass(frozen=True)``).

    Args:
        autocast: cast values to the field annotations (``int`` field, ``torch.ones(())``
            in, ``1`` out). Exclusive with ``nocast`` and ``tensor_only``.
        frozen: assigning a field raises ``dataclasses.FrozenInstanceError``, and new
            instances are locked.
        nocast: never turn values into tensors (``int`` field, ``1`` in, ``1`` out).
        shadow: allow field names that clash with TensorDict members (``sum``...).
        tensor_only: every field is a tensor or tensor collection; castable values
            become tensors, mappings become TensorDicts.
        skip_post_init_on_rebuild: run ``__post_init__`` only on construction, not on
            the results of ops (indexing, clone, stack...).
        cast_filter: ``fn(key, value) -> bool``, the default filter of dtype casts
            (``to(dtype)``, ``float()``...) of the instances: leaves it rejects keep
            their dtype.
        kw_only: the fields are keyword-only arguments of ``__init__``.

    By default a field annotated ``int``/``float``/``bool`` given a Python number stores
    a 0-d tensor (with a FutureWarning, as upstream 0.15.3).

    >>> import torch
    >>> @tensorclass
    ... class Data:
    ...     images: torch.Tensor
    ...     labels: torch.Tensor
    ...     def select_label(self, label):
    ...         return self[self.labels == label]
    >>> data = Data(torch.zeros(4, 3, 2, 2), torch.tensor([0, 1, 1, 2]), batch_size=[4])
    >>> data.select_label(1)
    Data(batch_size=[2], fields={images: f32[3,2,2], labels: i64[]})
    """
    options = Options(autocast=autocast, frozen=frozen, nocast=nocast, tensor_only=tensor_only,
                      shadow=shadow, skip_post_init_on_rebuild=skip_post_init_on_rebuild,
                      cast_filter=cast_filter, kw_only=kw_only)

    def wrap(klass: type) -> type:
        new = _as_tensorclass_type(klass)
        _build(new, options)
        return new

    return wrap if cls is None else wrap(cls)


@typing.dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
class _TensorClassMeta(type):
    """Metaclass of TensorClass: ``TensorClass["frozen", ...]`` gives a base with options."""

    def __getitem__(cls, flags: str | tuple[str, ...]) -> type:
        flags = (flags,) if isinstance(flags, str) else tuple(flags)
        unknown = [f for f in flags if f not in FLAGS]
        if unknown:
            raise TypeError(
                f"TensorClass is not a generic class, so TensorClass[...] only accepts the "
                f"flags {FLAGS}. Got {tuple(unknown)}."
            )
        return _bracket_base(frozenset(flags))


_BRACKET_BASES: dict[frozenset[str], type] = {}


def _bracket_base(flags: frozenset[str]) -> type:
    if flags not in _BRACKET_BASES:
        _BRACKET_BASES[flags] = _TensorClassMeta(
            "TensorClass", (TensorClass,),
            {"__slots__": (), "_tc_bracket_flags": flags, "__module__": TensorClass.__module__},
        )
    return _BRACKET_BASES[flags]


class TensorClass(TensorClassBase, metaclass=_TensorClassMeta):
    """The inheritance form of ``@tensorclass``: subclasses are tensorclasses.

    Options go in brackets (``TensorClass["autocast", "frozen"]``) or as class keywords
    (``class Foo(TensorClass, nocast=True)``). ``TensorClass`` itself is not a
    tensorclass. Subclasses of a tensorclass inherit its options (except ``kw_only``).

    >>> import torch
    >>> class Foo(TensorClass["nocast"]):
    ...     integer: int
    >>> Foo(integer=1).integer
    1
    >>> class Bar(TensorClass):
    ...     integer: int
    >>> Bar(integer=torch.tensor(1)).integer
    tensor(1)
    """

    __slots__ = ()

    if typing.TYPE_CHECKING:  # what type checkers see as the keyword-only constructor args
        batch_size: Any = dataclasses.field(default=None, kw_only=True)
        device: Any = dataclasses.field(default=None, kw_only=True)
        names: Any = dataclasses.field(default=None, kw_only=True)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        if "_tc_bracket_flags" in cls.__dict__:
            return
        unknown = set(kwargs) - set(FLAGS) - {"cast_filter", "kw_only"}
        if unknown:
            raise TypeError(f"unknown TensorClass options {sorted(unknown)}")
        inherited = cls._tc_options
        values = {f.name: getattr(inherited, f.name) for f in dataclasses.fields(Options)
                  if inherited is not None and f.name != "kw_only"}
        for klass in cls.__mro__:
            values.update(dict.fromkeys(klass.__dict__.get("_tc_bracket_flags", ()), True))
        values.update(kwargs)
        _build(cls, Options(**values))

