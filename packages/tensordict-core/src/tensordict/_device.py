"""Devices, dtypes and copies: ``to``, ``cpu``, ``cuda``, dtype casts, ``clone``, ``detach``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2, dtype=torch.long))
    >>> td.to(torch.float64)["a"].dtype, td.to("cpu").device
    (torch.float64, device(type='cpu'))
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict._base import NO_DEFAULT
from tensordict._shapes import as_device


def _parse_to_args(*args: Any, **kwargs: Any) -> tuple[Any, Any, Any, bool]:
    """(device, dtype, batch_size, non_blocking) from the arguments of ``to``."""
    device = kwargs.pop("device", NO_DEFAULT)
    dtype = kwargs.pop("dtype", None)
    batch_size = kwargs.pop("batch_size", None)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    for arg in args:
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, (str, torch.device, int)):
            device = arg
        elif isinstance(arg, torch.Tensor) or hasattr(arg, "batch_size"):
            device = arg.device
            dtype = getattr(arg, "dtype", None) if isinstance(arg, torch.Tensor) else dtype
        else:
            raise TypeError(f"to() does not understand the argument {arg!r}")
    if kwargs:
        raise TypeError(f"to() got unexpected arguments {sorted(kwargs)}")
    return device, dtype, batch_size, non_blocking


class DeviceMixin:
    """Moves and copies, each one traversal."""

    __slots__ = ()

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """A TensorDict with every tensor moved to a device and/or cast to a dtype.

        Accepts a device, a dtype, a tensor or TensorDict (its device), and the
        keywords ``device``, ``dtype``, ``non_blocking`` and ``batch_size``.
        """
        device, dtype, batch_size, non_blocking = _parse_to_args(*args, **kwargs)
        if device is not NO_DEFAULT and device is not None:
            device = as_device(device)
        if dtype is None and device is NO_DEFAULT:
            out = self
        else:
            to_kwargs: dict[str, Any] = {"non_blocking": non_blocking}
            if device is not NO_DEFAULT:
                to_kwargs["device"] = device
            if dtype is not None:
                to_kwargs["dtype"] = dtype
            out = self._apply_nest(lambda x: x.to(**to_kwargs), device=device,
                                   filter_empty=False)
        if batch_size is not None:
            out = out.copy() if out is self else out
            out.batch_size = batch_size
        return out

    def cpu(self, **kwargs: Any) -> Any:
        """The TensorDict on the CPU."""
        return self.to("cpu", **kwargs)

    def cuda(self, device: Any = None, **kwargs: Any) -> Any:
        """The TensorDict on a CUDA device (the current one unless given)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device, **kwargs)

    def clone(self, recurse: bool = True, **kwargs: Any) -> Any:
        """A deep copy (``recurse=False``: new structure, same tensors); never locked."""
        if recurse:
            return self._apply_nest(lambda x: x.clone(), filter_empty=False)
        return self._apply_nest(lambda x: x, filter_empty=False)

    def detach(self) -> Any:
        """A TensorDict of detached tensors."""
        return self._apply_nest(lambda x: x.detach(), filter_empty=False)
