"""WriteBackMixin: the ops of a collection whose reads return copies.

A storage plugin's TensorDict (entries in a file, in a database) hands out tensors that
are copies of what it stores, so writing into them changes nothing. Such a class
inherits this mixin before ``TensorDictBase`` and provides ``to_tensordict()`` (read
everything), ``_peek_str`` (a meta tensor of each entry's shape and dtype), ``set_``
(overwrite a stored tensor) and ``_set_at_index`` (write rows). The mixin then gives:

- leaf-wise ops (``apply``, ``clone``, math, ``to``) computed on the data read into
  memory, returning ordinary TensorDicts;
- in-place ops (``apply_``, ``zero_``, ``add_``, ``+=``...) computed in memory and
  written back entry by entry;
- ``update_``/``copy_`` that check every key and shape before the first write, and
  ``update_at_``/``set_at_`` through ``_set_at_index``;
- ``td[key]`` (non-tensor data unwrapped), and ``td[index]`` through ``_index``, which
  returns ``IndexView(self, index)`` (:mod:`tensordict.storage`) in classes whose index
  views write through: the view reads entries with ``_get_at_str`` (override it to read
  the rows alone), all of them with ``_read_at``, and writes with ``_set_at_index``.

:func:`split_rows` tells such a class which rows of the first dim an index reads.

Example (a toy store keeping its entries as bytes, so every read is a copy):
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.storage import WriteBackMixin
    >>> class Bytes(WriteBackMixin, TensorDict):
    ...     def to_tensordict(self, **kwargs):
    ...         return TensorDict({k: v.clone() for k, v in self.items()}, self.batch_size)
    >>> store = Bytes(a=torch.zeros(2), batch_size=[2])
    >>> _ = store.add_(1)
    >>> store["a"]
    tensor([1., 1.])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from tensordict._collection import classes, is_tensor_collection
from tensordict._keys import is_leaf_nontensor
from tensordict._nontensor import check_non_tensor_write, is_non_tensor, unwrap_non_tensor
from tensordict._plan import WritePlan
from tensordict._update_keys import update_paths

#: in-place ops that change values: computed on the data read into memory, written back
IN_PLACE_OPS = (
    "abs_", "acos_", "add_", "addcdiv_", "addcmul_", "asin_", "atan_", "bitwise_and_",
    "bitwise_or_", "bitwise_xor_", "ceil_", "clamp_max_", "clamp_min_", "cos_", "cosh_",
    "div_", "erf_", "erfc_", "exp_", "expm1_", "fill_", "floor_", "floor_divide_", "frac_",
    "lerp_", "lgamma_", "log10_", "log1p_", "log2_", "log_", "masked_fill_", "maximum_",
    "minimum_", "mod_", "mul_", "neg_", "pow_", "reciprocal_", "round_", "sigmoid_",
    "sign_", "sin_", "sinh_", "sqrt_", "sub_", "tan_", "tanh_", "trunc_", "zero_",
    "__iadd__", "__iand__", "__ifloordiv__", "__imod__", "__imul__", "__ior__", "__ipow__",
    "__isub__", "__itruediv__", "__ixor__",
)


def _in_memory(name: str) -> Callable[..., Any]:
    """The in-place op ``name``, run on the data read into memory, then written back."""

    def op(self: Any, *args: Any, **kwargs: Any) -> Any:
        local = self.to_tensordict()
        getattr(local, name)(*args, **kwargs)
        self._write_back(local)
        return self

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}`` of the data read into memory, written back entry by entry."
    return op


def _path(key: Any) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


class WriteBackMixin:
    """Ops for collections whose reads are copies (see the module docstring). Their
    device is the one they were opened with and their dims have no names."""

    __slots__ = ()
    _names = None

    @property
    def device(self) -> torch.device | None:
        return self._device

    @device.setter
    def device(self, value: Any) -> None:
        raise RuntimeError(f"the device of a {type(self).__name__} is set when it is opened "
                           "(device=...); use .to(device) for an in-memory copy")

    @property
    def names(self) -> list[str | None]:
        return [None] * self.batch_dims

    @names.setter
    def names(self, value: Any) -> None:
        if value is not None and any(name is not None for name in value):
            raise NotImplementedError(f"a {type(self).__name__} has no dim names")

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        local = self.to_tensordict()
        result = local._apply_nest(fn, *others, **kwargs)
        if not kwargs.get("inplace"):
            return result
        plan = kwargs.get("plan")  # (a lazy stack's apply_: its plan writes every part)
        if plan is None:
            self._write_back(local)
        else:
            plan.call(self._write_back, local)
        return self

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str) or (isinstance(index, tuple) and index and
                                      all(isinstance(part, str) for part in index)):
            return unwrap_non_tensor(self._get_path(index))
        return self._index(index)

    def _read_at(self, index: Any) -> Any:
        """The entries at ``index`` read into an in-memory TensorDict, entry by entry
        through ``_get_at_str`` (what an index view reads; override it to read them at
        once)."""
        entries = {}
        for key in self._keys_str():
            value = self._get_at_str(key, index)
            if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
                value = value.to_tensordict()
            entries[key] = value
        return classes.TensorDict._from_entries(entries, self._indexed_batch(index),
                                                self.device)

    def _write_back(self, local: Any) -> None:
        """Store every tensor of ``local`` (this collection read into memory and changed
        there) in place of the entry of the same key."""
        for key, value in local.items(True, True):
            if isinstance(value, torch.Tensor):
                self.set_(key, value)

    def _plan_set_(self, plan: WritePlan, key: str, value: Any, path: Any,
                   non_blocking: bool) -> None:
        """A planned in-place write of ``value`` over the entry ``key`` (``update_`` of a
        lazy stack of such collections): a tensor over a stored tensor is checked now
        (``path`` names it) and written into what is stored, not into a copy read, when
        the plan runs; other entries as every collection plans them."""
        peek = self._peek_str(key, None)
        if not (isinstance(value, torch.Tensor) and isinstance(peek, torch.Tensor)):
            super()._plan_set_(plan, key, value, path, non_blocking)  # type: ignore[misc]
            return
        value = self._validate_value(value, path, non_blocking)
        check_fits(value.shape, peek.shape, path)
        plan.call(partial(self._set_str, key, value, inplace=True, validated=True,
                          non_blocking=non_blocking))

    def _plan_at_index(self, index: Any, value: Any) -> WritePlan:
        """``self[index] = value`` as a plan: through ``_set_at_index`` (into what is
        stored, not into the copies read) when the plan runs."""
        plan = WritePlan()
        plan.call(self._set_at_index, index, value)
        return plan

    def _indexed_batch(self, index: Any) -> torch.Size:
        """The batch size of ``self[index]``, computed without reading anything
        (IndexError for an index out of bounds)."""
        return torch.zeros(()).expand(self.batch_size)[index].shape

    def _stored_shape(self, key: Any) -> torch.Size | None:
        """The shape of the tensor stored at ``key`` (None for other entries)."""
        path = _path(key)
        peek = self._parent_of(path, False)._peek_str(path[-1])
        return peek.shape if isinstance(peek, torch.Tensor) else None

    def update_(self, input_dict_or_td: Mapping[Any, Any] | Any, clone: bool = False, *,
                keys_to_update: Sequence[Any] | None = None, **kwargs: Any) -> Any:
        """Write each entry of ``input_dict_or_td`` (non-tensor ones too) over the stored
        entry of the same key; every key and shape is checked before the first write. As
        upstream, keys this collection lacks are skipped, unless it lacks them all
        (KeyError), or ``keys_to_update`` selects one (the leaves under each of its keys)."""
        source = input_dict_or_td if is_tensor_collection(input_dict_or_td) else \
            classes.TensorDict(dict(input_dict_or_td), batch_size=self.batch_size)
        paths = update_paths(keys_to_update)
        writes = []
        missing: KeyError | None = None
        for key, value in source.items(True, True, is_leaf=is_leaf_nontensor):
            if paths is not None and not paths.selects(_path(key)):
                continue
            try:
                shape = self._stored_shape(key)
            except KeyError as err:
                missing = missing or err
                continue
            if isinstance(value, torch.Tensor) and shape is not None:
                check_fits(value.shape, shape, key)
                value = value.expand(shape)
            elif is_non_tensor(value):  # over a non-tensor entry: as every collection checks
                present = self.get(key)
                if is_non_tensor(present):
                    check_non_tensor_write(present, value, key)
            writes.append((key, value))
        if missing is not None and (not writes or paths is not None):
            raise missing
        for key, value in writes:
            if isinstance(value, torch.Tensor):
                self.set_(key, value)
            else:
                self.set(key, value)
        return self

    def copy_(self, tensordict: Any, non_blocking: bool = False) -> Any:
        """``update_`` from a collection with the same keys."""
        return self.update_(tensordict)

    def update_at_(self, input_dict_or_td: Mapping[Any, Any] | Any, index: Any,
                   clone: bool = False, *, non_blocking: bool = False,
                   keys_to_update: Sequence[Any] | None = None) -> Any:
        """Write the entries of ``input_dict_or_td`` at ``index`` of the stored ones."""
        source = input_dict_or_td
        if not is_tensor_collection(source):
            source = classes.TensorDict(dict(source),
                                                    batch_size=self._indexed_batch(index))
        paths = update_paths(keys_to_update)
        if paths is not None:
            source = source.select(*paths.paths, strict=False)
        self._set_at_index(index, source)
        return self

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Any:
        """Write ``value`` at ``index`` of the entry at ``key``."""
        batch = self._indexed_batch(index)
        self._set_at_index(index, classes.TensorDict({key: value}, batch_size=batch))
        return self


for _name in IN_PLACE_OPS:
    setattr(WriteBackMixin, _name, _in_memory(_name))
del _name


_ARRAYS = (torch.Tensor, np.ndarray, list)


def check_fits(shape: Sequence[int], target: Sequence[int], key: Any,
               index: Any = None) -> None:
    """Raise a RuntimeError naming ``key`` (and ``index``) unless a value of ``shape``
    can be written over an entry of shape ``target`` (it may broadcast to it).

    >>> check_fits((1, 3), (4, 3), "obs")
    >>> check_fits((5,), (4,), "obs", 2)
    Traceback (most recent call last):
    ...
    RuntimeError: cannot write a value of shape (5,) into 'obs' at 2, of shape (4,)
    """
    try:
        fits = torch.broadcast_shapes(shape, target) == torch.Size(target)
    except RuntimeError:
        fits = False
    if not fits:
        at = "" if index is None else f" at {index!r},"
        raise RuntimeError(f"cannot write a value of shape {tuple(shape)} into {key!r}{at} "
                           f"of shape {tuple(target)}")


def split_rows(index: Any, batch: torch.Size) -> tuple[Any, tuple[Any, ...]]:
    """``(rows, rest)`` such that ``td[index] == td[rows][rest]``, for storage that reads
    rows of the first batch dim cheaply: ``rows`` is a forward slice (an int becomes a
    slice of one row) or sorted row numbers (from a mask or a list, duplicates removed),
    and ``rest`` the index applied to the rows read; ``rows`` is None when the index
    needs everything (``...``, ``None``, several index tensors, negative steps).

    >>> split_rows(torch.tensor([3, 1, 3]), torch.Size([5]))
    (array([1, 3]), (tensor([1, 0, 1]),))
    >>> split_rows((2, slice(0, 1)), torch.Size([5, 4]))
    (slice(2, 3, None), (0, slice(0, 1, None)))
    """
    parts = index if isinstance(index, tuple) else (index,)
    if not batch or not parts or any(
            part is None or part is Ellipsis or isinstance(part, _ARRAYS) for part in parts[1:]):
        return None, parts
    first, rest = parts[0], parts[1:]
    length = batch[0]
    if isinstance(first, (int, np.integer)) and not isinstance(first, bool):
        row = int(first)
        if not -length <= row < length:
            raise IndexError(f"index {row} is out of bounds for dim 0 of size {length}")
        row %= length
        return slice(row, row + 1), (0, *rest)
    if isinstance(first, slice):
        if first.step is not None and first.step <= 0:
            return None, parts
        return slice(*first.indices(length)), (slice(None), *rest)
    if isinstance(first, _ARRAYS):
        array = np.asarray(first.cpu() if isinstance(first, torch.Tensor) else first)
        if array.dtype == np.bool_ and array.shape == (length,):
            return np.flatnonzero(array), (slice(None), *rest)
        if array.ndim == 1 and np.issubdtype(array.dtype, np.integer):
            if array.size and not (-length <= array.min() and array.max() < length):
                raise IndexError(f"index {array.tolist()} is out of bounds for dim 0 of "
                                 f"size {length}")
            rows, inverse = np.unique(array % length if array.size else array,
                                      return_inverse=True)
            return rows, (torch.from_numpy(inverse.reshape(-1)), *rest)
    return None, parts
