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
from tensordict._shapes import indexed_size, masks_to_indices, normalize_index
from tensordict._stack import entries_of, flatten_nested, map_nested, same_value


def set_at_index(td: Any, index: Any, value: Any) -> None:
    """Write ``value`` (a TensorDict, mapping, tensor or number) into ``td[index]``."""
    parts = masks_to_indices(normalize_index(index, td.batch_size))
    sub_batch = indexed_size(td.batch_size, parts)
    index = parts[0] if len(parts) == 1 else parts
    plan = _Plan(td.batch_size, sub_batch, index)
    if isinstance(value, Mapping) and not is_tensor_collection(value):
        from tensordict._td import TensorDict

        value = TensorDict(value, batch_size=sub_batch)
    if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
        plan.collection(td, value, len(value.batch_size), ())
    else:
        for key, leaf in td.items(True, True):
            plan.check(leaf, value, key)
            plan.writes.append((leaf, value))
    plan.run()


class _Plan:
    """Every write of ``td[index] = value``, checked before the first one happens.

    Shapes are relative to the top-level batch: a leaf of any depth is indexed on its
    leading ``len(batch_size)`` dims.
    """

    def __init__(self, batch_size: torch.Size, sub_batch: torch.Size, index: Any) -> None:
        self.batch_size, self.sub_batch, self.index = batch_size, sub_batch, index
        self.writes: list[tuple[torch.Tensor, Any]] = []
        self.allocations: list[tuple[Any, str, Any]] = []
        self.non_tensors: list[tuple[Any, str, Any]] = []

    def collection(self, td: Any, value: Any, value_ndim: int, prefix: tuple[str, ...]) -> None:
        from tensordict._td import TensorDict

        for key, source in entries_of(value).items():
            target = td._get_str(key, None)
            path = prefix + (key,)
            if isinstance(source, torch.Tensor):
                if target is None:
                    target = torch.zeros(self.batch_size + source.shape[value_ndim:],
                                         dtype=source.dtype, device=td.device or source.device)
                    self.allocations.append((td, key, target))
                self.check(target, source, path)
                self.writes.append((target, source))
            elif getattr(source, "_is_non_tensor", False):
                self.non_tensors.append((td, key, source))
            else:
                if target is None:
                    size = self.batch_size + source.batch_size[value_ndim:]
                    target = TensorDict._new_unsafe({}, size, td.device, None)
                    self.allocations.append((td, key, target))
                self.collection(target, source, value_ndim, path)

    def check(self, target: torch.Tensor, source: Any, key: Any) -> None:
        target_shape = self.sub_batch + target.shape[len(self.batch_size):]
        source_shape = source.shape if isinstance(source, torch.Tensor) else torch.Size()
        if source_shape != target_shape and (
            len(source_shape) > len(target_shape)
            or any(s not in (1, t) for s, t in zip(reversed(source_shape), reversed(target_shape)))
        ):
            raise RuntimeError(
                f"cannot write a value of shape {source_shape} into entry {key!r} at the "
                f"index: the indexed entry has shape {target_shape}"
            )

    def run(self) -> None:
        for parent, key, entry in self.allocations:
            parent._set_str(key, entry, inplace=False, validated=True)
        for target, source in self.writes:
            target[self.index] = source
        for parent, key, source in self.non_tensors:
            parent._set_str(key, _written_non_tensor(parent, key, self.index, source),
                            inplace=False, validated=True)


def _written_non_tensor(td: Any, key: str, index: Any, source: Any) -> Any:
    """The non-tensor entry ``td[key]`` after writing ``source`` at ``index``: one shared
    value while all writes agree, a NonTensorStack once they differ."""
    from tensordict._nontensor import NonTensorData, NonTensorStack

    current = td._get_str(key, None)
    if isinstance(source, NonTensorData) and (current is None or (
            isinstance(current, NonTensorData) and same_value(current.data, source.data))):
        return NonTensorData(source.data, batch_size=td.batch_size, device=td.device)
    if current is None:
        current = NonTensorData(None, batch_size=td.batch_size, device=td.device)
    batch = td.batch_size
    flat = flatten_nested(current.tolist(), len(batch))
    positions = torch.arange(len(flat)).reshape(batch)[index].reshape(-1).tolist()
    values = flatten_nested(source.tolist(), len(source.batch_size))
    values = values * (len(positions) // max(len(values), 1))
    for position, item in zip(positions, values):
        flat[position] = item
    nested = map_nested(torch.arange(len(flat)).reshape(batch).tolist(), flat)
    return NonTensorStack.from_list(nested, batch, td.device)
