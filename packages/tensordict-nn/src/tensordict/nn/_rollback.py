"""Undo the writes of a module that failed half-way: a failed call leaves its input
TensorDict exactly as it was.

Before running, :func:`record` notes what each key the module may write holds (a
reference, no copy); :func:`restore`, called only when the module raised, puts those
values back and deletes the keys (or the shallowest missing part of a nested key) that
did not exist. A lazy stack is recorded part by part, as writes to it go to its parts.
Writes made *into* existing tensors (``tensor.add_``) are not undone.

>>> import torch
>>> from tensordict import TensorDict
>>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
>>> before = record(td, ["a", ("n", "b")])
>>> td["a"], td["n", "b"] = torch.ones(2), torch.ones(2)
>>> restore(td, before)
>>> td["a"], list(td.keys())
(tensor([0., 0.]), ['a'])
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tensordict import LazyStackedTensorDict, NestedKey, TensorDict, TensorDictBase

# A dense TensorDict's record: (key, previous value or None when absent) pairs. A lazy
# stack's: (part, record of the part) pairs.
Record = list[tuple[Any, Any]]


def record(td: TensorDictBase, keys: Iterable[NestedKey]) -> Record:
    """What ``td`` holds at ``keys`` (``"_"``, a discarded output, is skipped)."""
    if td.__class__ is not TensorDict and isinstance(td, LazyStackedTensorDict):
        return [(part, record(part, keys)) for part in td.tensordicts]
    return [_previous(td, key) for key in keys if key != "_"]


def _previous(td: TensorDictBase, key: NestedKey) -> tuple[NestedKey, Any]:
    """``(key, its value)``, or ``(the shallowest missing prefix of key, None)``; walks
    the entries of plain TensorDicts directly (the common, cheap case)."""
    parts = (key,) if key.__class__ is str else key
    node: Any = td
    for depth, part in enumerate(parts):
        if node.__class__ is not TensorDict:
            break
        node = node._get_str(part, None)
        if node is None:
            return (part if depth == 0 else parts[:depth + 1]), None
    else:
        return key, node
    previous = td.get(key, None)
    if previous is None and key.__class__ is not str:
        key = _first_missing(td, key)
    return key, previous


def _first_missing(td: TensorDictBase, key: tuple[str, ...]) -> NestedKey:
    """The shallowest prefix of the (missing) nested ``key`` that is not in ``td``."""
    for depth in range(1, len(key)):
        if td.get(key[:depth], None) is None:
            return key[0] if depth == 1 else key[:depth]
    return key


def restore(td: TensorDictBase, entries: Record) -> None:
    """Put back what :func:`record` saw (in reverse order: a parent key after its
    children)."""
    if isinstance(td, LazyStackedTensorDict):
        for part, part_entries in entries:
            restore(part, part_entries)
        return
    for key, previous in reversed(entries):
        if previous is not None:
            td.set(key, previous)
        elif td.get(key, None) is not None:
            td.del_(key)
