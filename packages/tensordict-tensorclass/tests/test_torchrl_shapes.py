"""Shapes and values that TorchRL's tests build, reproduced without TorchRL."""

import torch

from tensordict import TensorClass, TensorDict


class TC(TensorClass):
    field0: str
    field1: torch.Tensor


def _td() -> TensorDict:
    return TensorDict(observation=torch.zeros(1), tc=TC("0", torch.zeros(())))


def test_nested_select_keeps_the_class():
    """check_env_specs selects the spec's leaf keys, ("tc", "field0") among them."""
    out = _td().select("observation", ("tc", "field0"), ("tc", "field1"), strict=True)
    assert type(out["tc"]) is TC
    assert out["tc"].field0 == "0"
    assert type(_td().select(("tc", "field1"))["tc"]) is TC


def test_nested_exclude_keeps_the_class():
    out = _td().exclude(("tc", "field0"))
    assert type(out["tc"]) is TC
    assert out["tc"].field0 is None
    assert (out["tc"].field1 == 0).all()



def test_stack_and_cat_keep_a_tensorclass_entry():
    """A rollout stacks steps holding a tensorclass entry: it stays one."""
    stacked = torch.stack([_td(), _td()])
    assert type(stacked["tc"]) is TC and stacked["tc"].batch_size == (2,)
    assert type(stacked[-1]["tc"]) is TC and stacked["tc"].field0 == ["0", "0"]
    assert type(torch.cat([stacked, stacked])["tc"]) is TC


def test_an_instance_is_a_collection_but_not_a_tensordict_base():
    """TorchRL's env checks recurse into TensorDictBase values only: a tensorclass entry is
    one value there (upstream's isinstance answer), while tensordict recurses into it."""
    from tensordict import TensorCollection, TensorDictBase, is_tensor_collection
    from tensordict.utils import acts_as_tensordict

    tc = _td()["tc"]
    assert not isinstance(tc, TensorDictBase) and isinstance(tc, TensorCollection)
    assert is_tensor_collection(tc) and acts_as_tensordict(tc)
    td = _td()
    assert td["tc", "field1"].shape == () and td.get(("tc", "field0")) == "0"
    td["tc", "field1"] = torch.ones(())
    assert td["tc"].field1 == 1
    assert ("tc", "field1") in td.keys(True, True)
    with_lock = _td().lock_()
    assert with_lock["tc"].is_locked
