"""Functions that map's workers run in test_map_failures.py: a module importable by its
plain name, so spawned workers find it (pytest imports test files with importlib)."""

from __future__ import annotations

import faulthandler
import os
import signal
import time

import torch

from tensordict import TensorDict


def record(folder: str, name: str) -> None:
    with open(os.path.join(folder, name), "a") as f:
        f.write(f"{os.getpid()} {time.time()}\n")


def fail_on_last(folder: str, how: str, td: TensorDict) -> TensorDict:
    """Double the chunk; on element 5 fail as ``how`` says ("exit", "segv", "hang"),
    after waiting until elements 0-4 are in the memmap ``folder/out`` if there is one."""
    record(folder, "seen")
    if not (td["a"] == 5).any():
        return td * 2
    if os.path.exists(os.path.join(folder, "out")):
        out, deadline = TensorDict.load_memmap(os.path.join(folder, "out")), time.time() + 20
        while not torch.equal(out["a"][:5], torch.arange(5.0) * 2) and time.time() < deadline:
            time.sleep(0.01)
    record(folder, "failing")
    if how == "exit":
        os._exit(3)
    if how == "segv":
        faulthandler.disable()  # no dump of the crash on the test's stderr
        os.kill(os.getpid(), signal.SIGSEGV)
    if how == "hang":
        time.sleep(60)
    return td * 2


def sleep_forever(folder: str, td: TensorDict) -> None:
    record(folder, "seen")
    time.sleep(60)
