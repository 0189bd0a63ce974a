"""The ``sqlite`` storage backend: what ``td.save(path, backend="sqlite")`` and
``TensorDict.load(path)`` call."""

from __future__ import annotations

import os
from typing import Any

from td_sqlite._store import is_store
from td_sqlite._td import SqliteTensorDict


class SqliteBackend:
    """Saves a TensorDict as one SQLite file; loads it as a :class:`SqliteTensorDict`."""

    def save(self, td: Any, path: str | os.PathLike, **kwargs: Any) -> SqliteTensorDict:
        return SqliteTensorDict.from_tensordict(td, path, **kwargs)

    def load(self, path: str | os.PathLike, **kwargs: Any) -> SqliteTensorDict:
        return SqliteTensorDict(path, **kwargs)

    def from_schema(self, prototype: Any, *, device: Any = None,
                    path: str | os.PathLike | None = None) -> SqliteTensorDict:
        """``TensorDict.from_schema(..., storage="sqlite", path=...)``: a new file of zeros
        (the prototype's tensors are expanded zeros: rows are built one at a time)."""
        if path is None:
            raise TypeError("from_schema(storage='sqlite') needs path=")
        return SqliteTensorDict.from_tensordict(prototype, path, device=device)

    def can_load(self, path: str | os.PathLike) -> bool:
        return is_store(path)
