"""Writes to several entries that happen all or not at all.

A write touching many entries (``update_``, ``td[idx] = value``, ``update_at_``,
``apply_``) first builds a :class:`WritePlan`. Each step is checked when it is added
(shape, dtype where the copy needs it, whether the target can be written in place), and
:meth:`WritePlan.run` performs the steps only once every one of them is known to fit. A
bad input thus raises with the collection unchanged.

Example:
    >>> import torch
    >>> a, b = torch.zeros(2), torch.zeros(3)
    >>> plan = WritePlan()
    >>> plan.copy(a, torch.ones(2), "a")
    >>> plan.copy(b, torch.ones(4), "b")
    Traceback (most recent call last):
    ...
    RuntimeError: cannot write a value of shape [4] into the entry 'b' of shape [3]
    >>> a  # nothing was written
    tensor([0., 0.])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from operator import attrgetter
from typing import Any

import torch

from tensordict.errors import InplaceWriteError

_Tensor = torch.Tensor
_requires_grad = attrgetter("requires_grad")
#: whether a tensor of the given lists requires grad, in one torch call where it has one
any_requires_grad = getattr(torch._C, "_any_requires_grad", None) or (
    lambda *lists: any(any(map(_requires_grad, tensors)) for tensors in lists))
_WHOLE: Any = object()  # no index: the whole target is written
_below_autograd = torch._C._AutoDispatchBelowAutograd
_functorch_active = torch._C._are_functorch_transforms_active
_forward_ad = torch.autograd.forward_ad  # (its _current_level: -1 outside a dual level)


def broadcasts_to(shape: Sequence[int], target: Sequence[int]) -> bool:
    """Whether a value of ``shape`` broadcasts to ``target`` (without adding dims).

    >>> broadcasts_to((1, 3), (2, 3)), broadcasts_to((4,), (2, 3))
    (True, False)
    """
    if len(shape) > len(target):
        return False
    return all(s == 1 or s == t for s, t in zip(reversed(shape), reversed(target)))


def check_write(target: _Tensor, source: Any, key: Any, shape: Sequence[int] | None = None,
                *, advanced: bool = False) -> None:
    """Raise, naming ``key``, if ``source`` cannot be written into ``target`` in place.

    Args:
        target: the tensor written to.
        source: a tensor, a Python number, or None (only ``target`` is checked).
        key: the entry, for the message.
        shape: the shape of the part of ``target`` written (``target.shape`` by default).
        advanced: the write goes through a tensor index (``index_put``), which needs the
            dtypes to be equal.
    """
    if isinstance(source, _Tensor) and (target.is_nested or source.is_nested):
        if shape is None and not (target.is_nested and source.is_nested and
                                  target.is_same_size(source)):
            raise RuntimeError(f"cannot write a value of {_nested_shape(source)} into the "
                               f"entry {key!r} of {_nested_shape(target)}")
        return  # (an indexed write: torch checks it as a whole, before writing)
    if target.is_nested:
        return
    if isinstance(source, _Tensor):
        shape = target.shape if shape is None else shape
        if source.shape != shape and not broadcasts_to(source.shape, shape):
            raise RuntimeError(f"cannot write a value of shape {list(source.shape)} into the "
                               f"entry {key!r} of shape {list(shape)}")
        if advanced and source.dtype != target.dtype:
            raise RuntimeError(f"cannot write a value of dtype {source.dtype} into the entry "
                               f"{key!r} of dtype {target.dtype} at a tensor index: cast it "
                               "first")
    elif isinstance(source, complex) and not target.is_complex():
        raise TypeError(f"cannot write the complex number {source!r} into the entry {key!r} "
                        f"of dtype {target.dtype}")
    check_target(target, key)


def check_target(target: _Tensor, key: Any, *, shared_ok: bool = False) -> None:
    """Raise, naming ``key``, if ``target`` cannot be written in place whatever the value:
    a leaf that requires grad or a view of one (with grad enabled: an
    :class:`~tensordict.errors.InplaceWriteError`, as upstream's), elements that share
    memory (an expanded tensor; ``shared_ok`` for a fill, which writes one value), or an
    inference tensor outside inference mode (torch would write it, then raise).

    >>> check_target(torch.zeros(1).expand(2), "a")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    RuntimeError: cannot write in place into the entry 'a' of shape [2]: its elements ...
    """
    if target.requires_grad and torch.is_grad_enabled() and (
            target.is_leaf or (target._is_view() and target._base.is_leaf)):
        raise InplaceWriteError(f"cannot write in place into the entry {key!r}: a leaf "
                                "Variable that requires grad (or a view of one) is being "
                                "used in an in-place operation (write under torch.no_grad())")
    if not shared_ok and not target.is_contiguous() and any(  # only such a tensor can overlap
            stride == 0 and size > 1 for stride, size in zip(target.stride(), target.shape)):
        raise RuntimeError(f"cannot write in place into the entry {key!r} of shape "
                           f"{list(target.shape)}: its elements share memory (an expanded "
                           "tensor); clone it first")
    if not torch.compiler.is_compiling() and target.is_inference() and \
            not torch.is_inference_mode_enabled():  # (dynamo traces neither)
        raise RuntimeError(f"cannot write in place into the entry {key!r}: it is an inference "
                           "tensor (made under torch.inference_mode()), written outside "
                           "inference mode; clone it first")


def _nested_shape(tensor: _Tensor) -> str:
    """A tensor's shape for a message (a nested tensor's components' shapes)."""
    if not tensor.is_nested:
        return f"shape {list(tensor.shape)}"
    return f"nested shapes {[list(part.shape) for part in tensor.unbind()]}"


def in_place_ready(targets: list[_Tensor]) -> bool:
    """Whether every tensor of ``targets`` passes :func:`check_target` but for grad,
    without looking closer: no tensor whose elements may share memory (a non-contiguous
    one may be expanded) and no inference tensor outside inference mode. One pass over
    the list, for the fast paths.

    >>> in_place_ready([torch.zeros(2)]), in_place_ready([torch.zeros(1).expand(2)])
    (True, False)
    """
    return all(map(_Tensor.is_contiguous, targets)) and (
        torch.is_inference_mode_enabled() or not any(map(_Tensor.is_inference, targets)))


def writable_in_place(targets: list[_Tensor], sources: Sequence[_Tensor] = ()) -> bool:
    """Whether ``targets[i].copy_(sources[i])`` passes the checks of :func:`check_write`
    but for shapes, without looking closer: :func:`in_place_ready` targets, and no tensor
    of either list that autograd tracks (with grad enabled: ``_foreach_copy_`` has no
    derivative).

    >>> writable_in_place([torch.zeros(2)], [torch.ones(2, requires_grad=True)])
    False
    """
    return not (torch.is_grad_enabled() and any_requires_grad(targets, sources)) and \
        in_place_ready(targets)


def untracked() -> AbstractContextManager[Any]:
    """A context that skips autograd's dispatch layer (a sixth of the time of a small
    copy or view); version counters are still bumped and views still share them. Only for
    tensors autograd does not track, as :func:`writable_in_place` checks. A functorch
    transform or a forward-AD level, whose tangents that layer carries, keeps it.

    >>> x = torch.zeros(2)
    >>> with untracked():
    ...     _ = x[0].fill_(1.0)
    >>> x, x._version
    (tensor([1., 0.]), 1)
    """
    if _functorch_active() or _forward_ad._current_level >= 0:
        return nullcontext()
    return _below_autograd()


def one_call_copies() -> bool:
    """Whether copies may run as one ``_foreach_copy_``: not while dynamo traces them
    (the loop is its graph), nor under a functorch transform (``vmap`` has no batching
    rule for it).

    >>> one_call_copies(), torch.vmap(lambda x: torch.tensor(one_call_copies()))(torch.ones(1))
    (True, tensor([False]))
    """
    return not (torch.compiler.is_compiling() or _functorch_active())


def copy_untracked(targets: list[_Tensor], sources: Sequence[_Tensor],
                   non_blocking: bool = False) -> None:
    """``targets[i].copy_(sources[i])`` for each i, in one ``_foreach_copy_`` run
    :func:`untracked`.

    >>> x = torch.zeros(2)
    >>> copy_untracked([x], [torch.ones(2)]); x, x._version
    (tensor([1., 1.]), 1)
    """
    with untracked():
        torch._foreach_copy_(targets, sources, non_blocking=non_blocking)


def same_shapes(xs: list[_Tensor], ys: list[_Tensor]) -> bool:
    """Whether ``xs[i].shape == ys[i].shape`` for each i (lists of the same length).

    >>> x = [torch.zeros(2)]
    >>> same_shapes(x, [torch.ones(2)]), same_shapes(x, [torch.ones(1)])
    (True, False)
    """
    try:
        return all(map(_Tensor.is_same_size, xs, ys))  # (no torch.Size built: 30% faster)
    except RuntimeError:  # a nested tensor beside a strided one
        return False


class WritePlan:
    """Checked writes, performed together by :meth:`run`: whole copies, then indexed
    copies, then the other steps (independent of each other: a step never writes into
    what another one replaces)."""

    __slots__ = ("_copies", "_async_copies", "_indexed", "_calls")

    def __init__(self) -> None:
        # whole copies, ``targets[i].copy_(sources[i])``, as (targets, sources)
        self._copies: tuple[list[_Tensor], list[_Tensor]] = ([], [])
        self._async_copies: tuple[list[_Tensor], list[_Tensor]] = ([], [])  # non_blocking
        self._indexed: list[tuple[_Tensor, Any, Any]] = []
        self._calls: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []

    def copy(self, target: _Tensor, source: Any, key: Any, *, index: Any = _WHOLE,
             shape: Sequence[int] | None = None, advanced: bool = False,
             non_blocking: bool = False) -> None:
        """Check, then plan ``target[index] = source`` (``target.copy_(source)`` without
        ``index``, or with ``()`` and a tensor; ``shape`` is the shape of ``target[index]``)."""
        check_write(target, source, key, shape, advanced=advanced)
        if index is not _WHOLE and not (index.__class__ is tuple and not index and
                                        isinstance(source, _Tensor)):
            self._indexed.append((target, index, source))
        elif target is not source:
            targets, sources = self._async_copies if non_blocking else self._copies
            targets.append(target)
            sources.append(source)

    def call(self, fn: Callable[..., Any], *args: Any) -> None:
        """Plan ``fn(*args)``, a write already checked by the caller."""
        self._calls.append((fn, args))

    def extend(self, other: WritePlan) -> None:
        """Add the steps of another plan."""
        for mine, theirs in ((self._copies, other._copies),
                             (self._async_copies, other._async_copies)):
            mine[0].extend(theirs[0])
            mine[1].extend(theirs[1])
        self._indexed += other._indexed
        self._calls += other._calls

    def run(self) -> None:
        """Perform every step."""
        copy_all(*self._copies, non_blocking=False)
        copy_all(*self._async_copies, non_blocking=True)
        for target, index, source in self._indexed:
            target[index] = source
        for fn, args in self._calls:
            fn(*args)


def copy_all(targets: list[_Tensor], sources: list[_Tensor], non_blocking: bool) -> None:
    """``targets[i].copy_(sources[i])`` for each i: in one ``_foreach_copy_``, unless
    autograd must record the copies (it has no derivative for it), dynamo traces them
    (the loop is its graph) or a leaf has no kernel for it (nested tensors)."""
    if not targets:
        return
    if one_call_copies() and not (torch.is_grad_enabled() and
                                  any_requires_grad(targets, sources)):
        try:
            copy_untracked(targets, sources, non_blocking)
            return
        except NotImplementedError:  # no kernel for a leaf (nested tensors): none written
            pass
    for target, source in zip(targets, sources):
        target.copy_(source, non_blocking=non_blocking)
