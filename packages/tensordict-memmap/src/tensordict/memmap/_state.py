"""What kind of collection a value is (duck-typed), and which collections are memmapped.

Collections cannot carry extra attributes, so the memmap flag and saved path of the
TensorDicts that ``memmap`` created live in a registry keyed by identity (entries vanish
with their TensorDict). As upstream, unlocking a memmapped TensorDict drops the flag.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> kind(TensorDict(a=torch.zeros(1))), kind(torch.zeros(1))
    ('tensordict', 'tensor')
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

from tensordict import NonTensorData, NonTensorStack, TensorDict
from tensordict.storage import lock_views
from tensordict.utils import acts_as_tensordict

#: id -> (weak reference, saved path) of the collections ``memmap`` created
REGISTRY: dict[int, tuple[weakref.ref[Any], str | None]] = {}
_LOCK = threading.Lock()


def kind(value: Any) -> str:
    """``tensor``, ``tensordict``, ``lazy``, ``nontensor``, ``nontensorstack``,
    ``tensorclass`` or ``other``."""
    if isinstance(value, torch.Tensor):
        return "tensor"
    if isinstance(value, NonTensorData):
        return "nontensor"
    if isinstance(value, NonTensorStack):
        return "nontensorstack"
    if getattr(type(value), "_is_tensorclass", False):
        return "tensorclass"
    if hasattr(value, "tensordicts") and hasattr(value, "stack_dim"):
        return "lazy"
    if acts_as_tensordict(value):
        return "tensordict"
    return "other"


def mark(collection: Any, path: str | None) -> None:
    """Record that ``collection`` was memmapped (at ``path``, None for shared memory); a
    locked TensorDict's index views (``td[0]``: views of its files) are locked too, as
    upstream's, so that a write to one raises instead of landing nowhere."""
    if isinstance(collection, TensorDict) and collection.is_locked:
        lock_views(collection)
    key = id(collection)
    try:
        ref = weakref.ref(collection, lambda _, key=key: REGISTRY.pop(key, None))
    except TypeError:  # not weak-referenceable: cannot be tracked
        return
    with _LOCK:
        REGISTRY[key] = (ref, path)


def _entry(collection: Any) -> tuple[weakref.ref[Any], str | None] | None:
    entry = REGISTRY.get(id(collection))
    if entry is None or entry[0]() is not collection:
        return None
    if not collection.is_locked:  # unlocking ends the memmapped state for good
        with _LOCK:
            REGISTRY.pop(id(collection), None)
        return None
    return entry


def is_memmap(collection: Any) -> bool:
    """Whether ``collection`` was created by ``memmap`` and is still locked."""
    return id(collection) in REGISTRY and _entry(collection) is not None


def saved_path(collection: Any) -> str | None:
    """The folder ``collection`` was memmapped to (AttributeError if not memmapped)."""
    entry = _entry(collection)
    if entry is None:
        raise AttributeError(
            f"The {type(collection).__name__} has no saved path (it is not memory-mapped, "
            "or it was unlocked since)."
        )
    return entry[1]
