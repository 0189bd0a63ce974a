"""Combining leaves into one tensor: ``cat_tensors`` / ``stack_tensors`` (into a new
entry) and ``cat_from_tensordict`` / ``stack_from_tensordict`` (into a returned tensor).

``dim`` is a dim of the leaves (batch and feature dims alike), as in ``torch.cat``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(3, 2), b=torch.ones(3, 2), batch_size=[3])
    >>> td.cat_from_tensordict(dim=-1).shape, td.stack_from_tensordict().shape
    (torch.Size([3, 4]), torch.Size([2, 3, 2]))
    >>> td.cat_tensors("a", "b", out_key="ab", dim=-1)
    TensorDict(batch_size=[3], fields={ab: f32[4]})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict import errors
from tensordict._keys import _sort_key
from tensordict._nested_key import NestedKey, key_to_path

_Tensor = torch.Tensor


def _into_entry(td: Any, combine: Callable[..., _Tensor], keys: Sequence[NestedKey],
                out_key: NestedKey, dim: int, keep_entries: bool) -> Any:
    """Write ``combine(values, dim)`` at ``out_key`` and delete ``keys`` (unless
    ``keep_entries``); everything is checked before the first write."""
    paths = [key_to_path(key) for key in keys]
    value = combine([td._get_path(path) for path in paths], dim)
    out_path = key_to_path(out_key)
    parent = td._get_path(out_path[:-1], None) if len(out_path) > 1 else None
    if td.is_locked:
        raise errors.locked(key=out_key)
    batch = td.batch_size if parent is None else parent.batch_size
    if value.shape[:len(batch)] != batch:
        raise errors.batch_mismatch(out_key, value.shape, batch)
    deleted = [] if keep_entries else list(dict.fromkeys(paths))  # once each
    if out_path in deleted:  # its slot moves to the end, as a new entry
        td.del_(out_path)
    td.set(out_path, value)
    for path in deleted:
        if path != out_path:
            td.del_(path)
    return td


def _tensor_leaves(td: Any, sorted: bool | Sequence[NestedKey] | None) -> list[_Tensor]:  # noqa: A002
    """The tensor leaves, in key order, sorted by key, or in the order of the keys given."""
    pairs = [(key, value) for key, value in td.items(True, True) if isinstance(value, _Tensor)]
    if sorted is None or sorted is False:
        return [value for _, value in pairs]
    if sorted is True:
        pairs.sort(key=lambda pair: _sort_key(pair[0]))
        return [value for _, value in pairs]
    by_path = {key_to_path(key): value for key, value in pairs}
    order = [key_to_path(key) for key in sorted]
    if set(order) != set(by_path) or len(order) != len(by_path):
        raise RuntimeError("The provided set of keys differs from the tensordict list of keys.")
    return [by_path[path] for path in order]


class LeafCombineMixin:
    """Concatenating or stacking leaves (see the module docstring)."""

    __slots__ = ()

    def cat_tensors(self, *keys: NestedKey, out_key: NestedKey, dim: int = 0,
                    keep_entries: bool = False) -> Any:
        """Concatenate the entries ``keys`` along ``dim`` into the entry ``out_key``
        (in place; the entries are removed unless ``keep_entries``); returns self.

        >>> td = TensorDict(a=torch.zeros(3, 1), b=torch.ones(3, 1), batch_size=[3])
        >>> td.cat_tensors("a", "b", out_key="ab", dim=1)["ab"].shape
        torch.Size([3, 2])
        """
        return _into_entry(self, torch.cat, keys, out_key, dim, keep_entries)

    def stack_tensors(self, *keys: NestedKey, out_key: NestedKey, dim: int = 0,
                      keep_entries: bool = False) -> Any:
        """Stack the entries ``keys`` along a new ``dim`` into the entry ``out_key``
        (see :meth:`cat_tensors`).

        >>> td = TensorDict(a=torch.zeros(3), b=torch.ones(3), batch_size=[3])
        >>> td.stack_tensors("a", "b", out_key="ab", dim=1)["ab"].shape
        torch.Size([3, 2])
        """
        return _into_entry(self, torch.stack, keys, out_key, dim, keep_entries)

    def cat_from_tensordict(self, dim: int = 0, *,
                            sorted: bool | Sequence[NestedKey] | None = None,  # noqa: A002
                            out: _Tensor | None = None) -> _Tensor:
        """``torch.cat`` of every tensor leaf along ``dim``, in key order (``sorted=True``:
        sorted by key; a list: in that order, which must name every leaf).

        >>> TensorDict(b=torch.ones(2), a=torch.zeros(2)).cat_from_tensordict(sorted=True)
        tensor([0., 0., 1., 1.])
        """
        return torch.cat(_tensor_leaves(self, sorted), dim, out=out)

    def stack_from_tensordict(self, dim: int = 0, *,
                              sorted: bool | Sequence[NestedKey] | None = None,  # noqa: A002
                              out: _Tensor | None = None) -> _Tensor:
        """``torch.stack`` of every tensor leaf along a new ``dim`` (see
        :meth:`cat_from_tensordict`).

        >>> TensorDict(a=torch.zeros(2), b=torch.ones(2)).stack_from_tensordict().shape
        torch.Size([2, 2])
        """
        return torch.stack(_tensor_leaves(self, sorted), dim, out=out)
