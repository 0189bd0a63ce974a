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

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

from tensordict._collection import is_tensor_collection
from tensordict._nested_key import NestedKey, key_to_path

if TYPE_CHECKING:
    from tensordict._base import TensorDictBase


_Tensor = torch.Tensor


def default_is_leaf(cls: type) -> bool:
    """True for tensor types: the leaves ``keys(leaves_only=True)`` lists by default."""
    return not is_tensor_collection(cls)


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
        keys = self._iter(self._td, ())
        if self.sort:
            return iter(sorted(keys, key=lambda k: k if isinstance(k, str) else ".".join(k)))
        return keys

    def _iter(self, td: TensorDictBase, prefix: tuple[str, ...]) -> Iterator[NestedKey]:
        if not self.include_nested and not self.leaves_only:
            yield from td._keys_str()
            return
        entries = getattr(td, "_tensordict", None)
        if entries.__class__ is dict:  # a TensorDict: read its entries directly
            pairs = list(entries.items())
        else:  # a lazy stack shows one part's values: nothing is stacked
            pairs = [(key, td._peek_str(key)) for key in td._keys_str()]
        for key, value in pairs:
            if value.__class__ is _Tensor or not _is_node(value, self.is_leaf):
                yield prefix + (key,) if prefix else key
                continue
            if self.include_nested and _has_entries(value):
                yield from self._iter(td._get_str(key), prefix + (key,))
            if not self.leaves_only:
                yield prefix + (key,) if prefix else key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __contains__(self, key: object) -> bool:
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


class TensorDictValuesView:
    """Values matching a key view, in the same order (non-tensors unwrapped as stored)."""

    __slots__ = ("_keys",)

    def __init__(self, keys: TensorDictKeysView) -> None:
        self._keys = keys

    def __iter__(self) -> Iterator[Any]:
        keys = self._keys
        if keys.is_leaf is _NESTED_TENSORS_AS_LISTS:
            pairs = _items_as_lists(keys._td, (), keys.include_nested, keys.leaves_only)
            return (value for _, value in pairs)
        td = keys._td
        return (td._get_path(key, None) for key in keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)})"


class TensorDictItemsView(TensorDictValuesView):
    """``(key, value)`` pairs matching a key view."""

    __slots__ = ()

    def __iter__(self) -> Iterator[tuple[NestedKey, Any]]:
        keys = self._keys
        if keys.is_leaf is _NESTED_TENSORS_AS_LISTS:
            return _items_as_lists(keys._td, (), keys.include_nested, keys.leaves_only)
        td = keys._td
        return ((key, td._get_path(key, None)) for key in keys)
