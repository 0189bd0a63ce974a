"""Connecting to Redis with bounded waits, and errors that say where the server was.

>>> client = connect(host="127.0.0.1", port=1, socket_timeout=0.2)
>>> try:
...     checked(client.ping, client)
... except ConnectionError as err:
...     print(str(err).split(":")[0])
cannot reach the Redis server at 127.0.0.1
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis

#: how long a call waits for a server that does not answer (seconds), unless given
DEFAULT_TIMEOUT = 5.0


def connect(*, host: str = "localhost", port: int = 6379, db: int = 0,
            unix_socket_path: str | None = None, client: Any = None,
            **redis_kwargs: Any) -> redis.Redis:
    """A Redis client (``client`` itself when given); a dead server fails within
    ``socket_timeout`` seconds instead of hanging."""
    if client is not None:
        return client
    redis_kwargs.setdefault("socket_timeout", DEFAULT_TIMEOUT)
    redis_kwargs.setdefault("socket_connect_timeout", redis_kwargs["socket_timeout"])
    return redis.Redis(host=host, port=port, db=db, unix_socket_path=unix_socket_path,
                       **redis_kwargs)


def where(client: redis.Redis) -> str:
    """``host:port`` (or the socket path) a client talks to."""
    kwargs = client.connection_pool.connection_kwargs
    return kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"


def checked(call: Callable[..., Any], client: redis.Redis, *args: Any) -> Any:
    """``call(*args)``, with a connection failure reported as a ConnectionError that
    names the server."""
    try:
        return call(*args)
    except (redis.ConnectionError, redis.TimeoutError) as err:
        raise ConnectionError(f"cannot reach the Redis server at {where(client)}: {err}") \
            from err


def connection_kwargs(client: redis.Redis) -> dict[str, Any]:
    """What :func:`connect` needs to open a client like ``client`` in another process."""
    kwargs = client.connection_pool.connection_kwargs
    if kwargs.get("path"):
        return {"unix_socket_path": kwargs["path"], "db": kwargs.get("db", 0)}
    return {"host": kwargs.get("host", "localhost"), "port": kwargs.get("port", 6379),
            "db": kwargs.get("db", 0), "socket_timeout": kwargs.get("socket_timeout")}
