"""``update(source, update_batch_size=True)`` from a source of another batch size: the
destination, and each of its nested TensorDicts, takes the batch size of its counterpart in
the source, keeping its identity.

Every key of the destination must be in the source (else it would keep values of the old
batch size); ``keys_to_update`` and ``inplace=True`` cannot resize. A source whose batch
size extends the destination's, or is a prefix of it, updates as usual.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(obs=torch.zeros(5, 3), n=TensorDict(x=torch.zeros(5), batch_size=[5]),
    ...                 batch_size=[5])
    >>> nested = td["n"]
    >>> source = TensorDict(obs=torch.ones(2, 3), n=TensorDict(x=torch.ones(2), batch_size=[2]),
    ...                     batch_size=[2])
    >>> td.update(source, update_batch_size=True).batch_size, td["n"] is nested, nested.batch_size
    (torch.Size([2]), True, torch.Size([2]))
"""

from __future__ import annotations

import warnings
from collections.abc import Collection
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import is_tensor_collection
from tensordict._plan import WritePlan

_PREFIX_WARNING = (
    "update(update_batch_size=True) got a source with batch size longer than the "
    "destination's batch size, a prefix of it, and keeps the destination's batch size. "
    "Starting with TensorDict 0.17, the default will change to giving the destination the "
    "source's batch size, as for any other mismatch, which raises if the destination has "
    "keys that the source lacks, or with inplace=True or keys_to_update."
)


def planned_resize(dest: Any, source: Any, clone: bool, inplace: bool,
                   keys_to_update: Collection[Any] | None = None) -> WritePlan | None:
    """The checked write of ``dest.update(source, update_batch_size=True)`` if it changes
    ``dest``'s batch size (raises, before any change, if it cannot); None when the
    ordinary update applies."""
    new, old = source.batch_size, dest.batch_size
    if new == old:
        return None
    if len(new) > len(old) and new[:len(old)] == old:
        warnings.warn(_PREFIX_WARNING, FutureWarning, stacklevel=5)
        return None
    if len(new) < len(old) and old[:len(new)] == new:
        return None
    if keys_to_update is not None:
        raise RuntimeError("update(update_batch_size=True) cannot change the batch size from "
                           f"{list(old)} to {list(new)} with keys_to_update")
    if inplace:
        raise RuntimeError("update(update_batch_size=True, inplace=True) cannot change the "
                           f"batch size from {list(old)} to {list(new)}: the entries would "
                           "need new tensors")
    missing = set(dest.keys(True, True)) - set(source.keys(True, True))
    if missing:
        raise RuntimeError(
            f"update(update_batch_size=True) with a source of batch size {list(new)} for a "
            f"destination of batch size {list(old)}: the destination has keys the source "
            f"lacks, {sorted(missing, key=str)}, which would keep the old batch size")
    target = _entries_of(dest)
    if target is None:
        raise RuntimeError(f"update(update_batch_size=True) cannot change the batch size of "
                           f"a {type(dest).__name__}")
    _check_unlocked(dest)
    plan = WritePlan()
    plan.call(_take, target, source, clone)
    return plan


def take_in_place(dest: Any, source: Any) -> Any:
    """``dest`` given ``source``'s batch size, names and entries in place (its nested
    TensorDicts keep their identity), as the shape ops with ``inplace=True`` do; raises,
    changing nothing, if ``dest`` or a TensorDict in it is locked, or is a lazy stack.

    >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    >>> take_in_place(td, td.flatten()) is td, td.batch_size
    (True, torch.Size([6]))
    """
    target = _entries_of(dest)
    if target is None:
        raise RuntimeError(f"cannot change the batch size of a {type(dest).__name__} in place")
    _check_unlocked(dest)
    _take(target, source, False)
    return dest


def _entries_of(node: Any) -> Any:
    """The TensorDict holding ``node``'s entries (a tensorclass's own), or None for a
    node that cannot be resized in place (a lazy stack...)."""
    store = getattr(node, "_tensordict", None)
    if store is None:
        return None
    return node if store.__class__ is dict else store


def _check_unlocked(node: Any) -> None:
    """Raise if ``node`` or a TensorDict nested in it is locked."""
    if node.is_locked or any(getattr(value, "is_locked", False) for value in node.values(True)):
        raise errors.locked("change the batch size of a")


def _take(dest: Any, source: Any, clone: bool) -> None:
    """``dest`` (a TensorDict) gets ``source``'s batch size and entries, its nested
    TensorDicts recursively."""
    source_td = _entries_of(source)
    if source_td is None:
        source_td = source
    store, device = dest._tensordict, dest._device
    dest._batch_size = source_td.batch_size
    names = source_td.names if source_td.batch_size else []
    dest._names = tuple(names) if any(name is not None for name in names) else None
    for key, value in source_td.items():
        old = store.get(key)
        if is_tensor_collection(old) and is_tensor_collection(value) and not (
                getattr(old, "_is_non_tensor", False) or getattr(value, "_is_non_tensor", False)):
            target = _entries_of(old)
            if target is not None:
                _take(target, value, clone)
                continue
        if isinstance(value, torch.Tensor):
            if clone:
                value = value.clone()
            if device is not None and value.device != device:
                value = value.to(device)
        elif clone and is_tensor_collection(value):
            value = value.clone()
        store[key] = value
