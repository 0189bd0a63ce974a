"""In-place ops of a lazy stack whose parts read copies (storage-backed collections,
index views of them: :class:`~tensordict.storage.WriteBackMixin` classes).

A lazy stack runs an in-place op (``add_``, ``zero_``, ``+=``...) on the leaves it reads
from its parts; where a part's reads are copies, those writes would land nowhere. Such a
stack instead runs the op on its data read into memory, then writes the result back
through ``update_`` (every part checked before the first write).

Example (a toy store keeping copies, so every read is a copy):
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> from tensordict.storage import WriteBackMixin
    >>> class Copies(WriteBackMixin, TensorDict):
    ...     def to_tensordict(self, **kwargs):
    ...         return TensorDict({k: v.clone() for k, v in self.items()}, self.batch_size)
    >>> stores = [Copies(a=torch.zeros(2), batch_size=[2]) for _ in range(2)]
    >>> _ = lazy_stack(stores).add_(1)
    >>> stores[1]["a"]
    tensor([1., 1.])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensordict._write_back import IN_PLACE_OPS, WriteBackMixin


class LazyWriteBackMixin:
    """The in-place ops of :data:`~tensordict.storage.IN_PLACE_OPS`, for lazy stacks:
    through a copy when a part (at any depth) reads copies, directly otherwise."""

    __slots__ = ()

    def _parts_read_copies(self) -> bool:
        """Whether a part, or a part of a lazy stack among them, reads copies."""
        return any(isinstance(td, WriteBackMixin) or
                   (isinstance(td, LazyWriteBackMixin) and td._parts_read_copies())
                   for td in self.tensordicts)


def _through_copies(name: str) -> Callable[..., Any]:
    def op(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not self._parts_read_copies():
            return getattr(super(LazyWriteBackMixin, self), name)(*args, **kwargs)
        local = type(self)._from_entries([td.to_tensordict() for td in self.tensordicts],
                                         self._stack_dim, self._stack_dim_name)
        getattr(local, name)(*args, **kwargs)
        return self.update_(local)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"``{name}`` of every leaf; where a part reads copies, of the data read "
                  "into memory, written back through ``update_``.")
    return op


for _name in IN_PLACE_OPS:
    setattr(LazyWriteBackMixin, _name, _through_copies(_name))
del _name
