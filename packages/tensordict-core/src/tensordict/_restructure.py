"""Restructuring a TensorDict's keys: copies, selections, renames, flattening, exports.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)}}, [2])
    >>> td.select(("n", "b")).flatten_keys()
    TensorDict(batch_size=[2], fields={n.b: f32[]})
    >>> td.exclude("n").to_dict()
    {'a': tensor([0., 0.])}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import NO_DEFAULT, classes
from tensordict._keys import is_leaf_nontensor
from tensordict._nested_key import NestedKey, key_to_path, unravel_key
from tensordict._nontensor import unwrap_non_tensor
from tensordict._shapes import as_size

KEY_SEPARATOR = "."


class RestructureMixin:
    """New TensorDicts (or in-place rewrites) with the keys selected, renamed or moved."""

    __slots__ = ()

    # -- copies and selections ------------------------------------------------------------
    def copy(self) -> Any:
        """A shallow copy: new structure, same tensors."""
        return self.clone(recurse=False)

    def __copy__(self) -> Any:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        return self.clone()

    def select(self, *keys: NestedKey, inplace: bool = False, strict: bool = True) -> Any:
        """A TensorDict with only ``keys``, in that order, sharing the selected values
        (KeyError for a missing key unless ``strict=False``).

        >>> td = TensorDict({"a": torch.zeros(1), "n": {"b": torch.ones(1), "c": 0}})
        >>> td.select(("n", "b"), "a")
        TensorDict(batch_size=[], fields={a: f32[1], n: {b: f32[1]}})
        """
        out = self._empty_like_self()
        for key in keys:
            path = (key,) if key.__class__ is str else key_to_path(key)
            value = self._get_path(path, NO_DEFAULT if strict else None)
            if value is None:
                continue
            node, source = out, self
            for part in path[:-1]:  # fresh levels, so the selection never edits self
                source = source._get_str(part)
                child = node._get_str(part, None)
                if child is None or child is source:
                    child = source._empty_like_self()
                    node._set_str(part, child, inplace=False, validated=True)
                node = child
            node._set_str(path[-1], value, inplace=False, validated=True)
        return self._replace_contents(out) if inplace else out

    def exclude(self, *keys: NestedKey, inplace: bool = False) -> Any:
        """A TensorDict without ``keys``."""
        paths = [key_to_path(k) for k in keys]

        def rule(path: tuple[str, ...], value: Any) -> str:
            if any(path[: len(p)] == p for p in paths):
                return "drop"
            return "descend" if any(p[: len(path)] == path for p in paths) else "keep"

        result = self._filtered(rule)
        return self._replace_contents(result) if inplace else result

    def _filtered(self, rule: Callable[[tuple[str, ...], Any], str],
                  prefix: tuple[str, ...] = ()) -> Any:
        """A shallow copy; ``rule(path, value)`` says "keep", "descend" or "drop"."""
        out = self._empty_like_self()
        for key in self._keys_str():
            path = prefix + (key,)
            value = self._get_str(key)
            verdict = rule(path, value)
            if verdict == "descend" and _is_node(value):
                value = value._filtered(rule, path)
            elif verdict != "keep":
                continue
            out._set_str(key, value, inplace=False, validated=True)
        return out

    def _empty_like_self(self) -> Any:
        return classes.TensorDict._new_unsafe({}, self.batch_size, self.device,
                                              getattr(self, "_names", None))

    def _replace_contents(self, other: Any) -> Any:
        for key in list(self._keys_str()):
            if key not in other._keys_str():
                self._del_str(key)
        for key in other._keys_str():
            self._set_str(key, other._get_str(key), inplace=False, validated=True)
        return self

    def split_keys(self, *key_sets: Iterable[NestedKey], inplace: bool = False,
                   default: Any = NO_DEFAULT, strict: bool = True) -> tuple[Any, ...]:
        """One TensorDict per key set, plus one with the remaining keys."""
        parts = [self.select(*keys, strict=strict) for keys in key_sets]
        used = [k for keys in key_sets for k in keys]
        rest = self.exclude(*used)
        if inplace:
            self._replace_contents(rest)
        return (*parts, rest)

    def separates(self, *keys: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """Pop ``keys`` into a new TensorDict."""
        out = self.select(*keys, strict=default is NO_DEFAULT)
        for key in keys:
            if key in self:
                self.del_(key)
        return out

    def rename_key_(self, old_key: NestedKey, new_key: NestedKey, safe: bool = False) -> Any:
        """Move the entry at ``old_key`` to ``new_key``; returns self."""
        if safe and new_key in self:
            raise KeyError(f"key {unravel_key(new_key)!r} already exists")
        if self.is_locked:
            raise errors.locked("rename an entry of a")
        value = self._get_path(old_key)
        self.del_(old_key)
        path = key_to_path(new_key)
        self._parent_of(path, create=True)._set_str(path[-1], value, inplace=False, validated=True)
        return self

    def rename_keys(self, mapping: Mapping[NestedKey, NestedKey]) -> Any:
        """A copy with keys renamed by ``mapping``."""
        out = self.copy()
        for old, new in mapping.items():
            out.rename_key_(old, new)
        return out

    def replace(self, *args: Any, **kwargs: Any) -> Any:
        """A shallow copy with some entries replaced (like ``dataclasses.replace``)."""
        out = self.copy()
        out.update(dict(*args, **kwargs))
        return out

    def create_nested(self, key: NestedKey) -> Any:
        """Insert an empty sub-TensorDict at ``key``; returns self."""
        path = key_to_path(key)
        parent = self._parent_of(path, create=True)
        parent._set_str(path[-1], parent._empty_child(), inplace=False, validated=True)
        return self

    def flatten_keys(self, separator: str = KEY_SEPARATOR, inplace: bool = False,
                     is_leaf: Any = None) -> Any:
        """Nested entries as top-level keys joined with ``separator``."""
        out = self._empty_like_self()
        for key, value in self.items(True, True, is_leaf=is_leaf or is_leaf_nontensor):
            name = separator.join(key) if isinstance(key, tuple) else key
            if name in out._keys_str():
                raise KeyError(f"flatten_keys: key {name!r} would appear twice")
            out._set_str(name, value, inplace=False, validated=True)
        return self._replace_contents(out) if inplace else out

    def unflatten_keys(self, separator: str = KEY_SEPARATOR, inplace: bool = False) -> Any:
        """Keys containing ``separator`` split into nested entries."""
        out = self._empty_like_self()
        for key in self._keys_str():
            value = self._get_str(key)
            if _is_node(value):
                value = value.unflatten_keys(separator)
            path = tuple(key.split(separator)) if separator in key else (key,)
            parent = out._parent_of(path, create=True)
            existing = parent._get_str(path[-1], None)
            base = classes.TensorDictBase
            if isinstance(existing, base) and isinstance(value, base):
                existing.update(value)
            else:
                parent._set_str(path[-1], value, inplace=False, validated=True)
        return self._replace_contents(out) if inplace else out

    def empty(self, recurse: bool = False, *, batch_size: Any = None, device: Any = NO_DEFAULT,
              names: Any = None) -> Any:
        """A TensorDict with no leaves (keeping the sub-TensorDict structure with
        ``recurse=True``)."""
        out = classes.TensorDict._new_unsafe(
            {}, self.batch_size if batch_size is None else as_size(batch_size),
            self.device if device is NO_DEFAULT else device, getattr(self, "_names", None))
        if recurse:
            for key in self._keys_str():
                value = self._get_str(key)
                if _is_node(value):
                    out._set_str(key, value.empty(recurse=True), inplace=False, validated=True)
                elif getattr(value, "_is_non_tensor", False):
                    out._set_str(key, value, inplace=False, validated=True)
        return out

    def filter_non_tensor_data(self) -> Any:
        """A copy without non-tensor entries."""
        return self._filtered(
            lambda path, value: "descend" if _is_node(value) else
            ("drop" if getattr(value, "_is_non_tensor", False) else "keep"))

    def filter_empty_(self) -> Any:
        """Drop sub-TensorDicts that hold no leaves; returns self."""
        for key in list(self._keys_str()):
            value = self._get_str(key)
            if _is_node(value):
                if value.filter_empty_().is_empty():
                    self._del_str(key)
        return self

    def to_dict(self, *, retain_none: bool = True, convert_tensors: bool = False) -> dict[str, Any]:
        """A nested dict of the entries (non-tensor data unwrapped)."""
        out: dict[str, Any] = {}
        for key in self._keys_str():
            value = self._get_str(key)
            if _is_node(value):
                out[key] = value.to_dict(retain_none=retain_none, convert_tensors=convert_tensors)
            else:
                value = unwrap_non_tensor(value)
                if value is None and not retain_none:
                    continue
                if convert_tensors and isinstance(value, torch.Tensor):
                    value = value.tolist()
                out[key] = value
        return out

    def tolist(self, *, convert_nodes: bool = True, convert_tensors: bool = False) -> Any:
        """Nested lists over the batch dims, each element a dict of its entries."""
        if not self.batch_size:
            return self.to_dict(convert_tensors=convert_tensors) if convert_nodes else self
        return [td.tolist(convert_nodes=convert_nodes, convert_tensors=convert_tensors)
                for td in self.unbind(0)]


def _is_node(value: Any) -> bool:
    """Whether ``value`` is a sub-TensorDict (not a leaf, not non-tensor data)."""
    return isinstance(value, classes.TensorDictBase) and \
        not getattr(value, "_is_non_tensor", False)
