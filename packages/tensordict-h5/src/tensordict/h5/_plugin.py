"""Entry point of tensordict-h5: ``from_h5``, ``to_h5`` and the ``"h5"`` storage
backend (``td.save(path, backend="h5")``). Importing this module imports no h5py."""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {"from_h5": "tensordict.h5:from_h5"}


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.h5 import METHODS

    return METHODS


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from tensordict.h5._backend import H5Backend

    return {"h5": H5Backend()}
