"""Gymnasium environments through TorchRL: transforms, spec checks, rollouts, batched envs."""

from __future__ import annotations

import functools

import pytest
import torch
from torchrl.envs import (
    Compose,
    DoubleToFloat,
    GymEnv,
    ObservationNorm,
    ParallelEnv,
    RewardSum,
    SerialEnv,
    StepCounter,
    TransformedEnv,
    check_env_specs,
)

from tensordict import TensorDict


def _transformed(name: str, seed: int = 0) -> TransformedEnv:
    """``name`` with counters, an episode return and an observation normalized from data."""
    env = TransformedEnv(
        GymEnv(name),
        Compose(
            DoubleToFloat(),
            StepCounter(),
            RewardSum(),
            ObservationNorm(in_keys=["observation"], standard_normal=True),
        ),
    )
    env.set_seed(seed)
    env.transform[-1].init_stats(num_iter=100, reduce_dim=0, cat_dim=0)
    env.set_seed(seed)
    return env


@pytest.mark.parametrize("name", ["CartPole-v1", "Pendulum-v1"])
def test_transformed_env_specs_and_rollout(name):
    env = _transformed(name)
    try:
        check_env_specs(env)
        rollout = env.rollout(60, break_when_any_done=False)
    finally:
        env.close()
    obs_dim = env.observation_spec["observation"].shape[-1]
    assert isinstance(rollout, TensorDict)
    assert rollout.batch_size == (60,)
    assert rollout["observation"].shape == (60, obs_dim)
    assert rollout["observation"].dtype == torch.float32
    assert rollout["next", "reward"].shape == (60, 1)
    assert rollout["step_count"].dtype == torch.int64
    state = {"done", "terminated", "truncated", "step_count", "episode_reward", "observation"}
    assert set(rollout.keys()) == state | {"action", "next"}
    assert set(rollout["next"].keys()) == state | {"reward"}

    # one step's "next" is the following step's root, until an episode ends (auto-reset)
    done = rollout["next", "done"].squeeze(-1)
    same = ~done[:-1]
    torch.testing.assert_close(
        rollout["next", "observation"][:-1][same], rollout["observation"][1:][same]
    )

    # StepCounter counts steps within an episode; RewardSum accumulates its rewards
    steps = rollout["step_count"].squeeze(-1)
    assert steps[0] == 0
    torch.testing.assert_close(rollout["next", "step_count"].squeeze(-1), steps + 1)
    assert (steps[1:][same] == steps[:-1][same] + 1).all()
    assert (steps[1:][done[:-1]] == 0).all()
    episode_start = rollout["episode_reward"].squeeze(-1)[steps == 0]
    assert (episode_start == 0).all()
    torch.testing.assert_close(
        rollout["next", "episode_reward"],
        rollout["episode_reward"] + rollout["next", "reward"],
    )


def test_observation_norm_uses_collected_stats():
    env = _transformed("Pendulum-v1", seed=3)
    norm = env.transform[-1]
    assert norm.loc.shape == norm.scale.shape == (3,)
    assert (norm.scale > 0).all()
    raw = GymEnv("Pendulum-v1")
    raw.set_seed(3)
    try:
        raw_obs = raw.reset()["observation"].float()
        obs = env.reset()["observation"]
    finally:
        env.close()
        raw.close()
    torch.testing.assert_close(obs, (raw_obs - norm.loc) / norm.scale)


@pytest.mark.parametrize("batched_cls", [SerialEnv, ParallelEnv])
def test_batched_envs_rollout(batched_cls):
    env = TransformedEnv(
        batched_cls(2, functools.partial(GymEnv, "CartPole-v1")),
        Compose(StepCounter(), RewardSum()),
    )
    try:
        env.set_seed(1)
        check_env_specs(env)
        rollout = env.rollout(20, break_when_any_done=False)
    finally:
        env.close()
    assert env.batch_size == (2,)
    assert rollout.batch_size == (2, 20)
    assert rollout["observation"].shape == (2, 20, 4)
    assert rollout["next", "reward"].shape == (2, 20, 1)
    assert (rollout["next", "reward"] == 1).all()  # CartPole pays 1 per step
    # the two workers are seeded differently, so their trajectories differ
    assert not torch.equal(rollout["observation"][0], rollout["observation"][1])
    assert rollout["observation"].abs().sum() > 0
    done = rollout["next", "done"].squeeze(-1)
    torch.testing.assert_close(
        rollout["next", "observation"][:, :-1][~done[:, :-1]],
        rollout["observation"][:, 1:][~done[:, :-1]],
    )
    assert (rollout["next", "step_count"][..., 0] >= 1).all()
