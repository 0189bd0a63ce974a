"""PersistentTensorDict over every installed file format (real HDF5 files, real Zarr
stores): reads are lazy, writes reach the file, bad writes leave it as it was."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch

from tensordict import NonTensorData, TensorDict
from tensordict.persistent import PersistentTensorDict, get_format
from tensordict.storage import IndexView

sys.path.insert(0, str(Path(__file__).parent))
from persistent_workers import sum_of_rows  # noqa: E402


def sample() -> TensorDict:
    return TensorDict({
        "obs": torch.arange(24, dtype=torch.float32).view(6, 4),
        "done": torch.tensor([False, True] * 3),
        "half": torch.arange(6, dtype=torch.bfloat16),
        "next": {"reward": torch.arange(6, dtype=torch.float64).view(6, 1),
                 "deep": {"ids": torch.arange(12).view(6, 2)}},
        "env": "cartpole",
        "cfg": NonTensorData({"lr": 0.5, "layers": [2, 3]}, batch_size=[6]),
        "tags": ["a", "b", "c", "d", "e", "f"],
    }, batch_size=[6])


@pytest.fixture
def ptd(tmp_path, backend):
    path = tmp_path / f"data.{backend}"
    out = PersistentTensorDict.from_dict(sample(), path, backend=backend)
    yield out
    out.close()


def reopen(ptd: PersistentTensorDict, mode: str = "r") -> PersistentTensorDict:
    ptd.close()
    return PersistentTensorDict(filename=ptd.filename, backend=ptd._format.name, mode=mode)


def test_round_trip_restores_everything(ptd, read_text):
    again = reopen(ptd)
    expected = sample()
    assert again.batch_size == torch.Size([6])
    assert again["next"].batch_size == torch.Size([6])
    assert again["next", "deep"].batch_size == torch.Size([6])
    for key in ("obs", "done", "half", ("next", "reward"), ("next", "deep", "ids")):
        value = again[key]
        assert value.dtype == expected[key].dtype
        assert torch.equal(value, expected[key])
    assert again["env"] == read_text("cartpole")
    assert again["cfg"] == {"lr": 0.5, "layers": [2, 3]}
    assert again["tags"] == ["a", "b", "c", "d", "e", "f"]
    in_memory = again.to_tensordict()
    assert isinstance(in_memory, TensorDict)
    assert torch.equal(in_memory["next", "deep", "ids"], expected["next", "deep", "ids"])
    again.close()


def test_keys_and_shapes_come_from_metadata(ptd):
    assert set(ptd.keys(True, True)) == set(sample().keys(True, True))
    assert ptd.get_item_shape(("next", "deep", "ids")) == torch.Size([6, 2])
    assert len(ptd) == 6
    assert "obs" in ptd and ("next", "reward") in ptd and "missing" not in ptd
    assert "obs: torch.float32" not in repr(ptd) and "obs: float32[4]" in repr(ptd)


@pytest.mark.parametrize("index", [
    3, -1, slice(1, 5), slice(0, 6, 2), torch.tensor([4, 1, 4]), [0, 5],
    torch.tensor([True, False, True, True, False, False]), (slice(None), ),
    (2, ), (torch.tensor([1, 2]), ), (Ellipsis, ), slice(None, None, -1),
])
def test_indexing_matches_in_memory(ptd, index):
    if isinstance(index, slice) and index.step == -1:
        with pytest.raises(ValueError):  # as for a tensor: no negative steps
            ptd[index]
        return
    expected, view = sample()[index], ptd[index]
    assert isinstance(view, IndexView)  # reads the file; writes go there (test_index_views)
    copy = view.to_tensordict()
    assert isinstance(copy, TensorDict)
    for got in (view, copy):
        assert got.batch_size == expected.batch_size
        for key in expected.keys(True, True):
            if isinstance(expected[key], torch.Tensor):
                assert torch.equal(got[key], expected[key]), key
            else:
                assert got[key] == expected[key], key


def test_reading_rows_reads_only_those_rows(ptd):
    selections = []
    file_format = ptd._format

    class Recording:
        def __getattr__(self, name):
            return getattr(file_format, name)

        def read(self, node, selection):
            selections.append(selection)
            return file_format.read(node, selection)

    ptd._format = Recording()
    ptd._children.clear()
    view = ptd[4]
    assert not selections  # a view reads nothing until asked
    view.to_tensordict()
    assert selections and all(sel == slice(4, 5) for sel in selections)
    selections.clear()
    ptd[torch.tensor([5, 1, 5])]["obs"]
    assert selections == [[1, 5]]


def test_writes_reach_the_file(ptd):
    ptd["new"] = torch.ones(6, 3)
    ptd["obs"] = torch.zeros(6, 7)  # another shape replaces the array
    ptd["made", "on", "the_way"] = torch.full((6,), 2.0)
    ptd[1] = TensorDict({"done": torch.tensor(False), "next": {"reward": torch.tensor([9.0])}}, [])
    ptd[torch.tensor([0, 3])] = TensorDict({"new": torch.full((2, 3), 5.0)}, [2])
    ptd[4:] = {"new": torch.full((2, 3), 7.0)}
    again = reopen(ptd)
    assert again["obs"].shape == (6, 7) and again["obs"].abs().sum() == 0
    assert again["made", "on"].batch_size == torch.Size([6])
    assert torch.equal(again["made", "on", "the_way"], torch.full((6,), 2.0))
    assert again["done"].tolist() == [False, False, False, True, False, True]
    assert again["next", "reward"][1].item() == 9.0
    assert again["new"][:, 0].tolist() == [5.0, 1.0, 1.0, 5.0, 7.0, 7.0]
    again.close()


def test_in_place_ops_write_back(ptd):
    ptd.del_("done")
    ptd.apply_(lambda x: x + 1)
    assert ptd["obs"][0, 0] == 1
    ptd.zero_()
    assert ptd["next", "deep", "ids"].abs().sum() == 0
    ptd += 2
    ptd.mul_(3)
    assert ptd["obs"][0, 0] == 6
    ptd.update_({"obs": torch.ones(6, 4)})
    ptd.update_at_({"obs": torch.full((4,), 8.0)}, 2)
    ptd.set_at_(("next", "reward"), torch.tensor([4.0]), 5)
    again = reopen(ptd)
    assert again["obs"][:, 0].tolist() == [1.0, 1.0, 8.0, 1.0, 1.0, 1.0]
    assert again["next", "reward"][5].item() == 4.0
    again.close()


def test_ops_that_compute_give_in_memory_tensordicts(ptd):
    doubled = ptd.to_tensordict().exclude("done").apply(lambda x: x * 2)
    assert isinstance(doubled, TensorDict) and doubled["obs"][0, 1] == 2
    copy = ptd.clone()
    assert isinstance(copy, TensorDict)
    copy["obs"] += 100
    assert ptd["obs"][0, 0] == 0
    same_file = ptd.clone(False)
    assert isinstance(same_file, PersistentTensorDict)
    same_file["obs"] = torch.ones(6, 4)
    assert ptd["obs"][0, 0] == 1


def test_bad_index_write_leaves_the_file_unchanged(ptd):
    bad = TensorDict({"done": torch.tensor(True), "obs": torch.ones(5)}, [])
    with pytest.raises(RuntimeError, match="obs"):
        ptd[0] = bad
    with pytest.raises(KeyError, match="nope"):
        ptd[0] = TensorDict({"done": torch.tensor(True), "nope": torch.ones(())}, [])
    with pytest.raises(IndexError):
        ptd[torch.tensor([0, 9])] = TensorDict({"done": torch.ones(2, dtype=torch.bool)}, [2])
    again = reopen(ptd)
    assert again["done"][0].item() is False
    assert torch.equal(again["obs"], sample()["obs"])
    again.close()


def test_bad_set_raises_with_key_and_shapes(ptd):
    with pytest.raises(RuntimeError, match=r"batch dimension mismatch.*'obs'"):
        ptd["obs"] = torch.zeros(5, 4)
    with pytest.raises(TypeError, match="cfg2"):
        ptd["cfg2"] = NonTensorData(object(), batch_size=[6])
    assert "cfg2" not in ptd
    assert torch.equal(ptd["obs"], sample()["obs"])
    with pytest.raises(KeyError, match="missing"):
        ptd["missing"]
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        ptd.batch_size = [6, 5]
    assert ptd.batch_size == torch.Size([6])


def test_read_only_and_locked_refuse_writes(ptd):
    again = reopen(ptd, mode="r")
    with pytest.raises(OSError, match="read-only"):
        again["obs"] = torch.zeros(6, 4)
    again.close()
    writable = reopen(again, mode="r+")
    writable.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        writable["obs"] = torch.zeros(6, 5)  # replacing the array
    with pytest.raises(RuntimeError, match="locked"):
        writable["new"] = torch.zeros(6)
    writable["obs"] = torch.ones(6, 4)  # in place, as upstream
    writable.set_(("next", "reward"), torch.ones(6, 1))
    writable[0] = TensorDict({"done": torch.tensor(True)}, [])
    writable.unlock_()
    writable["obs"] = torch.zeros(6, 5)
    again = reopen(writable)
    assert again["obs"].shape == (6, 5) and "new" not in again
    assert again["next", "reward"].sum() == 6 and again["done"][0].item() is True
    again.close()


def test_failed_save_keeps_the_previous_file(tmp_path, backend):
    path = tmp_path / f"keep.{backend}"
    PersistentTensorDict.from_dict(TensorDict(a=torch.ones(3), batch_size=[3]), path,
                                   backend=backend).close()
    bad = TensorDict(a=torch.zeros(3), batch_size=[3])
    bad["obj"] = NonTensorData(object(), batch_size=[3])
    with pytest.raises(TypeError, match="obj"):
        PersistentTensorDict.from_dict(bad, path, backend=backend)
    assert sorted(os.listdir(tmp_path)) == [path.name]
    with PersistentTensorDict(filename=path, backend=backend) as again:
        assert torch.equal(again["a"], torch.ones(3))


def test_batch_size_given_or_guessed(tmp_path, backend):
    path = tmp_path / f"plain.{backend}"
    PersistentTensorDict.from_dict({"x": torch.zeros(4, 3), "y": torch.zeros(4, 3, 2)}, path,
                                   backend=backend).close()
    with PersistentTensorDict(filename=path, backend=backend, batch_size=[4, 3]) as given:
        assert given.batch_size == torch.Size([4, 3])
        assert given[1, 2]["y"].shape == torch.Size([2])


def test_context_manager_closes_the_file(tmp_path, backend):
    path = tmp_path / f"ctx.{backend}"
    PersistentTensorDict.from_dict({"x": torch.zeros(2)}, path, backend=backend,
                                   batch_size=[2]).close()
    with PersistentTensorDict(filename=path, backend=backend) as ptd:
        with ptd.unlock_():  # nested contexts of the TensorDict keep working
            assert ptd["x"].shape == (2,)
    assert ptd._root is None


def test_unknown_format_names_the_package():
    with pytest.raises(ModuleNotFoundError, match="pip install tensordict-parquet"):
        get_format("parquet")
    with pytest.raises(ValueError, match="not the name"):
        get_format("../evil")


def test_pickled_as_a_location_for_worker_processes(ptd):
    import pickle

    ptd["next", "deep"].batch_size = [6, 2]
    clone = pickle.loads(pickle.dumps(ptd["next", "deep"]))
    assert clone.batch_size == torch.Size([6, 2])
    assert torch.equal(clone["ids"], ptd["next", "deep", "ids"])
    assert len(pickle.dumps(ptd)) < 1000  # the location, not the data
    clone.close()
    ptd.close()
    reader = PersistentTensorDict(filename=ptd.filename, backend=ptd._format.name)
    ctx = torch.multiprocessing.get_context("spawn")
    with ctx.Pool(2) as pool:
        sums = pool.starmap(sum_of_rows, [(reader, slice(0, 3)), (reader, slice(3, 6))])
    assert sum(sums) == sample()["obs"].sum().item()
    reader.close()


def test_from_schema_allocates_nothing_in_memory(tmp_path, backend):
    path = tmp_path / f"big.{backend}"
    schema = {"obs": ([64, 64, 3], torch.uint8), "next": {"reward": ([], torch.float32)}}
    ptd = TensorDict.from_schema(schema, batch_size=[2000], storage=backend, filename=path)
    assert isinstance(ptd, PersistentTensorDict)
    assert ptd.get_item_shape("obs") == torch.Size([2000, 64, 64, 3])
    ptd[7] = TensorDict({"obs": torch.ones(64, 64, 3, dtype=torch.uint8)}, [])
    assert ptd[6:8]["obs"].sum(dim=(1, 2, 3)).tolist() == [0, 64 * 64 * 3]
    ptd.close()
    size = sum(f.stat().st_size for f in path.rglob("*")) if path.is_dir() else path.stat().st_size
    assert size < 2_000_000  # the 24 MB of zeros were never written
