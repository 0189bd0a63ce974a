"""TorchRL objectives on short rollouts: loss values, backward, an optimizer step, target nets."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torchrl.envs import GymEnv
from torchrl.modules import (
    MLP,
    OneHotCategorical,
    ProbabilisticActor,
    QValueActor,
    TanhNormal,
    ValueOperator,
)
from torchrl.objectives import (
    ClipPPOLoss,
    DDPGLoss,
    DQNLoss,
    SACLoss,
    SoftUpdate,
    TD3Loss,
)
from torchrl.objectives.value import GAE

from tensordict import TensorDict, TensorDictBase
from tensordict.nn import NormalParamExtractor, TensorDictModule


def _rollout(name: str, policy, steps: int = 32) -> TensorDictBase:
    env = GymEnv(name)
    env.set_seed(0)
    try:
        with torch.no_grad():
            return env.rollout(steps, policy, break_when_any_done=False)
    finally:
        env.close()


def _pendulum_actor() -> ProbabilisticActor:
    spec = GymEnv("Pendulum-v1").action_spec
    net = TensorDictModule(
        nn.Sequential(MLP(in_features=3, out_features=2, num_cells=[16]), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    )
    return ProbabilisticActor(
        net,
        in_keys=["loc", "scale"],
        spec=spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": spec.space.low, "high": spec.space.high},
        return_log_prob=True,
    )


def _deterministic_pendulum_actor() -> TensorDictModule:
    net = nn.Sequential(MLP(in_features=3, out_features=1, num_cells=[16]), nn.Tanh())
    return TensorDictModule(net, in_keys=["observation"], out_keys=["action"])


def _qvalue() -> ValueOperator:
    return ValueOperator(
        MLP(in_features=4, out_features=1, num_cells=[16]), in_keys=["observation", "action"]
    )


def _snapshot(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().clone() for name, p in module.named_parameters()}


def _train_step(loss_module: nn.Module, data: TensorDictBase, loss_keys: set[str]) -> TensorDict:
    """One Adam step on the sum of the ``loss_keys`` entries; checks every network moved."""
    before = _snapshot(loss_module)
    losses = loss_module(data)
    assert loss_keys <= set(losses.keys())
    for key in loss_keys:
        assert losses[key].shape == () and torch.isfinite(losses[key])
    total = sum(losses[key] for key in loss_keys)
    optimizer = torch.optim.Adam(loss_module.parameters(), lr=1e-2)
    optimizer.zero_grad()
    total.backward()
    optimizer.step()
    after = _snapshot(loss_module)
    groups = {name.split(".")[0] for name in before}
    for group in groups:
        changed = [
            not torch.equal(before[name], after[name])
            for name in before
            if name.split(".")[0] == group
        ]
        assert any(changed), f"no parameter of {group} changed"
    return losses


def _check_soft_update(updater: SoftUpdate, eps: float, *networks: str) -> None:
    """``updater`` moves each target a ``1 - eps`` step towards the (just trained) online net."""
    loss_module = updater.loss_module
    for name in networks:
        online = getattr(loss_module, f"{name}_params").detach().clone()
        target = getattr(loss_module, f"target_{name}_params")
        if target.batch_size != online.batch_size:  # ensembles: one target per copy
            online = online.expand(target.batch_size)
        old = target.detach().clone()
        assert not (old == online).all()  # the online net just took an optimizer step
        updater.step()
        expected = old.mul(eps) + online.mul(1 - eps)
        torch.testing.assert_close(target.detach(), expected)


def test_clip_ppo_with_gae():
    actor = ProbabilisticActor(
        TensorDictModule(
            MLP(in_features=4, out_features=2, num_cells=[16]),
            in_keys=["observation"],
            out_keys=["logits"],
        ),
        in_keys=["logits"],
        spec=GymEnv("CartPole-v1").action_spec,
        distribution_class=OneHotCategorical,
        return_log_prob=True,
    )
    critic = ValueOperator(
        MLP(in_features=4, out_features=1, num_cells=[16]), in_keys=["observation"]
    )
    data = _rollout("CartPole-v1", actor, steps=64)
    assert data["action_log_prob"].shape == (64,)
    advantage = GAE(gamma=0.99, lmbda=0.95, value_network=critic)
    with torch.no_grad():
        advantage(data)
    assert data["advantage"].shape == data["value_target"].shape == (64, 1)
    torch.testing.assert_close(data["advantage"], data["value_target"] - data["state_value"])
    loss = ClipPPOLoss(actor, critic, clip_epsilon=0.2, entropy_coeff=0.01)
    losses = _train_step(loss, data, {"loss_objective", "loss_critic", "loss_entropy"})
    assert "entropy" in losses.keys() and losses["entropy"] > 0


def test_dqn_with_soft_update():
    spec = GymEnv("CartPole-v1").action_spec
    actor = QValueActor(
        MLP(in_features=4, out_features=2, num_cells=[16]), in_keys=["observation"], spec=spec
    )
    data = _rollout("CartPole-v1", actor, steps=32)
    loss = DQNLoss(actor, action_space=spec, delay_value=True)
    loss.make_value_estimator(gamma=0.99)
    updater = SoftUpdate(loss, eps=0.9)
    _train_step(loss, data, {"loss"})
    _check_soft_update(updater, 0.9, "value_network")


@pytest.mark.parametrize("algorithm", ["sac", "ddpg", "td3"])
def test_continuous_control_losses(algorithm):
    if algorithm == "sac":
        actor = _pendulum_actor()
        loss = SACLoss(actor, _qvalue(), num_qvalue_nets=2)
        expected, targets = {"loss_actor", "loss_qvalue", "loss_alpha"}, ["qvalue_network"]
    elif algorithm == "ddpg":
        actor = _deterministic_pendulum_actor()
        loss = DDPGLoss(actor, _qvalue())
        expected, targets = {"loss_actor", "loss_value"}, ["value_network"]
    else:
        actor = _deterministic_pendulum_actor()
        loss = TD3Loss(actor, _qvalue(), action_spec=GymEnv("Pendulum-v1").action_spec)
        expected, targets = {"loss_actor", "loss_qvalue"}, ["actor_network", "qvalue_network"]
    loss.make_value_estimator(gamma=0.99)
    updater = SoftUpdate(loss, eps=0.95)
    data = _rollout("Pendulum-v1", actor, steps=32)
    _train_step(loss, data, expected)
    _check_soft_update(updater, 0.95, *targets)
