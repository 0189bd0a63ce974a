"""Older import paths kept working: ``tensordict.prototype.tensorclass`` and
``tensordict.prototype.fx.symbolic_trace`` (now ``tensordict.tensorclass`` and
``tensordict.nn.symbolic_trace``).

>>> from tensordict.prototype import tensorclass  # doctest: +SKIP
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "tensorclass":
        import tensordict

        return tensordict.tensorclass
    if name == "symbolic_trace":
        from tensordict.prototype.fx import symbolic_trace

        return symbolic_trace
    raise AttributeError(f"module 'tensordict.prototype' has no attribute {name!r}")
