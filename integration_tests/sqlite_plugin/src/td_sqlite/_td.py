"""SqliteTensorDict: a TensorDict whose entries live in a SQLite file.

Nothing is read until asked for: ``std["obs"]`` reads one tensor, ``std[10:20]`` gives a
view whose entries read ten rows each; keys, shapes and dtypes come from the node table.
Writes reach the file, each in one transaction, checked before the first row changes:
``std["obs"] = t``, ``std[i] = step``, ``std.update_(td)``, ``std += 1``. Ops computing new
values (``apply``, ``clone``, math) read the data and give in-memory TensorDicts.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from td_sqlite._store import ROOT, Store, encode_data, row_numbers
from tensordict import (
    NonTensorData,
    NonTensorStack,
    TensorDict,
    TensorDictBase,
    errors,
    is_tensor_collection,
)
from tensordict.base import NO_DEFAULT
from tensordict.extending import (
    LOCKED_BY_PARENT,
    compact_layout,
    compact_value,
    decode_metadata,
    encode_metadata,
    from_entries,
    loads_data,
    sizes,
)
from tensordict.storage import IndexView, WriteBackMixin, atomic_write, check_fits, split_rows


class SqliteTensorDict(WriteBackMixin, TensorDictBase):
    """A TensorDict stored in the SQLite file ``path``.

    Args:
        path: a file written by :meth:`from_tensordict` (``td.save(path,
            backend="sqlite")``).
        mode: ``"r+"`` (read and write) or ``"r"`` (read only).
        device: the device of the tensors read.

    >>> import os, tempfile, torch
    >>> path = os.path.join(tempfile.mkdtemp(), "data.db")
    >>> td = TensorDict(obs=torch.zeros(4, 2), info={"step": torch.arange(4)}, batch_size=[4])
    >>> std = SqliteTensorDict.from_tensordict(td, path)
    >>> std[2] = TensorDict(obs=torch.ones(2), info={"step": torch.tensor(9)})
    >>> std.close()
    >>> with SqliteTensorDict(path, mode="r") as reopened:
    ...     reopened["info", "step"].tolist(), reopened[2]["obs"].tolist()
    ([0, 1, 9, 3], [1.0, 1.0])
    """

    def __init__(self, path: str | os.PathLike, *, mode: str = "r+", device: Any = None
                 ) -> None:
        self._attach(Store(path, mode), ROOT, None if device is None else torch.device(device))
        self._batch_size = decode_metadata(self._store.meta(ROOT))["batch_size"]

    def _attach(self, store: Store, node: int, device: torch.device | None) -> None:
        self._store, self._node, self._device = store, node, device
        self._is_locked: bool | int = False
        self._exit_stack: list[Any] | None = None
        self._children: dict[str, SqliteTensorDict] = {}

    @classmethod
    def from_tensordict(cls, td: TensorDictBase, path: str | os.PathLike, *,
                        device: Any = None) -> SqliteTensorDict:
        """Write ``td`` to a new SQLite file at ``path`` and open it. The file is written
        under a temporary name and renamed into place: an existing file is replaced only
        once the new one is complete."""
        def write(tmp: str) -> None:
            store = Store(tmp, "w")
            try:
                with store.transaction():
                    store.set_meta(ROOT, encode_metadata(td))
                    _write_group(store, ROOT, td, ())
            finally:
                store.close()

        atomic_write(os.fspath(path), write)
        return cls(path, device=device)

    def close(self) -> None:
        """Close the file (every node of the tree shares it)."""
        self._store.close()

    def __exit__(self, *exc: object) -> None:
        if self._exit_stack:  # leaving ``with std.unlock_():`` and the like
            return super().__exit__(*exc)
        self.close()

    @property
    def rows_read(self) -> int:
        """How many rows were read from the file so far (lazy reads read few)."""
        return self._store.rows_read

    def __reduce__(self) -> tuple[Any, ...]:
        raise TypeError("a SqliteTensorDict is not pickled: open its file in each process")

    # -- primitives --------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Sequence[int]) -> None:
        size = torch.Size(value)
        for key, peek in self._peeks(()):
            if tuple(peek.shape[:len(size)]) != tuple(size):
                raise errors.batch_mismatch(key, peek.shape, size)
        with self._store.transaction():
            self._store.set_meta(self._node, {**self._store.meta(self._node),
                                              "batch_size": list(size)})
        self._batch_size = size
        self._children.clear()

    def _peeks(self, where: tuple[str, ...]) -> Iterator[tuple[Any, Any]]:
        for key in self._keys_str():
            peek = self._peek_str(key)
            if isinstance(peek, SqliteTensorDict):
                yield from peek._peeks(where + (key,))
            elif isinstance(peek, torch.Tensor):
                yield where + (key,), peek

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        for child in self._children.values():
            child._propagate_lock(LOCKED_BY_PARENT if locked else False)

    def _keys_str(self) -> Iterator[str]:
        return iter(self._store.children(self._node))

    def _entry(self, key: str, default: Any) -> tuple[Any, ...] | None:
        entry = self._store.child(self._node, key)
        if entry is None and default is NO_DEFAULT:
            raise errors.missing_key(key, list(self._keys_str()))
        return entry

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        entry = self._entry(key, default)
        if entry is None:
            return default
        ident, kind, dtype, shape, meta, payload = entry
        if kind == "group":
            return self._child(key, ident, meta)
        if kind == "tensor":
            return self._store.read_rows(ident, None, dtype, shape).to(self._device or "cpu")
        return self._non_tensor(kind, payload)

    def _child(self, key: str, ident: int, meta: Mapping[str, Any]) -> SqliteTensorDict:
        child = self._children.get(key)
        if child is None:
            child = SqliteTensorDict.__new__(SqliteTensorDict)
            child._attach(self._store, ident, self._device)
            child._batch_size = decode_metadata(meta)["batch_size"]
            child._is_locked = LOCKED_BY_PARENT if self._is_locked else False
            self._children[key] = child
        return child

    def _non_tensor(self, kind: str, payload: bytes) -> Any:
        value = loads_data(payload)
        if kind == "stack":
            return NonTensorStack.from_list(value, device=self._device)
        return NonTensorData(value, batch_size=self._batch_size, device=self._device)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """A meta tensor of a stored tensor's shape and dtype (nothing read); other
        entries as :meth:`_get_str` gives them."""
        entry = self._entry(key, default)
        if entry is None:
            return default
        if entry[1] == "tensor":
            return torch.empty(entry[3], dtype=entry[2], device="meta")
        return self._get_str(key)

    def get_item_shape(self, key: Any) -> torch.Size:
        """The shape of the entry at ``key``, from the node table."""
        path = (key,) if isinstance(key, str) else tuple(key)
        peek = self._parent_of(path, False)._peek_str(path[-1])
        return peek.shape if isinstance(peek, torch.Tensor) else peek.batch_size

    # -- writes ------------------------------------------------------------------------
    def _check_writable(self, key: Any, in_place: bool = False) -> None:
        if self._is_locked and not in_place:
            raise errors.locked("modify", key)
        if self._store.mode == "r":
            raise OSError(f"cannot write {key!r}: {self._store.path!r} is open read-only "
                          f"(mode='r')")

    def _validate_value(self, value: Any, key: Any, non_blocking: bool = False) -> Any:
        """``value`` as it is stored (numbers and arrays as tensors, dicts as
        TensorDicts, other objects as non-tensor data); raises if it does not fit."""
        value = _as_value(value, self._batch_size)
        if getattr(value, "_is_non_tensor", False):
            return value
        shape = value.shape if isinstance(value, torch.Tensor) else value.batch_size
        if tuple(shape[:len(self._batch_size)]) != tuple(self._batch_size):
            raise errors.batch_mismatch(key, shape, self._batch_size)
        return value

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> SqliteTensorDict:
        if not validated:
            value = self._validate_value(value, key)
        store = self._store
        entry = store.child(self._node, key) if isinstance(value, torch.Tensor) else None
        if entry is not None and entry[1] == "tensor" and (
                inplace or (entry[3] == value.shape and entry[2] == value.dtype)):
            self._check_writable(key, in_place=True)
            check_fits(value.shape, entry[3], key)
            block = value.expand(entry[3]).to(entry[2])
            with store.transaction():
                store.write_rows(entry[0], row_numbers(None, len(block)) if block.ndim
                                 else range(1), block)
            return self
        if value is self._children.get(key):
            return self
        self._check_writable(key)
        with store.transaction():
            store.remove(self._node, key)
            _write_entry(store, self._node, key, value, (key,))
        self._children.pop(key, None)
        return self

    def _del_str(self, key: str) -> None:
        self._check_writable(key)
        self._entry(key, NO_DEFAULT)
        with self._store.transaction():
            self._store.remove(self._node, key)
        self._children.pop(key, None)

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            child = node._get_str(part, None)
            if child is None:
                if not create:
                    raise errors.missing_key(path, list(node._keys_str()), path[:depth])
                node._set_str(part, TensorDict(batch_size=node.batch_size), inplace=False,
                              validated=True)
                child = node._get_str(part)
            elif not isinstance(child, SqliteTensorDict):
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a TensorDict, so it has no "
                    f"entry {path[depth + 1]!r} (writing {path!r}).")
            node = child
        return node

    def update_(self, *args: Any, **kwargs: Any) -> SqliteTensorDict:
        """``update_`` of every entry in one transaction (all written, or none)."""
        with self._store.transaction():
            return super().update_(*args, **kwargs)

    def _write_back(self, local: Any) -> None:
        with self._store.transaction():
            super()._write_back(local)

    # -- rows --------------------------------------------------------------------------
    def _index(self, index: Any) -> IndexView:
        """A view of the rows ``index`` selects: reading an entry reads those rows,
        writing writes them."""
        return IndexView(self, index)

    def _get_at_str(self, key: str, index: Any, default: Any = NO_DEFAULT) -> Any:
        entry = self._entry(key, default)
        if entry is None:
            return default
        ident, kind, dtype, shape, meta, payload = entry
        if kind == "group":
            return self._child(key, ident, meta)[index]
        if kind != "tensor":
            return self._non_tensor(kind, payload)[index]
        rows, rest = split_rows(index, self._batch_size)
        return self._store.read_rows(ident, rows, dtype, shape)[rest].to(self._device or "cpu")

    def _set_at_index(self, index: Any, value: Any) -> None:
        """``self[index] = value``: every entry checked, then all rows written in one
        transaction."""
        self._check_writable(index, in_place=True)
        batch = self._indexed_batch(index)
        if isinstance(value, Mapping) and not is_tensor_collection(value):
            value = TensorDict(dict(value), batch_size=batch)
        writes: list[tuple[SqliteTensorDict, tuple[Any, ...], torch.Tensor]] = []
        _plan_rows(self, index, value, batch, self.batch_dims, (), writes)
        with self._store.transaction():
            for node, entry, source in writes:
                node._write_at(entry, index, source)

    def _write_at(self, entry: tuple[Any, ...], index: Any, source: torch.Tensor) -> None:
        """Write ``source`` at ``index`` of the stored tensor ``entry``: the rows the
        index touches are read, changed in memory and written back."""
        ident, _, dtype, shape, _, _ = entry
        rows, rest = split_rows(index, self._batch_size)
        block = self._store.read_rows(ident, rows, dtype, shape)
        block[rest] = source.to(dtype)
        self._store.write_rows(ident, row_numbers(rows, shape[0]) if shape else range(1), block)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Everything read into an ordinary in-memory TensorDict."""
        entries = {}
        for key in self._keys_str():
            value = self._get_str(key)
            entries[key] = value.to_tensordict() if isinstance(value, SqliteTensorDict) \
                else value
        return from_entries(entries, self._batch_size, self._device)

    def clone(self, recurse: bool = True, **kwargs: Any) -> TensorDictBase:
        """An in-memory copy (the file is left alone)."""
        return self.to_tensordict()

    def _compact_entries(self) -> list[Any]:
        """The fields of the compact repr, from shapes and dtypes (nothing read)."""
        entries = []
        for key in self._keys_str():
            peek = self._peek_str(key)
            if isinstance(peek, torch.Tensor):  # a tensor of its shape taking no memory
                peek = torch.zeros((), dtype=peek.dtype).expand(peek.shape)
            entries.append((key, *compact_value(peek, self.batch_dims, self._device)))
        return entries

    def _compact_nested_block(self, batch_ndim: int) -> tuple[str, list[Any]]:
        """This node as a block of its parent's compact repr."""
        extra = self._batch_size[batch_ndim:]
        return sizes(extra) if extra else "", self._compact_entries()

    def __repr__(self) -> str:
        head = f"SqliteTensorDict(batch_size={sizes(self._batch_size)}"
        return compact_layout(head, [("fields", self._compact_entries())])


def _as_value(value: Any, batch: torch.Size) -> Any:
    """Numbers, numpy arrays and dicts as what they are stored as."""
    if isinstance(value, torch.Tensor) or is_tensor_collection(value):
        return value
    if isinstance(value, dict):
        return TensorDict(value, batch_size=batch)
    if isinstance(value, (np.ndarray, np.number, int, float, bool)):
        return torch.as_tensor(value)
    return NonTensorData(value, batch_size=batch)


def _write_entry(store: Store, node: int, key: str, value: Any, where: tuple[str, ...]
                 ) -> None:
    if isinstance(value, torch.Tensor):
        store.add_tensor(node, key, value)
    elif isinstance(value, NonTensorData):
        store.add_data(node, key, "data", encode_data(value.data, where))
    elif getattr(value, "_is_non_tensor", False):
        store.add_data(node, key, "stack", encode_data(value.tolist(), where))
    else:
        group = store.add_group(node, key, encode_metadata(value))
        _write_group(store, group, value, where)


def _write_group(store: Store, node: int, td: Any, where: tuple[str, ...]) -> None:
    for key in td.keys():
        _write_entry(store, node, key, td._get_str(key), where + (key,))


def _plan_rows(std: SqliteTensorDict, index: Any, value: Any, batch: torch.Size, ndim: int,
               where: tuple[str, ...], writes: list[tuple[Any, ...]]) -> None:
    """Check ``std[index] = value`` entry by entry and plan the row writes (``index``
    applies to the first ``ndim`` dims, ``batch`` is the batch size it gives)."""
    for key in value.keys():
        path = where + (key,)
        entry = std._store.child(std._node, key)
        if entry is None:
            raise errors.missing_key(path if where else key, list(std._keys_str()), where)
        source = value._get_str(key)
        if entry[1] == "group":
            if not is_tensor_collection(source) or getattr(source, "_is_non_tensor", False):
                raise TypeError(f"cannot write a {type(source).__name__} into the "
                                f"sub-TensorDict {path!r}")
            child = std._child(key, entry[0], entry[4])
            _plan_rows(child, index, source, batch, ndim, path, writes)
            continue
        if entry[1] != "tensor" or not isinstance(source, torch.Tensor):
            if _holds_already(std, entry, index, source):
                continue  # a row read from this file, written back
            raise TypeError(f"cannot write a {type(source).__name__} at an index of {path!r}: "
                            f"a SqliteTensorDict stores one value per non-tensor entry")
        shape = torch.Size(batch + entry[3][ndim:])
        check_fits(source.shape, shape, path, index)
        writes.append((std, entry, source.expand(shape)))


def _holds_already(std: SqliteTensorDict, entry: tuple[Any, ...], index: Any,
                   source: Any) -> bool:
    if entry[1] == "tensor" or not getattr(source, "_is_non_tensor", False):
        return False
    stored = std._non_tensor(entry[1], entry[5])[index]
    return stored.tolist() == source.tolist()
