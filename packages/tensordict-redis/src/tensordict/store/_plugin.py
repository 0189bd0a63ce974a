"""Entry point of tensordict-redis: ``TensorDictStore``, ``LazyStackedTensorDictStore``
and ``td.to_store``. Importing this module imports no redis client."""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {"TensorDictStore": "tensordict.store:TensorDictStore",
            "LazyStackedTensorDictStore": "tensordict.store:LazyStackedTensorDictStore"}


def to_store(td: Any, *, backend: str = "redis", host: str = "localhost", port: int = 6379,
             db: int = 0, unix_socket_path: str | None = None, prefix: str = "tensordict",
             device: Any = None, **kwargs: Any) -> Any:
    """A new store on a Redis server holding the entries of ``td``: a
    :class:`~tensordict.store.LazyStackedTensorDictStore` for a lazy stack (its elements
    may differ in shape), else a :class:`~tensordict.store.TensorDictStore`; for a
    tensorclass, that class over the store (its attributes read and write the server).

    >>> store = TensorDict(obs=torch.zeros(4, 3), batch_size=[4]).to_store(  # doctest: +SKIP
    ...     host="127.0.0.1")
    >>> type(store).__name__  # doctest: +SKIP
    'TensorDictStore'
    """
    from tensordict.store import LazyStackedTensorDictStore, TensorDictStore

    connection = {"backend": backend, "host": host, "port": port, "db": db,
                  "unix_socket_path": unix_socket_path, "prefix": prefix, "device": device}
    if getattr(td, "tensordicts", None) is not None and not getattr(td, "_is_non_tensor", False):
        return LazyStackedTensorDictStore.from_lazy_stack(td, **connection, **kwargs)
    store = TensorDictStore.from_tensordict(td, **connection, **kwargs)
    return type(td).from_tensordict(store) if getattr(td, "_is_tensorclass", False) else store


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    return {"to_store": to_store}


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from tensordict.store._backend import RedisBackend

    return {"redis": RedisBackend()}
