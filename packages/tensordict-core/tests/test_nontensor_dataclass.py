"""NonTensorData as a dataclass instance, as upstream 0.15.3's (a tensorclass) is."""

import copy
import dataclasses
import pickle

import pytest
import torch

from tensordict import MetaData, NonTensorData, NonTensorStack, TensorDict


def test_dataclass_protocol():
    data = NonTensorData("hi", batch_size=[2])
    assert dataclasses.is_dataclass(data) and dataclasses.is_dataclass(NonTensorData)
    assert [field.name for field in dataclasses.fields(data)] == [
        "data", "_metadata", "_is_non_tensor"]
    assert dataclasses.asdict(data) == {"data": "hi", "_metadata": None,
                                        "_is_non_tensor": True}
    assert dataclasses.astuple(data) == ("hi", None, True)
    assert NonTensorData.__match_args__ == ("data", "_metadata", "_is_non_tensor")
    params = NonTensorData.__dataclass_params__
    assert (params.init, params.repr, params.eq, params.order, params.frozen) == (
        True, True, True, False, False)
    assert not dataclasses.is_dataclass(NonTensorStack("a"))
    assert not dataclasses.is_dataclass(TensorDict())


def test_replace_gives_a_new_entry():
    data = NonTensorData("hi", batch_size=[2])
    new = dataclasses.replace(data, data="yo")
    assert type(new) is NonTensorData and new.data == "yo" and new.batch_size == ()
    assert data.data == "hi" and data.batch_size == (2,)
    assert dataclasses.replace(data, batch_size=[3]).batch_size == (3,)
    assert dataclasses.replace(data, device="cpu").device == torch.device("cpu")


def test_vars_and_dict_as_upstream():
    data = NonTensorData("hi", batch_size=[2], names=["x"])
    state = vars(data)
    assert sorted(state) == ["_is_initialized", "_non_tensordict", "_tensordict"]
    assert state["_non_tensordict"] == {"data": "hi", "_metadata": None,
                                        "_is_non_tensor": True}
    assert state["_is_initialized"] is True
    inner = state["_tensordict"]
    assert type(inner) is TensorDict and inner.batch_size == (2,) and not list(inner.keys())
    assert inner.names == ["x"]
    assert data.__dict__["_non_tensordict"] == state["_non_tensordict"]
    assert vars(MetaData(3))["_non_tensordict"]["data"] == 3


def test_data_stays_shared_and_copies_work():
    td = TensorDict(s="x", batch_size=[2])
    view = td[:]
    view.get("s").data = "y"
    assert td["s"] == "y" and vars(td.get("s"))["_non_tensordict"]["data"] == "y"
    data = NonTensorData("hi", batch_size=[2], names=["x"])
    for clone in (copy.copy(data), copy.deepcopy(data), pickle.loads(pickle.dumps(data))):
        assert (clone.data, clone.batch_size, clone.names) == ("hi", (2,), ["x"])
    match data:
        case NonTensorData(value):
            assert value == "hi"
        case _:
            pytest.fail("no match")
