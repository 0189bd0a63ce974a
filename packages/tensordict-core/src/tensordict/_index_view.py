"""IndexView: ``collection[index]`` of a collection whose reads are copies, as a view.

A storage-backed collection (a :class:`~tensordict.storage.WriteBackMixin` subclass:
entries in a file, in a database) cannot hand out tensors sharing its storage, so
``collection[index]`` returns this view instead of a copy: reading an entry reads its
rows there (``_get_at_str``), and every write (``set_``, ``view[key] = v``, ``update_``,
``add_``, ``zero_``, ``view[i] = td``...) goes back through the collection's
``_set_at_index``, checked before anything is written. A new key written through a view
is created in the collection (zeros, as upstream) before its rows are written; views of
views and of sub-collections (``ptd["n"][2]``) write through the same way.

A storage class opts in by returning ``IndexView(self, index)`` from ``_index``.

Example (a toy store keeping its entries as bytes, so every read is a copy):
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.storage import IndexView, WriteBackMixin
    >>> class Bytes(WriteBackMixin, TensorDict):
    ...     def to_tensordict(self, **kwargs):
    ...         return TensorDict({k: v.clone() for k, v in self.items()}, self.batch_size)
    ...     def _index(self, index):
    ...         return IndexView(self, index)
    >>> store = Bytes(a=torch.zeros(3), batch_size=[3])
    >>> _ = store[1:].add_(1)
    >>> store["a"]
    tensor([0., 1., 1.])
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import torch

from tensordict import errors
from tensordict._base import TensorDictBase
from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection
from tensordict._metadata import LOCKED_BY_PARENT
from tensordict._write_back import WriteBackMixin


class IndexView(WriteBackMixin, TensorDictBase):
    """The rows ``index`` of ``source`` (a write-back collection or another view):
    reads read them from ``source``, writes write them there.

    It is locked while ``source`` is (in-place writes allowed, new keys refused), and is
    not locked on its own. ``select``/``exclude`` raise: their copies would write nowhere.
    """

    def __init__(self, source: Any, index: Any) -> None:
        self._source = source
        self._idx = index
        self._batch_size = source._indexed_batch(index)  # IndexError when out of bounds
        self._exit_stack: list[Any] | None = None

    # -- metadata ------------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        raise RuntimeError("the batch size of an index view is the one of the rows it "
                           "views; call to_tensordict() for a copy to reshape")

    @property
    def _device(self) -> torch.device | None:
        return self._source.device

    @property
    def _is_locked(self) -> Any:
        return LOCKED_BY_PARENT if self._source.is_locked else False

    def _propagate_lock(self, locked: bool) -> None:
        if locked:
            raise RuntimeError(f"Cannot lock an index view of a {type(self._source).__name__}: "
                               "lock the collection it views instead.")

    def __reduce__(self) -> tuple[Any, ...]:
        return IndexView, (self._source, self._idx)

    def __repr__(self) -> str:
        return (f"IndexView(batch_size={list(self._batch_size)}, index={self._idx!r}, "
                f"of={self._source!r})")

    # -- reads ---------------------------------------------------------------------------
    def _keys_str(self) -> Iterator[str]:
        return self._source._keys_str()

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        return self._source._get_at_str(key, self._idx, default)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        peek = self._source._peek_str(key, default)
        if not isinstance(peek, torch.Tensor):
            return peek if peek is default else self._get_str(key)
        feature = peek.shape[len(self._source.batch_size):]
        return torch.empty(self._batch_size + feature, dtype=peek.dtype, device="meta")

    def to_tensordict(self, *, retain_none: bool | None = None) -> Any:
        """The rows viewed, read into an ordinary in-memory TensorDict."""
        entries = {}
        for key in self._keys_str():
            value = self._get_str(key)
            entries[key] = value.to_tensordict() if isinstance(value, IndexView) else value
        return classes.TensorDict._from_entries(entries, self._batch_size, self.device)

    def _index(self, index: Any) -> IndexView:
        return IndexView(self, index)

    # -- writes --------------------------------------------------------------------------
    def _validate_value(self, value: Any, key: Any, non_blocking: bool = False) -> Any:
        return TensorDictBase._empty_child(self)._validate_value(value, key, non_blocking)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> IndexView:
        if not validated:
            value = self._validate_value(value, key, non_blocking)
        if self._source._peek_str(key, None) is None:
            self._create(key, value)
        if is_tensor_collection(value) and not value._is_non_tensor:
            self._get_str(key).update(value)  # entry by entry, creating what is new
        else:
            entry = classes.TensorDict._from_entries({key: value}, self._batch_size)
            self._source._set_at_index(self._idx, entry)
        return self

    def _create(self, key: str, value: Any) -> None:
        """Create the entry ``key`` in the source for ``value`` written through this
        view: zeros of its dtype and feature shape (one zero expanded: the source stores
        a copy), or an empty sub-collection."""
        if self.is_locked:
            raise errors.locked("add", key)
        source, extra = self._source, len(self._batch_size)
        if isinstance(value, torch.Tensor):
            shape = source.batch_size + value.shape[extra:]
            blank: Any = torch.zeros((), dtype=value.dtype, device=value.device).expand(shape)
        elif is_tensor_collection(value) and not value._is_non_tensor:
            blank = classes.TensorDict._from_entries(
                {}, source.batch_size + value.batch_size[extra:], source.device)
        else:
            raise TypeError(f"cannot create the non-tensor entry {key!r} through an index "
                            f"view of a {type(source).__name__}: set it on the collection")
        source._set_str(key, blank, inplace=False, validated=False)

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        """The view holding ``path[-1]``; missing levels are created in the source."""
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            child = node._get_str(part, None)
            if child is None:
                if not create:
                    raise errors.missing_key(path, list(node._keys_str()), path[:depth])
                node._set_str(part, node._empty_child(), inplace=False, validated=True)
                child = node._get_str(part)
            elif not is_tensor_collection(child) or child._is_non_tensor:
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a TensorDict, so it has "
                    f"no entry {path[depth + 1]!r} (writing {path!r}).")
            node = child
        return node

    def _del_str(self, key: str) -> None:
        self._source._del_str(key)

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> IndexView:
        """Rename the entry in the source (all of it, not only at the index)."""
        self._source.rename_key_(old_key, new_key, safe=safe)
        return self

    def _set_at_index(self, index: Any, value: Any) -> None:
        """``view[index] = value``: the rows viewed read, written to in memory, and the
        entries ``value`` holds written back (checked there first)."""
        if not is_tensor_collection(value) and isinstance(value, Mapping):
            value = classes.TensorDict(dict(value), batch_size=self._indexed_batch(index))
        local = self.to_tensordict()
        if is_tensor_collection(value):
            local = local.select(*value.keys(True, True))
        local[index] = value
        self._source._set_at_index(self._idx, local)

    def _write_back(self, local: Any) -> None:
        """Write the tensors of ``local`` (the rows read and changed in memory) back, all
        in one write at the index."""
        self._source._set_at_index(self._idx, local.select(*local.keys(True, True)))

    def select(self, *keys: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(_NO_COPY.format("select", type(self).__name__))

    def exclude(self, *keys: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(_NO_COPY.format("exclude", type(self).__name__))


#: upstream's message for select/exclude of a file-backed TensorDict
_NO_COPY = ("Cannot call {} on the {}: the result would be a copy that writes nowhere. "
            "Call to_tensordict() first.")
