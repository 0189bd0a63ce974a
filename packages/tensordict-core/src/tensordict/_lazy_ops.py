"""What lazy stacks compute without stacking: moving parts through shape ops, ragged shapes.

A shape op or an index is handed to a collection as a function of its batch-shaped leaves
(see :mod:`tensordict._traverse`). A lazy stack cannot call it on its parts directly, so
:func:`restructure` calls it on the *positions* of the batch elements instead. When the
function only moves elements around (indexing, reshape, expand...), the positions it returns
say which part each result element comes from. If every slice of one result dim comes
from a single part, the result is again a lazy stack along that dim, each slice an index
(or a view) of its part; otherwise the caller densifies.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> stack = lazy_stack([TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(5))])
    >>> stack.get_item_shape("x")
    torch.Size([2, -1])
    >>> stack.get("x", as_padded_tensor=True, padding_value=-1.0)
    tensor([[ 0.,  0.,  0., -1., -1.],
            [ 1.,  1.,  1.,  1.,  1.]])
    >>> type(stack[torch.tensor([1, 0])]).__name__
    'LazyStackedTensorDict'
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from tensordict._collection import NO_DEFAULT, classes
from tensordict._nested_key import NestedKey
from tensordict._ragged import padded_parts
from tensordict._stack import StackMismatchError
from tensordict._unbatched import UnbatchedTensor, stack_unbatched

_Tensor = torch.Tensor
_SHAPE, _DTYPE, _DEVICE, _IS_CPU = (operator.attrgetter(name)
                                     for name in ("shape", "dtype", "device", "is_cpu"))
_LABELS = torch.Generator().manual_seed(0)


def _moves_elements(fn: Callable[[_Tensor], Any], positions: _Tensor) -> _Tensor | None:
    """``fn(positions)`` if ``fn`` only gathers batch elements, else None.

    A gather commutes with relabelling the elements; a reduction, a scan or an op that
    makes new values (``new_zeros`` of a one-element stack) does not. Two relabellings
    (reversed and offset far from any position, and shuffled) tell them apart.
    """
    count = positions.numel()
    try:  # an index the batch cannot take (IndexError, ValueError) raises, as on a leaf
        moved = fn(positions)
    except (RuntimeError, TypeError):  # an op int64 positions cannot take: no gather
        return None
    try:
        if not isinstance(moved, _Tensor) or moved.dtype is not torch.int64 or (
                moved.numel() and moved.min() < 0):
            return None
        for labels in (torch.arange(count - 1, -1, -1) + (1 << 40),
                       torch.randperm(count, generator=_LABELS)):
            if not torch.equal(fn(labels[positions]), labels[moved]):
                return None
    except (RuntimeError, IndexError, TypeError, ValueError):
        return None
    return moved


def restructure(stack: Any, fn: Callable[[_Tensor], Any], batch_size: torch.Size) -> Any:
    """The result of the batch op ``fn`` on a lazy stack, or None where it needs stacking.

    The result keeps the parts (as they are, as views or indexed) when the op moves whole
    parts along one dim; a result within a single part is that part, indexed.
    """
    full = stack.batch_size
    count = full.numel()
    if count <= 0:  # empty, or ragged (-1 dims): the parts' sizes are not the stack's
        return None
    moved = _moves_elements(fn, torch.arange(count).reshape(full))
    if moved is None or moved.shape != batch_size or moved.numel() == 0:
        return None
    sd, n = stack.stack_dim, len(stack.tensordicts)
    inner = full[sd + 1:].numel()
    part = (moved // inner) % n
    within = (moved // (inner * n)) * inner + moved % inner
    first = part.reshape(-1)[0]
    if within.ndim <= len(full) - 1 and bool((part == first).all()):
        return gather_part(stack.tensordicts[int(first)], within)  # within one part
    for dim in range(moved.ndim):
        along = _line(part, dim)
        if bool((part == along).all()):
            tds = stack.tensordicts
            if moved.ndim == 1:  # one element of a part each
                pieces = [_element(tds[k], w) for k, w in zip(part.tolist(), within.tolist())]
            else:
                pieces = [gather_part(tds[k], within.select(dim, j))
                          for j, k in enumerate(along.reshape(-1).tolist())]
            return type(stack)._from_entries(pieces, dim)
    return None


def _element(part: Any, flat: int) -> Any:
    """Element ``flat`` (row-major) of ``part``, by index; a 0-dim part is itself."""
    size = part.batch_size
    if len(size) < 2:
        return part[flat] if size else part
    index = []
    for n in reversed(size):
        index.append(flat % n)
        flat //= n
    return part[tuple(reversed(index))]


def _line(values: _Tensor, dim: int) -> _Tensor:
    """The values along ``dim`` at index 0 of the other dims, shaped to broadcast back."""
    index = tuple(slice(None) if d == dim else slice(0, 1) for d in range(values.ndim))
    return values[index]


def gather_part(part: Any, within: _Tensor) -> Any:
    """``part`` rearranged so that element ``i`` is its element ``within[i]`` (flat index).

    The part itself when nothing moves, a reshaped view when the order is kept, an index
    otherwise.
    """
    part_size = part.batch_size
    shape = within.shape
    ndim = len(part_size)
    in_order = torch.equal(within.reshape(-1), torch.arange(part_size.numel()))
    if in_order and shape == part_size:
        return part
    if in_order:
        def fn(x: _Tensor) -> _Tensor:
            return x.reshape(shape + x.shape[ndim:])
    else:
        count = part_size.numel()  # not -1: leaves may have no elements

        def fn(x: _Tensor) -> _Tensor:
            return x.reshape(count, *x.shape[ndim:])[within]
    if getattr(part, "_is_non_tensor", False):
        return part._restructure(fn, shape)
    return part._apply_nest(fn, batch_size=shape)


# -- ragged entries ----------------------------------------------------------------------
def common_shape(shapes: Sequence[torch.Size]) -> torch.Size:
    """The shape shared by ``shapes``, with ``-1`` where they differ."""
    first = shapes[0]
    if shapes.count(first) == len(shapes):
        return first
    if any(len(s) != len(first) for s in shapes):
        return torch.Size([-1])
    return torch.Size(size if all(s[i] == size for s in shapes) else -1
                      for i, size in enumerate(first))


def ragged_error(key: Any, shapes: Sequence[torch.Size]) -> RuntimeError:
    """The error of reading one entry of parts of different shapes as one tensor (a
    :class:`StackMismatchError`: ``maybe_dense_stack`` then stacks lazily)."""
    distinct = list(dict.fromkeys(shapes))
    return StackMismatchError(
        f"Failed to stack tensors within a tensordict under the key {key!r}: their shapes are "
        f"{distinct}. To read them, pass as_padded_tensor=True, as_nested_tensor=True or "
        "as_list=True to get()."
    )


def stack_tensors(key: Any, values: Sequence[_Tensor], dim: int) -> _Tensor:
    """``torch.stack`` of one entry of every part, with a clear error for ragged shapes."""
    if values and values[0].__class__ is UnbatchedTensor:
        size = values[0].batch_size
        return stack_unbatched(values, key, size[:dim] + (len(values),) + size[dim:])
    try:
        return torch.stack(values, dim)
    except (RuntimeError, TypeError):
        if not all(isinstance(v, _Tensor) for v in values):
            kinds = sorted({type(v).__name__ for v in values})
            raise TypeError(f"cannot stack the entries {key!r} of the parts: they are {kinds}"
                            ) from None
        shapes = [v.shape for v in values]
        if len(set(shapes)) > 1:
            raise ragged_error(key, shapes) from None
        raise


def pad_stack(values: Sequence[_Tensor], dim: int, padding_value: float = 0.0,
              padding_side: str = "right") -> _Tensor:
    """Stack tensors of the same ndim, padding each to the largest size of every dim."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    shapes = list(map(_SHAPE, values))
    if len(set(map(len, shapes))) > 1:
        raise RuntimeError(f"cannot pad tensors with different numbers of dims: {shapes}")
    columns = list(zip(*shapes))  # the sizes of each dim
    if dim == 0 and columns and all(c.count(c[0]) == len(c) for c in columns[1:]) and \
            len(set(map(_DTYPE, values))) == 1 and (
                all(map(_IS_CPU, values)) or len(set(map(_DEVICE, values))) == 1):
        # ragged along dim 0 only: one torch call
        return torch._C._nn.pad_sequence(list(values), True, padding_value, padding_side)
    if dim == 0 and columns and padding_side == "right" and len(values) > 3 and \
            len({(v.dtype, v.device, v.layout) for v in values}) == 1 and \
            values[0].layout is torch.strided and not any(v.requires_grad for v in values):
        # one torch call pads them all (a nested tensor is a copy autograd does not track)
        with warnings.catch_warnings():  # (the strided nested layout's prototype warning)
            warnings.simplefilter("ignore", UserWarning)
            nested = torch.nested.nested_tensor(list(values))
        return nested.to_padded_tensor(padding_value)
    target = list(map(max, columns))
    padded = []
    for value in values:
        pads: list[int] = []
        for size, wanted in zip(reversed(value.shape), reversed(target)):
            pads += [0, wanted - size] if padding_side == "right" else [wanted - size, 0]
        padded.append(F.pad(value, pads, value=padding_value) if any(pads) else value)
    return torch.stack(padded, dim)


def nested_stack(values: Sequence[_Tensor], dim: int, layout: torch.layout | None) -> _Tensor:
    """The values as one ``torch.nested`` tensor (only along the first dim)."""
    if dim != 0:
        raise RuntimeError(f"nested tensors can only stack along dim 0, not along dim {dim}")
    return torch.nested.nested_tensor(list(values), layout=layout or torch.strided)


class DensifyMixin:
    """Turning a lazy stack into a TensorDict: stacked, nested or padded entries."""

    __slots__ = ()

    def contiguous(self) -> Any:
        """A TensorDict holding the stacked values (exclusive keys are left out).

        >>> TensorDict.lazy_stack([TensorDict(x=torch.zeros(2))] * 3).contiguous()
        TensorDict(batch_size=[3], fields={x: f32[2]})
        """
        return self._dense(None)

    def is_contiguous(self) -> bool:
        """False: a lazy stack keeps its parts apart (:meth:`contiguous` joins them), as
        upstream says.

        >>> TensorDict.lazy_stack([TensorDict(x=torch.zeros(2))] * 3).is_contiguous()
        False
        """
        return False

    def to_tensordict(self, *, retain_none: bool | None = None) -> Any:
        """A TensorDict copy of the stack (see :meth:`contiguous`)."""
        return self._dense(None)

    def densify(self, layout: torch.layout = torch.strided) -> Any:
        """A TensorDict where entries of different shapes become nested tensors.

        >>> parts = [TensorDict(x=torch.zeros(1)), TensorDict(x=torch.ones(2))]
        >>> stack = TensorDict.lazy_stack(parts)
        >>> stack.densify(layout=torch.jagged)["x"].layout
        torch.jagged
        """
        return self._dense(lambda values: nested_stack(values, self._stack_dim, layout))

    def to_padded_tensor(self, padding: float = 0.0, mask_key: NestedKey | None = None) -> Any:
        """A TensorDict where entries of different shapes are padded with ``padding``.

        Ragged batch dims (``-1``) are padded to their largest size; ``mask_key`` then
        names an entry of the padded batch shape, True where an element is not padding.

        >>> parts = [TensorDict(x=torch.zeros(1)), TensorDict(x=torch.ones(2))]
        >>> stack = TensorDict.lazy_stack(parts)
        >>> stack.to_padded_tensor(padding=-1.0)["x"]
        tensor([[ 0., -1.],
                [ 1.,  1.]])
        """
        if -1 in self.batch_size:
            return padded_parts(self, padding, mask_key)
        if mask_key is not None:
            raise RuntimeError("mask_key should only be provided if the heterogenous dimension "
                               "is part of the batch-size.")
        return self._dense(lambda values: pad_stack(values, self._stack_dim, padding))

    def _dense(self, ragged: Callable[[list[_Tensor]], _Tensor] | None,
               device: Any = NO_DEFAULT) -> Any:
        """A TensorDict of the stacked entries (``ragged`` combines entries of different
        shapes); sub-stacks take the device found at the top."""
        device = self.device if device is NO_DEFAULT else device
        out: dict[str, Any] = {}
        for key in self._keys_str():
            values = list(map(operator.methodcaller("_get_str", key), self.tensordicts))
            first = values[0]
            if isinstance(first, _Tensor):
                if ragged is not None and len({v.shape for v in values}) > 1:
                    out[key] = ragged(values)
                else:
                    out[key] = stack_tensors(key, values, self._stack_dim)
            else:
                entry = self._stack_entry(key, values)
                out[key] = entry if entry._is_non_tensor else entry._dense(ragged, device)
        return classes.TensorDict._from_entries(out, self._batch_size, device, self._names)

