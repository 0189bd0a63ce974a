"""The one leaf-wise traversal, and the ``apply`` family built on it.

Every op that touches each leaf (apply, indexing, shape ops, device moves, clone,
pointwise math) is a function handed to :meth:`TraverseMixin._traverse`. The function
sees tensor leaves only. Shape ops and indexing pass the resulting ``batch_size``:
sub-TensorDicts then get ``batch_size + their extra dims`` and non-tensor data is
moved with the batch. Without ``batch_size`` non-tensor data is kept as it is.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2, 3)}}, batch_size=[2])
    >>> td.apply(lambda x: x * 2)["n", "b"].sum().item()
    12.0
    >>> td.named_apply(lambda key, x: x if key == "a" else None)
    TensorDict(batch_size=[2], fields={a: f32[]})
    >>> td.named_apply(lambda key, x: None) is None  # everything filtered out
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from operator import itemgetter
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection
from tensordict._plan import WritePlan
from tensordict._shapes import as_device, as_size
from tensordict._unbatched import UnbatchedTensor

_Tensor = torch.Tensor
_LONG = torch.int64
_index_select = torch.index_select


class IndexLeaves:
    """``x[index]`` for each tensor leaf, as a function the traversal recognises: a
    sub-collection of another kind is indexed as a whole (``index`` holds no ``...``).

    >>> IndexLeaves(1)(torch.arange(3))
    tensor(1)
    """

    __slots__ = ("index",)

    def __init__(self, index: Any) -> None:
        self.index = index

    def __call__(self, tensor: _Tensor) -> Any:
        return tensor[self.index]


def is_row_index(index: Any) -> bool:
    """Whether ``index`` is a 1-d int64 tensor, picking rows along dim 0: rows that
    ``torch.index_select`` copies several times faster than advanced indexing (28x for
    rows of 21 kB, 2x for rows of 11 floats), but without wrapping negative ones.

    >>> is_row_index(torch.tensor([2, 0])), is_row_index(torch.tensor([True, False]))
    (True, False)
    """
    return index.__class__ is _Tensor and index.dtype is _LONG and index.ndim == 1


def row_selector(rows: _Tensor) -> Callable[[_Tensor], _Tensor]:
    """``x[rows]`` for a row index (see :func:`is_row_index`), as one ``index_select``
    when ``x`` is a contiguous plain tensor on the CPU, as ``rows``. A negative or
    out-of-range row raises IndexError there: the caller then indexes the usual way,
    which wraps the former and reports the latter.

    >>> row_selector(torch.tensor([2, 0]))(torch.arange(6).view(3, 2))
    tensor([[4, 5],
            [0, 1]])
    """
    if not rows.is_cpu:
        return itemgetter(rows)

    def select_rows(tensor: _Tensor) -> _Tensor:
        if tensor.__class__ is _Tensor and tensor.is_cpu:
            try:
                if tensor.is_contiguous():
                    return _index_select(tensor, 0, rows)
            except RuntimeError:  # a sparse leaf (no strides), a nested one (no kernel)
                pass
        return tensor[rows]
    return select_rows


def dense_leaves(entries: dict[str, Any], leaves: list[_Tensor]) -> bool:
    """Collect the tensor leaves under the entries of a dense TensorDict, in traversal
    order; False if one of them is anything but a plain tensor or a dense TensorDict
    (non-tensor data, a lazy stack...: the callers then take the general traversal).

    >>> leaves = []
    >>> dense_leaves(TensorDict(a=torch.ones(1), n={"b": torch.ones(2)})._tensordict, leaves)
    True
    >>> [x.shape[0] for x in leaves]
    [1, 2]
    """
    dense = classes.TensorDict
    for entry in entries.values():
        if entry.__class__ is _Tensor:
            leaves.append(entry)
        elif not (entry.__class__ is dense and dense_leaves(entry._tensordict, leaves)):
            return False
    return True


def stacked_leaves(td: Any, leaves: list[_Tensor]) -> bool:
    """:func:`dense_leaves` of a dense TensorDict, or of every part of a lazy stack of
    them (the in-place fast paths write into the parts' leaves)."""
    if td.__class__ is classes.TensorDict:
        return dense_leaves(td._tensordict, leaves)
    return td.__class__ is classes.LazyStackedTensorDict and \
        all(stacked_leaves(part, leaves) for part in td.tensordicts)


class TraverseMixin:
    """The traversal (for classes storing entries in ``self._tensordict``)."""

    __slots__ = ()

    def _traverse(
        self,
        fn: Callable[..., Any],
        others: Sequence[Any] = (),
        *,
        batch_size: torch.Size | None = None,
        names: Any = NO_DEFAULT,
        device: Any = NO_DEFAULT,
        inplace: bool = False,
        call_on_nested: bool = False,
        default: Any = NO_DEFAULT,
        named: bool = False,
        nested_keys: bool = False,
        prefix: tuple[str, ...] = (),
        filter_empty: bool | None = None,
        is_leaf: Callable[[type], bool] | None = None,
        check_shapes: bool = False,
        plan: WritePlan | None = None,
    ) -> Any:
        """See the module docstring. ``check_shapes``: raise, naming the key, for a tensor
        result whose leading dims are not the batch size (for functions that are not
        ours). ``inplace``: the results are written into the leaves once every one is
        computed and checked (by ``plan``, run by whoever made it)."""
        if batch_size is not None and batch_size.__class__ is not torch.Size:
            batch_size = torch.Size(batch_size)  # callers outside core pass lists
        if not (others or inplace or call_on_nested or named or is_leaf is not None
                or plan is not None):
            return self._map_leaves(fn, batch_size, names, device, filter_empty, prefix,
                                    check_shapes)
        parent_ndim = len(self._batch_size)
        reshaping = batch_size is not None and batch_size != self._batch_size
        out: dict[str, Any] = {}
        kept = 0
        own_plan = inplace and plan is None
        if own_plan:
            plan = WritePlan()
        extra: dict[str, Any] = {} if plan is None else {"plan": plan}
        expected, ndim = None, 0
        if check_shapes:
            extra["check_shapes"] = True
            expected = self._batch_size if batch_size is None else batch_size
            ndim = len(expected)
        key = None
        try:
            for key, value in self._tensordict.items():
                if others:
                    other_values = [_entry(other, key, default, prefix) for other in others]
                else:
                    other_values = ()
                if named:
                    key_arg = (prefix + (key,) if nested_keys and prefix else key,)
                if value.__class__ is _Tensor or (isinstance(value, _Tensor) and not (
                        batch_size is not None and value.__class__ is UnbatchedTensor)):
                    new = fn(*key_arg, value, *other_values) if named else fn(value,
                                                                              *other_values)
                    if ndim and new is not value and _off_batch(new, expected, ndim):
                        raise errors.batch_mismatch(prefix + (key,) if prefix else key,
                                                    new.shape, expected)
                elif value.__class__ is UnbatchedTensor:  # batch ops leave it as is
                    new = value._rebatch(batch_size)
                elif (call_on_nested or (is_leaf is not None and is_leaf(type(value)))) and not (
                        reshaping and getattr(value, "_is_non_tensor", False)):
                    # non-tensor data go to fn too, except in shape ops (moved with the batch)
                    new = fn(*key_arg, value, *other_values) if named else fn(value,
                                                                              *other_values)
                elif getattr(value, "_is_non_tensor", False):
                    try:
                        new = _moved_non_tensor(value, fn, batch_size, parent_ndim, device,
                                                fresh=not inplace)
                    except (RuntimeError, TypeError):
                        if not others:
                            raise
                        # fn (of the others' entries too) is no shape op to replay on the
                        # batch, as for x[mask] of differing objects: it gets the entry
                        new = fn(*key_arg, value, *other_values) if named else fn(
                            value, *other_values)
                else:
                    child_size, child_names = _child_shape(value, batch_size, names,
                                                           parent_ndim)
                    new = value._apply_nest(
                        fn, *other_values, batch_size=child_size, names=child_names,
                        device=device, inplace=inplace, call_on_nested=call_on_nested,
                        default=default, named=named, nested_keys=nested_keys,
                        prefix=prefix + (key,), filter_empty=filter_empty, is_leaf=is_leaf,
                        **extra,
                    )
                if new is None:
                    continue
                kept += 1
                if inplace:
                    if new is value:
                        continue
                    if isinstance(value, _Tensor) and isinstance(new, _Tensor):
                        plan.copy(value, new, prefix + (key,) if prefix else key)
                    else:
                        new = self._validate_value(new, key)
                        plan.call(partial(self._set_str, key, new, inplace=True, validated=True))
                else:
                    out[key] = new
        except (RuntimeError, ValueError, TypeError, IndexError) as err:
            _raise_keyed(err, key, prefix)
        if own_plan:
            plan.run()
        if not kept and _filtered(filter_empty, bool(self._tensordict)):
            return None
        if inplace:
            return self
        names = _result_names(names, self._names, batch_size, parent_ndim)
        return type(self)._from_entries(
            out,
            self._batch_size if batch_size is None else batch_size,
            self._device if device is NO_DEFAULT else device,
            names,
        )

    def _map_leaves(self, fn: Callable[[_Tensor], Any], batch_size: torch.Size | None,
                    names: Any, device: Any, filter_empty: bool | None,
                    prefix: tuple[str, ...] = (), check_shapes: bool = False,
                    on_leaf: Callable[[_Tensor], Any] | None = None) -> Any:
        """:meth:`_traverse` of one function over the tensor leaves, without the options
        (the path of apply, indexing, shape ops, device moves and copies). ``on_leaf``,
        when given, is what a tensor leaf gets instead of ``fn`` (a C callable doing the
        same, e.g. the ``itemgetter`` of :class:`IndexLeaves`)."""
        parent_ndim = len(self._batch_size)
        out: dict[str, Any] = {}
        own_class = self.__class__
        leaf_fn = fn if on_leaf is None else on_leaf
        if check_shapes:
            expected = self._batch_size if batch_size is None else batch_size
            ndim = len(expected)
        else:
            ndim = 0
        key = None
        try:
            for key, value in self._tensordict.items():
                if value.__class__ is _Tensor or (isinstance(value, _Tensor) and not (
                        batch_size is not None and value.__class__ is UnbatchedTensor)):
                    new = leaf_fn(value)
                    if check_shapes and new.__class__ is not _Tensor and \
                            not isinstance(new, _Tensor) and not is_tensor_collection(new):
                        new = _stored_result(new, expected, self._device, key)
                    if ndim and _off_batch(new, expected, ndim):
                        raise errors.batch_mismatch(prefix + (key,) if prefix else key,
                                                    new.shape, expected)
                elif value.__class__ is UnbatchedTensor:  # batch ops leave it as is
                    new = value._rebatch(batch_size)
                elif getattr(value, "_is_non_tensor", False):
                    new = _moved_non_tensor(value, fn, batch_size, parent_ndim, device,
                                            fresh=True)
                elif value.__class__ is own_class and len(value._batch_size) == parent_ndim:
                    # a sub-TensorDict without extra dims: the parent's new shape, as is
                    new = value._map_leaves(fn, batch_size, names, device, filter_empty,
                                            prefix + (key,), check_shapes, on_leaf)
                else:
                    child_size, child_names = _child_shape(value, batch_size, names,
                                                           parent_ndim)
                    if value.__class__ is own_class:
                        new = value._map_leaves(fn, child_size, child_names, device,
                                                filter_empty, prefix + (key,), check_shapes,
                                                on_leaf)
                    elif type(fn) is IndexLeaves:  # a lazy stack keeps views of its
                        new = value[fn.index]          # parts, a file reads only the rows
                    else:
                        new = value._apply_nest(fn, batch_size=child_size, names=child_names,
                                                device=device, filter_empty=filter_empty,
                                                prefix=prefix + (key,),
                                                check_shapes=check_shapes)
                if new is not None:
                    out[key] = new
        except (RuntimeError, ValueError, TypeError, IndexError) as err:
            _raise_keyed(err, key, prefix)
        if not out and _filtered(filter_empty, bool(self._tensordict)):
            return None
        if batch_size is None and names is NO_DEFAULT:  # the batch and its names kept
            return own_class._from_entries(
                out, self._batch_size, self._device if device is NO_DEFAULT else device,
                self._names)
        return own_class._from_entries(
            out, self._batch_size if batch_size is None else batch_size,
            self._device if device is NO_DEFAULT else device,
            _result_names(names, self._names, batch_size, parent_ndim))

    # -- public apply family -------------------------------------------------------------
    def apply(
        self,
        fn: Callable[..., Any],
        *others: Any,
        batch_size: Sequence[int] | None = None,
        device: Any = NO_DEFAULT,
        names: Sequence[str | None] | None = NO_DEFAULT,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
        filter_empty: bool | None = None,
        propagate_lock: bool = False,
        call_on_nested: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        out: Any = None,
        **constructor_kwargs: Any,
    ) -> Any:
        """A TensorDict of ``fn(leaf, *other_leaves)``; leaves for which fn returns None
        are dropped, and so are the sub-TensorDicts this empties. None if the result is
        empty (with ``filter_empty=None``, only if it had entries before).

        Args:
            fn: called on every tensor leaf (with the leaves at the same key of
                ``others``).
            *others: TensorDicts with the same structure.
            batch_size, device, names: of the result, if fn changes them.
            inplace: write the results back into this TensorDict.
            default: used for keys missing in ``others`` (otherwise KeyError), and for
                every leaf under a sub-TensorDict they lack.
            filter_empty: True: drop every empty sub-TensorDict of the result; None (the
                default): only those fn emptied; False: keep them all.
            propagate_lock: lock the result if this TensorDict is locked.
            call_on_nested: call fn on sub-TensorDicts and non-tensor data instead of
                recursing (or keeping them).
            is_leaf: ``is_leaf(type(entry))`` tells which entries besides tensors fn
                receives.
            out: write the results into this collection (as :meth:`update` does) and
                return it (None if every result is None).

        >>> td = TensorDict({"a": torch.zeros(2), "b": torch.ones(2)}, [2])
        >>> td.apply(lambda x, y: x + y, td)["b"]
        tensor([2., 2.])
        >>> td.apply(lambda x: None) is None
        True
        """
        if not (others or constructor_kwargs or inplace or call_on_nested or propagate_lock) \
                and batch_size is None and device is NO_DEFAULT and names is NO_DEFAULT \
                and default is NO_DEFAULT and is_leaf is None and out is None:
            if self.__class__ is classes.TensorDict:  # the walk itself, without options
                return self._map_leaves(fn, None, NO_DEFAULT, NO_DEFAULT, filter_empty, (),
                                        True)
            return self._apply_nest(fn, filter_empty=filter_empty, check_shapes=True)
        # upstream passes these traversal options through its constructor keywords
        named = constructor_kwargs.pop("named", False)
        nested_keys = constructor_kwargs.pop("nested_keys", False)
        if constructor_kwargs:
            raise TypeError(f"unexpected arguments {sorted(constructor_kwargs)}")
        return self._fast_apply(
            fn, *others, batch_size=batch_size, device=device, names=names, inplace=inplace,
            default=default, filter_empty=filter_empty, propagate_lock=propagate_lock,
            call_on_nested=call_on_nested, is_leaf=is_leaf, out=out, named=named,
            nested_keys=nested_keys, checked=False,
        )

    def _fast_apply(
        self,
        fn: Callable[..., Any],
        *others: Any,
        batch_size: Sequence[int] | None = None,
        device: Any = NO_DEFAULT,
        names: Sequence[str | None] | None = NO_DEFAULT,
        inplace: bool = False,
        call_on_nested: bool = False,
        default: Any = NO_DEFAULT,
        named: bool = False,
        nested_keys: bool = False,
        filter_empty: bool | None = False,
        is_leaf: Callable[[type], bool] | None = None,
        propagate_lock: bool = False,
        out: Any = None,
        num_threads: int = 0,
        checked: bool = True,
        **constructor_kwargs: Any,
    ) -> Any:
        """:meth:`apply` (keys first with ``named``, as tuples below the top level with
        ``nested_keys``), without checking its arguments and keeping empty sub-TensorDicts
        by default. With ``checked=False`` (as :meth:`apply` does) every result is checked
        against the batch size as it is built. ``num_threads`` and constructor keywords are
        accepted for compatibility with upstream callers and ignored.

        >>> td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)}}, [2])
        >>> td._fast_apply(lambda k, x: print(k), named=True, nested_keys=True)
        a
        ('n', 'b')
        TensorDict(batch_size=[2], fields={n: {}})
        """
        size = None if batch_size is None else as_size(batch_size)
        if size is not None and names is NO_DEFAULT:
            names = None
        checks = {} if checked else {"check_shapes": True}
        result = self._apply_nest(
            fn, *others, batch_size=size, names=names, inplace=inplace,
            device=device if device is NO_DEFAULT else as_device(device),
            default=default, filter_empty=filter_empty, call_on_nested=call_on_nested,
            named=named, nested_keys=nested_keys, is_leaf=is_leaf, **checks,
        )
        if out is not None:  # as upstream: the results replace out's entries
            return None if result is None else out.update(result)
        if propagate_lock and result is not None and self.is_locked:
            result.lock_()
        return result

    def apply_(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        """Like :meth:`apply`, writing each result into the existing leaf.

        >>> x = torch.zeros(2)
        >>> _ = TensorDict(x=x).apply_(lambda t: t + 1)
        >>> x
        tensor([1., 1.])
        """
        return self.apply(fn, *others, inplace=True, **kwargs)

    def named_apply(
        self,
        fn: Callable[..., Any],
        *others: Any,
        nested_keys: bool = False,
        batch_size: Sequence[int] | None = None,
        device: Any = NO_DEFAULT,
        names: Any = NO_DEFAULT,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
        filter_empty: bool | None = None,
        propagate_lock: bool = False,
        call_on_nested: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        out: Any = None,
        **constructor_kwargs: Any,
    ) -> Any:
        """Like :meth:`apply`, with the key passed first: the entry's own key, or with
        ``nested_keys=True`` its path (a string at the top level, a tuple below).

        >>> td = TensorDict({"a": torch.zeros(()), "n": {"b": torch.zeros(())}})
        >>> td.named_apply(lambda k, x: print(k), nested_keys=True) is None
        a
        ('n', 'b')
        True
        """
        return self.apply(
            fn, *others, named=True, nested_keys=nested_keys, batch_size=batch_size,
            device=device, names=names, inplace=inplace, default=default,
            filter_empty=filter_empty, propagate_lock=propagate_lock,
            call_on_nested=call_on_nested, is_leaf=is_leaf, out=out, **constructor_kwargs,
        )

    def _tensor_leaves(self) -> list[_Tensor]:
        """The tensor leaves, in traversal order (see :meth:`_from_leaves`)."""
        leaves: list[_Tensor] = []
        if stacked_leaves(self, leaves):
            return leaves
        leaves = []  # (the walk above may have collected some)
        self._apply_nest(leaves.append, filter_empty=False)
        return leaves

    def _from_leaves(self, leaves: Sequence[_Tensor], **kwargs: Any) -> Any:
        """A TensorDict of this structure whose tensor leaves are ``leaves``, in order."""
        it = iter(leaves)
        return self._apply_nest(lambda _: next(it), filter_empty=False, **kwargs)


def _stored_result(new: Any, batch_size: torch.Size, device: Any, key: str) -> Any:
    """A result of ``apply``'s fn that is no tensor (a number, a list, a string...) as a
    TensorDict of ``batch_size`` would store it (a tensor, NonTensorData), or None."""
    if new is None:
        return None
    empty = classes.TensorDict._from_entries({}, batch_size, device, None)
    return empty._validate_value(new, key)


def _off_batch(new: Any, expected: torch.Size, ndim: int) -> bool:
    """Whether ``new``, a result of fn, is a tensor whose leading dims are not
    ``expected`` (``ndim`` of them)."""
    return isinstance(new, _Tensor) and not new.is_nested and new.__class__ is not \
        UnbatchedTensor and (
        (not new.ndim or new.shape[0] != expected[0]) if ndim == 1
        else new.shape[:ndim] != expected)


def _moved_non_tensor(value: Any, fn: Callable[..., Any], batch_size: torch.Size | None,
                      parent_ndim: int, device: Any, fresh: bool) -> Any:
    """Non-tensor data of a traversal: moved with the batch (``batch_size`` given) and
    to ``device``; otherwise kept, in a wrapper of its own where the result is a new
    collection (``fresh``: a write into a copy made by ``to``, ``apply``, ``clone``...
    stays in the copy, as upstream), the object itself shared."""
    if batch_size is None:
        new = value.clone(False) if fresh else value
    else:
        new = value._restructure(fn, batch_size + value.batch_size[parent_ndim:])
    if device is not NO_DEFAULT and new.device != device:
        new = new.to(device)
    return new


def _child_shape(value: Any, batch_size: torch.Size | None, names: Any,
                 parent_ndim: int) -> tuple[torch.Size | None, Any]:
    """The ``batch_size`` and ``names`` a sub-collection is traversed with: the parent's
    new ones followed by its own extra dims."""
    if len(value.batch_size) == parent_ndim:  # no extra dims: the parent's, as they are
        return batch_size, names
    size = None if batch_size is None else batch_size + value.batch_size[parent_ndim:]
    if names is NO_DEFAULT:
        return size, NO_DEFAULT
    return size, None if names is None else tuple(names) + tuple(value.names[parent_ndim:])


def _result_names(names: Any, own: Any, batch_size: torch.Size | None,
                  parent_ndim: int) -> tuple[str | None, ...] | None:
    """The dim names of a traversal's result: the collection's own while the number of
    batch dims is kept, ``names`` when given (None when all are None)."""
    if names is NO_DEFAULT:
        return own if batch_size is None or len(batch_size) == parent_ndim else None
    if names is None:
        return None
    names = tuple(names)
    return None if names.count(None) == len(names) else names


def _raise_keyed(err: BaseException, key: str | None, prefix: tuple[str, ...]) -> None:
    """Raise ``err`` again, naming the entry ``prefix + (key,)`` unless it names one."""
    keyed = None if key is None else errors.with_key(err, prefix + (key,))
    if keyed is None:
        raise err
    raise keyed from err


def _filtered(filter_empty: bool | None, had_entries: bool) -> bool:
    """Whether a traversal result with no entry left is dropped (None): always with
    ``filter_empty=True``, when fn emptied it with None, never with False."""
    return bool(filter_empty) or (filter_empty is None and had_entries)


def _entry(other: Any, key: str, default: Any, prefix: tuple[str, ...] = ()) -> Any:
    if other is default:  # under a sub-TensorDict ``other`` lacks: default everywhere
        return default
    if isinstance(other, dict):
        value = other.get(key)
    else:
        value = other._get_str(key, None)  # entries are never None: None means missing
    if value is None:
        if default is not NO_DEFAULT:
            return default
        raise errors.MissingKeyError(f"key {prefix + (key,) if prefix else key!r} is missing "
                                     "from one of the TensorDicts passed to apply")
    return value
