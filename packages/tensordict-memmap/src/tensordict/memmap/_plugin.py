"""Entry point of tensordict-memmap: what it contributes through the plugin hooks."""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {}
