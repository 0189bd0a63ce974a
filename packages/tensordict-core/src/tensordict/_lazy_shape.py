"""Shape ops of a lazy stack, done part by part.

Where whole parts can follow a shape op, each part takes the op on its own dims and the
stack dim moves with them: ``unsqueeze``, ``squeeze``, ``permute`` / ``transpose``,
``flatten`` (and ``reshape`` / ``view`` to one dim), ``unbind``, ``repeat`` (and
``tile``) of the parts' own dims. The results are lazy
stacks of views of the parts, keep the dim names, and cost one op per part instead of one
index per batch element. Stacks with ragged dims (``-1``, see :mod:`tensordict._ragged`)
go the same way; what their parts cannot follow raises a :class:`RaggedShapeError`. Other
shape ops take the general path (:mod:`tensordict._lazy_ops`). As on a TensorDict, each op
records on its result how to undo it, for ``with`` (see :mod:`tensordict._last_op`).

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> parts = [TensorDict(x=torch.zeros(4, 5), batch_size=[4, 5], names=["t", "f"])] * 3
    >>> stack = lazy_stack(parts).transpose(0, 2)
    >>> stack.batch_size, stack.stack_dim, stack.names
    (torch.Size([5, 4, 3]), 2, ['f', 't', None])
    >>> stack.flatten(0, 1).batch_size
    torch.Size([20, 3])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tensordict._last_op import made_by
from tensordict._ragged import RaggedShapeError, check_not_ragged_dim
from tensordict._shape_ops import _shape_args, _split_sizes, batch_dim, permutation


def _ragged_shape(shape: Sequence[Any], size: torch.Size) -> list[int]:
    """The ``reshape``/``view`` arguments ``shape`` as a list; a lone ``-1`` stands for a
    ragged dim (two of them raise, as torch does)."""
    new = _shape_args(shape)
    if new.count(-1) > 1:
        raise RuntimeError(f"only one dimension can be inferred (got the shape {new} for a "
                           f"lazy stack of batch size {size})")
    return new


def _to_one_dim(shape: Sequence[Any], size: torch.Size) -> bool:
    """Whether the ``reshape``/``view`` arguments merge a batch of several dims into one."""
    new = _shape_args(shape)
    return len(size) > 1 and len(new) == 1 and new[0] in (-1, size.numel())


class LazyShapeMixin:
    """The shape ops of :class:`~tensordict.LazyStackedTensorDict` that its parts follow."""

    __slots__ = ()

    def _restacked(self, parts: list[Any], stack_dim: int, stack_dim_name: Any = None) -> Any:
        """A lazy stack of ``parts`` along ``stack_dim``, locked if this one is (as the
        results of shape ops are)."""
        out = type(self)._from_entries(parts, stack_dim, stack_dim_name)
        return out.lock_() if self._is_locked else out

    def numel(self) -> int:
        """The number of batch elements; 1 for a ragged stack, as upstream.

        >>> from tensordict import TensorDict, lazy_stack
        >>> lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])]).numel()
        1
        """
        size = self.batch_size
        return 1 if -1 in size else size.numel()

    def reshape(self, *shape: Any, **kwargs: Any) -> Any:
        """Reshape the batch; to one dim, part by part (see :meth:`flatten`). A ragged stack
        keeps its batch size, gains leading dims of size 1, or is flattened whole (``-1``,
        from a stack dim 0); other shapes raise.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.reshape(-1).batch_size, stack.reshape(1, 2, -1).batch_size
        (torch.Size([7]), torch.Size([1, 2, -1]))
        """
        size = self.batch_size
        if -1 not in size:
            if not kwargs and _to_one_dim(shape, size):
                return self._flatten(0, -1)
            return super().reshape(*shape, **kwargs)
        new = _ragged_shape(shape, size)
        if new == list(size):
            return self
        if new == [-1]:
            return self._flatten(0, -1)
        lead = len(new) - len(size)
        if lead > 0 and new == [1] * lead + list(size):
            out = self
            for _ in range(lead):
                out = out.unsqueeze(0)
            return out
        raise RaggedShapeError(f"cannot reshape a lazy stack of batch size {size} to {new}: "
                               "its parts differ in size along the ragged (-1) dims")

    def view(self, *shape: Any, **kwargs: Any) -> Any:
        """View the batch as ``shape`` (to one dim, part by part: see :meth:`flatten`); a
        ragged stack only as its own batch size.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.view(2, -1) is stack
        True
        """
        size = self.batch_size
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            return super().view(*shape, **kwargs)
        if -1 not in size:
            if not kwargs and _to_one_dim(shape, size):
                return made_by(self._flatten(0, -1), "view", shape, None, self)
            return super().view(*shape, **kwargs)
        if _ragged_shape(shape, size) != list(size):
            raise RuntimeError(f"Cannot call `view` on a lazy stacked tensordict of batch "
                               f"size {size} (to {list(shape)}). Call `reshape` instead.")
        return self

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> Any:
        """Merge the batch dims ``start_dim..end_dim`` into one. Without the stack dim among
        them, each part is flattened; with it, the result stacks every element of the parts
        along ``start_dim`` (a ragged stack only flattens from its stack dim).

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.flatten().batch_size
        torch.Size([7])
        """
        out = self._flatten(start_dim, end_dim)
        return made_by(out, "flatten", (start_dim, end_dim), None, self)

    def _flatten(self, start_dim: int, end_dim: int) -> Any:
        """:meth:`flatten`, with nothing recorded for ``with`` (``reshape`` goes here)."""
        size = self.batch_size
        if not size:
            return super().flatten(start_dim, end_dim)
        start, end = batch_dim(self, start_dim), batch_dim(self, end_dim)
        if end < start:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        if start == end:
            return self
        sd = self.stack_dim
        ragged = -1 in size
        if ragged and start != sd:
            raise RaggedShapeError(f"cannot flatten the dims {start}..{end} of a lazy stack of "
                                   f"batch size {size}: with ragged dims, only dims from its "
                                   f"stack dim {sd} can be flattened")
        if not start <= sd <= end:  # the parts' own dims merge
            shift = int(sd < start)
            parts = [td.flatten(start - shift, end - shift) for td in self.tensordicts]
            return self._restacked(parts, sd if sd < start else sd - (end - start),
                                   self._stack_dim_name)
        rows = [(td.flatten(start, end - 1) if end - 1 > start else td).unbind(start)
                for td in self.tensordicts]  # the merged dims of each part, cut
        before = 1 if ragged else size[start:sd].numel()  # row-major: (before, part, after)
        if before == 1:
            pieces = [piece for row in rows for piece in row]
        else:
            after = len(rows[0]) // before
            pieces = [row[i * after + j] for i in range(before) for row in rows
                      for j in range(after)]
        return self._restacked(pieces, start)

    def unflatten(self, dim: int, unflattened_size: Sequence[int]) -> Any:
        """Split the batch dim ``dim`` into ``unflattened_size``: in each part, unless it is
        the stack dim. A ragged dim only gains dims of size 1 (before it, and only when it
        follows the stack dim), as does the stack dim of a ragged stack.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.unflatten(1, (1, -1)).batch_size
        torch.Size([2, 1, -1])
        """
        size = self.batch_size
        dim = batch_dim(self, dim)
        sizes = list(unflattened_size)
        sd = self.stack_dim
        if dim != sd and size[dim] != -1:  # each part splits its own dim
            parts = [td.unflatten(dim if dim < sd else dim - 1, sizes) for td in self.tensordicts]
            out = self._restacked(parts, sd + len(sizes) - 1 if dim < sd else sd,
                                  self._stack_dim_name)
            return made_by(out, "unflatten", (dim, unflattened_size), None, self)
        if -1 not in size:
            return super().unflatten(dim, unflattened_size)
        keep = sizes.index(size[dim]) if size[dim] in sizes else -1
        ones = sizes[:keep] + sizes[keep + 1:]
        ragged = size[dim] == -1  # only 1s before it, and only after the stack dim
        if keep < 0 or ones.count(1) != len(ones) or ragged and (
                keep != len(ones) or dim < sd):
            raise RaggedShapeError(f"cannot unflatten dim {dim} of a lazy stack of batch size "
                                   f"{size} into {sizes}: only dims of size 1 can be added")
        out = self
        for i in range(len(sizes)):
            if i != keep:
                out = out.unsqueeze(dim + i)
        return made_by(out, "unflatten", (dim, unflattened_size), None, self)

    def unsqueeze(self, dim: int) -> Any:
        """Insert a batch dim of size 1 at ``dim``: in each part, or before the stack dim.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.unsqueeze(-1).batch_size
        torch.Size([2, -1, 1])
        """
        dim = batch_dim(self, dim, inserting=True, op="unsqueeze")
        sd = self.stack_dim
        parts = [td.unsqueeze(dim if dim <= sd else dim - 1) for td in self.tensordicts]
        out = self._restacked(parts, sd + 1 if dim <= sd else sd, self._stack_dim_name)
        return made_by(out, "unsqueeze", (dim,), None, self)

    def squeeze(self, dim: int | None = None) -> Any:
        """Remove the batch dims of size 1 (all of them, or ``dim`` if it has size 1); the
        stack dim of a stack of one part leaves that part.

        >>> from tensordict import TensorDict, lazy_stack
        >>> lazy_stack([TensorDict(batch_size=[1, 3])], 1).squeeze().batch_size
        torch.Size([3])
        """
        size = self.batch_size
        if dim is None:
            out = self
            for d in reversed([d for d, n in enumerate(size) if n == 1]):
                out = out.squeeze(d)
            return made_by(out, "squeeze", (None,), None, self)
        dim = batch_dim(self, dim)
        sd = self.stack_dim
        if size[dim] != 1:
            return self
        if dim == sd:
            return made_by(self.tensordicts[0], "squeeze", (dim,), None, self)
        parts = [td.squeeze(dim if dim < sd else dim - 1) for td in self.tensordicts]
        out = self._restacked(parts, sd - 1 if dim < sd else sd, self._stack_dim_name)
        return made_by(out, "squeeze", (dim,), None, self)

    def permute(self, *dims_list: Any, dims: Sequence[int] | None = None) -> Any:
        """Reorder the batch dims: each part's dims are reordered, the stack dim moves.

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.permute(1, 0).batch_size
        torch.Size([-1, 2])
        """
        order = permutation(self, dims_list if dims is None else dims)
        sd = self.stack_dim
        part_order = [d if d < sd else d - 1 for d in order if d != sd]
        if part_order == sorted(part_order):  # the parts keep their dims
            parts = list(self.tensordicts)
        else:
            parts = [td.permute(part_order) for td in self.tensordicts]
        out = self._restacked(parts, order.index(sd), self._stack_dim_name)
        return made_by(out, "permute", (order,), None, self)

    def unbind(self, dim: int = 0) -> tuple[Any, ...]:
        """The slices along ``dim``: the parts themselves along the stack dim, else lazy
        stacks of the parts' slices.

        >>> parts = [TensorDict(x=torch.zeros(2), batch_size=[2])] * 3
        >>> TensorDict.lazy_stack(parts).unbind(0)[1] is parts[1]
        True
        """
        size = self.batch_size
        if not -len(size) <= dim < len(size):
            raise IndexError(f"dim {dim} is out of range for batch size {size}")
        dim %= len(size)
        sd = self.stack_dim
        if dim == sd:
            return tuple(self.tensordicts)
        check_not_ragged_dim(self, dim, "unbind")
        rows = [td.unbind(dim if dim < sd else dim - 1) for td in self.tensordicts]
        new_sd = sd - 1 if dim < sd else sd
        cls = type(self)
        return tuple(cls._from_entries(list(column), new_sd, self._stack_dim_name)
                     for column in zip(*rows))

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
            raise ValueError(f"chunks must be a strictly positive integer, got {chunks}.")
        dim = batch_dim(self, dim)
        check_not_ragged_dim(self, dim, "chunk")
        size = self.batch_size[dim]
        return self._slices(dim, _split_sizes(size, max(-(-size // chunks), 1)))

    def _slices(self, dim: int, sizes: list[int]) -> tuple[Any, ...]:
        lead = (slice(None),) * dim
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        return tuple(self[lead + (slice(start, start + n),)] for start, n in zip(starts, sizes))

    def repeat(self, *repeats: Any) -> Any:
        """Repeat the batch ``repeats[i]`` times along each dim: each part repeats its own
        dims when the stack dim's count is 1 (else the general path).

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(x=torch.arange(2), batch_size=[2])] * 3)
        >>> out = stack.repeat(1, 2)
        >>> out.batch_size, out.tensordicts[0]["x"]
        (torch.Size([3, 4]), tensor([0, 1, 0, 1]))
        """
        reps = _shape_args(repeats)
        sd = self.stack_dim
        if len(reps) != len(self.batch_size) or reps[sd] != 1:
            return super().repeat(*repeats)
        own = reps[:sd] + reps[sd + 1:]
        return self._restacked([td.repeat(*own) for td in self.tensordicts], sd,
                               self._stack_dim_name)

    def expand(self, *shape: Any) -> Any:
        """Broadcast the batch to ``shape``: new leading dims, or size-1 dims grown (``-1``
        keeps a dim, and must be given at the ragged dims). Each part is expanded (views).

        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[4])])
        >>> stack.expand(5, 2, -1).batch_size
        torch.Size([5, 2, -1])
        """
        size = self.batch_size
        new = list(_shape_args(shape))
        lead, own = new[: len(new) - len(size)], new[len(new) - len(size):]
        sd = self.stack_dim
        if len(new) < len(size) or -1 in lead or any(
                n != -1 and n != s and (s != 1 or i == sd) for i, (n, s) in enumerate(zip(own,
                                                                                          size))):
            if -1 not in size:  # e.g. the stack dim of a single part grown: the general way
                return super().expand(*shape)
            raise RuntimeError(f"cannot expand a lazy stack of batch size {size} to {new}: "
                               "give -1 at its ragged dims")
        del own[sd]
        parts = [td.expand(*lead, *(s if n == -1 else n for n, s in zip(own, td.batch_size)))
                 for td in self.tensordicts]
        return self._restacked(parts, sd + len(lead), self._stack_dim_name)

    def broadcast_to(self, shape: Sequence[int]) -> Any:
        """Same as :meth:`expand` (``-1`` at the ragged dims)."""
        if -1 not in self.batch_size:
            return super().broadcast_to(shape)
        return self.expand(shape)
