"""NonTensorData has the TensorDict methods, as upstream's tensorclass has them: they act on
its batch (it holds no tensor entry) and keep its object."""

import dataclasses

import pytest
import torch

from tensordict import MetaData, NonTensorData, TensorDict


def _entry() -> NonTensorData:
    return NonTensorData("walk", batch_size=[3, 2], names=["t", "env"])


def test_batch_introspection():
    data = _entry()
    assert (data.dim(), data.ndimension(), data.batch_dims) == (2, 2, 2)
    assert data.size() == torch.Size([3, 2]) and data.size(-1) == 2
    assert list(data.keys()) == [] and list(data.items()) == [] and not data.is_empty()
    assert data.requires_grad is False and data.bytes() == 0


@pytest.mark.parametrize("op, batch_size", [
    (lambda d: d.float(), [3, 2]), (lambda d: d.apply(lambda x: x + 1), [3, 2]),
    (lambda d: d.add(1), [3, 2]), (lambda d: d.sum(), []), (lambda d: d.sum(dim=0), [2]),
    (lambda d: d.repeat(2, 1), [6, 2]), (lambda d: d.contiguous(), [3, 2]),
    (lambda d: d.detach(), [3, 2]), (lambda d: d.select(), [3, 2]),
])
def test_ops_keep_the_object_and_follow_the_batch(op, batch_size):
    data = _entry()
    out = op(data)
    assert type(out) is NonTensorData and out.data == "walk"
    assert out.batch_size == torch.Size(batch_size)


def test_in_place_ops_change_the_entry_itself():
    data = NonTensorData("walk", batch_size=[3], device="cpu")
    assert data.clear_device_() is data and data.device is None
    assert data.cpu().device == torch.device("cpu") and data.device is None
    meta = MetaData(max, batch_size=[2])
    assert type(meta.float()) is MetaData and meta.float().data is max


def test_the_object_is_the_entry_data():
    data = _entry()
    assert data.get("data") == "walk" and data.get("other") is None and data.get("x", 0) == 0
    assert data.set("data", "run") is data and data.data == "run"
    data.update({"data": NonTensorData("jump")})
    assert data.data == "jump"
    with pytest.raises(AttributeError, match="'other'"):
        data.set("other", 1)


def test_a_locked_tensordict_locks_its_non_tensor_entries():
    td = TensorDict(s="walk", batch_size=[]).lock_()
    entry = td._tensordict["s"]
    assert entry.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        entry.set("data", "run")
    with pytest.raises(RuntimeError, match="unlock the TensorDict holding it"):
        entry.unlock_()
    td.unlock_()
    assert not entry.is_locked and entry.set("data", "run").data == "run"


def test_cat_of_equal_objects_is_one_entry():
    data = NonTensorData("walk", batch_size=[2])
    joined = torch.cat([data, data])
    assert type(joined) is NonTensorData and joined.batch_size == torch.Size([4])
    assert torch.cat([data, NonTensorData("run", batch_size=[2])]).tolist() == [
        "walk", "walk", "run", "run"]


def test_dataclass_fields_as_upstream_tensorclass():
    data = NonTensorData("a", batch_size=[2])
    assert [f.name for f in dataclasses.fields(data)] == ["data", "_metadata", "_is_non_tensor"]
    with pytest.warns(DeprecationWarning, match="dataclasses.fields"):
        assert data.fields() == dataclasses.fields(NonTensorData)
    assert dataclasses.replace(data, data="b").data == "b"
