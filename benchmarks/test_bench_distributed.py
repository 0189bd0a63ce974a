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

sys.path.insert(0, str(Path(__file__).parent.parent / "integration_tests"))

GROUPS, LEAVES_PER_GROUP, BATCH, WIDTH = 10, 10, 16, 10_000  # 100 leaves of 640 kB
SEND, ISEND, HAND, FLAT, TINY, TINY_HAND, STOP = range(7)


def payload() -> TensorDict:
    return TensorDict({
        f"group{g}": {f"leaf{i}": torch.full((BATCH, WIDTH), float(g * 10 + i))
                      for i in range(LEAVES_PER_GROUP)}
        for g in range(GROUPS)
    }, batch_size=[BATCH])


def tiny() -> TensorDict:
    return TensorDict(x=torch.ones(1))


def _serve(store: str) -> None:
    """Rank 0: send what rank 1 asks for, until told to stop."""
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    td, small = payload(), tiny()
    leaves = [td.get(k) for k in sorted(td.keys(True, True))]
    flat = torch.zeros(GROUPS * LEAVES_PER_GROUP * BATCH * WIDTH)
    command = torch.zeros(1, dtype=torch.int64)
    while True:
        dist.recv(command, 1)
        what = int(command)
        if what == STOP:
            break
        if what == SEND:
            td.send(1)
        elif what == ISEND:
            td.isend(1)
        elif what == HAND:
            for leaf in leaves:
                dist.send(leaf, 1)
        elif what == FLAT:
            dist.send(flat, 1)
        elif what == TINY:
            small.send(1)
        elif what == TINY_HAND:
            dist.send(small["x"], 1)
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def peer():
    folder = tempfile.mkdtemp()
    store = f"{folder}/store"
    proc = mp.get_context("spawn").Process(target=_serve, args=(store,), daemon=True)
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
