"""The writes of the differential cases: each one call (or statement) on a view ``v``.

Every value written is derived from ``v`` itself (``torch.full_like(v.get(key), 7)``), so
one write fits whatever batch shape the view has, under upstream and ours alike. A write
whose value cannot be made for a view (no batch dim to index) raises, the same on both
sides.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tensordict import NonTensorData, NonTensorStack, TensorDict

NESTED = ("nested", "c")


def like(v: Any, key: Any, value: float, index: Any = None) -> torch.Tensor:
    """A tensor shaped like ``v.get(key)`` (or its ``[index]`` part) filled with ``value``."""
    current = v.get(key)
    return torch.full_like(current if index is None else current[index], value)


def full(v: Any, value: float, *extra: int) -> torch.Tensor:
    """A float tensor of ``v``'s batch size (plus ``extra`` dims) filled with ``value``."""
    return torch.full((*v.batch_size, *extra), float(value))


def shifted(v: Any, by: float = 1.0) -> Any:
    """A copy of ``v`` with every tensor plus ``by`` (non-tensor data kept)."""
    return v.apply(lambda x: x + by)


def non_tensor_stack(batch_size: Any, value: str) -> Any:
    """A NonTensorStack of ``batch_size`` holding ``value`` everywhere (data for ``[]``)."""
    if not len(batch_size):
        return NonTensorData(value)
    return NonTensorStack(*(non_tensor_stack(batch_size[1:], value) for _ in range(batch_size[0])))


def _setitem(key: Any, make: Callable[[Any], Any]) -> Callable[[Any], None]:
    def write(v: Any) -> None:
        v[key] = make(v)

    return write


def _delitem(key: Any) -> Callable[[Any], None]:
    def write(v: Any) -> None:
        del v[key]

    return write


def _set_attr(name: str, make: Callable[[Any], Any]) -> Callable[[Any], None]:
    def write(v: Any) -> None:
        setattr(v, name, make(v))

    return write


_TENSOR: dict[str, Callable[[Any], Any]] = {
    "setitem": _setitem("a", lambda v: like(v, "a", 7)),
    "setitem_new": _setitem("new", lambda v: full(v, 5)),
    "setitem_nested": _setitem(NESTED, lambda v: like(v, NESTED, 7)),
    "setitem_nested_new": _setitem(("nested", "new"), lambda v: full(v, 5)),
    "setitem_td": _setitem(
        "q", lambda v: TensorDict({"c": full(v, 1, 2)}, [*v.batch_size, 2])
    ),
    "set": lambda v: v.set("a", like(v, "a", 6)),
    "set_new": lambda v: v.set("new", full(v, 6)),
    "set_inplace": lambda v: v.set("a", like(v, "a", 6), inplace=True),
    "set_inplace_new": lambda v: v.set("new", full(v, 6), inplace=True),
    "set_": lambda v: v.set_("a", like(v, "a", 4)),
    "set_nested_": lambda v: v.set_(NESTED, like(v, NESTED, 4)),
    "set_wrong_shape_": lambda v: v.set_("a", torch.zeros(7)),
    "set_bf16_": lambda v: v.set_("a", like(v, "a", 3).to(torch.bfloat16)),
    "setdefault": lambda v: v.setdefault("new", full(v, 2)),
    "update": lambda v: v.update({"a": like(v, "a", 3), "new": full(v, 3)}),
    "update_nested": lambda v: v.update({"nested": {"c": like(v, NESTED, 3), "d": full(v, 3)}}),
    "update_inplace": lambda v: v.update({"a": like(v, "a", 3)}, inplace=True),
    "update_": lambda v: v.update_({"a": like(v, "a", 2), NESTED: like(v, NESTED, 2)}),
    "update__td": lambda v: v.update_(shifted(v)),
    "update_ktu_key": lambda v: v.update(
        {"a": like(v, "a", 8), "b": like(v, "b", 8)}, keys_to_update=["a"]
    ),
    "update_ktu_tuple": lambda v: v.update(
        {NESTED: like(v, NESTED, 8), ("nested", "new"): full(v, 8), "a": like(v, "a", 8)},
        keys_to_update=[NESTED],
    ),
    "update_ktu_subtree": lambda v: v.update(
        {NESTED: like(v, NESTED, 8), ("nested", "new"): full(v, 8), "a": like(v, "a", 8)},
        keys_to_update=["nested"],
    ),
    "update_ktu_creates": lambda v: v.update(
        {("agents", "obs"): full(v, 8, 2), "a": like(v, "a", 8)},
        keys_to_update=[("agents", "obs")],
    ),
    "update__ktu_subtree": lambda v: v.update_(
        {"nested": {"c": like(v, NESTED, 8)}, "a": like(v, "a", 8)}, keys_to_update=["nested"]
    ),
    "update__ktu_tuple": lambda v: v.update_(
        {NESTED: like(v, NESTED, 8), "a": like(v, "a", 8)}, keys_to_update=[NESTED]
    ),
    "update_at_": lambda v: v.update_at_({"a": like(v, "a", 9, 0)}, 0),
    "set_at_": lambda v: v.set_at_("a", like(v, "a", 9, 0), 0),
    "copy_": lambda v: v.copy_(shifted(v)),
    "copy_at_": lambda v: v.copy_at_(shifted(v[0]), 0),
    "zero_": lambda v: v.zero_(),
    "fill_": lambda v: v.fill_("a", 3),
    "fill_nested": lambda v: v.fill_(NESTED, 3),
    "add_": lambda v: v.add_(1),
    "mul_": lambda v: v.mul_(2),
    "clamp_max_": lambda v: v.clamp_max_(1),
    "apply_": lambda v: v.apply_(lambda x: x + 2),
    "masked_fill_": lambda v: v.masked_fill_(torch.ones(v.batch_size, dtype=torch.bool), 4),
    "setitem_index": _setitem(0, lambda v: shifted(v[0])),
    "setitem_ellipsis": _setitem(Ellipsis, lambda v: shifted(v, 10)),
    "delitem": _delitem("a"),
    "delitem_nested": _delitem(NESTED),
    "pop": lambda v: v.pop("a"),
    "rename_key_": lambda v: v.rename_key_("a", "z"),
    "rename_key_nested": lambda v: v.rename_key_(NESTED, ("nested", "z")),
    "set_batch_size": _set_attr("batch_size", lambda v: v.batch_size[:-1]),
    "set_names": _set_attr("names", lambda v: ["p", "q", "r", "t"][: v.batch_dims]),
    "lock_": lambda v: v.lock_(),
    "unlock_": lambda v: v.unlock_(),
}

_NON_TENSOR: dict[str, Callable[[Any], Any]] = {
    "set_non_tensor": lambda v: v.set_non_tensor("s", "new"),
    "set_non_tensor_new": lambda v: v.set_non_tensor("t", "newkey"),
    "setitem_str": _setitem("s", lambda v: "new"),
    "set__str": lambda v: v.set_("s", "new"),
    "set_inplace_str": lambda v: v.set("s", "new", inplace=True),
    "update__str": lambda v: v.update_({"s": "new"}),
    "update_inplace_str": lambda v: v.update({"s": "new"}, inplace=True),
    "update__stack": lambda v: v.update_({"s": non_tensor_stack(v.batch_size, "p")}),
    "update_at__str": lambda v: v.update_at_({"s": "new"}, 0),
}

WRITES: dict[str, Callable[[Any], Any]] = {**_TENSOR, **_NON_TENSOR}
"""Every write of the harness by name (tensor writes, then non-tensor ones)."""

NON_TENSOR_WRITES = frozenset(_NON_TENSOR)
