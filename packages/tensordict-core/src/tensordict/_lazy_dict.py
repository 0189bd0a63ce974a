"""The dictionary and list side of a lazy stack: growing it, operations handed to each
part, and the repr.

Selecting, renaming, flattening or updating keys of a lazy stack does the same to every
part, so the result is a lazy stack again and nothing is stacked; ``insert``, ``append``
and ``extend`` add parts.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> a = TensorDict(x=torch.zeros(2), y=torch.zeros(3))
    >>> stack = lazy_stack([a, TensorDict(x=torch.ones(2), y=torch.ones(4))])
    >>> stack.select("x").tensordicts[0]
    TensorDict(batch_size=[], fields={x: f32[2]})
    >>> _ = stack.rename_key_("y", "z")
    >>> sorted(a.keys())
    ['x', 'z']
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import (
    NO_DEFAULT,
    acts_as_tensordict,
    classes,
    is_tensor_collection,
    is_tensorclass,
)
from tensordict._last_op import made_by
from tensordict._masked import check_mask
from tensordict._nested_key import NestedKey
from tensordict._options import get_printoptions
from tensordict._plan import WritePlan
from tensordict._repr import (
    Block,
    Entry,
    _compact_value,
    _dtype_abbreviation,
    _indent,
    _sizes,
    _verbose_entry,
    block_text,
    compact_entries,
    compact_head,
    compact_layout,
    compact_repr,
    fields_block,
    sorted_keys,
    verbose_layout,
    verbose_tail,
)
from tensordict._restructure import KEY_SEPARATOR, _key_tree
from tensordict._update_keys import KeyPaths


class LazyDictMixin:
    """List-like growth, and dictionary operations done part by part."""

    __slots__ = ()

    def _each(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """A lazy stack of ``part.<method>(*args, **kwargs)`` for every part."""
        results = [getattr(td, method)(*args, **kwargs) for td in self.tensordicts]
        return type(self)._from_entries(results, self.stack_dim, self._stack_dim_name)

    def _each_(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``part.<method>(*args, **kwargs)`` once on every distinct part (a part
        stacked several times is one TensorDict); returns self."""
        for td in self._distinct_parts():
            getattr(td, method)(*args, **kwargs)
        return self

    def _distinct_parts(self) -> list[Any]:
        """The parts, each TensorDict once (``lazy_stack([td, td])`` holds one twice)."""
        return list({id(td): td for td in self.tensordicts}.values())

    # -- growing the stack ------------------------------------------------------------------
    def insert(self, index: int, tensordict: Any) -> None:
        """Insert a part at ``index`` of the stack dim.

        >>> stack = TensorDict.lazy_stack([TensorDict(x=torch.zeros(()))])
        >>> stack.insert(0, TensorDict(x=torch.ones(())))
        >>> stack["x"]
        tensor([1., 0.])
        """
        if self._is_locked:
            raise errors.locked("add a part to a")
        part_size = self._part_size()
        if not is_tensor_collection(tensordict) or tensordict.batch_size != part_size:
            raise ValueError(
                f"Batch sizes in tensordicts differs: stack has batch_size={part_size}, "
                f"new_value has batch_size={getattr(tensordict, 'batch_size', None)}."
            )
        device = self.device
        if device is not None and tensordict.device != device:
            tensordict = tensordict.to(device)
        self.tensordicts.insert(index, tensordict)
        if len(self.tensordicts) == 1:  # the first part sets the device
            self._device = tensordict.device
        sd = self._stack_dim
        self._batch_size = part_size[:sd] + torch.Size([len(self.tensordicts)]) + part_size[sd:]

    def append(self, tensordict: Any) -> None:
        """Add a part at the end of the stack dim.

        >>> stack = TensorDict.lazy_stack([TensorDict(x=torch.zeros(()))])
        >>> stack.append(TensorDict(x=torch.ones(())))
        >>> stack.batch_size
        torch.Size([2])
        """
        self.insert(len(self.tensordicts), tensordict)

    def extend(self, tensordicts: Sequence[Any] | Any) -> None:
        """Add parts at the end of the stack dim (a list or a collection unbound along it).

        >>> stack = TensorDict.lazy_stack([TensorDict(x=torch.zeros(()))])
        >>> stack.extend(TensorDict(x=torch.ones(2), batch_size=[2]))
        >>> stack["x"]
        tensor([0., 1., 1.])
        """
        if is_tensor_collection(tensordicts):
            tensordicts = tensordicts.unbind(self._stack_dim)
        for tensordict in tensordicts:
            self.append(tensordict)

    # -- keys, part by part ---------------------------------------------------------------
    def __contains__(self, key: object) -> bool:
        if key.__class__ is str:
            return self._has_str(key)
        if isinstance(key, tuple):
            return key in self.keys(include_nested=True)
        return super().__contains__(key)

    def _selected(self, tree: dict[str, Any], strict: bool, prefix: tuple[str, ...]) -> Any:
        return self._each("_selected", tree, strict, prefix)

    def _excluded(self, tree: dict[str, Any]) -> Any:
        return self._each("_excluded", tree)

    def select(self, *keys: NestedKey, inplace: bool = False, strict: bool = True) -> Any:
        """A lazy stack of the parts with only ``keys``.

        >>> stack = TensorDict.lazy_stack([TensorDict(a=torch.zeros(()), b=torch.zeros(()))])
        >>> list(stack.select("a").keys())
        ['a']
        """
        if inplace:
            return self._each_("select", *keys, inplace=True, strict=strict)
        return self._selected(_key_tree(keys, narrow=True), strict, ())

    def exclude(self, *keys: NestedKey, inplace: bool = False) -> Any:
        """A lazy stack of the parts without ``keys``."""
        if inplace:
            return self._exclude_in_place(_key_tree(keys))
        return self._each("exclude", *keys)

    def _exclusions(self, tree: dict[str, Any], found: list[tuple[Any, str]]) -> None:
        start = len(found)
        for td in self.tensordicts:
            td._exclusions(tree, found)
        if len(found) > start and self.is_locked:
            raise errors.locked("delete an entry of a")

    def flatten_keys(self, separator: str = KEY_SEPARATOR, inplace: bool = False,
                     is_leaf: Any = None) -> Any:
        """Nested entries of every part as top-level keys joined with ``separator``."""
        if inplace:
            return self._each_("flatten_keys", separator, inplace=True, is_leaf=is_leaf)
        out = self._each("flatten_keys", separator, is_leaf=is_leaf)
        return made_by(out, "flatten_keys", (separator,), None, self)

    def unflatten_keys(self, separator: str = KEY_SEPARATOR, inplace: bool = False) -> Any:
        """Keys of every part containing ``separator`` split into nested entries."""
        if inplace:
            return self._each_("unflatten_keys", separator, inplace=True)
        return made_by(self._each("unflatten_keys", separator), "unflatten_keys",
                       (separator,), None, self)

    def empty(self, recurse: bool = False, *, batch_size: Any = None, device: Any = NO_DEFAULT,
              names: Any = None) -> Any:
        """A lazy stack of empty parts (a TensorDict when another ``batch_size`` is given).

        >>> stack = TensorDict.lazy_stack([TensorDict(x=torch.zeros(2), batch_size=[2])] * 3)
        >>> type(stack.empty(batch_size=[3, 2])).__name__, stack.empty(batch_size=[6]).shape
        ('LazyStackedTensorDict', torch.Size([6]))
        """
        if (batch_size is not None and _given(batch_size) != self.batch_size) or \
                not self.tensordicts:
            return super().empty(recurse, batch_size=batch_size, device=device, names=names)
        return self._each("empty", recurse, device=device)

    def rename_key_(self, old_key: NestedKey, new_key: NestedKey, safe: bool = False) -> Any:
        """Rename ``old_key`` to ``new_key`` in every part; returns self."""
        if self.is_locked:
            raise errors.locked("rename an entry of a")
        parts = self._distinct_parts()
        for td in parts:  # a part that cannot rename raises first, before any renames
            if old_key not in td or (safe and new_key in td):
                td.rename_key_(old_key, new_key, safe=safe)
        for td in parts:
            td.rename_key_(old_key, new_key, safe=safe)
        return self

    def filter_empty_(self) -> Any:
        """Drop, part by part, the sub-TensorDicts that hold no leaves (a sub-stack empty
        in one part only keeps its leaves in the others); returns self."""
        return self._each_("filter_empty_")

    def clear_device_(self) -> Any:
        """Forget the device of the stack and of its parts; returns self."""
        self._device = None
        return self._each_("clear_device_")

    def _plan_update_(self, source: Any, paths: KeyPaths | None,
                      clone: bool, non_blocking: bool) -> WritePlan:
        """:meth:`update_`: a lazy stack along the same dim writes part by part (its parts
        may differ in shape), any other input leaf by leaf."""
        if not (isinstance(source, classes.LazyStackedTensorDict)
                and source.stack_dim == self.stack_dim
                and source.batch_size == self.batch_size):
            return super()._plan_update_(source, paths, clone, non_blocking)
        plan = WritePlan()
        for td, piece in zip(self.tensordicts, source.tensordicts):
            plan.extend(td._plan_update_(piece, paths, clone, non_blocking))
        return plan

    def get_nestedtensor(self, key: NestedKey, default: Any = NO_DEFAULT, *,
                         layout: torch.layout | None = None) -> Any:
        """``get(key, as_nested_tensor=True, layout=layout)`` (the older spelling), whose
        layout defaults to ``torch.strided`` (``get``'s to ``torch.jagged``), as upstream.

        >>> stack = TensorDict.lazy_stack([TensorDict(x=torch.zeros(1)),
        ...                                TensorDict(x=torch.ones(2))])
        >>> stack.get_nestedtensor("x").layout, stack.get_nestedtensor("y", None)
        (torch.strided, None)
        """
        if default is not NO_DEFAULT and key not in self.keys(include_nested=True):
            return default
        return self.get(key, as_nested_tensor=True, layout=layout or torch.strided)

    def valid_keys(self, *args: Any, **kwargs: Any) -> Any:
        """The keys shared by every part (same arguments as :meth:`keys`)."""
        return self.keys(*args, **kwargs)

    def to_lazystack(self, dim: int = 0) -> Any:
        """The stack itself along its stack dim; else a lazy stack along ``dim`` of its
        slices (each a lazy stack of slices of the parts).

        >>> stack = TensorDict.lazy_stack([TensorDict(x=torch.zeros(3), batch_size=[3])] * 2)
        >>> stack.to_lazystack(1).batch_size, stack.to_lazystack(0) is stack
        (torch.Size([2, 3]), True)
        """
        ndim = len(self.batch_size)
        if not -ndim <= dim < ndim:
            raise IndexError(f"Incompatible dim {dim} for tensordict with batch dims {ndim}.")
        if dim % ndim == self.stack_dim:
            return self
        return type(self).lazy_stack(list(self.unbind(dim)), dim % ndim)

    # -- comparisons and truth, part by part (entries may differ in shape) -----------------
    def _part_op(self, op: Any, other: Any) -> Any:
        """A lazy stack of ``op(part, other's piece)``, or NotImplemented when ``other`` is
        not a number or a collection of this batch size (cut along the stack dim, as
        upstream: entries that differ in shape across parts compare part by part)."""
        if isinstance(other, (int, float, bool)):
            pieces = [other] * len(self.tensordicts)
        elif isinstance(other, classes.LazyStackedTensorDict) and \
                other.stack_dim == self.stack_dim and other.batch_size == self.batch_size:
            pieces = other.tensordicts
        elif acts_as_tensordict(other) and other.batch_size == self.batch_size \
                and not getattr(other, "_is_non_tensor", False):
            pieces = other.unbind(self.stack_dim)
        else:
            return NotImplemented
        return type(self)._from_entries([op(td, piece) for td, piece in
                                       zip(self.tensordicts, pieces)], self.stack_dim)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        out = self._part_op(operator.eq, other)
        return super().__eq__(other) if out is NotImplemented else out

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        out = self._part_op(operator.ne, other)
        return super().__ne__(other) if out is NotImplemented else out

    def all(self, dim: int | None = None) -> Any:
        """True if every element of every leaf of every part is true (with ``dim``: as
        ``TensorDict.all``)."""
        if dim is None:
            return all(td.all() for td in self.tensordicts)
        return super().all(dim)

    def any(self, dim: int | None = None) -> Any:
        """True if any element of any leaf of any part is true (with ``dim``: as
        ``TensorDict.any``)."""
        if dim is None:
            return any(td.any() for td in self.tensordicts)
        return super().any(dim)

    def filter_non_tensor_data(self) -> Any:
        """A lazy stack of the parts without their non-tensor entries."""
        return self._each("filter_non_tensor_data")

    # -- batch-shaped masks, cut along the stack dim ---------------------------------------
    def _split_mask(self, mask: torch.Tensor) -> list[torch.Tensor]:
        """A batch-shaped (or leading-dims) mask, one piece per part."""
        if mask.ndim > self._stack_dim:
            return list(mask.unbind(self._stack_dim))
        return [mask] * len(self.tensordicts)

    def masked_fill(self, mask: torch.Tensor, value: float | bool) -> Any:
        """A copy with every leaf set to ``value`` where the batch ``mask`` is True."""
        check_mask(self, mask, "masked_fill")
        pieces = [td.masked_fill(m, value)
                  for td, m in zip(self.tensordicts, self._split_mask(mask))]
        return type(self)._from_entries(pieces, self._stack_dim, self._stack_dim_name)

    def _plan_masked_fill_(self, mask: torch.Tensor, value: float | bool) -> WritePlan:
        """:meth:`masked_fill_` in the parts, every part checked before the first fill."""
        check_mask(self, mask, "masked_fill_")
        plan = WritePlan()
        for td, m in zip(self.tensordicts, self._split_mask(mask)):
            plan.extend(td._plan_masked_fill_(m, value))
        return plan

    def where(self, condition: torch.Tensor, other: Any, *, out: Any = None,
              pad: Any = None, update_batch_size: bool = False) -> Any:
        """``torch.where(condition, leaf, other_leaf)``, part by part (``out`` is updated
        with the result, ``update_batch_size`` as in :meth:`update`)."""
        check_mask(self, condition, "where")
        collection = is_tensor_collection(other)
        others = self._split_other(other) if collection else [other] * len(self.tensordicts)
        pieces = [_pick(c, td, o, pad) if collection and c.ndim == 0 else
                  td.where(c, o, pad=pad) for td, c, o in
                  zip(self.tensordicts, self._split_mask(condition), others)]
        result = type(self)._from_entries(pieces, self._stack_dim, self._stack_dim_name)
        if out is None:
            return result
        return out.update(result, update_batch_size=update_batch_size)

    def _compact_nested_block(self, batch_ndim: int) -> Block:
        """How the stack shows as an entry of a TensorDict's compact repr."""
        extra = self.batch_size[batch_ndim:]
        return f"{type(self).__name__}{_sizes(extra) if extra else ''}", _entries(self)


def _pick(condition: torch.Tensor, mine: Any, theirs: Any, pad: Any) -> Any:
    """``where`` of one element of a lazy stack (a 0-dim part): every entry of ``mine``
    (``condition`` True) or of ``theirs``, copied as it is, so that an element of another
    shape replaces it whole (as upstream); with ``pad``, the entries only the other side
    holds are added, filled with it."""
    chosen, dropped = (mine, theirs) if bool(condition) else (theirs, mine)
    out = chosen.clone()
    if pad is not None:
        held = set(out.keys(True, True))
        for key, leaf in dropped.items(True, True):
            if key not in held:
                out.set(key, torch.full_like(leaf, pad))
    return out


def _given(batch_size: Any) -> torch.Size:
    """A batch size given as an int, a sequence or a torch.Size, as a torch.Size."""
    return torch.Size([batch_size] if isinstance(batch_size, int) else batch_size)


# -- repr ------------------------------------------------------------------------------------
def _leaf_value(stack: Any, key: str, ndim: int) -> tuple[str, Block | None]:
    """The compact text (and block, when nested) of one entry, read from the parts
    (nothing is stacked)."""
    sample = stack._peek_str(key)
    if isinstance(sample, torch.Tensor):
        return _dtype_abbreviation(sample.dtype) + _sizes(stack.get_item_shape(key)[ndim:]), None
    if getattr(sample, "_is_non_tensor", False):
        kinds = {type(getattr(td._peek_str(key), "data", None)) for td in stack.tensordicts}
        return kinds.pop().__name__ if len(kinds) == 1 else "NonTensorStack", None
    if not is_tensor_collection(sample):  # a placeholder (pytree's, in a spec's printout)
        return repr(sample), None
    value = stack._get_str(key)
    if is_tensorclass(value):
        return _compact_value(value, ndim, stack.device)
    block = ("", _entries(value))
    return block_text(block), block


def _entries(stack: Any) -> list[Entry]:
    ndim = len(stack.batch_size)
    return [(key, *_leaf_value(stack, key, ndim)) for key in sorted_keys(stack._keys_str())]


def _part_entry(index: int, td: Any, keys: list[str]) -> Entry:
    """The ``exclusive_fields`` entry of one part: its ``keys`` (a TensorDict or a lazy
    stack)."""
    selected = td.select(*keys)
    block = ("", _entries(selected) if hasattr(selected, "tensordicts")
             else compact_entries(selected))
    return str(index), block_text(block), block


def _exclusive(stack: Any) -> dict[int, list[str]]:
    common = set(stack._keys_str())
    out: dict[int, list[str]] = {}
    for i, td in enumerate(stack.tensordicts):
        extra = sorted_keys([key for key in td._keys_str() if key not in common])
        if extra:
            out[i] = extra
    return out


def _compact(stack: Any) -> str:
    if not stack.tensordicts:
        return compact_repr(stack)
    head = compact_head(type(stack).__name__, stack.batch_size, stack.device,
                        f"stack_dim={stack.stack_dim}")
    groups = [("fields", _entries(stack))]
    exclusive = [_part_entry(i, stack.tensordicts[i], keys)
                 for i, keys in _exclusive(stack).items()]
    if exclusive:
        groups.append(("exclusive_fields", exclusive))
    return compact_layout(head, groups)


#: the print options whose text needs the stacked values, not one part's
_FROM_VALUES = ("plain", "show_storage_size", "show_is_view", "show_is_contiguous")


def _verbose(stack: Any) -> str:
    options = get_printoptions()
    stacked = any(options[name] for name in _FROM_VALUES)
    entries = []
    for key in sorted_keys(stack._keys_str()):
        sample = stack._peek_str(key)
        if not isinstance(sample, torch.Tensor):
            text = repr(stack._get_str(key))
        elif stacked:
            text = _verbose_entry(stack._get_str(key))
        else:
            text = _verbose_entry(sample, stack.get_item_shape(key))
        entries.append(f"{key}: {text}")
    exclusive = []
    for i, keys in _exclusive(stack).items():
        td = stack.tensordicts[i]
        lines = ",\n".join([f"{key}: {_verbose_entry(td._get_str(key))}" for key in keys])
        exclusive.append(f"{i} ->\n    " + _indent(lines))
    return verbose_layout(type(stack).__name__, [
        fields_block("fields", entries), fields_block("exclusive_fields", exclusive),
        *verbose_tail(stack.batch_size, stack.device, lambda: False),
        f"stack_dim={stack.stack_dim}"])


def lazy_repr(stack: Any) -> str:
    """The repr of a lazy stack under the current print options (``-1`` at ragged dims)."""
    if get_printoptions()["compact"]:
        return _compact(stack)
    return _verbose(stack)
