"""The SQLite file: a tree of nodes (groups, tensors, non-tensor data) and the rows of
each tensor, one blob per element of its first dim, so that an index reads only the rows
it selects.

Every write runs in a transaction (:meth:`Store.transaction`, re-entrant): a write that
fails or is interrupted leaves the file as it was (SQLite's rollback journal), and
readers in other processes see the last committed state while a writer works.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import torch

from tensordict.extending import UnsafePickleError, dtype_from_name, dtype_name, loads_data

#: ``info.format`` of the files this plugin writes
FORMAT = "td-sqlite/1"
_HEADER = b"SQLite format 3\x00"
_SCHEMA = """
CREATE TABLE info (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE nodes (
    id INTEGER PRIMARY KEY,
    parent INTEGER REFERENCES nodes(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    kind TEXT NOT NULL,   -- 'group', 'tensor', 'data' (one value) or 'stack' (a list)
    dtype TEXT,           -- a tensor's dtype name
    shape TEXT,           -- a tensor's shape, JSON
    meta TEXT,            -- a group's metadata (batch size...), JSON
    payload BLOB,         -- non-tensor data, a pickle of plain data
    UNIQUE (parent, name)
);
CREATE TABLE rows (
    node INTEGER NOT NULL REFERENCES nodes(id) ON DELETE CASCADE,
    row INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (node, row)
) WITHOUT ROWID;
"""
#: the node id of the root group
ROOT = 1


def is_store(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a SQLite file written by this plugin."""
    try:
        with open(path, "rb") as file:
            if file.read(len(_HEADER)) != _HEADER:
                return False
        with contextlib.closing(sqlite3.connect(f"file:{os.fspath(path)}?mode=ro",
                                                uri=True)) as conn:
            row = conn.execute("SELECT value FROM info WHERE key = 'format'").fetchone()
    except (OSError, sqlite3.Error):
        return False
    return row is not None and row[0] == FORMAT


def encode_rows(tensor: torch.Tensor) -> list[bytes]:
    """The blobs of ``tensor``: one per element of its first dim (one for a 0-d one)."""
    tensor = tensor.detach().cpu()
    parts = [tensor] if tensor.ndim == 0 else tensor.unbind(0)
    return [part.contiguous().view(-1).view(torch.uint8).numpy().tobytes() for part in parts]


def decode_rows(blobs: Sequence[bytes], dtype: torch.dtype, row_shape: Sequence[int]
                ) -> torch.Tensor:
    """The tensor of ``len(blobs)`` rows of ``row_shape`` that :func:`encode_rows` wrote."""
    data = b"".join(blobs)
    flat = torch.frombuffer(bytearray(data), dtype=torch.uint8) if data else \
        torch.empty(0, dtype=torch.uint8)
    return flat.view(dtype).view(len(blobs), *row_shape)


def encode_data(value: Any, key: Any) -> bytes:
    """``value`` pickled, if it is plain data that :func:`loads_data` reads back;
    TypeError naming ``key`` otherwise (nothing else is stored)."""
    payload = pickle.dumps(value, protocol=4)
    try:
        loads_data(payload)
    except UnsafePickleError as err:
        raise TypeError(f"cannot store the non-tensor value at {key!r} "
                        f"({type(value).__name__}): only plain data is stored, and "
                        f"{err.name} is not") from None
    return payload


class Store:
    """One open SQLite file; the nodes of a :class:`SqliteTensorDict` tree share it."""

    def __init__(self, path: str | os.PathLike, mode: str) -> None:
        if mode not in ("r", "r+", "w"):
            raise ValueError(f"mode must be 'r', 'r+' or 'w', got {mode!r}")
        self.path, self.mode = os.fspath(path), mode
        if mode == "w" and os.path.exists(self.path):
            raise FileExistsError(f"{self.path!r} exists: a new store is written as a new file")
        if mode != "w" and not is_store(self.path):
            raise FileNotFoundError(f"{self.path!r} is not a tensordict SQLite store")
        uri = f"file:{self.path}?mode={'ro' if mode == 'r' else 'rwc'}"
        self.conn = sqlite3.connect(uri, uri=True, isolation_level=None,
                                    check_same_thread=False)
        self.conn.execute("PRAGMA foreign_keys = ON")
        self._depth = 0
        #: rows read so far (what a test of lazy reads counts)
        self.rows_read = 0
        if mode == "w":
            with self.transaction():
                for statement in _SCHEMA.split(";")[:-1]:
                    self.conn.execute(statement)
                self.conn.execute("INSERT INTO info VALUES ('format', ?)", (FORMAT,))
                self.conn.execute("INSERT INTO nodes (id, parent, name, kind, meta) "
                                  "VALUES (?, NULL, '', 'group', '{}')", (ROOT,))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """Run the block's writes as one transaction: all of them, or (on an error or a
        crash) none. Nested blocks join the outer one."""
        if self.mode == "r":
            raise OSError(f"the store {self.path!r} is open read-only (mode='r')")
        if self._depth:
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
            return
        self.conn.execute("BEGIN IMMEDIATE")
        self._depth = 1
        try:
            yield
        except BaseException:
            self._depth = 0
            self.conn.execute("ROLLBACK")
            raise
        self._depth = 0
        self.conn.execute("COMMIT")

    def close(self) -> None:
        self.conn.close()

    # -- nodes -------------------------------------------------------------------------
    def children(self, node: int) -> list[str]:
        rows = self.conn.execute("SELECT name FROM nodes WHERE parent = ? ORDER BY id", (node,))
        return [name for (name,) in rows]

    def child(self, node: int, name: str) -> tuple[Any, ...] | None:
        """``(id, kind, dtype, shape, meta, payload)`` of the entry ``name`` of ``node``."""
        row = self.conn.execute(
            "SELECT id, kind, dtype, shape, meta, payload FROM nodes "
            "WHERE parent = ? AND name = ?", (node, name)).fetchone()
        if row is None:
            return None
        ident, kind, dtype, shape, meta, payload = row
        return (ident, kind, None if dtype is None else dtype_from_name(dtype),
                None if shape is None else torch.Size(json.loads(shape)),
                None if meta is None else json.loads(meta), payload)

    def meta(self, node: int) -> dict[str, Any]:
        (meta,) = self.conn.execute("SELECT meta FROM nodes WHERE id = ?", (node,)).fetchone()
        return json.loads(meta)

    def set_meta(self, node: int, meta: dict[str, Any]) -> None:
        self.conn.execute("UPDATE nodes SET meta = ? WHERE id = ?", (json.dumps(meta), node))

    def remove(self, node: int, name: str) -> None:
        """Delete the entry ``name`` of ``node`` and everything under it."""
        self.conn.execute("DELETE FROM nodes WHERE parent = ? AND name = ?", (node, name))

    def add_group(self, node: int, name: str, meta: dict[str, Any]) -> int:
        cursor = self.conn.execute(
            "INSERT INTO nodes (parent, name, kind, meta) VALUES (?, ?, 'group', ?)",
            (node, name, json.dumps(meta)))
        return int(cursor.lastrowid)

    def add_tensor(self, node: int, name: str, tensor: torch.Tensor) -> None:
        cursor = self.conn.execute(
            "INSERT INTO nodes (parent, name, kind, dtype, shape) VALUES (?, ?, 'tensor', ?, ?)",
            (node, name, dtype_name(tensor.dtype), json.dumps(list(tensor.shape))))
        rows = range(len(tensor)) if tensor.ndim else range(1)
        self.write_rows(int(cursor.lastrowid), rows, tensor)

    def add_data(self, node: int, name: str, kind: str, payload: bytes) -> None:
        self.conn.execute(
            "INSERT INTO nodes (parent, name, kind, payload) VALUES (?, ?, ?, ?)",
            (node, name, kind, payload))

    # -- rows --------------------------------------------------------------------------
    def read_rows(self, ident: int, rows: Any, dtype: torch.dtype,
                  shape: torch.Size) -> torch.Tensor:
        """The rows ``rows`` (a slice, sorted row numbers, or None for all) of a tensor."""
        if not shape:  # a 0-d tensor: one row
            (blob,) = self.conn.execute("SELECT data FROM rows WHERE node = ?",
                                        (ident,)).fetchone()
            self.rows_read += 1
            return decode_rows([blob], dtype, ()).view(())
        if rows is None:
            rows = slice(0, shape[0], 1)
        if isinstance(rows, slice):
            start, stop, step = rows.indices(shape[0])
            cursor = self.conn.execute(
                "SELECT data FROM rows WHERE node = ? AND row >= ? AND row < ? "
                "AND (row - ?) % ? = 0 ORDER BY row", (ident, start, stop, start, step))
        else:
            numbers = [int(r) for r in rows]
            marks = ",".join("?" * len(numbers))
            cursor = self.conn.execute(
                f"SELECT data FROM rows WHERE node = ? AND row IN ({marks}) ORDER BY row",
                (ident, *numbers))
        blobs = [blob for (blob,) in cursor]
        self.rows_read += len(blobs)
        return decode_rows(blobs, dtype, shape[1:])

    def write_rows(self, ident: int, rows: Sequence[int], block: torch.Tensor) -> None:
        """Store ``block`` (one element of its first dim per row of ``rows``; a 0-d
        tensor for row 0 of a 0-d entry) as those rows."""
        blobs = encode_rows(block)
        self.conn.executemany("INSERT OR REPLACE INTO rows (node, row, data) VALUES (?, ?, ?)",
                              [(ident, int(row), blob) for row, blob in zip(rows, blobs)])


def row_numbers(rows: Any, length: int) -> range | list[int]:
    """The row numbers ``rows`` (a slice or sorted numbers; None: all) stands for."""
    if rows is None:
        return range(length)
    if isinstance(rows, slice):
        return range(*rows.indices(length))
    return [int(r) for r in rows]
