"""Writing at a batch index: ``td[idx] = value``, with lazy preallocation.

Entries missing from the target are allocated (zeros, with the batch size of the
target) on first write, so ``td = TensorDict(batch_size=[N]); td[i] = sample`` fills a
preallocated TensorDict in any index order. Every write is checked before the first
one happens: a failed ``td[idx] = value`` leaves ``td`` as it was.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(batch_size=[3])
    >>> td[1] = TensorDict({"a": torch.ones(2)}, batch_size=[])
    >>> td["a"]
    tensor([[0., 0.],
            [1., 1.],
            [0., 0.]])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from tensordict._base import is_tensor_collection
from tensordict._shapes import indexed_batch_size, normalize_index


def set_at_index(td: Any, index: Any, value: Any) -> None:
    """Write ``value`` (a TensorDict, mapping, tensor or number) into ``td[index]``."""
    parts = normalize_index(index, td.batch_size)
    sub_batch = indexed_batch_size(td.batch_size, parts)
    index = parts[0] if len(parts) == 1 else parts
    writes: list[tuple[Any, Any]] = []
    if isinstance(value, Mapping) and not is_tensor_collection(value):
        from tensordict._td import TensorDict

        value = TensorDict(value, batch_size=sub_batch)
    allocations: list[tuple[Any, str, Any]] = []
    if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
        _plan(td, index, sub_batch, value, (), writes, allocations)
    else:
        for key, leaf in td.items(True, True):
            if getattr(leaf, "_is_non_tensor", False):
                continue
            _check(leaf, index, sub_batch, td.batch_size, value, key)
            writes.append((leaf, value))
    for parent, key, tensor in allocations:
        parent._set_str(key, tensor, inplace=False, validated=True)
    for target, source in writes:
        target[index] = source


def _plan(td: Any, index: Any, sub_batch: torch.Size, value: Any, prefix: tuple[str, ...],
          writes: list[tuple[Any, Any]], allocations: list[tuple[Any, str, Any]]) -> None:
    for key in value.keys():
        source = value._get_str(key)
        target = td._get_str(key, None)
        path = prefix + (key,)
        if getattr(source, "_is_non_tensor", False):
            continue
        if is_tensor_collection(source):
            if target is None:
                target = _allocate_collection(td, source, sub_batch)
                allocations.append((td, key, target))
            _plan(target, index, sub_batch, source, path, writes, allocations)
            continue
        if target is None:
            feature = source.shape[len(value.batch_size):]
            target = torch.zeros(td.batch_size + feature, dtype=source.dtype,
                                 device=td.device or source.device)
            allocations.append((td, key, target))
        _check(target, index, sub_batch, td.batch_size, source, path)
        writes.append((target, source))


def _allocate_collection(td: Any, source: Any, sub_batch: torch.Size) -> Any:
    from tensordict._td import TensorDict

    extra = source.batch_size[len(sub_batch):]
    return TensorDict._new_unsafe({}, td.batch_size + extra, td.device, None)


def _check(target: torch.Tensor, index: Any, sub_batch: torch.Size, batch_size: torch.Size,
           source: Any, key: Any) -> None:
    target_shape = sub_batch + target.shape[len(batch_size):]
    source_shape = source.shape if isinstance(source, torch.Tensor) else torch.Size()
    try:
        torch.broadcast_shapes(source_shape, target_shape)
    except RuntimeError:
        raise RuntimeError(
            f"cannot write a value of shape {source_shape} into entry {key!r} at the index: "
            f"the indexed entry has shape {target_shape}"
        ) from None
    if len(source_shape) > len(target_shape):
        raise RuntimeError(
            f"cannot write a value of shape {source_shape} into entry {key!r} at the index: "
            f"the indexed entry has shape {target_shape}"
        )

