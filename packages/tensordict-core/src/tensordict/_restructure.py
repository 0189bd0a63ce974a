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

from collections.abc import Iterable, Mapping
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import NO_DEFAULT, classes, is_sub_tensordict
from tensordict._keys import collect_entries, is_leaf_nontensor
from tensordict._last_op import made_by
from tensordict._nested_key import NestedKey, key_to_path, unravel_key
from tensordict._nontensor import unwrap_non_tensor
from tensordict._shapes import as_size

_Tensor = torch.Tensor

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
        out = self._selected(_key_tree(keys, narrow=True), strict, ())
        return self._replace_contents(out) if inplace else out

    def _selected(self, tree: dict[str, Any], strict: bool, prefix: tuple[str, ...]) -> Any:
        """A new TensorDict of the entries ``tree`` names (see :func:`_key_tree`)."""
        entries = self._entry_dict()
        out: dict[str, Any] = {}
        for key, below in tree.items():
            value = entries.get(key)
            if value is None:
                if strict:
                    raise errors.missing_key(prefix + (key,) if prefix else key,
                                             list(entries), prefix)
                continue
            if below is None:
                out[key] = value
            elif is_sub_tensordict(value):
                sub = value._selected(below, strict, prefix + (key,))
                if strict or not sub.is_empty():
                    out[key] = sub
            elif strict:
                raise errors.KeyThroughLeafError(
                    f"{key!r} is a {type(value).__name__}, not a tensordict, so it has no "
                    f"entry {next(iter(below))!r} (selecting under {prefix + (key,)!r}).")
        return self._new_like_self(out)

    def exclude(self, *keys: NestedKey, inplace: bool = False) -> Any:
        """A TensorDict without ``keys`` (a missing key is ignored).

        >>> td = TensorDict({"a": torch.zeros(1), "n": {"b": torch.ones(1), "c": 0}})
        >>> td.exclude("a", ("n", "b"))
        TensorDict(batch_size=[], fields={n: {c: i64[]}})
        """
        tree = _key_tree(keys)
        return self._exclude_in_place(tree) if inplace else self._excluded(tree)

    def _exclude_in_place(self, tree: dict[str, Any]) -> Any:
        """Delete the entries ``tree`` names where they live (nested TensorDicts and lazy
        stacks keep their identity); every owner's lock is checked before the first
        deletion, and a missing key is ignored."""
        found: list[tuple[Any, str]] = []
        self._exclusions(tree, found)
        for owner, _ in found:
            if owner.is_locked:
                raise errors.locked("delete an entry of a")
        for owner, key in found:
            owner._del_str(key)
        return self

    def _exclusions(self, tree: dict[str, Any], found: list[tuple[Any, str]]) -> None:
        """Append ``(owner, key)`` for each existing entry ``tree`` names."""
        entries = self._entry_dict()
        for key, below in tree.items():
            value = entries.get(key)
            if value is None:
                continue
            if below is None:
                found.append((self, key))
            elif is_sub_tensordict(value):
                value._exclusions(below, found)

    def _excluded(self, tree: dict[str, Any]) -> Any:
        """A new TensorDict without the entries ``tree`` names (see :func:`_key_tree`)."""
        out = dict(self._entry_dict())
        for key, below in tree.items():
            value = out.get(key)
            if value is None:
                continue
            if below is None:
                del out[key]
            elif is_sub_tensordict(value):
                out[key] = value._excluded(below)
        return self._new_like_self(out)

    def _entry_dict(self) -> dict[str, Any]:
        """The top-level entries as a dict: a TensorDict's own (never to be mutated), a
        new one for the other collections."""
        entries = getattr(self, "_tensordict", None)
        if entries.__class__ is dict:
            return entries
        return {key: self._get_str(key) for key in self._keys_str()}

    def _new_like_self(self, entries: dict[str, Any]) -> Any:
        """A TensorDict of ``entries`` (already valid here) with this batch size, device
        and names."""
        return classes.TensorDict._from_entries(entries, self.batch_size, self.device,
                                              getattr(self, "_names", None))

    def _replace_contents(self, other: Any) -> Any:
        for key in list(self._keys_str()):
            if key not in other._keys_str():
                self._del_str(key)
        for key in other._keys_str():
            self._set_str(key, other._get_str(key), inplace=False, validated=True)
        return self

    def split_keys(self, *key_sets: Iterable[NestedKey], inplace: bool = False,
                   default: Any = NO_DEFAULT, strict: bool = True,
                   reproduce_struct: bool = False) -> tuple[Any, ...]:
        """One TensorDict per key set, plus one with the remaining keys: this one, left
        with them, if ``inplace``. With ``strict=False`` a missing key is skipped, or set
        to ``default`` if given. The remaining keys keep no sub-TensorDict without leaves,
        unless ``reproduce_struct``: then every result has all the sub-TensorDicts of this
        one but those split off (empty where none of its keys went there).

        >>> td = TensorDict(a=torch.zeros(()), b=torch.ones(()))
        >>> first, rest = td.split_keys(["a"], inplace=True)
        >>> list(first.keys()), rest is td, list(td.keys())
        (['a'], True, ['b'])
        """
        key_sets = [list(keys) for keys in key_sets]
        parts = [self.select(*keys, strict=strict) for keys in key_sets]
        if default is not NO_DEFAULT and not strict:
            for part, keys in zip(parts, key_sets):
                for key in keys:
                    if part.get(key, None) is None:
                        part.set(key, default)
        rest = self.exclude(*(k for keys in key_sets for k in keys))
        if reproduce_struct:
            parts = [self.empty(recurse=True).update(part) for part in parts]
        else:  # (on a new structure: its sub-TensorDicts may be this one's)
            rest = rest.clone(recurse=False).filter_empty_()
        if inplace:
            rest = self._replace_contents(rest)
        return (*parts, rest)

    def separates(self, *keys: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """Pop ``keys`` into a new TensorDict."""
        out = self.select(*keys, strict=default is NO_DEFAULT)
        for key in keys:
            if key in self:
                self.del_(key)
        return out

    def rename_key_(self, old_key: NestedKey, new_key: NestedKey, safe: bool = False) -> Any:
        """Move the entry at ``old_key`` to ``new_key``; returns self (a key renamed to
        itself stays where it is, as upstream).

        >>> list(TensorDict(a=torch.zeros(1), b=torch.ones(1)).rename_key_("a", "c").keys())
        ['b', 'c']
        """
        path = key_to_path(new_key)
        same = path == key_to_path(old_key)
        if safe and not same and new_key in self:
            raise KeyError(f"key {unravel_key(new_key)!r} already present in TensorDict (it "
                           "already exists)")
        if self.is_locked:
            raise errors.locked("rename an entry of a")
        value = self._get_path(old_key)
        if same:
            return self
        self.del_(old_key)
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
        """Nested entries as top-level keys joined with ``separator``.

        >>> TensorDict({"a": {"b": torch.zeros(())}}).flatten_keys("/")
        TensorDict(batch_size=[], fields={a/b: f32[]})
        """
        pairs = collect_entries(self, (), True, True, is_leaf or is_leaf_nontensor, True, [])
        out = {(key if key.__class__ is str else separator.join(key)): value
               for key, value in pairs}
        if len(out) < len(pairs):
            names = [key if key.__class__ is str else separator.join(key) for key, _ in pairs]
            twice = next(name for name in names if names.count(name) > 1)
            raise KeyError(f"Flattening keys in tensordict causes keys [{twice!r}] to collide "
                           "(flatten_keys: the key would appear twice)")
        result = self._new_like_self(out)
        if inplace:
            return self._replace_contents(result)
        return made_by(result, "flatten_keys", (separator,), None, self)

    def unflatten_keys(self, separator: str = KEY_SEPARATOR, inplace: bool = False) -> Any:
        """Keys containing ``separator`` split into nested entries (sub-TensorDicts that
        meet are merged).

        >>> TensorDict({"a.b": torch.zeros(()), "a.c": torch.ones(())}).unflatten_keys()
        TensorDict(batch_size=[], fields={a: {b: f32[], c: f32[]}})
        """
        tree = _UnflattenTree()
        for key, value in self._entry_dict().items():
            if value.__class__ is not torch.Tensor and is_sub_tensordict(value):
                value = value.unflatten_keys(separator)
            tree.place(tree.root, key.split(separator), value, key)
        out = tree.build(tree.root, self)
        if inplace:
            return self._replace_contents(out)
        return made_by(out, "unflatten_keys", (separator,), None, self)

    def empty(self, recurse: bool = False, *, batch_size: Any = None, device: Any = NO_DEFAULT,
              names: Any = None) -> Any:
        """A TensorDict with no leaves (keeping the sub-TensorDict structure with
        ``recurse=True``)."""
        out = classes.TensorDict._from_entries(
            {}, self.batch_size if batch_size is None else as_size(batch_size),
            self.device if device is NO_DEFAULT else device, getattr(self, "_names", None))
        if recurse:
            for key in self._keys_str():
                value = self._get_str(key)
                if is_sub_tensordict(value):
                    out._set_str(key, value.empty(recurse=True), inplace=False, validated=True)
                elif getattr(value, "_is_non_tensor", False):
                    out._set_str(key, value, inplace=False, validated=True)
        return out

    def filter_non_tensor_data(self) -> Any:
        """A copy without non-tensor entries (each sub-collection filters its own: a lazy
        stack part by part)."""
        out = self.exclude(*(key for key in self._keys_str()
                             if getattr(self._peek_str(key), "_is_non_tensor", False)))
        for key in list(out._keys_str()):
            value = out._get_str(key)
            if is_sub_tensordict(value):
                out._set_str(key, value.filter_non_tensor_data(), inplace=False, validated=True)
        return out

    def filter_empty_(self) -> Any:
        """Drop sub-TensorDicts that hold no leaves; returns self."""
        entries = getattr(self, "_tensordict", None)  # a TensorDict's stored values
        items = list(entries.items()) if entries.__class__ is dict else \
            [(key, self._peek_str(key)) for key in self._keys_str()]  # (builds no leaf)
        for key, value in items:
            if value.__class__ is not _Tensor and is_sub_tensordict(value) and \
                    self._get_str(key).filter_empty_().is_empty():
                self._del_str(key)
        return self

    def to_dict(self, *, retain_none: bool = True, convert_tensors: bool = False) -> dict[str, Any]:
        """A nested dict of the entries (non-tensor data unwrapped; tensors as lists with
        ``convert_tensors``; entries holding None left out without ``retain_none``).

        >>> TensorDict(a=torch.zeros(1), n={"s": "x"}).to_dict()
        {'a': tensor([0.]), 'n': {'s': 'x'}}
        """
        out: dict[str, Any] = {}
        # a TensorDict's entries are its stored values: no lookup per key
        items = self._tensordict.items() if self.__class__ is classes.TensorDict else \
            [(key, self._get_str(key)) for key in self._keys_str()]
        for key, value in items:
            if value.__class__ is _Tensor:  # the common case, before the other checks
                out[key] = value.tolist() if convert_tensors else value
            elif is_sub_tensordict(value):
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


def _key_tree(keys: Iterable[NestedKey], narrow: bool = False) -> dict[str, Any]:
    """The nested keys ``keys`` as a tree of dicts in their order: ``None`` marks a whole
    entry, a dict the keys below. A deeper key under a whole entry is ignored, or with
    ``narrow`` (as in ``select``) replaces it.

    >>> _key_tree(["a", ("n", "b"), ("n", "c"), ("a", "x")])
    {'a': None, 'n': {'b': None, 'c': None}}
    >>> _key_tree(["a", ("a", "x")], narrow=True)
    {'a': {'x': None}}
    """
    tree: dict[str, Any] = {}
    for key in keys:
        path = (key,) if key.__class__ is str else key_to_path(key)
        node: dict[str, Any] = tree
        for part in path[:-1]:
            child = node.get(part, {})
            if child is None:  # the whole entry is already named
                if not narrow:
                    break
                child = {}
            node[part] = child
            node = child
        else:
            node[path[-1]] = None
    return tree


_OVERRIDE = ("Unflattening key(s) in tensordict will override an existing for unflattened "
             "key {!r}")


class _UnflattenTree:
    """The entries of :meth:`~RestructureMixin.unflatten_keys` as nested dicts, built into
    TensorDicts at the end. A sub-TensorDict that keys must go into is opened into a dict
    that remembers it, so it is rebuilt with its own batch size, device and names."""

    __slots__ = ("root", "_opened")

    def __init__(self) -> None:
        self.root: dict[str, Any] = {}
        self._opened: dict[int, Any] = {}  # id(level dict) -> the sub-TensorDict it opens

    def place(self, level: dict[str, Any], parts: list[str], value: Any, key: str) -> None:
        """Put ``value`` at ``parts`` under ``level``; two sub-TensorDicts are merged, any
        other meeting of two entries raises a KeyError (one would be lost)."""
        for part in parts[:-1]:
            child = level.get(part)
            if child.__class__ is not dict:
                child = level[part] = self._open(child, key)
            level = child
        last = parts[-1]
        present = level.get(last)
        if present is None:
            level[last] = value
            return
        if value.__class__ is torch.Tensor or not is_sub_tensordict(value) \
                or (present.__class__ is not dict and not is_sub_tensordict(present)):
            raise KeyError(_OVERRIDE.format(key))
        if present.__class__ is not dict:
            present = level[last] = self._open(present, key)
        for name, entry in value._entry_dict().items():
            self.place(present, [name], entry, key)

    def _open(self, node: Any, key: str) -> dict[str, Any]:
        if node is None:
            return {}
        if not is_sub_tensordict(node):
            raise errors.KeyThroughLeafError(
                f"{_OVERRIDE.format(key)}: it goes through a {type(node).__name__} leaf")
        level = dict(node._entry_dict())
        self._opened[id(level)] = node
        return level

    def build(self, level: dict[str, Any], like: Any) -> Any:
        """A TensorDict of ``level`` with the batch size, device and names of ``like``."""
        entries = {key: self.build(value, self._opened.get(id(value), like))
                   if value.__class__ is dict else value for key, value in level.items()}
        return like._new_like_self(entries)


