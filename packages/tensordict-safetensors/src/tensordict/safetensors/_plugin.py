"""Entry point of tensordict-safetensors: what it contributes through the plugin hooks.

Importing this module imports nothing heavy: ``safetensors`` is imported the first time
a safetensors feature is used.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {
        "from_safetensors": "tensordict.safetensors:from_safetensors",
        "to_safetensors": "tensordict.safetensors:to_safetensors",
    }


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.safetensors._io import METHODS

    return METHODS


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from tensordict.safetensors._io import SafetensorsBackend

    return {"safetensors": SafetensorsBackend()}
