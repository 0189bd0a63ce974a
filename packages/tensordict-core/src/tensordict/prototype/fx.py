"""``tensordict.prototype.fx``: tracing TensorDict modules (provided by tensordict-nn,
as the top-level name ``prototype.fx.symbolic_trace`` of its plugin).

>>> from tensordict.prototype.fx import symbolic_trace  # doctest: +SKIP
"""

from typing import Any

from tensordict import plugins


def __getattr__(name: str) -> Any:
    return plugins.top_level_name(f"prototype.fx.{name}")
