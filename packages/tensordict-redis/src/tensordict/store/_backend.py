"""The ``"redis"`` storage backend: ``td.save(td_id, backend="redis", host=...)`` and
``TensorDict.from_schema(..., storage="redis", host=...)``."""

from __future__ import annotations

from typing import Any


class RedisBackend:
    """Saves a collection as a new store (``path``, if given, is its id) and loads the
    store whose id is ``path``; stores are found by id, never recognised from a path."""

    def save(self, td: Any, path: Any = None, **kwargs: Any) -> Any:
        from tensordict.store import TensorDictStore

        return TensorDictStore.from_tensordict(td, td_id=path, **kwargs)

    def load(self, path: Any, **kwargs: Any) -> Any:
        from tensordict.store import TensorDictStore

        return TensorDictStore.from_store(td_id=str(path), **kwargs)

    def can_load(self, path: Any) -> bool:
        return False

    def from_schema(self, prototype: Any, *, device: Any = None, **kwargs: Any) -> Any:
        """A new zero-filled store; the server makes the zeros."""
        from tensordict.store import TensorDictStore

        return TensorDictStore.from_tensordict(prototype, device=device, **kwargs)
