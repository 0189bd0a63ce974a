"""Devices, dtypes, memory and autograd state: ``to``, ``cpu``, ``cuda``, dtype casts,
``pin_memory``, ``share_memory_``, ``clone``, ``detach``, ``requires_grad_``, ``grad``...

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2, dtype=torch.long))
    >>> td.to(torch.float64)["a"].dtype, td.to("cpu").device
    (torch.float64, device(type='cpu'))
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from operator import attrgetter
from typing import Any

import torch

from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection
from tensordict._last_op import made_by
from tensordict._metadata import lock_views
from tensordict._moves import adopt, move, parse_to_args, pinned
from tensordict._plan import any_requires_grad
from tensordict._pointwise import caster, clone_at_once, map_dense
from tensordict._reductions import reduce_fully
from tensordict._shapes import as_device

_Tensor = torch.Tensor
_tensor_data = attrgetter("data")
#: leaves that ``data`` and ``detach`` turn into plain tensors along the fast walk
_PARAMETERS = (torch.nn.Parameter,)


class DeviceMixin:
    """Moves and copies, each one traversal."""

    __slots__ = ()

    def to(self, *args: Any, **kwargs: Any) -> Any:
        """A TensorDict with every tensor moved to a device and/or cast to a dtype.

        Accepts a device, a dtype, a tensor (its device and dtype), a TensorDict (its
        device) or a description of leaves from :meth:`attrs` (each leaf moved and cast
        as the entry of the same key says), and the keywords ``device``, ``dtype``,
        ``non_blocking``, ``batch_size``, ``memory_format`` (for the 4-D and 5-D leaves,
        as :meth:`torch.nn.Module.to`), ``other`` (a TensorDict: its device, and its dtype
        if its leaves share one), ``inplace`` (this TensorDict and its nested ones take the
        results and are returned), ``non_blocking_pin`` (pin the CPU leaves first, in
        ``num_threads`` threads, then copy them asynchronously) and ``num_threads``.

        ``non_blocking`` not given copies every leaf asynchronously and, for a move from an
        accelerator to the CPU, synchronizes once after the last copy, so the result can
        be read at once; ``True`` leaves the synchronization to the caller; ``False``
        copies each leaf blocking.

        A ``None`` device moves nothing; with neither a device nor a dtype, or only the
        device it is on, the TensorDict itself is returned (its batch size set in place if
        ``batch_size`` is given). Otherwise the result of a locked TensorDict is locked.
        Leaves already on the device (of the dtype) are kept, not copied. Leaving
        ``with td.to(...) as moved:`` writes ``moved`` back (each leaf on its original
        device and dtype; new keys as they are).

        >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
        >>> td.to(None) is td, td.to(batch_size=[]) is td, td.batch_size
        (True, True, torch.Size([]))
        >>> on_cpu = td.to("cpu")
        >>> on_cpu is td, on_cpu["a"] is td["a"], on_cpu.to("cpu") is on_cpu
        (False, True, True)
        >>> td.to("meta", inplace=True) is td, td["a"].device
        (True, device(type='meta'))

        A consolidated TensorDict (see :meth:`consolidate`) moves as one buffer, and the
        result is consolidated too.
        """
        device, dtype, batch_size, non_blocking, options = parse_to_args(*args, **kwargs)
        if device is not None:
            device = as_device(device)
        if options is not None:
            out = options.apply(self, device, dtype, non_blocking)
        elif device is None:
            out = self if dtype is None else _cast(self, dtype, None)
        else:
            out = move(self, device, dtype, non_blocking)
        if out is not self:
            if self.is_locked:  # as upstream
                out.lock_()
            made_by(out, "to", args, kwargs, self)
        if batch_size is not None:
            out.batch_size = batch_size
        return out

    def cpu(self, **kwargs: Any) -> Any:
        """The TensorDict on the CPU."""
        return self.to("cpu", **kwargs)

    def cuda(self, device: Any = None, **kwargs: Any) -> Any:
        """The TensorDict on a CUDA device (the current one unless given)."""
        if device is None:
            device = "cuda"
        elif isinstance(device, int):
            device = f"cuda:{device}"
        return self.to(device, **kwargs)

    def clone(self, recurse: bool = True, **kwargs: Any) -> Any:
        """A deep copy (``recurse=False``: new structure, same tensors); never locked."""
        if recurse:
            out = clone_at_once(self)  # one _foreach call for every leaf
            if out is not None:
                return out
        if self.__class__ is classes.TensorDict:
            if not recurse:
                return _copy_structure(self)
            return self._map_leaves(torch.Tensor.clone, None, NO_DEFAULT, NO_DEFAULT, False)
        return self._apply_nest(torch.Tensor.clone if recurse else _same, filter_empty=False)

    def to_tensordict(self, *, retain_none: bool | None = None) -> Any:
        """A :class:`TensorDict` copy: every tensor cloned, every sub-collection (a lazy
        stack, a tensorclass, a locked or memory-mapped TensorDict) a TensorDict too,
        unlocked, with the batch size, device and dim names. ``retain_none`` is accepted
        as upstream's is: entries holding ``None`` are kept either way.

        >>> stack = TensorDict.lazy_stack([TensorDict(a=torch.zeros(2)).lock_()] * 2)
        >>> out = stack.to_tensordict()
        >>> type(out).__name__, out.batch_size, out.is_locked
        ('TensorDict', torch.Size([2]), False)
        """
        entries: dict[str, Any] = {}
        for key in self._keys_str():
            value = self._get_str(key)
            if isinstance(value, torch.Tensor):
                value = value.clone()
            elif getattr(value, "_is_non_tensor", False):
                value = value.clone()
            elif is_tensor_collection(value):
                value = value.to_tensordict(retain_none=retain_none)
            entries[key] = value
        names = tuple(self.names)
        return classes.TensorDict._from_entries(entries, self.batch_size, self.device,
                                              names if any(n is not None for n in names)
                                              else None)

    def detach(self) -> Any:
        """A TensorDict of detached tensors (locked if this one is, as upstream)."""
        out = map_dense(self, _Tensor.detach, leaves_also=_PARAMETERS)
        if out is None:
            out = self._apply_nest(_Tensor.detach, filter_empty=False)
        return out.lock_() if self.is_locked else out

    def detach_(self) -> Any:
        """Detach every leaf in place.

        >>> td = TensorDict(a=torch.ones(2, requires_grad=True) * 2)
        >>> td.detach_()["a"].requires_grad
        False
        """
        for leaf in self._tensor_leaves():
            leaf.detach_()
        return self

    # -- dtypes ----------------------------------------------------------------------------
    def type(self, dst_type: torch.dtype, *,
             cast_filter: Callable[[tuple[str, ...], torch.Tensor], bool] | None = None) -> Any:
        """Cast every leaf (those ``cast_filter(key, leaf)`` accepts, ``key`` a tuple of
        str, if given) to ``dst_type``. Unlike ``to`` and the named casts (``float()``...),
        the result is never locked, as upstream's.

        >>> import tensordict
        >>> td = TensorDict(a=torch.ones(1), b=torch.ones(1, dtype=torch.long))
        >>> td.type(torch.float64, cast_filter=tensordict.is_floating)["b"].dtype
        torch.int64
        """
        if self.is_locked:
            warnings.warn("type() returns an unlocked tensordict for a locked one. Starting "
                          "with TensorDict 0.17, the default will change to a locked result, "
                          "as int(), float() and to(dtype) return. Call unlock_() on the "
                          "result if you write into it.", FutureWarning, stacklevel=2)
        return _cast(self, dst_type, cast_filter)

    @property
    def dtype(self) -> torch.dtype | None:
        """The dtype shared by every leaf, or None when they differ (or there are none).

        >>> TensorDict(a=torch.ones(1)).dtype
        torch.float32
        """
        dtypes = {leaf.dtype for leaf in self._tensor_leaves()}
        return dtypes.pop() if len(dtypes) == 1 else None

    def is_floating_point(self) -> bool:
        """Whether every leaf has a floating point dtype."""
        return all(leaf.is_floating_point() for leaf in self._tensor_leaves())

    # -- device predicates -----------------------------------------------------------------
    @property
    def is_cpu(self) -> bool:
        """Whether the TensorDict's device is the CPU (False with no device)."""
        return self.device is not None and self.device.type == "cpu"

    @property
    def is_cuda(self) -> bool:
        """Whether the TensorDict's device is a CUDA device."""
        return self.device is not None and self.device.type == "cuda"

    @property
    def is_meta(self) -> bool:
        """Whether the TensorDict's device is the meta device."""
        return self.device is not None and self.device.type == "meta"

    # -- memory ----------------------------------------------------------------------------
    def pin_memory(self, num_threads: int | None = None, inplace: bool = False) -> Any:
        """Copies of the tensor leaves in page-locked memory (needs an accelerator), from
        which copies to the accelerator are faster and can run asynchronously. Keys
        holding the same tensor share its pinned copy.

        Args:
            num_threads: pin the leaves in that many threads (None or 0: this thread).
            inplace: this TensorDict and its nested ones take the pinned leaves and are
                returned; a locked one gets the pinned values copied into its leaves, which
                stay where they are.

        >>> td = TensorDict(a=torch.ones(2))
        >>> td.pin_memory()["a"].is_pinned()  # doctest: +SKIP
        True
        """
        out = pinned(self, num_threads)
        if not inplace:
            return out
        return self if adopt(self, out) else self.update_(out)

    def pin_memory_(self, num_threads: int = 0) -> Any:
        """:meth:`pin_memory` replacing the leaves of this TensorDict by the pinned copies."""
        return self.pin_memory(num_threads, inplace=True)

    def share_memory_(self) -> Any:
        """Move every leaf to shared memory and lock the TensorDict; as upstream, its
        index views (``td[0]``, which share that memory) are locked too.

        >>> td = TensorDict(a=torch.ones(2), batch_size=[2]).share_memory_()
        >>> td.is_shared(), td.is_locked, td[0].is_locked
        (True, True, True)
        """
        for leaf in self._tensor_leaves():
            leaf.share_memory_()
        self.lock_()
        return lock_views(self) if isinstance(self, classes.TensorDict) else self

    def is_shared(self) -> bool:
        """Whether the leaves live in shared memory (False without leaves)."""
        leaves = self._tensor_leaves()
        return bool(leaves) and all(leaf.is_shared() or leaf.is_cuda for leaf in leaves)

    def is_contiguous(self) -> bool:
        """Whether every leaf is contiguous."""
        return all(map(_Tensor.is_contiguous, self._tensor_leaves()))

    def contiguous(self) -> Any:
        """A TensorDict of contiguous leaves (leaves already contiguous are shared).

        >>> td = TensorDict(a=torch.zeros(3), batch_size=[3]).expand(2, 3)
        >>> td.contiguous()["a"].stride()
        (3, 1)
        """
        return self._apply_nest(lambda x: x.contiguous(), filter_empty=False)

    def record_stream(self, stream: Any) -> Any:
        """Mark every (CUDA) leaf as used by ``stream``."""
        for leaf in self._tensor_leaves():
            leaf.record_stream(stream)
        return self

    def data_ptr(self, *, storage: bool = False) -> Any:
        """A TensorDict (batch size ``[]``) of each leaf's data pointer (of its storage
        with ``storage=True``)."""
        def ptr(x: torch.Tensor) -> torch.Tensor:
            address = x.untyped_storage().data_ptr() if storage else x.data_ptr()
            return torch.tensor(address)
        return reduce_fully(self, ptr).to("cpu")

    def bytes(self, *, count_duplicates: bool = True) -> int:
        """The number of bytes of the leaves (each storage once without
        ``count_duplicates``).

        >>> TensorDict(a=torch.zeros(3), b=torch.zeros(2, dtype=torch.int64)).bytes()
        28
        """
        return _total(self, lambda x: x.nbytes, count_duplicates)

    def param_count(self, *, count_duplicates: bool = True) -> int:
        """The number of elements of the leaves.

        >>> TensorDict(a=torch.zeros(3), b=torch.zeros(2)).param_count()
        5
        """
        return _total(self, lambda x: x.numel(), count_duplicates)

    # -- autograd --------------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:
        """Whether any leaf requires grad."""
        return any_requires_grad(self._tensor_leaves())

    def requires_grad_(self, requires_grad: bool = True) -> Any:
        """Set ``requires_grad`` on every leaf, in place.

        >>> TensorDict(a=torch.zeros(2)).requires_grad_().requires_grad
        True
        """
        for leaf in self._tensor_leaves():
            leaf.requires_grad_(requires_grad)
        return self

    @property
    def data(self) -> Any:
        """A TensorDict of the leaves' ``.data`` (detached, same storage).

        >>> TensorDict(w=torch.nn.Parameter(torch.ones(2))).data["w"].requires_grad
        False
        """
        out = map_dense(self, _tensor_data, leaves_also=_PARAMETERS)
        return self._apply_nest(_tensor_data, filter_empty=False) if out is None else out

    @property
    def grad(self) -> Any:
        """A TensorDict of the leaves' gradients (leaves without one are left out).

        >>> x = torch.ones(2, requires_grad=True)
        >>> (x * 3).sum().backward()
        >>> TensorDict(x=x).grad["x"]
        tensor([3., 3.])
        """
        return self._apply_nest(lambda x: x.grad)

    def zero_grad(self, set_to_none: bool = True) -> Any:
        """Reset the gradients of the leaves (to None, or to zeros).

        >>> x = torch.ones(2, requires_grad=True)
        >>> x.sum().backward()
        >>> TensorDict(x=x).zero_grad()["x"].grad is None
        True
        """
        for leaf in self._tensor_leaves():
            if leaf.grad is None:
                continue
            if set_to_none:
                leaf.grad = None
            else:
                leaf.grad.zero_()
        return self


def _cast(td: Any, dtype: torch.dtype,
          cast_filter: Callable[[tuple[str, ...], torch.Tensor], bool] | None) -> Any:
    """The unlocked result of ``td.type(dtype, cast_filter=cast_filter)``."""
    if cast_filter is not None:
        def cast(key: Any, x: torch.Tensor) -> torch.Tensor:
            return x.to(dtype) if cast_filter(key if key.__class__ is tuple else (key,),
                                              x) else x
        return td._apply_nest(cast, named=True, nested_keys=True, filter_empty=False)
    cast = caster(dtype)
    out = map_dense(td, cast)  # a dense TensorDict: one walk
    return td._apply_nest(cast, filter_empty=False) if out is None else out


def _total(td: Any, measure: Callable[[torch.Tensor], int], count_duplicates: bool) -> int:
    leaves = td._tensor_leaves()
    if not count_duplicates:
        unique = {(leaf.untyped_storage().data_ptr(), leaf.storage_offset(), leaf.shape,
                   leaf.stride(), leaf.dtype): leaf for leaf in leaves}
        leaves = list(unique.values())
    return sum(measure(leaf) for leaf in leaves)


def is_floating(*args: Any) -> bool:
    """Cast filter: floating point leaves. Called as ``(leaf)`` or, as the casts call
    their ``cast_filter``, ``(key, leaf)``.

    >>> is_floating(torch.zeros(1)), is_floating(("a",), torch.zeros(1, dtype=torch.long))
    (True, False)
    """
    return args[-1].dtype.is_floating_point


def is_integer(*args: Any) -> bool:
    """Cast filter: integer (not bool) leaves; ``(leaf)`` or ``(key, leaf)``.

    >>> is_integer(torch.zeros(1, dtype=torch.long)), is_integer(("a",), torch.zeros(1))
    (True, False)
    """
    dtype = args[-1].dtype
    return not dtype.is_floating_point and not dtype.is_complex and dtype is not torch.bool


def is_bool(*args: Any) -> bool:
    """Cast filter: bool leaves; ``(leaf)`` or ``(key, leaf)``.

    >>> is_bool(torch.zeros(1, dtype=torch.bool))
    True
    """
    return args[-1].dtype is torch.bool


def is_inexact(*args: Any) -> bool:
    """Cast filter: floating point or complex leaves; ``(leaf)`` or ``(key, leaf)``.

    >>> is_inexact(torch.zeros(1, dtype=torch.complex64))
    True
    """
    dtype = args[-1].dtype
    return dtype.is_floating_point or dtype.is_complex


_CASTS = {
    "float": torch.float32, "double": torch.float64, "half": torch.float16,
    "bfloat16": torch.bfloat16, "int": torch.int32, "bool": torch.bool,
    "float16": torch.float16, "float32": torch.float32, "float64": torch.float64,
    "int8": torch.int8, "int16": torch.int16, "int32": torch.int32, "int64": torch.int64,
    "uint8": torch.uint8, "uint16": torch.uint16, "uint32": torch.uint32,
    "uint64": torch.uint64, "complex32": torch.complex32, "complex64": torch.complex64,
    "complex128": torch.complex128,
}


def _make_cast(name: str, dtype: torch.dtype) -> Callable[..., Any]:
    def cast(self: Any, *, cast_filter: Callable[[tuple[str, ...], torch.Tensor], bool] |
             None = None) -> Any:
        out = _cast(self, dtype, cast_filter)
        return out.lock_() if self.is_locked else out  # as upstream, unlike type()
    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = (f"Cast the leaves (those ``cast_filter(key, leaf)`` accepts) to "
                    f"``{dtype}``; the result of a locked TensorDict is locked.\n\n"
                    f"        >>> TensorDict(a=torch.zeros(1)).{name}()['a'].dtype"
                    # complex32 is experimental in torch and warns when used
                    f"{'  # doctest: +SKIP' if dtype is torch.complex32 else ''}\n"
                    f"        {dtype}\n")
    return cast


for _name, _dtype in _CASTS.items():
    setattr(DeviceMixin, _name, _make_cast(_name, _dtype))


def _same(tensor: torch.Tensor) -> torch.Tensor:
    return tensor


def _copy_structure(td: Any) -> Any:
    """``td.clone(recurse=False)`` of a dense TensorDict: a new node for each dense node,
    holding the same tensors and non-tensor objects, in wrappers of their own (what the
    traversal of :func:`_same` returns, without a call per leaf: a write into the copy's
    non-tensor entry stays there, as upstream); other sub-collections are traversed so.

    >>> td = TensorDict(a=torch.zeros(1), n={"b": torch.zeros(1)})
    >>> out = _copy_structure(td)
    >>> out["n"] is td["n"], out["n", "b"] is td["n", "b"]
    (False, True)
    """
    dense = td.__class__
    entries = td._tensordict.copy()
    for key, value in td._tensordict.items():
        if value.__class__ is _Tensor:
            continue
        if value.__class__ is dense:
            entries[key] = _copy_structure(value)
        elif getattr(value, "_is_non_tensor", False):
            entries[key] = value.clone(False)
        elif not isinstance(value, _Tensor):
            entries[key] = value._apply_nest(_same, filter_empty=False)
    return dense._from_entries(entries, td._batch_size, td._device, td._names)
