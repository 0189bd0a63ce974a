"""The hook implementations tensordict loads through the entry point (see pyproject.toml).

Keep this module cheap to import: it is imported the first time any plugin feature is
used. Each hook returns a mapping; a name another plugin already provides is an error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensordict.plugins import hookimpl

from td_plugin_template._numel import total_numel

#: the plugin API versions this plugin was written for (tensordict.plugins.PLUGIN_API_VERSION)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_methods() -> dict[str, Callable[..., Any]]:
    """Methods of every TensorDict: ``td.total_numel()``."""
    return {"total_numel": total_numel}


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    """Names of the ``tensordict`` namespace: ``tensordict.total_numel``."""
    return {"total_numel": total_numel}
