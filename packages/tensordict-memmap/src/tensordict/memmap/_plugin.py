"""Entry point of tensordict-memmap: what it contributes through the plugin hooks.

Importing this module imports nothing heavy: the hooks hand out ``"module:name"``
strings and import the implementation only when a memmap feature is first used.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {
        "MemoryMappedTensor": "tensordict.memmap:MemoryMappedTensor",
        "memmap": "tensordict.memmap:memmap",
        "load_memmap": "tensordict.memmap:load_memmap",
        "save": "tensordict.memmap:save",
        "load": "tensordict.memmap:load",
    }


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.memmap._methods import METHODS

    return METHODS


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from tensordict.memmap._methods import MemmapBackend

    return {"memmap": MemmapBackend()}
