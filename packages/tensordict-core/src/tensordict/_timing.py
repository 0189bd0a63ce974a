"""``timeit``: named timers shared by the whole process, as decorators or ``with`` blocks.

Example:
    >>> from tensordict.utils import timeit
    >>> with timeit("load"):
    ...     _ = sum(range(1000))
    >>> mean, total, count = timeit._REG["load"]
    >>> count
    1
    >>> timeit.erase()
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from tensordict._helpers import logger


class timeit:  # noqa: N801  (upstream's name)
    """Time a function or a block of code under ``name``; times add up per name.

    Each name keeps ``[mean, total, count]`` (seconds) in the class-level ``timeit._REG``.
    :meth:`print` logs them with the tensordict logger and :meth:`erase` zeroes them.

    Args:
        name: the name the time is recorded under.

    >>> @timeit("step")
    ... def step():
    ...     return 1
    >>> _ = step(); _ = step()
    >>> with timeit("block"):
    ...     _ = step()
    >>> timeit._REG["step"][2], timeit._REG["block"][2]
    (3, 1)
    >>> timeit.print()  # logs "block took ... msec (total = ... sec)", then step
    >>> timeit.erase()
    """

    _REG: ClassVar[dict[str, list[Any]]] = {}
    _LOCK: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, name: str) -> None:
        self.name = name
        self._starts: list[float] = []

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return timed

    def __enter__(self) -> None:
        self._starts.append(time.perf_counter())

    def __exit__(self, *exc_info: Any) -> None:
        elapsed = time.perf_counter() - self._starts.pop()
        with self._LOCK:
            _, total, count = self._REG.get(self.name, (0.0, 0.0, 0))
            total, count = total + elapsed, count + 1
            self._REG[self.name] = [total / count, total, count]

    @staticmethod
    def print(prefix: str | None = None) -> None:  # noqa: A003
        """Log, name by name, the mean and total time (after ``prefix`` if given).

        >>> timeit._REG["demo"] = [0.002, 0.004, 2]
        >>> timeit.print()  # logs "demo took  2.0 msec (total = 0.004 sec)"
        >>> timeit.erase()
        """
        lead = f"{prefix} -- " if prefix else ""
        for name, (mean, total, _) in sorted(timeit._REG.items()):
            logger.info(f"{lead}{name} took {mean * 1000:4.4} msec (total = {total} sec)")

    @staticmethod
    def erase() -> None:
        """Reset every recorded time and count to zero (the names stay).

        >>> timeit._REG["demo"] = [0.002, 0.004, 2]
        >>> timeit.erase()
        >>> timeit._REG["demo"]
        [0.0, 0.0, 0]
        """
        with timeit._LOCK:
            for name in timeit._REG:
                timeit._REG[name] = [0.0, 0.0, 0]
