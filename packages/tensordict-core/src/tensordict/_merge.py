"""``merge_tensordicts``: one TensorDict with the keys of several, the first one winning.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, merge_tensordicts
    >>> merged = merge_tensordicts(TensorDict(a=torch.zeros(())), TensorDict(a=1, b=2))
    >>> merged["a"], merged["b"]
    (tensor(0.), tensor(2))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from tensordict._base import TensorDictBase
from tensordict._keys import is_leaf_nontensor
from tensordict._nested_key import NestedKey, unravel_key

Callback = Callable[..., Any]


def merge_tensordicts(
    *tensordicts: TensorDictBase,
    callback_exist: Callback | Mapping[NestedKey, Callback] | None = None,
) -> TensorDictBase:
    """A new TensorDict holding every leaf of every input; values are not copied.

    The result is a shallow copy of the first input (its class, batch size and device)
    to which the leaves of the others that it lacks are added, in order: for a key held
    by several inputs, the first one wins. Leaves are written with the usual checks, so
    a leaf whose shape does not start with the result's batch size raises.

    Args:
        *tensordicts: the TensorDicts to merge, at least two.

    Keyword Args:
        callback_exist: called as ``callback_exist(*values)`` on each tensor leaf that
            every input holds; what it returns is stored instead (``None`` is stored as
            non-tensor data). A dict maps keys (``"a"`` or ``("a", "b")``) to their own
            callback; the other keys keep the first value. Leaves held by some inputs
            only, and non-tensor leaves, always keep the first value.

    Raises:
        RuntimeError: fewer than two TensorDicts.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td0 = TensorDict({"a": {"b0": 0}, "common": 0})
    >>> td1 = TensorDict({"a": {"b1": 1}, "common": 1})
    >>> merged = merge_tensordicts(td0, td1)
    >>> list(merged.keys(include_nested=True, leaves_only=True, sort=True)), merged["common"]
    ([('a', 'b0'), ('a', 'b1'), 'common'], tensor(0))
    >>> merge_tensordicts(td0, td1, callback_exist=lambda *v: torch.stack(v))["common"]
    tensor([0, 1])
    """
    if len(tensordicts) < 2:
        raise RuntimeError(
            f"merge_tensordicts needs at least 2 tensordicts, got {len(tensordicts)}")
    first, *others = tensordicts
    out = first.copy()
    for other in others:
        for key in other.keys(include_nested=True, leaves_only=True,
                              is_leaf=is_leaf_nontensor):
            if out._get_path(key, None) is None:
                out.set(key, other._get_path(key))
    if callback_exist is None:
        return out
    callbacks = None
    if isinstance(callback_exist, Mapping):
        callbacks = {unravel_key(key): callback for key, callback in callback_exist.items()}
    for key in first.keys(include_nested=True, leaves_only=True):
        callback = callback_exist if callbacks is None else callbacks.get(key)
        if callback is None:
            continue
        values = [td._get_path(key, None) for td in tensordicts]
        if all(isinstance(value, torch.Tensor) for value in values):
            out.set(key, callback(*values))
    return out
