"""How tensorclass instances print: compact by default, verbose with
``set_printoptions(compact=False)``. Stored fields come first (sorted), then the fields
set to None.

Example:
    >>> import torch
    >>> from tensordict import TensorClass
    >>> class Obs(TensorClass):
    ...     pixels: torch.Tensor
    ...     mask: torch.Tensor = None
    >>> Obs(pixels=torch.zeros(4, 3, 8, 8, dtype=torch.uint8), batch_size=[4])
    Obs(batch_size=[4], fields={pixels: u8[3,8,8], mask: None})
"""

from __future__ import annotations

from typing import Any

from tensordict.extending import (
    Block,
    Entry,
    compact_head,
    compact_layout,
    sorted_keys,
    verbose_tail,
)
from tensordict.extending import compact_value as _compact_value
from tensordict.extending import indent as _indent
from tensordict.extending import is_shared as _is_shared
from tensordict.extending import sizes as _sizes
from tensordict.extending import verbose_entry as _verbose_entry
from tensordict.utils import get_printoptions


def _entries(obj: Any) -> list[tuple[str, Any]]:
    """``(name, stored value)`` pairs: stored keys sorted, then None fields in order."""
    td = obj._tensordict
    stored = sorted_keys(td._keys_str())
    missing = [name for name in type(obj).__dataclass_fields__ if name not in td.keys()]
    return [(key, td._get_str(key)) for key in stored] + [(name, None) for name in missing]


def _compact_entries(obj: Any) -> list[Entry]:
    td = obj._tensordict
    ndim = len(td.batch_size)
    return [(key, "None", None) if value is None else
            (key, *_compact_value(value, ndim, td.device)) for key, value in _entries(obj)]


def compact_repr(obj: Any) -> str:
    """``Name(batch_size=[3], fields={a: f32[4], b: None})``, a line a field when long."""
    td = obj._tensordict
    return compact_layout(compact_head(type(obj).__name__, td.batch_size, td.device),
                          [("fields", _compact_entries(obj))])


def nested_compact_block(obj: Any, parent_ndim: int) -> Block:
    """How an instance shows as an entry of a compact repr: ``Name{a: f32[], b: None}``
    (its fields one a line when long)."""
    extra = obj._tensordict.batch_size[parent_ndim:]
    return f"{type(obj).__name__}{_sizes(extra) if extra else ''}", _compact_entries(obj)


def verbose_repr(obj: Any) -> str:
    """The multi-line layout of ``set_printoptions(compact=False)``."""
    td = obj._tensordict
    lines = [
        f"{key}={_indent(_verbose_entry(value)) if value is not None else None}"
        for key, value in _entries(obj)
    ]
    lines += verbose_tail(td.batch_size, td.device, lambda: _is_shared(td))
    body = ",\n    ".join(lines)
    return f"{type(obj).__name__}(\n    {body})"


def tensorclass_repr(obj: Any) -> str:
    """The repr of ``obj`` under the current print options."""
    if get_printoptions()["compact"]:
        return compact_repr(obj)
    return verbose_repr(obj)
