"""The dictionary side of a TensorDict: get/set, nested keys, views, selection, locks.

Written once on the primitives of :class:`~tensordict._base.TensorDictBase`
(``_get_str``, ``_set_str``, ``_del_str``, ``_keys_str``, ``_apply_nest``).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(batch_size=[2])
    >>> td["a", "b"] = torch.zeros(2)
    >>> td.flatten_keys()
    TensorDict(batch_size=[2], fields={a.b: f32[]})
    >>> td.select(("a", "b")).exclude("a").is_empty()
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch

from tensordict import errors
from tensordict._base import NO_DEFAULT, TensorDictBase, is_tensor_collection
from tensordict._keys import (
    TensorDictItemsView,
    TensorDictKeysView,
    TensorDictValuesView,
    is_leaf_nontensor,
)
from tensordict._metadata import MetadataMixin
from tensordict._nested_key import NestedKey, key_to_path, unravel_key
from tensordict._nontensor import NonTensorData, unwrap_non_tensor
from tensordict._options import get_defaults_to_none
from tensordict._restructure import RestructureMixin, _is_node

#: How a lazy stack reads entries of different shapes (``get(key, as_list=True)``...);
#: a dense collection, whose values already are one tensor, accepts and ignores them.
_STACK_READ_OPTIONS = frozenset(
    ("as_list", "as_padded_tensor", "as_nested_tensor", "padding_side", "layout",
     "padding_value")
)


class DictMixin(RestructureMixin, MetadataMixin):
    """Mapping behaviour over nested keys (reading, writing, deleting, updating)."""

    __slots__ = ()
    #: whether parts hold keys others lack (only lazy stacks can)
    _has_exclusive_keys = False

    # -- nested access -------------------------------------------------------------------
    def _get_path(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """The stored value at ``key`` (non-tensor data not unwrapped)."""
        if key.__class__ is str:
            return self._get_str(key, default)
        path = key_to_path(key)
        node: Any = self
        for depth, part in enumerate(path):
            if not isinstance(node, TensorDictBase) or getattr(node, "_is_non_tensor", False):
                if default is not NO_DEFAULT:
                    return default
                raise errors.KeyThroughLeafError(
                    f"{path[depth - 1]!r} is a {type(node).__name__}, not a TensorDict, "
                    f"so it has no entry {part!r} (looking up {path!r})."
                )
            try:
                node = node._get_str(part)
            except KeyError:
                if default is not NO_DEFAULT:
                    return default
                available = list(node._keys_str())
                raise errors.missing_key(path if depth else part, available, path[:depth]) from None
        return node

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        """The sub-TensorDict holding ``path[-1]`` (created on the way if asked)."""
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            child = node._get_str(part, None)
            if child is None:
                if not create:
                    raise errors.missing_key(path, list(node._keys_str()), path[:depth])
                child = node._empty_child()
                node._set_str(part, child, inplace=False, validated=True)
            elif not isinstance(child, TensorDictBase) or getattr(child, "_is_non_tensor", False):
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a TensorDict, so it has "
                    f"no entry {path[depth + 1]!r} (writing {path!r})."
                )
            node = child
        return node

    def _empty_child(self) -> Any:
        from tensordict._td import TensorDict

        return TensorDict._new_unsafe({}, self.batch_size, self.device,
                                      getattr(self, "_names", None))

    # -- reading -------------------------------------------------------------------------
    def get(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """The value at ``key`` (non-tensor data as ``NonTensorData``), or ``default``.

        A missing key gives ``default`` (None unless given).

        >>> td = TensorDict(a=torch.zeros(1))
        >>> td.get("a"), td.get("zzz"), td.get("zzz", 0)
        (tensor([0.]), None, 0)
        """
        default = kwargs.pop("default", args[0] if args else NO_DEFAULT)
        if kwargs and kwargs.keys() - _STACK_READ_OPTIONS:
            unexpected = sorted(kwargs.keys() - _STACK_READ_OPTIONS)
            raise TypeError(f"get() got unexpected arguments {unexpected}")
        if default is NO_DEFAULT and get_defaults_to_none():
            default = None
        return self._get_path(key, default)

    def get_non_tensor(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """The Python object stored at ``key`` (tensors are returned as they are)."""
        value = self._get_path(key, default)
        return unwrap_non_tensor(value)

    def is_non_tensor(self, key: NestedKey) -> bool:
        """Whether ``key`` holds non-tensor data."""
        return getattr(self._get_path(key), "_is_non_tensor", False)

    def non_tensor_items(self, include_nested: bool = False) -> tuple[tuple[NestedKey, Any], ...]:
        """``(key, NonTensorData)`` pairs."""
        return tuple(
            (k, v) for k, v in self.items(include_nested, True, is_leaf=is_leaf_nontensor)
            if getattr(v, "_is_non_tensor", False)
        )

    def get_item_shape(self, key: NestedKey) -> torch.Size:
        """The shape of the entry at ``key`` (batch size for collections)."""
        value = self._get_path(key)
        return value.batch_size if is_tensor_collection(value) else value.shape

    def entry_class(self, key: NestedKey) -> type:
        """The class of the entry at ``key``."""
        return type(self._get_path(key))

    def keys(self, include_nested: bool = False, leaves_only: bool = False,
             is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
             ) -> TensorDictKeysView:
        """A live view of the keys (nested ones as tuples with ``include_nested``)."""
        return TensorDictKeysView(self, include_nested, leaves_only, is_leaf, sort)

    def values(self, include_nested: bool = False, leaves_only: bool = False,
               is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
               ) -> TensorDictValuesView:
        """The values matching :meth:`keys` with the same flags."""
        return TensorDictValuesView(self.keys(include_nested, leaves_only, is_leaf, sort=sort))

    def items(self, include_nested: bool = False, leaves_only: bool = False,
              is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
              ) -> TensorDictItemsView:
        """``(key, value)`` pairs matching :meth:`keys` with the same flags."""
        return TensorDictItemsView(self.keys(include_nested, leaves_only, is_leaf, sort=sort))

    @property
    def sorted_keys(self) -> list[str]:
        """The top-level keys in alphabetical order."""
        return sorted(self._keys_str())

    def is_empty(self) -> bool:
        """True if no tensor or non-tensor leaf is stored (empty sub-TensorDicts aside)."""
        return next(iter(self.keys(True, True)), None) is None

    @property
    def depth(self) -> int:
        """The maximum nesting depth of the leaves (0 for a flat TensorDict)."""
        return max((len(k) - 1 if isinstance(k, tuple) else 0
                    for k in self.keys(True, True)), default=0)

    # -- writing -------------------------------------------------------------------------
    def set(self, key: NestedKey, item: Any, inplace: bool = False, *,
            non_blocking: bool = False, **kwargs: Any) -> Any:
        """Write ``item`` at ``key``, creating intermediate levels; returns self.

        With ``inplace=True`` an existing entry is overwritten in its storage.
        """
        if key.__class__ is str:
            return self._set_str(key, item, inplace=inplace, validated=False,
                                 non_blocking=non_blocking)
        path = key_to_path(key)
        parent = self._parent_of(path, create=True) if len(path) > 1 else self
        parent._set_str(path[-1], item, inplace=inplace, validated=False,
                        non_blocking=non_blocking)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is str:
            self._set_str(key, value, inplace=False, validated=False)
        elif key.__class__ is tuple and key and all(isinstance(k, (str, tuple)) for k in key):
            self.set(key, value)
        else:
            self._set_at_index(key, value)

    def set_(self, key: NestedKey, item: Any, *, non_blocking: bool = False) -> Any:
        """Copy ``item`` into the existing entry ``key`` (KeyError if absent).

        Allowed on locked TensorDicts.
        """
        path = key_to_path(key)
        parent = self._existing_parent(path)
        parent._set_str(path[-1], item, inplace=True, validated=False, non_blocking=non_blocking)
        return self

    def _existing_parent(self, path: tuple[str, ...]) -> Any:
        """The sub-TensorDict holding the existing entry ``path`` (KeyError naming it if it
        is absent); the entry itself is not read, so ragged lazy stacks are fine."""
        parent = self._parent_of(path, create=False)
        if parent._peek_str(path[-1], None) is None:
            shown = path if len(path) > 1 else path[0]
            raise errors.missing_key(shown, list(parent._keys_str()), path[:-1])
        return parent

    def set_non_tensor(self, key: NestedKey, value: Any) -> Any:
        """Store ``value`` as non-tensor data, whatever its type."""
        path = key_to_path(key)
        parent = self._parent_of(path, create=True)
        data = NonTensorData(value, batch_size=parent.batch_size, device=parent.device)
        parent._set_str(path[-1], data, inplace=False, validated=True)
        return self

    def setdefault(self, key: NestedKey, default: Any = None) -> Any:
        """The value at ``key``; ``default`` is written there first if it is missing."""
        if key not in self:
            self.set(key, default)
        return self[key]

    def __delitem__(self, key: NestedKey) -> None:
        self.del_(key)

    def del_(self, key: NestedKey) -> Any:
        """Delete the (nested) entry ``key``; returns self."""
        path = key_to_path(key)
        self._parent_of(path, create=False)._del_str(path[-1])
        return self

    def pop(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """Remove ``key`` and return its stored value (or ``default`` if missing)."""
        value = self._get_path(key, default if default is not NO_DEFAULT else NO_DEFAULT)
        if key in self:
            self.del_(key)
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last top-level ``(key, value)`` pair."""
        keys = list(self._keys_str())
        if not keys:
            raise KeyError("popitem(): TensorDict is empty")
        value = self._get_str(keys[-1])
        self._del_str(keys[-1])
        return keys[-1], value

    def clear(self) -> Any:
        """Remove every entry; returns self."""
        for key in list(self._keys_str()):
            self._del_str(key)
        return self

    def update(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
               clone: bool = False, inplace: bool = False, *,
               keys_to_update: Sequence[NestedKey] | None = None,
               non_blocking: bool = False, is_leaf: Any = None, update_batch_size: bool = False,
               ignore_lock: bool = False) -> Any:
        """Write every entry of ``input_dict_or_td`` (sub-TensorDicts are merged).

        Validates everything first: on error nothing has been written.

        >>> td = TensorDict({"a": {"b": torch.zeros(())}})
        >>> td.update({"a": {"c": torch.ones(())}})
        TensorDict(batch_size=[], fields={a: {b: f32[], c: f32[]}})
        """
        allowed = None
        if keys_to_update is not None:
            allowed = {key_to_path(k) for k in keys_to_update}
        writes = self._plan_update(input_dict_or_td, (), allowed, clone)
        for parent_path, key, value in writes:
            parent = self._parent_of(parent_path + (key,), create=True)
            parent._set_str(key, value, inplace=inplace, validated=True, non_blocking=non_blocking)
        return self

    def _plan_update(self, source: Any, prefix: tuple[str, ...],
                     allowed: set[tuple[str, ...]] | None, clone: bool
                     ) -> list[tuple[tuple[str, ...], str, Any]]:
        """Validated ``(parent path, key, value)`` writes for :meth:`update`."""
        items = source.items() if isinstance(source, (Mapping, TensorDictBase)) else source
        writes: list[tuple[tuple[str, ...], str, Any]] = []
        for key, value in items:
            path = prefix + ((key,) if key.__class__ is str else key_to_path(key))
            if allowed is not None and not any(path[: len(a)] == a or a[: len(path)] == path
                                               for a in allowed):
                continue
            parent = self if len(path) == 1 else self._planned_parent(path)
            if value.__class__ is not torch.Tensor and _is_mapping_like(value):
                target = parent._get_str(path[-1], None)
                if _is_node(target):
                    writes += self._plan_update(value, path, allowed, clone)
                    continue
            if allowed is not None and not any(path[: len(a)] == a for a in allowed):
                continue
            if clone and isinstance(value, torch.Tensor):
                value = value.clone()
            writes.append((path[:-1], path[-1], parent._validate_value(value, path[-1])))
        return writes

    def _planned_parent(self, path: tuple[str, ...]) -> Any:
        """The existing parent of ``path`` or, if it does not exist yet, a stand-in."""
        node: Any = self
        for part in path[:-1]:
            child = node._get_str(part, None)
            if child is None:
                return node._empty_child()
            if not isinstance(child, TensorDictBase):
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a TensorDict (writing {path!r})."
                )
            node = child
        return node

    def update_(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
                clone: bool = False, *, non_blocking: bool = False,
                keys_to_update: Sequence[NestedKey] | None = None) -> Any:
        """Copy every entry of the input into the existing entries (KeyError if absent).

        Every key is checked before the first copy.
        """
        for key, value in self._existing_items(input_dict_or_td, keys_to_update, clone):
            self.set_(key, value, non_blocking=non_blocking)
        return self

    def update_at_(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
                   idx: Any, clone: bool = False, *, non_blocking: bool = False,
                   keys_to_update: Sequence[NestedKey] | None = None) -> Any:
        """Write the leaves of the input into the existing entries at the batch index
        ``idx`` (in place; KeyError, before any write, if an entry is absent).

        >>> td = TensorDict(a=torch.zeros(3), n={"b": torch.zeros(3)}, batch_size=[3])
        >>> td.update_at_({"a": 1.0, "n": {"b": 2.0}}, 1)["n", "b"]
        tensor([0., 2., 0.])
        """
        if isinstance(input_dict_or_td, TensorDictBase):  # one indexed write, part by part
            source = input_dict_or_td if keys_to_update is None else \
                input_dict_or_td.select(*keys_to_update, strict=False)
            for key in source.keys(True, True):  # its entries are not read (may be ragged)
                self._existing_parent(key_to_path(key))
            self._set_at_index(idx, source)
            return self
        for key, value in self._existing_items(input_dict_or_td, keys_to_update, clone):
            self._write_at(key_to_path(key), idx, value)
        return self

    def set_at_(self, key: NestedKey, value: Any, index: Any, *,
                non_blocking: bool = False) -> Any:
        """Write ``value`` into the existing entry ``key`` at the batch index ``index``
        (in place); returns self.

        >>> td = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
        >>> td.set_at_("a", torch.ones(2), 1)["a"][1]
        tensor([1., 1.])
        """
        return self.update_at_({key: value}, index, non_blocking=non_blocking)

    def get_at(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """``td.get(key)[index]``: the entry ``key`` at the batch index (given second or as
        ``index=``). A missing key gives the default, as :meth:`get` does.

        >>> td = TensorDict(a=torch.arange(3), batch_size=[3])
        >>> td.get_at("a", 1), td.get_at("zzz", 1), td.get_at("zzz", 1, "default")
        (tensor(1), None, 'default')
        """
        if args:
            index, args = args[0], args[1:]
        elif "index" in kwargs:
            index = kwargs.pop("index")
        else:
            raise TypeError("index argument missing from get_at")
        value = self._get_path(key, None)  # entries are never None: None means missing
        if value is None:
            return self.get(key, *args, **kwargs)
        return value[index]

    def _existing_items(self, source: Any, keys_to_update: Sequence[NestedKey] | None,
                        clone: bool) -> list[tuple[NestedKey, Any]]:
        """The leaves of ``source`` (those of ``keys_to_update``) to write in place, after
        checking that each entry exists (KeyError naming the first one that does not)."""
        wanted = None if keys_to_update is None else {unravel_key(k) for k in keys_to_update}
        items = [(key, value.clone() if clone and isinstance(value, torch.Tensor) else value)
                 for key, value in _flat_items(source)
                 if wanted is None or unravel_key(key) in wanted]
        for key, _ in items:
            self._existing_parent(key_to_path(key))  # raises KeyError naming the missing key
        return items

    def _write_at(self, path: tuple[str, ...], index: Any, value: Any) -> None:
        """Write ``value`` into the existing entry at ``path``, at the batch ``index``."""
        target = self._get_path(path)
        if isinstance(target, torch.Tensor):
            target[index] = value
        elif getattr(target, "_is_non_tensor", False):
            self._parent_of(path, create=False)._set_at_index(index, {path[-1]: value})
        else:
            target._set_at_index(index, value)

    # -- construction helpers ---------------------------------------------------------------
    @classmethod
    def fromkeys(cls, keys: Iterable[NestedKey], value: Any = 0) -> Any:
        """A TensorDict with ``value`` at each (nested) key.

        >>> TensorDict.fromkeys(["a", ("b", "c")], 0)
        TensorDict(batch_size=[], fields={a: i64[], b: {c: i64[]}})
        """
        from tensordict._td import TensorDict

        out = TensorDict()
        for key in keys:
            out.set(key, value)
        return out


def _is_mapping_like(value: Any) -> bool:
    """A mapping or a (non-tensor-data) TensorDict: merged into sub-TensorDicts by update."""
    return isinstance(value, Mapping) or _is_node(value)


def _flat_items(source: Any) -> Iterable[tuple[NestedKey, Any]]:
    if isinstance(source, TensorDictBase):
        return source.items(True, True, is_leaf=is_leaf_nontensor)
    out: list[tuple[NestedKey, Any]] = []
    for key, value in source.items():
        if isinstance(value, Mapping):
            out += [((key, *key_to_path(k)), v) for k, v in _flat_items(value)]
        else:
            out.append((key, value))
    return out
