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

    def _rebatch(self, batch_size: torch.Size, device: Any = None,
                 names: Any = None) -> NonTensorData:
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

    def maybe_to_stack(self) -> NonTensorData | Any:
        """A NonTensorStack with one element per batch element (self when 0-dim).

        >>> NonTensorData("a", batch_size=[2]).maybe_to_stack().tolist()
        LinkedList(['a', 'a'])
        """
        from tensordict._nontensor_stack import NonTensorStack

        if not self._batch_size:
            return self
        return NonTensorStack.from_list(self.tolist(), self._batch_size, self._device)

    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Any,
                           args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
                           ) -> Any:
        """``torch.stack`` and ``torch.cat`` of non-tensor data give a NonTensorStack."""
        from tensordict._nontensor_stack import NON_TENSOR_FUNCTIONS

        handler = NON_TENSOR_FUNCTIONS.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **(kwargs or {}))

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        other_data = other.data if isinstance(other, NonTensorData) else other
        return torch.full(self._batch_size, bool(self.data == other_data), device=self._device)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return ~self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"NonTensorData(data={self.data}, batch_size={self._batch_size}, "
                f"device={self._device})")


def __getattr__(name: str) -> Any:
    # NonTensorStack is a lazy stack, whose module needs this one: it is loaded on first use.
    if name == "NonTensorStack":
        from tensordict._nontensor_stack import NonTensorStack

        globals()[name] = NonTensorStack
        return NonTensorStack
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_non_tensor(obj: Any) -> bool:
    """True for NonTensorData and NonTensorStack instances."""
    return getattr(type(obj), "_is_non_tensor", False)


def unwrap_non_tensor(value: Any) -> Any:
    """What ``td[key]`` returns for a stored value: the object for non-tensor data."""
    if isinstance(value, NonTensorData):
        return value.data
    if getattr(value, "_is_non_tensor", False):
        return value.tolist()
    return value
