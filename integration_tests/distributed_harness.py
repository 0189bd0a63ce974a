"""Run a function on N real processes forming a gloo process group on this machine.

Used by the ``test_distributed_*`` integration tests and the distributed benchmark.
Every rank runs ``fn(rank, world_size, *args)`` in a freshly spawned process; the group
rendezvous goes through a file store in a temporary folder. The parent waits at most
``timeout`` seconds, kills any process still alive, and raises with every rank's
traceback, so a test can neither hang nor leave a process behind.
"""

from __future__ import annotations

import datetime
import os
import queue
import tempfile
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch.distributed as dist
import torch.multiprocessing as mp


class RanksFailed(AssertionError):
    """One or more ranks raised, died, or ran past the deadline."""


def _entry(fn: Callable[..., Any], rank: int, world_size: int, store: str, pg_timeout: float,
           results: Any, args: tuple[Any, ...]) -> None:
    try:
        dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=pg_timeout))
        try:
            results.put((rank, "ok", fn(rank, world_size, *args)))
        finally:
            dist.destroy_process_group()
    except BaseException:
        results.put((rank, "error", traceback.format_exc()))


def run_ranks(fn: Callable[..., Any], world_size: int, *args: Any, timeout: float = 60.0,
              pg_timeout: float = 20.0, allow_missing: set[int] = frozenset()) -> list[Any]:
    """``[fn(rank, world_size, *args) for rank in range(world_size)]``, each on its own
    process of one gloo group; raises :class:`RanksFailed` on any failure. Ranks in
    ``allow_missing`` may exit without a result (None in the list)."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory() as folder:
        store = os.path.join(folder, "store")
        procs = [ctx.Process(target=_entry, daemon=True,
                             args=(fn, rank, world_size, store, pg_timeout, results, args))
                 for rank in range(world_size)]
        for proc in procs:
            proc.start()
        deadline = time.monotonic() + timeout
        outcome: dict[int, tuple[str, Any]] = {}
        try:
            while len(outcome) < world_size and time.monotonic() < deadline:
                try:
                    rank, status, value = results.get(timeout=0.2)
                    outcome[rank] = (status, value)
                except queue.Empty:
                    if not any(p.is_alive() for p in procs):
                        break
        finally:
            for proc in procs:
                proc.join(timeout=max(0.0, min(5.0, deadline - time.monotonic())))
            for proc in procs:
                if proc.is_alive():
                    proc.kill()
                    proc.join(timeout=5)
            results.close()
    failures = [f"rank {r}: {v}" for r, (s, v) in sorted(outcome.items()) if s == "error"]
    missing = [r for r in range(world_size) if r not in outcome and r not in allow_missing]
    if missing:
        failures.append(f"ranks {missing} gave no result within {timeout} s "
                        f"(exit codes {[procs[r].exitcode for r in missing]})")
    if failures:
        raise RanksFailed("\n".join(failures))
    return [outcome[r][1] if r in outcome else None for r in range(world_size)]
