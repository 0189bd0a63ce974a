"""TorchRL's memmap checkpoints (``CKPT_BACKEND=memmap``): a trainer's state dicts go
through ``dumps`` and come back from ``load_memmap`` without any keyword, non-tensor
values (dicts of tensors, optimizer states) pickled and read back as plain data."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn
from torchrl.trainers.trainers import RewardNormalizer, _state_dict_to_td, _td_to_state_dict

from tensordict import TensorDict


def _round_trip(state: dict, path) -> dict:
    _state_dict_to_td(state).dumps(str(path))
    return _td_to_state_dict(TensorDict.load_memmap(str(path)))


def test_reward_normalizer_statistics_survive_a_memmap_checkpoint(tmp_path):
    normalizer = RewardNormalizer()
    normalizer.update_reward_stats(TensorDict(next={"reward": torch.randn(10, 1)},
                                              batch_size=[10]))
    restored = RewardNormalizer()
    restored.load_state_dict(_round_trip(normalizer.state_dict(), tmp_path / "normalizer"))
    assert restored._reward_stats.keys() == normalizer._reward_stats.keys()
    for key, value in normalizer._reward_stats.items():
        assert torch.equal(torch.as_tensor(restored._reward_stats[key]), torch.as_tensor(value))
    batch = TensorDict(next={"reward": torch.ones(3, 1)}, batch_size=[3])
    assert torch.equal(restored.normalize_reward(batch.clone())["next", "reward"],
                       normalizer.normalize_reward(batch.clone())["next", "reward"])
    assert os.path.isfile(tmp_path / "normalizer" / "_reward_stats" / "other.pickle")


def test_an_optimizer_state_survives_a_memmap_checkpoint(tmp_path):
    model = nn.Linear(3, 2)
    optim = torch.optim.Adam(model.parameters(), lr=1e-3)
    model(torch.ones(4, 3)).sum().backward()
    optim.step()
    restored = torch.optim.Adam(nn.Linear(3, 2).parameters(), lr=0.5)
    restored.load_state_dict(_round_trip(optim.state_dict(), tmp_path / "optim"))
    assert restored.param_groups[0]["lr"] == pytest.approx(1e-3)
    for mine, theirs in zip(restored.state.values(), optim.state.values()):
        assert torch.equal(mine["exp_avg"], theirs["exp_avg"])
