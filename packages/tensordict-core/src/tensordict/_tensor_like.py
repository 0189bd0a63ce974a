"""Methods mirroring ``torch.Tensor``'s, applied leaf by leaf: the ``new_*`` constructors,
``as_tensor``, ``backward``, ``pad``, the quantized casts and ``copy_at_``; plus
``from_list`` / ``from_dict_instance``, which build a TensorDict from Python data.

The ``new_*`` constructors take the new *batch* size: every leaf keeps its feature dims
(and its dtype and device unless given), sub-TensorDicts keep their extra batch dims,
non-tensor data are kept as they are.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.ones(2, 3, 4), b={"c": torch.arange(6).view(2, 3)},
    ...                 batch_size=[2, 3])
    >>> z = td.new_zeros(5)
    >>> z.batch_size, z["a"].shape, z["b", "c"].dtype
    (torch.Size([5]), torch.Size([5, 4]), torch.int64)
    >>> td.new_full((2,), 7.0)["b", "c"]
    tensor([7, 7])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection
from tensordict._nested_key import NestedKey
from tensordict._plan import writable_in_place
from tensordict._shapes import as_device

_Tensor = torch.Tensor

_FAST_COPY_ERROR = (
    "copy_at_(..., fast=True) requires the optimized tensor-only copy path, but the source, "
    "destination, or index is not compatible. Use fast=False or update_at_ for the general "
    "update semantics."
)


def _as_size(size: tuple[Any, ...]) -> torch.Size:
    """``new_empty(2, 3)`` and ``new_empty((2, 3))`` alike."""
    if len(size) == 1 and not isinstance(size[0], int):
        return torch.Size(size[0])
    return torch.Size(size)


def _aligned_names(names: Sequence[str | None], ndim: int) -> list[str | None] | None:
    """The dim names of a result with ``ndim`` batch dims: the old ones aligned right."""
    if not any(name is not None for name in names):
        return None
    return ([None] * ndim + list(names))[len(names):] if ndim else None


class TensorLikeMixin:
    """torch.Tensor-like constructors and ops (see the module docstring)."""

    __slots__ = ()

    # -- new_* constructors ---------------------------------------------------------------
    def _new_leaves(self, size: torch.Size, make: Callable[[_Tensor, torch.Size], _Tensor],
                    device: Any, empty_lazy: bool) -> Any:
        """A TensorDict of batch size ``size`` whose leaves are ``make(leaf, new_shape)``."""
        if empty_lazy and getattr(self, "tensordicts", None) is not None:
            dim = self.stack_dim if self.stack_dim < len(size) else 0
            part = size[:dim] + size[dim + 1:]
            return classes.LazyStackedTensorDict(
                *(classes.TensorDict(batch_size=part) for _ in range(size[dim] if size else 0)),
                stack_dim=dim)
        ndim = len(self.batch_size)

        def fn(x: _Tensor) -> _Tensor:
            return make(x, size + x.shape[ndim:])

        return self._apply_nest(fn, batch_size=size,
                                names=_aligned_names(self.names, len(size)),
                                device=_result_device(device), filter_empty=False)

    def new_empty(self, *size: Any, dtype: torch.dtype | None = None, device: Any = NO_DEFAULT,
                  requires_grad: bool = False, layout: torch.layout = torch.strided,
                  pin_memory: bool | None = None, empty_lazy: bool = False) -> Any:
        """A TensorDict of uninitialized leaves of batch size ``size`` (feature dims, dtype
        and device of each leaf kept unless given). ``empty_lazy``: on a lazy stack, a lazy
        stack of empty TensorDicts.

        >>> TensorDict(a=torch.ones(2, 3), batch_size=[2]).new_empty(4)["a"].shape
        torch.Size([4, 3])
        """
        kwargs = _factory_kwargs(dtype, device, requires_grad, layout, pin_memory)
        return self._new_leaves(_as_size(size), lambda x, s: x.new_empty(s, **kwargs), device,
                                empty_lazy)

    def new_zeros(self, *size: Any, dtype: torch.dtype | None = None, device: Any = NO_DEFAULT,
                  requires_grad: bool = False, layout: torch.layout = torch.strided,
                  pin_memory: bool | None = None, empty_lazy: bool = False) -> Any:
        """Like :meth:`new_empty`, filled with zeros.

        >>> TensorDict(a=torch.ones(2, 3), batch_size=[2]).new_zeros(4)["a"].sum()
        tensor(0.)
        """
        kwargs = _factory_kwargs(dtype, device, requires_grad, layout, pin_memory)
        return self._new_leaves(_as_size(size), lambda x, s: x.new_zeros(s, **kwargs), device,
                                empty_lazy)

    def new_ones(self, *size: Any, dtype: torch.dtype | None = None, device: Any = NO_DEFAULT,
                 requires_grad: bool = False, layout: torch.layout = torch.strided,
                 pin_memory: bool | None = None, empty_lazy: bool = False) -> Any:
        """Like :meth:`new_empty`, filled with ones.

        >>> TensorDict(a=torch.ones(2, 3), batch_size=[2]).new_ones(4)["a"].sum()
        tensor(12.)
        """
        kwargs = _factory_kwargs(dtype, device, requires_grad, layout, pin_memory)
        return self._new_leaves(_as_size(size), lambda x, s: x.new_ones(s, **kwargs), device,
                                empty_lazy)

    def new_full(self, size: Any, fill_value: Any, *, dtype: torch.dtype | None = None,
                 device: Any = NO_DEFAULT, requires_grad: bool = False,
                 layout: torch.layout = torch.strided, pin_memory: bool | None = None,
                 empty_lazy: bool = False) -> Any:
        """Like :meth:`new_empty`, filled with ``fill_value`` (cast to each leaf's dtype).

        >>> TensorDict(a=torch.arange(2), batch_size=[2]).new_full([3], 2.5)["a"]
        tensor([2, 2, 2])
        """
        kwargs = _factory_kwargs(dtype, device, requires_grad, layout, pin_memory)
        return self._new_leaves(_as_size((size,)),
                                lambda x, s: x.new_full(s, fill_value, **kwargs), device,
                                empty_lazy)

    def new_tensor(self, data: Any, *, dtype: torch.dtype | None = None,
                   device: Any = NO_DEFAULT, requires_grad: bool = False,
                   pin_memory: bool | None = None) -> Any:
        """``leaf.new_tensor(data)`` for every tensor leaf: ``data`` (a tensor, array,
        list or number) copied with each leaf's dtype; the batch size is ``data``'s shape.
        A TensorDict ``data`` gives each leaf the entry at its key (batch size of
        ``data``). Non-tensor entries are dropped.

        >>> td = TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.int64))
        >>> td.new_tensor([1.5, 2.5])["b"]
        tensor([1, 2])
        """
        kwargs = _factory_kwargs(dtype, device, requires_grad)
        tensors = self.filter_non_tensor_data()
        if is_tensor_collection(data):
            return tensors._apply_nest(lambda x, y: x.new_tensor(y, **kwargs), data,
                                       batch_size=data.batch_size, names=None,
                                       device=_result_device(device), filter_empty=False)
        shape = data.shape if isinstance(data, _Tensor) else torch.as_tensor(data).shape
        return tensors._apply_nest(lambda x: x.new_tensor(data, **kwargs), batch_size=shape,
                                   names=None, device=_result_device(device),
                                   filter_empty=False)

    # -- leaf-wise tensor ops -------------------------------------------------------------
    def as_tensor(self) -> Any:
        """A TensorDict of the same leaves, those with an ``as_tensor()`` method
        replaced by its result (tensors and tensor subclasses are kept as they are).

        >>> TensorDict(a=torch.ones(2)).as_tensor()["a"]
        tensor([1., 1.])
        """
        return self._apply_nest(_plain_tensor, filter_empty=False)

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """``torch.autograd.backward`` of every leaf that requires grad: scalars, unless
        ``gradient`` (a TensorDict of the same keys) gives the gradient of each.
        ``inputs`` (a TensorDict or tensors) restricts the accumulation.

        >>> x = torch.ones(3, requires_grad=True)
        >>> TensorDict(a=(2 * x).sum(), b=(3 * x).sum()).backward()
        >>> x.grad
        tensor([5., 5., 5.])
        """
        pairs = [(key, value) for key, value in self.items(True, True)
                 if isinstance(value, _Tensor) and value.requires_grad]
        if not pairs:
            raise RuntimeError("backward() cannot be called on a tensordict that has no leaf "
                               "tensor requiring gradients.")
        if gradient is None:
            for key, value in pairs:
                if value.ndim:
                    raise RuntimeError(
                        "grad can be implicitly created only for scalar outputs: the leaf at "
                        f"key {key!r} has shape {tuple(value.shape)}. Pass a gradient "
                        "tensordict matching the structure of this tensordict to backward().")
            grads = None
        else:
            grads = [gradient.get(key) for key, _ in pairs]
        if is_tensor_collection(inputs):
            inputs = [x for x in inputs.values(True, True) if isinstance(x, _Tensor)]
        torch.autograd.backward([value for _, value in pairs], grads, retain_graph,
                                create_graph, inputs=inputs)

    def pad(self, pad_size: Sequence[int], value: float = 0.0, inplace: bool = False,
            safe: bool = True) -> Any:
        """Pad the batch dims with ``value``: ``pad_size`` holds (before, after) pairs for
        the first batch dims in order (see :func:`tensordict.pad`). ``inplace``: this
        TensorDict (or lazy stack) takes the padded entries and batch size, its
        sub-collections kept. ``safe`` is accepted for compatibility.

        >>> TensorDict(a=torch.ones(2), batch_size=[2]).pad([1, 0], value=-1.0)["a"]
        tensor([-1.,  1.,  1.])
        """
        from tensordict._stack import pad

        return pad(self, pad_size, value, inplace=inplace)

    def _quantized(self, dtype: torch.dtype, cast_filter: Callable[..., bool] | None) -> Any:
        def cast(key: NestedKey, x: _Tensor) -> _Tensor:
            path = key if key.__class__ is tuple else (key,)
            return x.to(dtype) if cast_filter is None or cast_filter(path, x) else x
        return self._apply_nest(cast, named=True, nested_keys=True, filter_empty=False)

    def qint8(self, *, cast_filter: Callable[..., bool] | None = None) -> Any:
        """Every tensor leaf cast to ``torch.qint8`` (``cast_filter(key_tuple, leaf)``
        picks the leaves to cast). Raises where torch cannot cast to quantized dtypes.

        >>> td = TensorDict(a=torch.ones(2))
        >>> td.qint8(cast_filter=lambda key, x: False)["a"].dtype
        torch.float32
        """
        return self._quantized(torch.qint8, cast_filter)

    def quint8(self, *, cast_filter: Callable[..., bool] | None = None) -> Any:
        """Every tensor leaf cast to ``torch.quint8`` (see :meth:`qint8`).

        >>> TensorDict(a=torch.ones(2)).quint8(cast_filter=lambda k, x: False)["a"].dtype
        torch.float32
        """
        return self._quantized(torch.quint8, cast_filter)

    def qint32(self, *, cast_filter: Callable[..., bool] | None = None) -> Any:
        """Every tensor leaf cast to ``torch.qint32`` (see :meth:`qint8`).

        >>> TensorDict(a=torch.ones(2)).qint32(cast_filter=lambda k, x: False)["a"].dtype
        torch.float32
        """
        return self._quantized(torch.qint32, cast_filter)

    def quint4x2(self, *, cast_filter: Callable[..., bool] | None = None) -> Any:
        """Every tensor leaf cast to ``torch.quint4x2`` (see :meth:`qint8`).

        >>> TensorDict(a=torch.ones(2)).quint4x2(cast_filter=lambda k, x: False)["a"].dtype
        torch.float32
        """
        return self._quantized(torch.quint4x2, cast_filter)

    def clear_refs_for_compile_(self) -> Any:
        """Drop references kept for ``torch.compile``; nothing is kept here, returns self.

        >>> td = TensorDict()
        >>> td.clear_refs_for_compile_() is td
        True
        """
        return self

    # -- indexed writes and views ---------------------------------------------------------
    def copy_at_(self, tensordict: Any, idx: Any, non_blocking: bool = False, *,
                 fast: bool = True) -> Any:
        """Copy the tensor leaves of ``tensordict`` into this one's at the batch index
        ``idx`` (in place); returns self. ``fast=True`` requires both to be TensorDicts (at
        every depth: no lazy stack, view or tensorclass; but a sub-TensorDict of an index
        view, ``td._get_sub_tensordict(0)["n"]``, as upstream's), every tensor leaf of
        ``tensordict`` to exist here with the shape ``self[idx]`` gives it, and a basic
        index (integers, slices, None, Ellipsis); non-tensor data of ``tensordict`` is
        skipped. Otherwise RuntimeError, before any write. ``fast=False`` is
        :meth:`update_at_`.

        >>> td = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
        >>> td.copy_at_(TensorDict(a=torch.ones(2)), 1)["a"][:, 0]
        tensor([0., 1., 0.])
        """
        if not fast:
            return self.update_at_(tensordict, idx, non_blocking=non_blocking)
        if self.__class__ is classes._SubTensorDict and self._nested:
            views = _tensordict_of_views(self)  # a sub-TensorDict of an index view
            if views is not None:
                views.copy_at_(tensordict, idx, non_blocking)
                return self
        if self.__class__ is not classes.TensorDict or \
                tensordict.__class__ is not classes.TensorDict or not _is_basic_index(idx):
            raise RuntimeError(_FAST_COPY_ERROR)
        try:
            batch = torch.zeros((), dtype=torch.uint8).expand(self.batch_size)[idx].shape
        except (IndexError, RuntimeError, TypeError) as err:
            raise RuntimeError(_FAST_COPY_ERROR) from err
        pairs: list[tuple[_Tensor, _Tensor]] = []
        _copy_pairs(self, tensordict, batch, len(self.batch_size), pairs)
        if not writable_in_place([target for target, _ in pairs]):
            # a target to check closer (that path names it)
            return self.update_at_(tensordict, idx, non_blocking=non_blocking)
        for target, value in pairs:  # every pair checked: no write can fail half-way
            target[idx] = value
        return self

    def _get_sub_tensordict(self, idx: Any) -> Any:
        """A view of the entries at batch index ``idx`` (any index) that writes through:
        setting, updating, deleting or changing an entry in place changes this collection
        at ``idx``; a new entry is created here, zeros outside ``idx`` (see
        :mod:`tensordict._sub_tensordict`).

        >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
        >>> sub = td._get_sub_tensordict(torch.tensor([True, False, True]))
        >>> sub["a"] = torch.ones(2)
        >>> td["a"]
        tensor([1., 0., 1.])
        """
        return classes._SubTensorDict(self, idx)

    def _get_at_str(self, key: str, index: Any, default: Any = NO_DEFAULT) -> Any:
        """The entry ``key`` at the batch ``index``, as an index view reads it: a tensor's
        rows (a view of them where torch's indexing gives one), a sub-collection as a view
        writing through; ``default`` for a missing key (KeyError without one). Storage
        classes override it to read the rows alone.

        >>> td = TensorDict(a=torch.arange(3), batch_size=[3])
        >>> td._get_at_str("a", (slice(1, None),))
        tensor([1, 2])
        """
        value = self._get_str(key, default)
        if value is default and default is not NO_DEFAULT:
            return default
        if isinstance(value, classes.TensorDictBase) and not value._is_non_tensor:
            return classes._SubTensorDict(value, index, nested=True)
        return value[index]  # a tensor, non-tensor data, a tensorclass

    def _read_at(self, index: Any) -> Any:
        """The entries at the batch ``index``, as ``self[index]`` gives them (what the
        index views of this collection read)."""
        return self._index(index)

    # -- construction from Python data ----------------------------------------------------
    @classmethod
    def from_list(cls, input: Sequence[Any], *, auto_batch_size: bool | None = None,  # noqa: A002
                  batch_size: Any = None, device: Any = None, batch_dims: int | None = None,
                  names: Sequence[str | None] | None = None, lazy: bool | None = None) -> Any:
        """Stack a list of dicts (or TensorDicts), each made a TensorDict of batch size
        ``[]`` first, along a new first dim; a lazy stack if ``lazy`` or if the items
        hold different keys. ``batch_dims`` / ``auto_batch_size`` extend the batch size
        over the common leading dims of the leaves.

        >>> td = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}])
        >>> td.batch_size, td["a"].shape
        (torch.Size([2]), torch.Size([2, 3]))
        """
        from tensordict._stack import maybe_dense_stack

        items = []
        for item in input:
            if not (is_tensor_collection(item) or isinstance(item, Mapping)):
                raise ValueError(f"from_list takes dicts or TensorDicts, got a "
                                 f"{type(item).__name__}")
            items.append(item if is_tensor_collection(item)
                         else classes.TensorDict.from_dict(item))
        if not items:
            raise RuntimeError("list_of_tensordicts cannot be empty")
        if lazy:
            out = classes.LazyStackedTensorDict.lazy_stack(items, 0)
        else:
            out = maybe_dense_stack(items, 0)
        if batch_size is not None:
            out.batch_size = batch_size
        elif auto_batch_size or batch_dims is not None:
            out.auto_batch_size_(batch_dims)
        if names is not None:
            out.names = names
        return out if device is None else out.to(device)

    def from_dict_instance(self, input_dict: Any, *, auto_batch_size: bool | None = None,
                           batch_size: Any = None, device: Any = None,
                           batch_dims: int | None = None,
                           names: Sequence[str | None] | None = None) -> Any:
        """:meth:`from_dict` called on an instance: a TensorDict of ``input_dict``.

        >>> TensorDict().from_dict_instance({"a": torch.zeros(3)}, batch_size=[3])["a"]
        tensor([0., 0., 0.])
        """
        return classes.TensorDict.from_dict(input_dict, batch_size=batch_size, device=device,
                                            batch_dims=batch_dims,
                                            auto_batch_size=bool(auto_batch_size), names=names)


def _factory_kwargs(dtype: torch.dtype | None, device: Any, requires_grad: bool,
                    layout: torch.layout | None = None,
                    pin_memory: bool | None = None) -> dict[str, Any]:
    """The keywords of ``Tensor.new_*`` (None dtype/device: each leaf's own; ``layout``
    and ``pin_memory`` only for the ``new_empty``-like ones, which take them)."""
    kwargs: dict[str, Any] = {"requires_grad": requires_grad}
    if dtype is not None:
        kwargs["dtype"] = dtype
    if device is not NO_DEFAULT and device is not None:
        kwargs["device"] = device
    if layout is not None:
        kwargs["layout"] = layout
        kwargs["pin_memory"] = bool(pin_memory)
    return kwargs


def _result_device(device: Any) -> Any:
    """The device of a ``new_*`` result: this TensorDict's unless one is given."""
    return NO_DEFAULT if device is NO_DEFAULT else as_device(device)


def _plain_tensor(x: _Tensor) -> _Tensor:
    to_plain = getattr(x, "as_tensor", None)
    return x if to_plain is None else to_plain()


def _copy_pairs(dest: Any, source: Any, batch: torch.Size, ndim: int,
                pairs: list[tuple[_Tensor, _Tensor]]) -> None:
    """Append ``(destination leaf, source leaf)`` for every tensor leaf of ``source`` to
    ``pairs``, checking each: RuntimeError unless both sides are TensorDicts (at every
    depth) whose leaves match in kind and shape. Non-tensor data of ``source`` is skipped
    where ``dest`` holds none or non-tensor data at that key."""
    entries = dest._tensordict
    for key, value in source._tensordict.items():
        target = entries.get(key)
        if isinstance(value, _Tensor):
            if not isinstance(target, _Tensor) or value.shape != batch + target.shape[ndim:]:
                raise RuntimeError(_FAST_COPY_ERROR)
            pairs.append((target, value))
        elif getattr(value, "_is_non_tensor", False) and \
                (target is None or getattr(target, "_is_non_tensor", False)):
            continue
        elif value.__class__ is classes.TensorDict and target.__class__ is classes.TensorDict:
            _copy_pairs(target, value, batch, ndim, pairs)
        else:
            raise RuntimeError(_FAST_COPY_ERROR)


def _tensordict_of_views(view: Any) -> Any:
    """The TensorDict of views of its data that the index view ``view`` (a
    ``_SubTensorDict``, of a TensorDict or of another such view) stands for, as upstream
    gives for a sub-TensorDict of an index view; None where an index is no basic index
    (the entries would be copies) or the data is not a TensorDict's."""
    source = view._source
    if source.__class__ is classes._SubTensorDict:
        source = _tensordict_of_views(source)
    if source.__class__ is not classes.TensorDict or not _is_basic_index(view.idx):
        return None
    return source._index(view.idx)


def _is_basic_index(idx: Any) -> bool:
    """Whether ``idx`` selects by basic indexing alone (integers, slices, None, Ellipsis,
    0-dim integer tensors, tuples of these): the indices fast ``copy_at_`` takes."""
    if isinstance(idx, tuple):
        return all(_is_basic_index(part) for part in idx)
    if isinstance(idx, _Tensor):
        return not idx.ndim and not idx.is_floating_point() and idx.dtype is not torch.bool
    return idx is None or idx is Ellipsis or isinstance(idx, (int, slice)) or \
        hasattr(idx, "__index__")
