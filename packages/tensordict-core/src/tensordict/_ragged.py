"""Ragged lazy stacks: parts of different batch sizes, ``-1`` at the dims where they differ.

A lazy stack may hold parts whose batch sizes differ (all of the same number of dims). Its
batch size has ``-1`` at every dim where they differ: ``[3]`` and ``[4]`` stacked along
dim 0 give ``[2, -1]``. Such a stack is read part by part (indexing along the stack dim,
``get(..., as_list=True)``, padded or nested entries) and transformed part by part
(``apply``, ``to``, ``clone``, ``update``...); what needs one dense tensor per entry
raises, naming the key and the shapes.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> stack = lazy_stack([TensorDict(x=torch.zeros(3), batch_size=[3]),
    ...                     TensorDict(x=torch.ones(4), batch_size=[4])])
    >>> stack.batch_size
    torch.Size([2, -1])
    >>> padded = stack.to_padded_tensor(padding=-1.0, mask_key="mask")
    >>> padded["x"][0].tolist(), padded["mask"][0].tolist()
    ([0.0, 0.0, 0.0, -1.0], [True, True, True, False])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import classes, is_tensor_collection
from tensordict._stack import pad


class RaggedShapeError(ValueError, RuntimeError):
    """A reshape that the parts of a ragged lazy stack cannot follow (upstream raises a
    ValueError or a RuntimeError for these, depending on the shape)."""


def ragged_size(sizes: Sequence[torch.Size]) -> torch.Size:
    """The size shared by ``sizes`` (all of the same length), ``-1`` where they differ.

    >>> ragged_size([torch.Size([3, 2]), torch.Size([4, 2])])
    torch.Size([-1, 2])
    """
    first = sizes[0]
    for size in sizes[1:]:
        if len(size) != len(first):
            raise RuntimeError(
                f"batch sizes in tensordicts differs, LazyStackedTensorDict cannot be created. "
                f"Got td[0].batch_size={first} and td[i].batch_size={size}: parts of a lazy "
                "stack need the same number of batch dims"
            )
    return torch.Size(s if all(size[i] == s for size in sizes) else -1
                      for i, s in enumerate(first))


def stacked_size(parts: Sequence[Any], stack_dim: int) -> torch.Size:
    """The batch size of the lazy stack of ``parts`` along ``stack_dim`` (ragged dims -1).

    >>> parts = [TensorDict(batch_size=[3]), TensorDict(batch_size=[4])]
    >>> stacked_size(parts, 1)
    torch.Size([-1, 2])
    """
    for kind in set(map(type, parts)):
        if not is_tensor_collection(kind):
            i = next(i for i, td in enumerate(parts) if type(td) is kind)
            raise TypeError(f"a lazy stack holds tensor collections, got a {kind.__name__} "
                            f"at position {i}")
    sizes = [part.batch_size for part in parts]  # (dynamo traces no attrgetter)
    size = sizes[0]
    if sizes.count(size) != len(sizes):
        size = ragged_size(sizes)
    if not -len(size) - 1 <= stack_dim <= len(size):
        raise errors.dim_out_of_range(stack_dim, size, "lazy_stack", inserting=True)
    stack_dim %= len(size) + 1
    return size[:stack_dim] + torch.Size([len(parts)]) + size[stack_dim:]


def padded_parts(stack: Any, padding: float, mask_key: Any) -> Any:
    """:meth:`~tensordict.LazyStackedTensorDict.to_padded_tensor` of a stack with ragged batch
    dims: each part padded to the largest batch size, then stacked (padding their ragged
    entries too); ``mask_key`` holds the mask of the elements that are not padding.
    """
    sizes = [td.batch_size for td in stack.tensordicts]
    target = torch.Size(max(dims) for dims in zip(*sizes))
    pads, masks = [], []
    for td, size in zip(stack.tensordicts, sizes):
        amounts = [0] * (2 * len(size))
        for dim, (have, want) in enumerate(zip(size, target)):
            amounts[2 * dim + 1] = want - have
        padded = pad(td, amounts, padding) if any(amounts) else td
        pads.append(padded)
        if mask_key is not None:
            mask = torch.ones(size, dtype=torch.bool, device=td.device)
            masks.append(torch.nn.functional.pad(mask, _torch_pads(amounts), value=False))
    out = classes.LazyStackedTensorDict._from_entries(pads, stack.stack_dim).to_padded_tensor(
        padding)
    if mask_key is not None:
        out.set(mask_key, torch.stack(masks, stack.stack_dim))
    return out


def _torch_pads(amounts: list[int]) -> list[int]:
    """``(before, after)`` pairs for the first dims as ``torch.nn.functional.pad`` takes
    them (the last dim first)."""
    pairs = [amounts[i:i + 2] for i in range(0, len(amounts), 2)]
    return [n for pair in reversed(pairs) for n in pair]


def check_not_ragged_dim(stack: Any, dim: int, what: str) -> None:
    """Raise ValueError when ``dim`` of ``stack`` is ragged (its size differs between
    parts)."""
    if stack.batch_size[dim] == -1:
        raise ValueError(f"cannot {what} along dim {dim} of a lazy stack of batch size "
                         f"{stack.batch_size}: its parts differ in size along it")


def pad_nested_leaves(td: Any, padding: float, mask_key: Any) -> Any:
    """:meth:`~tensordict.TensorDict.to_padded_tensor`: every nested-tensor leaf padded
    with ``padding`` (the others kept), the ragged batch dims (``-1``) taking the padded
    sizes; ``mask_key`` names the mask of the elements that are not padding.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> flat = TensorDict(a=torch.arange(5.0), batch_size=[5])
    >>> nested = flat._fast_apply(lambda x: torch.nested.as_nested_tensor(
    ...     list(x.split([2, 3])), layout=torch.jagged), batch_size=[2, -1])
    >>> padded = pad_nested_leaves(nested, -1.0, "mask")
    >>> padded["a"].tolist(), padded["mask"].tolist()
    ([[0.0, 1.0, -1.0], [2.0, 3.0, 4.0]], [[True, True, False], [True, True, True]])
    """
    batch = td.batch_size
    ndim = len(batch)
    if mask_key is not None and -1 not in batch:
        raise RuntimeError("mask_key should only be provided if the heterogenous dimension "
                           "is part of the batch-size.")
    found: dict[str, Any] = {}

    def pad_leaf(x: torch.Tensor) -> torch.Tensor:
        if not x.is_nested:
            return x
        out = torch.nested.to_padded_tensor(x, padding)
        if "batch" not in found:
            found["batch"] = out.shape[:ndim]
            if mask_key is not None:
                valid = torch.nested.to_padded_tensor(torch.ones_like(x), 0.0)
                found["mask"] = valid.flatten(ndim).any(-1) if valid.ndim > ndim else \
                    valid.bool()
        return out

    leaves = [x for x in td.values(True, True) if isinstance(x, torch.Tensor)]
    for leaf in leaves:
        if leaf.is_nested:
            pad_leaf(leaf)  # the padded batch size, before the results are collected
            break
    new_batch = found.get("batch", batch) if -1 in batch else batch
    out = td._apply_nest(pad_leaf, batch_size=new_batch, filter_empty=False)
    if mask_key is not None:
        out.set(mask_key, found["mask"])
    return out
