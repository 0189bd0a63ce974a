"""Entry point of tensordict-memmap: what it contributes through the plugin hooks.

Importing this module imports nothing heavy: the hooks hand out ``"module:name"``
strings and import the implementation only when a memmap feature is first used.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {
        "MemoryMappedTensor": "tensordict.memmap:MemoryMappedTensor",
        "memmap": "tensordict.memmap:memmap",
        "load_memmap": "tensordict.memmap:load_memmap",
        "save": "tensordict.memmap:save",
        "load": "tensordict.memmap:load",
        "pack_memmap": "tensordict.memmap._archive:pack_memmap",
        "unpack_memmap": "tensordict.memmap._archive:unpack_memmap",
        "is_memmap_archive": "tensordict.memmap._archive:is_memmap_archive",
        "refresh_archive_checksums": "tensordict.memmap._archive:refresh_archive_checksums",
        "append_memmap": "tensordict.memmap._append:append_memmap",
        "PackLayout": "tensordict.memmap._pack:PackLayout",
    }


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.memmap._methods import METHODS
    from tensordict.memmap._pack import pack

    return {**METHODS, "pack": pack}


@hookimpl
def tensordict_storage_backends() -> dict[str, Any]:
    from tensordict.memmap._methods import MemmapBackend

    return {"memmap": MemmapBackend()}
