"""Comparing batch elements by the value of one entry: ``isin`` and ``remove_duplicates``.

The entry is cut into slices along a batch dim; two elements are equal when their
slices are equal everywhere.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.utils import isin, remove_duplicates
    >>> td = TensorDict(x=torch.tensor([3, 1, 3]), y=torch.arange(3), batch_size=[3])
    >>> remove_duplicates(td, "x")["y"]
    tensor([1, 0])
    >>> isin(td, TensorDict(x=torch.tensor([1]), batch_size=[1]), "x")
    tensor([False,  True, False])
"""

from __future__ import annotations

import math
from typing import Any

import torch

from tensordict._base import TensorDictBase
from tensordict._nested_key import NestedKey

_Tensor = torch.Tensor


def isin(input: TensorDictBase, reference: TensorDictBase, key: NestedKey,  # noqa: A002
         dim: int = 0) -> _Tensor:
    """Which elements of ``input`` along ``dim`` also appear in ``reference``.

    An element is in ``reference`` when its slice of ``input[key]`` equals a slice of
    ``reference[key]`` (dtypes are promoted before comparing). Both TensorDicts must have
    the same number of batch dims, and the entries the same shape outside ``dim``.

    Args:
        input: the TensorDict to test.
        reference: the TensorDict to look in.
        key: the entry to compare; a tensor in both.
        dim: the batch dim along which elements are taken.

    Returns:
        A bool tensor of length ``input.batch_size[dim]``.

    Raises:
        KeyError: ``key`` is missing or not a tensor in either TensorDict.
        ValueError: different numbers of batch dims, or ``dim`` is not a batch dim.
        RuntimeError: the entries' shapes differ outside ``dim``.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(n={"x": torch.tensor([[1, 2], [3, 4], [1, 2]])}, batch_size=[3])
    >>> reference = TensorDict(n={"x": torch.tensor([[1, 2]])}, batch_size=[1])
    >>> isin(td, reference, ("n", "x"))
    tensor([ True, False,  True])
    """
    if input.batch_dims != reference.batch_dims:
        raise ValueError(
            f"isin needs the input and the reference to have the same number of batch dims, "
            f"got batch sizes {tuple(input.batch_size)} and {tuple(reference.batch_size)}"
        )
    values = _tensor_entry(input, key, "input")
    reference_values = _tensor_entry(reference, key, "reference")
    dim = _batch_dim(input, dim)
    shape, reference_shape = list(values.shape), list(reference_values.shape)
    count, reference_count = shape.pop(dim), reference_shape.pop(dim)
    if shape != reference_shape:
        raise RuntimeError(
            f"isin cannot compare the entry {key!r} of shapes {tuple(values.shape)} (input) and "
            f"{tuple(reference_values.shape)} (reference): they must match outside dim {dim}")
    width = math.prod(shape)
    if count * reference_count * width <= _PAIRWISE_LIMIT:  # few: compare every pair
        rows = values.movedim(dim, 0).reshape(count, width)
        references = reference_values.movedim(dim, 0).reshape(reference_count, width)
        return (rows.unsqueeze(1) == references.unsqueeze(0)).all(-1).any(1)
    ids = _slice_ids(torch.cat([values, reference_values], dim), dim)
    return torch.isin(ids[:count], ids[count:])


#: the most elements :func:`isin` compares pair by pair (beyond, it ranks the distinct
#: slices: a sort, whose fixed cost is about four times that of a small comparison)
_PAIRWISE_LIMIT = 1 << 16


def remove_duplicates(input: TensorDictBase, key: NestedKey, dim: int = 0, *,  # noqa: A002
                      return_indices: bool = False) -> Any:
    """``input`` keeping, along ``dim``, the first element of each distinct ``key`` value.

    The result is ordered by the value of ``key`` (as :func:`torch.unique` sorts) and
    holds new tensors: every entry is indexed with the kept positions.

    Args:
        input: the TensorDict to deduplicate.
        key: the tensor entry whose slices along ``dim`` define duplicates.
        dim: the batch dim along which to look for duplicates.

    Keyword Args:
        return_indices: also return, for every element of ``input``, the position of its
            value in the result.

    Returns:
        The deduplicated TensorDict, or ``(td, indices)`` with ``return_indices=True``.

    Raises:
        KeyError: ``key`` is missing or not a tensor.
        ValueError: ``dim`` is not a batch dim.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(x=torch.tensor([7, 1, 7, 3]), y=torch.arange(4), batch_size=[4])
    >>> out, indices = remove_duplicates(td, "x", return_indices=True)
    >>> out["x"], out["y"], indices
    (tensor([1, 3, 7]), tensor([1, 3, 0]), tensor([2, 0, 2, 1]))
    """
    values = _tensor_entry(input, key, "input")
    dim = _batch_dim(input, dim)
    ids = _slice_ids(values, dim)
    count = values.shape[dim]
    groups = int(ids.max()) + 1 if count else 0
    first = torch.full((groups,), count, dtype=torch.long, device=ids.device)
    first.scatter_reduce_(0, ids, torch.arange(count, device=ids.device), "amin")
    out = input[(slice(None),) * dim + (first,)]
    return (out, ids) if return_indices else out


def _batch_dim(td: TensorDictBase, dim: int) -> int:
    ndim = td.batch_dims
    if not -ndim <= dim < ndim:
        raise ValueError(f"dim {dim} is not a batch dim of a TensorDict of batch size "
                         f"{tuple(td.batch_size)}")
    return dim % ndim


def _tensor_entry(td: TensorDictBase, key: NestedKey, which: str) -> _Tensor:
    value = td._get_path(key, None)
    if not isinstance(value, _Tensor):
        found = "missing" if value is None else f"a {type(value).__name__}, not a tensor"
        raise KeyError(f"the key {key!r} is {found} in the {which} TensorDict")
    return value


def _slice_ids(tensor: _Tensor, dim: int) -> _Tensor:
    """For each slice of ``tensor`` along ``dim``, the rank of its value among the distinct
    slices (equal slices get equal ids)."""
    count = tensor.shape[dim]
    rows = tensor.movedim(dim, 0)
    width = math.prod(rows.shape[1:])
    rows = rows.reshape(count, width) if width else rows.new_zeros(count, 1)
    return torch.unique(rows, dim=0, return_inverse=True)[1]
