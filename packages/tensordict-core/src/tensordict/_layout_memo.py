"""Remembered layouts: a fast write path's per-leaf checks, skipped for leaves laid out
as the last ones that passed them.

``td.copy_(other)`` checks every pair of leaves before its one ``_foreach_copy_`` (same
shapes, contiguous targets, no inference tensor, nothing autograd tracks), so that a bad
input raises with nothing written. Those are five queries a leaf, from Python. Repeated
writes (a target network's hard update, a rollout buffer filled row by row) pass the same
checks with leaves of the same layout every time: a :class:`LayoutMemo` recognizes such
leaves in one call of dynamo's ``TensorGuards``, which compares each tensor's class,
dtype, device, shape, strides, dispatch keys (inference tensors have their own) and
``requires_grad`` in C++, a quarter of the time of the queries it replaces.

Example:
    >>> import torch
    >>> memo = LayoutMemo()
    >>> target, checks = torch.zeros(2), []
    >>> def check():
    ...     checks.append(1)
    ...     return True
    >>> [memo.fits("copy", [target], [torch.ones(2)], check) for _ in range(4)], len(checks)
    ([True, True, True, True], 2)
    >>> memo.fits("copy", [target], [torch.ones(3)], lambda: False)  # another layout
    False
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import torch

#: dynamo's checker of tensor layouts (None on a torch without it: every write is checked)
_Guards = getattr(getattr(getattr(torch._C, "_dynamo", None), "guards", None),
                  "TensorGuards", None)
_grad_enabled = torch.is_grad_enabled
_inference_mode = torch.is_inference_mode_enabled
_UNSEEN = object()  # no pass remembered for the key
_PASSED_ONCE = None  # one pass: the layout is remembered on the next
_UNREMEMBERED = False  # leaves whose layout TensorGuards cannot hold (nested tensors...)


class LayoutMemo:
    """The layouts of the leaves that passed a write's checks, per kind of write and
    place written (the memory of its first target). A layout is remembered on its
    second pass, so that a one-off write pays nothing for it. Holds no tensor: only
    their metadata."""

    __slots__ = ("_layouts", "_capacity")

    def __init__(self, capacity: int = 64) -> None:
        self._layouts: dict[Hashable, object] = {}
        self._capacity = capacity

    def fits(self, kind: Hashable, targets: list[torch.Tensor], sources: list[torch.Tensor],
             check: Callable[[], bool]) -> bool:
        """Whether ``check()`` passes for the write of ``sources`` into ``targets``: True
        at once if they are laid out as the last ones that passed it for a write of that
        ``kind`` into the same memory (that of ``targets[0]``), in the same grad and
        inference modes (which the checks depend on); else ``check()``, whose pass is
        remembered. ``check`` must depend only on the layouts of the tensors and on
        those modes."""
        if not targets:
            return check()
        try:
            place = targets[0].data_ptr()
        except RuntimeError:  # no storage (a functorch wrapper, a sparse tensor)
            return check()
        key = (kind, place, len(targets), _grad_enabled(), _inference_mode())
        layouts = self._layouts
        layout = layouts.get(key, _UNSEEN)
        if layout.__class__ is _Guards:
            if layout.check(*targets, *sources):  # type: ignore[attr-defined]
                return True
            layout = _PASSED_ONCE  # laid out otherwise now: remembered on its next pass
        if not check():
            return False
        if layout is _UNSEEN:
            layout = _PASSED_ONCE
            if len(layouts) >= self._capacity:
                layouts.clear()
        elif layout is _PASSED_ONCE:
            layout = _remember(targets + sources)
        layouts[key] = layout
        return True


def _remember(tensors: Sequence[torch.Tensor]) -> object:
    """A TensorGuards holding the layout of ``tensors``, or ``_UNREMEMBERED``."""
    if _Guards is None:
        return _UNREMEMBERED
    try:
        return _Guards(*tensors, dynamic_dims_sizes=[list(t.shape) for t in tensors],
                       dynamic_dims_strides=[list(t.stride()) for t in tensors])
    except Exception:  # (nested tensors have no strides; another torch, other arguments)
        return _UNREMEMBERED


#: the memo of the fast copies of ``copy_``/``update_`` and ``td[index] = value``
COPIES = LayoutMemo()
