"""tensordict.tensorclasses: typed dataclasses that carry tensors and behave like a
TensorDict (provided by the tensordict-tensorclass distribution).

The public names are also available as ``tensordict.tensorclass``,
``tensordict.TensorClass``, ``tensordict.TensorAttrs`` and ``tensordict.from_dataclass``;
upstream's module path ``tensordict.tensorclass`` re-exports them too.

Example:
    >>> import torch
    >>> from tensordict import TensorClass
    >>> class Batch(TensorClass):
    ...     x: torch.Tensor
    ...     y: torch.Tensor
    >>> batch = Batch(x=torch.zeros(8, 3), y=torch.ones(8), batch_size=[8])
    >>> torch.stack([batch, batch]).shape
    torch.Size([2, 8])
"""

from tensordict import is_tensorclass
from tensordict.tensorclasses._attrs import TensorAttrs
from tensordict.tensorclasses._build import TensorClass, tensorclass
from tensordict.tensorclasses._dataclass import from_dataclass
from tensordict.tensorclasses._instance import TensorClassBase
from tensordict.tensorclasses._version import __version__ as __version__

__all__ = ["TensorAttrs", "TensorClass", "TensorClassBase", "from_dataclass", "is_tensorclass",
           "tensorclass"]
