"""Pointwise math over the leaves, generated from tables.

Operands are numbers, tensors (broadcast against each leaf, with no batch check) or
TensorDicts with the same keys (``default=`` fills keys missing from the other one).
Numbers and TensorDict operands go through torch's ``_foreach`` kernels: one call for
all the leaves. In-place forms (``add_``, ``td += 1``, ``exp_``) write into the existing
leaves, every one checked first. Non-tensor entries are kept as they are.

A dense TensorDict of tensors (the common case) takes a fast path: its leaves, paired
with the other operand's by :func:`dense_leaf_pairs`, are gathered in one walk and the
result is rebuilt without the general traversal.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.ones(2), b={"c": torch.zeros(2)}, batch_size=[2])
    >>> (td * 2 + td)["a"], (1 - td)["b", "c"], td.exp()["b", "c"]
    (tensor([3., 3.]), tensor([1., 1.]), tensor([1., 1.]))
    >>> td += 1
    >>> td["b", "c"]
    tensor([1., 1.])
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Collection, Iterator
from functools import lru_cache
from numbers import Number
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import NO_DEFAULT, classes, is_tensor_collection
from tensordict._layout_memo import COPIES
from tensordict._plan import (
    any_requires_grad,
    check_target,
    copy_untracked,
    in_place_ready,
    one_call_copies,
    same_shapes,
    writable_in_place,
)
from tensordict._traverse import dense_leaves, stacked_leaves

_Tensor = torch.Tensor
_dtype = operator.attrgetter("dtype")
_is_cpu = operator.attrgetter("is_cpu")
_FLOATS = frozenset({torch.float32, torch.float64})
#: Python numbers that go through the fast path as ``_foreach`` scalars
_SCALARS = (float, int, bool)

#: unary ops with ``_foreach`` kernels: ``td.exp()``, ``td.exp_()``, ``torch.exp(td)``
UNARY = (
    "abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
    "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
    "round", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc",
)
#: predicates giving a TensorDict of bools
PREDICATES = ("isfinite", "isnan", "isneginf", "isposinf", "isreal", "isinf")
#: binary ops: name -> (per-leaf function, ``_foreach`` name or None, has in-place form)
BINARY: dict[str, tuple[Callable[..., Any], str | None, bool]] = {
    "add": (torch.add, "add", True),
    "sub": (torch.sub, "sub", True),
    "mul": (torch.mul, "mul", True),
    "div": (torch.div, "div", True),
    "pow": (torch.pow, "pow", True),
    "maximum": (torch.maximum, "maximum", True),
    "minimum": (torch.minimum, "minimum", True),
    "clamp_min": (torch.clamp_min, "clamp_min", True),
    "clamp_max": (torch.clamp_max, "clamp_max", True),
    "mod": (torch.remainder, None, True),
    "floor_divide": (torch.floor_divide, None, True),
    "rsub": (lambda x, y, **kw: torch.sub(y, x, **kw), None, False),
    "logical_and": (torch.logical_and, None, False),
    "logical_or": (torch.logical_or, None, False),
    "logical_xor": (torch.logical_xor, None, False),
    "bitwise_and": (torch.bitwise_and, None, True),
    "bitwise_or": (torch.bitwise_or, None, True),
    "bitwise_xor": (torch.bitwise_xor, None, True),
}
#: in-place forms that are not ``Tensor.<name>_``
_IN_PLACE: dict[str, Callable[..., Any]] = {
    "mod": _Tensor.remainder_,
    "maximum": lambda x, y: torch.maximum(x, y, out=x),
    "minimum": lambda x, y: torch.minimum(x, y, out=x),
}


def dense_leaf_pairs(mine: dict[str, Any], theirs: dict[str, Any], xs: list[_Tensor],
                     ys: list[_Tensor], targets_also: Collection[type] = ()) -> bool:
    """Like :func:`dense_leaves` for two dense TensorDicts at once, leaves paired by key;
    False also if their keys differ at some level. A leaf of ``mine`` may also be of a
    class in ``targets_also`` (tensor subclasses written as tensors).

    >>> xs, ys = [], []
    >>> td = TensorDict(a=torch.ones(1))
    >>> dense_leaf_pairs(td._tensordict, td.clone()._tensordict, xs, ys), len(ys)
    (True, 1)
    """
    if len(mine) != len(theirs):
        return False
    dense = classes.TensorDict
    for key, x in mine.items():
        y = theirs.get(key)  # None if missing: then the keys differ
        if y.__class__ is _Tensor and (x.__class__ is _Tensor or x.__class__ in targets_also):
            xs.append(x)
            ys.append(y)
        elif not (x.__class__ is dense and y.__class__ is dense
                  and dense_leaf_pairs(x._tensordict, y._tensordict, xs, ys, targets_also)):
            return False
    return True


def stacked_leaf_pairs(td: Any, other: Any, xs: list[_Tensor], ys: list[_Tensor]) -> bool:
    """:func:`dense_leaf_pairs` of two dense TensorDicts, or part by part of two lazy
    stacks of them with one batch size and stack dim."""
    if td.__class__ is other.__class__ is classes.TensorDict:
        return dense_leaf_pairs(td._tensordict, other._tensordict, xs, ys)
    return td.__class__ is other.__class__ is classes.LazyStackedTensorDict and \
        td.stack_dim == other.stack_dim and td.batch_size == other.batch_size and \
        all(stacked_leaf_pairs(a, b, xs, ys) for a, b in zip(td.tensordicts, other.tensordicts))


def copy_matching_leaves(td: Any, other: Any, non_blocking: bool = False) -> bool:
    """The fast path of ``td.copy_(other)`` (and of an ``update_`` from a TensorDict
    with the same keys): two dense TensorDicts with the same keys whose tensor leaves
    have the same shapes, and targets writable in place; every leaf copied at once.
    Returns False, having written nothing, when that does not apply.

    >>> td = TensorDict(a=torch.zeros(2))
    >>> copy_matching_leaves(td, TensorDict(a=torch.ones(2))), td["a"]
    (True, tensor([1., 1.]))
    """
    mine: list[_Tensor] = []
    theirs: list[_Tensor] = []
    if not (td.__class__ is other.__class__ is classes.TensorDict) or \
            not one_call_copies() or \
            not dense_leaf_pairs(td._tensordict, other._tensordict, mine, theirs) or \
            not COPIES.fits("copy", mine, theirs, lambda: same_shapes(mine, theirs) and
                            writable_in_place(mine, theirs)):  # (dynamo traces neither)
        return False
    try:  # nothing autograd records (sources included: _foreach_copy_ has no derivative)
        copy_untracked(mine, theirs, non_blocking)
    except NotImplementedError:  # no kernel for a leaf (nested tensors): none written
        return False
    return True


def map_dense(td: Any, fn: Callable[[_Tensor], _Tensor], device: Any = NO_DEFAULT,
              leaves_also: Collection[type] = ()) -> Any:
    """``fn`` over the leaves of a dense TensorDict (one :func:`dense_leaves` accepts,
    with leaves of the classes of ``leaves_also`` too) in one walk, the result on
    ``device`` (by default, each node's own), with the same structure, batch size and
    names; None for anything else (``fn``, a function without side effects, may have run
    on some leaves).

    >>> td = TensorDict(a=torch.ones(1), n={"b": torch.ones(1)})
    >>> out = map_dense(td, torch.neg, torch.device("cpu"))
    >>> out["n", "b"], out["n"].device
    (tensor([-1.]), device(type='cpu'))
    """
    dense = classes.TensorDict
    if td.__class__ is not dense:
        return None
    out = {}
    for key, x in td._tensordict.items():
        if x.__class__ is _Tensor or x.__class__ in leaves_also:
            out[key] = fn(x)
        else:
            x = map_dense(x, fn, device, leaves_also)
            if x is None:
                return None
            out[key] = x
    return dense._from_entries(out, td._batch_size,
                               td._device if device is NO_DEFAULT else device, td._names)


#: every tensor of a list cloned in one torch call (a loop on a torch without it)
_clone_all = getattr(torch, "_foreach_clone", None) or (lambda xs: [x.clone() for x in xs])


def clone_at_once(td: Any) -> Any:
    """``td.clone()`` of a dense TensorDict of tensors (one :func:`dense_leaves`
    accepts) or of a lazy stack of them: every leaf cloned in one ``_foreach_clone``,
    which autograd records and which keeps each leaf's strides, as ``clone`` does; None
    for anything else (also for leaves the kernel does not take, such as nested tensors,
    and for a dense TensorDict of fewer than 3 entries, which one walk cloning leaf by
    leaf copies faster).

    >>> td = TensorDict(a=torch.ones(2), b=torch.ones(2), n={"c": torch.ones(2)})
    >>> out = clone_at_once(td)
    >>> out["n", "c"].data_ptr() != td["n", "c"].data_ptr()
    True
    """
    leaves: list[_Tensor] = []
    if td.__class__ is classes.TensorDict and len(td._tensordict) < 3 or \
            torch.compiler.is_compiling() or not stacked_leaves(td, leaves):
        return None
    try:
        clones = _clone_all(leaves)
    except (NotImplementedError, RuntimeError):
        return None
    return _rebuilt(td, iter(clones))


#: the tensor method casting to a dtype, where one exists: ``x.double()`` costs less than
#: ``x.to(torch.float64)`` (no arguments to parse) and does the same
_CASTS: dict[torch.dtype, Callable[[_Tensor], _Tensor]] = {
    torch.float64: _Tensor.double, torch.float32: _Tensor.float, torch.float16: _Tensor.half,
    torch.bfloat16: _Tensor.bfloat16, torch.int64: _Tensor.long, torch.int32: _Tensor.int,
    torch.int16: _Tensor.short, torch.int8: _Tensor.char, torch.uint8: _Tensor.byte,
    torch.bool: _Tensor.bool, torch.complex64: _Tensor.cfloat,
    torch.complex128: _Tensor.cdouble}


def caster(dtype: torch.dtype) -> Callable[[_Tensor], _Tensor]:
    """``x -> x.to(dtype)`` (``x`` itself when already of ``dtype``), as fast as torch has it.

    >>> caster(torch.float64)(torch.ones(1)).dtype, caster(torch.uint16)(torch.ones(1)).dtype
    (torch.float64, torch.uint16)
    """
    return _CASTS.get(dtype) or operator.methodcaller("to", dtype)


def rebuild(td: Any, leaves: Iterator[_Tensor], device: torch.device | None) -> Any:
    """A dense TensorDict of the structure, batch size and names of ``td`` (one
    :func:`dense_leaves` accepts) on ``device``, whose tensor leaves are ``leaves``, in
    order.

    >>> td = TensorDict(a=torch.ones(1), n={"b": torch.ones(1)})
    >>> out = rebuild(td, iter([torch.zeros(1), torch.zeros(1)]), torch.device("cpu"))
    >>> out["n", "b"], out["n"].device
    (tensor([0.]), device(type='cpu'))
    """
    out = {}
    for key, entry in td._tensordict.items():
        out[key] = next(leaves) if entry.__class__ is _Tensor else rebuild(entry, leaves,
                                                                             device)
    return classes.TensorDict._from_entries(out, td._batch_size, device, td._names)


_WITH_ALPHA = frozenset({"add", "sub"})  # the binary ops that take ``alpha``
#: binary op name -> its (out-of-place, in-place) ``_foreach`` kernels
_FOREACH = {name: (getattr(torch, f"_foreach_{foreach}"), getattr(torch, f"_foreach_{foreach}_"))
            for name, (_, foreach, _) in BINARY.items() if foreach is not None}


def _is_collection(value: Any) -> bool:
    return is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False)


def _named(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``fn`` with the failing key path and leaf shape added to its errors."""
    def wrapped(key: Any, x: _Tensor, *others: Any) -> Any:
        try:
            return fn(x, *others)
        except (RuntimeError, TypeError) as err:
            raise type(err)(f"{name} failed for key {key!r} (leaf shape {tuple(x.shape)}, "
                            f"dtype {x.dtype}): {err}") from err
    return wrapped


def _leafwise(td: Any, name: str, fn: Callable[..., Any], operands: tuple[Any, ...],
              default: Any) -> Any:
    """Apply ``fn(leaf, *operand_leaves)`` through the traversal (with named errors)."""
    others = tuple(o for o in operands if _is_collection(o))
    constants = [None if _is_collection(o) else o for o in operands]

    def call(x: _Tensor, *matched: Any) -> Any:
        it = iter(matched)
        args = [next(it) if c is None else c for c in constants]
        return fn(x, *args)

    _check_keys(td, others, default)
    return td._apply_nest(_named(call, name), *others, named=True, nested_keys=True,
                          default=default, filter_empty=False)


def _check_keys(td: Any, others: tuple[Any, ...], default: Any) -> None:
    if default is not NO_DEFAULT:
        return
    for other in others:
        mine, theirs = set(td.keys(True, True)), set(other.keys(True, True))
        if mine != theirs:
            raise KeyError(
                f"keys in tensordicts mismatch: only in the first "
                f"{sorted(map(str, mine - theirs))}, only in the second "
                f"{sorted(map(str, theirs - mine))} (pass default= to fill missing entries)"
            )


def _paired_leaves(td: Any, other: Any, default: Any) -> tuple[list[_Tensor], list[Any]]:
    _check_keys(td, (other,), default)
    mine: list[_Tensor] = []
    theirs: list[Any] = []

    def collect(x: _Tensor, y: Any) -> None:
        mine.append(x)
        theirs.append(y)

    td._apply_nest(collect, other, default=default, filter_empty=False)
    return mine, theirs


def _writable(x: _Tensor, y: Any, name: str) -> bool:
    """Whether ``x.<name>_(y)`` can write its result into ``x`` (dtype and shape)."""
    dtype = torch.result_type(x, y)
    if name == "div" and not (dtype.is_floating_point or dtype.is_complex):
        dtype = torch.get_default_dtype()
    if not torch.can_cast(dtype, x.dtype):
        return False
    shape = y.shape if isinstance(y, _Tensor) else ()
    return len(shape) <= x.ndim and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(x.shape)))


def _check_writable(td: Any, name: str, leaves: list[_Tensor], operand: Any, other: Any,
                    default: Any) -> None:
    """Raise, naming the key, before an in-place op that would fail half way (not
    under dynamo: it cannot trace ``torch.result_type``, a dtype)."""
    if torch.compiler.is_compiling():
        return
    if isinstance(operand, list):
        ok = all(_writable(x, y, name) for x, y in zip(leaves, operand))
    else:
        ok = all(_writable(torch.empty((), dtype=d), operand, name)
                 for d in {x.dtype for x in leaves})
    if ok:
        return

    def check(x: _Tensor, y: Any) -> None:
        if not _writable(x, y, name):
            shape = tuple(y.shape) if isinstance(y, _Tensor) else ()
            raise RuntimeError(f"cannot write the result of {name} with a {_describe(y)} of "
                               f"shape {shape} into a leaf of shape {tuple(x.shape)}, dtype "
                               f"{x.dtype}")
    _leafwise(td, f"{name}_", check, (other,), default)


def check_targets(td: Any, leaves: list[_Tensor], *, shared_ok: bool = False,
                  one_call: bool = False) -> None:
    """Raise, naming the entry, before an in-place op writes into ``leaves``, the tensor
    leaves of ``td``, if one of them cannot take any write (:func:`check_target`); one
    pass over the list when :func:`in_place_ready` accepts them. ``one_call``: the op is
    one ``_foreach`` call, which refuses a leaf that requires grad before writing any,
    so that is left to torch.

    >>> check_targets(TensorDict(a=torch.zeros(2)), [torch.zeros(2)]) is None
    True
    """
    if not torch.compiler.is_compiling() and not (in_place_ready(leaves) and (
            one_call or not (torch.is_grad_enabled() and any_requires_grad(leaves)))):
        td._apply_nest(lambda key, x: check_target(x, key, shared_ok=shared_ok), named=True,
                       nested_keys=True, filter_empty=False)


def _describe(value: Any) -> str:
    return value.dtype if isinstance(value, _Tensor) else type(value).__name__


def binary(td: Any, name: str, other: Any, *, inplace: bool = False,
           default: Any = NO_DEFAULT, **kwargs: Any) -> Any:
    """``td <name> other`` leaf-wise, through ``_foreach`` when the operand allows it.

    In place, every leaf is checked before the first one is written.
    """
    fn, foreach, _ = BINARY[name]
    alpha = kwargs.get("alpha") if len(kwargs) == 1 and name in _WITH_ALPHA else None
    if (foreach is not None or not inplace) and (not kwargs or alpha is not None) and (
            td.__class__ is classes.TensorDict or td.__class__ is classes.LazyStackedTensorDict) \
            and not torch.compiler.is_compiling():  # (dynamo traces no attrgetter)
        result = _dense_binary(td, name, other, inplace, alpha)
        if result is not None:
            return result
    if _is_collection(other):
        leaves, operand = _paired_leaves(td, other, default)
        if any(not isinstance(o, _Tensor) for o in operand):
            operand = [torch.as_tensor(o, device=x.device) for o, x in zip(operand, leaves)]
    else:
        leaves, operand = td._tensor_leaves(), other
    if not leaves:
        return td if inplace else td.copy()
    if inplace:
        check_targets(td, leaves)
        _check_writable(td, name, leaves, operand, other, default)
        if isinstance(kwargs.get("alpha"), float) and not all(
                x.is_floating_point() or x.is_complex() for x in leaves):
            key = next(k for k, v in td.items(True, True)  # torch refuses it for integers
                       if isinstance(v, _Tensor) and not (v.is_floating_point() or
                                                          v.is_complex()))
            raise RuntimeError(f"{name}_ cannot take the float alpha {kwargs['alpha']} for "
                               f"the integral leaf {key!r}")
    if foreach is not None and not kwargs and not isinstance(operand, _Tensor):
        kernel = _FOREACH[name][inplace]
        try:
            result = kernel(leaves, operand)
        except (RuntimeError, TypeError):
            if inplace:
                raise
        else:
            return td if inplace else td._from_leaves(result)
    if inplace:
        method = _IN_PLACE.get(name) or getattr(_Tensor, f"{name}_")
        for x, y in zip(leaves, operand if isinstance(operand, list) else [operand] * len(leaves)):
            method(x, y, **kwargs)
        return td
    return _leafwise(td, name, lambda x, y: fn(x, y, **kwargs), (other,), default)


def _dense_binary(td: Any, name: str, other: Any, inplace: bool, alpha: Any = None) -> Any:
    """The fast path of :func:`binary`: ``td`` a dense TensorDict of tensors or a lazy
    stack of them, and ``other`` a Python number or a collection of the same kind with
    the same keys (``alpha``, of add and sub, only with a collection); the leaves are
    gathered in one walk and computed in one ``_foreach`` call (out of place, an op
    without one is called leaf by leaf). None, having written nothing, when that does
    not apply: in place, also when a result does not fit its leaf as it is
    (broadcasting, casting); out of place, when the kernel fails. The general path then
    handles it (and names the failing key)."""
    xs: list[_Tensor] = []
    operand: Any
    if other.__class__ is td.__class__:
        operand = []
        if not stacked_leaf_pairs(td, other, xs, operand):
            return None
    elif other.__class__ in _SCALARS:
        operand = other
        if not stacked_leaves(td, xs):
            return None
    else:
        return None
    if not xs or (inplace and not (in_place_ready(xs) and _fits(name, xs, operand))):
        return None
    if alpha is not None:
        if operand.__class__ is not list or not (alpha.__class__ is int or all(
                map(_Tensor.is_floating_point, xs))):  # (torch refuses a float for ints)
            return None
        kernel = _FOREACH[name][inplace]
        if inplace:
            kernel(xs, operand, alpha=alpha)
            return td
        try:
            return _rebuilt(td, iter(kernel(xs, operand, alpha=alpha)))
        except (RuntimeError, TypeError):
            return None
    fn, foreach, _ = BINARY[name]
    if foreach is None:
        pairs = zip(xs, operand) if operand.__class__ is list else ((x, operand) for x in xs)
        try:
            return _rebuilt(td, iter([fn(x, y) for x, y in pairs]))
        except (RuntimeError, TypeError):
            return None
    if operand.__class__ is not list and (name == "mul" or name == "div"):
        operand = _scalar_tensor(xs, operand)
    if inplace:
        _FOREACH[name][1](xs, operand)
        return td
    try:
        result = _FOREACH[name][0](xs, operand)
    except (RuntimeError, TypeError):
        return None
    return _rebuilt(td, iter(result))


def _rebuilt(td: Any, leaves: Iterator[_Tensor]) -> Any:
    """:func:`rebuild` of ``td`` on its device, part by part for a lazy stack (whose
    leaves :func:`stacked_leaves` gave)."""
    if td.__class__ is classes.TensorDict:
        return rebuild(td, leaves, td._device)
    return type(td)._from_entries([_rebuilt(part, leaves) for part in td.tensordicts],
                                  td._stack_dim, td._stack_dim_name)


def _scalar_tensor(xs: list[_Tensor], number: Any) -> Any:
    """``number`` as a 0-dim tensor, which the ``_foreach`` kernels of mul and div take
    several times faster than a Python number (no tensor made per leaf), where that
    gives the very same values: CPU leaves all float32 or all float64 (a Python number
    is computed in the leaves' precision there). ``number`` itself otherwise."""
    dtypes = set(map(_dtype, xs))
    if len(dtypes) == 1 and dtypes <= _FLOATS and all(map(_is_cpu, xs)):
        try:
            return torch.tensor(number, dtype=dtypes.pop())
        except (RuntimeError, OverflowError):  # out of the dtype's range: as torch says
            pass
    return number


def _fits(name: str, xs: list[_Tensor], operand: Any) -> bool:
    """Whether ``x.<name>_(y)`` fits every leaf ``x`` as it is: an operand leaf of the
    same shape (no broadcasting) and a result dtype that casts to the leaf's."""
    if operand.__class__ is list:
        if not same_shapes(xs, operand):
            return False
        for dtype, other in set(zip(map(_dtype, xs), map(_dtype, operand))):
            if not _result_fits(name, dtype, other):
                return False
        return True
    kind = operand.__class__
    for dtype in set(map(_dtype, xs)):
        if not _result_fits(name, dtype, kind):
            return False
    return True


@lru_cache(maxsize=4096)
def _result_fits(name: str, dtype: torch.dtype, other: torch.dtype | type) -> bool:
    """Whether ``name``'s result for a tensor of ``dtype`` and an operand of the same shape
    and dtype ``other``, or a Python number of type ``other``, casts to ``dtype``."""
    operand = torch.empty((), dtype=other) if isinstance(other, torch.dtype) else other(1)
    return _writable(torch.empty((), dtype=dtype), operand, name)


@lru_cache(maxsize=1024)
def _unary_dtype(name: str, dtype: torch.dtype) -> torch.dtype:
    """The dtype of ``torch.<name>`` of a tensor of ``dtype``."""
    return getattr(torch, name)(torch.ones((), dtype=dtype)).dtype


def unary(td: Any, name: str, *, inplace: bool = False) -> Any:
    """``torch.<name>`` of every leaf in one ``_foreach`` call."""
    leaves: list[_Tensor] = []
    dense = td.__class__ is classes.TensorDict and dense_leaves(td._tensordict, leaves)
    if not dense:
        leaves = td._tensor_leaves()
    if not leaves:
        return td if inplace else td.copy()
    if inplace:
        check_targets(td, leaves, one_call=True)
        for dtype in {x.dtype for x in leaves}:
            result = _unary_dtype(name, dtype)
            if not torch.can_cast(result, dtype):
                key = next(k for k, v in td.items(True, True) if v.dtype == dtype)
                raise RuntimeError(f"{name}_ cannot write its {result} result into the leaf "
                                   f"{key!r} of dtype {dtype}")
        getattr(torch, f"_foreach_{name}_")(leaves)
        return td
    result = getattr(torch, f"_foreach_{name}")(leaves)
    return rebuild(td, iter(result), td._device) if dense else td._from_leaves(result)


def _make_unary(name: str, inplace: bool) -> Callable[..., Any]:
    def method(self: Any) -> Any:
        return unary(self, name, inplace=inplace)
    suffix = "_" if inplace else ""
    method.__name__ = method.__qualname__ = name + suffix
    method.__doc__ = (
        f"{'In place: ' if inplace else ''}``torch.{name}`` of every leaf.\n\n"
        f"        >>> td = TensorDict(a=torch.ones(2))\n"
        f"        >>> td.{name}{suffix}()['a'].shape\n"
        f"        torch.Size([2])\n"
    )
    return method


def _make_predicate(name: str) -> Callable[..., Any]:
    fn = getattr(torch, name)

    def method(self: Any) -> Any:
        return self._apply_nest(fn, filter_empty=False)
    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"A TensorDict of ``torch.{name}`` of every leaf (bool tensors).\n\n"
        f"        >>> TensorDict(a=torch.ones(2)).{name}()['a'].dtype\n"
        f"        torch.bool\n"
    )
    return method


def _make_binary(name: str, inplace: bool) -> Callable[..., Any]:
    if inplace:
        def method(self: Any, other: Any, **kwargs: Any) -> Any:
            return binary(self, name, other, inplace=True, **kwargs)
    else:
        def method(self: Any, other: Any, *, default: Any = NO_DEFAULT, **kwargs: Any) -> Any:
            return binary(self, name, other, default=default, **kwargs)
    suffix = "_" if inplace else ""
    dtype = "torch.int64" if name.startswith("bitwise") else "torch.float32"
    method.__name__ = method.__qualname__ = name + suffix
    method.__doc__ = (
        f"{'In place: ' if inplace else ''}``{name}`` of every leaf with ``other`` (a number, "
        f"a tensor broadcast to each leaf, or a TensorDict with the same keys"
        f"{'' if inplace else '; default= fills missing keys'}).\n\n"
        f"        >>> td = TensorDict(a=torch.ones(2, dtype={dtype}))\n"
        f"        >>> td.{name}{suffix}(td)['a'].shape\n"
        f"        torch.Size([2])\n"
    )
    return method


def _reflected(name: str) -> Callable[..., Any]:
    fn = getattr(operator, name)

    def method(self: Any, other: Any) -> Any:
        if _is_collection(other):
            return NotImplemented
        return _leafwise(self, f"__r{name}__", lambda x: fn(other, x), (), NO_DEFAULT)
    method.__name__ = f"__r{name}__"
    return method


class PointwiseMixin:
    """Leaf-wise arithmetic, unary functions and predicates (methods generated below)."""

    __slots__ = ()

    def clamp(self, min: Any = None, max: Any = None) -> Any:  # noqa: A002
        """Clamp every leaf to ``[min, max]`` (numbers, tensors or TensorDicts).

        >>> TensorDict(a=torch.arange(4.)).clamp(1, 2)["a"]
        tensor([1., 1., 2., 2.])
        """
        if min is None and max is None:
            raise errors.ArgumentError("clamp needs min or max")
        out = self if min is None else binary(self, "clamp_min", min)
        return out if max is None else binary(out, "clamp_max", max)

    def lerp(self, end: Any, weight: Any) -> Any:
        """``torch.lerp(leaf, end, weight)`` for every leaf.

        >>> td = TensorDict(a=torch.zeros(2))
        >>> td.lerp(td + 2, 0.5)["a"]
        tensor([1., 1.])
        """
        return _ternary(self, "lerp", end, weight, inplace=False)

    def lerp_(self, end: Any, weight: Any) -> Any:
        """In-place :meth:`lerp`."""
        return _ternary(self, "lerp", end, weight, inplace=True)

    def addcmul(self, tensor1: Any, tensor2: Any, *, value: float = 1) -> Any:
        """``leaf + value * tensor1 * tensor2`` for every leaf.

        >>> td = TensorDict(a=torch.ones(2))
        >>> td.addcmul(td, td, value=2)["a"]
        tensor([3., 3.])
        """
        return _ternary(self, "addcmul", tensor1, tensor2, inplace=False, value=value)

    def addcmul_(self, tensor1: Any, tensor2: Any, *, value: float = 1) -> Any:
        """In-place :meth:`addcmul`."""
        return _ternary(self, "addcmul", tensor1, tensor2, inplace=True, value=value)

    def addcdiv(self, tensor1: Any, tensor2: Any, value: float = 1) -> Any:
        """``leaf + value * tensor1 / tensor2`` for every leaf.

        >>> td = TensorDict(a=torch.ones(2))
        >>> td.addcdiv(td, td + 1, value=2)["a"]
        tensor([2., 2.])
        """
        return _ternary(self, "addcdiv", tensor1, tensor2, inplace=False, value=value)

    def addcdiv_(self, tensor1: Any, tensor2: Any, value: float = 1) -> Any:
        """In-place :meth:`addcdiv`."""
        return _ternary(self, "addcdiv", tensor1, tensor2, inplace=True, value=value)

    def zero_(self) -> Any:
        """Set every leaf to zero, in place.

        >>> TensorDict(a=torch.ones(2)).zero_()["a"]
        tensor([0., 0.])
        """
        leaves = self._tensor_leaves()
        if leaves:
            check_targets(self, leaves, shared_ok=True, one_call=True)
            torch._foreach_zero_(leaves)
        return self

    def fill_(self, key: Any, value: float | bool) -> Any:
        """Fill the entry ``key`` (every leaf under it, for a sub-TensorDict) with ``value``.

        >>> TensorDict(a=torch.zeros(2)).fill_("a", 3.0)["a"]
        tensor([3., 3.])
        """
        if self.__class__ is classes.TensorDict and key.__class__ is str:
            leaf = self._tensordict.get(key)
            if leaf.__class__ is _Tensor:  # one tensor: written whole or not at all
                check_target(leaf, key, shared_ok=True)
                leaf.fill_(value)
                return self
        if key not in self:
            raise errors.missing_key(key, self.keys())
        entry = self.select(key)  # (its leaves are ours: a lazy stack's, its parts')
        leaves = entry._tensor_leaves()
        check_targets(entry, leaves, shared_ok=True)
        for leaf in leaves:
            leaf.fill_(value)
        return self

    def copy_(self, tensordict: Any, non_blocking: bool = False) -> Any:
        """Copy the leaves of ``tensordict`` into this one's leaves: :meth:`update_`, as
        upstream (entries it lacks are left as they are, entries this one lacks are
        ignored), with a fast path for the same keys.

        >>> td = TensorDict(a=torch.zeros(2), b=torch.zeros(2))
        >>> td.copy_(TensorDict(a=torch.ones(2)))["a"], td["b"]
        (tensor([1., 1.]), tensor([0., 0.]))
        """
        if not copy_matching_leaves(self, tensordict, non_blocking):
            self.update_(tensordict, non_blocking=non_blocking)  # checked, naming the key
        return self

    def __rsub__(self, other: Any) -> Any:
        return binary(self, "rsub", other)

    def __invert__(self) -> Any:
        return self._apply_nest(torch.bitwise_not, filter_empty=False)

    def bitwise_not(self) -> Any:
        """``~leaf`` for every leaf.

        >>> (~TensorDict(a=torch.tensor([True])))["a"]
        tensor([False])
        """
        return ~self


def _ternary(td: Any, name: str, first: Any, second: Any, *, inplace: bool,
             **kwargs: Any) -> Any:
    """lerp / addcmul / addcdiv: ``_foreach`` when both operands fit it, else leaf-wise.
    In place, every leaf's result is checked (computed on the meta device: its shape and
    dtype) before the first is written."""
    result = _dense_ternary(td, name, first, second, inplace, kwargs.get("value"))
    if result is not None:
        return result
    fn = getattr(torch, name)
    method = getattr(_Tensor, f"{name}_")
    if inplace and not torch.compiler.is_compiling():
        check_targets(td, td._tensor_leaves())

        def check(x: _Tensor, a: Any, b: Any) -> None:
            if any(isinstance(t, _Tensor) and t.is_nested for t in (x, a, b)) or (
                    _like(a, x) and (_like(b, x) or isinstance(b, Number))):
                return  # (operands of the leaf's shape and dtype always fit)
            out = fn(_on_meta(x), _on_meta(a), _on_meta(b), **kwargs)
            if out.shape != x.shape or not torch.can_cast(out.dtype, x.dtype):
                raise RuntimeError(f"the result (shape {tuple(out.shape)}, dtype {out.dtype}) "
                                   f"cannot be written into the leaf")
        _leafwise(td, name + "_", check, (first, second), NO_DEFAULT)
    if _is_collection(first) and (_is_collection(second) or (
            name == "lerp" and isinstance(second, Number))):
        leaves, firsts = _paired_leaves(td, first, NO_DEFAULT)
        seconds = _paired_leaves(td, second, NO_DEFAULT)[1] if _is_collection(second) else second
        if leaves:
            kernel = getattr(torch, f"_foreach_{name}_" if inplace else f"_foreach_{name}")
            args = (leaves, firsts, seconds)
            if name != "lerp":
                args += (kwargs["value"],)
            result = kernel(*args)
            return td if inplace else td._from_leaves(result)
    if inplace:
        _leafwise(td, name, lambda x, a, b: method(x, a, b, **kwargs), (first, second),
                  NO_DEFAULT)
        return td
    return _leafwise(td, name, lambda x, a, b: fn(x, a, b, **kwargs), (first, second),
                     NO_DEFAULT)


def _like(value: Any, leaf: _Tensor) -> bool:
    """Whether ``value`` is a tensor of the shape and dtype of ``leaf``."""
    return value.__class__ is _Tensor and value.dtype == leaf.dtype and \
        value.shape == leaf.shape


def _on_meta(value: Any) -> Any:
    """A (strided) tensor's stand-in on the meta device (same shape, strides and dtype:
    an op on it checks what the real op would, computing nothing); other values as they
    are."""
    return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype,
                               device="meta") if isinstance(value, _Tensor) else value


def _dense_ternary(td: Any, name: str, first: Any, second: Any, inplace: bool,
                   value: Any) -> Any:
    """The fast path of :func:`_ternary`: ``td``, ``first`` and ``second`` (or, for lerp,
    a Python number weight) dense TensorDicts with the same keys, or lazy stacks of them,
    their leaves gathered in one walk and computed by one ``_foreach`` call. None, having
    written nothing, when that does not apply: in place, also unless every leaf trio has
    one shape and one floating dtype (nothing can fail half way); out of place, when the
    kernel fails.

    >>> td = TensorDict(a=torch.zeros(2), n={"b": torch.ones(2)})
    >>> _dense_ternary(td, "lerp", td + 2, 0.5, False, None)["n", "b"]
    tensor([2., 2.])
    """
    if not (td.__class__ is classes.TensorDict or td.__class__ is classes.LazyStackedTensorDict) \
            or torch.compiler.is_compiling():
        return None
    xs: list[_Tensor] = []
    ys: list[_Tensor] = []
    if not stacked_leaf_pairs(td, first, xs, ys) or not xs:
        return None
    operands: list[Any] = [xs, ys]
    if second.__class__ is td.__class__:
        zs: list[_Tensor] = []
        if not stacked_leaf_pairs(td, second, [], zs):
            return None
        operands.append(zs)
    elif name == "lerp" and second.__class__ in _SCALARS:
        operands.append(second)
    else:
        return None
    if value is not None:
        operands.append(value)
    if inplace:
        if not in_place_ready(xs):
            return None
        for leaves in operands[1:3]:
            if leaves.__class__ is list and not (same_shapes(xs, leaves) and all(
                    x is y and x.is_floating_point for x, y in set(zip(map(_dtype, xs),
                                                                       map(_dtype, leaves))))):
                return None
        getattr(torch, f"_foreach_{name}_")(*operands)
        return td
    try:
        result = getattr(torch, f"_foreach_{name}")(*operands)
    except (RuntimeError, TypeError):
        return None
    return _rebuilt(td, iter(result))


def _install() -> None:
    for name in UNARY:
        setattr(PointwiseMixin, name, _make_unary(name, False))
        setattr(PointwiseMixin, name + "_", _make_unary(name, True))
    for name in PREDICATES:
        setattr(PointwiseMixin, name, _make_predicate(name))
    for name, (_, _, has_inplace) in BINARY.items():
        setattr(PointwiseMixin, name, _make_binary(name, False))
        if has_inplace:
            setattr(PointwiseMixin, name + "_", _make_binary(name, True))
    dunders = {
        "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
        "mod": "mod", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or",
        "xor": "bitwise_xor",
    }
    for dunder, name in dunders.items():
        setattr(PointwiseMixin, f"__{dunder}__", getattr(PointwiseMixin, name))
        setattr(PointwiseMixin, f"__i{dunder}__", getattr(PointwiseMixin, name + "_"))
    for dunder in ("add", "mul", "and", "or", "xor"):
        setattr(PointwiseMixin, f"__r{dunder}__", getattr(PointwiseMixin, f"__{dunder}__"))
    for dunder in ("truediv", "floordiv", "mod", "pow"):
        setattr(PointwiseMixin, f"__r{dunder}__", _reflected(dunder))
    PointwiseMixin.__neg__ = PointwiseMixin.neg
    PointwiseMixin.__abs__ = PointwiseMixin.abs
    PointwiseMixin.__pos__ = lambda self: self
    PointwiseMixin.negative = PointwiseMixin.neg
    PointwiseMixin.true_divide = PointwiseMixin.div
    PointwiseMixin.remainder = PointwiseMixin.mod
    PointwiseMixin.subtract = PointwiseMixin.sub
    PointwiseMixin.multiply = PointwiseMixin.mul
    PointwiseMixin.divide = PointwiseMixin.div


_install()
