"""Older import paths kept working: ``tensordict.prototype.tensorclass`` and
``tensordict.prototype.fx.symbolic_trace`` (now ``tensordict.tensorclass`` and
``tensordict.nn.symbolic_trace``).

>>> from tensordict.prototype import tensorclass  # doctest: +SKIP
"""

from tensordict._upstream_paths import resolve_on_access
from tensordict.plugins import top_level_name

#: the older names, and the top-level names of the plugins now providing them
_MOVED = {"tensorclass": "tensorclass", "symbolic_trace": "prototype.fx.symbolic_trace"}
resolve_on_access(__name__, _MOVED, lambda name: top_level_name(_MOVED[name]))
