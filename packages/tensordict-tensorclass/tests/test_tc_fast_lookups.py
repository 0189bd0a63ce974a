"""Nested lookups and writes through a tensorclass entry take the general path (core's
fast lookups read TensorDicts' own dicts only)."""

import torch

from tensordict import TensorDict, tensorclass


@tensorclass
class Pair:
    x: torch.Tensor


def make() -> TensorDict:
    return TensorDict({"a": torch.zeros(2), "tc": Pair(x=torch.full((2,), 3.0), batch_size=[2])},
                      batch_size=[2])


def test_get_and_in_through_a_tensorclass():
    td = make()
    assert torch.equal(td.get(("tc", "x"), None), torch.full((2,), 3.0))
    assert td.get(("tc", "y"), None) is None
    assert td.get(("tc", "_tensordict"), None) is None  # not a field
    assert ("tc", "x") in td and ("tc", "y") not in td and ("tc", "_tensordict") not in td


def test_set_into_a_tensorclass_keeps_its_class():
    td = make()
    td.set(("tc", "x"), torch.full((2,), 5.0))
    assert isinstance(td["tc"], Pair) and torch.equal(td["tc"].x, torch.full((2,), 5.0))


def test_a_tensorclass_entry_is_not_empty():
    assert not TensorDict(t=Pair(x=torch.zeros(()), batch_size=[])).is_empty()
    assert list(make().keys()) == ["a", "tc"]
