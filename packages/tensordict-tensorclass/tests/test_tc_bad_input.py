"""torch functions given instances of unrelated tensorclasses raise (there is no class
for the result) instead of returning the first argument's class; related classes (one a
subclass of the other) still combine, as in upstream."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, tensorclass


@tensorclass
class Obs:
    x: torch.Tensor


@tensorclass
class Act:
    x: torch.Tensor


class RichObs(Obs):
    pass


def make(cls, batch=(2,), fill=0.0):
    return cls(x=torch.full((*batch, 3), fill), batch_size=list(batch))


@pytest.mark.parametrize("func", [torch.stack, torch.cat, torch.concatenate])
@pytest.mark.parametrize("batch", [(2,), (2, 4)])
def test_joining_unrelated_tensorclasses_raises_naming_both(func, batch):
    obs, act = make(Obs, batch), make(Act, batch, 1.0)
    with pytest.raises(TypeError, match=rf"'torch.{func.__name__}'.*\['Obs', 'Act'\]") as err:
        func([obs, act], 0)
    assert f"Obs(batch_size={list(batch)}), Act(batch_size={list(batch)})" in str(err.value)
    assert torch.equal(obs.x, torch.zeros(*batch, 3)) and torch.equal(act.x, torch.ones(*batch, 3))


def test_stacking_zero_dim_unrelated_instances_raises():
    with pytest.raises(TypeError, match=r"Obs\(batch_size=\[\]\), Act\(batch_size=\[\]\)"):
        torch.stack([make(Obs, ()), make(Act, ())])


def test_other_torch_functions_and_more_arguments_raise_too():
    mask = torch.tensor([True, False])
    with pytest.raises(TypeError, match="'torch.where'"):
        torch.where(mask, make(Obs), make(Act))
    with pytest.raises(TypeError, match="unrelated tensorclasses") as err:
        torch.stack([make(Obs), make(RichObs), make(Act)])
    assert all(f"{name}(batch_size=[2])" in str(err.value) for name in ("Obs", "RichObs", "Act"))


def test_same_name_and_fields_is_still_another_class():
    @tensorclass
    class Obs:  # noqa: F811 (a second, unrelated class named Obs)
        x: torch.Tensor

    with pytest.raises(TypeError, match="unrelated tensorclasses"):
        torch.stack([make(Obs), make(globals()["Obs"])])


@pytest.mark.parametrize("first, second", [(Obs, RichObs), (RichObs, Obs)])
def test_a_class_and_its_subclass_combine_as_the_first(first, second):
    a, b = make(first, fill=1.0), make(second, fill=2.0)
    stacked = torch.stack([a, b])
    assert type(stacked) is first and stacked.batch_size == (2, 2)
    assert torch.equal(stacked.x, torch.stack([a.x, b.x]))
    joined = torch.cat([a, b])
    assert type(joined) is first and torch.equal(joined.x, torch.cat([a.x, b.x]))


def test_one_class_stacks_field_by_field():
    parts = [make(Obs, fill=float(i)) for i in range(3)]
    stacked = torch.stack(parts, 1)
    assert type(stacked) is Obs and stacked.batch_size == (2, 3)
    assert torch.equal(stacked.x, torch.stack([p.x for p in parts], 1))


def test_tensorclass_with_a_tensordict_keeps_upstream_behaviour():
    # upstream returns the tensorclass when it comes first (for torch.where)
    mask = torch.tensor([True, False])
    td = TensorDict(x=torch.ones(2, 3), batch_size=[2])
    out = torch.where(mask, make(Obs), td)
    assert type(out) is Obs
    assert torch.equal(out.x, torch.where(mask[:, None], torch.zeros(2, 3), torch.ones(2, 3)))
