"""Entry point of the example plugin: the ``sqlite`` storage backend and
``td.to_sqlite(path)``. Importing it imports nothing heavy."""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of tensordict's plugin API this plugin works with
TENSORDICT_PLUGIN_API = (1,)


def to_sqlite(td: Any, path: Any) -> Any:
    """Write ``td`` to the SQLite file ``path`` and open it (``td.save(path,
    backend="sqlite")``)."""
    from td_sqlite._td import SqliteTensorDict

    return SqliteTensorDict.from_tensordict(td, path)


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    return {"to_sqlite": to_sqlite}


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from td_sqlite._backend import SqliteBackend

    return {"sqlite": SqliteBackend()}
