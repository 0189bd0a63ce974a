"""Entry point of tensordict-tabular: what it contributes through the plugin hooks.

Importing this module imports nothing heavy: pyarrow (and pandas) are imported the first
time a tabular feature is used.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)

_TOP_LEVEL = ("from_arrow", "to_arrow", "from_parquet", "from_csv", "from_json", "from_pandas")


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {name: f"tensordict.tabular:{name}" for name in _TOP_LEVEL}


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    from tensordict.tabular._methods import METHODS

    return METHODS
