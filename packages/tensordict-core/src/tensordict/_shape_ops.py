"""Shape ops over the batch dims: each one is a per-leaf function handed to the traversal.

Every function here acts on the leading (batch) dims of a leaf, so it is right for the
leaves of nested TensorDicts with longer batch sizes too; non-tensor entries follow
through ``_restructure``. Dim names move with their dims. The ops that can be undone
(``view``, ``flatten``, ``permute``, ``flip``... see :mod:`tensordict._last_op`) record it
on their result: ``with td.flatten(0, 1) as flat:`` writes ``flat`` back on exit.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3], names=["x", "y"])
    >>> td.permute(1, 0).names, td.reshape(-1).batch_size, td.unsqueeze(0).batch_size
    (['y', 'x'], torch.Size([6]), torch.Size([1, 2, 3]))
    >>> [part.batch_size for part in td.split([1, 2], dim=1)]
    [torch.Size([2, 1]), torch.Size([2, 2])]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import classes
from tensordict._last_op import made_by
from tensordict._plan import broadcasts_to
from tensordict._resize_update import take_in_place
from tensordict._shapes import expand_size
from tensordict._unbatched import UnbatchedTensor

_Tensor = torch.Tensor


# -- helpers -----------------------------------------------------------------------------
def batch_dim(td: Any, dim: int, *, inserting: bool = False, op: str | None = None) -> int:
    """``dim`` as a non-negative batch dim of ``td`` (one past the end if ``inserting``);
    if it is out of range, the error upstream raises for the op ``op`` (see
    :func:`tensordict.errors.dim_out_of_range`)."""
    ndim = len(td.batch_size) + int(inserting)
    if not isinstance(dim, int) or not -ndim <= dim < ndim:
        raise errors.dim_out_of_range(dim, td.batch_size, op, inserting)
    return dim % ndim


def permutation(td: Any, dims: Sequence[Any]) -> list[int]:
    """The ``permute`` arguments ``dims`` as non-negative batch dims; ValueError unless they
    are a permutation of the batch dims of ``td``."""
    ndim = len(td.batch_size)
    order = [batch_dim(td, d, op="permute") for d in _shape_args(dims)]
    if sorted(order) != list(range(ndim)):
        raise ValueError(f"permute needs a permutation of the batch dims {list(range(ndim))}, "
                         f"got {list(dims)}")
    return order


class _LeafShapes(dict):
    """The sizes (arguments of ``view``...) a leaf of each shape takes when its ``ndim``
    batch dims become ``lead``, computed once per distinct leaf shape (slicing a
    ``torch.Size`` is slow); ``((),)`` for a 0-dim result.

    >>> _LeafShapes((2, 2), 1)[torch.Size([4, 3])]
    (2, 2, 3)
    """

    __slots__ = ("_lead", "_ndim")

    def __init__(self, lead: tuple[int, ...], ndim: int) -> None:
        super().__init__()
        self._lead, self._ndim = lead, ndim

    def __missing__(self, shape: torch.Size) -> tuple[Any, ...]:
        full = self[shape] = (*self._lead, *shape[self._ndim:]) or ((),)  # () for 0-dim
        return full


def rebatched(method: Callable[..., _Tensor], lead: tuple[int, ...],
              ndim: int) -> Callable[[_Tensor], _Tensor]:
    """``x -> method(x, *lead, *x.shape[ndim:])``: a shape op (``view``, ``reshape``,
    ``expand``) replacing a leaf's ``ndim`` batch dims by ``lead``, its sizes passed as
    plain ints (the fastest arguments for torch to parse).

    Reading ``x.shape`` costs more than the op's argument parsing, so a leaf with no dim
    or one dim past the batch (most of them) passes ``lead`` or ``(*lead, -1)``: the
    ``-1`` is that dim's size (a ``view``/``reshape`` cannot infer it from 0 elements:
    such a leaf takes the sizes in full).

    >>> rebatched(torch.Tensor.view, (2, 2), 1)(torch.zeros(4, 3)).shape
    torch.Size([2, 2, 3])
    """
    if torch.compiler.is_compiling():  # symbolic shapes: no memo
        return lambda x: method(x, (*lead, *x.shape[ndim:]))
    shapes = _LeafShapes(lead, ndim)
    exact, one_more = lead or ((),), (*lead, -1)

    def apply(x: _Tensor) -> _Tensor:
        dims = x.dim()
        if dims == ndim:
            return method(x, *exact)
        if dims == ndim + 1:
            try:
                return method(x, *one_more)
            except RuntimeError:  # no element to infer -1 from, or a genuine error
                pass
        return method(x, *shapes[x.shape])
    return apply


def _shape_args(args: Sequence[Any]) -> list[int]:
    """``(2, 3)``, ``((2, 3),)`` or ``(torch.Size([2, 3]),)`` as a list of ints."""
    if len(args) == 1 and isinstance(args[0], (Sequence, torch.Size)):
        args = args[0]
    return [int(a) for a in args]


def repeated(x: _Tensor, reps: Sequence[int]) -> _Tensor:
    """``x.repeat(*reps, 1, ...)`` (``reps`` for the leading dims), as one concatenation
    per repeated dim: a third of the time of ``repeat`` for small tensors, the same values.

    >>> repeated(torch.arange(4).view(2, 2), [1, 2]).tolist()
    [[0, 1, 0, 1], [2, 3, 2, 3]]
    """
    if 0 in reps:
        return x.repeat(*reps, *[1] * (x.ndim - len(reps)))
    for dim, count in enumerate(reps):
        if count != 1:
            x = torch.cat([x] * count, dim)
    return x


def _infer_size(shape: Sequence[int], batch_size: torch.Size) -> torch.Size:
    """``shape`` with its ``-1`` resolved so that it holds ``batch_size.numel()`` elements."""
    shape = list(shape)
    numel = batch_size.numel()
    known = math.prod([s for s in shape if s != -1])  # a list: torch.compile-friendly
    if shape.count(-1) == 1 and known and numel % known == 0:
        shape[shape.index(-1)] = numel // known
    if shape.count(-1) or math.prod(shape) != numel:
        raise RuntimeError(f"invalid shape {list(shape)} for a batch of {numel} elements "
                           f"(batch size {batch_size})")
    return torch.Size(shape)


def _split_sizes(size: int, split_size: int | Sequence[int]) -> list[int]:
    if isinstance(split_size, int):
        if split_size <= 0:
            raise ValueError(f"split_size must be positive, got {split_size}")
        return [min(split_size, size - start) for start in range(0, size, split_size)] or [0]
    if not isinstance(split_size, (Sequence, _Tensor)):
        raise TypeError("split(): argument 'split_size' must be int or list of ints, got "
                        f"{split_size!r}")
    sizes = [int(s) for s in split_size]
    if sum(sizes) != size:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {size}, but "
                           f"got split_sizes={sizes}: they do not add up to the size of the dim")
    return sizes


# the tensor method giving all pieces of a plain tensor at once, by the name of the method
# that tensor subclasses (MemoryMappedTensor) may override
_CUTS: dict[str, Callable[..., Sequence[_Tensor]]] = {
    "unbind": _Tensor.unbind, "split": _Tensor.split_with_sizes}


def _restructure_parts(td: Any, method: str, args: tuple[Any, ...],
                       indices: Sequence[tuple[Any, ...]],
                       sizes: Sequence[torch.Size], names: Any) -> tuple[Any, ...]:
    """Cut ``td`` in pieces: ``leaf.<method>(*args)`` (``"unbind"`` or ``"split"``)
    gives all pieces of a leaf at once and ``indices[i]`` (a batch index) the i-th alone.
    Other collections are indexed, so that the pieces of a lazy stack are views of its
    parts, as upstream (ParallelEnv workers write into the pieces of a shared, lazily
    stacked buffer).
    """
    if type(td) is not classes.TensorDict:
        return tuple([td[index] for index in indices])
    ndim = len(td.batch_size)
    cut = _CUTS[method]
    keys: list[str] = []
    columns: list[Sequence[Any]] = []  # the pieces of each entry, one per output
    for key, value in td._tensordict.items():
        keys.append(key)
        if value.__class__ is _Tensor:
            columns.append(cut(value, *args))
        elif isinstance(value, _Tensor):
            columns.append([value._rebatch(size) for size in sizes]
                           if value.__class__ is UnbatchedTensor
                           else getattr(value, method)(*args))
        elif getattr(value, "_is_non_tensor", False):
            extra = value.batch_size[ndim:]
            columns.append([value._restructure(operator.itemgetter(index), size + extra)
                            for index, size in zip(indices, sizes)])
        else:
            extra = value.batch_size[ndim:]
            child_names = None if names is None else tuple(names) + tuple(value.names[ndim:])
            columns.append(_restructure_parts(value, method, args, indices,
                                              [s + extra for s in sizes], child_names))
    names = None if names is None or all(n is None for n in names) else tuple(names)
    device = td.device
    new = classes.TensorDict._from_entries
    rows = zip(*columns) if columns else [()] * len(sizes)
    return tuple([new(dict(zip(keys, row)), size, device, names)
                  for row, size in zip(rows, sizes)])


def _split_along(td: Any, dim: int, sizes: list[int]) -> tuple[Any, ...]:
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    if td.__class__ is classes.LazyStackedTensorDict and dim == td.stack_dim:
        parts, batch = td.tensordicts, td.batch_size  # stacks of runs of the parts
        pieces = tuple(td._from_entries(parts[a:a + n], dim, td._stack_dim_name) if n else
                       type(td)(batch_size=batch[:dim] + (0,) + batch[dim + 1:], stack_dim=dim)
                       for a, n in zip(starts, sizes))
    else:
        batch = td.batch_size
        new_sizes = [batch[:dim] + torch.Size([s]) + batch[dim + 1:] for s in sizes]
        lead = (slice(None),) * dim
        indices = [(*lead, slice(a, a + n)) for a, n in zip(starts, sizes)]
        pieces = _restructure_parts(td, "split", (sizes, dim), indices, new_sizes,
                                    td.names)
    if td.is_locked:  # as upstream's split and chunk (not unbind)
        for piece in pieces:
            piece.lock_()
    return pieces


class ShapeOpsMixin:
    """Reshaping, reordering, cutting and repeating the batch dims."""

    __slots__ = ()

    def _reshaped(self, fn: Callable[[_Tensor], _Tensor], batch_size: torch.Size,
                  names: Sequence[str | None] | None, *, keep_lock: bool = True,
                  **checks: Any) -> Any:
        """``fn`` on every leaf, the batch becoming ``batch_size``; locked if this one is
        (as upstream's shape ops), unless ``keep_lock`` is False."""
        out = self._apply_nest(fn, batch_size=batch_size, names=names, filter_empty=False,
                               **checks)
        return out.lock_() if keep_lock and self.is_locked else out

    # -- reshaping -------------------------------------------------------------------------
    def view(self, *shape: Any, size: Any = None, batch_size: Any = None) -> Any:
        """A TensorDict whose leaves are views with the batch dims reshaped to ``shape``.

        A dtype instead of a shape views every leaf as that dtype.

        >>> td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3])
        >>> td.view(-1)["a"].shape
        torch.Size([6, 4])
        """
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            dtype = shape[0]  # the last dim of a leaf may change: the results are checked
            out = self._reshaped(lambda x: x.view(dtype), self.batch_size, self.names,
                                 keep_lock=False, check_shapes=True)
            return made_by(out, "view", shape, None, self)
        shape = size if size is not None else batch_size if batch_size is not None else shape
        new = _infer_size(_shape_args(shape), self.batch_size)
        if new == self.batch_size:
            return self
        out = self._reshaped(rebatched(_Tensor.view, tuple(new), len(self.batch_size)), new,
                             None)
        return made_by(out, "view", shape, None, self)

    def reshape(self, *shape: Any, **kwargs: Any) -> Any:
        """Like :meth:`view`, copying leaves that cannot be viewed.

        >>> TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3]).reshape(3, 2).batch_size
        torch.Size([3, 2])
        """
        shape = kwargs.pop("size", kwargs.pop("shape", kwargs.pop("batch_size", shape))) or shape
        if kwargs:
            raise TypeError(f"reshape() got unexpected arguments {sorted(kwargs)}")
        new = _infer_size(_shape_args(shape), self.batch_size)
        if new == self.batch_size:
            return self
        return self._reshaped(rebatched(_Tensor.reshape, tuple(new), len(self.batch_size)),
                              new, None)

    def flatten(self, start_dim: int = 0, end_dim: int = -1, *, inplace: bool = False) -> Any:
        """Merge the batch dims ``start_dim..end_dim`` into one (``inplace``: this
        TensorDict takes the result's batch size and leaves, and is returned; so for every
        shape op that has ``inplace``).

        >>> TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3]).flatten(0, 1)["a"].shape
        torch.Size([6, 4])
        """
        if inplace:
            return take_in_place(self, self.flatten(start_dim, end_dim))
        if not len(self.batch_size):
            return self.unsqueeze(0)  # (recording itself: undone the same way)
        start, end = (batch_dim(self, d, op="torch") for d in (start_dim, end_dim))
        if end < start:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim {end_dim}")
        batch = self.batch_size
        new = batch[:start] + torch.Size([batch[start:end + 1].numel()]) + batch[end + 1:]
        names = self.names
        names = names[:start] + [names[start] if start == end else None] + names[end + 1:]
        out = self._reshaped(lambda x: x.flatten(start, end), new, names)
        return made_by(out, "flatten", (start_dim, end_dim), None, self)

    def unflatten(self, dim: int, unflattened_size: Sequence[int], *,
                  inplace: bool = False) -> Any:
        """Split the batch dim ``dim`` into ``unflattened_size`` (``inplace`` as in
        :meth:`flatten`).

        >>> TensorDict(a=torch.zeros(6), batch_size=[6]).unflatten(0, (2, 3)).batch_size
        torch.Size([2, 3])
        """
        if inplace:
            return take_in_place(self, self.unflatten(dim, unflattened_size))
        dim = batch_dim(self, dim)
        batch = self.batch_size
        sizes = _infer_size(list(unflattened_size), torch.Size([batch[dim]]))
        new = batch[:dim] + sizes + batch[dim + 1:]
        names = self.names
        names = names[:dim] + [names[dim]] + [None] * (len(sizes) - 1) + names[dim + 1:]
        out = self._reshaped(lambda x: x.unflatten(dim, sizes), new, names)
        return made_by(out, "unflatten", (dim, unflattened_size), None, self)

    def squeeze(self, dim: int | None = None) -> Any:
        """Remove batch dims of size 1 (all of them, or ``dim`` if it has size 1).

        >>> TensorDict(a=torch.zeros(1, 3, 1), batch_size=[1, 3, 1]).squeeze().batch_size
        torch.Size([3])
        """
        batch = self.batch_size
        if dim is None:
            dims = tuple(i for i, s in enumerate(batch) if s == 1)
        else:
            dim = batch_dim(self, dim)
            dims = (dim,) if batch[dim] == 1 else ()
        if not dims:
            return self
        new = torch.Size([s for i, s in enumerate(batch) if i not in dims])
        names = [n for i, n in enumerate(self.names) if i not in dims]
        return made_by(self._reshaped(lambda x: x.squeeze(dims), new, names), "squeeze",
                       (dim,), None, self)

    def unsqueeze(self, dim: int) -> Any:
        """Insert a batch dim of size 1 at ``dim``.

        >>> TensorDict(a=torch.zeros(3), batch_size=[3]).unsqueeze(-1).batch_size
        torch.Size([3, 1])
        """
        dim = batch_dim(self, dim, inserting=True, op="unsqueeze")
        batch = self.batch_size
        new = batch[:dim] + torch.Size([1]) + batch[dim:]
        names = self.names

        if dim == 0:
            def fn(x: _Tensor) -> _Tensor:
                return x[None]  # the view unsqueeze(0) gives, made faster
        else:
            def fn(x: _Tensor) -> _Tensor:
                return x.unsqueeze(dim)
        fn.non_tensor_stack = True  # type: ignore[attr-defined]  (NonTensorData: a stack)
        out = self._reshaped(fn, new, names[:dim] + [None] + names[dim:])
        return made_by(out, "unsqueeze", (dim,), None, self)

    def atleast_1d(self) -> Any:
        """The TensorDict with at least one batch dim.

        >>> TensorDict(a=torch.zeros(())).atleast_1d().batch_size
        torch.Size([1])
        """
        return self._atleast(1)

    def atleast_2d(self) -> Any:
        """The TensorDict with at least two batch dims (new dims lead)."""
        return self._atleast(2)

    def atleast_3d(self) -> Any:
        """The TensorDict with at least three batch dims (new dims lead)."""
        return self._atleast(3)

    def _atleast(self, ndim: int) -> Any:
        out = self
        while len(out.batch_size) < ndim:
            out = out.unsqueeze(0)
        return made_by(out, f"atleast_{ndim}d", (), None, self)

    # -- reordering ------------------------------------------------------------------------
    def permute(self, *dims_list: Any, dims: Sequence[int] | None = None) -> Any:
        """Reorder the batch dims.

        >>> TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3]).permute(1, 0)["a"].shape
        torch.Size([3, 2, 4])
        """
        ndim = len(self.batch_size)
        order = permutation(self, dims_list if dims is None else dims)
        if all(d == i for i, d in enumerate(order)):
            return self  # the same order: this TensorDict, as upstream
        new = torch.Size([self.batch_size[d] for d in order])
        names = self.names
        perms: dict[int, tuple[int, ...]] = {}  # by leaf ndim: the feature dims stay

        def fn(x: _Tensor) -> _Tensor:
            leaf_ndim = x.ndim
            perm = perms.get(leaf_ndim)
            if perm is None:
                perm = perms[leaf_ndim] = (*order, *range(ndim, leaf_ndim))
            return x.permute(*perm)  # varargs: parsed faster than a tuple
        return made_by(self._reshaped(fn, new, [names[d] for d in order]), "permute",
                       (order,), None, self)

    def transpose(self, dim0: int, dim1: int) -> Any:
        """Swap two batch dims.

        >>> TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3]).transpose(0, 1).batch_size
        torch.Size([3, 2])
        """
        d0, d1 = batch_dim(self, dim0, op="transpose"), batch_dim(self, dim1, op="transpose")
        if d0 == d1:
            return self  # nothing swapped: this collection, as upstream
        if self.__class__ is not classes.TensorDict:  # (a lazy stack permutes its own way)
            order = list(range(len(self.batch_size)))
            order[d0], order[d1] = d1, d0
            return self.permute(order)
        batch = list(self._batch_size)
        batch[d0], batch[d1] = batch[d1], batch[d0]
        names = self.names  # a new list
        names[d0], names[d1] = names[d1], names[d0]
        out = self._reshaped(lambda x: x.transpose(d0, d1), torch.Size(batch), names)
        return made_by(out, "transpose", (d0, d1), None, self)

    def swapaxes(self, axis0: int, axis1: int) -> Any:
        """Alias of :meth:`transpose`."""
        return self.transpose(axis0, axis1)

    def swapdims(self, dim0: int, dim1: int) -> Any:
        """Alias of :meth:`transpose`."""
        return self.transpose(dim0, dim1)

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Any:
        """Move batch dims ``source`` to positions ``destination`` (as ``torch.movedim``).

        >>> TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3, 4]).movedim(0, 2).batch_size
        torch.Size([3, 4, 2])
        """
        src = [source] if isinstance(source, int) else list(source)
        dst = [destination] if isinstance(destination, int) else list(destination)
        src = [batch_dim(self, d, op="torch") for d in src]
        dst = [batch_dim(self, d, op="torch") for d in dst]
        if len(src) != len(dst):
            raise ValueError(f"movedim needs as many sources as destinations, got {src} and "
                             f"{dst}")
        if src == dst:
            return self  # nothing moved: this collection, as upstream
        # (permute records how to undo it)
        order: list[int | None] = [None] * len(self.batch_size)
        for s, d in zip(src, dst):
            order[d] = s
        rest = iter(d for d in range(len(order)) if d not in src)
        return self.permute([next(rest) if o is None else o for o in order])

    moveaxis = movedim

    def flip(self, dims: int | Sequence[int]) -> Any:
        """Reverse the order of elements along the batch dims ``dims``.

        >>> TensorDict(a=torch.arange(3), batch_size=[3]).flip(0)["a"]
        tensor([2, 1, 0])
        """
        dims_t = tuple(batch_dim(self, d, op="torch")
                       for d in ([dims] if isinstance(dims, int) else dims))
        out = self._reshaped(lambda x: x.flip(dims_t), self.batch_size, self.names)
        return made_by(out, "flip", (dims_t,), None, self)

    def fliplr(self) -> Any:
        """Flip the second batch dim."""
        return self.flip(1)

    def flipud(self) -> Any:
        """Flip the first batch dim."""
        return self.flip(0)

    def roll(self, shifts: int | Sequence[int], dims: int | Sequence[int] | None = None, *,
             inplace: bool = False) -> Any:
        """Roll elements along batch dims (all batch elements flattened if ``dims`` is None;
        ``inplace`` as in :meth:`flatten`).

        >>> TensorDict(a=torch.arange(3), batch_size=[3]).roll(1, 0)["a"]
        tensor([2, 0, 1])
        """
        if inplace:
            return take_in_place(self, self.roll(shifts, dims))
        if dims is None:
            batch = self.batch_size
            out = self.flatten().roll(shifts, 0).reshape(batch)
        else:
            dims_t = tuple(batch_dim(self, d)
                           for d in ([dims] if isinstance(dims, int) else dims))
            out = self._reshaped(lambda x: x.roll(shifts, dims_t), self.batch_size, self.names)
        return made_by(out, "roll", (shifts, dims), None, self)

    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Any:
        """Rotate by 90 degrees ``k`` times in the plane of two batch dims.

        >>> TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3]).rot90().batch_size
        torch.Size([3, 2])
        """
        d0, d1 = (batch_dim(self, d) for d in dims)
        new_order = list(range(len(self.batch_size)))
        if k % 2:
            new_order[d0], new_order[d1] = d1, d0
        new = torch.Size([self.batch_size[d] for d in new_order])
        names = [self.names[d] for d in new_order]
        out = self._reshaped(lambda x: x.rot90(k, (d0, d1)), new, names)
        return made_by(out, "rot90", (k, (d0, d1)), None, self)

    # -- broadcasting and repeating --------------------------------------------------------
    def expand(self, *shape: Any) -> Any:
        """Broadcast the batch to ``shape`` (new leading dims, or size-1 dims grown): the
        leaves are expanded views, nothing is copied.

        >>> TensorDict(a=torch.zeros(3, 4), batch_size=[3]).expand(2, 3)["a"].shape
        torch.Size([2, 3, 4])
        """
        return self._expand(shape, True)

    def _expand(self, shape: Sequence[Any], non_tensor_stack: bool) -> Any:
        """:meth:`expand`; ``non_tensor_stack``: whether NonTensorData leaves given new
        leading dims become NonTensorStacks (``expand``) or stay one value
        (``broadcast_to``), as upstream."""
        batch = self.batch_size
        new = expand_size(_shape_args(shape), batch)
        if not broadcasts_to(batch, new) or any(n < 0 for n in new):
            raise RuntimeError(f"Incompatible expanded shape: cannot expand a TensorDict of "
                               f"batch size {batch} to {list(new)}")
        names = [None] * (len(new) - len(batch)) + self.names
        fn = rebatched(_Tensor.expand, tuple(new), len(batch))
        fn.non_tensor_stack = non_tensor_stack  # type: ignore[attr-defined]
        return self._reshaped(fn, new, names)

    def expand_as(self, other: Any) -> Any:
        """Expand to the shape of a tensor or the batch size of a TensorDict."""
        return self.expand(other.batch_size if hasattr(other, "batch_size") else other.shape)

    def broadcast_to(self, shape: Sequence[int]) -> Any:
        """Same as :meth:`expand`, except that NonTensorData entries stay one value."""
        return self._expand((shape,), False)

    def repeat(self, *repeats: Any, inplace: bool = False) -> Any:
        """Repeat the batch ``repeats[i]`` times along each batch dim (``inplace`` as in
        :meth:`flatten`).

        >>> TensorDict(a=torch.arange(2), batch_size=[2]).repeat(2)["a"]
        tensor([0, 1, 0, 1])
        """
        if inplace:
            return take_in_place(self, self.repeat(*repeats))
        reps = _shape_args(repeats)
        ndim = len(self.batch_size)
        if len(reps) != ndim:
            raise ValueError(f"repeat needs one count per batch dim ({ndim}), got {reps}")
        new = torch.Size([s * r for s, r in zip(self.batch_size, reps)])
        return self._reshaped(lambda x: repeated(x, reps), new, self.names)

    def tile(self, dims: Sequence[int]) -> Any:
        """Repeat like ``torch.tile``: missing leading counts are 1, extra ones add dims.

        >>> TensorDict(a=torch.arange(2), batch_size=[2]).tile((2,))["a"]
        tensor([0, 1, 0, 1])
        """
        reps = _shape_args((dims,) if isinstance(dims, int) else dims)
        out = self._atleast(len(reps)) if len(reps) > len(self.batch_size) else self
        reps = [1] * (len(out.batch_size) - len(reps)) + reps
        return out.repeat(*reps).rename(*[None] * len(out.batch_size))

    def repeat_interleave(self, repeats: int | _Tensor, dim: int | None = None, *,
                          output_size: int | None = None, inplace: bool = False) -> Any:
        """Repeat each batch element ``repeats`` times along ``dim`` (flattened if None;
        ``inplace`` as in :meth:`flatten`).

        >>> TensorDict(a=torch.arange(2), batch_size=[2]).repeat_interleave(2, dim=0)["a"]
        tensor([0, 0, 1, 1])
        """
        if inplace:
            return take_in_place(self, self.repeat_interleave(repeats, dim,
                                                              output_size=output_size))
        if dim is None:
            return self.flatten().repeat_interleave(repeats, 0, output_size=output_size)
        dim = batch_dim(self, dim, op="torch")
        size = self.batch_size[dim]
        count = int(repeats * size if isinstance(repeats, int) or not repeats.ndim
                    else repeats.sum())
        new = self.batch_size[:dim] + torch.Size([count]) + self.batch_size[dim + 1:]
        return self._reshaped(
            lambda x: x.repeat_interleave(repeats, dim, output_size=output_size), new, self.names
        )

    # -- cutting ---------------------------------------------------------------------------
    def unbind(self, dim: int = 0) -> tuple[Any, ...]:
        """The tuple of TensorDicts along batch dim ``dim``.

        >>> [t["a"].item() for t in TensorDict(a=torch.arange(3), batch_size=[3]).unbind(0)]
        [0, 1, 2]
        """
        dim = batch_dim(self, dim)
        batch = self.batch_size
        new = batch[:dim] + batch[dim + 1:]
        names = self.names
        names = names[:dim] + names[dim + 1:]
        indices = [(*(slice(None),) * dim, i) for i in range(batch[dim])]
        return _restructure_parts(self, "unbind", (dim,), indices, [new] * len(indices),
                                  names)

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Any, ...]:
        """Pieces of ``split_size`` elements (or of each listed size) along ``dim``.

        >>> [t.batch_size for t in TensorDict(batch_size=[5]).split(2)]
        [torch.Size([2]), torch.Size([2]), torch.Size([1])]
        """
        dim = batch_dim(self, dim)
        return _split_along(self, dim, _split_sizes(self.batch_size[dim], split_size))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Any, ...]:
        """At most ``chunks`` pieces along ``dim``, as ``torch.chunk``.

        >>> [t.batch_size for t in TensorDict(batch_size=[5]).chunk(2)]
        [torch.Size([3]), torch.Size([2])]
        """
        if chunks <= 0:
            raise ValueError(f"chunks must be a strictly positive integer, got {chunks}.")
        dim = batch_dim(self, dim)
        size = self.batch_size[dim]
        return _split_along(self, dim, _split_sizes(size, max(-(-size // chunks), 1)))

    def tensor_split(self, indices_or_sections: int | Sequence[int] | _Tensor,
                     dim: int = 0) -> tuple[Any, ...]:
        """Pieces along ``dim`` as ``torch.tensor_split`` (a count or split indices).

        >>> [t.batch_size for t in TensorDict(batch_size=[5]).tensor_split([1, 3])]
        [torch.Size([1]), torch.Size([2]), torch.Size([2])]
        """
        dim = batch_dim(self, dim)
        length = self.batch_size[dim]
        if indices_or_sections.__class__ is int and indices_or_sections > 0:
            size, longer = divmod(length, indices_or_sections)  # as torch: longer ones first
            sizes = [size + 1] * longer + [size] * (indices_or_sections - longer)
        else:
            sizes = [len(p) for p in torch.arange(length).tensor_split(indices_or_sections)]
        return _split_along(self, dim, sizes)

    def narrow(self, dim: int, start: int, length: int) -> Any:
        """The elements ``start..start+length`` along ``dim`` (a view).

        >>> TensorDict(a=torch.arange(5), batch_size=[5]).narrow(0, 1, 2)["a"]
        tensor([1, 2])
        """
        dim = batch_dim(self, dim, op="torch")
        start = start % self.batch_size[dim] if start < 0 else start
        if start + length > self.batch_size[dim]:
            raise errors.BatchDimError(
                f"start ({start}) + length ({length}) exceeds dimension size "
                f"({self.batch_size[dim]}): narrow({dim}, {start}, {length}) goes past the end "
                f"of batch size {self.batch_size}")
        new = self.batch_size[:dim] + torch.Size([length]) + self.batch_size[dim + 1:]
        return self._reshaped(lambda x: x.narrow(dim, start, length), new, self.names)

    # -- gathering and masking -------------------------------------------------------------
    def gather(self, dim: int, index: _Tensor, out: Any = None, *,
               inplace: bool = False) -> Any:
        """``torch.gather`` along batch dim ``dim``; the result's batch size is the shape
        of ``index``. An index with fewer dims than the batch is spread over each leaf's
        remaining dims, as upstream does (at the index's dims, leaf dim ``dim`` keeps
        one element). ``inplace`` as in :meth:`flatten`.

        >>> td = TensorDict(a=torch.arange(6).view(2, 3), batch_size=[2, 3])
        >>> td.gather(1, torch.tensor([[2], [0]]))["a"]
        tensor([[2],
                [3]])
        >>> td.gather(0, torch.tensor([1, 1, 0]))["a"]  # whole rows
        tensor([[3, 4, 5],
                [3, 4, 5],
                [0, 1, 2]])
        """
        if inplace:
            return take_in_place(self, self.gather(dim, index, out))
        dim = batch_dim(self, dim, op="gather")
        batch = self.batch_size
        ndim, rank = len(batch), index.ndim
        if not 1 <= rank <= ndim or (rank < ndim and any(
                index.shape[d] > batch[d] for d in range(rank) if d != dim)):
            raise RuntimeError(f"gather needs an index of 1 to {ndim} dims, each but dim {dim} "
                               f"at most the batch size {list(batch)}, got shape "
                               f"{list(index.shape)}")

        spread: dict[torch.Size, _Tensor] = {}  # the index for each shape of leaf

        def fn(x: _Tensor) -> _Tensor:
            rest = x.shape[rank:]
            idx = spread.get(rest)
            if idx is None:
                dims = rest if rank == ndim else tuple(
                    1 if d == dim else size for d, size in enumerate(rest, rank))
                idx = spread[rest] = index.reshape((*index.shape, *(1,) * len(dims))).expand(
                    (*index.shape, *dims))
            return x.gather(dim, idx)

        names = self.names if rank == ndim else None  # (upstream drops them)
        result = self._reshaped(fn, index.shape, names, keep_lock=False)
        if out is not None:
            return out.update_(result)
        return result

    def index_select(self, dim: int, index: _Tensor) -> Any:
        """The elements at ``index`` along batch dim ``dim``.

        >>> TensorDict(a=torch.arange(3), batch_size=[3]).index_select(0, torch.tensor([2]))["a"]
        tensor([2])
        """
        dim = batch_dim(self, dim)
        new = self.batch_size[:dim] + torch.Size([index.numel()]) + self.batch_size[dim + 1:]
        return self._reshaped(lambda x: x.index_select(dim, index), new, self.names,
                              keep_lock=False)
