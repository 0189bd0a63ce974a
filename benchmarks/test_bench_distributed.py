"""TensorDict transfers between two real processes beside hand-written torch.distributed.

The pytest process is rank 1 of a gloo group on 127.0.0.1; a spawned process is rank 0
and serves transfers on request: each timed call sends a one-word command, then receives
the data. Groups:

* ``p2p-64MB-100-leaves``: ``td.recv`` / ``td.irecv`` of a nested TensorDict with 100
  leaves (64 MB), beside receiving the same tensors one by one with
  ``torch.distributed.recv`` (the hand-written baseline) and beside one flat 64 MB tensor.
* ``p2p-handshake``: a one-leaf TensorDict beside one ``torch.distributed.recv`` of the
  same tensor: the fixed cost per call (structure fingerprint and the handshake).
"""

from __future__ import annotations

import datetime
import sys
import tempfile
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))  # spawned peers inherit sys.path

from bench_peer import (  # noqa: E402  (found through the path above, also by the peer)
    BATCH,
    FLAT,
    GROUPS,
    HAND,
    ISEND,
    LEAVES_PER_GROUP,
    SEND,
    STOP,
    TINY,
    TINY_HAND,
    WIDTH,
    payload,
    serve,
)


@pytest.fixture(scope="module")
def peer():
    folder = tempfile.mkdtemp()
    store = f"{folder}/store"
    proc = mp.get_context("spawn").Process(target=serve, args=(store,), daemon=True)
    proc.start()
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=1, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    try:
        yield
        dist.send(torch.tensor([STOP]), 0)
    finally:
        dist.destroy_process_group()
        proc.join(timeout=10)
        if proc.is_alive():
            proc.kill()


def ask(what: int) -> None:
    dist.send(torch.tensor([what]), 0)


@pytest.mark.benchmark(group="p2p-64MB-100-leaves")
def test_recv_tensordict(benchmark, peer):
    td = payload().zero_()

    def run():
        ask(SEND)
        td.recv(0)

    benchmark.pedantic(run, rounds=8, warmup_rounds=1)
    assert torch.equal(td["group3", "leaf7"], torch.full((BATCH, WIDTH), 37.0))


@pytest.mark.benchmark(group="p2p-64MB-100-leaves")
def test_irecv_tensordict(benchmark, peer):
    td = payload().zero_()

    def run():
        ask(ISEND)
        td.irecv(0)

    benchmark.pedantic(run, rounds=8, warmup_rounds=1)
    assert torch.equal(td["group9", "leaf9"], torch.full((BATCH, WIDTH), 99.0))


@pytest.mark.benchmark(group="p2p-64MB-100-leaves")
def test_recv_leaf_by_leaf_baseline(benchmark, peer):
    td = payload().zero_()
    leaves = [td.get(k) for k in sorted(td.keys(True, True))]

    def run():
        ask(HAND)
        for leaf in leaves:
            dist.recv(leaf, 0)

    benchmark.pedantic(run, rounds=8, warmup_rounds=1)
    assert torch.equal(td["group3", "leaf7"], torch.full((BATCH, WIDTH), 37.0))


@pytest.mark.benchmark(group="p2p-64MB-100-leaves")
def test_recv_one_flat_tensor_baseline(benchmark, peer):
    flat = torch.ones(GROUPS * LEAVES_PER_GROUP * BATCH * WIDTH)

    def run():
        ask(FLAT)
        dist.recv(flat, 0)

    benchmark.pedantic(run, rounds=8, warmup_rounds=1)
    assert flat.sum() == 0


@pytest.mark.benchmark(group="p2p-handshake")
def test_recv_tiny_tensordict(benchmark, peer):
    td = TensorDict(x=torch.zeros(1))

    def run():
        ask(TINY)
        td.recv(0)

    benchmark.pedantic(run, rounds=200, warmup_rounds=5)
    assert td["x"].item() == 1.0


@pytest.mark.benchmark(group="p2p-handshake")
def test_recv_tiny_tensor_baseline(benchmark, peer):
    x = torch.zeros(1)

    def run():
        ask(TINY_HAND)
        dist.recv(x, 0)

    benchmark.pedantic(run, rounds=200, warmup_rounds=5)
    assert x.item() == 1.0
