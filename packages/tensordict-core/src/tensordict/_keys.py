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

from tensordict._nested_key import NestedKey, unravel_key_to_tuple

if TYPE_CHECKING:
    from tensordict._base import TensorDictBase


_Tensor = torch.Tensor


def default_is_leaf(cls: type) -> bool:
    """True for tensor types: the leaves ``keys(leaves_only=True)`` lists by default."""
    from tensordict._base import is_tensor_collection

    return not is_tensor_collection(cls)


def is_leaf_nontensor(cls: type) -> bool:
    """Like :func:`default_is_leaf`, but non-tensor data count as leaves too."""
    return default_is_leaf(cls) or getattr(cls, "_is_non_tensor", False)


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
            path = unravel_key_to_tuple(key)  # type: ignore[arg-type]
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
        td = self._keys._td
        return (td._get_path(key, None) for key in self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({list(self)})"


class TensorDictItemsView(TensorDictValuesView):
    """``(key, value)`` pairs matching a key view."""

    __slots__ = ()

    def __iter__(self) -> Iterator[tuple[NestedKey, Any]]:
        td = self._keys._td
        return ((key, td._get_path(key, None)) for key in self._keys)
