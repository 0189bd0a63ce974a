"""tensordict-zarr: stores written by upstream tensordict read here and the other way
round (its ``__tensordict__`` group attribute, JSON non-tensor values, string stacks),
the names it adds, and the ``"zarr"`` storage backend."""

from __future__ import annotations

import json
import pathlib
import shutil

import pytest
import torch

import tensordict
from tensordict import TensorDict
from tensordict.persistent import PersistentTensorDict

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "upstream_0153.zarr"


def transition() -> TensorDict:
    return TensorDict({"obs": torch.arange(12, dtype=torch.float32).view(4, 3),
                       "done": torch.tensor([False, False, True, True]),
                       "next": {"reward": torch.arange(4, dtype=torch.float64).view(4, 1)},
                       "name": "cartpole", "tags": ["a", "b", "c", "d"]}, [4])


def test_reads_a_store_written_by_upstream():
    with tensordict.from_zarr(FIXTURE) as ptd:
        expected = transition()
        assert ptd.batch_size == torch.Size([4])
        assert torch.equal(ptd["obs"], expected["obs"])
        assert torch.equal(ptd["next", "reward"], expected["next", "reward"])
        assert ptd["name"] == "cartpole"
        assert ptd["tags"] == ["a", "b", "c", "d"]
        assert ptd[[0, 2]]["tags"] == ["a", "c"]


def test_writes_upstreams_layout(tmp_path):
    path = tmp_path / "ours.zarr"
    ptd = transition().to_zarr(path)
    ptd["extra"] = torch.ones(4)
    ptd.close()
    root = json.loads((path / "zarr.json").read_text())
    assert root["attributes"]["__tensordict__"]["batch_size"] == [4]
    # upstream reads the consolidated metadata: it must list what was added later
    assert "extra" in root["consolidated_metadata"]["metadata"]
    name = json.loads((path / "name" / "zarr.json").read_text())
    assert name["attributes"]["__tensordict_non_tensor__"] == {"encoding": "json"}
    tags = json.loads((path / "tags" / "zarr.json").read_text())
    assert tags["attributes"]["__tensordict_stack__"] == [4]


def test_updates_an_upstream_store_in_place(tmp_path):
    path = tmp_path / "copy.zarr"
    shutil.copytree(FIXTURE, path)
    with tensordict.from_zarr(path, mode="r+") as ptd:
        ptd[0] = TensorDict({"obs": torch.full((3,), -1.0)}, [])
        ptd["obs2"] = torch.zeros(4, 2)
    with tensordict.from_zarr(path) as again:
        assert again["obs"][0].tolist() == [-1.0, -1.0, -1.0]
        assert again["obs2"].shape == (4, 2)


def test_names_and_storage_backend(tmp_path):
    assert tensordict.from_zarr.__module__ == "tensordict.zarr"
    path = tmp_path / "saved.zarr"
    transition().save(path, backend="zarr").close()
    with TensorDict.load(path) as loaded:
        assert isinstance(loaded, PersistentTensorDict)
        assert loaded["tags"] == ["a", "b", "c", "d"]


def test_missing_store_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope"):
        tensordict.from_zarr(tmp_path / "nope.zarr")


def test_view_and_cast_writes_land_in_the_store(tmp_path):
    """What zarr itself reads back: rows written through index views, and bfloat16
    values written into a float32 array as values (not as their int16 bits)."""
    import zarr

    path = tmp_path / "writes.zarr"
    ptd = transition().to_zarr(path)
    ptd["next"][1].add_(10)
    ptd[1].set_("done", torch.tensor(True))
    ptd["next"][2]["reward"] = torch.tensor([-1.0])
    ptd[2:].set_("obs", torch.tensor([[0.5, 1.5, 2.5]], dtype=torch.bfloat16).expand(2, 3))
    with pytest.raises(RuntimeError, match="'obs'"):
        ptd.set_("obs", torch.zeros(4, 5))
    ptd.close()
    root = zarr.open_group(path, mode="r")
    assert root["obs"].dtype == "float32" and root["obs"].shape == (4, 3)
    assert root["obs"][1].tolist() == [3.0, 4.0, 5.0]
    assert root["obs"][2:].tolist() == [[0.5, 1.5, 2.5]] * 2
    assert root["next"]["reward"][:, 0].tolist() == [0.0, 11.0, -1.0, 3.0]
    assert root["done"][:].tolist() == [False, True, True, True]


@pytest.mark.parametrize("write", ["from_dict", "to_zarr"])
def test_array_options_reach_nested_arrays(tmp_path, write):
    """Options of every array written, nested ones too; ``chunks`` of the leading dims
    extended by the rest of each array's shape, as upstream."""
    zarr = pytest.importorskip("zarr")
    td = TensorDict({"a": torch.arange(60.0).view(30, 2), "n": {"b": torch.ones(30, 4)},
                     "s": "text"}, [30])
    path = tmp_path / "chunked.zarr"
    options = {"chunks": (10,), "compressors": None}
    ptd = PersistentTensorDict.from_dict(td, path, backend="zarr", **options) \
        if write == "from_dict" else td.to_zarr(path, **options)
    ptd.close()
    group = zarr.open_group(path, mode="r")
    assert group["a"].chunks == (10, 2) and group["n/b"].chunks == (10, 4)
    assert group["a"].compressors == () and group["n/b"].compressors == ()
    with tensordict.from_zarr(path) as again:
        assert torch.equal(again["n", "b"], torch.ones(30, 4)) and again["s"] == "text"


def test_unmarked_string_arrays_are_non_tensor_entries(tmp_path):
    """A store written by another program: a string array is a non-tensor entry (the
    array, as upstream reads it), left out of the guessed batch size."""
    zarr = pytest.importorskip("zarr")
    np = pytest.importorskip("numpy")
    path = tmp_path / "raw.zarr"
    group = zarr.open_group(path, mode="w")
    group.create_array("x", data=np.arange(10, dtype=np.float32).reshape(5, 2))
    group.create_array("g/y", data=np.zeros((5, 3)))
    group.create_array("s", shape=(4,), dtype=str)[...] = np.array(["a", "b", "c", "d"])
    with tensordict.from_zarr(path) as ptd:
        assert ptd.batch_size == torch.Size([5]) and ptd["g"].batch_size == torch.Size([5, 3])
        assert ptd["s"].tolist() == ["a", "b", "c", "d"]
        copy = ptd.to_tensordict()
    copy.to_zarr(tmp_path / "again.zarr").close()
    with tensordict.from_zarr(tmp_path / "again.zarr") as again:
        assert again["s"].tolist() == ["a", "b", "c", "d"]
        assert torch.equal(again["x"], torch.arange(10.0).view(5, 2))
