"""``dense_stack_tds``: stack TensorDicts densely level by level, lazily where they differ.

Lazy stacks sharing their stack dim are stacked part by part, so the result stays a lazy
stack over dense parts. At every level, entries that cannot be stacked densely (other
keys, other shapes) become a lazy stack of their own, the rest of the level staying dense.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, dense_stack_tds, lazy_stack
    >>> inner = lazy_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(4))])
    >>> out = dense_stack_tds([TensorDict(lazy=inner), TensorDict(lazy=inner.clone())], dim=0)
    >>> type(out).__name__, out["lazy"].stack_dim
    ('TensorDict', 1)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tensordict import errors
from tensordict._base import TensorDictBase
from tensordict._collection import classes, is_tensor_collection
from tensordict._options import lazy_legacy
from tensordict._stack import StackMismatchError, maybe_dense_stack, stack, stack_lazy

if TYPE_CHECKING:
    from tensordict._lazy import LazyStackedTensorDict


def dense_stack_tds(td_list: Sequence[TensorDictBase] | LazyStackedTensorDict,
                    dim: int | None = None) -> TensorDictBase:
    """Stack TensorDicts (or the parts of a lazy stack) densely wherever possible.

    Unlike ``lazy_stack(td_list).to_tensordict()``, this works when the TensorDicts are
    lazy stacks or hold lazy stacks: those are stacked part by part and stay lazy (the
    result's nested entry is a lazy stack of dense stacks). Top-level keys or shapes
    that differ give a :class:`~tensordict.LazyStackedTensorDict`, as
    :func:`~tensordict.maybe_dense_stack` does; nested ones give a lazy nested entry.

    Args:
        td_list: the TensorDicts to stack, or a lazy stack whose parts are stacked again
            along its ``stack_dim``. Any other TensorDict is returned as it is.
        dim: the dim to stack along; required for a list, ignored for a lazy stack.

    Raises:
        ValueError: ``td_list`` is a list and ``dim`` is None.

    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> inner = lazy_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(4), b=1)])
    >>> outer = lazy_stack([TensorDict(lazy=inner), TensorDict(lazy=inner.clone())])
    >>> dense = dense_stack_tds(outer)  # uses outer.stack_dim
    >>> type(dense).__name__, dense.batch_size, dense["lazy"][:, 1]["b"].shape
    ('TensorDict', torch.Size([2]), torch.Size([2]))
    """
    if isinstance(td_list, classes.LazyStackedTensorDict):
        return _stack_levels(list(td_list.tensordicts), td_list.stack_dim)
    if is_tensor_collection(td_list):
        return td_list
    if dim is None:
        raise ValueError("dense_stack_tds needs dim when given a list of TensorDicts")
    return _stack_levels(list(td_list), dim)


def _stack_levels(tds: list[Any], dim: int) -> Any:
    if not tds or lazy_legacy():
        return maybe_dense_stack(tds, dim)
    ndim = tds[0].batch_dims
    if not -ndim - 1 <= dim <= ndim:
        raise errors.dim_out_of_range(dim, tds[0].batch_size, "torch", inserting=True)
    dim %= ndim + 1
    kinds = {type(td) for td in tds}
    if kinds == {classes.LazyStackedTensorDict}:
        return stack_lazy(tds, dim, _stack_levels)
    if len(kinds) == 1 and kinds != {classes.TensorDict}:  # tensorclasses, non-tensor stacks...
        return maybe_dense_stack(tds, dim)
    keys = list(tds[0]._keys_str())
    if len(kinds) > 1 or any(set(td._keys_str()) != set(keys) for td in tds[1:]):
        return classes.LazyStackedTensorDict.lazy_stack(tds, dim)
    node_keys = [{_is_node(td._get_str(key)) for td in tds} for key in keys]
    if any(len(flags) > 1 for flags in node_keys):  # a TensorDict here, a leaf there
        return classes.LazyStackedTensorDict.lazy_stack(tds, dim)
    nested = [key for key, flags in zip(keys, node_keys) if flags == {True}]
    try:
        flat = stack([td.exclude(*nested) for td in tds], dim)
    except StackMismatchError:
        return classes.LazyStackedTensorDict.lazy_stack(tds, dim)
    entries = {key: flat._get_str(key, None) for key in keys}
    for key in nested:
        entries[key] = _stack_levels([td._get_str(key) for td in tds], dim)
    return classes.TensorDict._from_entries(entries, flat.batch_size, flat.device, flat._names)


def _is_node(value: Any) -> bool:
    """A sub-collection to stack level by level (not non-tensor data or a tensorclass)."""
    return type(value) in (classes.TensorDict, classes.LazyStackedTensorDict)
