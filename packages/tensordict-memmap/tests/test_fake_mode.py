"""Memory-mapped data under ``FakeTensorMode``: loads give fake leaves of the saved
shapes, dtypes and devices without opening a data file; writes are refused before
anything is written (as upstream 0.15.3, where they fail in ``aten::from_file``)."""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

import tensordict
from tensordict import MemoryMappedTensor, NonTensorData, NonTensorStack, TensorDict

try:
    from tensordict import tensorclass
except ImportError:  # tensordict-tensorclass is not installed
    tensorclass = None

if tensorclass is not None:

    @tensorclass
    class Sample:
        x: torch.Tensor
        label: str


def _sample() -> TensorDict:
    td = TensorDict(
        {"obs": torch.arange(12.0).reshape(3, 4), "done": torch.zeros(3, dtype=torch.bool),
         "next": {"reward": torch.randn(3, 1), "deep": {"step": torch.arange(3)}},
         "label": "a string", "tags": NonTensorStack.from_list(["x", "y", "z"])},
        batch_size=[3], names=["time"],
    )
    td["flag"] = NonTensorData({"k": [1, 2]}, batch_size=[3])
    td["half"] = torch.zeros(3, 2, dtype=torch.bfloat16)
    return td


def _assert_fake_like(loaded, saved, mode, device="cpu"):
    """Same structure, shapes and dtypes; every leaf a fake of ``mode`` on ``device``."""
    leaves = dict(saved.items(include_nested=True, leaves_only=True))
    assert set(loaded.keys(include_nested=True, leaves_only=True)) == set(leaves)
    for key, value in leaves.items():
        got = loaded.get(key)
        assert type(got) is FakeTensor and got.fake_mode is mode, key
        assert got.shape == value.shape and got.dtype == value.dtype, key
        assert got.device == torch.device(device), key


@pytest.fixture
def saved(tmp_path):
    td = _sample()
    td.memmap(tmp_path / "td")
    return td, tmp_path / "td"


def test_load_gives_fake_leaves_and_real_non_tensor_data(saved):
    td, path = saved
    with FakeTensorMode() as mode:
        loaded = TensorDict.load_memmap(path)
        _assert_fake_like(loaded, td, mode)
        assert loaded.batch_size == (3,) and loaded.names == ["time"]
        assert loaded.device == torch.device("cpu") and loaded["next"].batch_size == (3,)
        assert loaded["label"] == "a string" and loaded["tags"] == ["x", "y", "z"]
        assert loaded["flag"] == {"k": [1, 2]}
        assert not loaded.is_memmap() and not loaded.is_locked  # as upstream
        assert type(loaded["obs"] * 2) is FakeTensor
    again = TensorDict.load_memmap(path)  # out of the mode: mapped again
    assert type(again["obs"]) is MemoryMappedTensor and torch.equal(again["obs"], td["obs"])


@pytest.mark.parametrize("load", [
    lambda path: TensorDict.load_memmap(path),
    lambda path: TensorDict.load(path),
    lambda path: tensordict.load_memmap(path),
    lambda path: tensordict.load(path),
    lambda path: TensorDict.load_memmap(path, device="cpu", mode="r"),
    lambda path: TensorDict(batch_size=[3]).load_memmap_(path),
], ids=["load_memmap", "load", "tensordict.load_memmap", "tensordict.load", "device_mode",
        "load_memmap_"])
def test_every_load_entry_point_is_fake(saved, load):
    td, path = saved
    with FakeTensorMode() as mode:
        _assert_fake_like(load(path), td, mode)


def test_subpath_and_meta_device(saved):
    td, path = saved
    with FakeTensorMode() as mode:
        _assert_fake_like(TensorDict.load_memmap(path, subpath="next"), td["next"], mode)
        _assert_fake_like(TensorDict.load_memmap(path, device="meta"), td, mode, "meta")


def _no_mapping(*args, **kwargs):
    raise AssertionError("a fake load mapped a data file")


@pytest.mark.parametrize("damage", ["none", "truncate", "remove"])
def test_fake_load_opens_no_data_file(saved, monkeypatch, damage):
    td, path = saved
    data_files = [os.path.join(root, name) for root, _, names in os.walk(path)
                  for name in names if name.endswith(".memmap")]
    assert len(data_files) == 5
    for name in data_files:
        if damage == "truncate":
            os.truncate(name, 1)
        elif damage == "remove":
            os.remove(name)
    monkeypatch.setattr(torch, "from_file", _no_mapping)
    monkeypatch.setattr(torch.UntypedStorage, "from_file", _no_mapping)
    with FakeTensorMode() as mode:
        _assert_fake_like(TensorDict.load_memmap(path), td, mode)


def test_lazy_stack(tmp_path):
    parts = [TensorDict(a=torch.zeros(3), b=torch.ones(3)), TensorDict(a=torch.ones(3))]
    tensordict.lazy_stack(parts, 0).memmap(tmp_path)
    with FakeTensorMode() as mode:
        loaded = TensorDict.load_memmap(tmp_path)
        assert type(loaded).__name__ == "LazyStackedTensorDict"
        assert [sorted(part.keys()) for part in loaded.tensordicts] == [["a", "b"], ["a"]]
        assert type(loaded["a"]) is FakeTensor and loaded["a"].shape == (2, 3)
        assert loaded.tensordicts[0]["b"].fake_mode is mode


@pytest.mark.skipif(tensorclass is None, reason="tensordict-tensorclass is not installed")
def test_tensorclass(tmp_path):
    Sample(x=torch.ones(4, 2), label="hi", batch_size=[4]).memmap(tmp_path / "top")
    TensorDict(s=Sample(x=torch.ones(4, 2), label="in", batch_size=[4]),
               batch_size=[4]).memmap(tmp_path / "nested")
    with FakeTensorMode():
        for loaded in (Sample.load_memmap(tmp_path / "top"),
                       TensorDict.load_memmap(tmp_path / "top")):
            assert type(loaded) is Sample and loaded.label == "hi"
            assert type(loaded.x) is FakeTensor and loaded.x.shape == (4, 2)
        inner = TensorDict.load_memmap(tmp_path / "nested")["s"]
        assert type(inner) is Sample and type(inner.x) is FakeTensor and inner.label == "in"


def test_archive(tmp_path):
    td = TensorDict(a=torch.ones(2, 3), b={"c": torch.arange(2)}, batch_size=[2])
    td.memmap(tmp_path / "td.tdz")
    with FakeTensorMode() as mode:
        _assert_fake_like(TensorDict.load_memmap(tmp_path / "td.tdz"), td, mode)


def test_nested_tensor_leaf_is_not_implemented(tmp_path):
    nested = torch.nested.nested_tensor([torch.ones(2, 3), torch.ones(1, 3)])
    TensorDict(n=nested).memmap(tmp_path)
    with FakeTensorMode(), pytest.raises(NotImplementedError, match="'n'.*nested"):
        TensorDict.load_memmap(tmp_path)


def test_from_filename(tmp_path):
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(6.0), filename=path)
    with FakeTensorMode() as mode:
        out = MemoryMappedTensor.from_filename(path, shape=(2, 3), dtype=torch.float32)
        assert type(out) is FakeTensor and out.fake_mode is mode and out.shape == (2, 3)
        row = MemoryMappedTensor.from_filename(path, torch.int32, [3, 2], index=1)
        assert row.shape == (2,) and row.dtype == torch.int32
        # the file is not opened: not even its size is checked
        missing = MemoryMappedTensor.from_filename(tmp_path / "none", torch.uint8, [4])
        assert missing.shape == (4,)
        with pytest.raises(ValueError, match="mode"):
            MemoryMappedTensor.from_filename(path, torch.float32, [6], mode="x")
        with pytest.raises(NotImplementedError, match="nested"):
            MemoryMappedTensor.from_filename(path, torch.float32, torch.tensor([[1, 3]]))


def _tree(path):
    return sorted((root, sorted(dirs), sorted(files)) for root, dirs, files in os.walk(path))


@pytest.mark.parametrize("write", [
    lambda td, path: td.memmap(path),
    lambda td, path: td.memmap(path / "new"),
    lambda td, path: td.memmap_like(path / "new"),
    lambda td, path: td.memmap(path / "new.tdz"),
    lambda td, path: td.memmap(),
    lambda td, path: td.memmap_(path),
], ids=["over_existing", "new_folder", "memmap_like", "archive", "shared_memory", "memmap_"])
def test_writes_are_refused_before_writing(tmp_path, write):
    original = TensorDict(a=torch.ones(3), b={"c": torch.zeros(3)}, batch_size=[3])
    original.memmap(tmp_path)
    before = _tree(tmp_path)
    real = TensorDict(a=torch.full((3,), 2.0), b={"c": torch.zeros(3)}, batch_size=[3])
    with FakeTensorMode():
        fake = TensorDict(a=torch.ones(3), b={"c": torch.zeros(3)}, batch_size=[3])
        for td in (fake, real):
            with pytest.raises(NotImplementedError, match="'a'.*FakeTensorMode"):
                write(td, tmp_path)
            assert not td.is_locked and not td.is_memmap()
        assert type(fake["a"]) is FakeTensor and type(real["a"]) is torch.Tensor
    assert _tree(tmp_path) == before
    assert torch.equal(TensorDict.load_memmap(tmp_path)["a"], torch.ones(3))


def test_non_tensor_only_save_still_works(tmp_path):
    with FakeTensorMode():  # no tensor to write: as upstream, it is saved
        TensorDict(s="hello").memmap(tmp_path)
    assert TensorDict.load_memmap(tmp_path)["s"] == "hello"


@pytest.mark.parametrize("make", [
    lambda path: MemoryMappedTensor.empty(3, filename=path),
    lambda path: MemoryMappedTensor.zeros(3),
    lambda path: MemoryMappedTensor.from_tensor(torch.ones(3), filename=path),
], ids=["empty", "zeros_anonymous", "from_tensor"])
def test_constructors_are_refused(tmp_path, make):
    with FakeTensorMode(), pytest.raises(NotImplementedError, match="FakeTensorMode"):
        make(tmp_path / "t.memmap")
    assert os.listdir(tmp_path) == []


def test_fake_parameters_flow_through_a_module(tmp_path):
    net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    TensorDict.from_module(net).memmap(tmp_path)
    with FakeTensorMode() as mode:
        params = TensorDict.load_memmap(tmp_path)
        assert params["0", "weight"].shape == (4, 3) and params["2", "bias"].shape == (2,)
        fake_net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        with params.to_module(fake_net):
            assert fake_net[0].weight.fake_mode is mode
            out = fake_net(torch.randn(5, 3))
        assert type(out) is FakeTensor and out.shape == (5, 2) and out.fake_mode is mode
    assert type(net[0].weight) is nn.Parameter  # the real module is untouched
