"""What each rank does in the ``test_distributed_*`` integration tests.

Every function runs on one rank of a gloo group (see ``distributed_harness``), checks
the values it received against the same TensorDict built locally, leaf by leaf, and
returns what the parent test asserts on.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
import torch
import torch.distributed as dist

from tensordict import TensorDict
from tensordict.distributed import PeerError, StructureMismatchError


def make(v: int) -> TensorDict:
    """A nested TensorDict whose every value depends on ``v``."""
    return TensorDict({
        "a": torch.arange(6.0).view(2, 3) + v,
        "nested": {
            "b": torch.full((2, 4), v, dtype=torch.int64),
            "deeper": {"c": torch.tensor([v % 2 == 0, v % 2 == 1])},
        },
        "half": torch.full((2, 5), v / 4, dtype=torch.float16),
        "text": f"from {v}",
    }, batch_size=[2])


def big(v: int) -> TensorDict:
    """Too large for the first message: every leaf travels as its own message."""
    td = make(v)
    td["nested", "large"] = torch.arange(20_000.0).view(2, 10_000) * (v + 1)
    return td


def many(v: int) -> TensorDict:
    """So many keys that even the structure signature travels on its own."""
    return TensorDict({f"group_{g}": {f"leaf_number_{i}": torch.full((1,), float(v + i))
                                      for i in range(15)} for g in range(12)},
                      batch_size=[1])


def numeric(v: int) -> TensorDict:
    """``make(v)`` without the bool and text leaves (what a sum reduces)."""
    td = make(v)
    del td["text"]
    del td["nested", "deeper"]
    return td


def assert_same(td: Any, expected: TensorDict) -> None:
    """Every leaf of ``expected`` is in ``td`` with the same value, dtype and shape."""
    assert td.batch_size == expected.batch_size, (td.batch_size, expected.batch_size)
    for key in expected.keys(include_nested=True, leaves_only=True):
        want, got = expected.get(key), td.get(key)
        if isinstance(want, torch.Tensor):
            assert got.dtype == want.dtype and torch.equal(got, want), (key, got, want)
        else:
            assert got.tolist() == want.tolist(), (key, got, want)
    assert set(td.keys(True, True)) == set(expected.keys(True, True))


def seed_example(rank: int, world_size: int) -> str:
    """The seeds' README example, as written, then with rank-specific data."""
    data = TensorDict({"a": torch.zeros(()), ("b", "c"): torch.ones(())}, [])
    if rank == 1:
        data.isend(dst=0)
    else:
        data.irecv(src=1)
    data = TensorDict({"a": torch.full((), float(rank)), ("b", "c"): torch.ones(()) * rank}, [])
    if rank == 1:
        data.isend(dst=0)
    else:
        data.irecv(src=1)
        assert data["a"].item() == 1.0 and data["b", "c"].item() == 1.0
    return "ok"


def point_to_point(rank: int, world_size: int) -> list[Any]:
    """send/recv, isend/irecv (both waiting and early), pseudo-random tags, staged
    (non-contiguous) targets, init_remote/from_remote_init."""
    seen = []
    if rank == 0:
        make(0).send(1)
        seen.append(make(1).isend(1, init_tag=3))
        works = make(2).isend(dst=1, return_early=True, pseudo_rand=True, init_tag=11)
        for work in works:
            work.wait()
        make(3).send(1, init_tag=5)
        make(4).init_remote(dst=1)
        make(5).send(1)
        big(6).send(1)
        for work in big(7).isend(1, return_early=True):
            work.wait()
        big(8).send(1)
        many(9).send(1)
    else:
        td = make(-1)
        seen.append(td.recv(0))
        assert_same(td, make(0))
        assert td.irecv(src=0, init_tag=3) is None
        assert_same(td, make(1))
        pending = td.irecv(src=0, return_premature=True, pseudo_rand=True, init_tag=11)
        for item in pending:
            item.wait()
        assert_same(td, make(2))
        # a target whose leaf is a transposed view: data goes through a staging buffer
        base = torch.zeros(3, 2)
        target = make(-1)
        target["a"] = base.T
        target.recv(0, init_tag=5)
        assert torch.equal(base.T, make(3)["a"]) and target["a"].data_ptr() == base.data_ptr()
        remote = TensorDict.from_remote_init(src=0)
        assert_same(remote, make(4))
        remote.recv(0)
        assert_same(remote, make(5))
        large = big(-1)
        large.recv(0)
        assert_same(large, big(6))
        pending = large.irecv(0, return_premature=True)
        pending[-1].wait()  # the last one waits for all the others
        assert_same(large, big(7))
        base = torch.zeros(10_000, 2)
        large["nested", "large"] = base.T
        large.recv(0)
        assert torch.equal(base.T, big(8)["nested", "large"])
        keys = many(-1)
        keys.recv(0)
        assert_same(keys, many(9))
    return seen


def collectives(rank: int, world_size: int) -> str:
    """Every collective on 3 ranks, checked against the same op done leaf by leaf."""
    # broadcast: rank 1's TensorDict reaches ranks that start with an empty one
    got = (make(1) if rank == 1 else TensorDict()).broadcast(1)
    assert_same(got, make(1))
    # all_reduce, leaf by leaf and bucketed (async)
    td = numeric(rank)
    assert td.all_reduce() is None
    total = numeric(0).apply(lambda *xs: sum(xs), *[numeric(r) for r in range(1, world_size)])
    assert_same(td, total)
    td = numeric(rank)
    for item in td.all_reduce(op=dist.ReduceOp.MAX, async_op=True, bucket_bytes=64):
        item.wait()
    assert_same(td, numeric(world_size - 1))
    td = numeric(rank)
    td.reduce(0)
    if rank == 0:
        assert_same(td, total)
    # all_gather and gather_and_stack keep non-tensor data, per rank
    gathered = make(rank).all_gather()
    for r, part in enumerate(gathered):
        assert_same(part, make(r))
    stacked = make(rank).gather_and_stack(dst=2)
    if rank == 2:
        assert stacked.batch_size == (world_size, 2)
        for r in range(world_size):
            assert_same(stacked[r], make(r))
    else:
        assert stacked is None
    parts = [make(10 + r) for r in range(world_size)] if rank == 0 else None
    assert_same(TensorDict().scatter(0, parts), make(10 + rank))
    # a sub-group: only ranks 0 and 2 take part
    pair = dist.new_group([0, 2])
    if rank != 1:
        td = numeric(rank)
        td.all_reduce(group=pair)
        assert_same(td, numeric(0).apply(lambda x, y: x + y, numeric(2)))
        assert_same(make(rank).broadcast(2, group=pair), make(2))
    return "ok"


def mismatch(rank: int, world_size: int) -> str:
    """Different structures: the receiver raises and writes nothing, and the pair stays
    in step for the next transfer."""
    if rank == 0:
        make(0).send(1)
        big(0).send(1)
        many(0).send(1)
        make(7).send(1)
        return "sent"
    wrong = make(-1)
    wrong["a"] = torch.zeros(2, 4)
    wrong["extra"] = torch.zeros(2)
    before = wrong.clone()
    try:
        wrong.recv(0)
    except StructureMismatchError as err:
        message = str(err)
    else:
        raise AssertionError("recv of a mismatched TensorDict did not raise")
    assert_same(wrong, before)
    with pytest.raises(StructureMismatchError, match="key 'a': receiver float32"):
        wrong.recv(0)  # the sender's data (one message per leaf) is drained
    fewer = many(-1)
    del fewer["group_3"]
    with pytest.raises(StructureMismatchError, match="key \\('group_3', 'leaf_number_0'\\) only"):
        fewer.recv(0)
    right = make(-1)
    right.recv(0)
    assert_same(right, make(7))
    return message


def collective_mismatch(rank: int, world_size: int) -> str:
    td = numeric(rank)
    if rank == 1:
        td["a"] = torch.zeros(2, 7)
    try:
        td.all_reduce()
    except StructureMismatchError as err:
        return str(err)
    raise AssertionError("all_reduce over mismatched TensorDicts did not raise")


def dead_peer(rank: int, world_size: int) -> tuple[float, str] | None:
    """Rank 1 exits without sending; rank 0's recv must fail fast with a clear error."""
    if rank == 1:
        time.sleep(0.5)
        os._exit(0)
    start = time.monotonic()
    try:
        make(-1).recv(1)
    except PeerError as err:
        return time.monotonic() - start, str(err)
    raise AssertionError("recv from a dead rank did not raise")


def silent_peer(rank: int, world_size: int) -> tuple[float, str] | None:
    """Rank 1 stays alive but never sends: rank 0 fails after the group's timeout."""
    if rank == 1:
        time.sleep(5)
        return None
    start = time.monotonic()
    try:
        make(-1).recv(1)
    except PeerError as err:
        return time.monotonic() - start, str(err)
    raise AssertionError("recv from a silent rank did not raise")


def shared_scratch(rank: int, world_size: int, folder: str) -> str:
    """A memory-mapped TensorDict on a folder both ranks see: the receiver maps the same
    files (no tensor data sent), or receives a copy when it asks for one."""
    if rank == 0:
        mm = make(0).memmap(folder)
        mm.init_remote(dst=1)
        mm.init_remote(dst=1)
        dist.barrier()
        mm["a"].add_(100)  # written through to the file
        mm["nested", "b"].fill_(-3)
        mm.send(1)
        try:  # a memory-mapped sender waits for the receiver's answer: it raises too
            mm.send(1)
        except StructureMismatchError as err:
            return str(err)
        raise AssertionError("send to a mismatched receiver did not raise")
    mapped = TensorDict.from_remote_init(src=0)
    copied = TensorDict.from_remote_init(src=0, map_files=False)
    assert_same(mapped, make(0))
    assert_same(copied, make(0))
    assert os.path.samefile(mapped["a"].filename, os.path.join(folder, "a.memmap"))
    assert getattr(copied["a"], "filename", None) is None
    dist.barrier()
    mapped.recv(0)
    assert torch.equal(mapped["a"], make(0)["a"] + 100)
    assert (mapped["nested", "b"] == -3).all()
    assert_same(copied, make(0))
    try:
        numeric(0).recv(0)
    except StructureMismatchError as err:
        return str(err)
    raise AssertionError("recv of a mismatched TensorDict did not raise")
