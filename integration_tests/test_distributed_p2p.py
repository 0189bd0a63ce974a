"""Two and three real processes exchanging TensorDicts over a gloo group."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

import distributed_scenarios as scenarios  # noqa: E402
from distributed_harness import run_ranks  # noqa: E402


@pytest.fixture(autouse=True)
def no_leftover_processes():
    yield
    assert multiprocessing.active_children() == []


def test_distributed_seed_example_runs_between_two_processes():
    assert run_ranks(scenarios.seed_example, 2) == ["ok", "ok"]


def test_distributed_point_to_point_every_method():
    results = run_ranks(scenarios.point_to_point, 2)
    # recv (from tag 0) and isend (from tag 3) return the next free tag: header,
    # signature, 4 tensor leaves and the non-tensor message
    assert results[1][0] == 7 and results[0][0] == 10


def test_distributed_collectives_on_three_ranks():
    assert run_ranks(scenarios.collectives, 3) == ["ok"] * 3


def test_distributed_structure_mismatch_raises_on_the_receiver():
    sender, receiver = run_ranks(scenarios.mismatch, 2)
    assert sender == "sent"
    assert "key 'a': receiver float32[2, 4], sender float32[2, 3]" in receiver
    assert "key 'extra' only on the receiver" in receiver


def test_distributed_collective_mismatch_raises_on_every_rank():
    messages = run_ranks(scenarios.collective_mismatch, 3)
    assert all("ranks [1]" in m for m in messages)


def test_distributed_dead_peer_fails_fast_with_clear_message():
    elapsed, message = run_ranks(scenarios.dead_peer, 2, allow_missing={1})[0]
    assert elapsed < 10
    assert "with rank 1 failed" in message and "exited" in message


def test_distributed_silent_peer_fails_after_group_timeout():
    elapsed, message = run_ranks(scenarios.silent_peer, 2, pg_timeout=2.0)[0]
    assert 1.5 < elapsed < 10
    assert "with rank 1 failed" in message


def test_distributed_memmapped_tensordict_over_shared_scratch(tmp_path):
    pytest.importorskip("tensordict.memmap")
    folder = str(tmp_path / "scratch")
    sender, receiver = run_ranks(scenarios.shared_scratch, 2, folder)
    assert "rank 1 holds a TensorDict of another structure" in sender
    assert "non-tensor key 'text' only on the sender" in receiver
