"""Memory-mapped data under ``torch._subclasses.fake_tensor.FakeTensorMode``.

While a fake mode is active, loading a saved folder (``load_memmap``, ``load``,
``MemoryMappedTensor.from_filename``) gives fake tensors of the saved shapes, dtypes and
devices and opens no data file (only the ``meta.json`` files are read): a model can be
planned or traced from a checkpoint without reading its weights. Writing (``memmap``,
``memmap_``, ``memmap_like``, the ``MemoryMappedTensor`` constructors) needs data, so it
is a NotImplementedError raised before anything is written.

Example:
    >>> import tempfile, torch
    >>> from torch._subclasses.fake_tensor import FakeTensorMode
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = TensorDict({"w": torch.ones(3, 2)}, [3]).memmap(path)
    >>> with FakeTensorMode():
    ...     w = TensorDict.load_memmap(path)["w"]
    >>> type(w).__name__, w.shape, w.dtype
    ('FakeTensor', torch.Size([3, 2]), torch.float32)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

import torch

_FAKE = torch._C._TorchDispatchModeKey.FAKE
_dispatch_mode = torch._C._get_dispatch_mode
_CPU = torch.device("cpu")


def active() -> bool:
    """Whether a FakeTensorMode is active (one C call: the cost of a check on a real
    load or save)."""
    return _dispatch_mode(_FAKE) is not None


def leaf(shape: Sequence[int] | torch.Tensor, dtype: torch.dtype,
         device: torch.device | None, nested: Any, where: str) -> torch.Tensor:
    """The fake tensor standing for a saved leaf (on ``device``, else the CPU, where
    a mapped file is); ``where`` names the leaf in the error for a nested one, whose
    element shapes (``shape``, then a tensor) are data."""
    if nested:
        raise NotImplementedError(
            f"{where}: a nested tensor cannot be loaded under FakeTensorMode (its element "
            "shapes are data)")
    return torch.empty(shape, dtype=dtype, device=_CPU if device is None else device)


def refuse_write(what: str) -> NoReturn:
    """Raise the NotImplementedError for writing ``what`` under a fake mode."""
    raise NotImplementedError(
        f"cannot write {what} under FakeTensorMode: fake tensors have no data to write "
        "(exit the mode to save; loading works under it)")
