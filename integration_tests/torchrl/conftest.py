"""Shared setup of the TorchRL scenarios: a fixed seed, one torch thread, no leftover workers."""

import multiprocessing
from collections.abc import Iterator

import pytest
import torch


@pytest.fixture(autouse=True)
def _seed_and_single_thread() -> Iterator[None]:
    """Seeds torch so sampled data and initial weights are reproducible, and runs torch on one
    thread: the networks are tiny, and intra-op threads only contend on a busy CI machine."""
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _no_leftover_workers() -> Iterator[None]:
    """A test that started worker processes (ParallelEnv, MultiSyncCollector) has stopped them
    all when it ends; any left running are terminated, and the test errors."""
    yield
    leftover = multiprocessing.active_children()
    for process in leftover:
        process.terminate()
        process.join(timeout=10)
    assert not leftover, f"worker processes left running: {leftover}"
