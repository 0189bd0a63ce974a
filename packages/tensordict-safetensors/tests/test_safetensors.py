"""to_safetensors / from_safetensors: round trips, upstream's files, errors, atomic writes."""

import json
import os
import struct
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

import tensordict
from tensordict import LazyStackedTensorDict, NonTensorData, NonTensorStack, TensorDict, lazy_stack
from tensordict.testing import plugin_removed

FIXTURES = Path(__file__).parent / "fixtures"


def _metadata(path):
    with open(path, "rb") as file:
        (size,) = struct.unpack("<Q", file.read(8))
        return json.loads(file.read(size))["__metadata__"]


def _nested():
    return TensorDict(
        {"obs": torch.arange(6, dtype=torch.float32).reshape(2, 3),
         "next": {"reward": torch.tensor([1.5, -1.0]), "done": torch.tensor([False, True])},
         "step": torch.tensor([0, 1]),
         "task": NonTensorData("walk"),
         "cfg": NonTensorData({"lr": 0.1, "layers": [64, 64]})},
        batch_size=[2], names=["time"])


def _lazy():
    return lazy_stack([
        TensorDict(a=torch.zeros(3), b=TensorDict(c=torch.ones(3, 2), batch_size=[3]),
                   batch_size=[3]),
        TensorDict(a=torch.ones(3), b=TensorDict(c=torch.zeros(3, 2), batch_size=[3]),
                   batch_size=[3]),
    ], dim=1)


def _assert_nested(td):
    expected = _nested()
    assert type(td) is TensorDict
    assert td.batch_size == torch.Size([2]) and td.names == ["time"]
    assert (td.exclude("task", "cfg") == expected.exclude("task", "cfg")).all()
    assert td["next", "done"].dtype is torch.bool and td["step"].dtype is torch.int64
    assert td["task"] == "walk" and td["cfg"] == {"lr": 0.1, "layers": [64, 64]}


def test_round_trip_keeps_structure(tmp_path):
    path = tmp_path / "td.safetensors"
    tensordict.to_safetensors(_nested(), path)
    _assert_nested(tensordict.from_safetensors(path))
    # the tensors are plain safetensors entries named as in a state_dict
    assert sorted(load_file(path)) == ["next.done", "next.reward", "obs", "step"]


def test_methods_and_str_paths(tmp_path):
    path = str(tmp_path / "td.safetensors")
    _nested().to_safetensors(path)
    _assert_nested(TensorDict.from_safetensors(path))


@pytest.mark.parametrize("name", ["upstream_td", "upstream_lazy"])
def test_reads_upstream_files_and_writes_the_same_metadata(tmp_path, name):
    upstream = FIXTURES / f"{name}.safetensors"
    loaded = tensordict.from_safetensors(upstream)
    if name == "upstream_td":
        _assert_nested(loaded)
        ours = _nested()
    else:
        assert isinstance(loaded, LazyStackedTensorDict) and loaded.stack_dim == 1
        assert (loaded == _lazy()).all()
        ours = _lazy()
    tensordict.to_safetensors(ours, tmp_path / "ours.safetensors")
    assert _metadata(tmp_path / "ours.safetensors") == _metadata(upstream)


def test_lazy_stack_round_trip(tmp_path):
    path = tmp_path / "lazy.safetensors"
    tensordict.to_safetensors(_lazy(), path)
    loaded = tensordict.from_safetensors(path)
    assert isinstance(loaded, LazyStackedTensorDict)
    assert loaded.stack_dim == 1 and loaded.batch_size == torch.Size([3, 2])
    assert isinstance(loaded.get("b"), LazyStackedTensorDict)
    assert (loaded == _lazy()).all()


def test_empty_and_batch_only(tmp_path):
    path = tmp_path / "empty.safetensors"
    tensordict.to_safetensors(TensorDict(batch_size=[3, 4]), path)
    loaded = tensordict.from_safetensors(path)
    assert loaded.batch_size == torch.Size([3, 4]) and not list(loaded.keys())


def test_keys_with_dots_keep_their_names(tmp_path):
    path = tmp_path / "dots.safetensors"
    tensordict.to_safetensors(TensorDict({"a.b": torch.ones(2)}, [2]), path)
    assert list(tensordict.from_safetensors(path).keys()) == ["a.b"]


def test_views_shared_and_other_dtypes(tmp_path):
    base = torch.arange(6.0).reshape(2, 3)
    td = TensorDict(view=base[:, 1], same=base, again=base, half=torch.ones(2).bfloat16())
    path = tmp_path / "t.safetensors"
    tensordict.to_safetensors(td, path)
    loaded = tensordict.from_safetensors(path)
    assert (loaded == td).all() and loaded["half"].dtype is torch.bfloat16
    assert loaded["same"].data_ptr() != loaded["again"].data_ptr()


def test_device_argument(tmp_path):
    path = tmp_path / "td.safetensors"
    tensordict.to_safetensors(_nested(), path)
    loaded = tensordict.from_safetensors(path, device="cpu")
    assert loaded.device == torch.device("cpu") and loaded["next"].device == torch.device("cpu")
    assert tensordict.from_safetensors(path).device is None


def test_plain_checkpoint_loads_for_to_module(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    path = tmp_path / "model.safetensors"
    save_file({k: v.detach() for k, v in model.state_dict().items()}, path,
              metadata={"format": "pt"})
    params = tensordict.from_safetensors(path)
    assert params.batch_size == torch.Size([]) and params["1", "weight"].shape == (2, 4)
    fresh = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2))
    params.to_module(fresh)
    assert torch.equal(fresh[1].weight, model[1].weight)


def test_tensorclass_round_trip(tmp_path):
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Point:
        x: torch.Tensor
        label: str

    globals()["Point"] = Point  # a module-level class, as a real one would be
    Point.__qualname__ = "Point"
    try:
        point = Point(x=torch.zeros(3), label="p", batch_size=[3])
        path = tmp_path / "tc.safetensors"
        tensordict.to_safetensors(TensorDict(p=point, batch_size=[3]), path)
        loaded = tensordict.from_safetensors(path)["p"]
        assert type(loaded) is Point and loaded.label == "p"
        assert torch.equal(loaded.x, point.x)
        # the class is found among imported modules only
        meta = json.loads(_metadata(path)["tensordict"])
        meta["root"]["keys"]["p"]["td"]["class"] = "<class 'os.path'>"
        save_file(load_file(path), path, metadata={"tensordict": json.dumps(meta)})
        with pytest.raises(RuntimeError, match="Could not find the tensorclass"):
            tensordict.from_safetensors(path)
    finally:
        del globals()["Point"]


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("value, match", [
    (TensorDict(s=NonTensorStack("a", "b"), batch_size=[2]), "non-tensor stack at"),
    (TensorDict(s=NonTensorData(object())), "object is not a JSON value"),
    (TensorDict(s=NonTensorData((1, 2))), "tuple is not a JSON value"),
    (TensorDict(s=NonTensorData([1, {2: 3}])), "list is not a JSON value|dict is not"),
    (TensorDict(a=torch.nested.nested_tensor([torch.ones(2), torch.ones(3)],
                                             layout=torch.jagged)), "only dense tensors"),
    (TensorDict(a=torch.eye(2).to_sparse()), "only dense tensors"),
    (lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(b=torch.ones(2))]),
     "entries have different keys"),
    (NonTensorData("x"), "put it in a tensordict first"),
    ({"a": torch.ones(1)}, "expects a tensordict"),
])
def test_unsupported_values_raise_type_error(tmp_path, value, match):
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match=match):
        tensordict.to_safetensors(value, path)
    assert not os.listdir(tmp_path)


def test_name_collision_raises_value_error(tmp_path):
    td = TensorDict({"a.b": torch.ones(2), "a": {"b": torch.zeros(2)}}, [2])
    with pytest.raises(ValueError, match="safetensors name 'a.b'"):
        tensordict.to_safetensors(td, tmp_path / "x.safetensors")


def test_failed_write_keeps_previous_file(tmp_path):
    path = tmp_path / "td.safetensors"
    tensordict.to_safetensors(_nested(), path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        tensordict.to_safetensors(TensorDict(s=NonTensorData(object())), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["td.safetensors"]


def test_failure_during_the_write_keeps_previous_file(tmp_path, monkeypatch):
    import safetensors.torch

    path = tmp_path / "td.safetensors"
    tensordict.to_safetensors(_nested(), path)
    before = path.read_bytes()

    def broken(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(safetensors.torch, "save_file", broken)
    with pytest.raises(OSError, match="disk full"):
        tensordict.to_safetensors(_nested(), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["td.safetensors"]


def test_missing_and_corrupt_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.safetensors"):
        tensordict.from_safetensors(tmp_path / "nope.safetensors")
    bad = tmp_path / "bad.safetensors"
    bad.write_text("not a safetensors file")
    with pytest.raises(Exception, match="bad.safetensors is not a readable safetensors file"):
        tensordict.from_safetensors(bad)
    save_file({"a": torch.ones(1)}, bad, metadata={"tensordict": "{not json"})
    with pytest.raises(ValueError, match="not JSON"):
        tensordict.from_safetensors(bad)
    save_file({"a": torch.ones(1)}, bad, metadata={"tensordict": json.dumps(
        {"version": 1, "root": {"batch_size": [], "names": None,
                                "keys": {"a": {"tensor": "b"}}}})})
    with pytest.raises(ValueError, match="does not hold"):
        tensordict.from_safetensors(bad)
    save_file({"a": torch.ones(1)}, bad, metadata={"tensordict": json.dumps(
        {"version": 1, "root": {"batch_size": [], "names": None,
                                "keys": {"a": {"pickle": "a"}}}})})
    with pytest.raises(ValueError, match="corrupt: unknown entry"):
        tensordict.from_safetensors(bad)
    save_file({"a": torch.ones(1)}, bad, metadata={"tensordict": json.dumps(
        {"version": 1, "root": {"names": None, "keys": []}})})
    with pytest.raises(ValueError, match="malformed"):
        tensordict.from_safetensors(bad)
    save_file({"a": torch.ones(1)}, bad, metadata={"tensordict": json.dumps({"version": 9})})
    with pytest.raises(ValueError, match="unknown version"):
        tensordict.from_safetensors(bad)


def test_writing_over_a_folder_is_refused(tmp_path):
    with pytest.raises(IsADirectoryError):
        tensordict.to_safetensors(_nested(), tmp_path)


# -- storage backend ---------------------------------------------------------------------


def test_storage_backend(tmp_path):
    path = tmp_path / "td.safetensors"
    td = _nested()
    assert _nested().save(path, backend="safetensors") is not None
    _assert_nested(TensorDict.load(path))
    _assert_nested(TensorDict.load(path, backend="safetensors"))
    del td


def test_missing_plugin_names_the_package():
    with plugin_removed("safetensors"):
        with pytest.raises(AttributeError, match="tensordict-safetensors"):
            TensorDict().to_safetensors("x.safetensors")
        with pytest.raises(ModuleNotFoundError, match=r"tensordict\[safetensors\]"):
            tensordict.from_safetensors("x.safetensors")
