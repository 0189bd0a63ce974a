"""Replay buffers over tensor and memory-mapped storages: writes, samples, checkpoints, samplers."""

from __future__ import annotations

import pytest
import torch
from torchrl.data import (
    LazyMemmapStorage,
    LazyTensorStorage,
    PrioritizedSampler,
    ReplayBuffer,
    SliceSampler,
    TensorDictReplayBuffer,
)
from torchrl.envs import GymEnv, StepCounter, TransformedEnv

from tensordict import TensorDict
from tensordict.memmap import MemoryMappedTensor


def _segment_trees_available() -> bool:
    try:
        import torchrl._torchrl  # noqa: F401
    except ImportError:
        return False
    return True


def _data(n: int) -> TensorDict:
    """``n`` transitions whose values tie together: b.c == a * 2, d is a's float."""
    a = torch.arange(n)
    return TensorDict(
        a=a,
        d=a.float(),
        b=TensorDict(c=torch.stack([a, 2 * a], -1), batch_size=[n]),
        batch_size=[n],
    )


def _storages(tmp_path):
    return {
        "tensor": LazyTensorStorage(16),
        "memmap": LazyMemmapStorage(16, scratch_dir=tmp_path / "scratch"),
    }


def _assert_consistent(sample: TensorDict) -> None:
    torch.testing.assert_close(sample["d"], sample["a"].float())
    torch.testing.assert_close(sample["b", "c"], torch.stack([sample["a"], 2 * sample["a"]], -1))


@pytest.mark.parametrize("storage_kind", ["tensor", "memmap"])
@pytest.mark.parametrize("buffer_cls", [ReplayBuffer, TensorDictReplayBuffer])
def test_extend_sample_and_overwrite(tmp_path, storage_kind, buffer_cls):
    rb = buffer_cls(storage=_storages(tmp_path)[storage_kind], batch_size=8)
    rb.extend(_data(10))
    assert len(rb) == 10
    sample = rb.sample()
    assert sample.batch_size == (8,)
    _assert_consistent(sample)
    assert (sample["a"] < 10).all()
    if buffer_cls is TensorDictReplayBuffer:
        torch.testing.assert_close(sample["index"], sample["a"])
    # a ring buffer: 30 writes into 16 slots keep the last 16 values
    rb.extend(_data(30)[10:])
    assert len(rb) == 16
    stored = rb.storage[:]
    assert sorted(stored["a"].tolist()) == list(range(14, 30))
    _assert_consistent(stored)
    if storage_kind == "memmap":
        # the storage is a memory-mapped TensorDict saved in the scratch dir
        on_disk = TensorDict.load_memmap(tmp_path / "scratch")
        assert on_disk.batch_size == (16,)
        assert isinstance(on_disk["a"], MemoryMappedTensor)
        assert (on_disk.exclude("index") == stored.exclude("index")).all()


@pytest.mark.parametrize("storage_kind", ["tensor", "memmap"])
def test_dumps_loads_round_trip(tmp_path, storage_kind):
    rb = TensorDictReplayBuffer(storage=_storages(tmp_path)[storage_kind], batch_size=4)
    rb.extend(_data(20))
    rb.dumps(tmp_path / "checkpoint")
    storage_cls = type(rb.storage)
    restored = TensorDictReplayBuffer(storage=storage_cls(16), batch_size=4)
    restored.loads(tmp_path / "checkpoint")
    assert len(restored) == len(rb) == 16
    original, loaded = rb.storage[:], restored.storage[:]
    assert set(loaded.keys(True, True)) == set(original.keys(True, True))
    assert (loaded == original).all()
    # the writer's cursor came back too: the next write replaces the same slot
    rb.extend(_data(21)[20:])
    restored.extend(_data(21)[20:])
    assert (restored.storage[:] == rb.storage[:]).all()
    _assert_consistent(restored.sample())


@pytest.mark.skipif(
    not _segment_trees_available(),
    reason="PrioritizedSampler's segment trees live in torchrl's compiled extension "
    "torchrl._torchrl, which does not load against this torch build",
)
def test_prioritized_sampler_follows_updated_priorities():
    sampler = PrioritizedSampler(max_capacity=16, alpha=1.0, beta=1.0)
    rb = TensorDictReplayBuffer(storage=LazyTensorStorage(16), sampler=sampler, batch_size=64)
    rb.extend(_data(16))
    priority = torch.full((16,), 1e-6)
    priority[3] = 1.0
    rb.update_priority(torch.arange(16), priority)
    sample = rb.sample()
    assert (sample["a"] == 3).float().mean() > 0.9
    assert "priority_weight" in sample.keys()
    priority[3], priority[11] = 1e-6, 1.0
    rb.update_priority(torch.arange(16), priority)
    assert (rb.sample()["a"] == 11).float().mean() > 0.9


def test_slice_sampler_by_trajectory_key():
    episodes = torch.arange(4).repeat_interleave(10)
    data = TensorDict(episode=episodes, step=torch.arange(10).repeat(4), batch_size=[40])
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(40),
        sampler=SliceSampler(slice_len=5, traj_key="episode"),
        batch_size=20,
    )
    rb.extend(data)
    for _ in range(5):
        sample = rb.sample().reshape(4, 5)
        assert (sample["episode"] == sample["episode"][:, :1]).all()
        torch.testing.assert_close(
            sample["step"] - sample["step"][:, :1], torch.arange(5).expand(4, 5)
        )


def test_slice_sampler_on_collected_episodes():
    env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
    env.set_seed(0)
    try:
        rollout = env.rollout(200, break_when_any_done=False)
    finally:
        env.close()
    assert rollout["next", "done"].sum() >= 3  # several episodes in the storage
    rb = TensorDictReplayBuffer(
        storage=LazyTensorStorage(200),
        sampler=SliceSampler(slice_len=4, end_key=("next", "done")),
        batch_size=32,
    )
    rb.extend(rollout)
    sample = rb.sample().reshape(8, 4)
    steps = sample["step_count"].squeeze(-1)
    torch.testing.assert_close(steps - steps[:, :1], torch.arange(4).expand(8, 4))
    torch.testing.assert_close(sample["next", "observation"][:, :-1], sample["observation"][:, 1:])
    assert not sample["next", "done"][:, :-1].any()  # a slice never crosses an episode end
