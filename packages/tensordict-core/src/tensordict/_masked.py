"""Masked ops over the batch dims: ``masked_fill``, ``masked_select`` and ``where``.

The mask covers the leading batch dims and is broadcast to each leaf through a view
with trailing singleton dims, made once per leaf ndim (:class:`LeafMasks`). A dense
TensorDict of tensors takes a fast path: its leaves are gathered in one walk, each
result is one ``torch.where`` (a fill value becomes a 0-dim tensor per dtype, which
torch selects from faster than ``masked_fill`` writes a Python number), and the result
is rebuilt without the general traversal.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.ones(2, 3), n={"b": torch.ones(2)}, batch_size=[2])
    >>> mask = torch.tensor([True, False])
    >>> td.masked_fill(mask, 0.0)["a"][:, 0], td.where(mask, td * 2)["n", "b"]
    (tensor([0., 1.]), tensor([1., 2.]))
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict._collection import classes
from tensordict._plan import WritePlan, broadcasts_to, check_write
from tensordict._pointwise import dense_leaf_pairs, rebuild
from tensordict._traverse import dense_leaves

_Tensor = torch.Tensor
#: dtypes whose 0-dim fill tensor rejects the values ``masked_fill`` rejects (a half
#: float overflows to inf instead)
_FILL_EXACT = frozenset({
    torch.float32, torch.float64, torch.complex64, torch.complex128, torch.bool,
    torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64})


def check_mask(td: Any, mask: _Tensor, op: str) -> None:
    """Raise RuntimeError, naming the shapes, unless ``mask`` covers (or broadcasts to) the
    leading batch dims of ``td``."""
    batch = td.batch_size
    if mask.ndim > len(batch) or not broadcasts_to(mask.shape, batch[: mask.ndim]):
        raise RuntimeError(f"tensor shape is incompatible with dest shape, got: "
                           f"tensor.shape={mask.shape}, dest={batch}: {op} needs a mask over the "
                           f"leading batch dims of batch size {list(batch)}, got a mask of shape "
                           f"{list(mask.shape)}")


class LeafMasks(dict):
    """``mask`` (over the leading batch dims) by leaf ndim: the view with trailing
    singleton dims that broadcasts against a leaf of that ndim, made once.

    >>> masks = LeafMasks(torch.tensor([True, False]))
    >>> masks[3].shape, masks[3] is masks[3]
    (torch.Size([2, 1, 1]), True)
    """

    __slots__ = ("_mask",)

    def __init__(self, mask: _Tensor) -> None:
        super().__init__()
        self._mask = mask

    def __missing__(self, ndim: int) -> _Tensor:
        mask = self._mask
        view = self[ndim] = mask if ndim == mask.ndim else \
            mask.reshape(*mask.shape, *(1,) * (ndim - mask.ndim))
        return view


def _dense_masked_fill(td: Any, masks: LeafMasks, value: Any) -> Any:
    """``td.masked_fill`` of a dense TensorDict of tensors on one device, with a Python
    number: ``torch.where(mask, fill, leaf)`` per leaf, ``fill`` a 0-dim tensor of the
    leaf's dtype. None when that does not apply."""
    leaves: list[_Tensor] = []
    if td.__class__ is not classes.TensorDict or value.__class__ not in (float, int, bool) \
            or torch.compiler.is_compiling() or not dense_leaves(td._tensordict, leaves):
        return None
    device = td._device
    if device is None:
        if not all(leaf.is_cpu for leaf in leaves):
            return None
        device = torch.device("cpu")
    fills: dict[torch.dtype, _Tensor | None] = {}
    where = torch.where
    filled = []
    for leaf in leaves:
        dtype = leaf.dtype
        fill = fills.get(dtype, ...)
        if fill is ...:  # raises as masked_fill would for a value the dtype cannot hold
            fill = fills[dtype] = torch.full((), value, dtype=dtype, device=device) \
                if dtype in _FILL_EXACT else None
        mask = masks[leaf.ndim]
        filled.append(leaf.masked_fill(mask, value) if fill is None else
                      where(mask, fill, leaf))
    return rebuild(td, iter(filled), td._device)


def _dense_where(td: Any, conditions: LeafMasks, other: Any) -> Any:
    """``td.where(condition, other)`` of a dense TensorDict of tensors, ``other`` one with
    the same keys, a tensor or a number. None when that does not apply, or when torch
    raises (the general path then names the key)."""
    xs: list[_Tensor] = []
    if td.__class__ is not classes.TensorDict or torch.compiler.is_compiling():
        return None
    if other.__class__ is classes.TensorDict:
        ys: list[_Tensor] = []
        if not dense_leaf_pairs(td._tensordict, other._tensordict, xs, ys):
            return None
    elif isinstance(other, (_Tensor, float, int, bool)) and \
            dense_leaves(td._tensordict, xs):
        ys = [other] * len(xs)
    else:
        return None
    where = torch.where
    try:
        picked = [where(conditions[x.ndim], x, y) for x, y in zip(xs, ys)]
    except (RuntimeError, TypeError):
        return None
    return rebuild(td, iter(picked), td._device)


class MaskedOpsMixin:
    """Masked ops: fill, select and pick where a batch mask is True."""

    __slots__ = ()

    def masked_select(self, mask: _Tensor) -> Any:
        """The elements where ``mask`` (over the leading batch dims) is True, flattened.

        >>> td = TensorDict(a=torch.arange(3), batch_size=[3])
        >>> td.masked_select(torch.tensor([True, False, True]))["a"]
        tensor([0, 2])
        """
        return self._index(mask)

    def masked_fill(self, mask: _Tensor, value: float | bool) -> Any:
        """A copy with every leaf set to ``value`` where the batch ``mask`` is True.

        >>> td = TensorDict(a=torch.zeros(2, 2), batch_size=[2])
        >>> td.masked_fill(torch.tensor([True, False]), 1.0)["a"]
        tensor([[1., 1.],
                [0., 0.]])
        """
        check_mask(self, mask, "masked_fill")
        masks = LeafMasks(mask)
        filled = _dense_masked_fill(self, masks, value)
        if filled is not None:
            return filled
        return self._apply_nest(lambda x: x.masked_fill(masks[x.ndim], value),
                                filter_empty=False)

    def masked_fill_(self, mask: _Tensor, value: float | bool) -> Any:
        """In-place :meth:`masked_fill`: the mask and every leaf are checked before the first
        one is filled."""
        self._plan_masked_fill_(mask, value).run()
        return self

    def _plan_masked_fill_(self, mask: _Tensor, value: float | bool) -> WritePlan:
        check_mask(self, mask, "masked_fill_")
        if mask.dtype is not torch.bool:
            raise RuntimeError(f"masked_fill_ needs a boolean mask, got one of dtype {mask.dtype}")
        masks = LeafMasks(mask)
        plan = WritePlan()
        leaves: list[tuple[Any, _Tensor]] = []
        self._apply_nest(lambda key, x: leaves.append((key, x)), named=True, nested_keys=True,
                         filter_empty=False)
        for key, leaf in leaves:
            check_write(leaf, None, key)
            if isinstance(value, complex) and not leaf.is_complex():
                raise RuntimeError(f"masked_fill_ cannot write the complex number {value!r} "
                                   f"into the entry {key!r} of dtype {leaf.dtype}")
            plan.call(leaf.masked_fill_, masks[leaf.ndim], value)
        return plan

    def where(self, condition: _Tensor, other: Any, *, out: Any = None,
              pad: Any = None, update_batch_size: bool = False) -> Any:
        """``torch.where(condition, leaf, other_leaf)`` for each leaf; ``condition`` is
        batch-shaped (or leading dims) and broadcast to each leaf.

        ``pad`` stands in for the leaves ``other`` lacks; ``out`` receives the result as
        new entries (its tensors are not written in place, as upstream; keys it lacks are
        added; ``update_batch_size`` as in :meth:`update`).

        >>> td = TensorDict(a=torch.ones(2), batch_size=[2])
        >>> td.where(torch.tensor([True, False]), 0)["a"]
        tensor([1., 0.])
        """
        check_mask(self, condition, "where")
        conditions = LeafMasks(condition)
        if out is None and pad is None:
            picked = _dense_where(self, conditions, other)
            if picked is not None:
                return picked

        def fn(x: _Tensor, *y: Any) -> _Tensor:
            cond = conditions[x.ndim]
            if not y:
                return torch.where(cond, x, other)
            theirs = y[0]
            if not isinstance(theirs, _Tensor):  # ``pad``: takes the leaf's dtype
                theirs = torch.as_tensor(theirs, dtype=x.dtype, device=x.device)
            return torch.where(cond, x, theirs)

        others = (other,) if hasattr(other, "_apply_nest") else ()
        if others and self.__class__ is other.__class__ is classes.TensorDict and \
                dense_leaf_pairs(self._tensordict, other._tensordict, [], []):
            others_only = False  # the same keys, tensors only: nothing to add
        else:
            others_only = bool(others)
        if others_only:  # the entries only ``other`` has need ``pad`` (checked before any work)
            own = set(self.keys(True, True))
            own_objects = dict(self.non_tensor_items(True))
            theirs_only = [(key, value) for key, value in other.items(True, True)
                           if key not in own]
            objects_only = [(key, value) for key, value in other.non_tensor_items(True)
                            if key not in own_objects]
            if pad is None and (theirs_only or objects_only):
                key = (theirs_only or objects_only)[0][0]
                raise KeyError(f"Key {key} not found and no pad value provided.")
        kwargs = {} if pad is None else {"default": pad}
        result = self._apply_nest(fn, *others, filter_empty=False, **kwargs)
        if others_only:
            for key, value in theirs_only:  # ``pad`` where condition
                cond = conditions[value.ndim]
                mine = torch.as_tensor(pad, dtype=value.dtype, device=value.device)
                result.set(key, torch.where(cond, mine, value))
            for key, value in objects_only:  # kept as they are, as upstream
                result.set(key, value)
            # each non-tensor object of both comes from self or other, as the leaves do
            for key, mine in own_objects.items():
                theirs = other.get(key, None)
                if getattr(theirs, "_is_non_tensor", False):
                    result.set(key, classes.NonTensorStack._where_objects(condition, mine,
                                                                          theirs))
        if out is not None:
            return out.update(result, update_batch_size=update_batch_size)
        return result
