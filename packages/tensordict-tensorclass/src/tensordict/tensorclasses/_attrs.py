"""``TensorAttrs``: the device, dtype and shape of one tensor (``td.attrs()`` describes
every tensor leaf of a collection with one).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(3, dtype=torch.int32), batch_size=[3])
    >>> td.attrs()["a"].tgt_dtype, td.attrs()["a"].tgt_shape
    (torch.int32, torch.Size([3]))
"""

from __future__ import annotations

from typing import Any

from tensordict.tensorclasses._build import TensorClass


class TensorAttrs(TensorClass):
    """A tensorclass holding the device, dtype and shape of one tensor.

    The fields start with ``tgt_`` so that they do not hide the ``device``, ``dtype``
    and ``shape`` of the tensorclass itself.

    Args:
        tgt_device: the device of the tensor.
        tgt_dtype: the dtype of the tensor.
        tgt_shape: the shape of the tensor.

    >>> import torch
    >>> attrs = TensorAttrs(torch.device("cpu"), torch.float16, torch.Size([2]))
    >>> attrs.tgt_dtype, attrs.tgt_shape
    (torch.float16, torch.Size([2]))
    """

    tgt_device: Any = None
    tgt_dtype: Any = None
    tgt_shape: Any = None
