"""Older import paths kept working: ``tensordict.prototype.tensorclass`` and
``tensordict.prototype.fx.symbolic_trace`` (now ``tensordict.tensorclass`` and
``tensordict.nn.symbolic_trace``).

>>> from tensordict.prototype import tensorclass  # doctest: +SKIP
"""

from typing import Any

from tensordict import plugins

#: the older names, and the top-level names of the plugins now providing them
_MOVED = {"tensorclass": "tensorclass", "symbolic_trace": "prototype.fx.symbolic_trace"}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return plugins.top_level_name(_MOVED[name])
    raise AttributeError(f"module 'tensordict.prototype' has no attribute {name!r}")
