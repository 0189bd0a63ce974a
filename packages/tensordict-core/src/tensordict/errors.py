"""Errors raised by tensordict, and the messages that explain them.

Every message names the key path involved and, for shape problems, the expected and
actual shapes.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
    >>> try:
    ...     td["b"] = torch.zeros(4)
    ... except RuntimeError as err:
    ...     print(str(err).split(". ")[0])
    batch dimension mismatch, got self.batch_size=torch.Size([3])
    and value.shape=torch.Size([4]) for key 'b'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class LockedTensorDictError(RuntimeError):
    """A write that adds, removes or replaces an entry of a locked TensorDict."""


class MissingKeyError(KeyError):
    """A key that is not in the TensorDict (the message is printed unquoted)."""

    def __str__(self) -> str:
        return str(self.args[0])


class KeyThroughLeafError(MissingKeyError):
    """A nested key that goes through a leaf (a tensor has no entries)."""


def missing_key(
    key: Any, available: Iterable[str], where: tuple[str, ...] = ()
) -> MissingKeyError:
    """A KeyError naming the key, where it was looked up and what exists there.

    ``key`` is the full path (or a top-level key), ``where`` the path of the
    TensorDict in which its last missing part was looked up.
    """
    if not where:
        return MissingKeyError(
            f'key "{key}" not found in TensorDict with keys {sorted(available)!r}'
        )
    return MissingKeyError(
        f"key {key!r} not found: the TensorDict at {where!r} has no entry "
        f"{key[len(where)]!r}, its keys are {sorted(available)!r}"
    )


def batch_mismatch(key: Any, shape: Any, batch_size: Any) -> RuntimeError:
    """A RuntimeError for a value whose leading dims do not match the batch size."""
    return RuntimeError(
        f"batch dimension mismatch, got self.batch_size={batch_size} and "
        f"value.shape={shape} for key {key!r}. The leading dimensions of a value "
        "must match the batch size."
    )


def locked(action: str = "modify") -> LockedTensorDictError:
    """The error for a write to a locked TensorDict."""
    return LockedTensorDictError(
        f"Cannot {action} locked TensorDict. Unlock it first with `td.unlock_()` "
        "(or `with td.unlock_(): ...`); in-place writes (`set_`, `update_`) are allowed."
    )
