"""``UnbatchedTensor``: a tensor entry without batch dims, which the batch operations of
the TensorDict holding it leave as it is.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, UnbatchedTensor
    >>> td = TensorDict(table=UnbatchedTensor(torch.zeros(3, 4)), b=torch.zeros(2, 3),
    ...                 batch_size=[2])
    >>> td[0]["table"].shape, td.reshape(1, 2)["table"].shape
    (torch.Size([3, 4]), torch.Size([3, 4]))
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict._shapes import as_size

_EMPTY = torch.Size([])


class UnbatchedTensor(torch.Tensor):
    """A tensor entry that has no batch dims: the shape ops of the TensorDict holding it
    (indexing, ``reshape``, ``unsqueeze``, ``split``, stacking...) return it with its data
    and shape unchanged; other operations (arithmetic, ``clone``, ``to``) apply to it as
    to any tensor and return an ``UnbatchedTensor``. Experimental, as upstream's.

    ``data`` (converted with :func:`torch.as_tensor` if needed) is shared, not copied;
    ``batch_size`` is that of the TensorDict holding it, set when it is stored.

    Indexed writes (``td[:1] = other``) write ``other``'s payload whole when it has the
    entry, and :meth:`~tensordict.TensorDict.auto_batch_size_` ignores it.

    >>> import torch
    >>> from tensordict import TensorDict, UnbatchedTensor
    >>> td = TensorDict(a=UnbatchedTensor(torch.zeros(3, 4)), b=torch.zeros(2, 3),
    ...                 batch_size=[2])
    >>> td[0]["a"].data_ptr() == td["a"].data_ptr(), td["a"].batch_size
    (True, torch.Size([2]))
    >>> type(td["a"] + 1).__name__
    'UnbatchedTensor'
    """

    _batch_size: torch.Size

    @staticmethod
    def __new__(cls, data: Any, batch_size: Sequence[int] | None = None) -> UnbatchedTensor:
        if not isinstance(data, torch.Tensor):
            data = torch.as_tensor(data)
        out = torch.Tensor._make_subclass(cls, data)
        out._batch_size = _EMPTY if batch_size is None else as_size(batch_size)
        return out

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the TensorDict holding this tensor (``[]`` if none)."""
        return self.__dict__.get("_batch_size", _EMPTY)

    def _rebatch(self, batch_size: torch.Size) -> UnbatchedTensor:
        """This payload, as the entry of a TensorDict of batch size ``batch_size``."""
        if self.batch_size == batch_size:
            return self
        with torch._C.DisableTorchFunctionSubclass():
            out = self.view(self.shape)
        out = out.as_subclass(UnbatchedTensor)
        out._batch_size = batch_size
        return out

    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        result = super().__torch_function__(func, types, args, kwargs or {})
        size = _batch_size_of(args)
        if size:
            for out in result if isinstance(result, (tuple, list)) else (result,):
                if out.__class__ is cls:
                    out._batch_size = size
        return result

    def __repr__(self, *, tensor_contents: Any = None) -> str:
        with torch._C.DisableTorchFunctionSubclass():
            return f"UnbatchedTensor({self.as_subclass(torch.Tensor)!r})"


def _batch_size_of(args: Sequence[Any]) -> torch.Size:
    """The batch size of the first UnbatchedTensor among ``args`` (and their lists)."""
    for arg in args:
        if arg.__class__ is UnbatchedTensor:
            return arg.batch_size
        if arg.__class__ in (list, tuple):
            for item in arg:
                if item.__class__ is UnbatchedTensor:
                    return item.batch_size
    return _EMPTY


def stack_unbatched(values: Sequence[Any], key: str, batch_size: torch.Size) -> UnbatchedTensor:
    """The entry ``key`` of a stack of TensorDicts whose entries are ``values``: the first
    payload (the whole batch shares it), with a warning if the others have other data.

    Raises:
        RuntimeError: some but not all of ``values`` are UnbatchedTensors.
    """
    first = values[0]
    if any(value.__class__ is not UnbatchedTensor for value in values):
        shapes = [tuple(value.shape) for value in values]
        raise RuntimeError(f"Cannot stack an UnbatchedTensor with a batched entry under the "
                           f"key {key!r} (shapes {shapes}).")
    if any(value.data_ptr() != first.data_ptr() for value in values[1:]):
        warnings.warn("Stacking UnbatchedTensors with different data storage. Only the first "
                      "element's data will be kept. UnbatchedTensor is shape-invariant; if "
                      "you need different data per batch element, consider using a regular "
                      "tensor.", UserWarning, stacklevel=3)
    return first._rebatch(batch_size)
