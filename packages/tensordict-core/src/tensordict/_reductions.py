"""Reductions over the leaves: ``sum mean std var prod nansum nanmean max min amax amin
norm logsumexp cummax cummin softmax``.

``dim`` names batch dims only (an int, a tuple, negative allowed) and the feature dims
of each leaf are kept; no ``dim`` reduces each leaf fully (batch size ``[]``);
``dim="feature"`` reduces the feature dims and keeps the batch (``keepdim`` is refused);
``reduce=True`` gives one tensor for the whole TensorDict (with ``dim="feature"``, one
value per batch element). ``key_transform`` renames every key of the result, level by
level (a tuple result nests the entry).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.ones(2, 3), b={"c": torch.ones(2, 3, 4)}, batch_size=[2, 3])
    >>> td.sum(dim=1)["b", "c"].shape, td.sum()["a"], td.sum(reduce=True)
    (torch.Size([2, 4]), tensor(6.), tensor(30.))
    >>> values, indices = td.max(dim=0)
    >>> indices["a"].shape
    torch.Size([3])
    >>> td.quantile(0.5, dim="feature")["b", "c"].shape
    torch.Size([2, 3])
    >>> list(td.mean(key_transform=lambda key: key + "_mean").keys(True, True))
    ['a_mean', ('b_mean', 'c_mean')]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tensordict._collection import NO_DEFAULT, acts_as_tensordict, classes
from tensordict._shape_ops import batch_dim

_Tensor = torch.Tensor


def _dims(td: Any, dim: Any, op: str | None = None) -> tuple[int, ...]:
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return tuple(sorted({batch_dim(td, d, op=op) for d in dims}))


def _reduced_size(td: Any, dims: tuple[int, ...], keepdim: bool) -> tuple[torch.Size, Any]:
    batch, names = td.batch_size, td.names
    if keepdim:
        return torch.Size([1 if i in dims else s for i, s in enumerate(batch)]), names
    keep = [i for i in range(len(batch)) if i not in dims]
    return torch.Size([batch[i] for i in keep]), [names[i] for i in keep]


def reduce_fully(td: Any, fn: Callable[..., Any], *others: Any) -> Any:
    """A TensorDict of batch size ``[]`` (nested ones too) of ``fn(leaf, *other_leaves)``,
    where ``fn`` reduces a leaf (and its matching leaves) to a scalar."""
    def call(x: Any, *ys: Any) -> Any:
        return fn(x, *ys) if isinstance(x, _Tensor) else reduce_fully(x, fn, *ys)
    return td._apply_nest(call, *others, batch_size=torch.Size(), names=None,
                          call_on_nested=True, filter_empty=False)


def reduce_leaves(td: Any, name: str, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
                  reduce: bool | None = None, **kwargs: Any) -> Any:
    """``torch.<name>(leaf, dim, keepdim, **kwargs)`` for every leaf, as documented above."""
    fn = getattr(torch, name)
    if reduce:
        return _reduce_all(td, fn, dim, keepdim, **kwargs)
    if dim is NO_DEFAULT or dim is None:
        return reduce_fully(td, lambda x: fn(x, **kwargs))
    if isinstance(dim, str):
        _check_feature(dim, keepdim)
        return _over_features(td, lambda flat: fn(flat, dim=-1, **kwargs),
                              lambda sub: reduce_leaves(sub, name, "feature", **kwargs))
    dims = _dims(td, dim, "logsumexp" if name == "logsumexp" else None)
    size, names = _reduced_size(td, dims, bool(keepdim))
    dim_arg = dims if len(dims) > 1 else dims[0]
    return td._apply_nest(lambda x: fn(x, dim=dim_arg, keepdim=bool(keepdim), **kwargs),
                          batch_size=size, names=names, filter_empty=False)


def _over_features(td: Any, reduce_flat: Callable[[_Tensor], _Tensor],
                   recurse: Callable[[Any], Any], **kwargs: Any) -> Any:
    """``reduce_flat`` of every tensor leaf with its feature dims flattened into the last
    one; ``recurse`` for a sub-collection (which keeps its own batch dims); non-tensor
    entries as they are. ``kwargs`` go to the traversal (the result's batch size)."""
    ndim = len(td.batch_size)

    def feature(x: Any) -> Any:
        if getattr(x, "_is_non_tensor", False):
            return x
        if not isinstance(x, _Tensor):
            return recurse(x)
        return reduce_flat(_flat_features(x, ndim))
    return td._apply_nest(feature, call_on_nested=True, filter_empty=False, **kwargs)


def _flat_features(x: _Tensor, ndim: int) -> _Tensor:
    """``x`` with its feature dims (after the first ``ndim``) flattened into one."""
    return x.flatten(ndim) if x.ndim > ndim else x.unsqueeze(-1)


def _check_feature(dim: str, keepdim: Any) -> None:
    if dim != "feature":
        raise ValueError(f"dim must be batch dims or 'feature', got {dim!r}")
    if keepdim is True:
        raise TypeError("dim='feature' is incompatible with keepdim=True.")


def rename_keys(td: Any, key_transform: Callable[[str], Any] | None) -> Any:
    """``td`` with every key, at every level, replaced by ``key_transform(key)`` (None:
    ``td`` itself); a tuple result puts the entry under new sub-TensorDicts."""
    if key_transform is None or not acts_as_tensordict(td):
        return td
    out = td.empty()
    for key in td._keys_str():
        value = td._get_str(key)
        if acts_as_tensordict(value) and not value._is_non_tensor:
            value = rename_keys(value, key_transform)
        out.set(key_transform(key), value)
    return out


def quantile_leaves(td: Any, q: float | _Tensor, dim: Any, keepdim: bool,
                    interpolation: str, reduce: bool | None) -> Any:
    """``torch.quantile`` of every leaf (see :meth:`ReductionsMixin.quantile`)."""
    q_shape = q.shape if isinstance(q, _Tensor) else torch.Size()
    keepdim = bool(keepdim)
    if reduce:
        def over(x: _Tensor, dim: Any = None, keepdim: bool = False) -> _Tensor:
            if dim is None:
                return torch.quantile(x, q, interpolation=interpolation)
            dims = dim if isinstance(dim, tuple) else (dim,)
            return _quantile_over(x, q, dims, keepdim, interpolation)
        return _reduce_all(td, over, dim, keepdim)
    if dim is NO_DEFAULT or dim is None:
        return reduce_fully(td, lambda x: torch.quantile(x, q, interpolation=interpolation))
    if isinstance(dim, str):
        _check_feature(dim, keepdim)
        source = td.filter_non_tensor_data() if q_shape else td
        return _over_features(
            source, lambda flat: torch.quantile(flat, q, dim=-1, interpolation=interpolation),
            lambda sub: quantile_leaves(sub, q, "feature", False, interpolation, None),
            batch_size=q_shape + td.batch_size if q_shape else None,
            names=None if q_shape else NO_DEFAULT)
    dims = _dims(td, dim)
    size, names = _reduced_size(td, dims, keepdim)
    return td._apply_nest(lambda x: _quantile_over(x, q, dims, keepdim, interpolation),
                          batch_size=q_shape + size, names=None if q_shape else names,
                          filter_empty=False)


def _quantile_over(x: _Tensor, q: float | _Tensor, dims: tuple[int, ...], keepdim: bool,
                   interpolation: str) -> _Tensor:
    """``torch.quantile`` of ``x`` over the sorted ``dims`` (several: flattened first)."""
    if len(dims) == 1:
        return torch.quantile(x, q, dim=dims[0], keepdim=keepdim, interpolation=interpolation)
    moved = x.movedim(dims, tuple(range(len(dims))))
    out = torch.quantile(moved.reshape((-1,) + moved.shape[len(dims):]), q, dim=0,
                         interpolation=interpolation)
    if keepdim:
        offset = out.ndim - (x.ndim - len(dims))  # the dims of q, first
        for d in dims:
            out = out.unsqueeze(d + offset)
    return out


def _reduce_all(td: Any, fn: Callable[..., Any], dim: Any, keepdim: bool,
                **kwargs: Any) -> Any:
    """One tensor reducing every element of every leaf (over the batch dims ``dim`` if
    given: the elements of every leaf along them, in a row, one row per kept batch
    element; ``"feature"``: one value per batch element, ``keepdim`` ignored as upstream).
    ``fn`` is called with ``dim=-1``; a ``max``-like pair of results is kept a pair."""
    leaves = td._tensor_leaves()
    if not leaves:
        raise RuntimeError("cannot reduce a TensorDict without tensor leaves to one tensor")
    if dim is NO_DEFAULT or dim is None:
        return fn(torch.cat([x.reshape(-1) for x in leaves]), **kwargs)
    batch = td.batch_size
    ndim = len(batch)
    if dim == "feature":
        return fn(torch.cat([x.reshape(batch + (-1,)) for x in leaves], dim=-1), dim=-1,
                  **kwargs)
    dims = _dims(td, dim)
    kept = [d for d in range(ndim) if d not in dims]
    order, kept_size = (*kept, *dims, ndim), tuple(batch[d] for d in kept) + (-1,)
    out = fn(torch.cat([x.reshape(batch + (-1,)).permute(order).reshape(kept_size)
                        for x in leaves], dim=-1), dim=-1, **kwargs)
    if not keepdim:
        return out
    if isinstance(out, tuple):  # (values, indices)
        return type(out)(tuple(_with_dims(part, dims, ndim) for part in out))
    return _with_dims(out, dims, ndim)


def _with_dims(x: _Tensor, dims: tuple[int, ...], ndim: int) -> _Tensor:
    """``x`` with size-1 dims inserted at the sorted batch dims ``dims`` (out of ``ndim``;
    any leading dims of ``x`` beyond them, such as quantile's, come first)."""
    lead = x.ndim - (ndim - len(dims))
    for d in dims:
        x = x.unsqueeze(lead + d)
    return x


def _written(result: Any, out: Any) -> Any:
    """``result``, or ``out`` once the results are copied into its leaves."""
    return result if out is None else out.update_(result)


def _with_indices(td: Any, name: str, dim: Any, keepdim: bool, reduce: bool | None,
                  return_indices: bool) -> Any:
    """max / min / cummax / cummin: a ``torch.return_types`` pair of TensorDicts."""
    fn = getattr(torch, name)
    cumulative = name.startswith("cum")
    if isinstance(dim, str) and not cumulative:
        _check_feature(dim, keepdim and not reduce)
        if not reduce:
            raise RuntimeError(f"{name}(dim='feature') needs reduce=True (or use "
                               f"a{name}(dim='feature'))")
        ndim = len(td.batch_size)
        flat = torch.cat([_flat_features(x, ndim) for x in td._tensor_leaves()], dim=-1)
        pair = fn(flat, dim=-1)
        return pair if return_indices else pair.values
    if reduce and not cumulative and dim is not NO_DEFAULT and dim is not None:
        pair = _reduce_all(td, fn, dim, keepdim)  # values and indices, as upstream
        return pair if return_indices else pair.values
    if reduce or dim is NO_DEFAULT or dim is None:
        if cumulative:
            raise TypeError(f"{name} needs a dim")
        amin_max = "amax" if name == "max" else "amin"
        return reduce_leaves(td, amin_max, dim, keepdim, reduce=reduce)
    d = batch_dim(td, dim)
    if cumulative:
        size, names = td.batch_size, td.names
        call = (lambda x: fn(x, d))  # noqa: E731
    else:
        size, names = _reduced_size(td, (d,), keepdim)
        call = (lambda x: fn(x, d, keepdim=keepdim))  # noqa: E731
    if not return_indices:
        return td._apply_nest(lambda x: call(x).values, batch_size=size, names=names,
                              filter_empty=False)
    tensors = td.filter_non_tensor_data()
    pairs = tensors._apply_nest(call, batch_size=size, names=names, filter_empty=False)
    values = pairs._apply_nest(_pick(0), is_leaf=_is_pair, filter_empty=False)
    indices = pairs._apply_nest(_pick(1), is_leaf=_is_pair, filter_empty=False)
    return getattr(torch.return_types, name)((values, indices))


def _is_pair(cls: type) -> bool:
    return issubclass(cls, tuple)


def _pick(i: int) -> Callable[[Any], _Tensor]:
    return lambda pair: pair[i]


class ReductionsMixin:
    """Reductions (see the module docstring for ``dim``, ``keepdim`` and ``reduce``)."""

    __slots__ = ()

    def sum(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
            dtype: torch.dtype | None = None, reduce: bool | None = None,
            key_transform: Callable[[str], Any] | None = None) -> Any:
        """Sum of every leaf over batch dims ``dim`` (all elements without ``dim``).

        >>> TensorDict(a=torch.ones(2, 3), batch_size=[2]).sum(0)["a"]
        tensor([2., 2., 2.])
        """
        return rename_keys(reduce_leaves(self, "sum", dim, keepdim, reduce=reduce, dtype=dtype),
                           key_transform)

    def nansum(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
               dtype: torch.dtype | None = None, reduce: bool | None = None) -> Any:
        """Sum ignoring NaNs (see :meth:`sum`).

        >>> TensorDict(a=torch.tensor([1., float("nan")])).nansum()["a"]
        tensor(1.)
        """
        return reduce_leaves(self, "nansum", dim, keepdim, reduce=reduce, dtype=dtype)

    def mean(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
             dtype: torch.dtype | None = None, reduce: bool | None = None,
             key_transform: Callable[[str], Any] | None = None) -> Any:
        """Mean of every leaf over batch dims ``dim`` (all elements without ``dim``).

        >>> TensorDict(a=torch.arange(4.)).mean()["a"]
        tensor(1.5000)
        """
        return rename_keys(reduce_leaves(self, "mean", dim, keepdim, reduce=reduce, dtype=dtype),
                           key_transform)

    def nanmean(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
                dtype: torch.dtype | None = None, reduce: bool | None = None) -> Any:
        """Mean ignoring NaNs (see :meth:`mean`).

        >>> TensorDict(a=torch.tensor([1., float("nan")])).nanmean()["a"]
        tensor(1.)
        """
        return reduce_leaves(self, "nanmean", dim, keepdim, reduce=reduce, dtype=dtype)

    def prod(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
             dtype: torch.dtype | None = None, reduce: bool | None = None) -> Any:
        """Product of every leaf over batch dims ``dim``.

        >>> TensorDict(a=torch.tensor([2., 3.])).prod()["a"]
        tensor(6.)
        """
        if dim is not NO_DEFAULT and not isinstance(dim, (int, str)) and not reduce:
            out = self
            for d in sorted(_dims(self, dim), reverse=True):
                out = reduce_leaves(out, "prod", d, keepdim, dtype=dtype)
            return out
        return reduce_leaves(self, "prod", dim, keepdim, reduce=reduce, dtype=dtype)

    def std(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *, correction: int = 1,
            reduce: bool | None = None,
            key_transform: Callable[[str], Any] | None = None) -> Any:
        """Standard deviation of every leaf over batch dims ``dim``.

        >>> TensorDict(a=torch.tensor([1., 3.])).std()["a"]
        tensor(1.4142)
        """
        return rename_keys(reduce_leaves(self, "std", dim, keepdim, reduce=reduce,
                                         correction=correction), key_transform)

    def var(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *, correction: int = 1,
            reduce: bool | None = None,
            key_transform: Callable[[str], Any] | None = None) -> Any:
        """Variance of every leaf over batch dims ``dim``.

        >>> TensorDict(a=torch.tensor([1., 3.])).var()["a"]
        tensor(2.)
        """
        return rename_keys(reduce_leaves(self, "var", dim, keepdim, reduce=reduce,
                                         correction=correction), key_transform)

    def amax(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
             reduce: bool | None = None) -> Any:
        """Maximum of every leaf over batch dims ``dim``.

        >>> TensorDict(a=torch.tensor([1., 3.])).amax()["a"]
        tensor(3.)
        """
        return reduce_leaves(self, "amax", dim, keepdim, reduce=reduce)

    def amin(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *,
             reduce: bool | None = None) -> Any:
        """Minimum of every leaf over batch dims ``dim``.

        >>> TensorDict(a=torch.tensor([1., 3.])).amin()["a"]
        tensor(1.)
        """
        return reduce_leaves(self, "amin", dim, keepdim, reduce=reduce)

    def max(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *, reduce: bool | None = None,
            return_indices: bool = True) -> Any:
        """Maximum over batch dim ``dim``: ``torch.return_types.max(values, indices)`` of
        TensorDicts (just the values with ``return_indices=False``); without ``dim``, a
        TensorDict of each leaf's maximum.

        >>> td = TensorDict(a=torch.tensor([1., 3.]), batch_size=[2])
        >>> td.max(0).indices["a"], td.max()["a"]
        (tensor(1), tensor(3.))
        """
        return _with_indices(self, "max", dim, keepdim, reduce, return_indices)

    def min(self, dim: Any = NO_DEFAULT, keepdim: bool = False, *, reduce: bool | None = None,
            return_indices: bool = True) -> Any:
        """Minimum over batch dim ``dim`` (see :meth:`max`).

        >>> TensorDict(a=torch.tensor([1., 3.]), batch_size=[2]).min(0).values["a"]
        tensor(1.)
        """
        return _with_indices(self, "min", dim, keepdim, reduce, return_indices)

    def cummax(self, dim: int, *, reduce: bool | None = None,
               return_indices: bool = True) -> Any:
        """Cumulative maximum along batch dim ``dim`` (values and indices).

        >>> TensorDict(a=torch.tensor([1., 0.]), batch_size=[2]).cummax(0).values["a"]
        tensor([1., 1.])
        """
        return _with_indices(self, "cummax", dim, False, reduce, return_indices)

    def cummin(self, dim: int, *, reduce: bool | None = None,
               return_indices: bool = True) -> Any:
        """Cumulative minimum along batch dim ``dim`` (values and indices).

        >>> TensorDict(a=torch.tensor([0., 1.]), batch_size=[2]).cummin(0).values["a"]
        tensor([0., 0.])
        """
        return _with_indices(self, "cummin", dim, False, reduce, return_indices)

    def logsumexp(self, dim: Any = None, keepdim: bool = False, *, out: Any = None) -> Any:
        """``torch.logsumexp`` of every leaf over batch dims ``dim`` (all batch dims if None).
        ``out``: a TensorDict of the result's structure the results are copied into
        (in place), returned.

        >>> TensorDict(a=torch.zeros(2), batch_size=[2]).logsumexp(0)["a"]
        tensor(0.6931)
        """
        dim = tuple(range(len(self.batch_size))) if dim is None else dim
        return _written(reduce_leaves(self, "logsumexp", dim, keepdim), out)

    def norm(self, *, out: Any = None, dtype: torch.dtype | None = None,
             key_transform: Callable[[str], Any] | None = None) -> Any:
        """The 2-norm of every leaf (batch size ``[]``); ``out`` as in :meth:`logsumexp`.

        >>> TensorDict(a=torch.tensor([3., 4.])).norm()["a"]
        tensor(5.)
        """
        result = reduce_fully(self, lambda x: torch.linalg.vector_norm(x, dtype=dtype))
        return _written(rename_keys(result, key_transform), out)

    def quantile(self, q: float | torch.Tensor, dim: Any = NO_DEFAULT,
                 keepdim: bool = False, *, interpolation: str = "linear",
                 reduce: bool | None = None,
                 key_transform: Callable[[str], Any] | None = None) -> Any:
        """``torch.quantile`` of every leaf over batch dims ``dim`` (see the module
        docstring); a tensor ``q`` adds its dims first to the batch size (to each leaf
        without ``dim``). Leaves must be floating point.

        >>> td = TensorDict(a=torch.arange(4.).view(2, 2), batch_size=[2])
        >>> td.quantile(0.5)["a"], td.quantile(0.5, dim=0)["a"]
        (tensor(1.5000), tensor([1., 2.]))
        """
        result = quantile_leaves(self, q, dim, keepdim, interpolation, reduce)
        return rename_keys(result, key_transform)

    def softmax(self, dim: int, dtype: torch.dtype | None = None) -> Any:
        """Softmax of every leaf along batch dim ``dim``.

        >>> TensorDict(a=torch.zeros(2), batch_size=[2]).softmax(0)["a"]
        tensor([0.5000, 0.5000])
        """
        if not isinstance(dim, int):
            raise ValueError(f"Expected dim of type int, got {type(dim)}.")
        d = batch_dim(self, dim)
        if isinstance(self, classes.LazyStackedTensorDict) and d != self.stack_dim:
            sd = self.stack_dim  # each part along its own dim
            parts = [td.softmax(d - (d > sd), dtype) for td in self.tensordicts]
            return type(self)._from_entries(parts, sd, self._stack_dim_name)
        return self._apply_nest(lambda x: torch.softmax(x, d, dtype=dtype),
                                batch_size=self.batch_size, names=self.names,
                                filter_empty=False)

