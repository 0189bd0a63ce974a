"""Entry point of tensordict-tensorclass: what it contributes through the plugin hooks.

Imports nothing heavy: the names are resolved the first time they are used.
"""

from __future__ import annotations

from typing import Any

from tensordict.plugins import hookimpl


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    """``tensordict.tensorclass``, ``tensordict.TensorClass``, ``tensordict.is_tensorclass``."""
    return {
        "tensorclass": "tensordict.tensorclasses:tensorclass",
        "TensorClass": "tensordict.tensorclasses:TensorClass",
        "is_tensorclass": "tensordict.tensorclasses:is_tensorclass",
    }
