"""_SubTensorDict: the entries of a collection at a batch index, as a view that writes
through (``td._get_sub_tensordict(idx)``, and ``collection[idx]`` of a storage-backed
collection; public for plugin authors as :class:`tensordict.storage.IndexView`).

The collection viewed (the source) decides how rows are read and written:

- reads: ``source._get_at_str(key, idx)`` (an in-memory collection indexes its entry: a
  view of the parent's leaf where torch's indexing gives one, a copy for a mask or an
  index tensor; a storage class reads the rows alone); a sub-collection is a view of the
  source's sub-collection at the same index. ``source._read_at(idx)`` reads them all;
- writes go to the source at the index, through its own writes, so dense, lazy-stacked,
  memory-mapped and storage-backed sources all take them: an existing entry through
  ``source.set_at_``; a new entry is created in the source with its batch size, zeros
  (or, for non-tensor data, what ``source[idx] = value`` allocates) outside ``idx``, its
  new levels holding the value's leaves (a store cannot hold an empty node); ``del``
  and ``rename_key_`` change the source's entry itself; in-place ops (``add_``,
  ``zero_``, ``apply_``...), ``view[i] = value`` and ``update_at_`` are computed on a
  copy of the entries at the index, then written back with ``source._set_at_index``
  (:class:`~tensordict.storage.WriteBackMixin`), so they land whatever the index.

Other ops (``clone``, ``apply``, math, shape ops...) work on the entries read and return
plain TensorDicts; ``select``/``exclude`` raise over storage (their copies would write
nowhere). As upstream, ``set(key, value)`` of an existing entry raises unless
``inplace=True``, a view is locked while its source is and cannot be locked on its own,
and its names and batch size cannot be set.

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
from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection, register_class
from tensordict._dict_api import DictMixin
from tensordict._keys import is_leaf_nontensor
from tensordict._metadata import LOCKED_BY_PARENT
from tensordict._nested_key import NestedKey, is_nested_key, key_to_path
from tensordict._nontensor import unwrap_non_tensor
from tensordict._plan import WritePlan
from tensordict._repr import Block, _sizes, compact_entries, tensordict_repr
from tensordict._shapes import indexed_size, normalize_index
from tensordict._write_back import WriteBackMixin, check_fits

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

    __slots__ = ("_source", "idx", "_batch_size", "_nested", "__weakref__")

    def __init__(self, source: Any, idx: Any, nested: bool = False) -> None:
        parts = normalize_index(idx, source.batch_size)
        if any(part.__class__ is slice and (part.step or 1) < 0 for part in parts):
            raise ValueError(f"step must be greater than zero (index {idx!r}), as for a "
                             "tensor")
        self._source = source
        self.idx = parts
        self._batch_size = indexed_size(source.batch_size, parts)
        # a sub-collection of an index view (``view["nested"]``), where upstream gives a
        # TensorDict of views: fast ``copy_at_`` takes it as one
        self._nested = nested

    def get_parent_tensordict(self) -> Any:
        """The collection this view indexes.

        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> td._get_sub_tensordict(0).get_parent_tensordict() is td
        True
        """
        return self._source

    def _view(self, collection: Any) -> _SubTensorDict:
        """A view of ``collection`` (a sub-collection of the source) at this index."""
        return _SubTensorDict(collection, self.idx, nested=True)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self._source, self.idx, self._nested)

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
        return LOCKED_BY_PARENT if self._source.is_locked else False

    def _propagate_lock(self, locked: bool) -> None:
        if locked:
            raise RuntimeError(f"Cannot lock a _SubTensorDict, a view of a "
                               f"{type(self._source).__name__}: lock the parent instead.")

    def is_memmap(self) -> bool:
        """Whether the entries viewed are memory-mapped (those of the parent)."""
        return self._source.is_memmap()

    # -- reading -------------------------------------------------------------------------
    def _read(self) -> Any:
        """The entries at the index as the source reads them (``_read_at``): a TensorDict
        or a lazy stack whose leaves are views of an in-memory source's where torch's
        indexing gives views, a copy from storage."""
        return self._source._read_at(self.idx)

    def _read_at(self, index: Any) -> Any:
        return self._read()._index(index)

    def to_tensordict(self, *, retain_none: bool | None = None) -> Any:
        """The entries viewed, copied into an ordinary in-memory TensorDict."""
        read = self._read()
        return read if _reads_copies(self) else read.to_tensordict(retain_none=retain_none)

    def _keys_str(self) -> Iterator[str]:
        return self._source._keys_str()

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        return self._source._get_at_str(key, self.idx, default)

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
        return type(self)(self, index)

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        if kwargs.get("inplace"):  # on a copy, written back at the index
            return WriteBackMixin._apply_nest(self, fn, *others, **kwargs)
        return self._read()._apply_nest(fn, *others, **kwargs)

    def _selected(self, tree: dict[str, Any], strict: bool, prefix: tuple[str, ...]) -> Any:
        return self._read()._selected(tree, strict, prefix)

    def _excluded(self, tree: dict[str, Any]) -> Any:
        return self._read()._excluded(tree)

    def select(self, *keys: Any, **kwargs: Any) -> Any:
        """The entries at ``keys``, read; refused over storage, where the copy would take
        writes that reach nothing (also the storage classes' own ``select``)."""
        if _reads_copies(self):
            raise NotImplementedError(_NO_COPY.format("select", type(self).__name__))
        return TensorDictBase.select(self, *keys, **kwargs)

    def exclude(self, *keys: Any, **kwargs: Any) -> Any:
        """The entries but ``keys``, read; refused over storage (see :meth:`select`)."""
        if _reads_copies(self):
            raise NotImplementedError(_NO_COPY.format("exclude", type(self).__name__))
        return TensorDictBase.exclude(self, *keys, **kwargs)

    # -- writing -------------------------------------------------------------------------
    def _validate_value(self, value: Any, key: Any, non_blocking: bool = False) -> Any:
        return self._empty_child()._validate_value(value, key, non_blocking)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> _SubTensorDict:
        if not validated:
            value = self._validate_value(value, key, non_blocking)
        source = self._source
        if source._peek_str(key, None) is None:
            self._create(key, value, non_blocking)
        elif isinstance(value, TensorDictBase) and not value._is_non_tensor:
            self._get_str(key).update(value, inplace=True)  # entry by entry, new ones too
        else:
            source.set_at_(key, value, self.idx, non_blocking=non_blocking)
        return self

    def _create(self, key: str, value: Any, non_blocking: bool) -> None:
        """Create ``key`` in the source, with its batch size: ``value`` at the index, what
        ``source[idx] = value`` allocates outside it (zeros, for tensors); built whole
        before it is stored, so a new sub-collection holds leaves from the start."""
        if self.is_locked:
            raise errors.locked("add", key)
        source = self._source
        if getattr(value, "_is_non_tensor", False) and _reads_copies(source):
            raise TypeError(f"cannot create the non-tensor entry {key!r} through an index "
                            f"view of a {type(source).__name__}: set it on the collection")
        whole = classes.TensorDict._from_entries({}, source.batch_size, source.device)
        whole._set_at_index(self.idx, classes.TensorDict._from_entries(
            {key: value}, self._batch_size, self.device))
        source._set_str(key, whole._get_str(key), inplace=False, validated=False,
                        non_blocking=non_blocking)

    def _set_path(self, path: tuple[str, ...], value: Any, inplace: bool,
                  non_blocking: bool = False) -> None:
        """Write ``value`` at ``path``; missing levels are created holding it."""
        node, depth = self._deepest_node(path)
        if depth < len(path) - 1:
            value = classes.TensorDict({path[depth + 1:]: value}, batch_size=node.batch_size,
                                       device=node.device)
        node._set_str(path[depth], value, inplace=inplace, validated=False,
                      non_blocking=non_blocking)

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
        self._set_path(key_to_path(key), item, inplace, non_blocking)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is tuple and is_nested_key(key):
            self._set_path(key_to_path(key), value, inplace=False)  # (existing keys too)
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

    def update_(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
                clone: bool = False, **kwargs: Any) -> _SubTensorDict:
        """``DictMixin.update_`` (checked ahead, written through ``_plan_set_``). A key
        the view lacks raises MissingKeyTypeError where the input holds a value that is
        not a tensor (a str, a number): the KeyError, and upstream's TypeError for it."""
        try:
            return DictMixin.update_(self, input_dict_or_td, clone, **kwargs)
        except errors.MissingKeyError as err:
            if type(err) is not errors.MissingKeyError or _tensors_only(input_dict_or_td):
                raise
            raise errors.MissingKeyTypeError(*err.args) from None

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
        for parent, key, value in writes:
            if value.__class__ is WritePlan:
                value.run()
            elif parent + (key,) not in existing:
                self._set_path(parent + (key,), value, inplace, non_blocking)

    def _plan_set_(self, plan: WritePlan, key: str, value: Any, path: NestedKey,
                   non_blocking: bool) -> None:
        """The source's write of ``value`` into its entry at the index (``path`` names it
        in errors)."""
        value = self._validate_value(value, path, non_blocking)
        source = self._source
        if _reads_copies(source):  # checked now, as an in-memory source checks its plan
            peek = source._peek_str(key)
            if isinstance(value, _Tensor) and isinstance(peek, _Tensor):
                feature = peek.shape[len(source.batch_size):]
                check_fits(value.shape, self._batch_size + feature, path)
        plan.extend(source._plan_at_index(self.idx, {key: value}))

    def _plan_at_index(self, index: Any, value: Any) -> WritePlan:
        """``self[index] = value``, done now on a copy of the entries ``value`` holds
        (checked: it raises before anything is planned); the plan writes the copy back at
        this view's index."""
        if not is_tensor_collection(value) and isinstance(value, Mapping):
            value = classes.TensorDict(dict(value), batch_size=self._indexed_batch(index))
        local = self.to_tensordict()
        if is_tensor_collection(value):
            local = local.select(*value.keys(True, True, is_leaf=is_leaf_nontensor),
                                 strict=False)
        local._set_at_index(index, value)
        plan = WritePlan()
        plan.call(self._source._set_at_index, self.idx, local)
        return plan

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._plan_at_index(index, value).run()

    def _write_back(self, local: Any) -> None:
        """Write the tensors of ``local`` (the entries read and changed in memory by an
        in-place op) back, in one write at the index."""
        self._source._set_at_index(self.idx, local.select(*local.keys(True, True)))

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        """The view of the source's sub-collection holding ``path[-1]``, created there
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


def _tensors_only(source: Any) -> bool:
    """Whether every value of ``source`` (a mapping or a collection) is a tensor or holds
    only tensors."""
    values = source.values(True, True, is_leaf=is_leaf_nontensor) \
        if is_tensor_collection(source) else source.values()
    return all(isinstance(value, torch.Tensor) or (
        isinstance(value, Mapping) and not getattr(value, "_is_non_tensor", False)
        and _tensors_only(value)) for value in values)


def _reads_copies(collection: Any) -> bool:
    """Whether the entries of ``collection`` (a view: of the collection under its views)
    are read as copies: storage, a :class:`~tensordict.storage.WriteBackMixin` class."""
    while isinstance(collection, _SubTensorDict):
        collection = collection._source
    return isinstance(collection, WriteBackMixin)


#: upstream's message for select/exclude of a file-backed TensorDict
_NO_COPY = ("Cannot call {} on the {}: the result would be a copy that writes nowhere. "
            "Call to_tensordict() first.")
