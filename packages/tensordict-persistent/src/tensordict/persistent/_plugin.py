"""Entry point of tensordict-persistent: the ``PersistentTensorDict`` top-level name."""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {"PersistentTensorDict": "tensordict.persistent:PersistentTensorDict"}
