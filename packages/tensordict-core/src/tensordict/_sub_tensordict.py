"""_SubTensorDict: the entries of a collection at a batch index, as a view that writes
through (what ``td._get_sub_tensordict(idx)`` returns).

Reads index the parent's entries (a leaf is a view of the parent's where torch's indexing
gives one: ints, slices, ``None``, ``...``; a copy for a mask or an index tensor, or under
a lazy stack); a sub-TensorDict is a view of the parent's sub-TensorDict at the same index.
Writes go to the parent at the index, through its own writes, so dense, lazy-stacked and
memory-mapped parents all take them:

- an existing entry: ``parent.set_at_(key, value, idx)``;
- a new entry: created in the parent with its batch size, zeros (or, for non-tensor data,
  what ``parent[idx] = value`` allocates) outside ``idx``;
- ``del``, ``rename_key_``: on the parent's entry itself;
- in-place ops (``add_``, ``zero_``, ``apply_``...), ``view[i] = value``, ``update_at_``:
  computed on a copy of the entries at the index, then written back at the index
  (:class:`~tensordict.storage.WriteBackMixin`), so they land whatever the index.

Other ops (``clone``, ``apply``, ``select``, math, shape ops...) work on the entries read
and return plain TensorDicts. As upstream, ``set(key, value)`` of an existing entry
raises unless ``inplace=True``, a view cannot be locked on its own (it has its parent's
lock), and its names and batch size cannot be set.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    >>> sub = td._get_sub_tensordict(0)
    >>> sub["a"] = torch.ones(3)
    >>> sub["b"] = torch.ones(3)
    >>> td["a"][0], td["b"]
    (tensor([1., 1., 1.]), tensor([[1., 1., 1.],
            [0., 0., 0.]]))
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from tensordict import errors
from tensordict._base import TensorDictBase
from tensordict._collection import NO_DEFAULT, classes, register_class
from tensordict._dict_api import DictMixin
from tensordict._nested_key import NestedKey, is_nested_key
from tensordict._nontensor import unwrap_non_tensor
from tensordict._plan import WritePlan
from tensordict._repr import Block, _sizes, compact_entries, tensordict_repr
from tensordict._shapes import indexed_size, normalize_index
from tensordict._write_back import WriteBackMixin

_Tensor = torch.Tensor


@register_class
class _SubTensorDict(WriteBackMixin, TensorDictBase):
    """The entries of ``source`` at the batch index ``idx``, writing through to ``source``
    (see the module docstring). ``idx`` is kept as a tuple addressing batch dims (``...``
    expanded).

    >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
    >>> _ = _SubTensorDict(td, torch.tensor([True, False, True])).add_(1)
    >>> td["a"]
    tensor([1., 0., 1.])
    """

    __slots__ = ("_source", "idx", "_batch_size", "__weakref__")

    def __init__(self, source: Any, idx: Any) -> None:
        parts = normalize_index(idx, source.batch_size)
        self._source = source
        self.idx = parts
        self._batch_size = indexed_size(source.batch_size, parts)

    def get_parent_tensordict(self) -> Any:
        """The collection this view indexes.

        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> td._get_sub_tensordict(0).get_parent_tensordict() is td
        True
        """
        return self._source

    def _view(self, collection: Any) -> _SubTensorDict:
        """A view of ``collection`` (a sub-collection of the source) at this index."""
        return _SubTensorDict(collection, self.idx)

    # -- metadata ------------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        raise RuntimeError(f"cannot set the batch size {list(value)} of a _SubTensorDict (of "
                           f"batch size {list(self._batch_size)}), a view of its parent: "
                           "call to_tensordict() first")

    @property
    def device(self) -> torch.device | None:
        return self._source.device

    @device.setter
    def device(self, value: Any) -> None:
        raise RuntimeError("cannot set the device of a _SubTensorDict, a view of its parent: "
                           "use .to(device) for a copy")

    @property
    def _names(self) -> tuple[str | None, ...] | None:
        names = self._source.names
        if not any(name is not None for name in names):
            return None
        indexed = classes.TensorDict._from_entries({}, self._source.batch_size, None,
                                                   tuple(names))._index(self.idx)
        return indexed._names

    @property
    def names(self) -> list[str | None]:
        names = self._names
        return [None] * len(self._batch_size) if names is None else list(names)

    @names.setter
    def names(self, value: Any) -> None:
        raise RuntimeError("Names of a subtensordict cannot be modified. Instantiate it as a "
                           "TensorDict first.")

    @property
    def _is_locked(self) -> Any:
        return self._source._is_locked

    def _propagate_lock(self, locked: bool) -> None:
        raise RuntimeError("Cannot lock or unlock a _SubTensorDict: lock the parent "
                           "tensordict instead.")

    # -- reading -------------------------------------------------------------------------
    def _read(self) -> Any:
        """The entries at the index as the source's indexing gives them (a TensorDict or
        a lazy stack, whose leaves are views where torch's indexing gives views)."""
        source = self._source
        if source.__class__ is _SubTensorDict:
            source = source._read()
        return source._index(self.idx)

    def _keys_str(self) -> Iterator[str]:
        return self._source._keys_str()

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        value = self._source._get_str(key, default)
        if value is default and default is not NO_DEFAULT:
            return default
        if isinstance(value, TensorDictBase) and not value._is_non_tensor:
            return self._view(value)
        return value[self.idx]  # a tensor, non-tensor data, a tensorclass

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """The kind of entry ``key`` is: the source's peek (nothing is indexed)."""
        return self._source._peek_str(key, default)

    def __getitem__(self, index: Any) -> Any:
        if index.__class__ is str:
            return unwrap_non_tensor(self._get_str(index))
        if is_nested_key(index):
            return unwrap_non_tensor(self._get_path(index))
        return self._index(index)

    def _index(self, index: Any) -> _SubTensorDict:
        return _SubTensorDict(self, index)

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        if kwargs.get("inplace"):  # on a copy, written back at the index
            return WriteBackMixin._apply_nest(self, fn, *others, **kwargs)
        return self._read()._apply_nest(fn, *others, **kwargs)

    def _selected(self, tree: dict[str, Any], strict: bool, prefix: tuple[str, ...]) -> Any:
        return self._read()._selected(tree, strict, prefix)

    def _excluded(self, tree: dict[str, Any]) -> Any:
        return self._read()._excluded(tree)

    # -- writing -------------------------------------------------------------------------
    def _validate_value(self, value: Any, key: Any, non_blocking: bool = False) -> Any:
        return self._empty_child()._validate_value(value, key, non_blocking)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> _SubTensorDict:
        if not validated:
            value = self._validate_value(value, key, non_blocking)
        source = self._source
        if source._peek_str(key, None) is not None:
            source.set_at_(key, value, self.idx, non_blocking=non_blocking)
            return self
        # a new entry: the source's batch size, what ``source[idx] = value`` allocates
        # outside the index (zeros, for tensors); built whole before it is stored
        whole = classes.TensorDict._from_entries({}, source.batch_size, source.device)
        whole._set_at_index(self.idx, classes.TensorDict._from_entries(
            {key: value}, self._batch_size, self.device))
        source._set_str(key, whole._get_str(key), inplace=False, validated=False,
                        non_blocking=non_blocking)
        return self

    def set(self, key: NestedKey, item: Any, inplace: bool = False, *,
            non_blocking: bool = False, **kwargs: Any) -> _SubTensorDict:
        """Write ``item`` at ``key`` of the parent, at the index; as upstream, an existing
        entry is only written with ``inplace=True`` (or through ``set_``, ``view[key] =``).

        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> _ = td._get_sub_tensordict(1).set("a", torch.ones(()), inplace=True)
        >>> td["a"]
        tensor([0., 1.])
        """
        if not inplace and key in self:
            raise RuntimeError(
                f"Calling `_SubTensorDict.set(key, value, inplace=False)` is prohibited for "
                f"existing entries (here {key!r}). Consider calling _SubTensorDict.set_(...) "
                "or cloning your tensordict first.")
        return TensorDictBase.set(self, key, item, inplace, non_blocking=non_blocking,
                                  **kwargs)

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is tuple and is_nested_key(key):
            TensorDictBase.set(self, key, value)  # (not self.set: it refuses existing keys)
        else:
            TensorDictBase.__setitem__(self, key, value)

    def update(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
               clone: bool = False, inplace: bool = False, **kwargs: Any) -> _SubTensorDict:
        """Write every entry of ``input_dict_or_td`` into the parent at the index: the
        existing ones in place (every one checked before the first write), the others
        created. A locked parent takes only ``inplace=True``, as upstream.

        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> _ = td._get_sub_tensordict(0).update({"a": torch.ones(()), "b": torch.ones(())})
        >>> td["a"], td["b"]
        (tensor([1., 0.]), tensor([1., 0.]))
        """
        if self._is_locked and not inplace:
            raise errors.locked()
        return TensorDictBase.update(self, input_dict_or_td, clone, True, **kwargs)

    update_ = DictMixin.update_  # (checked ahead, written through _plan_set_)

    def _write_entries(self, writes: list[tuple[tuple[str, ...], str, Any]], inplace: bool,
                       non_blocking: bool) -> None:
        """The validated writes of :meth:`update`: those into existing entries as one
        checked write at the index (none is written unless all fit), then the new ones."""
        source = self._source
        existing = {path: value for path, value in
                    ((parent + (key,), value) for parent, key, value in writes)
                    if path in source}
        if existing:
            source._plan_at_index(self.idx, existing).run()
        TensorDictBase._write_entries(self, [write for write in writes
                                             if write[0] + (write[1],) not in existing],
                                      inplace, non_blocking)

    def _plan_set_(self, plan: WritePlan, key: str, value: Any, path: NestedKey,
                   non_blocking: bool) -> None:
        """The source's checked write of ``value`` into its entry at the index."""
        value = self._validate_value(value, path, non_blocking)
        plan.extend(self._source._plan_at_index(self.idx, {key: value}))

    def _plan_at_index(self, index: Any, value: Any) -> WritePlan:
        """``self[index] = value``, done now on a copy of the entries (checked: it raises
        before anything is planned); the plan writes the copy back at the index."""
        local = self.to_tensordict()
        local._set_at_index(index, value)
        plan = WritePlan()
        plan.call(self._write_back, local)
        return plan

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._plan_at_index(index, value).run()

    def _write_back(self, local: Any) -> None:
        self._source._set_at_index(self.idx, local)

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        """The view of the source's sub-TensorDict holding ``path[-1]``, created there
        (with the source's batch size) if asked."""
        if len(path) == 1:
            return self
        return self._view(self._source._parent_of(path, create))

    def _del_str(self, key: str) -> None:
        self._source._del_str(key)

    def rename_key_(self, old_key: NestedKey, new_key: NestedKey,
                    safe: bool = False) -> _SubTensorDict:
        """Rename the entry in the parent (all of it, not only at the index).

        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> _ = td._get_sub_tensordict(0).rename_key_("a", "b")
        >>> list(td.keys())
        ['b']
        """
        self._source.rename_key_(old_key, new_key, safe=safe)
        return self

    def __repr__(self) -> str:
        return tensordict_repr(self)

    def _compact_nested_block(self, batch_ndim: int) -> Block:
        """How a view shows as an entry of a compact repr (a view's sub-TensorDict)."""
        extra = self._batch_size[batch_ndim:]
        return f"{type(self).__name__}{_sizes(extra) if extra else ''}", compact_entries(self)

