"""Data collection: a single-process Collector and a MultiSyncCollector with worker processes."""

from __future__ import annotations

import copy
import functools

import torch
from torch import nn
from torchrl.collectors import Collector, MultiSyncCollector
from torchrl.envs import GymEnv, StepCounter, TransformedEnv

from tensordict.nn import TensorDictModule


def _pendulum_policy() -> TensorDictModule:
    """A deterministic policy: observation -> action in [-1, 1]."""
    return TensorDictModule(
        nn.Sequential(nn.Linear(3, 1), nn.Tanh()), in_keys=["observation"], out_keys=["action"]
    )


def _assert_actions_from_policy(batch, policy: TensorDictModule) -> None:
    with torch.no_grad():
        expected = policy.module(batch["observation"])
    torch.testing.assert_close(batch["action"], expected)


def test_collector_batches_follow_the_trajectory():
    env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter())
    env.set_seed(0)
    policy = _pendulum_policy()
    collector = Collector(env, policy, frames_per_batch=32, total_frames=128)
    try:
        batches = [batch.clone() for batch in collector]
    finally:
        collector.shutdown()
    assert len(batches) == 4
    for batch in batches:
        assert batch.batch_size == (32,)
        assert batch["next", "reward"].shape == (32, 1)
        assert (batch["collector", "traj_ids"] == 0).all()  # Pendulum truncates at 200 steps
        _assert_actions_from_policy(batch, policy)
    data = torch.cat(batches, 0)
    assert data.batch_size == (128,)
    torch.testing.assert_close(data["step_count"].squeeze(-1), torch.arange(128))
    # consecutive frames, also across batch boundaries
    torch.testing.assert_close(data["next", "observation"][:-1], data["observation"][1:])


def test_collector_split_trajs_pads_episodes():
    env = GymEnv("CartPole-v1")
    env.set_seed(0)
    collector = Collector(env, None, frames_per_batch=100, total_frames=100, split_trajs=True)
    try:
        (batch,) = list(collector)
    finally:
        collector.shutdown()
    mask = batch["collector", "mask"]
    assert batch.ndim == 2 and mask.shape == batch.batch_size
    assert mask.sum() == 100
    assert batch.shape[0] >= 2  # random CartPole episodes last ~20 steps
    done = batch["next", "done"].squeeze(-1)
    assert not done[~mask].any()  # padding is zeros
    lengths = mask.sum(-1)
    # every trajectory but the last, unfinished one, ends with done at its last valid step
    for row, length in enumerate(lengths[:-1].tolist()):
        assert done[row, length - 1] and done[row].sum() == 1
    traj_ids = batch["collector", "traj_ids"]
    assert (traj_ids[mask].reshape(-1).unique() == traj_ids[:, 0].unique()).all()


def test_multi_sync_collector_with_weight_update():
    policy = _pendulum_policy()
    initial_policy = copy.deepcopy(policy)
    make_env = functools.partial(GymEnv, "Pendulum-v1")
    collector = MultiSyncCollector(
        [make_env, make_env], policy, frames_per_batch=32, total_frames=128
    )
    try:
        collector.set_seed(0)
        batches = []
        for i, batch in enumerate(collector):
            batches.append(batch.clone())
            if i == 1:
                with torch.no_grad():
                    for param in policy.parameters():
                        param.zero_()
                collector.update_policy_weights_()
    finally:
        collector.shutdown()
    assert len(batches) == 4
    for batch in batches:
        assert batch.numel() == 32
        assert batch.batch_size == (2, 16)  # one row per worker
        traj_ids = batch["collector", "traj_ids"]
        assert traj_ids[0].unique().numel() == 1 and traj_ids[1].unique().numel() == 1
        assert traj_ids[0, 0] != traj_ids[1, 0]
        torch.testing.assert_close(
            batch["next", "observation"][:, :-1], batch["observation"][:, 1:]
        )
    # the workers ran the policy's weights, then the zeroed weights they received
    for batch in batches[:2]:
        assert batch["action"].abs().sum() > 0
    for batch in batches[2:]:
        assert (batch["action"] == 0).all()
    for batch in batches[:2]:
        _assert_actions_from_policy(batch, initial_policy)
