"""Entry point of tensordict-zarr: ``from_zarr``, ``to_zarr`` and the ``"zarr"`` storage
backend (``td.save(path, backend="zarr")``). Importing this module imports no zarr."""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {"from_zarr": "tensordict.zarr:from_zarr"}


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.zarr import METHODS

    return METHODS


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from tensordict.zarr._backend import ZarrBackend

    return {"zarr": ZarrBackend()}
