"""What every tensorclass instance has: storage, field access, indexing, the
TensorDict primitives (so core treats an instance as a nested collection), conversion
to and from TensorDicts, pickling and copies.

All other TensorDict methods come from :mod:`._forward`.

Example:
    >>> import torch
    >>> from tensordict import TensorClass
    >>> class Point(TensorClass):
    ...     xy: torch.Tensor
    ...     label: str = "p"
    >>> pts = Point(xy=torch.zeros(3, 2), batch_size=[3])
    >>> pts[1:].batch_size, pts.get("label"), pts.to_tensordict()["xy"].shape
    (torch.Size([2]), 'p', torch.Size([3, 2]))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch.utils.data._utils.collate import default_collate_fn_map

from tensordict import TensorCollection, TensorDict, TensorDictBase
from tensordict.base import NO_DEFAULT
from tensordict.extending import check_non_tensor_write, deprecated_fields, unwrap_non_tensor
from tensordict.storage import IndexView
from tensordict.tensorclasses import _fields
from tensordict.tensorclasses._dtype import install_casts
from tensordict.tensorclasses._forward import (
    Wrapper,
    check_related,
    deliver,
    fits,
    install_forwarders,
    install_plugin_methods,
    method,
    unwrap,
)
from tensordict.tensorclasses._repr import nested_compact_block, tensorclass_repr
from tensordict.utils import warn_deprecated

T = TypeVar("T", bound="TensorClassBase")
_update = method("update")
_Tensor = torch.Tensor
_PLAIN = frozenset({_Tensor, TensorDict})  # entries no fast field needs guarding for


_DIRECT, _WRITER = object(), object()


def _is_tensorclass(value: Any) -> bool:
    return getattr(type(value), "_is_tensorclass", False)


def _is_key(index: Any) -> bool:
    return index.__class__ is str or (
        index.__class__ is tuple and bool(index) and all(isinstance(k, (str, tuple)) for k in index)
    )


class TensorClassBase(Wrapper):
    """Base of every tensorclass (made by ``@tensorclass`` or by subclassing
    ``TensorClass``). Not meant to be subclassed directly."""

    __slots__ = ("_tensordict",)
    _tensordict: TensorDict
    _is_tensorclass = True
    _is_non_tensor = False  # found on the class: core probes it on every nested value
    # set per class by the builder (see _build.py)
    _tc_field_set: frozenset[str] = frozenset()
    _tc_fast: set[str] = set()
    _tc_tensor_direct: frozenset[str] = frozenset()
    #: field name -> ``_DIRECT`` (a plain tensor is stored as it is) or ``_WRITER``
    _tc_assign: dict[str, object] = {}
    _tc_writers: dict[str, _fields.Writer] = {}
    _tc_frozen = False
    _tc_post_init_on_rebuild = False
    _tc_cast_filter: Callable[[Any, Any], bool] | None = None
    _tc_options: Any = None
    _tc_has_post_init = False

    # -- storage -----------------------------------------------------------------------
    @classmethod
    def _from_storage(cls: type[T], td: Any) -> T:
        """Wrap ``td`` (no copy); runs ``__post_init__`` unless the class skips it or
        ``td`` is an empty shell (``empty()``)."""
        obj = object.__new__(cls)
        _fields.attach(obj, td)
        if cls._tc_post_init_on_rebuild and next(iter(td.keys()), None) is not None:
            obj.__post_init__()  # type: ignore[attr-defined]
        return obj

    def _resync(self, op: str = "an in-place op") -> None:
        """Follow the storage after the in-place op ``op`` (it may have new non-tensor
        data); entries that are not fields (``rename_key_``, ``set_non_tensor`` of another
        key) stay, with upstream's DeprecationWarning."""
        td = self._tensordict
        fields = type(self)._tc_field_set
        if td.__class__ is TensorDict:
            entries = td._tensordict
            if self.__dict__ is not entries:
                _fields.attach(self, td)
            if entries.keys() <= fields:  # (the common case: two C-level set tests)
                if not set(map(type, entries.values())) <= _PLAIN:
                    _fields.guard_fast_fields(self)
                return
        else:
            _fields.attach(self, td)
        extra = sorted(key for key in td.keys() if key not in fields)
        if extra:
            name = type(self).__name__
            warn_deprecated(f"Writing keys that are not fields ({extra}) with {name}.{op}(), "
                            "which set() rejects with AttributeError,", removal="0.17",
                            replacement=f"only its fields ({sorted(fields)})", stacklevel=3)
        _fields.guard_fast_fields(self)

    def __setattr__(self, name: str, value: Any) -> None:
        writer = type(self)._tc_assign.get(name)
        if writer is _DIRECT and value.__class__ is _Tensor:
            self._tensordict._set_str(name, value, inplace=False, validated=False)
        elif writer is not None:
            self._write(name, value)
        elif name == "_tensordict":
            _fields.attach(self, value)
        elif any(name in klass.__dict__ for klass in type(self).__mro__):
            object.__setattr__(self, name, value)  # a property or slot of the class
        else:
            raise AttributeError(
                f"Cannot set the attribute {name!r}: {type(self).__name__} has no such field. "
                f"Its fields are {sorted(type(self)._tc_field_set)}."
            )

    if not TYPE_CHECKING:  # type checkers keep flagging unknown attributes

        def __getattr__(self, name: str) -> Any:
            """The fallback of attribute lookup: the name on the instance's TensorDict.

            Called when ``name`` is neither a field nor a member of the class, or
            explicitly (``Cls.__getattr__(obj, name)``, as subclasses that chain their
            own fallback do), where members and fields are found too.
            """
            if name.startswith("__"):
                raise AttributeError(name)
            try:
                return object.__getattribute__(self, name)
            except AttributeError:
                if any(name in klass.__dict__ for klass in type(self).__mro__):
                    raise  # a member failed (a property, the method of a missing plugin)
            try:
                return getattr(object.__getattribute__(self, "_tensordict"), name)
            except AttributeError:
                if name.startswith("_"):
                    raise AttributeError(name) from None
                cls = type(self)
                raise AttributeError(
                    f"'{cls.__name__}' object has no attribute or field '{name}'. "
                    f"Its fields are {sorted(cls._tc_field_set)}."
                ) from None

    def __delattr__(self, name: str) -> None:
        cls = type(self)
        if name not in cls._tc_field_set:
            raise AttributeError(f"{cls.__name__} has no field {name!r}")
        if cls._tc_frozen:
            raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
        if name in self._tensordict.keys():
            self._tensordict._del_str(name)

    def _write(self, name: str, value: Any) -> None:
        """Store ``value`` in the field ``name`` with the class's casting rules."""
        cls = type(self)
        if cls._tc_frozen:
            raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")
        td = self._tensordict
        if value is None:
            if name in td.keys():
                td._del_str(name)
        elif value.__class__ is _Tensor and name in cls._tc_tensor_direct:
            td._set_str(name, value, inplace=False, validated=False)
        else:
            cls._tc_writers[name](td, name, value)
            _fields.guard_fast_fields(self, (name,))

    # -- TensorDict primitives: core sees an instance as a nested collection --------------
    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        return self._tensordict._get_str(key, default)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> Any:
        if key not in type(self)._tc_field_set:
            raise AttributeError(
                f"Cannot set {key!r}: {type(self).__name__} has no such field. "
                f"Its fields are {sorted(type(self)._tc_field_set)}."
            )
        if validated or inplace:
            self._tensordict._set_str(key, value, inplace=inplace, validated=validated,
                                      non_blocking=non_blocking)
            _fields.guard_fast_fields(self, (key,))
        else:
            self._write(key, value)
        return self

    def _del_str(self, key: str) -> None:
        self._tensordict._del_str(key)

    def _keys_str(self) -> Iterator[str]:
        return self._tensordict._keys_str()

    def _get_path(self, key: Any, default: Any = NO_DEFAULT) -> Any:
        return self._tensordict._get_path(key, default)

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        originals = [self]
        result = self._tensordict._apply_nest(fn, *unwrap(others, originals), **kwargs)
        return deliver(type(self), result, originals)

    def _index(self, index: Any) -> Any:
        return type(self)._from_storage(self._tensordict._index(index))

    # nested select/exclude (``td.select(("tc", "a"))``) keep the class, as upstream
    def _selected(self, tree: dict[str, Any], strict: bool, prefix: tuple[str, ...]) -> Any:
        return type(self)._from_storage(self._tensordict._selected(tree, strict, prefix))

    def _excluded(self, tree: dict[str, Any]) -> Any:
        return type(self)._from_storage(self._tensordict._excluded(tree))

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._tensordict._set_at_index(index, value._tensordict if _is_tensorclass(value)
                                       else value)

    def _propagate_lock(self, locked: bool) -> None:
        self._tensordict._propagate_lock(locked)

    @property
    def _names(self) -> Any:
        return self._tensordict._names

    @property
    def _non_tensordict(self) -> dict[str, Any]:
        """Always empty: non-tensor fields live in ``_tensordict`` (upstream's attribute)."""
        return {}

    # -- indexing ------------------------------------------------------------------------
    def __getitem__(self: T, index: Any) -> T:
        if _is_key(index):
            raise ValueError(
                f"Invalid indexing arguments: {index!r}. A tensorclass is indexed along its "
                f"batch dimensions; read a field with the attribute or get({index!r})."
            )
        return self._index(index)

    def __setitem__(self, index: Any, value: Any) -> None:
        if _is_key(index):
            raise ValueError(
                f"Invalid indexing arguments: {index!r}. A tensorclass is indexed along its "
                f"batch dimensions; write a field with the attribute or set({index!r}, ...)."
            )
        self._set_at_index(index, value)

    def __delitem__(self, key: Any) -> None:
        # upstream's tensorclass has no item deletion and raises AttributeError('__delitem__')
        raise AttributeError(
            f"__delitem__: {type(self).__name__} does not support `del tc[{key!r}]`; "
            f"delete a field with `del tc.<field>` or `tc.del_({key!r})`."
        )

    def __getitems__(self: T, indices: list[int]) -> T:
        """A batch of elements at once (``DataLoader`` with the instance as its dataset)."""
        return self._index(torch.as_tensor(indices))

    def __iter__(self: T) -> Iterator[T]:
        if not self.batch_size:
            raise TypeError(f"iteration over a 0-d {type(self).__name__}")
        return iter(self.unbind(0))  # all elements at once, as upstream

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise RuntimeError(
            "Converting a tensorclass to boolean value is not permitted: use "
            "`tc.is_empty()`, or `(a == b).all()` / `.any()` to compare."
        )

    # -- fields --------------------------------------------------------------------------
    def get(self, key: Any, *args: Any, **kwargs: Any) -> Any:
        """The value of a field, or of a nested key through the fields; ``default``
        (None unless given) when missing. Non-tensor data comes back as the object.

        >>> import torch
        >>> from tensordict import TensorClass
        >>> class Box(TensorClass):
        ...     width: torch.Tensor
        ...     name: str = "box"
        >>> b = Box(width=torch.ones(2))
        >>> b.get("name"), b.get("missing", 0)
        ('box', 0)
        """
        return unwrap_non_tensor(self._tensordict.get(key, *args, **kwargs))

    def set(self: T, key: Any, value: Any, inplace: bool = False, *,
            non_blocking: bool = False, **kwargs: Any) -> T:
        """Write a field (with the class's casting rules), or a nested key through the
        fields; returns self.

        >>> import torch
        >>> from tensordict import TensorClass
        >>> class Box(TensorClass):
        ...     width: torch.Tensor
        >>> Box(width=torch.ones(2)).set("width", torch.zeros(2)).width
        tensor([0., 0.])
        """
        if key.__class__ is str or (isinstance(key, tuple) and len(key) == 1):
            name = key if key.__class__ is str else key[0]
            present = self._tensordict._get_str(name, None) if inplace else None
            if getattr(present, "_is_non_tensor", False):
                # a bare object is not wrapped for an in-place write (upstream raises too):
                # on an index copy it would land nowhere
                check_non_tensor_write(present, value, name)
            if isinstance(self._tensordict, IndexView) and name in type(self)._tc_field_set:
                # an index view's rule, as upstream's: an existing entry only in place
                self._tensordict.set(name, value, inplace=inplace, non_blocking=non_blocking)
                return self
            self._set_str(name, value, inplace=present is not None,
                          validated=False, non_blocking=non_blocking)
        else:
            self._tensordict.set(key, value, inplace=inplace, non_blocking=non_blocking,
                                 **kwargs)
        return self

    def update(self: T, input_dict_or_td: Any, *args: Any, **kwargs: Any) -> T:
        """TensorDict's ``update``. A dict whose keys are not all fields raises
        ValueError before any write (as upstream's; a TensorDict's other keys are written,
        with upstream's DeprecationWarning).

        >>> import torch
        >>> from tensordict import TensorClass
        >>> class Box(TensorClass):
        ...     width: torch.Tensor
        >>> Box(width=torch.ones(2)).update({"width": torch.zeros(2)}).width
        tensor([0., 0.])
        """
        if isinstance(input_dict_or_td, dict):
            fields = type(self)._tc_field_set
            extra = sorted({key if key.__class__ is str else key[0]
                            for key in input_dict_or_td} - fields, key=str)
            if extra:
                raise ValueError(f"{type(self).__name__} has no fields {extra}: the keys of a "
                                 f"dict to update it with must be among its fields "
                                 f"{sorted(fields)}")
        return _update(self, input_dict_or_td, *args, **kwargs)

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        """Leave ``with tc.<op>(...) as result:``, writing ``result`` back (TensorDict's
        ``__exit__``); a result of a shape op that holds keys that are not fields
        (``rename_key_`` inside the block...) is not written back: ValueError, as
        upstream's (``to()``'s result is written back)."""
        td = self._tensordict
        stack = getattr(td, "_exit_stack", None)  # (how it was made, for the write-back)
        if exc_type is None and stack and isinstance(stack[-1], tuple) and stack[-1][0] != "to":
            extra = sorted(set(td.keys()) - type(self)._tc_field_set)
            if extra:
                raise ValueError(f"{type(self).__name__} has no fields {extra}: the result of "
                                 f"{stack[-1][0]}() cannot be written back with them")
        return td.__exit__(exc_type, exc, traceback)

    def extend(self, tensordict: Any) -> None:
        """Append to the lazy stack the instance holds (deprecated: build a new instance
        with :func:`~tensordict.lazy_stack` or :func:`torch.cat`).

        Args:
            tensordict: an instance, a TensorDict, or a list of them; a collection is
                unbound along the stack dim and its parts are appended.

        >>> import torch, warnings
        >>> from tensordict import TensorClass, lazy_stack
        >>> class Step(TensorClass):
        ...     x: torch.Tensor
        >>> steps = lazy_stack([Step(x=torch.zeros(2), batch_size=[2])])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     steps.extend([Step(x=torch.ones(2), batch_size=[2])])
        >>> steps.batch_size, steps.x[1]
        (torch.Size([2, 2]), tensor([1., 1.]))
        """
        warn_deprecated("TensorClass.extend()", removal="0.17",
                        replacement="lazy_stack or torch.cat to build a new instance")
        td = self._tensordict
        if not hasattr(td, "extend"):
            raise AttributeError(f"'{type(td).__name__}' object has no attribute 'extend'")
        td.extend(unwrap((tensordict,), [])[0])

    fields = classmethod(deprecated_fields)  # deprecated: dataclasses.fields(cls)

    # -- conversions ------------------------------------------------------------------------
    @classmethod
    def from_tensordict(cls: type[T], tensordict: TensorDictBase,
                        non_tensordict: dict[str, Any] | None = None,
                        safe: bool | None = True) -> T:
        """Wrap ``tensordict`` (no copy of its tensors) as an instance of the class;
        ``__post_init__`` runs (also with ``skip_post_init_on_rebuild``: the data comes
        from outside).

        Args:
            tensordict: holds the fields (extra keys are an error when ``safe``).
            non_tensordict: more field values, written with the class's casting rules
                into a shallow copy of ``tensordict``.
            safe: check that every key of ``tensordict`` is a field.

        >>> import torch
        >>> from tensordict import TensorClass, TensorDict
        >>> class Box(TensorClass):
        ...     width: torch.Tensor
        ...     name: str = "box"
        >>> td = TensorDict(width=torch.ones(2), batch_size=[2])
        >>> box = Box.from_tensordict(td, {"name": "crate"})
        >>> box.width is td["width"], box.name
        (True, 'crate')
        """
        return cls._from_tensordict(tensordict, non_tensordict, safe, rebuild=False)

    @classmethod
    def _from_tensordict(cls: type[T], tensordict: TensorDictBase,
                         non_tensordict: dict[str, Any] | None = None,
                         safe: bool | None = True, *, rebuild: bool = True) -> T:
        """:meth:`from_tensordict`, where ``rebuild`` (upstream's private constructor,
        which TorchRL calls) says the data comes from an existing instance, as the
        result of an op: ``skip_post_init_on_rebuild`` classes then skip
        ``__post_init__``."""
        extra = sorted(set(non_tensordict or ()) - cls._tc_field_set)
        if safe and (extra or not fits(cls, tensordict)):
            extra += sorted(set(tensordict.keys()) - cls._tc_field_set)
            raise ValueError(
                f"the keys {extra} of the tensordict are not fields of {cls.__name__} "
                f"(its fields are {sorted(cls._tc_field_set)})"
            )
        if non_tensordict:
            tensordict = tensordict.copy()
            for name, value in non_tensordict.items():
                if value is not None:
                    cls._tc_writers[name](tensordict, name, value)
        obj = cls._from_storage(tensordict)
        _fields.guard_fast_fields(obj)
        if not rebuild and cls._tc_has_post_init and not cls._tc_post_init_on_rebuild:
            obj.__post_init__()  # type: ignore[attr-defined]
        return obj

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A plain TensorDict copy (nested tensorclasses become TensorDicts too).

        Args:
            retain_none: write fields set to None as ``None`` entries (default: drop).

        >>> import torch
        >>> from tensordict import TensorClass
        >>> class Box(TensorClass):
        ...     width: torch.Tensor
        ...     lid: torch.Tensor = None
        >>> Box(width=torch.ones(2), batch_size=[2]).to_tensordict()
        TensorDict(batch_size=[2], fields={width: f32[]})
        """
        out = self._tensordict.clone()
        _plain(out, retain_none)
        if retain_none:
            _add_none_fields(self, out)
        return out

    def to_dict(self, *, retain_none: bool = True, convert_tensors: bool = False) -> dict[str, Any]:
        """A nested dict of the fields (non-tensor data unwrapped; None fields kept unless
        ``retain_none=False``).

        >>> import torch
        >>> from tensordict import TensorClass
        >>> class Box(TensorClass):
        ...     width: torch.Tensor
        ...     lid: torch.Tensor = None
        >>> Box(width=torch.ones(1)).to_dict()
        {'width': tensor([1.]), 'lid': None}
        """
        out = self._tensordict.to_dict(retain_none=retain_none, convert_tensors=convert_tensors)
        if retain_none:
            out.update((name, None) for name in type(self).__dataclass_fields__ if name not in out)
        return out

    # -- pickling and copies ------------------------------------------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"_tensordict": self._tensordict}

    def __setstate__(self, state: dict[str, Any]) -> None:
        _fields.attach(self, state["_tensordict"])

    def __copy__(self: T) -> T:
        return type(self)._from_storage(self._tensordict.copy())

    def __deepcopy__(self: T, memo: dict[int, Any]) -> T:
        return type(self)._from_storage(self._tensordict.clone())

    # -- torch functions ----------------------------------------------------------------------
    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Any, args: Any = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        check_related(func, types, args)
        originals: list[Any] = []
        args = unwrap(args, originals)
        kwargs = dict(zip(kwargs, unwrap(tuple(kwargs.values()), originals))) if kwargs else {}
        target = type(originals[0]) if originals else cls
        return deliver(target, func(*args, **kwargs), originals)

    def __repr__(self) -> str:
        return tensorclass_repr(self)

    def _compact_nested_block(self, parent_ndim: int) -> Any:
        return nested_compact_block(self, parent_ndim)


def _plain(td: Any, retain_none: bool | None) -> None:
    """Turn the tensorclass entries of ``td`` (a fresh copy) into TensorDicts, in place."""
    for key in list(td._keys_str()):
        value = td._get_str(key)
        if _is_tensorclass(value):
            plain = value._tensordict
            _plain(plain, retain_none)
            if retain_none:
                _add_none_fields(value, plain)
            td._set_str(key, plain, inplace=False, validated=True)
        elif isinstance(value, TensorDict):
            _plain(value, retain_none)


def _add_none_fields(obj: Any, td: TensorDict) -> None:
    for name in type(obj).__dataclass_fields__:
        if name not in td.keys():
            td.set_non_tensor(name, None)


def _collate(batch: Any, *, collate_fn_map: Any = None) -> Any:
    """``DataLoader``'s default collate of tensorclass samples: a stack (a batch fetched
    at once with ``__getitems__`` is already one)."""
    return batch if isinstance(batch, TensorClassBase) else torch.stack(batch)


install_casts(TensorClassBase)
install_plugin_methods(TensorClassBase)  # first: the forwarders skip what it sets
install_forwarders(TensorClassBase)
default_collate_fn_map[TensorClassBase] = _collate
# Instances are tensor collections (not TensorDictBases, as upstream: core recurses into
# them through ``acts_as_tensordict``). Registered rather than inherited: TensorCollection
# would give them its plugin-method lookup.
TensorCollection.register(TensorClassBase)
