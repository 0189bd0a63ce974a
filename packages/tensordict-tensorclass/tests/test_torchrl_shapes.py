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

