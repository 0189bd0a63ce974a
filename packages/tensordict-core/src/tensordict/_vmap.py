"""TensorDicts through ``torch.vmap``'s input and output steps.

``vmap`` sees the tensors of a TensorDict through pytree (see :mod:`tensordict._pytree`),
and its steps flatten and rebuild each argument and output several times a call
(flattening, broadcasting ``in_dims`` over a rebuilt copy, rebuilding the batched inputs;
the same for the outputs): for a module called under ``vmap`` over its stacked
parameters, that was most of vmap's own cost. Three of functorch's steps are wrapped so
that a *plain* TensorDict (a ``TensorDict`` holding tensors and plain sub-TensorDicts only)
mapped over one of its batch dims, or not mapped, goes as one unit:

* the input step validates it as a tensor of its batch shape (``in_dims`` within the
  batch dims, the mapped size shared with the other inputs: torch's own checks);
* the batched input is one traversal adding the batch dim to each leaf, the batch size
  (and names) losing the mapped dim; an unmapped one is a shallow copy (the function may
  write into it: the caller's TensorDict is left as it was);
* a plain TensorDict returned with an ``out_dims`` within its batch dims gets the dim
  back in one traversal, the batch size gaining it.

TensorDicts holding lazy stacks, and lazy stacks, go as one unit the same way, by
:mod:`tensordict._vmap_lazy` (over a stack dim or another dim, in and out). Everything
else (non-tensor data, tensorclasses, ``in_dims`` given per leaf, dims past the batch dims)
takes the pytree route, which gives the same results. Dynamo
traces the one-unit route too, so inside ``torch.compile`` a plain TensorDict keeps its
batch dims (the pytree route there can only follow the leaves' shapes). The output step
also says which vmap level is being left (so the pytree route counts leaves made inside
``vmap`` without the mapped dim as mapped), reads ``out_dims=(d,)`` as ``d`` when the
function returns one TensorDict, as torch reads it for one tensor, and names a function
without ``__name__`` by its class.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(3, 4), "n": {"b": torch.ones(3, 4, 2)}}, [3, 4])
    >>> out = torch.vmap(lambda t: t.apply(lambda x: x + 1), in_dims=1, out_dims=0)(td)
    >>> out.batch_size, out["n", "b"].shape
    (torch.Size([4, 3]), torch.Size([4, 3, 2]))
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from torch._functorch import vmap as _vmap_impl

from tensordict import _vmap_lazy
from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection
from tensordict._unbatched import UnbatchedTensor

_Tensor = torch.Tensor

#: the vmap levels being unwrapped (innermost last), for the pytree route's rebuild
LEAVING: list[int] = []


def _plain(td: Any) -> bool:
    """Whether ``td`` is a ``TensorDict`` holding tensors (not unbatched ones) and plain
    sub-TensorDicts only."""
    if td.__class__ is not classes.TensorDict:
        return False
    for value in td._tensordict.values():
        if value.__class__ is _Tensor:
            continue
        if value.__class__ is classes.TensorDict:
            if not _plain(value):
                return False
        elif not isinstance(value, _Tensor) or value.__class__ is UnbatchedTensor:
            return False
    return True


def _unit(td: Any) -> bool:
    """Whether ``td`` goes through ``vmap`` as one unit: a plain TensorDict, or a
    TensorDict or lazy stack holding lazy stacks (see :mod:`tensordict._vmap_lazy`)."""
    return _plain(td) or _vmap_lazy.holds_lazy(td) is not None


def _dropped(names: tuple[str | None, ...] | None, dim: int) -> tuple[str | None, ...] | None:
    return None if names is None else names[:dim] + names[dim + 1:]


def _enter(td: Any, in_dim: int, level: int) -> Any:
    """``td`` as the function sees it inside ``vmap``: each leaf batched along ``in_dim``
    at ``level``, the batch size without that dim."""
    batch_size = td._batch_size
    add = functools.partial(_vmap_impl._add_batch_dim, batch_dim=in_dim, level=level)
    return td._map_leaves(add, batch_size[:in_dim] + batch_size[in_dim + 1:],
                          _dropped(td._names, in_dim), NO_DEFAULT, False)


def _leave(td: Any, out_dim: int, level: int, size: int) -> Any:
    """``td`` returned by the function: each leaf unbatched from ``level`` with the
    mapped dim (of ``size``) at ``out_dim``, the batch size gaining it."""
    batch_size, names = td._batch_size, td._names
    remove = functools.partial(_vmap_impl._remove_batch_dim, level=level,
                               batch_size=size, out_dim=out_dim)
    return td._map_leaves(
        remove, batch_size[:out_dim] + torch.Size([size]) + batch_size[out_dim:],
        None if names is None else names[:out_dim] + (None,) + names[out_dim:],
        NO_DEFAULT, False)


#: the classes that may go through ``vmap`` as one unit
_UNITS: set[type] = set()

_STAND_INS: dict[tuple[torch.Size, int], _Tensor] = {}


def _stand_in(batch_size: torch.Size, index: int) -> _Tensor:
    """A meta tensor of shape ``batch_size``, the same for each ``(batch_size, index)``
    (``index``: which TensorDict of the call it stands for, so that each has its own);
    a new one while compiling (dynamo would guard on the cache's keys)."""
    if torch.compiler.is_compiling():
        return torch.empty(batch_size, device="meta")
    try:
        return _STAND_INS[batch_size, index]
    except KeyError:
        if len(_STAND_INS) > 256:
            _STAND_INS.clear()
        stand_in = _STAND_INS[batch_size, index] = torch.empty(batch_size, device="meta")
        return stand_in


def _process_whole(process: Callable[..., Any]) -> Callable[..., Any]:
    """The input step with each plain TensorDict argument whose ``in_dims`` entry is None
    or one of its batch dims standing as one tensor of its batch shape."""

    @functools.wraps(process)
    def process_batched_inputs(in_dims: Any, args: tuple[Any, ...], func: Any) -> Any:
        dims = in_dims if in_dims.__class__ is tuple else (in_dims,) * len(args)
        stand_ins: list[tuple[_Tensor, Any]] = []
        if len(dims) == len(args):
            for position, (arg, dim) in enumerate(zip(args, dims)):
                if arg.__class__ not in _UNITS:
                    continue
                ndim = len(arg._batch_size)
                if (dim is None or (dim.__class__ is int and -ndim <= dim < ndim)) \
                        and _unit(arg):
                    stand_in = _stand_in(arg._batch_size, len(stand_ins))
                    if not stand_ins:
                        args = list(args)
                    args[position] = stand_in
                    stand_ins.append((stand_in, arg))
        if not stand_ins:
            return process(in_dims, args, func)
        batch_size, flat_in_dims, flat_args, spec = process(in_dims, tuple(args), func)
        for stand_in, arg in stand_ins:
            flat_args[next(i for i, flat in enumerate(flat_args) if flat is stand_in)] = arg
        return batch_size, flat_in_dims, flat_args, spec

    return process_batched_inputs


def _create_whole(create: Callable[..., Any]) -> Callable[..., Any]:
    """The batched inputs, a plain TensorDict left by the input step batched in one
    traversal (shallow-copied when not mapped)."""

    @functools.wraps(create)
    def create_batched_inputs(flat_in_dims: list[int | None], flat_args: list[Any],
                              vmap_level: int, args_spec: Any) -> Any:
        _vmap_lazy.start_level(vmap_level)
        if any(arg.__class__ in _UNITS for arg in flat_args):
            flat_in_dims, flat_args = list(flat_in_dims), list(flat_args)
            for index, arg in enumerate(flat_args):
                if arg.__class__ in _UNITS:
                    dim = flat_in_dims[index]
                    if dim is None:
                        flat_args[index] = arg.copy()
                    else:
                        dim %= len(arg._batch_size)
                        flat_args[index] = _enter(arg, dim, vmap_level) if _plain(arg) else \
                            _vmap_lazy.enter(arg, dim, vmap_level)
                    flat_in_dims[index] = None
        return create(flat_in_dims, flat_args, vmap_level, args_spec)

    return create_batched_inputs


class _NamedByClass:
    """Stands for vmap's function in its output step, which names the function (for its
    error messages only) once per output tensor: by ``repr`` when it has no ``__name__``,
    tens of microseconds for a module, per leaf of a TensorDict it returns. This one is
    named by the function's class: ``vmap(TensorDictModule(), ...)``."""

    __slots__ = ("__name__",)

    def __init__(self, func: Any) -> None:
        self.__name__ = f"{type(func).__name__}()"


def _unwrap_whole(unwrap: Callable[..., Any]) -> Callable[..., Any]:
    """The output step: the writes made into lazy stacks mapped over their stack dim are
    brought back (:func:`tensordict._vmap_lazy.write_back`); a unit returned (alone or in a
    tuple) with an ``out_dims`` within its batch dims is unbatched in one traversal; else
    the pytree route, told the level being left, with ``out_dims=(d,)`` read as ``d`` for one
    tensor collection and a function without a ``__name__`` named by its class (see
    :class:`_NamedByClass`)."""

    @functools.wraps(unwrap)
    def unwrap_batched(outputs: Any, out_dims: Any, vmap_level: int, batch_size: int,
                       func: Any) -> Any:
        mapped = _vmap_lazy.write_back(vmap_level, batch_size) \
            if vmap_level in _vmap_lazy.MAPPED else None
        if outputs.__class__ is tuple and (out_dims.__class__ is int or (
                out_dims.__class__ is tuple and len(out_dims) == len(outputs))) and \
                any(output.__class__ in _UNITS for output in outputs):
            dims = out_dims if out_dims.__class__ is tuple else (out_dims,) * len(outputs)
            return tuple(unwrap_one(output, dim, vmap_level, batch_size, func, mapped)
                         for output, dim in zip(outputs, dims))
        return unwrap_one(outputs, out_dims, vmap_level, batch_size, func, mapped)

    def unwrap_one(outputs: Any, out_dims: Any, vmap_level: int, batch_size: int, func: Any,
                   mapped: dict[int, Any] | None) -> Any:
        if out_dims.__class__ is tuple and len(out_dims) == 1 and is_tensor_collection(outputs):
            out_dims = out_dims[0]
        if outputs.__class__ in _UNITS and out_dims.__class__ is int and \
                0 <= out_dims <= len(outputs._batch_size):
            if mapped is None and _plain(outputs):
                return _leave(outputs, out_dims, vmap_level, batch_size)
            if _unit(outputs):
                return _vmap_lazy.leave(outputs, out_dims, vmap_level, batch_size, mapped or {})
        if not hasattr(func, "__name__"):
            func = _NamedByClass(func)
        LEAVING.append(vmap_level)
        try:
            return unwrap(outputs, out_dims, vmap_level, batch_size, func)
        finally:
            LEAVING.pop()

    return unwrap_batched


def wrap_functorch_steps() -> None:
    """Wrap vmap's input, batching and output steps (once, by ``tensordict``'s
    ``__init__``)."""
    _UNITS.update((classes.TensorDict, classes.LazyStackedTensorDict))
    for name, wrap in (("_process_batched_inputs", _process_whole),
                       ("_create_batched_inputs", _create_whole),
                       ("_unwrap_batched", _unwrap_whole)):
        step = getattr(_vmap_impl, name)
        if not getattr(step, "__wraps_tensordicts__", False):
            wrapped = wrap(step)
            wrapped.__wraps_tensordicts__ = True  # type: ignore[attr-defined]
            setattr(_vmap_impl, name, wrapped)
