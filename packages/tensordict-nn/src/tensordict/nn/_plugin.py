"""Entry point of tensordict-nn: what it contributes through the plugin hooks.

Imports nothing heavy: the names below are strings resolved on first use.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    return {
        "TensorDictParams": "tensordict.nn.params:TensorDictParams",
        "TensorClassModuleBase": "tensordict.nn.tensorclass_module:TensorClassModuleBase",
        "TensorClassModuleWrapper": "tensordict.nn.tensorclass_module:TensorClassModuleWrapper",
        "as_tensordict_module": "tensordict.nn.common:as_tensordict_module",
        "prototype.fx.symbolic_trace": "tensordict.nn.fx:symbolic_trace",
    }
