"""LazyStackedTensorDict: TensorDicts stacked along a batch dim without copying them.

The parts stay as they are: reading a key stacks it on demand, writing a key splits the
value and writes each piece into its part, and indexing along the stack dim returns the
parts themselves. So writes reach the original TensorDicts, and parts may hold entries of
different shapes (``-1`` marks the ragged dims) or keys the others lack.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> a, b = TensorDict(x=torch.zeros(3)), TensorDict(x=torch.zeros(5), y=torch.ones(()))
    >>> stack = lazy_stack([a, b])
    >>> stack
    LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={
        x: f32[-1]}, exclusive_fields={1: {y: f32[]}})
    >>> stack[1] is b, stack.get("x", as_list=True)[1].shape
    (True, torch.Size([5]))
    >>> stack[0]["x"] += 1
    >>> a["x"]
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterator, Sequence
from numbers import Number
from typing import Any

import torch

from tensordict import errors
from tensordict._base import TensorDictBase
from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection, register_class
from tensordict._lazy_dict import LazyDictMixin, lazy_repr
from tensordict._lazy_index import LazyIndexMixin
from tensordict._lazy_ops import (
    DensifyMixin,
    common_shape,
    nested_stack,
    pad_stack,
    restructure,
    stack_tensors,
)
from tensordict._lazy_shape import LazyShapeMixin
from tensordict._lazy_values import nested_values, padded_values
from tensordict._lazy_write_back import LazyWriteBackMixin
from tensordict._map import MapMixin
from tensordict._metadata import LOCKED_BY_PARENT
from tensordict._nested_key import NestedKey, key_to_path
from tensordict._nontensor import merged_non_tensor, unwrap_non_tensor
from tensordict._options import list_to_stack
from tensordict._plan import WritePlan, broadcasts_to
from tensordict._ragged import ragged_size, stacked_size
from tensordict._serialization import allow_weights_only_load
from tensordict._shapes import as_device, as_size, indexed_batch_size
from tensordict._td import TensorDict, _merge_writes
from tensordict._update_keys import KeyPaths

_Tensor = torch.Tensor
_BATCH_SIZE, _DEVICE = operator.attrgetter("batch_size"), operator.attrgetter("device")
_UNKNOWN = False  # a device not looked up yet (neither a device nor None; pickles as is)
_NAMES: Any = object()  # the key of the names in a locked stack's ``_frozen`` reads


# The lazy overrides, before the methods every TensorDict shares (TensorDictBase's mixins).
@register_class
class LazyStackedTensorDict(LazyIndexMixin, LazyShapeMixin, LazyDictMixin, DensifyMixin,
                            MapMixin, LazyWriteBackMixin, TensorDictBase):
    """A stack of TensorDicts along ``stack_dim`` that keeps the TensorDicts.

    Args:
        *tensordicts: the parts, all with the same number of batch dims. Where their
            batch sizes differ, the stack's batch size has ``-1`` (see
            :mod:`tensordict._ragged`).
        stack_dim: the batch dim along which they are stacked.
        batch_size: checked against the parts; required when there are none.
        device: if given, parts on another device are moved there.
        names: the dim names (the stack dim's name included).
        stack_dim_name: the name of the stack dim alone.
        strict_shape: accepted for compatibility.
        hook_out: called on every stacked tensor that ``get`` (or ``stack[key]``) returns;
            its result is returned instead.
        hook_in: called on every tensor written with ``set`` (or ``stack[key] = value``)
            before it is split into the parts.
        Neither hook is kept by the stacks that methods return (clones, indexes...).

    >>> stack = LazyStackedTensorDict(TensorDict(a=torch.zeros(2), batch_size=[2]),
    ...                               TensorDict(a=torch.ones(2), batch_size=[2]), stack_dim=1)
    >>> stack.batch_size, stack["a"]
    (torch.Size([2, 2]), tensor([[0., 1.],
            [0., 1.]]))
    """

    __slots__ = ("tensordicts", "_stack_dim", "_stack_dim_name", "_batch_size", "_device",
                 "_is_locked", "_frozen", "_exit_stack", "hook_out", "hook_in", "__weakref__")

    def __init__(
        self,
        *tensordicts: Any,
        stack_dim: int = 0,
        batch_size: Sequence[int] | None = None,
        device: Any = None,
        names: Sequence[str | None] | None = None,
        stack_dim_name: str | None = None,
        strict_shape: bool = False,
        hook_out: Any = None,
        hook_in: Any = None,
    ) -> None:
        parts = list(tensordicts)
        if parts:
            full = stacked_size(parts, stack_dim)
            stack_dim = stack_dim % len(full)
            if batch_size is not None and _given_size(batch_size) != full:
                raise RuntimeError(f"batch_size {as_size(batch_size)} does not match the "
                                   f"stacked batch size {full} of the parts")
        elif batch_size is None:
            raise ValueError("a LazyStackedTensorDict without parts needs a batch_size")
        else:
            full = as_size(batch_size)
            stack_dim = stack_dim % max(len(full), 1)
            if not full or full[stack_dim]:
                raise RuntimeError(f"batch_size {full} must have a 0 at the stack dim "
                                   f"{stack_dim} when no part is given")
        device = as_device(device)
        if device is not None:
            parts = [td if td.device == device else td.to(device) for td in parts]
        self._init(parts, stack_dim, full, stack_dim_name)
        if device is not None:
            self._device = device
        if names is not None:
            self.names = names
        self.hook_out = hook_out
        self.hook_in = hook_in

    def _init(self, parts: list[Any], stack_dim: int, batch_size: torch.Size,
              stack_dim_name: str | None) -> None:
        self.tensordicts = parts
        self._stack_dim = stack_dim
        self._stack_dim_name = stack_dim_name
        self._batch_size = batch_size
        self._device: Any = _UNKNOWN  # found on first use (see the device property)
        self._is_locked = False
        # while locked: the nested stacks and the names as first read, kept until unlocked
        # (upstream's cache): a nested stack is the same object on each read, so metadata
        # set on it stays; a part's metadata set alone is not seen
        self._frozen: dict[Any, Any] | None = None
        self._exit_stack: list[Any] | None = None
        self.hook_out: Callable[[_Tensor], _Tensor] | None = None
        self.hook_in: Callable[[_Tensor], _Tensor] | None = None

    @classmethod
    def _from_entries(cls, parts: list[Any], stack_dim: int,
                    stack_dim_name: str | None = None) -> LazyStackedTensorDict:
        """Stack ``parts`` (of the same number of batch dims) without checks."""
        self = object.__new__(cls)
        sizes = list(map(_BATCH_SIZE, parts))
        size = sizes[0]
        if sizes.count(size) != len(sizes):
            size = ragged_size(sizes)
        full = torch.Size([len(parts), *size]) if not stack_dim else \
            size[:stack_dim] + torch.Size([len(parts)]) + size[stack_dim:]
        self._init(parts, stack_dim, full, stack_dim_name)
        return self

    # -- building stacks ---------------------------------------------------------------------
    @classmethod
    def lazy_stack(cls, items: Sequence[Any], dim: int = 0, *, out: Any = None,
                   device: Any = None, stack_dim_name: str | None = None,
                   strict_shape: bool = False, as_list: bool = False,
                   as_padded_tensor: bool = False, as_nested_tensor: bool = False,
                   padding_side: str = "right", layout: torch.layout | None = None,
                   padding_value: float = 0.0) -> Any:
        """Stack ``items`` lazily along ``dim``: the result keeps them and writes to them.

        Tensors are stacked (padded or nested on request); non-tensor data give a
        ``NonTensorStack``.

        >>> a, b = TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(2))
        >>> stack = LazyStackedTensorDict.lazy_stack([a, b])
        >>> stack["x"] = torch.full((2, 2), 7.0)
        >>> a["x"]
        tensor([7., 7.])
        """
        items = list(items)
        if not items:
            raise RuntimeError("lazy_stack needs at least one element to stack")
        kinds = set(map(type, items))
        if len(kinds) == 1 and TensorDict in kinds and device is None and out is None:
            ndim = len(items[0]._batch_size)  # TensorDicts only (the common case): stack them
            if -ndim - 1 <= dim <= ndim:
                return LazyStackedTensorDict._from_entries(items, dim % (ndim + 1),
                                                           stack_dim_name)
        if len(kinds) == 1 and getattr(next(iter(kinds)), "_is_tensorclass", False):
            # a tensorclass wrapping the lazy stack of its instances' TensorDicts (a
            # rebuild of existing instances, as upstream's private constructor says)
            parts = [item._tensordict for item in items]
            return next(iter(kinds))._from_tensordict(cls.lazy_stack(
                parts, dim, out=out, device=device, stack_dim_name=stack_dim_name,
                strict_shape=strict_shape))
        if all(issubclass(kind, _Tensor) for kind in kinds):
            if as_list:
                return items
            if as_padded_tensor:
                return pad_stack(items, dim, padding_value, padding_side)
            if as_nested_tensor:
                return nested_stack(items, dim, layout)
            return torch.stack(items, dim, out=out)
        if not all(is_tensor_collection(kind) for kind in kinds):
            names = sorted(kind.__name__ for kind in kinds)
            raise TypeError(f"lazy_stack needs tensors or tensor collections, got {names}")
        if all(getattr(kind, "_is_non_tensor", False) for kind in kinds):
            cls = classes.NonTensorStack
        else:
            cls = LazyStackedTensorDict
        stack = cls(*items, stack_dim=dim, device=device, stack_dim_name=stack_dim_name)
        if out is not None:
            out.update_(stack)
            return out
        return stack

    # -- metadata ------------------------------------------------------------------------------
    @property
    def stack_dim(self) -> int:
        """The batch dim along which the parts are stacked."""
        return self._stack_dim

    @property
    def batch_size(self) -> torch.Size:
        """The parts' batch size with the number of parts inserted at ``stack_dim``."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Sequence[int]) -> None:
        """Only the batch size the stack has (as upstream): a lazy stack's batch size
        follows its parts'; change those, or call ``to_tensordict()`` first."""
        new = as_size(value)
        if new != self._batch_size:
            raise RuntimeError(
                f"Received a new batch size {list(new)} with an existing batch_size "
                f"{self._batch_size} in a lazy TD. Modifying the batch size of a lazy "
                "representation of a tensordict is not permitted. Consider instantiating the "
                "tensordict first by calling `td = td.to_tensordict()` before resetting the "
                "batch size.")

    def _resize(self, value: Sequence[int]) -> None:
        """Give every part the new batch size less the stack dim (what a TensorDict's
        batch-size change asks of a sub-collection it widens; the public setter refuses)."""
        new = as_size(value)
        if -1 in self._batch_size and new != self._batch_size:
            raise RuntimeError(
                f"Received a new batch size {list(new)} with an existing batch_size "
                f"{self._batch_size} in a lazy TD. Modifying the batch size of a lazy stack of "
                "parts of different batch sizes is not permitted.")
        sd = self._stack_dim
        if len(new) <= sd or new[sd] != len(self.tensordicts):
            raise RuntimeError(f"cannot set the batch size of a lazy stack of "
                               f"{len(self.tensordicts)} parts along dim {sd} to {new}")
        for td in self.tensordicts:
            td.batch_size = new[:sd] + new[sd + 1:]
        self._batch_size = new

    @property
    def device(self) -> torch.device | None:
        """The device shared by every part, or None."""
        if self._device is _UNKNOWN:
            self._device = _common_device(self.tensordicts)
        return self._device

    @device.setter
    def device(self, value: Any) -> None:
        raise RuntimeError("set the device with `td.to(device)` or `td.clear_device_()`")

    @property
    def names(self) -> list[str | None]:
        """The parts' dim names with ``stack_dim_name`` at the stack dim; ValueError where
        the parts' names differ (a part renamed alone, as upstream). A locked stack keeps
        the names it first read (as upstream's)."""
        frozen = self._frozen_reads()
        if frozen is not None:
            if _NAMES not in frozen:
                frozen[_NAMES] = self._parts_names()
            return list(frozen[_NAMES])
        return self._parts_names()

    def _parts_names(self) -> list[str | None]:
        parts = self.tensordicts
        if parts:
            first, ndim = parts[0]._names, parts[0].batch_dims
            for part in parts[1:]:
                if part._names != first or part.batch_dims != ndim:
                    raise ValueError(f"Not all dim names match, got {parts[0].names} and "
                                     f"{part.names}.")
            names = list(parts[0].names)
        else:
            names = [None] * (len(self._batch_size) - 1)
        names.insert(self._stack_dim, self._stack_dim_name)
        return names

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        if value is None:
            value = [None] * len(self._batch_size)
        value = list(value)
        if len(value) != len(self._batch_size):
            raise errors.names_mismatch(value, len(self._batch_size))
        stack_name = value.pop(self._stack_dim)
        for td in self.tensordicts:
            td.names = value if any(n is not None for n in value) else None
        self._stack_dim_name = stack_name
        self._frozen = None  # (its nested stacks are renamed too: read them again)

    @property
    def _names(self) -> tuple[str | None, ...] | None:
        names = self.names
        return tuple(names) if any(n is not None for n in names) else None

    @property
    def is_locked(self) -> bool:
        """Locked, or every part is (a view of the stack locked them all, as upstream)."""
        if self._is_locked:
            return True
        parts = self.tensordicts
        return bool(parts) and all(part.is_locked for part in parts)

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self.lock_() if value else self.unlock_()

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        self._frozen = None
        for td in self.tensordicts:
            td._propagate_lock(LOCKED_BY_PARENT if locked else False)

    def _part_size(self) -> torch.Size:
        sd = self._stack_dim
        return self._batch_size[:sd] + self._batch_size[sd + 1:]

    # -- reading -------------------------------------------------------------------------------
    def _keys_str(self) -> Iterator[str]:
        parts = self.tensordicts
        if not parts:
            return iter(())
        if len(parts) == 1:
            return parts[0]._keys_str()
        if parts[0].__class__ is TensorDict:  # TensorDicts of the same keys: the first's
            keys = parts[0]._tensordict.keys()
            for td in parts:
                if td.__class__ is not TensorDict or td._tensordict.keys() != keys:
                    break
            else:
                return iter(list(keys))
        first = list(parts[0]._keys_str())
        common = set(first).intersection(*[td._keys_str() for td in parts[1:]])
        return iter(first) if len(common) == len(first) else (k for k in first if k in common)

    def _frozen_reads(self) -> dict[Any, Any] | None:
        """The reads a locked stack keeps (see ``_init``); None while unlocked."""
        if not self._is_locked:
            return None
        if self._frozen is None:
            self._frozen = {}
        return self._frozen

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        frozen = self._frozen
        if frozen is not None and key in frozen:  # a nested stack of a locked stack
            return frozen[key]
        values = []
        for td in self.tensordicts:  # a TensorDict's dict read directly (hot)
            value = td._tensordict.get(key) if td.__class__ is TensorDict else \
                td._get_str(key, None)
            if value is None:  # (no entry is None)
                if default is not NO_DEFAULT:
                    return default
                raise errors.missing_key(key, list(self._keys_str()))
            values.append(value)
        if not values:
            if default is not NO_DEFAULT:
                return default
            raise errors.missing_key(key, [])
        return self._stack_entry(key, values)

    def _has_str(self, key: str) -> bool:
        """Whether every part holds ``key`` (a key of the stack), without listing keys."""
        parts = self.tensordicts
        for td in parts:  # a TensorDict's dict read directly (hot: every peek)
            if key not in (td._tensordict if td.__class__ is TensorDict else td):
                return False
        return bool(parts)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        if not self._has_str(key):
            return self._get_str(key, default)
        first = self.tensordicts[0]
        if first.__class__ is TensorDict:
            return first._tensordict[key]
        return first._peek_str(key, default)

    def _stack_entry(self, key: Any, values: list[Any]) -> Any:
        first = values[0]
        if isinstance(first, _Tensor):
            if self.hook_out is not None:
                return self.hook_out(stack_tensors(key, values, self._stack_dim))
            return stack_tensors(key, values, self._stack_dim)
        if getattr(first, "_is_non_tensor", False):
            size = list(first.batch_size)
            size.insert(self._stack_dim, len(values))
            merged = merged_non_tensor(values, torch.Size(size), False)
            if merged is not None:
                return merged
            return classes.NonTensorStack._from_entries(values, self._stack_dim)
        kind = type(first)
        if getattr(kind, "_is_tensorclass", False) and all(type(v) is kind for v in values):
            parts = [value._tensordict for value in values]
            return kind._from_tensordict(LazyStackedTensorDict._from_entries(
                parts, self._stack_dim, self._stack_dim_name))
        stack = LazyStackedTensorDict._from_entries(values, self._stack_dim, self._stack_dim_name)
        if self._is_locked:  # a view of locked parts: unlocked only with this stack
            stack._is_locked = LOCKED_BY_PARENT
            if key.__class__ is str:
                self._frozen_reads()[key] = stack  # (read again as it is: see _init)
        return stack

    def __getitem__(self, index: Any) -> Any:
        if index.__class__ is int and not self._stack_dim:
            try:
                return self.tensordicts[index]
            except IndexError:
                pass  # _index raises, naming the batch size
        if index.__class__ is str:
            return unwrap_non_tensor(self._get_str(index))
        if index.__class__ is tuple and index and all(isinstance(k, (str, tuple)) for k in index):
            return unwrap_non_tensor(self._get_path(index, NO_DEFAULT))
        return self._index(index)

    def entry_class(self, key: NestedKey) -> type:
        """The class of the entry at ``key``; a tensor's is read from the first part,
        without stacking (the parts may hold it in different shapes).

        >>> parts = [TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(3))]
        >>> lazy_stack(parts).entry_class("x")
        <class 'torch.Tensor'>
        """
        if self.tensordicts:
            part_class = self.tensordicts[0].entry_class(key)
            if issubclass(part_class, torch.Tensor):
                return part_class
        return type(self._get_path(key))

    def get(self, key: NestedKey, *args: Any, as_list: bool = False,
            as_padded_tensor: bool = False, as_nested_tensor: bool = False,
            padding_side: str = "right", layout: torch.layout | None = None,
            padding_value: float = 0.0, **kwargs: Any) -> Any:
        """The value at ``key``, stacked; entries of different shapes on request only.

        Args:
            as_list: the parts' values, as a list (a list per part that is a lazy stack
                itself: nested lists for a lazy stack of lazy stacks).
            as_padded_tensor: these lists padded to a common shape with ``padding_value``
                (on the ``padding_side``) and stacked along new first dims.
            as_nested_tensor: a ``torch.nested`` tensor of the given ``layout``
                (``torch.jagged`` by default); one nested level only.

        Flags take precedence in that order. A key missing from any part gives the
        default (None); sub-TensorDicts and non-tensor data are stacked lazily.

        >>> stack = lazy_stack([TensorDict(x=torch.zeros(1)), TensorDict(x=torch.ones(2))])
        >>> stack.get("x", as_nested_tensor=True, layout=torch.jagged).is_nested
        True
        >>> [len(v) for v in lazy_stack([stack, stack]).get("x", as_list=True)[0]]
        [1, 2]
        """
        if not (as_list or as_padded_tensor or as_nested_tensor):
            if (args[0] if args else kwargs.get("default")) is NO_DEFAULT:
                return self._get_path(key, NO_DEFAULT)  # given explicitly: raises, as upstream
            return super().get(key, *args, **kwargs)
        default = args[0] if args else kwargs.get("default")
        path = key_to_path(key)
        parent = self
        if len(path) > 1:  # the parent as read with the same flags (upstream's errors)
            parent = self.get(path[:-1], None, as_list=as_list,
                              as_padded_tensor=as_padded_tensor,
                              as_nested_tensor=as_nested_tensor, padding_side=padding_side,
                              layout=layout, padding_value=padding_value)
            if getattr(type(parent), "_is_tensorclass", False):
                parent = parent._tensordict  # the lazy stack of the instances' TensorDicts
            if not (parent is None or _is_lazy_stack(parent)):
                raise errors.KeyThroughLeafError(
                    f"{path[-2]!r} is a {type(parent).__name__}, not a tensordict, so it has "
                    f"no entry {path[-1]!r} (looking up {key!r})")
        values = None if parent is None else parent._leaf_values(path[-1])
        if values is None:
            if default is NO_DEFAULT:
                raise errors.missing_key(key, list(self._keys_str()))
            return default
        if as_list or values.__class__ is not list:
            return values
        if as_nested_tensor:
            return nested_values(values, layout)
        return padded_values(values, key, padding_value, padding_side)

    def _leaf_values(self, key: str) -> Any:
        """The parts' values at ``key``: a list (a list per lazy part), or the lazy stack of
        their sub-TensorDicts or non-tensor data; None where a part lacks it."""
        values = []
        for td in self.tensordicts:  # a TensorDict's dict read directly (hot)
            value = td._tensordict.get(key) if td.__class__ is TensorDict else \
                td._leaf_values(key) if _is_lazy_stack(td) else td._get_str(key, None)
            if value is None:
                return None
            values.append(value)
        if values and is_tensor_collection(values[0]):
            return LazyStackedTensorDict.lazy_stack(values, self._stack_dim)
        return values or None

    def get_item_shape(self, key: NestedKey) -> torch.Size:
        """The shape of ``key`` as stacked, with ``-1`` at the dims where the parts differ.

        >>> lazy_stack([TensorDict(x=torch.zeros(3, 2)), TensorDict(x=torch.zeros(5, 2))]
        ...            ).get_item_shape("x")
        torch.Size([2, -1, 2])
        """
        if key.__class__ is str:
            parent, leaf = self, key
        else:
            path = key_to_path(key)
            parent = self._get_path(path[:-1]) if len(path) > 1 else self
            leaf = path[-1]
        parts = parent.tensordicts
        # a TensorDict part's tensor is read from its dict (the repr asks for every key)
        values = [td._tensordict.get(leaf) if td.__class__ is TensorDict else None
                  for td in parts]
        shapes = [value.shape if value.__class__ is _Tensor else td.get_item_shape(leaf)
                  for td, value in zip(parts, values)]
        shape = common_shape(shapes)
        if len(shape) != len(shapes[0]):
            return shape
        sd = parent.stack_dim
        return shape[:sd] + torch.Size([len(shapes)]) + shape[sd:]

    # -- writing -------------------------------------------------------------------------------
    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> LazyStackedTensorDict:
        present = self._has_str(key)
        if self._is_locked and not (inplace and present):
            raise errors.locked(key=key)
        if inplace and present:  # every part's entry checked before the first copy
            plan = WritePlan()
            self._plan_set_(plan, key, value, key, non_blocking)
            plan.run()
            return self
        if self.hook_in is not None and isinstance(value, _Tensor):
            value = self.hook_in(value)
        pieces = None if validated else self._per_part(value)
        per_part = pieces is not None  # one piece per part, each still to check
        if not per_part:
            if not validated:
                value = self._validate_value(value, key, non_blocking)
            pieces = self._split(value)
        self._set_parts(key, pieces, non_blocking, validated=not per_part)
        return self

    def _update_plan(self, source: Any, clone: bool, inplace: bool,
                     paths: KeyPaths | None, non_blocking: bool,
                     resize: bool = False) -> WritePlan:
        """:meth:`update`: each part takes its slice of the input; every part's writes are
        checked before the first one. A TensorDict of tensors is unbound leaf by leaf and,
        into TensorDict parts, merged without further checks (as ``TensorDict.update``).
        The stack's batch size stays (``resize`` is ignored)."""
        plan = WritePlan()
        pieces = None
        if source.__class__ is dict and -1 not in self._batch_size:  # (as _split_other would)
            source = self._validate_value(source, "<other>")
        if source.__class__ is TensorDict and not (clone or inplace) and paths is None:
            pieces = self._unbind_entries(source)
            if pieces is not None:
                writes: list[tuple[dict[str, Any], str, Any]] = []
                for td, piece in zip(self.tensordicts, pieces):
                    if td.__class__ is not TensorDict or _merge_writes(td, piece, writes) is None:
                        break
                else:
                    plan.call(_store, writes)
                    return plan
        if pieces is None:
            pieces = self._split_other(source)
        for td, piece in zip(self.tensordicts, pieces):
            plan.extend(td._update_plan(piece, clone, inplace, paths, non_blocking))
        return plan

    def _unbind_entries(self, source: TensorDict) -> list[TensorDict] | None:
        """``source`` (of a batch size extending the stack's) cut along the stack dim, leaf by
        leaf; None if it holds anything but plain tensors or the stack is ragged."""
        size, sd = self._batch_size, self._stack_dim
        if -1 in size or source._batch_size[: len(size)] != size:
            return None
        entries = source._tensordict
        cuts = []
        for value in entries.values():
            if value.__class__ is not _Tensor:
                return None
            cuts.append(value.unbind(sd))
        full = source._batch_size
        part_size, device, keys = full[:sd] + full[sd + 1:], source._device, list(entries)
        return [TensorDict._from_entries(dict(zip(keys, column)), part_size, device)
                for column in zip(*cuts)]

    def _plan_set_(self, plan: WritePlan, key: str, value: Any, path: NestedKey,
                   non_blocking: bool) -> None:
        pieces = self._per_part(value)
        if pieces is None:
            pieces = self._split(self._validate_value(value, path, non_blocking))
        self._check_count(key, pieces)
        for i, (td, piece) in enumerate(zip(self.tensordicts, pieces)):
            try:
                td._plan_set_(plan, key, piece, path, non_blocking)
            except RuntimeError as err:
                if type(err) is not RuntimeError:
                    raise
                raise RuntimeError(f"{err} (in part {i} of the lazy stack)") from None

    def _validate_value(self, value: Any, key: str, non_blocking: bool = False) -> Any:
        """``value`` in its stored form for the whole stack (checked against the batch)."""
        batch_size = self._batch_size
        if isinstance(value, _Tensor):
            device = self.device
            if device is not None and value.device != device:
                value = value.to(device, non_blocking=non_blocking)
            if value.shape[: len(batch_size)] != batch_size:
                raise errors.batch_mismatch(key, value.shape, batch_size)
            return value
        if isinstance(value, LazyStackedTensorDict) and value.stack_dim == self._stack_dim \
                and value.batch_size == batch_size:
            return value
        return TensorDictBase._empty_child(self)._validate_value(value, key, non_blocking)

    def _split(self, value: Any) -> list[Any]:
        """``value`` (the stored form of an entry of the whole stack) cut along the stack dim."""
        sd, n = self._stack_dim, len(self.tensordicts)
        if isinstance(value, LazyStackedTensorDict) and value.stack_dim == sd:
            return value.tensordicts
        if isinstance(value, _Tensor):
            return list(value.unbind(sd))
        return [value[(slice(None),) * sd + (i,)] for i in range(n)]

    def _per_part(self, value: Any) -> list[Any] | None:
        """``value`` as one piece per part when it is given that way: a list (along a
        first stack dim, when lists become stacks) or a nested tensor; else None."""
        if isinstance(value, _Tensor) and value.is_nested:
            return list(value.unbind(0))
        if value.__class__ is list and self._stack_dim == 0 and list_to_stack():
            return value
        return None

    def _check_count(self, key: str, pieces: list[Any]) -> None:
        if len(pieces) != len(self.tensordicts):
            raise ValueError(f"cannot write {len(pieces)} values at key {key!r} of a lazy "
                             f"stack of {len(self.tensordicts)} parts")

    def _set_parts(self, key: str, pieces: list[Any], non_blocking: bool,
                   validated: bool) -> None:
        """Write ``pieces[i]`` at ``key`` in part ``i`` (shapes may differ between parts),
        every piece checked before the first write."""
        parts = self.tensordicts
        self._check_count(key, pieces)
        if not validated:
            pieces = [td._validate_value(piece, key, non_blocking)
                      for td, piece in zip(parts, pieces)]
        for td in parts:
            if td._is_locked if td.__class__ is TensorDict else td.is_locked:
                raise errors.locked(key=key)
        for td, piece in zip(parts, pieces):
            if td.__class__ is TensorDict:  # checked and unlocked: store it
                td._tensordict[key] = piece
            else:
                td._set_str(key, piece, inplace=False, validated=True,
                            non_blocking=non_blocking)

    def _plan_write_at(self, path: tuple[str, ...], index: Any, value: Any) -> WritePlan:
        """The writes into the parts: a number or tensor is first broadcast to the indexed
        shape (when the parts agree on it), then cut along the stack dim."""
        parent = self._parent_of(path, create=False)
        shape = parent.get_item_shape(path[-1])
        if isinstance(value, (Number, _Tensor)) and -1 not in shape:
            size = indexed_batch_size(self._batch_size, index) + shape[len(self._batch_size):]
            value = torch.as_tensor(value, device=self.device)
            if not broadcasts_to(value.shape, size):
                raise RuntimeError(f"cannot write a value of shape {list(value.shape)} into "
                                   f"the entry {path!r} of shape {list(size)} at the index")
            value = value.expand(size)
        return parent._plan_at_index(index, {path[-1]: value})

    @property
    def _has_exclusive_keys(self) -> bool:
        """Whether some parts hold tensor leaves (nested ones included) that others lack."""
        keys = [_tensor_paths(td) for td in self.tensordicts]
        return any(k != keys[0] for k in keys[1:])

    def _del_str(self, key: str) -> None:
        self._del_path((key,))

    def del_(self, key: NestedKey) -> LazyStackedTensorDict:
        """Delete ``key`` from every part that holds it (a key only some parts hold too, as
        upstream); a key no part holds raises ``KeyError``. Returns self.

        >>> stack = lazy_stack([TensorDict(x=torch.zeros(()), y=torch.zeros(())),
        ...                     TensorDict(x=torch.zeros(()))])
        >>> _ = stack.del_("y")
        >>> list(stack.tensordicts[0].keys())
        ['x']
        """
        self._del_path(key_to_path(key))
        return self

    def _del_path(self, path: tuple[str, ...]) -> None:
        """:meth:`del_`, every holder's lock checked before the first deletion."""
        if self._is_locked:
            raise errors.locked("delete an entry of a")
        target = path if len(path) > 1 else path[0]
        parents = [td._parent_of(path, create=False) for td in self.tensordicts if target in td]
        if not parents:
            raise errors.missing_key(target, list(self._keys_str()))
        if any(parent.is_locked for parent in parents):
            raise errors.locked("delete an entry of a")
        for parent in parents:
            parent._del_str(path[-1])

    def _empty_child(self) -> LazyStackedTensorDict:
        """An empty sub-stack whose parts are new empty sub-TensorDicts of the parts."""
        if not self.tensordicts:
            return super()._empty_child()
        return LazyStackedTensorDict._from_entries(
            [td._empty_child() for td in self.tensordicts], self._stack_dim)

    # -- traversal -----------------------------------------------------------------------------
    def _apply_nest(self, fn: Callable[..., Any], *others: Any, batch_size: Any = None,
                    names: Any = NO_DEFAULT, inplace: bool = False, **kwargs: Any) -> Any:
        if batch_size is not None:
            if not others and not inplace:
                moved = restructure(self, fn, batch_size)
                if moved is not None:
                    if names and isinstance(moved, LazyStackedTensorDict):
                        moved._stack_dim_name = list(names)[moved.stack_dim]
                    return moved
            return self.contiguous()._apply_nest(fn, *others, batch_size=batch_size,
                                                 names=names, inplace=inplace, **kwargs)
        sd = self._stack_dim
        default = kwargs.get("default", NO_DEFAULT)
        own_plan = inplace and kwargs.get("plan") is None
        if own_plan:  # every part's results are checked before the first write
            kwargs["plan"] = WritePlan()
        split = [[other] * len(self.tensordicts) if other is default else self._split_other(other)
                 for other in others]
        part_names = NO_DEFAULT
        if names is not NO_DEFAULT and names is not None:
            part_names = list(names)
            del part_names[sd]
        elif names is None:
            part_names = None
        results = [
            td._apply_nest(fn, *[pieces[i] for pieces in split], names=part_names,
                           inplace=inplace, **kwargs)
            for i, td in enumerate(self.tensordicts)
        ]
        if own_plan:
            kwargs["plan"].run()
        if results and all(result is None for result in results):
            return None  # every part filtered out (see ``apply``'s filter_empty)
        if inplace:
            return self
        if not results:
            return type(self)(batch_size=self._batch_size, stack_dim=sd)
        results = [td._empty_child() if result is None else result
                   for td, result in zip(self.tensordicts, results)]
        out = type(self)._from_entries(results, sd, self._stack_dim_name)
        if names is not NO_DEFAULT:
            out._stack_dim_name = None if names is None else list(names)[sd]
        return out

    def _split_other(self, other: Any) -> list[Any]:
        """Another collection of the stack's batch size, cut into one piece per part (one
        of a shorter, matching batch size is taken entry by entry, like a dict)."""
        if is_tensor_collection(other):
            size = other.batch_size
            if len(size) < len(self._batch_size) and size == self._batch_size[: len(size)]:
                other = dict(other.items())
        if isinstance(other, dict):
            if -1 in self._batch_size:  # no TensorDict has a ragged batch: cut each value
                pieces = {key: self._split(self._validate_value(value, key))
                          for key, value in other.items()}
                return [{key: cut[i] for key, cut in pieces.items()}
                        for i in range(len(self.tensordicts))]
            other = self._validate_value(other, "<other>")
        if not is_tensor_collection(other):
            raise TypeError(f"cannot pair a lazy stack with a {type(other).__name__}")
        if other.batch_size[: len(self._batch_size)] != self._batch_size:
            raise errors.batch_mismatch("<other>", other.batch_size, self._batch_size)
        return self._split(other)

    def __repr__(self) -> str:
        return lazy_repr(self)


allow_weights_only_load(LazyStackedTensorDict)


def lazy_stack(items: Sequence[Any], dim: int = 0, *, out: Any = None, **kwargs: Any) -> Any:
    """Stack TensorDicts lazily (see :meth:`LazyStackedTensorDict.lazy_stack`).

    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> lazy_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))]).batch_size
    torch.Size([2])
    """
    return LazyStackedTensorDict.lazy_stack(items, dim, out=out, **kwargs)


# -- helpers -------------------------------------------------------------------------------------
def _tensor_paths(td: Any, prefix: tuple[str, ...] = ()) -> set[tuple[str, ...]]:
    """The paths of the tensor leaves of ``td`` (non-tensor data and empty levels aside)."""
    out: set[tuple[str, ...]] = set()
    for key in td._keys_str():
        kind = td._peek_str(key)
        if isinstance(kind, _Tensor):
            out.add(prefix + (key,))
        elif not getattr(kind, "_is_non_tensor", False):
            out |= _tensor_paths(td._get_str(key), prefix + (key,))
    return out


def _store(writes: list[tuple[dict[str, Any], str, Any]]) -> None:
    """Perform the checked stores ``entries[key] = value`` of ``writes``."""
    for entries, key, value in writes:
        entries[key] = value


def _common_device(parts: list[Any]) -> torch.device | None:
    if not parts:
        return None
    devices = list(map(_DEVICE, parts))
    return devices[0] if devices.count(devices[0]) == len(devices) else None


def _given_size(batch_size: Any) -> torch.Size:
    """A batch size given to the constructor, ``-1`` allowed (a ragged dim)."""
    if isinstance(batch_size, (list, tuple)) and -1 in batch_size:
        return torch.Size(batch_size)
    return as_size(batch_size)


def _is_lazy_stack(value: Any) -> bool:
    """Whether ``value`` is a lazy stack of TensorDicts (not of non-tensor data)."""
    return value.__class__ is not TensorDict and isinstance(value, LazyStackedTensorDict) \
        and not value._is_non_tensor
