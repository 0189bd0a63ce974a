"""Nested (ragged) tensors on disk: one flat buffer of every element's values, plus an
int64 ``[n_elements, ndim]`` tensor of their shapes (``<key>.shape.memmap``).

Example:
    >>> import torch
    >>> nt = torch.nested.nested_tensor([torch.zeros(2, 3), torch.ones(1, 3)])
    >>> values, sizes = flatten(nt)
    >>> values.shape, sizes.tolist()
    (torch.Size([9]), [[2, 3], [1, 3]])
    >>> [t.shape for t in view(values, sizes).unbind()]
    [torch.Size([2, 3]), torch.Size([1, 3])]
"""

from __future__ import annotations

from itertools import accumulate

import torch

from tensordict.memmap._tensor import contiguous_strides


def flatten(tensor: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The flat values and the per-element shapes of the nested ``tensor``."""
    parts = tensor.unbind()
    sizes = torch.tensor([list(part.shape) for part in parts], dtype=torch.int64)
    if not parts:
        return torch.empty(0, dtype=tensor.dtype), sizes.reshape(0, 0)
    return torch.cat([part.reshape(-1) for part in parts]), sizes


def view(values: torch.Tensor, sizes: torch.Tensor) -> torch.Tensor:
    """A nested tensor viewing the flat ``values`` (no copy: it shares their file)."""
    rows = sizes.tolist()
    numels = [torch.Size(row).numel() for row in rows]
    strides = torch.tensor([contiguous_strides(row) for row in rows], dtype=torch.int64)
    # values may start inside a larger mapping (an archive): offsets count from its start
    offsets = torch.tensor([0, *accumulate(numels)][:-1], dtype=torch.int64) + (
        values.storage_offset())
    return torch._nested_view_from_buffer(values.as_subclass(torch.Tensor),
                                          sizes.as_subclass(torch.Tensor).clone(),
                                          strides.reshape(sizes.shape), offsets)
