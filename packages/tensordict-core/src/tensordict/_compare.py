"""Comparisons and truth: ``td == other`` gives a TensorDict of bools; ``all``/``any``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2), b={"c": torch.ones(2)}, batch_size=[2])
    >>> (td == td).all(), (td == 0)["b", "c"], (td != 0).any()
    (True, tensor([False, False]), True)
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from itertools import repeat
from numbers import Number
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import acts_as_tensordict, classes, is_tensor_collection, is_tensorclass
from tensordict._pointwise import dense_leaf_pairs, rebuild
from tensordict._traverse import dense_leaves

_Tensor = torch.Tensor
#: operands compared with every leaf as they are
_OPERANDS = frozenset({int, float, bool, _Tensor})


def leafwise_binary(td: Any, other: Any, op: Callable[[Any, Any], Any]) -> Any:
    """``op(leaf, other_leaf)`` for every leaf; ``other`` a collection, dict, tensor or
    number. Anything else (a string, None, a list...) is never equal to a TensorDict:
    ``==`` gives False and ``!=`` True (see :func:`_incomparable`)."""
    if td.__class__ is classes.TensorDict:  # dense: no key sets, no checks per leaf
        xs: list[torch.Tensor] = []
        if other.__class__ is classes.TensorDict:
            ys: list[torch.Tensor] = []
            if dense_leaf_pairs(td._tensordict, other._tensordict, xs, ys):
                return rebuild(td, map(op, xs, ys), td._device)
        elif other.__class__ in _OPERANDS and dense_leaves(td._tensordict, xs):
            return rebuild(td, map(op, xs, repeat(other)), td._device)
    if isinstance(other, Mapping) and not is_tensor_collection(other):
        other = classes.TensorDict(other)
    if is_tensor_collection(other):
        mine = set(td.keys(True, True))
        theirs = set() if getattr(other, "_is_non_tensor", False) else set(other.keys(True, True))
        if mine != theirs:
            raise KeyError(
                f"cannot compare TensorDicts with different keys: only in the first "
                f"{sorted(map(str, mine - theirs))}, only in the second "
                f"{sorted(map(str, theirs - mine))}"
            )
    elif not isinstance(other, (Number, torch.Tensor)):
        return _incomparable(td, other, op)
    return _binary_nested(td, other, op)


def _incomparable(td: Any, other: Any, op: Callable[[Any, Any], Any]) -> bool:
    """The result of comparing ``td`` with a value that is neither a collection, a tensor
    nor a number: not equal; ordering gives False for a TensorDict (as upstream) and
    raises ValueError for other collections."""
    if op is operator.eq or op is operator.ne:
        return op is operator.ne
    if type(td) is classes.TensorDict:
        return False
    raise ValueError(f"Incompatible value {type(other)} for op __{op.__name__}__.")


def _binary_nested(td: Any, other: Any, op: Callable[[Any, Any], Any]) -> Any:
    """Recursive form that also compares non-tensor entries (as bool tensors)."""
    out: dict[str, Any] = {}
    for key in td._keys_str():
        mine = td._get_str(key)
        theirs = other._get_str(key) if is_tensor_collection(other) else other
        if acts_as_tensordict(mine) and not getattr(mine, "_is_non_tensor", False) \
                and not isinstance(mine, classes.LazyStackedTensorDict):
            out[key] = _binary_nested(mine, theirs, op)
        else:  # a leaf, or a lazy stack: it compares part by part (ragged parts too)
            out[key] = op(mine, theirs)
    return classes.TensorDict._from_entries(out, td.batch_size, td.device,
                                          getattr(td, "_names", None))


def _some_leaf_is(td: Any, reducer: Callable[[torch.Tensor], torch.Tensor], want: bool) -> bool:
    """Whether ``reducer`` (``Tensor.all`` or ``Tensor.any``) of some tensor leaf is
    ``want``, stopping at the first one; a lazy stack reduces itself, part by part (its
    parts may differ in shape).

    >>> td = TensorDict(a=torch.ones(2), n={"b": torch.zeros(2)})
    >>> _some_leaf_is(td, torch.Tensor.all, False), _some_leaf_is(td, torch.Tensor.any, True)
    (True, True)
    """
    dense = classes.TensorDict
    values = td._tensordict.values() if td.__class__ is dense else \
        map(td._get_str, td._keys_str())
    for value in values:
        cls = value.__class__
        if cls is _Tensor:  # the common cases first, before the other checks
            flag = bool(reducer(value))
        elif cls is not dense and getattr(value, "_is_non_tensor", False):
            continue
        elif cls is dense or acts_as_tensordict(value) and \
                not isinstance(value, classes.LazyStackedTensorDict):
            if _some_leaf_is(value, reducer, want):
                return True
            continue
        elif is_tensor_collection(value):
            flag = bool(getattr(value, reducer.__name__)())
        else:
            flag = bool(reducer(torch.as_tensor(value)))
        if flag is want:
            return True
    return False


def _reduce_truth(td: Any, reducer: Callable[..., torch.Tensor], dim: int) -> Any:
    """``all(dim)``/``any(dim)``: a TensorDict of the leaves reduced along ``dim``."""
    ndim = len(td.batch_size)
    if not -ndim <= dim < ndim:
        raise errors.dim_out_of_range(dim, td.batch_size, "all_any")
    dim = dim % ndim
    new_size = td.batch_size[:dim] + td.batch_size[dim + 1:]
    return td._apply_nest(
        lambda x: reducer(x, dim=dim) if x.ndim else x,
        batch_size=new_size,
    )


class CompareMixin:
    """``== != < <= > >=`` leaf-wise, and ``all``/``any``."""

    __slots__ = ()

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return leafwise_binary(self, other, operator.eq)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return leafwise_binary(self, other, operator.ne)

    def __lt__(self, other: Any) -> Any:
        return leafwise_binary(self, other, operator.lt)

    def __le__(self, other: Any) -> Any:
        return leafwise_binary(self, other, operator.le)

    def __gt__(self, other: Any) -> Any:
        return leafwise_binary(self, other, operator.gt)

    def __ge__(self, other: Any) -> Any:
        return leafwise_binary(self, other, operator.ge)

    def all(self, dim: int | None = None) -> Any:
        """True if every element of every leaf is true (a TensorDict with ``dim``)."""
        if dim is None:  # no leaf is all-False
            return not _some_leaf_is(self, _Tensor.all, False)
        return _reduce_truth(self, _Tensor.all, dim)

    def any(self, dim: int | None = None) -> Any:
        """True if any element of any leaf is true (a TensorDict with ``dim``)."""
        if dim is None:
            return _some_leaf_is(self, _Tensor.any, True)
        return _reduce_truth(self, _Tensor.any, dim)


def assert_close(actual: Any, expected: Any, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = True, intersection: bool = False,
                 msg: str = "", prefix: tuple[str, ...] = ()) -> bool:
    """Assert that two TensorDicts hold the same keys and close values (``rtol``/``atol`` as
    ``torch.testing.assert_close``); non-tensor values must be equal. Returns True.

    With ``intersection=True`` only the keys present in both are compared.

    >>> td = TensorDict(a=torch.ones(2), s="x")
    >>> assert_close(td, td.clone())
    True
    >>> assert_close(td, td + 1)
    Traceback (most recent call last):
    ...
    AssertionError: key ('a',) does not match, got mse = 1.0000...
    """
    if not is_tensor_collection(actual) or not is_tensor_collection(expected):
        raise TypeError(f"assert_close compares tensor collections, got "
                        f"{type(actual).__name__} and {type(expected).__name__}")
    # a tensorclass's non-tensor fields read as plain values: compare their storage
    actual, expected = (x._tensordict if is_tensorclass(x) else x for x in (actual, expected))
    if _is_lazy_stack(actual) or _is_lazy_stack(expected):
        return _assert_parts_close(actual, expected, rtol, atol, equal_nan, intersection, msg,
                                   prefix)
    keys, other = set(actual.keys()), set(expected.keys())
    if intersection:
        keys &= other
    elif keys != other:
        raise KeyError(f"{msg}{' ' if msg else ''}keys differ: only in actual "
                       f"{_key_names(keys - other, prefix)}, only in expected "
                       f"{_key_names(other - keys, prefix)}")
    for key in [k for k in actual.keys() if k in keys]:
        path = prefix + (key,)
        mine, theirs = actual.get(key), expected.get(key)
        if getattr(mine, "_is_non_tensor", False) or getattr(theirs, "_is_non_tensor", False):
            if not _nontensor_equal(mine, theirs):
                raise AssertionError(f"{msg}{' ' if msg else ''}key {path} does not match: "
                                     f"{mine!r} != {theirs!r}")
            continue
        nested = is_tensor_collection(mine), is_tensor_collection(theirs)
        if nested == (True, True):
            assert_close(mine, theirs, rtol, atol, equal_nan, intersection, msg, path)
            continue
        if True in nested:
            if intersection:
                continue
            raise KeyError(f"{msg}{' ' if msg else ''}keys differ: {path} holds a "
                           f"{type(mine).__name__} in actual, a {type(theirs).__name__} in "
                           f"expected")
        try:
            torch.testing.assert_close(mine, theirs, rtol=rtol, atol=atol, equal_nan=equal_nan)
        except AssertionError as err:
            mse = (mine.double() - theirs.double()).pow(2).mean().item() if (
                mine.shape == theirs.shape) else float("nan")
            raise AssertionError(f"{msg}{' ' if msg else ''}key {path} does not match, got "
                                 f"mse = {mse:.4f}\n{err}") from None
    return True


def _is_lazy_stack(td: Any) -> bool:
    return isinstance(td, classes.LazyStackedTensorDict) and not getattr(td, "_is_non_tensor",
                                                                          False)


def _key_names(keys: set[str], prefix: tuple[str, ...]) -> list[str]:
    """Sorted names of ``keys`` under ``prefix``: ``'a'`` at the root, ``"('n', 'a')"``
    below it."""
    return sorted(str(prefix + (key,)) if prefix else key for key in keys)


def _assert_parts_close(actual: Any, expected: Any, rtol: float | None, atol: float | None,
                        equal_nan: bool, intersection: bool, msg: str,
                        prefix: tuple[str, ...]) -> bool:
    """:func:`assert_close` of a lazy stack part by part (its parts may be ragged) along
    its stack dimension; the other collection is unbound along the same one."""
    if actual.batch_size != expected.batch_size:
        raise AssertionError(f"{msg}{' ' if msg else ''}batch sizes differ at {prefix}: "
                             f"{actual.batch_size} != {expected.batch_size}")
    dim = (actual if _is_lazy_stack(actual) else expected).stack_dim
    for mine, theirs in zip(actual.unbind(dim), expected.unbind(dim)):
        assert_close(mine, theirs, rtol, atol, equal_nan, intersection, msg, prefix)
    return True


def _nontensor_equal(mine: Any, theirs: Any) -> bool:
    """Whether two leaves, at least one of them non-tensor, hold equal objects: Python's
    list equality of their ``tolist()``, which tries identity first, so an object whose
    ``==`` has no truth value (a weakref to a TensorDict) equals itself; a comparison
    without a truth value between distinct objects is a mismatch.

    >>> from tensordict import NonTensorData, NonTensorStack
    >>> _nontensor_equal(NonTensorStack("a", "b"), NonTensorStack("a", "b"))
    True
    >>> _nontensor_equal(NonTensorData("a"), torch.zeros(()))
    False
    """
    if not (getattr(mine, "_is_non_tensor", False) and getattr(theirs, "_is_non_tensor", False)):
        return False
    try:
        return [mine.tolist()] == [theirs.tolist()]
    except (RuntimeError, ValueError):  # e.g. bool() of a TensorDict or a multi-element tensor
        return False


assert_allclose_td = assert_close
