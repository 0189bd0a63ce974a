"""TensorDict: a dict of tensors sharing leading batch dims, stored in a plain dict.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"obs": torch.zeros(3, 4), "next": {"reward": torch.ones(3, 1)}},
    ...                 batch_size=[3])
    >>> td["next", "reward"].shape, td[0].batch_size
    (torch.Size([3, 1]), torch.Size([]))
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, Mapping, Sequence, ValuesView
from numbers import Number
from operator import itemgetter
from typing import Any

import numpy as np
import torch

from tensordict import errors
from tensordict._base import TensorDictBase
from tensordict._collection import (
    NO_DEFAULT,
    acts_as_tensordict,
    classes,
    is_sub_tensordict,
    is_tensor_collection,
    register_class,
)
from tensordict._device import _copy_structure
from tensordict._helpers import _shape
from tensordict._keys import (
    DictKeysView,
    TensorDictKeysView,
    collect_entries,
    default_is_leaf,
    has_leaf,
)
from tensordict._map import MapMixin
from tensordict._metadata import LOCKED_BY_PARENT
from tensordict._nested_key import NestedKey, is_flat_path
from tensordict._nontensor import NonTensorData, unwrap_non_tensor, write_non_tensor_
from tensordict._options import list_to_stack
from tensordict._plan import check_target, check_write
from tensordict._repr import tensordict_repr
from tensordict._setitem import plan_at_index, set_at_index
from tensordict._shapes import (
    CPU,
    as_device,
    as_size,
    indexed_size,
    masks_to_indices,
    normalize_index,
)
from tensordict._sub_tensordict import _SubTensorDict  # noqa: F401  (upstream's path)
from tensordict._traverse import IndexLeaves, is_row_index, row_selector
from tensordict._unbatched import UnbatchedTensor

_Tensor = torch.Tensor
_new_view = object.__new__


@register_class
class TensorDict(MapMixin, TensorDictBase):
    """A dictionary of tensors that behaves like a tensor of shape ``batch_size``.

    Args:
        source: a mapping (nested mappings become nested TensorDicts; tuple keys are
            nested keys) or a TensorDict. Keyword arguments are entries too.
        batch_size: the leading dims every entry shares (an int, a sequence or a
            ``torch.Size``; ``None`` means ``[]``, ``"auto"`` infers the largest common
            leading shape).
        device: if given, every value written is moved there.
        names: one name (or None) per batch dim.
        non_blocking: passed to the device moves of the values; by default the copies
            to a CUDA device are asynchronous (ordered on its stream), the others blocking.
        lock: lock the result (see :meth:`lock_`).

    >>> td = TensorDict(a=torch.zeros(3, 4), b="text", batch_size=[3])
    >>> td
    TensorDict(batch_size=[3], fields={a: f32[4], b: str})
    """

    __slots__ = ("_tensordict", "_batch_size", "_device", "_names", "_is_locked",
                 "_exit_stack", "_locks_views", "__weakref__")

    def __init__(
        self,
        source: Mapping[NestedKey, Any] | TensorDictBase | None = None,
        batch_size: Sequence[int] | torch.Size | int | str | None = None,
        device: torch.device | str | int | None = None,
        names: Sequence[str | None] | None = None,
        non_blocking: bool | None = None,
        lock: bool = False,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            if source is not None:
                raise ValueError(
                    "give the entries either as a mapping or as keyword arguments, not both"
                )
            source = kwargs
        elif source is None:
            source = kwargs  # (an empty dict)
        elif source.__class__ is not dict and not (isinstance(source, Mapping)
                                                   or acts_as_tensordict(source)):
            raise errors.NotAMappingError(
                "A TensorDict source is expected to be a TensorDictBase sub-type or a Mapping, "
                f"found type(source)={type(source)} (a TensorDict source must be a mapping)")
        auto = False
        if batch_size.__class__ is not torch.Size or (batch_size and min(batch_size) < 0):
            auto = batch_size.__class__ is str
            if auto and batch_size != "auto":
                raise ValueError(f"batch_size must be a size or 'auto', got {batch_size!r}")
            try:
                batch_size = torch.Size() if auto else as_size(batch_size)
            except TypeError as err:
                raise ValueError(str(err)) from None
        self._batch_size = batch_size
        if device is not None:
            device = as_device(device)
            if non_blocking is None:  # as to(): asynchronous copies where no wait is needed
                non_blocking = device != CPU and device.type == "cuda"
        self._device = device
        self._tensordict: dict[str, Any] = {}
        self._names: tuple[str | None, ...] | None = None
        self._is_locked = False
        self._exit_stack: list[Any] | None = None
        if source.__class__ is not dict or source:  # (a TensorDict has no truth value)
            self._fill(source, bool(non_blocking))
        if auto:
            self.auto_batch_size_()
        if names is not None:
            self.names = names
        if lock:
            self.lock_()

    def _fill(self, entries: Mapping[NestedKey, Any], non_blocking: bool) -> None:
        """Store the constructor's ``entries``, each checked against the batch size."""
        store = self._tensordict
        size = self._batch_size
        # a tensor on the TensorDict's device (or with no device set), whose leading dim
        # is the one batch dim (or with no batch dims at all), is stored as it is; a
        # TensorDict is fitted straight away; anything else goes through _validate_value
        lead = size[0] if len(size) == 1 else None
        plain = lead is not None or not size
        device = self._device
        for key, value in entries.items():
            if key.__class__ is not str:
                self.set(key, value, non_blocking=non_blocking)
                continue
            cls = value.__class__
            if cls is _Tensor:
                if plain:
                    try:  # (a strided nested tensor has no .shape, a 0-dim one no
                        # shape[0]: _validate_value checks them)
                        if (device is None or value.device == device) and (
                                lead is None or value.shape[0] == lead):
                            store[key] = value
                            continue
                    except (RuntimeError, IndexError):
                        pass
            elif cls is dict:
                store[key] = self._nested(value, non_blocking)
                continue
            elif cls is TensorDict:  # (TorchRL's step outputs hold their parameters)
                store[key] = self._fit_collection(value, key, non_blocking)
                continue
            store[key] = self._validate_value(value, key, non_blocking)

    def _nested(self, entries: Mapping[NestedKey, Any], non_blocking: bool) -> TensorDict:
        """A sub-TensorDict holding ``entries``, of this one's batch size, device and names
        (what a mapping written into this one becomes)."""
        sub = TensorDict._from_entries({}, self._batch_size, self._device, self._names)
        sub._fill(entries, non_blocking)
        return sub

    @classmethod
    def _from_entries(
        cls,
        source: dict[str, Any],
        batch_size: torch.Size,
        device: torch.device | None = None,
        names: tuple[str | None, ...] | None = None,
    ) -> TensorDict:
        """Wrap already-validated entries without checking them (internal fast path)."""
        self = object.__new__(TensorDict)
        self._tensordict = source
        self._batch_size = batch_size
        self._device = device
        self._names = names
        self._is_locked = False
        self._exit_stack = None
        return self

    @classmethod
    def _new_unsafe(cls, source: Mapping[str, Any] | None = None,
                    batch_size: Sequence[int] | torch.Size | int | None = None,
                    device: Any = None, names: Sequence[str | None] | None = None,
                    non_blocking: bool | None = None, lock: bool = False, nested: bool = True,
                    **kwargs: Any) -> TensorDict:
        """Upstream's constructor without the batch-size checks, as TorchRL calls it:
        tensors and collections are stored as they are, nested dicts become
        TensorDicts (with ``nested=True``), anything else is converted as ``set`` does.

        >>> td = TensorDict._new_unsafe({"m": {"0": torch.zeros(2)}}, torch.Size([2]))
        >>> td["m", "0"]
        tensor([0., 0.])
        """
        entries = dict(source or {}, **kwargs) if kwargs or source is None else source
        size = batch_size if batch_size.__class__ is torch.Size else as_size(batch_size)
        device = as_device(device) if device is not None else None
        out = cls._from_entries({}, size, device, tuple(names) if names else None)
        store = out._tensordict
        for key, value in entries.items():
            if value.__class__ is _Tensor and device is None:
                store[key] = value
                continue
            if value.__class__ is dict and nested:
                value = cls._new_unsafe(value, size, device, nested=True)
            elif device is not None and isinstance(value, torch.Tensor) and \
                    value.device != device:
                value = value.to(device, non_blocking=bool(non_blocking))
            if isinstance(value, torch.Tensor) or is_tensor_collection(value):
                store[key] = value
            else:
                out._set_str(key, value, inplace=False, validated=False)
        return out.lock_() if lock else out

    # -- metadata ----------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        """The leading dims shared by every entry (settable when compatible)."""
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Sequence[int] | torch.Size | int) -> None:
        """A sub-TensorDict whose batch size is a prefix of the new one is widened to it
        (so an empty ``{}`` entry follows its parent); non-tensor data is rebatched only
        where its batch size does not start with the new one (it keeps its extra dims, as
        a sub-TensorDict does, and as upstream)."""
        new = as_size(value)  # (a locked TensorDict takes it too, as upstream's)
        widen = []
        for key, entry in self._tensordict.items():
            try:
                shape = entry.batch_size if is_tensor_collection(entry) else entry.shape
            except RuntimeError:  # a strided nested tensor: -1 where its components differ
                shape = _shape(entry)
            if shape[: len(new)] != new:
                if entry.__class__ is UnbatchedTensor or (
                        getattr(entry, "_is_non_tensor", False) and len(shape) <= len(new)):
                    continue
                if is_tensor_collection(entry) and new[: len(shape)] == shape:
                    widen.append(entry)
                    continue
                raise RuntimeError(
                    f"the Tensor {key} has shape {shape} which is incompatible with the "
                    f"batch-size {new}: cannot set batch_size, entry {key!r} has shape {shape}"
                )
        _widen(widen, new)
        for key, entry in self._tensordict.items():
            if entry.__class__ is UnbatchedTensor or (getattr(entry, "_is_non_tensor", False)
                                                      and entry.batch_size[: len(new)] != new):
                self._tensordict[key] = entry._rebatch(new)
        self._batch_size = new
        names = self._names
        if names is not None and len(names) != len(new):  # kept where the dims are kept
            names = (names + (None,) * len(new))[: len(new)]
            self._names = names if any(name is not None for name in names) else None

    @property
    def shape(self) -> torch.Size:
        """Alias of :attr:`batch_size`."""
        return self._batch_size  # (not through batch_size: TorchRL reads it every step)

    @shape.setter
    def shape(self, value: Sequence[int] | torch.Size | int) -> None:
        self.batch_size = value

    def __len__(self) -> int:
        size = self._batch_size
        return size[0] if size else 0

    __len__.__doc__ = TensorDictBase.__len__.__doc__

    @property
    def device(self) -> torch.device | None:
        """The device every value is moved to on write, or None (mixed devices)."""
        return self._device

    @device.setter
    def device(self, value: Any) -> None:
        raise RuntimeError("set the device with `td.to(device)` or `td.clear_device_()`")

    @property
    def names(self) -> list[str | None]:
        """One name (or None) per batch dim."""
        if self._names is None:
            return [None] * len(self._batch_size)
        return list(self._names)

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        if value is None:
            self._set_names(None)
            return
        value = tuple(value)
        if len(value) != len(self._batch_size):
            raise errors.names_mismatch(value, len(self._batch_size))
        named = [n for n in value if n is not None]
        if len(named) != len(set(named)):
            raise errors.names_mismatch(value, len(value))
        self._set_names(value if named else None)

    def _set_names(self, names: tuple[str | None, ...] | None) -> None:
        self._names = names
        for entry in self._tensordict.values():
            if isinstance(entry, TensorDict) or getattr(type(entry), "_is_tensorclass", False):
                extra = entry.names[len(self._batch_size):]
                entry._set_names(None if names is None else names + tuple(extra))

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        if not locked:  # (set by lock_views only: unset until then)
            self._locks_views = False
        inherited = LOCKED_BY_PARENT if locked else False
        for entry in self._tensordict.values():
            if entry.__class__ is not _Tensor and (
                    acts_as_tensordict(entry) or getattr(entry, "_is_non_tensor", False)):
                entry._propagate_lock(inherited)

    # -- reading -----------------------------------------------------------------------
    def _keys_str(self) -> Iterator[str]:
        return iter(self._tensordict)

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        try:
            return self._tensordict[key]
        except KeyError:
            if default is NO_DEFAULT:
                raise errors.missing_key(key, self._tensordict) from None
            return default

    _peek_str = _get_str  # (a stored value is what it is: no lazy part to look into)

    def get(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        if kwargs:  # ``default=`` alone (TorchRL's usual spelling) is read as the positional
            if args or len(kwargs) != 1 or "default" not in kwargs:
                return TensorDictBase.get(self, key, *args, **kwargs)
            args = (kwargs["default"],)
        if key.__class__ is str:
            if not args:
                try:
                    return self._tensordict[key]
                except KeyError:
                    pass
            elif len(args) == 1 and args[0] is not NO_DEFAULT:  # (no KeyError raised)
                return self._tensordict.get(key, args[0])
        elif key.__class__ is tuple and key:
            value = _lookup(self, key)
            if value is _MISSING:
                if len(args) == 1 and args[0] is not NO_DEFAULT:
                    return args[0]
            elif value is not _GENERAL:
                return value
        return TensorDictBase.get(self, key, *args)

    get.__doc__ = TensorDictBase.get.__doc__

    def __contains__(self, key: object) -> bool:
        if key.__class__ is str:
            return key in self._tensordict
        if key.__class__ is tuple and key:
            value = _lookup(self, key)
            if value is not _GENERAL:
                return value is not _MISSING
        return TensorDictBase.__contains__(self, key)

    def keys(self, include_nested: bool = False, leaves_only: bool = False,
             is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
             ) -> TensorDictKeysView:
        if is_leaf is None and not (include_nested or leaves_only or sort):
            view = _new_view(DictKeysView)  # (no __init__ call: this is a hot path)
            view._td, view._entries = self, self._tensordict
            return view
        return TensorDictKeysView(self, include_nested, leaves_only, is_leaf, sort)

    keys.__doc__ = TensorDictBase.keys.__doc__

    def items(self, include_nested: bool = False, leaves_only: bool = False,
              is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
              ) -> ItemsView[str, Any] | Iterator[tuple[NestedKey, Any]] | list[Any]:
        if not (include_nested or leaves_only or sort):  # the top level: the dict's view
            return self._tensordict.items()
        if include_nested and leaves_only and not sort:  # every leaf: a list, as upstream
            if is_leaf is None:  # (in one walk)
                return collect_entries(self, (), True, True, default_is_leaf, True, [])
            return list(TensorDictBase.items(self, True, True, is_leaf))
        return TensorDictBase.items(self, include_nested, leaves_only, is_leaf, sort=sort)

    items.__doc__ = TensorDictBase.items.__doc__

    def values(self, include_nested: bool = False, leaves_only: bool = False,
               is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
               ) -> ValuesView[Any] | Iterator[Any]:
        if not (include_nested or leaves_only or sort):
            return self._tensordict.values()
        return TensorDictBase.values(self, include_nested, leaves_only, is_leaf, sort=sort)

    values.__doc__ = TensorDictBase.values.__doc__

    def is_empty(self) -> bool:
        return not has_leaf(self._tensordict, TensorDict)

    is_empty.__doc__ = TensorDictBase.is_empty.__doc__

    def copy(self) -> TensorDict:
        if self.__class__ is TensorDict:  # (one call less: TorchRL copies every step)
            return _copy_structure(self)
        return TensorDictBase.copy(self)

    copy.__doc__ = TensorDictBase.copy.__doc__

    def empty(self, recurse: bool = False, *, batch_size: Any = None, device: Any = NO_DEFAULT,
              names: Any = None) -> TensorDict:
        if not recurse and batch_size is None and device is NO_DEFAULT:
            return TensorDict._from_entries({}, self._batch_size, self._device, self._names)
        return TensorDictBase.empty(self, recurse, batch_size=batch_size, device=device,
                                    names=names)

    empty.__doc__ = TensorDictBase.empty.__doc__

    def pop(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        if key.__class__ is str and not self._is_locked:
            if default is not NO_DEFAULT:  # no KeyError raised and caught for a missing
                return self._tensordict.pop(key, default)  # key (TorchRL pops "_step")
            try:
                return self._tensordict.pop(key)
            except KeyError:
                pass
        return TensorDictBase.pop(self, key, default)

    pop.__doc__ = TensorDictBase.pop.__doc__

    def __getitem__(self, index: Any) -> Any:
        if index.__class__ is str:
            try:
                value = self._tensordict[index]
            except KeyError:
                raise errors.missing_key(index, self._tensordict) from None
            if value.__class__ is _Tensor or not getattr(value, "_is_non_tensor", False):
                return value
            return unwrap_non_tensor(value)
        if index.__class__ is tuple:
            node: Any = self
            try:  # fast path: a tuple of strings through plain TensorDicts
                for part in index:
                    node = node._tensordict[part]
            except (KeyError, AttributeError, TypeError):
                if index and all(isinstance(k, (str, tuple)) for k in index):
                    return unwrap_non_tensor(self._get_path(index, NO_DEFAULT))
            else:
                return node if node.__class__ is _Tensor else unwrap_non_tensor(node)
        return self._index(index)

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is str and value.__class__ is _Tensor and self._device is None \
                and not self._is_locked:
            batch_size = self._batch_size
            if not batch_size:
                self._tensordict[key] = value
                return
            try:  # (a strided nested tensor has no .shape: set checks it)
                shape = value.shape  # one batch dim (the common case): no Size slicing
                if (shape and shape[0] == batch_size[0]) if len(batch_size) == 1 else (
                        shape[: len(batch_size)] == batch_size):
                    self._tensordict[key] = value
                    return
            except RuntimeError:
                pass
        elif key.__class__ is tuple and value.__class__ is _Tensor and len(key) > 1:
            node: Any = self
            try:  # an existing parent through plain TensorDicts: set there
                for part in key[:-1]:
                    node = node._tensordict[part]
            except (KeyError, AttributeError, TypeError):
                pass
            else:
                if node.__class__ is TensorDict and key[-1].__class__ is str:
                    node[key[-1]] = value
                    return
        elif key.__class__ is int or key.__class__ is slice or key.__class__ is _Tensor:
            set_at_index(self, key, value)  # td[i] = step: straight to the indexed write
            return
        TensorDictBase.__setitem__(self, key, value)

    def update(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
               clone: bool = False, inplace: bool = False, **kwargs: Any) -> TensorDict:
        if input_dict_or_td is self and not self._is_locked:
            return self  # every entry is already there
        if input_dict_or_td.__class__ is TensorDict and not (clone or inplace or kwargs) \
                and not self._is_locked:
            writes = _merge_writes(self, input_dict_or_td, [])
            if writes is not None:
                for entries, key, value in writes:
                    entries[key] = value
                return self
        return TensorDictBase.update(self, input_dict_or_td, clone, inplace, **kwargs)

    update.__doc__ = TensorDictBase.update.__doc__

    # -- writing -----------------------------------------------------------------------
    def set(self, key: NestedKey, item: Any, inplace: bool = False, *,
            non_blocking: bool = False, **kwargs: Any) -> TensorDict:
        if key.__class__ is str:
            return self._set_str(key, item, inplace=inplace, validated=False,
                                 non_blocking=non_blocking)
        if key.__class__ is tuple and key:  # an existing parent: set there
            parent = _lookup(self, key[:-1])
            if parent.__class__ is TensorDict and key[-1].__class__ is str:
                parent._set_str(key[-1], item, inplace=inplace, validated=False,
                                non_blocking=non_blocking)
                return self
        return TensorDictBase.set(self, key, item, inplace, non_blocking=non_blocking,
                                  **kwargs)

    set.__doc__ = TensorDictBase.set.__doc__

    def set_(self, key: NestedKey, item: Any, *, non_blocking: bool = False) -> TensorDict:
        parent: Any = self
        name: Any = key
        if key.__class__ is tuple and key:
            parent = _lookup(self, key[:-1])
            name = key[-1]
        if parent.__class__ is TensorDict and name.__class__ is str and \
                name in parent._tensordict:  # an existing entry: written in place
            parent._set_str(name, item, inplace=True, validated=False,
                            non_blocking=non_blocking)
            return self
        return TensorDictBase.set_(self, key, item, non_blocking=non_blocking)

    set_.__doc__ = TensorDictBase.set_.__doc__

    def _set_str(
        self,
        key: str,
        value: Any,
        *,
        inplace: bool,
        validated: bool,
        non_blocking: bool = False,
    ) -> TensorDict:
        if not validated:
            value = self._validate_value(value, key, non_blocking)
        present = self._tensordict.get(key) if inplace else None
        if present is not None:
            if isinstance(present, _Tensor) and isinstance(value, _Tensor):
                if present is not value:
                    # torch checks what check_write does (shapes, a leaf requiring grad,
                    # overlapping elements) before writing anything: check_write only
                    # names the entry in the error; but it writes an inference tensor,
                    # then raises
                    if not torch.compiler.is_compiling() and present.is_inference():
                        check_target(present, key)
                    try:
                        if non_blocking:
                            present.copy_(value, non_blocking=True)
                        else:  # (a keyword costs torch's argument parser time)
                            present.copy_(value)
                    except RuntimeError as failure:  # upstream's class: a ValueError too
                        message = str(failure)
                        try:
                            check_write(present, value, key)
                        except RuntimeError as named:  # the entry and the shapes named
                            message = str(named)
                        raise errors.InplaceWriteError(message) from failure
                return self
            if getattr(present, "_is_non_tensor", False):
                write_non_tensor_(present, value, key)
                return self
            if acts_as_tensordict(present) and is_sub_tensordict(value):
                present.update_(value)
                return self
            raise errors.inplace_mismatch(key, present, value)
        if self._is_locked:
            raise errors.locked(key=key)
        self._tensordict[key] = value
        return self

    def _validate_value(self, value: Any, key: str, non_blocking: bool = False) -> Any:
        """``value`` as it will be stored under ``key``; raises if it does not fit."""
        if isinstance(value, _Tensor):
            device = self._device
            if device is not None and value.device != device:
                value = value.to(device, non_blocking=non_blocking)
            batch_size = self._batch_size
            if value.__class__ is UnbatchedTensor:  # no batch dims to check
                return value._rebatch(batch_size)
            if not batch_size:  # nothing to check
                return value
            try:
                shape = value.shape
            except RuntimeError:  # a strided nested tensor: -1 where its components differ
                shape = _shape(value)
            if not ((shape and shape[0] == batch_size[0]) if len(batch_size) == 1
                    else shape[: len(batch_size)] == batch_size):
                raise errors.batch_mismatch(key, shape, batch_size)
            return value
        if value.__class__ is TensorDict:  # (TorchRL's td.set("next", next_td))
            return self._fit_collection(value, key, non_blocking)
        return self._convert_value(value, key, non_blocking)

    def _convert_value(self, value: Any, key: str, non_blocking: bool) -> Any:
        batch_size, device = self._batch_size, self._device
        if is_tensor_collection(value):
            return self._fit_collection(value, key, non_blocking)
        if isinstance(value, Mapping):
            return self._nested(value, non_blocking)
        if isinstance(value, (Number, np.ndarray, np.generic)) and not isinstance(value, str):
            return self._validate_value(torch.as_tensor(value, device=device), key)
        if isinstance(value, (list, tuple)):
            return self._convert_sequence(value, key)
        return NonTensorData(value, batch_size=batch_size, device=device, names=self._names)

    def _convert_sequence(self, value: list[Any] | tuple[Any, ...], key: str) -> Any:
        batch_size, device = self._batch_size, self._device
        if value and all(isinstance(v, _Tensor) for v in value):
            return self._validate_value(torch.stack(list(value)), key)
        try:
            tensor = torch.as_tensor(value, device=device)
        except (TypeError, ValueError, RuntimeError):
            if batch_size and list_to_stack() and len(value) == batch_size[0]:
                return classes.NonTensorStack.from_list(value, batch_size, device)
            return NonTensorData(value, batch_size=batch_size, device=device)
        return self._validate_value(tensor, key)

    def _fit_collection(self, value: Any, key: str, non_blocking: bool) -> Any:
        batch_size = self._batch_size
        value_size = value.batch_size
        n = len(batch_size)
        if not n or value_size[:n] == batch_size:
            device = self._device
            if device is not None and value.device != device:
                value = value.to(device, non_blocking=non_blocking)
            return value if self._names is None else self._named(value, key)
        if len(value_size) < n and batch_size[: len(value_size)] == value_size:
            if getattr(value, "_is_non_tensor", False) and isinstance(value, NonTensorData):
                return self._fit_collection(value._rebatch(batch_size), key, non_blocking)
            widened = value.copy()
            try:
                _resize(widened, batch_size)
            except RuntimeError:
                raise errors.batch_mismatch(key, value_size, batch_size) from None
            return self._fit_collection(widened, key, non_blocking)
        raise errors.batch_mismatch(key, value_size, batch_size)

    def _named(self, value: Any, key: str) -> Any:
        """``value`` (a collection of this batch size, or longer) with this TensorDict's dim
        names on its leading dims: a renamed copy (its leaves shared), as upstream; a
        RuntimeError naming ``key`` where a name differs."""
        names = self._names
        theirs = value.names
        merged = [mine if mine is not None else their for mine, their in zip(names, theirs)]
        if any(their is not None and their != mine for mine, their in zip(merged, theirs)):
            raise RuntimeError(f"refine_names: cannot coerce TensorDict names {theirs} with "
                               f"{list(names)} (setting {key!r})")
        merged += theirs[len(names):]
        if merged == theirs:
            return value
        if isinstance(value, NonTensorData):
            return value._rebatch(value.batch_size, names=merged)
        value = value.copy()
        value.names = merged
        return value

    def _del_str(self, key: str) -> None:
        if self._is_locked:
            raise errors.locked("delete an entry of a")
        try:
            del self._tensordict[key]
        except KeyError:
            raise errors.missing_key(key, self._tensordict) from None

    # -- indexing ----------------------------------------------------------------------
    def _index(self, index: Any) -> TensorDict:
        batch = self._batch_size
        if index.__class__ is int and batch and -batch[0] <= index < batch[0]:
            names = self._names and self._names[1:]
            out = self._map_leaves(IndexLeaves(index), batch[1:],
                                   names if names and any(names) else None, NO_DEFAULT,
                                   False, on_leaf=itemgetter(index))
            return _view_of_locked(self, out) if self._is_locked else out
        if index.__class__ is slice and batch:  # a slice keeps every dim and its name
            batch_size = torch.Size((len(range(*index.indices(batch[0]))), *batch[1:]))
            out = self._map_leaves(IndexLeaves(index), batch_size, NO_DEFAULT, NO_DEFAULT,
                                   False, on_leaf=itemgetter(index))
            return _view_of_locked(self, out) if self._is_locked else out
        try:
            parts = masks_to_indices(normalize_index(index, batch))
        except IndexError as err:
            if batch:
                raise
            raise errors.BatchDimError(
                f"indexing a tensordict with td.batch_dims==0 is not permitted. Got index "
                f"{index!r} (a TensorDict of batch size [] has no batch dim to index)") from err
        batch_size = indexed_size(batch, parts)
        names = self._indexed_names(parts) if self._names is not None else None
        if len(parts) == 1:
            parts = parts[0]
            if is_row_index(parts):  # rows: index_select, unless one is negative
                try:
                    return self._map_leaves(IndexLeaves(parts), batch_size, names,
                                            NO_DEFAULT, False, on_leaf=row_selector(parts))
                except IndexError:
                    pass
        out = self._map_leaves(IndexLeaves(parts), batch_size, names, NO_DEFAULT, False,
                               on_leaf=itemgetter(parts))
        if self._is_locked and not any(isinstance(p, torch.Tensor) for p in (
                parts if parts.__class__ is tuple else (parts,))):  # a view, not a copy
            return _view_of_locked(self, out)
        return out

    def _indexed_names(self, parts: Any) -> tuple[str | None, ...] | None:
        """Dim names after indexing: ints (and 0-dim tensors) drop a name, None/True/False
        add an unnamed dim, slices keep the name, and so does a single tensor index, after
        unnamed dims for its leading dims (as upstream); several tensor indices rearrange
        dims, so the names are dropped."""
        if self._names is None:
            return None
        parts = parts if isinstance(parts, tuple) else (parts,)
        if sum(isinstance(p, torch.Tensor) for p in parts) > 1:
            return None
        names = list(self._names)
        out: list[str | None] = []
        dim = 0
        for part in parts:
            if part is None or part is True or part is False:
                out.append(None)
            elif isinstance(part, int) or (isinstance(part, torch.Tensor) and not part.ndim):
                dim += 1
            else:
                out += [None] * (part.ndim - 1) if isinstance(part, torch.Tensor) else []
                out.append(names[dim])
                dim += 1
        out += names[dim:]
        return tuple(out) if any(n is not None for n in out) else None

    def _set_at_index(self, index: Any, value: Any) -> None:
        set_at_index(self, index, value)

    def _plan_at_index(self, index: Any, value: Any) -> Any:
        return plan_at_index(self, index, value)

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        return self._traverse(fn, others, **kwargs)

    def __repr__(self) -> str:
        return tensordict_repr(self)


def _view_of_locked(td: TensorDict, view: TensorDict) -> TensorDict:
    """``view``, an index view of the locked ``td``, locked if ``td`` locks its views."""
    if getattr(td, "_locks_views", False):
        view._propagate_lock(True)
        view._locks_views = True
    return view


#: what :func:`_lookup` returns for a missing flat key, and for a key to look up in full
_MISSING = object()
_GENERAL = object()


def _lookup(td: TensorDict, key: tuple[Any, ...]) -> Any:
    """The value at the nested ``key`` of ``td`` (``td`` itself for ``()``), read straight
    from the stored dicts: ``_MISSING`` when ``key`` is a flat tuple of strings one of which
    is missing, ``_GENERAL`` when the lookup needs the general path (a part goes through a
    leaf or a lazy stack, or is not a string).

    A tensorclass on the way is read through its TensorDict's ``get``, which gives what
    the general path gives.

    >>> td = TensorDict({"n": {"b": torch.zeros(())}})
    >>> _lookup(td, ("n", "b")), _lookup(td, ("n", "c")) is _MISSING
    (tensor(0.), True)
    """
    node: Any = td
    try:
        for part in key:
            node = node._tensordict.get(part)  # (no KeyError to raise and catch)
            if node is None:  # (no entry is None)
                return _MISSING if is_flat_path(key) else _GENERAL
    except (AttributeError, TypeError, KeyError):  # a leaf, a lazy stack, a bad part...
        return _GENERAL
    return node


def _merge_writes(target: TensorDict, source: TensorDict,
                  writes: list[tuple[dict[str, Any], str, Any]]
                  ) -> list[tuple[dict[str, Any], str, Any]] | None:
    """The stores of ``target.update(source)`` when nothing needs checking: ``source``'s
    values already fit a batch size that extends ``target``'s, on its device, and no
    sub-TensorDict of ``target`` it writes into is locked or named (its names go to the
    sub-TensorDicts written). None when one does."""
    size, device = target._batch_size, target._device
    if target._is_locked or target._names is not None or \
            source._batch_size[: len(size)] != size or (
            device is not None and source._device != device):
        return None
    entries = target._tensordict
    for key, value in source._tensordict.items():
        present = entries.get(key)
        if present is not None and present.__class__ is not _Tensor and \
                is_sub_tensordict(present) and is_sub_tensordict(value):
            if present.__class__ is not TensorDict or value.__class__ is not TensorDict:
                return None  # a merge into (or from) a lazy stack...: the general path
            if _merge_writes(present, value, writes) is None:
                return None
        else:
            writes.append((entries, key, value))
    return writes


def _widen(children: list[Any], batch_size: torch.Size) -> None:
    """Give each sub-collection ``batch_size``; if one cannot take it, the ones already
    widened get their batch size back and the error propagates."""
    done: list[tuple[Any, torch.Size]] = []
    try:
        for child in children:
            done.append((child, child.batch_size))
            _resize(child, batch_size)
    except RuntimeError:
        for child, size in done:
            _resize(child, size)
        raise


def _resize(child: Any, batch_size: torch.Size) -> None:
    """Give a sub-collection ``batch_size``; a lazy stack resizes its parts (its public
    setter refuses any change, as upstream's)."""
    if isinstance(child, classes.LazyStackedTensorDict):
        child._resize(batch_size)
    else:
        child.batch_size = batch_size
