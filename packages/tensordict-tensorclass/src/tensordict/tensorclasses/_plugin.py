"""Entry point of tensordict-tensorclass: what it contributes through the plugin hooks.

Imports nothing heavy: the names are resolved the first time they are used.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tensordict.plugins import hookimpl

#: the versions of the plugin API this plugin works with (checked when it registers)
TENSORDICT_PLUGIN_API = (1,)

#: The tensor attributes ``attrs()`` can record.
ATTRIBUTES = ("device", "dtype", "shape")


@hookimpl
def tensordict_top_level_names() -> dict[str, Any]:
    """``tensordict.tensorclass``, ``tensordict.TensorClass``, ``tensordict.TensorAttrs``,
    ``tensordict.from_dataclass``."""
    return {
        "tensorclass": "tensordict.tensorclasses:tensorclass",
        "TensorClass": "tensordict.tensorclasses:TensorClass",
        "TensorAttrs": "tensordict.tensorclasses:TensorAttrs",
        "from_dataclass": "tensordict.tensorclasses:from_dataclass",
    }


@hookimpl
def tensordict_methods() -> dict[str, Any]:
    """``attrs()`` on every tensor collection."""
    return {"attrs": attrs}


def attrs(self: Any, *, fields: Sequence[str] = ATTRIBUTES,
          num_threads: int | None = None) -> Any:
    """A collection of empty batch size and no device with one
    :class:`~tensordict.TensorAttrs` in place of each tensor leaf (non-tensor entries
    are kept).

    Args:
        fields: the attributes to record, among ``("device", "dtype", "shape")``; the
            others stay None.
        num_threads: accepted for compatibility; the leaves are described in this thread.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(x=torch.zeros(2, 3), batch_size=[2])
    >>> described = td.attrs(fields=("shape",))
    >>> described["x"].tgt_shape, described["x"].tgt_dtype, described.batch_size
    (torch.Size([2, 3]), None, torch.Size([]))
    """
    # imported here: this module is loaded with the plugin, before any tensorclass is used
    from tensordict.tensorclasses._attrs import TensorAttrs

    unknown = sorted(set(fields) - set(ATTRIBUTES))
    if unknown:
        raise ValueError(f"attrs() records {ATTRIBUTES}, got the unknown fields {unknown}")

    def describe(tensor: Any) -> TensorAttrs:
        return TensorAttrs(**{f"tgt_{name}": getattr(tensor, name) for name in fields})

    return self.apply(describe, batch_size=[], device=None)
