"""Locks, dim names and batch-size/device metadata of a TensorDict.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(3, 4), batch_size=[3, 4]).lock_()
    >>> with td.unlock_():
    ...     td["b"] = torch.zeros(3, 4)
    >>> td.is_locked, td.rename("x", "y").names
    (True, ['x', 'y'])
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import (
    acts_as_tensordict,
    is_sub_tensordict,
    is_tensor_collection,
)
from tensordict._helpers import _shape
from tensordict._last_op import write_back
from tensordict._unbatched import UnbatchedTensor

#: The lock state of a collection locked because a collection holding it is (truthy):
#: it unlocks with that holder, not on its own.
LOCKED_BY_PARENT = 2


class _Entered:
    """An exit action a ``with`` block entered on: ``with td.unlock_(): td.lock_()``
    relocks on exit (the block's own calls are not what its exit undoes)."""

    __slots__ = ("action",)

    def __init__(self, action: Callable[[Any], Any] | None) -> None:
        self.action = action


_LOCK = operator.methodcaller("lock_")
_UNLOCK = operator.methodcaller("unlock_")

_unlocks = 0  # see unlock_count


def unlock_tree(collection: Any) -> None:
    """Unlock ``collection`` and the sub-collections it locked, counted by
    :func:`unlock_count` (what ``unlock_`` does, without its ``with`` support).

    >>> from tensordict import TensorDict
    >>> td = TensorDict(sub=TensorDict()).lock_()
    >>> unlock_tree(td)
    >>> td.is_locked, td["sub"].is_locked
    (False, False)
    """
    global _unlocks
    _unlocks += 1
    collection._propagate_lock(False)


def unlock_count() -> int:
    """How many times a collection was unlocked in this process: something worked out
    from a locked collection still holds while this count has not changed.

    >>> before = unlock_count()
    >>> _ = TensorDict().lock_().unlock_()
    >>> unlock_count() == before + 1
    True
    """
    return _unlocks


def lock_views(td: Any) -> Any:
    """Make the index views of the locked ``td`` (``td[0]``, ``td[1:3]``, ``td[..., 0]``:
    the results that view its data; not those of a tensor or mask index, which are
    copies) locked too, as upstream does for memory-mapped and shared-memory
    TensorDicts: a write that a view would keep to itself raises instead. Unlocking
    ``td`` ends it. Returns ``td``.

    >>> from tensordict import TensorDict
    >>> td = lock_views(TensorDict(a=torch.zeros(3), batch_size=[3]).lock_())
    >>> td[0].is_locked, td[torch.tensor([0])].is_locked, td.unlock_().lock_()[0].is_locked
    (True, False, False)
    """
    if not td._is_locked:
        raise RuntimeError("lock_views needs a locked TensorDict: lock it first")
    td._locks_views = True
    return td


class MetadataMixin:
    """Lock state (with context-manager use), batch size inference, device and names."""

    __slots__ = ()

    @property
    def is_locked(self) -> bool:
        """Whether entries can be added, removed or replaced."""
        return bool(self._is_locked)

    @is_locked.setter
    def is_locked(self, value: bool) -> None:
        self.lock_() if value else self.unlock_()

    # -- locking --------------------------------------------------------------------------
    def lock_(self) -> Any:
        """Lock this TensorDict and its sub-TensorDicts; returns self.

        Used as ``with td.lock_():`` it unlocks again on exit.
        """
        self._push_exit(_UNLOCK if not self.is_locked else None)
        if self._is_locked != LOCKED_BY_PARENT:
            self._propagate_lock(True)
        return self

    def unlock_(self) -> Any:
        """Unlock this TensorDict and its sub-TensorDicts; returns self.

        ``with td.unlock_(): ...`` locks it again on exit. A sub-TensorDict of a locked
        TensorDict cannot be unlocked on its own (writes to it would change the locked
        one): unlock the TensorDict holding it.

        >>> td = TensorDict(n=TensorDict()).lock_()
        >>> try:
        ...     td["n"].unlock_()
        ... except RuntimeError as err:
        ...     print(type(err).__name__)
        LockedTensorDictError
        """
        if self._is_locked == LOCKED_BY_PARENT:
            raise errors.LockedTensorDictError(
                "Cannot unlock a TensorDict held by a locked TensorDict: unlock the locked "
                "TensorDict holding it instead."
            )
        self._push_exit(_LOCK if self.is_locked else None)
        unlock_tree(self)
        return self

    def _push_exit(self, action: Callable[[Any], Any] | None) -> None:
        """Remember what leaving the next ``with`` block does: ``action(self)``. The
        action never holds ``self``, so no reference cycle delays freeing it."""
        try:
            stack = self._exit_stack
        except AttributeError:  # a class that is no context manager
            return
        if stack is None:  # made on first use: most TensorDicts never enter a context
            stack = self._exit_stack = []
        stack.append(action)
        if len(stack) > 9:  # only the latest 8 calls can still be exited, after the record
            del stack[1 if isinstance(stack[0], tuple) else 0]  # of how this was made

    def __enter__(self) -> Any:
        stack = getattr(self, "_exit_stack", None)
        if stack and not isinstance(stack[-1], (tuple, _Entered)):
            stack[-1] = _Entered(stack[-1])  # what this block undoes, whatever it calls
        return self

    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> None:
        """Undo the latest ``lock_``/``unlock_`` (also when the block raised), or else write
        this result of a shape op, ``to``, ``flatten_keys``... back into the collection
        it was made from (unless the block raised): see :mod:`tensordict._last_op`.

        >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
        >>> with td.permute(1, 0) as swapped:
        ...     swapped["a"] = torch.ones(3, 2)
        >>> td["a"].sum()
        tensor(6.)
        """
        stack = getattr(self, "_exit_stack", None)
        if not stack:
            return
        action = stack[-1]
        if isinstance(action, tuple):  # how this was made (made_by): it stays, for a
            if exc_type is None:  # later ``with`` to write back again
                write_back(self, action)
            return
        entered = next((i for i in range(len(stack) - 1, -1, -1)
                        if isinstance(stack[i], _Entered)), None)
        if entered is None:
            stack.pop()
        else:  # the block's own lock_/unlock_ calls are not undone: the entered one is
            action = stack[entered].action
            del stack[entered:]
        if action is not None:
            depth = len(stack)
            action(self)
            del stack[depth:]  # drop what the action itself pushed (lock_/unlock_)

    # -- batch size and device helpers -------------------------------------------------------
    def auto_batch_size_(self, batch_dims: int | None = None) -> Any:
        """Set the batch size to the largest leading shape common to every entry
        (sub-TensorDicts first)."""
        for key in self._keys_str():
            value = self._get_str(key)
            if is_sub_tensordict(value):
                value.auto_batch_size_()
        shapes = [  # a strided nested tensor: -1 where its components differ
            (v.batch_size if is_tensor_collection(v) else _shape(v))
            for v in (self._get_str(k) for k in self._keys_str())
            if not getattr(v, "_is_non_tensor", False) and v.__class__ is not UnbatchedTensor
        ]
        common: list[int] = []
        if shapes:
            for sizes in zip(*shapes):
                if sizes[0] < 0 or any(s != sizes[0] for s in sizes):
                    break
                common.append(sizes[0])
        if batch_dims is not None:
            common = common[:batch_dims]
        self.batch_size = torch.Size(common)
        return self

    def clear_device_(self) -> Any:
        """Forget the device (sub-TensorDicts too); returns self."""
        self._device = None
        for key in self._keys_str():
            value = self._get_str(key)
            if acts_as_tensordict(value):
                value.clear_device_()
        return self

    # -- dim names ------------------------------------------------------------------------
    def _has_names(self) -> bool:
        """Whether any batch dim is named."""
        return any(name is not None for name in self.names)

    def refine_names(self, *names: str) -> Any:
        """Name the unnamed dims (``...`` keeps the existing names); returns self."""
        current = self.names
        if Ellipsis in names:
            position = names.index(Ellipsis)
            fill = current[position: len(current) - (len(names) - position - 1)]
            names = names[:position] + tuple(fill) + names[position + 1:]
        if len(names) > len(current):
            raise IndexError(f"refine_names got {len(names)} names {list(names)} for a batch "
                             f"size of {len(current)} dims")
        for old, new in zip(current, names):
            if old is not None and new is not None and old != new:
                raise RuntimeError(f"cannot rename dim {old!r} to {new!r} with refine_names")
        self.names = [old if new is None else new for old, new in zip(current, names)]
        return self

    def rename(self, *names: str | None, **rename_map: str) -> Any:
        """A shallow copy with new dim names."""
        out = self.copy()
        return out.rename_(*names, **rename_map)

    def rename_(self, *names: str | None, **rename_map: str) -> Any:
        """Set the dim names (positionally, or old-name=new-name); returns self."""
        if names and rename_map:
            raise ValueError("pass names either positionally or as a mapping, not both")
        if names:
            self.names = list(names) if not (len(names) == 1 and names[0] is None) else None
        else:
            current = self.names
            missing = set(rename_map) - set(n for n in current if n is not None)
            if missing:
                raise ValueError(f"no dim named {sorted(missing)}; names are {current}")
            self.names = [rename_map.get(n, n) if n is not None else None for n in current]
        return self
