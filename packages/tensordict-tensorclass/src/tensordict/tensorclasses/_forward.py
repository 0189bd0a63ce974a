"""Forwarding: every TensorDict operation works on tensorclass instances.

The rule, applied to every public method, property and operator of
:class:`~tensordict.TensorDict` that the tensorclass base does not define itself:

1. tensorclass arguments (also inside a list or tuple) are replaced by their TensorDict;
2. the method runs on the instance's TensorDict;
3. the result is delivered: the TensorDict of an argument comes back as that argument
   (in-place ops return ``self``); a TensorDict whose keys are fields of the class becomes
   an instance of the class; tuples and lists are delivered item by item; anything
   else (tensors, keys, sizes, a TensorDict of other keys) is returned as it is.

``torch`` functions (``torch.stack``, ``torch.cat``...) follow the same rule through
``__torch_function__``, and plugin methods (``memmap``...) are found by
:class:`~tensordict.TensorCollection` itself.

Example:
    >>> import torch
    >>> from tensordict import TensorClass
    >>> class Pair(TensorClass):
    ...     a: torch.Tensor
    ...     b: torch.Tensor
    >>> p = Pair(a=torch.zeros(4, 2), b=torch.ones(4), batch_size=[4])
    >>> p.reshape(2, 2)
    Pair(batch_size=[2,2], fields={a: f32[2], b: f32[]})
    >>> (p == 0).a.all(), type(p.to_dict()).__name__
    (tensor(True), 'dict')
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from tensordict import TensorDict, TensorDictBase, is_tensor_collection, plugins
from tensordict.extending import IN_PLACE_POINTWISE

#: Operators of TensorDict forwarded as they are (when TensorDict defines them).
OPERATORS = frozenset(
    f"__{op}__" for op in (
        "add radd iadd sub rsub isub mul rmul imul truediv rtruediv itruediv floordiv "
        "rfloordiv ifloordiv mod rmod imod pow rpow ipow matmul rmatmul imatmul and rand "
        "iand or ror ior xor rxor ixor lshift rlshift ilshift rshift rrshift irshift "
        "eq ne lt le gt ge neg pos abs invert len bool contains enter exit "
        "array"
    ).split()
)


#: Methods that return stored entries (or pairs of them): never re-wrapped.
RETURNS_ENTRIES = frozenset({
    "get", "get_at", "get_non_tensor", "pop", "popitem", "setdefault", "values", "items",
})


#: Private methods whose result is delivered as the class, as upstream's: the index view
#: of an instance is an instance (its writes follow the class's rules).
REWRAPPED_PRIVATE = frozenset({"_get_sub_tensordict"})


#: Queries whose result is never a collection, and that take no instance: called on the
#: TensorDict directly, their result returned as it is.
QUERIES = frozenset({
    "size", "dim", "ndimension", "numel", "is_empty", "is_contiguous", "is_shared",
    "is_memmap", "is_consolidated", "entry_class", "keys", "tolist", "to_dict",
})


#: In-place methods that only write values into existing entries (each keeps its kind),
#: remove entries or set flags: nothing a resync would follow (a new key, non-tensor data
#: in a field read as a tensor).
_VALUES_ONLY = frozenset(
    IN_PLACE_POINTWISE
    | {"addcdiv_", "addcmul_", "lerp_", "masked_fill_", "fill_", "zero_", "copy_", "copy_at_",
       "set_", "set_at_", "update_", "update_at_", "apply_", "detach_", "requires_grad_",
       "filter_empty_", "del_", "lock_", "unlock_"})
#: Methods after which the instance needs no resync when they return the TensorDict
#: itself: those that then changed nothing (a reshape to the same shape...), and
#: :data:`_VALUES_ONLY`. The instance is returned as it is.
UNCHANGING = frozenset({
    "to_pytree", "permute", "transpose", "movedim", "moveaxis", "swapaxes", "swapdims",
    "reshape", "view", "squeeze", "flatten", "contiguous",
}) | _VALUES_ONLY


class Wrapper:
    """Base of the tensorclass base: an instance holds its data in ``_tensordict``, which
    the forwarding rule passes to TensorDict in its place."""

    __slots__ = ()
    _tensordict: TensorDict

#: Methods that take the whole collection (they must see the class, e.g. to record it on
#: disk, or refuse it: ``copy_at_``'s fast path takes plain TensorDicts only, as
#: upstream's): TensorDict's function is called with the instance itself.
ON_INSTANCE = frozenset({"save", "copy_at_"})


def _is_tensorclass(value: Any) -> bool:
    return isinstance(value, Wrapper)


def unwrap(args: Any, originals: list[Any]) -> Any:
    """``args`` (a tuple) with tensorclasses replaced by their TensorDicts, one level of
    lists/tuples deep; each instance is appended to ``originals`` (for a list or tuple, its
    first instance only: enough to find the class of the result).

    Instances are found again by identity, never by ``id()``: under ``torch.compile`` an
    ``id()`` guards on the object itself, and every call with a new instance recompiles.
    """
    base = Wrapper
    for arg in args:  # (identity tests first: ``type(arg) in (list, tuple)`` costs 4x more)
        cls = type(arg)
        if cls is not str and (cls is list or cls is tuple or isinstance(arg, base)):
            break
    else:
        return args  # (the common case: numbers, keys, tensors)
    out = list(args)
    for i, arg in enumerate(out):
        if isinstance(arg, base):
            originals.append(arg)
            out[i] = arg._tensordict
        elif type(arg) in (list, tuple) and arg:  # type(): dynamo lacks a function's __class__
            for first in arg:
                if isinstance(first, base):
                    originals.append(first)
                    out[i] = type(arg)([item._tensordict if isinstance(item, base) else item
                                        for item in arg])
                    break
    return tuple(out)


def check_related(func: Callable[..., Any], types: Any, args: Any) -> None:
    """Raise ``TypeError`` when a torch function gets instances of tensorclasses of which
    none is a base or subclass of all the others (there is no class for the result).

    >>> import torch
    >>> from tensordict import TensorClass
    >>> class A(TensorClass):
    ...     x: torch.Tensor
    >>> class B(TensorClass):
    ...     x: torch.Tensor
    >>> try:
    ...     check_related(torch.stack, (A, B), ([A(x=torch.zeros(1), batch_size=[1]),
    ...                                          B(x=torch.zeros(1), batch_size=[1])],))
    ... except TypeError as err:
    ...     print(str(err).split(":")[0])
    Multiple dispatch failed for 'torch.stack'
    """
    kinds = [kind for kind in types if issubclass(kind, Wrapper)]
    if len(kinds) < 2 or any(all(issubclass(kind, other) or issubclass(other, kind)
                                 for other in kinds) for kind in kinds):
        return
    instances = [item for arg in args
                 for item in (arg if type(arg) in (list, tuple) else (arg,))
                 if isinstance(item, Wrapper)]
    found = ", ".join(f"{type(item).__name__}(batch_size={list(item.batch_size)})"
                      for item in instances)
    raise TypeError(
        f"Multiple dispatch failed for 'torch.{func.__name__}': it got instances of the "
        f"unrelated tensorclasses {[kind.__name__ for kind in kinds]} ({found}). Convert "
        "them to one class (or to TensorDicts with .to_tensordict()) first."
    )


def fits(cls: type, td: Any) -> bool:
    """Whether ``td`` holds only fields of the tensorclass ``cls``."""
    if td.__class__ is TensorDict:
        return td._tensordict.keys() <= cls._tc_field_set
    return set(td.keys()) <= cls._tc_field_set


def restore_classes(result: Any, template: Any) -> None:
    """Give the nested entries of a new ``result`` the tensorclass of the entry at the same
    key of ``template`` (ops such as ``torch.stack`` rebuild nested levels as TensorDicts)."""
    if result.__class__ is not TensorDict or template.__class__ is not TensorDict:
        return
    entries = template._tensordict
    for key, value in result._tensordict.items():
        if value.__class__ is not TensorDict:  # (most entries: tensors)
            continue
        reference = entries.get(key)
        if reference is None or reference is value:
            continue
        if _is_tensorclass(reference) and fits(type(reference), value):
            restore_classes(value, reference._tensordict)
            result._tensordict[key] = type(reference)._from_storage(value)
        elif reference.__class__ is TensorDict:
            restore_classes(value, reference)


def deliver(cls: type, result: Any, originals: list[Any]) -> Any:
    """The result of a forwarded op, re-wrapped into ``cls`` where it fits (module doc).

    ``originals`` are the tensorclasses passed to the op; the first one is the template
    of the nested classes of a new result."""
    for original in originals:
        if original._tensordict is result:
            original._resync()
            return original
    kind = result.__class__
    if kind is tuple or kind is list:
        return kind([deliver(cls, item, originals) for item in result])
    if (kind is TensorDict  # the common case: no ABC check (nor for sizes, tensors...)
            or is_tensor_collection(result) and isinstance(result, TensorDictBase)
            and not getattr(result, "_is_non_tensor", False)) and fits(cls, result):
        if originals:
            restore_classes(result, originals[0]._tensordict)
        return cls._from_storage(result)
    return result


def method(name: str, doc: str | None = None) -> Callable[..., Any]:
    """``name`` of the instance's TensorDict, called with the forwarding rule."""
    if name in QUERIES:
        def query(self: Any, *args: Any, **kwargs: Any) -> Any:
            return getattr(self._tensordict, name)(*args, **kwargs)

        query.__name__ = query.__qualname__ = name
        query.__doc__ = doc
        return query
    rewrap = name not in RETURNS_ENTRIES and not name.startswith("_") or name in OPERATORS \
        or name in REWRAPPED_PRIVATE
    unchanging = name in UNCHANGING

    def forwarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        originals = [self]
        if args:
            args = unwrap(args, originals)
        if kwargs:
            kwargs = dict(zip(kwargs, unwrap(tuple(kwargs.values()), originals)))
        td = self._tensordict
        result = getattr(td, name)(*args, **kwargs)
        if result is td:  # (in-place ops: deliver's first case, inlined)
            if rewrap and not unchanging:
                self._resync(name)
            return self
        return deliver(type(self), result, originals) if rewrap else result

    forwarded.__name__ = forwarded.__qualname__ = name
    forwarded.__doc__ = doc
    return forwarded


def _classmethod(name: str, doc: str | None) -> classmethod:
    """A class-level TensorDict function (``fromkeys``, ``stack``...) returning the class;
    a constructor (``from_*``) of keys that are no fields raises, as upstream."""
    constructor = name.startswith("from")

    def forwarded(cls: type, *args: Any, **kwargs: Any) -> Any:
        originals: list[Any] = []
        args = unwrap(args, originals)
        result = getattr(TensorDict, name)(*args, **kwargs)
        if constructor and result.__class__ is TensorDict and not fits(cls, result):
            extra = set(result.keys()) - cls._tc_field_set
            raise ValueError(
                f"Keys from the tensordict ({set(result.keys())}) must correspond to the class "
                f"attributes ({set(cls._tc_field_set)}). Got the set of keys {extra} which do "
                f"not belong to the class ({cls.__name__}.{name} builds a {cls.__name__}).")
        return deliver(cls, result, originals)

    forwarded.__name__ = forwarded.__qualname__ = name
    forwarded.__doc__ = doc
    return classmethod(forwarded)


def _property(name: str, prop: property) -> property:
    def fget(self: Any) -> Any:
        value = getattr(self._tensordict, name)
        if value.__class__ is TensorDict:
            return deliver(type(self), value, [self])
        return value

    def fset(self: Any, value: Any) -> None:
        setattr(self._tensordict, name, value)

    return property(fget, fset if prop.fset is not None else None, doc=prop.__doc__)


def install_forwarders(base: type) -> None:
    """Give ``base`` every TensorDict method, property and operator it lacks (private
    helpers too: core calls them on nested collections)."""
    for name in dir(TensorDict):
        if name in base.__dict__ or (name.startswith("__") and name not in OPERATORS):
            continue
        attr = inspect.getattr_static(TensorDict, name)
        if name.startswith("_") and not inspect.isfunction(attr) and name not in OPERATORS:
            continue
        if name in ON_INSTANCE:
            setattr(base, name, attr)
        elif isinstance(attr, property):
            setattr(base, name, _property(name, attr))
        elif isinstance(attr, (classmethod, staticmethod)):
            setattr(base, name, _classmethod(name, attr.__func__.__doc__))
        elif callable(attr):
            setattr(base, name, method(name, getattr(attr, "__doc__", None)))


class PluginMethod:
    """The plugin method ``name`` (``memmap``, ``save``...) on tensorclasses, looked up
    when accessed, with an error naming the package to install when none provides it."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        function = plugins.method(self.name)
        if function is None:
            owner_name = (owner or type(obj)).__name__
            raise plugins.missing_method_error(owner_name, self.name)
        if isinstance(function, classmethod):
            return function.__get__(None, owner or type(obj))
        return function if obj is None else function.__get__(obj, owner)


def install_plugin_methods(base: type) -> None:
    """Give ``base`` the methods plugins provide (and the known ones of missing plugins).

    Plugin methods are class attributes, found before the ``__getattr__`` fallback (which
    would look them up on the TensorDict); this runs at import and whenever a tensorclass
    is built.
    """
    names = set(plugins.PLUGIN_METHODS)
    for mapping in plugins.plugin_manager().hook.tensordict_methods():
        names.update(mapping or ())
    for name in names - set(base.__dict__):
        setattr(base, name, PluginMethod(name))
