"""Key views of a TensorDict: ``td.keys(include_nested=..., leaves_only=..., ...)``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(()), "n": {"b": torch.zeros(())}})
    >>> list(td.keys(include_nested=True))
    ['a', ('n', 'b'), 'n']
    >>> ("n", "b") in td.keys(include_nested=True)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, KeysView, Set
from typing import TYPE_CHECKING, Any

import torch

from tensordict._collection import is_collection_class
from tensordict._nested_key import NestedKey, key_to_path

if TYPE_CHECKING:
    from tensordict._base import TensorDictBase


_Tensor = torch.Tensor


def default_is_leaf(cls: type) -> bool:
    """True for tensor types: the leaves ``keys(leaves_only=True)`` lists by default."""
    return not is_collection_class(cls)


def is_leaf_nontensor(cls: type) -> bool:
    """Like :func:`default_is_leaf`, but non-tensor data count as leaves too."""
    return default_is_leaf(cls) or getattr(cls, "_is_non_tensor", False)


class _NestedTensorsAsLists:
    """An ``is_leaf`` under which ``items``/``values`` walk lazy stacks as lists of parts.

    Leaves are tensors, as with :func:`default_is_leaf`; a lazy stack is not read as one
    (possibly ragged) stacked tensor but part by part, under the keys ``"0"``, ``"1"``...
    The marker is falsy, so ``is_leaf or default`` style code treats it as "no choice".
    """

    _instance: _NestedTensorsAsLists | None = None

    def __new__(cls) -> _NestedTensorsAsLists:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __call__(self, cls: type) -> bool:
        return default_is_leaf(cls)

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "_NESTED_TENSORS_AS_LISTS"


_NESTED_TENSORS_AS_LISTS = _NestedTensorsAsLists()
#: the predicates under which a TensorDict is never a leaf
_STOCK_PREDICATES = (default_is_leaf, is_leaf_nontensor, _NESTED_TENSORS_AS_LISTS)


def _items_as_lists(td: Any, prefix: tuple[str, ...], include_nested: bool,
                    leaves_only: bool) -> Iterator[tuple[NestedKey, Any]]:
    """``(key, value)`` pairs of ``td`` with lazy stacks walked part by part."""
    parts = getattr(td, "tensordicts", None)
    if parts is not None:
        for i, part in enumerate(parts):
            yield from _items_as_lists(part, prefix + (str(i),), include_nested, leaves_only)
        return
    for key in td._keys_str():
        value = td._get_str(key)
        path = prefix + (key,)
        if not _is_node(value, default_is_leaf) or not _has_entries(value):
            yield (path if len(path) > 1 else key), value
            continue
        if not include_nested:
            if not leaves_only:
                yield (path if len(path) > 1 else key), value
            continue
        if not leaves_only and getattr(value, "tensordicts", None) is None:
            yield (path if len(path) > 1 else key), value
        yield from _items_as_lists(value, path, include_nested, leaves_only)


def _is_node(value: Any, is_leaf: Callable[[type], bool]) -> bool:
    return not isinstance(value, torch.Tensor) and not is_leaf(type(value))


def _has_entries(value: Any) -> bool:
    return not getattr(value, "_is_non_tensor", False)


def has_leaf(entries: dict[str, Any], dense: type) -> bool:
    """Whether the stored dict ``entries`` holds a tensor or non-tensor leaf at any depth
    (empty sub-TensorDicts do not count): the stored dicts of the sub-collections of class
    ``dense`` (whose ``_tensordict`` is a dict) are walked, no key is listed.

    >>> from tensordict import TensorDict
    >>> has_leaf({"n": TensorDict()}, TensorDict)
    False
    >>> has_leaf({"n": TensorDict(a=torch.zeros(()))}, TensorDict)
    True
    """
    for value in entries.values():
        cls = value.__class__
        if cls is _Tensor:
            return True
        if cls is dense:
            if has_leaf(value._tensordict, dense):
                return True
        elif isinstance(value, _Tensor) or getattr(value, "_is_non_tensor", False) or \
                not value.is_empty():
            return True
    return False


def collect_entries(td: Any, prefix: tuple[str, ...], include_nested: bool,
                    leaves_only: bool, is_leaf: Callable[[type], bool], with_values: bool,
                    out: list[Any]) -> list[Any]:
    """The one key traversal: append to ``out`` the keys of ``td`` (``(key, value)``
    pairs with ``with_values``), sub-TensorDicts after their entries, and return it.

    A TensorDict's stored dict is read directly; a lazy stack shows one part's values to
    classify its keys, so nothing is stacked for keys alone.

    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(()), "n": {"b": torch.zeros(())}})
    >>> collect_entries(td, (), True, True, default_is_leaf, False, [])
    ['a', ('n', 'b')]
    """
    if is_leaf not in _STOCK_PREDICATES:
        return _collect_by_predicate(td, prefix, include_nested, leaves_only, is_leaf,
                                     with_values, out)
    entries = getattr(td, "_tensordict", None)
    dense = entries.__class__ is dict
    pairs = entries.items() if dense else [(key, td._peek_str(key)) for key in td._keys_str()]
    # a sub-TensorDict of the same class is a node with entries under the stock predicates
    same_class_is_node = dense
    td_class = td.__class__
    for key, value in pairs:
        name = prefix + (key,) if prefix else key
        cls = value.__class__
        if cls is _Tensor or (cls is not td_class or not same_class_is_node) and (
                isinstance(value, _Tensor) or is_leaf(cls)):
            if with_values:
                out.append((name, value if dense else td._get_str(key)))
            else:
                out.append(name)
            continue
        node = value if dense or not (with_values or include_nested) else td._get_str(key)
        if include_nested and (cls is td_class or _has_entries(value)):
            collect_entries(node, prefix + (key,), include_nested, leaves_only, is_leaf,
                            with_values, out)
        if not leaves_only:
            out.append((name, node) if with_values else name)
    return out


def iter_entries(td: Any, prefix: tuple[str, ...], include_nested: bool, leaves_only: bool,
                 is_leaf: Callable[[type], bool]) -> Iterator[tuple[NestedKey, Any]]:
    """``(key, value)`` pairs of ``td`` as ``items()`` gives them: lazily, a sub-TensorDict
    before its entries (what upstream yields), so a search can stop before reading a
    ragged lazy stack's leaves. Stock predicates only (see :func:`collect_entries`).

    >>> from tensordict import TensorDict
    >>> td = TensorDict({"n": {"b": torch.zeros(())}})
    >>> [key for key, _ in iter_entries(td, (), True, False, default_is_leaf)]
    ['n', ('n', 'b')]
    """
    entries = getattr(td, "_tensordict", None)
    dense = entries.__class__ is dict
    td_class = td.__class__
    for key in list(entries) if dense else list(td._keys_str()):
        value = entries[key] if dense else td._get_str(key)
        name = prefix + (key,) if prefix else key
        cls = value.__class__
        if cls is _Tensor or (cls is not td_class or not dense) and (
                isinstance(value, _Tensor) or is_leaf(cls)):
            yield name, value
            continue
        if not leaves_only:
            yield name, value
        if include_nested and (cls is td_class or _has_entries(value)):
            yield from iter_entries(value, prefix + (key,), include_nested, leaves_only, is_leaf)


def _collect_by_predicate(td: Any, prefix: tuple[str, ...], include_nested: bool,
                          leaves_only: bool, is_leaf: Callable[[type], bool],
                          with_values: bool, out: list[Any]) -> list[Any]:
    """:func:`collect_entries` under a custom ``is_leaf``: it picks the entries listed
    with ``leaves_only`` (tensors too are listed only if it says so), and every
    sub-TensorDict is walked with ``include_nested``, leaf or not.

    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(()), "n": {"m": {"b": torch.zeros(())}}})
    >>> _collect_by_predicate(td, (), True, True, lambda cls: cls is TensorDict, False, [])
    [('n', 'm'), 'n']
    """
    entries = getattr(td, "_tensordict", None)
    pairs = entries.items() if entries.__class__ is dict else \
        [(key, td._get_str(key)) for key in td._keys_str()]
    for key, value in pairs:
        name = prefix + (key,) if prefix else key
        cls = value.__class__
        if include_nested and cls is not _Tensor and not isinstance(value, _Tensor) \
                and _has_entries(value):
            _collect_by_predicate(value, prefix + (key,), include_nested, leaves_only,
                                  is_leaf, with_values, out)
        if not leaves_only or is_leaf(cls):
            out.append((name, value) if with_values else name)
    return out


def _count_entries(td: Any, include_nested: bool, leaves_only: bool,
                   is_leaf: Callable[[type], bool]) -> int:
    """How many keys :func:`collect_entries` lists (``list(view)`` asks ``len`` first)."""
    entries = getattr(td, "_tensordict", None)
    if entries.__class__ is not dict or is_leaf not in _STOCK_PREDICATES:
        # a lazy stack or a custom predicate: count what the traversal lists
        return len(collect_entries(td, (), include_nested, leaves_only, is_leaf, False, []))
    return _count_stored(entries, td.__class__, include_nested, leaves_only, is_leaf)


def _count_stored(entries: dict[str, Any], td_class: type, include_nested: bool,
                  leaves_only: bool, is_leaf: Callable[[type], bool]) -> int:
    """:func:`_count_entries` of the stored dict of a ``td_class`` instance."""
    count = 0
    for value in entries.values():
        cls = value.__class__
        if cls is _Tensor or cls is not td_class and (isinstance(value, _Tensor)
                                                      or is_leaf(cls)):
            count += 1
            continue
        if include_nested:
            if cls is td_class:
                count += _count_stored(value._tensordict, td_class, True, leaves_only, is_leaf)
            elif _has_entries(value):
                count += _count_entries(value, True, leaves_only, is_leaf)
        if not leaves_only:
            count += 1
    return count


class TensorDictKeysView:
    """A live view over the keys of a TensorDict (and, optionally, its sub-TensorDicts)."""

    __slots__ = ("_td", "include_nested", "leaves_only", "is_leaf", "sort")

    def __init__(
        self,
        td: TensorDictBase,
        include_nested: bool = False,
        leaves_only: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        sort: bool = False,
    ) -> None:
        self._td = td
        self.include_nested = include_nested
        self.leaves_only = leaves_only
        self.is_leaf = default_is_leaf if is_leaf is None else is_leaf
        self.sort = sort

    def __iter__(self) -> Iterator[NestedKey]:
        if not (self.include_nested or self.leaves_only or self.sort):
            return TopKeysView.__iter__(self)  # type: ignore[arg-type]
        keys = self._collect(False)
        if self.sort:
            keys.sort(key=_sort_key)
        return iter(keys)

    def _collect(self, with_values: bool) -> list[Any]:
        return collect_entries(self._td, (), self.include_nested, self.leaves_only,
                               self.is_leaf, with_values, [])

    def __len__(self) -> int:
        if not (self.include_nested or self.leaves_only):
            return TopKeysView.__len__(self)  # type: ignore[arg-type]
        return _count_entries(self._td, self.include_nested, self.leaves_only, self.is_leaf)

    def __contains__(self, key: object) -> bool:
        if key.__class__ is str:
            return self._td._peek_str(key, None) is not None
        try:
            path = key_to_path(key)  # type: ignore[arg-type]
        except (TypeError, KeyError):
            return False
        if len(path) > 1 and not self.include_nested:
            return False
        node = self._td
        for part in path[:-1]:
            node = node._get_str(part, None)
            if node is None or not _is_node(node, self.is_leaf):
                return False
        return node._peek_str(path[-1], None) is not None

    def __repr__(self) -> str:
        flags = ""
        if self.include_nested:
            flags += ", include_nested=True"
        if self.leaves_only:
            flags += ", leaves_only=True"
        return f"{type(self).__name__}({list(self)}{flags})"


class TopKeysView(TensorDictKeysView, Set):
    """The view of ``td.keys()`` (no flag given): the top-level keys, read straight from the
    stored dict. A set, as a dict's keys are (and as upstream's view of them is).

    >>> from tensordict import TensorDict
    >>> keys = TensorDict(a=torch.zeros(()), n={"b": torch.zeros(())}).keys()
    >>> list(keys), len(keys), "n" in keys, ("n", "b") in keys
    (['a', 'n'], 2, True, False)
    >>> keys == {"n", "a"}, keys - {"a"}
    (True, {'n'})
    """

    __slots__ = ()
    # the flags are constants (class attributes shadowing the slots)
    include_nested = leaves_only = sort = False
    is_leaf = staticmethod(default_is_leaf)

    def __init__(self, td: TensorDictBase) -> None:
        self._td = td

    def __iter__(self) -> Iterator[str]:
        entries = getattr(self._td, "_tensordict", None)
        return iter(entries) if entries.__class__ is dict else self._td._keys_str()

    def __len__(self) -> int:
        entries = getattr(self._td, "_tensordict", None)
        if entries.__class__ is dict:
            return len(entries)
        return sum(1 for _ in self._td._keys_str())

    @classmethod
    def _from_iterable(cls, iterable: Any) -> set[str]:
        """What set operations (``keys | other``...) build: a plain set, as for a dict."""
        return set(iterable)


class DictKeysView(TopKeysView):
    """The :class:`TopKeysView` of a TensorDict: it holds the stored dict itself.

    >>> from tensordict import TensorDict
    >>> keys = TensorDict(a=torch.zeros(())).keys()
    >>> type(keys).__name__, list(keys), "a" in keys
    ('DictKeysView', ['a'], True)
    """

    __slots__ = ("_entries",)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        if key.__class__ is str:
            return key in self._entries
        return TopKeysView.__contains__(self, key)


KeysView.register(TopKeysView)  # isinstance(td.keys(), KeysView), as for a dict


def iter_items(keys: TensorDictKeysView) -> Iterator[tuple[NestedKey, Any]]:
    """The ``(key, value)`` pairs of a key view, in its order: an iterator, as upstream's
    ``items()`` with flags is a generator. Values are read as it is consumed (a lazy
    stack's leaf is stacked only when reached), but for a sorted view or a predicate of
    the caller's, which are collected first.

    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(()), "n": {"b": torch.ones(())}})
    >>> pairs = iter_items(td.keys(True, True))
    >>> next(pairs)
    ('a', tensor(0.))
    """
    is_leaf = keys.is_leaf
    if is_leaf is _NESTED_TENSORS_AS_LISTS:
        return _items_as_lists(keys._td, (), keys.include_nested, keys.leaves_only)
    if keys.sort or is_leaf not in _STOCK_PREDICATES:
        pairs = keys._collect(True)
        if keys.sort:
            pairs.sort(key=lambda pair: _sort_key(pair[0]))
        return iter(pairs)
    return iter_entries(keys._td, (), keys.include_nested, keys.leaves_only, is_leaf)


def iter_values(keys: TensorDictKeysView) -> Iterator[Any]:
    """The values of :func:`iter_items`, as upstream's ``values()`` with flags.

    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(()), "n": {"b": torch.ones(())}})
    >>> list(iter_values(td.keys(True, True)))
    [tensor(0.), tensor(1.)]
    """
    return (value for _, value in iter_items(keys))


def _sort_key(key: NestedKey) -> str:
    return key if key.__class__ is str else ".".join(key)
