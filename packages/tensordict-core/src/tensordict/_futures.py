"""``TensorDictFuture``: a TensorDict that background work is still writing.

Example:
    >>> import torch
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> from tensordict import TensorDict
    >>> from tensordict.utils import TensorDictFuture
    >>> td = TensorDict(a=torch.zeros(3))
    >>> with ThreadPoolExecutor(1) as pool:
    ...     future = TensorDictFuture([pool.submit(td["a"].fill_, 1.0)], td)
    ...     future.result()["a"]
    tensor([1., 1., 1.])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TensorDictFuture:
    """The pending result of writes running in the background.

    Args:
        futures: the writes to wait for (:class:`concurrent.futures.Future`, or any
            object with a ``result()`` or ``wait()`` method).
        resulting_td: the TensorDict :meth:`result` returns once they are done; when
            None, :meth:`result` returns what the last future returns (work that builds
            its TensorDict at the end, such as an asynchronous ``memmap``).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2))
    >>> TensorDictFuture([], td).result() is td
    True
    """

    def __init__(self, futures: Sequence[Any], resulting_td: Any) -> None:
        self.futures = futures
        self.resulting_td = resulting_td

    def done(self) -> bool:
        """Whether every write has finished."""
        return all(future.done() for future in self.futures)

    def result(self, timeout: float | None = None) -> Any:
        """Wait for every write, re-raise the first failure, and return the TensorDict.

        >>> from concurrent.futures import Future
        >>> failed = Future()
        >>> failed.set_exception(ValueError("disk full"))
        >>> TensorDictFuture([failed], None).result()
        Traceback (most recent call last):
        ...
        ValueError: disk full
        """
        value = None
        for future in self.futures:
            if hasattr(future, "result"):
                value = future.result(timeout)
            else:
                future.wait()
        return value if self.resulting_td is None else self.resulting_td
