"""The views a write goes through: each opens a context that yields the object written to.

A plain view (``td[0]``, ``td["nested"]``, ``td._get_sub_tensordict(0)``) yields it; a
shape op's context-manager form (``with td.flatten(0, 1) as v``) yields the op's result
and writes it back through the inverse op on exit, as upstream does. The targets have
batch size ``[2, 1, 3]`` (a size-1 dim to squeeze), so every op below applies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager as ContextManager
from typing import Any, NamedTuple

import torch


class View(NamedTuple):
    """How to reach the written object from the target, and the group it reports under."""

    group: str
    open: Callable[[Any], ContextManager]


def _plain(group: str, reach: Callable[[Any], Any]) -> View:
    return View(group, lambda t: contextlib.nullcontext(reach(t)))


def _context(op: Callable[[Any], Any]) -> View:
    return View("shape_ctx", op)


VIEWS: dict[str, View] = {
    "self": _plain("self", lambda t: t),
    "int": _plain("index", lambda t: t[0]),
    "slice": _plain("index", lambda t: t[1:]),
    "mask": _plain("index", lambda t: t[torch.tensor([True, False])]),
    "tensor": _plain("index", lambda t: t[torch.tensor([1, 0])]),
    "ellipsis": _plain("index", lambda t: t[..., 1]),
    "tuple": _plain("index", lambda t: t[:, 0]),
    "chained": _plain("index", lambda t: t[1:][0]),
    "nested": _plain("nested", lambda t: t["nested"]),
    "int_nested": _plain("nested", lambda t: t[0]["nested"]),
    "nested_int": _plain("nested", lambda t: t["nested"][0]),
    "sub_td": _plain("sub_td", lambda t: t._get_sub_tensordict(0)),
    "sub_td_tuple": _plain("sub_td", lambda t: t._get_sub_tensordict((slice(None), 0))),
    "unbind": _plain("split", lambda t: t.unbind(0)[1]),
    "split": _plain("split", lambda t: t.split(1, 0)[1]),
    "select": _plain("select", lambda t: t.select("a", "nested", "s")),
    "exclude": _plain("select", lambda t: t.exclude("b")),
    "ctx_flatten": _context(lambda t: t.flatten(0, 1)),
    "ctx_flatten_end": _context(lambda t: t.flatten(1, 2)),
    "ctx_permute": _context(lambda t: t.permute(2, 0, 1)),
    "ctx_transpose": _context(lambda t: t.transpose(0, 2)),
    "ctx_squeeze": _context(lambda t: t.squeeze(1)),
    "ctx_unsqueeze": _context(lambda t: t.unsqueeze(0)),
    "ctx_view": _context(lambda t: t.view(-1)),
    "ctx_reshape": _context(lambda t: t.reshape(2, 3)),
    "ctx_movedim": _context(lambda t: t.movedim(0, 2)),
    "ctx_unflatten": _context(lambda t: t.unflatten(2, (3, 1))),
    "ctx_flatten_keys": _context(lambda t: t.flatten_keys()),
    "ctx_unflatten_keys": _context(lambda t: t.unflatten_keys()),
    "ctx_to_dtype": _context(lambda t: t.to(torch.float64)),
    "ctx_unlock": View("lock_ctx", lambda t: _yielding(t.unlock_(), t)),
    "part": _plain("stack_part", lambda t: t.tensordicts[0]),
}
"""Every view by name; ``part`` applies to lazy stacks only, ``ctx_unlock`` to locked ones."""

STACK_ONLY = frozenset({"part"})
LOCKED_ONLY = frozenset({"ctx_unlock"})


@contextlib.contextmanager
def _yielding(context: ContextManager, target: Any):
    """``with td.unlock_():`` yields ``td`` itself (what is written to)."""
    with context:
        yield target
