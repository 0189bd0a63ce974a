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
from tensordict._shape_ops import _shape_args, _split_sizes, batch_dim
from tensordict._stack import pad


class RaggedShapeError(ValueError, RuntimeError):
    """A reshape that the parts of a ragged lazy stack cannot follow (upstream raises a
    ValueError or a RuntimeError for these, depending on the shape)."""


def _ragged_shape(shape: Sequence[Any], size: torch.Size) -> list[int]:
    """The ``reshape``/``view`` arguments ``shape`` as a list; a lone ``-1`` stands for a
    ragged dim (two of them raise, as torch does)."""
    new = _shape_args(shape)
    if new.count(-1) > 1:
        raise RuntimeError(f"only one dimension can be inferred (got the shape {new} for a "
                           f"lazy stack of batch size {size})")
    return new


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
        raise errors.BatchDimError(f"stack dim {stack_dim} is out of range for parts of batch "
                                   f"size {size}")
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


class RaggedShapeMixin:
    """The shape ops that move the dims of a ragged lazy stack: done part by part, the
    stack dim moving with them (stacks without ragged dims use the general ones)."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of batch elements; 1 for a ragged stack, as upstream.

        >>> from tensordict import TensorDict, lazy_stack
        >>> lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])]).numel()
        1
        """
        size = self.batch_size
        return 1 if -1 in size else size.numel()

    def reshape(self, *shape: Any, **kwargs: Any) -> Any:
        """Reshape the batch. A ragged stack keeps its batch size, gains leading dims of
        size 1, or is flattened whole (``-1``, from a stack dim 0); other shapes raise.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.reshape(-1).batch_size, stack.reshape(1, 2, -1).batch_size
        (torch.Size([7]), torch.Size([1, 2, -1]))
        """
        size = self.batch_size
        if -1 not in size:
            return super().reshape(*shape, **kwargs)
        new = _ragged_shape(shape, size)
        if new == list(size):
            return self
        if new == [-1]:
            return self.flatten()
        lead = len(new) - len(size)
        if lead > 0 and new == [1] * lead + list(size):
            out = self
            for _ in range(lead):
                out = out.unsqueeze(0)
            return out
        raise RaggedShapeError(f"cannot reshape a lazy stack of batch size {size} to {new}: "
                               "its parts differ in size along the ragged (-1) dims")

    def view(self, *shape: Any, **kwargs: Any) -> Any:
        """View the batch as ``shape``: a ragged stack only as its own batch size.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.view(2, -1) is stack
        True
        """
        size = self.batch_size
        if -1 not in size or (len(shape) == 1 and isinstance(shape[0], torch.dtype)):
            return super().view(*shape, **kwargs)
        if _ragged_shape(shape, size) != list(size):
            raise RuntimeError(f"Cannot call `view` on a lazy stacked tensordict of batch "
                               f"size {size} (to {list(shape)}). Call `reshape` instead.")
        return self

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Merge the batch dims ``start_dim..end_dim`` into one. A ragged stack flattens
        from its stack dim: the result stacks every element of the parts along it.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.flatten().batch_size
        torch.Size([7])
        """
        size = self.batch_size
        if -1 not in size or not size:
            return super().flatten(start_dim, end_dim)
        start, end = batch_dim(self, start_dim), batch_dim(self, end_dim)
        if end < start:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        if start == end:
            return self
        sd = self.stack_dim
        if start != sd:
            raise RaggedShapeError(f"cannot flatten the dims {start}..{end} of a lazy stack of "
                                   f"batch size {size}: with ragged dims, only dims from its "
                                   f"stack dim {sd} can be flattened")
        lead = (slice(None),) * sd
        pieces = []
        for td in self.tensordicts:
            flat = td.flatten(sd, end - 1) if end - 1 > sd else td
            pieces += [flat[lead + (i,)] for i in range(flat.batch_size[sd])]
        return type(self)._from_entries(pieces, sd)

    def unflatten(self, dim: int, unflattened_size: Sequence[int]) -> Any:
        """Split the batch dim ``dim`` into ``unflattened_size``; on a ragged stack, only
        to add dims of size 1 (around a dim that is not ragged, before a ragged dim that
        follows the stack dim).

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.unflatten(1, (1, -1)).batch_size
        torch.Size([2, 1, -1])
        """
        size = self.batch_size
        if -1 not in size:
            return super().unflatten(dim, unflattened_size)
        dim = batch_dim(self, dim)
        sizes = list(unflattened_size)
        keep = sizes.index(size[dim]) if size[dim] in sizes else -1
        ones = sizes[:keep] + sizes[keep + 1:]
        ragged = size[dim] == -1  # only 1s before it, and only after the stack dim
        if keep < 0 or ones.count(1) != len(ones) or ragged and (
                keep != len(ones) or dim < self.stack_dim):
            raise RaggedShapeError(f"cannot unflatten dim {dim} of a lazy stack of batch size "
                                   f"{size} into {sizes}: only dims of size 1 can be added")
        out = self
        for i in range(len(sizes)):
            if i != keep:
                out = out.unsqueeze(dim + i)
        return out

    def unsqueeze(self, dim: int) -> Any:
        """Insert a batch dim of size 1 at ``dim``.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.unsqueeze(-1).batch_size
        torch.Size([2, -1, 1])
        """
        size = self.batch_size
        if -1 not in size:
            return super().unsqueeze(dim)
        if not -len(size) - 1 <= dim <= len(size):
            raise IndexError(f"dim {dim} is out of range to unsqueeze a batch of size {size}")
        dim %= len(size) + 1
        sd = self.stack_dim
        parts = [td.unsqueeze(dim if dim <= sd else dim - 1) for td in self.tensordicts]
        return type(self)._from_entries(parts, sd + 1 if dim <= sd else sd)

    def squeeze(self, dim: int | None = None) -> Any:
        """Remove the batch dims of size 1 (all of them, or ``dim`` if it has size 1)."""
        size = self.batch_size
        if -1 not in size:
            return super().squeeze(dim)
        if dim is None:
            out = self
            for d in reversed([d for d, n in enumerate(size) if n == 1]):
                out = out.squeeze(d)
            return out
        if not -len(size) <= dim < len(size):
            raise IndexError(f"dim {dim} is out of range to squeeze a batch of size {size}")
        dim %= len(size)
        sd = self.stack_dim
        if size[dim] != 1:
            return self
        if dim == sd:
            return self.tensordicts[0]
        parts = [td.squeeze(dim if dim < sd else dim - 1) for td in self.tensordicts]
        return type(self)._from_entries(parts, sd - 1 if dim < sd else sd)

    def permute(self, *dims: Any) -> Any:
        """Reorder the batch dims: each part's dims are reordered, the stack dim moves.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.permute(1, 0).batch_size
        torch.Size([-1, 2])
        """
        size = self.batch_size
        if -1 not in size:
            return super().permute(*dims)
        order = list(dims[0]) if len(dims) == 1 and not isinstance(dims[0], int) else list(dims)
        ndim = len(size)
        if len(order) != ndim or sorted(d % ndim for d in order) != list(range(ndim)):
            raise RuntimeError(f"permute({order}) is not a permutation of the {ndim} batch dims "
                               f"of batch size {size}")
        order = [d % ndim for d in order]
        sd = self.stack_dim
        part_order = [d if d < sd else d - 1 for d in order if d != sd]
        parts = [td.permute(part_order) for td in self.tensordicts]
        return type(self)._from_entries(parts, order.index(sd))

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Swap two batch dims (see :meth:`permute`)."""
        size = self.batch_size
        if -1 not in size:
            return super().transpose(dim0, dim1)
        order = list(range(len(size)))
        dim0, dim1 = dim0 % len(size), dim1 % len(size)
        order[dim0], order[dim1] = order[dim1], order[dim0]
        return self.permute(order)

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Any, ...]:
        """Pieces of ``split_size`` elements (or of each listed size) along ``dim``, which
        must not be ragged (indexes of this stack: lazy stacks, or parts).

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> [piece.batch_size for piece in stack.split(1)]
        [torch.Size([1, 3]), torch.Size([1, 4])]
        """
        if -1 not in self.batch_size:
            return super().split(split_size, dim)
        dim = batch_dim(self, dim)
        check_not_ragged_dim(self, dim, "split")
        return self._slices(dim, _split_sizes(self.batch_size[dim], split_size))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Any, ...]:
        """At most ``chunks`` pieces along ``dim`` (not ragged), as ``torch.chunk``."""
        if -1 not in self.batch_size:
            return super().chunk(chunks, dim)
        if chunks <= 0:
            raise ValueError(f"chunks must be positive, got {chunks}")
        dim = batch_dim(self, dim)
        check_not_ragged_dim(self, dim, "chunk")
        size = self.batch_size[dim]
        return self._slices(dim, _split_sizes(size, max(-(-size // chunks), 1)))

    def _slices(self, dim: int, sizes: list[int]) -> tuple[Any, ...]:
        lead = (slice(None),) * dim
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return tuple(self[lead + (slice(start, start + n),)] for start, n in zip(starts, sizes))

    def expand(self, *shape: Any) -> Any:
        """Broadcast the batch to ``shape``: new leading dims, or size-1 dims grown (``-1``
        keeps a dim, and must be given at the ragged dims). Each part is expanded.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.expand(5, 2, -1).batch_size
        torch.Size([5, 2, -1])
        """
        size = self.batch_size
        if -1 not in size:
            return super().expand(*shape)
        new = list(_shape_args(shape))
        lead, own = new[: len(new) - len(size)], new[len(new) - len(size):]
        sd = self.stack_dim
        if len(new) < len(size) or -1 in lead or any(
                n != -1 and n != s and (s != 1 or i == sd) for i, (n, s) in enumerate(zip(own,
                                                                                          size))):
            raise RuntimeError(f"cannot expand a lazy stack of batch size {size} to {new}: "
                               "give -1 at its ragged dims")
        del own[sd]
        parts = [td.expand(*lead, *(s if n == -1 else n for n, s in zip(own, td.batch_size)))
                 for td in self.tensordicts]
        return type(self)._from_entries(parts, sd + len(lead))

    def broadcast_to(self, shape: Sequence[int]) -> Any:
        """Same as :meth:`expand` (``-1`` at the ragged dims)."""
        if -1 not in self.batch_size:
            return super().broadcast_to(shape)
        return self.expand(shape)


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
