"""Non-tensor leaves: strings, numbers and objects that ride along with the tensors.

``NonTensorData`` holds one Python object for a whole batch; ``NonTensorStack`` holds one
object per batch element. Both follow every shape op and index of their TensorDict.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
    >>> td["s"] = "a string!"
    >>> td["tags"] = ["x", "y"]
    >>> td["s"], td["tags"], td[1]["tags"]
    ('a string!', LinkedList(['x', 'y']), 'y')
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict._base import TensorCollection
from tensordict._shapes import as_device, as_size, indexed_batch_size


class LinkedList(list):
    """The nested lists a NonTensorStack reads as."""

    def __repr__(self) -> str:
        return f"LinkedList({list.__repr__(self)})"


class NonTensorData(TensorCollection):
    """One Python object shared by every element of a batch.

    >>> data = NonTensorData("hello", batch_size=[2])
    >>> data.data, data.tolist(), data[0].batch_size
    ('hello', ['hello', 'hello'], torch.Size([]))
    """

    __slots__ = ("data", "_metadata", "_batch_size", "_device", "_names")
    _is_non_tensor = True

    def __init__(
        self,
        data: Any,
        _metadata: Any = None,
        _is_non_tensor: bool = True,
        *,
        batch_size: Sequence[int] | torch.Size | None = None,
        device: Any = None,
        names: Sequence[str | None] | None = None,
    ) -> None:
        self.data = data
        self._metadata = _metadata
        self._batch_size = as_size(batch_size)
        self._device = as_device(device)
        self._names = None if names is None else tuple(names)

    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    shape = batch_size

    @property
    def device(self) -> torch.device | None:
        return self._device

    @property
    def names(self) -> list[str | None]:
        return list(self._names) if self._names else [None] * len(self._batch_size)

    def numel(self) -> int:
        return self._batch_size.numel()

    def _rebatch(self, batch_size: torch.Size, device: Any = None, names: Any = None) -> NonTensorData:
        return NonTensorData(self.data, self._metadata, batch_size=batch_size,
                             device=self._device if device is None else device, names=names)

    def _restructure(self, fn: Callable[[torch.Tensor], torch.Tensor],
                     batch_size: torch.Size, names: Any = None) -> NonTensorData:
        """The result of a shape op or index (``fn`` acts on batch-shaped tensors)."""
        return self._rebatch(batch_size, names=names)

    def __getitem__(self, index: Any) -> NonTensorData:
        return self._rebatch(indexed_batch_size(self._batch_size, index))

    def tolist(self) -> Any:
        """The object repeated over the batch, as nested lists."""
        result: Any = self.data
        for size in reversed(self._batch_size):
            result = [result] * size
        return result

    def to(self, device: Any, *args: Any, **kwargs: Any) -> NonTensorData:
        return self._rebatch(self._batch_size, device=as_device(device))

    def clone(self, recurse: bool = True) -> NonTensorData:
        data = copy.deepcopy(self.data) if recurse else self.data
        return NonTensorData(data, self._metadata, batch_size=self._batch_size,
                             device=self._device, names=self._names)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        other_data = other.data if isinstance(other, NonTensorData) else other
        return torch.full(self._batch_size, bool(self.data == other_data), device=self._device)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return ~self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"NonTensorData(data={self.data}, batch_size={self._batch_size}, "
                f"device={self._device})")


class NonTensorStack(TensorCollection):
    """One Python object per batch element.

    >>> stack = NonTensorStack.from_list(["a", "b", "c"])
    >>> stack.tolist(), stack[1:].tolist(), stack[0].data
    (LinkedList(['a', 'b', 'c']), LinkedList(['b', 'c']), 'a')
    """

    __slots__ = ("_flat", "_batch_size", "_device", "_names")
    _is_non_tensor = True

    def __init__(self, flat: list[Any], batch_size: Sequence[int] | torch.Size,
                 device: Any = None, names: Any = None) -> None:
        self._flat = flat
        self._batch_size = as_size(batch_size)
        self._device = as_device(device)
        self._names = names
        if len(flat) != self._batch_size.numel():
            raise ValueError(
                f"a NonTensorStack of batch size {self._batch_size} needs "
                f"{self._batch_size.numel()} values, got {len(flat)}"
            )

    @classmethod
    def from_list(cls, values: Sequence[Any], batch_size: Sequence[int] | None = None,
                  device: Any = None) -> NonTensorStack:
        """Stack a (nested) list of objects; the batch size defaults to the list's."""
        flat: list[Any] = []
        shape: list[int] = []

        def walk(node: Any, depth: int) -> None:
            if isinstance(node, (list, tuple)) and (batch_size is None or depth < len(batch_size)):
                if len(shape) <= depth:
                    shape.append(len(node))
                elif shape[depth] != len(node):
                    raise ValueError(f"ragged non-tensor list: {values!r}")
                for item in node:
                    walk(item, depth + 1)
            else:
                flat.append(node)

        walk(values, 0)
        size = torch.Size(shape) if batch_size is None else as_size(batch_size)
        return cls(flat, size, device)

    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    shape = batch_size

    @property
    def device(self) -> torch.device | None:
        return self._device

    @property
    def names(self) -> list[str | None]:
        return list(self._names) if self._names else [None] * len(self._batch_size)

    def numel(self) -> int:
        return self._batch_size.numel()

    def _positions(self) -> torch.Tensor:
        return torch.arange(len(self._flat)).reshape(self._batch_size)

    def _restructure(self, fn: Callable[[torch.Tensor], torch.Tensor],
                     batch_size: torch.Size, names: Any = None) -> NonTensorData | NonTensorStack:
        """Apply a shape op or index to the per-element objects (moved as positions)."""
        positions = fn(self._positions())
        flat = [self._flat[i] for i in positions.reshape(-1).tolist()]
        if not positions.shape:
            return NonTensorData(flat[0], batch_size=torch.Size(), device=self._device)
        return NonTensorStack(flat, positions.shape, self._device, names)

    def __getitem__(self, index: Any) -> NonTensorData | NonTensorStack:
        return self._restructure(lambda x: x[index], torch.Size())

    def tolist(self) -> Any:
        """The objects as nested LinkedLists of the batch shape."""
        def build(offset: int, dims: torch.Size) -> Any:
            if not dims:
                return self._flat[offset]
            step = dims[1:].numel()
            return LinkedList(build(offset + i * step, dims[1:]) for i in range(dims[0]))

        return build(0, self._batch_size)

    @property
    def data(self) -> Any:
        return self.tolist()

    def to(self, device: Any, *args: Any, **kwargs: Any) -> NonTensorStack:
        return NonTensorStack(list(self._flat), self._batch_size, as_device(device), self._names)

    def clone(self, recurse: bool = True) -> NonTensorStack:
        flat = copy.deepcopy(self._flat) if recurse else list(self._flat)
        return NonTensorStack(flat, self._batch_size, self._device, self._names)

    def _rebatch(self, batch_size: torch.Size, device: Any = None, names: Any = None) -> NonTensorStack:
        if batch_size != self._batch_size:
            raise RuntimeError(
                f"cannot give a NonTensorStack of batch size {self._batch_size} "
                f"the batch size {batch_size}"
            )
        return NonTensorStack(self._flat, batch_size, self._device if device is None else device, names)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        other_flat = other._flat if isinstance(other, NonTensorStack) else [other] * len(self._flat)
        return torch.tensor([a == b for a, b in zip(self._flat, other_flat)],
                            dtype=torch.bool).reshape(self._batch_size)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"NonTensorStack({self.tolist()!r}, batch_size={self._batch_size}, "
                f"device={self._device})")


def is_non_tensor(obj: Any) -> bool:
    """True for NonTensorData and NonTensorStack instances."""
    return getattr(type(obj), "_is_non_tensor", False)


def unwrap_non_tensor(value: Any) -> Any:
    """What ``td[key]`` returns for a stored value: the object for non-tensor data."""
    if isinstance(value, NonTensorData):
        return value.data
    if isinstance(value, NonTensorStack):
        return value.tolist()
    return value
