"""TorchRL's policy and value modules, built on tensordict.nn."""

from __future__ import annotations

import torch
from torch import nn
from torchrl.envs import ExplorationType, GymEnv, set_exploration_type
from torchrl.modules import (
    MLP,
    EGreedyModule,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)

from tensordict import TensorDict
from tensordict.nn import NormalParamExtractor, TensorDictModule, TensorDictSequential


def _pendulum_actor(action_spec) -> ProbabilisticActor:
    net = TensorDictModule(
        nn.Sequential(nn.Linear(3, 2), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    )
    return ProbabilisticActor(
        net,
        in_keys=["loc", "scale"],
        spec=action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": action_spec.space.low, "high": action_spec.space.high},
        return_log_prob=True,
    )


def test_probabilistic_actor_tanh_normal():
    env = GymEnv("Pendulum-v1")
    actor = _pendulum_actor(env.action_spec)
    observations = TensorDict(observation=torch.randn(16, 3), batch_size=[16])
    out = actor(observations.clone())
    assert out["action"].shape == (16, 1)
    assert out["loc"].shape == out["scale"].shape == (16, 1)
    assert (out["scale"] > 0).all()
    assert (out["action"].abs() <= 2.0).all()  # Pendulum's torque bounds
    assert out["action_log_prob"].shape == (16,)
    dist = actor.get_dist(out)
    assert isinstance(dist, TanhNormal)
    torch.testing.assert_close(dist.log_prob(out["action"]), out["action_log_prob"])
    assert env.action_spec.is_in(out["action"][0])

    with set_exploration_type(ExplorationType.DETERMINISTIC):
        first = actor(observations.clone())["action"]
        second = actor(observations.clone())["action"]
    torch.testing.assert_close(first, second)
    with set_exploration_type(ExplorationType.RANDOM):
        sampled = actor(observations.clone())["action"]
    assert not torch.equal(first, sampled)

    rollout = env.rollout(8, actor)
    assert rollout.batch_size == (8,)
    assert rollout["action_log_prob"].shape == (8,)


def test_value_operator():
    value = ValueOperator(nn.Linear(3, 1), in_keys=["observation"])
    td = TensorDict(observation=torch.randn(4, 5, 3), batch_size=[4, 5])
    out = value(td)
    assert out is td
    assert out["state_value"].shape == (4, 5, 1)
    torch.testing.assert_close(out["state_value"], value.module(td["observation"]))

    # MLP concatenates its inputs
    qvalue = ValueOperator(MLP(out_features=1, num_cells=[8]), in_keys=["observation", "action"])
    td = TensorDict(observation=torch.randn(6, 3), action=torch.randn(6, 1), batch_size=[6])
    assert qvalue(td)["state_action_value"].shape == (6, 1)


def test_qvalue_actor_with_egreedy_exploration():
    env = GymEnv("CartPole-v1")
    spec = env.action_spec
    assert spec.shape == (2,)  # one-hot over the two pushes
    actor = QValueActor(nn.Linear(4, 2), in_keys=["observation"], spec=spec)
    td = TensorDict(observation=torch.randn(32, 4), batch_size=[32])
    out = actor(td.clone())
    assert out["action"].shape == (32, 2) and out["action"].dtype == spec.dtype
    assert (out["action"].sum(-1) == 1).all()
    assert out["action_value"].shape == (32, 2)
    greedy = out["action_value"].argmax(-1)
    torch.testing.assert_close(out["action"].argmax(-1), greedy)
    torch.testing.assert_close(
        out["chosen_action_value"].squeeze(-1), out["action_value"].max(-1).values
    )

    explore = EGreedyModule(spec, eps_init=1.0, eps_end=0.0, annealing_num_steps=4)
    policy = TensorDictSequential(actor, explore)
    with set_exploration_type(ExplorationType.RANDOM):
        noisy = policy(td.clone())["action"]
        assert (noisy.sum(-1) == 1).all()
        assert (noisy.argmax(-1) != greedy).any()  # eps = 1: random actions
        for _ in range(4):
            explore.step()
        assert explore.eps == 0
        torch.testing.assert_close(policy(td.clone())["action"].argmax(-1), greedy)
    with set_exploration_type(ExplorationType.DETERMINISTIC):
        explore.eps.fill_(1.0)
        torch.testing.assert_close(policy(td.clone())["action"].argmax(-1), greedy)

    rollout = env.rollout(10, policy)
    assert rollout["action"].shape[-1] == 2
    assert spec.is_in(rollout["action"][0])
