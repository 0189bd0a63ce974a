"""``tensordict.prototype.fx``: tracing TensorDict modules (provided by tensordict-nn).

>>> from tensordict.prototype.fx import symbolic_trace  # doctest: +SKIP
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "symbolic_trace":
        from tensordict.nn import symbolic_trace

        return symbolic_trace
    raise AttributeError(f"module 'tensordict.prototype.fx' has no attribute {name!r}")
