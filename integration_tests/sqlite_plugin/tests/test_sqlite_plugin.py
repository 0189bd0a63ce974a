"""The example third-party ``sqlite`` backend (integration_tests/sqlite_plugin), installed
with tensordict-core alone: every check reads back from a freshly opened file."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from tensordict import NonTensorStack, TensorDict, lazy_stack, plugins
from tensordict.plugins import PLUGIN_API_VERSION


def sample() -> TensorDict:
    td = TensorDict(
        obs=torch.arange(24.0).reshape(6, 4),
        steps=torch.arange(6),
        done=torch.tensor([False, True] * 3),
        half=torch.linspace(0, 1, 6, dtype=torch.bfloat16),
        label="walk",
        tags=NonTensorStack.from_list(["a", "b", "c", "d", "e", "f"]),
        nested=TensorDict(
            reward=torch.arange(6, dtype=torch.float64).unsqueeze(-1),
            empty=TensorDict(batch_size=[6, 2]),
            deeper=TensorDict(mask=torch.ones(6, 3, dtype=torch.bool), batch_size=[6, 3]),
            batch_size=[6],
        ),
        batch_size=[6],
    )
    return td.set_non_tensor("config", {"lr": 0.1, "sizes": (3, 4)})


def assert_same(stored, expected) -> None:
    assert stored.batch_size == expected.batch_size
    assert set(stored.keys(True, True)) == set(expected.keys(True, True))
    for key, value in expected.items(True, True):
        if isinstance(value, torch.Tensor):
            assert stored[key].dtype == value.dtype, key
            assert torch.equal(stored[key], value), key
        else:
            assert stored[key] == expected[key], key
    for key, value in expected.items(True):
        if isinstance(value, TensorDict):
            assert stored[key].batch_size == value.batch_size, key


@pytest.fixture
def path(tmp_path):
    return os.fspath(tmp_path / "data.db")


def reopened(path, mode="r"):
    return TensorDict.load(path, mode=mode)


def test_found_through_its_entry_point():
    dist = importlib.metadata.distribution("tensordict-sqlite-example")
    (entry_point,) = [ep for ep in dist.entry_points if ep.group == "tensordict"]
    assert entry_point.value == "td_sqlite._plugin"
    assert "td_sqlite" in plugins.list_plugins()
    assert isinstance(plugins.storage_backends()["sqlite"], plugins.StorageBackend)
    assert PLUGIN_API_VERSION in entry_point.load().TENSORDICT_PLUGIN_API


@pytest.mark.parametrize("index", [slice(None), 2], ids=["batched", "0-dim"])
def test_save_and_load_round_trip(path, index):
    td = sample()[index]
    stored = td.save(path, backend="sqlite")
    assert type(stored).__name__ == "SqliteTensorDict"
    stored.close()
    assert plugins.storage_backends()["sqlite"].can_load(path)
    with reopened(path) as loaded:
        assert type(loaded).__name__ == "SqliteTensorDict"
        assert_same(loaded, td)
        assert_same(loaded.to_tensordict(), td)
    with TensorDict.load(path, backend="sqlite") as loaded:
        assert loaded["config"] == {"lr": 0.1, "sizes": (3, 4)}


def test_from_schema_creates_a_file_of_zeros(path):
    schema = {"obs": ([3, 2], torch.uint8), "next": {"reward": ([], torch.float64)}}
    stored = TensorDict.from_schema(schema, batch_size=[5], storage="sqlite", path=path)
    stored.close()
    with reopened(path) as loaded:
        assert loaded.batch_size == (5,) and loaded["next"].batch_size == (5,)
        assert loaded["obs"].shape == (5, 3, 2) and loaded["obs"].dtype == torch.uint8
        assert not loaded["obs"].any() and loaded["next", "reward"].dtype == torch.float64
    with pytest.raises(TypeError, match="needs path="):
        TensorDict.from_schema(schema, batch_size=[5], storage="sqlite")


def test_to_sqlite_method_and_repr(path):
    stored = sample().to_sqlite(path)
    assert repr(stored).startswith("SqliteTensorDict(batch_size=[6], fields={")
    assert "deeper: [3]{mask: bool[]}" in repr(stored)
    assert stored.rows_read == 0  # the repr reads no row
    stored.close()


def test_rows_are_read_lazily(path):
    sample().save(path, backend="sqlite").close()
    with reopened(path) as stored:
        view = stored[2:4]
        assert stored.rows_read == 0
        assert torch.equal(view["obs"], sample()["obs"][2:4])
        assert stored.rows_read == 2
        assert torch.equal(stored[torch.tensor([5, 1, 5])]["nested", "reward"],
                           sample()["nested", "reward"][[5, 1, 5]])
        assert stored.rows_read == 4  # rows 1 and 5, each read once
        assert stored[3]["steps"].item() == 3 and stored.rows_read == 5


@pytest.mark.parametrize("index", [
    1, slice(1, 5, 2), torch.tensor([4, 0]), torch.tensor([True, False] * 3), (slice(None), 1),
    (torch.tensor([0, 3]), 1),
], ids=["int", "step-slice", "tensor", "mask", "column", "rows-and-column"])
def test_indexed_writes_go_through_to_the_file(path, index):
    expected = TensorDict(obs=torch.arange(48.0).view(6, 2, 4), steps=torch.arange(12).view(6, 2),
                          nested={"reward": torch.arange(12.0).view(6, 2, 1)},
                          batch_size=[6, 2])
    expected.save(path, backend="sqlite").close()
    value = expected[index].apply(lambda x: torch.full_like(x, 7))
    expected[index] = value
    with reopened(path, "r+") as stored:
        stored[index] = value
    with reopened(path) as loaded:
        assert_same(loaded, expected)


def test_entries_set_nested_and_deleted_persist(path):
    expected = sample().exclude("done", ("nested", "deeper"))  # (bools take no += 1)
    expected.save(path, backend="sqlite").close()
    with reopened(path, "r+") as stored:
        stored["extra"] = torch.ones(6, 2)
        stored["nested", "more", "deep"] = torch.zeros(6)
        stored["nested", "reward"] = torch.full((6, 1), 3.0, dtype=torch.float64)
        stored["label"] = "run"
        del stored["steps"]
        stored += 1  # in memory, then written back in one transaction
    expected["extra"] = torch.ones(6, 2)
    expected["nested", "more", "deep"] = torch.zeros(6)
    expected["nested", "reward"] = torch.full((6, 1), 3.0, dtype=torch.float64)
    expected["label"] = "run"
    del expected["steps"]
    expected += 1
    with reopened(path) as loaded:
        assert_same(loaded, expected)


def test_a_bad_write_changes_nothing(path):
    expected = sample()
    expected.save(path, backend="sqlite").close()
    with reopened(path, "r+") as stored:
        bad = TensorDict(obs=torch.ones(4), nested={"reward": torch.ones(5)})  # 2nd misfits
        with pytest.raises(RuntimeError, match=r"shape \(5,\) into \('nested', 'reward'\)"):
            stored[0] = bad
        with pytest.raises(KeyError, match="missing"):
            stored[0] = TensorDict(obs=torch.ones(4), missing=torch.ones(()))
        with pytest.raises(TypeError, match="one value per non-tensor entry"):
            stored[0] = TensorDict(obs=torch.ones(4), label="other")
        with pytest.raises(RuntimeError, match="batch"):
            stored["obs"] = torch.ones(5, 4)
        with pytest.raises(TypeError, match=r"'odd'.*only plain data is stored"):
            stored["odd"] = NonTensorStack.from_list([object()] * 6)
        with pytest.raises(RuntimeError, match="cannot write"):
            stored.update_(TensorDict(steps=torch.zeros(6, dtype=torch.long),
                                      obs=torch.zeros(6, 5), batch_size=[6]))
    with reopened(path) as loaded:
        assert_same(loaded, expected)


def test_read_only_and_locked_refuse_writes(path):
    expected = sample()
    expected.save(path, backend="sqlite").close()
    with reopened(path) as stored:
        with pytest.raises(OSError, match="read-only"):
            stored["obs"] = torch.zeros(6, 4)
        with pytest.raises(OSError, match="read-only"):
            stored[0] = stored[1].to_tensordict()
    with reopened(path, "r+") as stored:
        stored.lock_()
        with pytest.raises(RuntimeError, match="locked"):
            stored["new"] = torch.zeros(6)
        with pytest.raises(RuntimeError, match="locked"):
            stored["nested", "new"] = torch.zeros(6)
        stored[0] = stored[1].to_tensordict().exclude("tags")  # in place: allowed locked
        expected[0] = expected[1].exclude("tags")
    with reopened(path) as loaded:
        assert_same(loaded, expected)


def test_a_lazy_stack_of_stores_writes_into_each(tmp_path):
    parts = []
    for i in range(2):
        part = TensorDict(x=torch.full((3,), float(i)), batch_size=[3])
        parts.append(part.save(os.fspath(tmp_path / f"{i}.db"), backend="sqlite"))
    stack = lazy_stack(parts)
    stack[:, 1] = TensorDict(x=torch.tensor([5.0, 6.0]), batch_size=[2])
    for part in parts:
        part.close()
    for i, value in enumerate((5.0, 6.0)):
        with reopened(os.fspath(tmp_path / f"{i}.db")) as loaded:
            assert loaded["x"].tolist() == [float(i), value, float(i)]


CRASH = """
import os, sys, torch
from tensordict import TensorDict
import td_sqlite._store as store
path, where = sys.argv[1], sys.argv[2]
written = []
original = store.Store.write_rows
def write_rows(self, *args):
    original(self, *args)
    written.append(1)
    if len(written) == 2:  # the process dies in the middle of the write
        os._exit(3)
store.Store.write_rows = write_rows
if where == "index":
    stored = TensorDict.load(path, mode="r+")
    stored[1] = TensorDict(obs=torch.zeros(4), steps=torch.tensor(-1),
                           nested={"reward": torch.zeros(1, dtype=torch.float64)})
elif where == "update":
    stored = TensorDict.load(path, mode="r+")
    stored.update_(stored.to_tensordict().apply(lambda x: x * 0))
else:
    TensorDict(obs=torch.zeros(6, 4), steps=torch.zeros(6), batch_size=[6]).save(
        path, backend="sqlite")
"""


@pytest.mark.parametrize("where", ["index", "update", "save"])
def test_a_crash_in_a_write_leaves_the_file_as_it_was(path, tmp_path, where):
    expected = sample().exclude("tags", "label", "config")
    expected.save(path, backend="sqlite").close()
    script = tmp_path / "crash.py"
    script.write_text(textwrap.dedent(CRASH))
    result = subprocess.run([sys.executable, str(script), path, where], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 3, result.stderr
    with reopened(path) as loaded:
        assert_same(loaded, expected)


def test_other_processes_read_while_one_writes(path):
    sample().save(path, backend="sqlite").close()
    reader = ("import sys, torch\nfrom tensordict import TensorDict\n"
              "with TensorDict.load(sys.argv[1], mode='r') as s:\n"
              "    print(s['obs'][:, 0].tolist())")
    with reopened(path, "r+") as stored, stored._store.transaction():
        stored[0] = TensorDict(obs=torch.full((4,), -1.0), steps=torch.tensor(0))
        seen = subprocess.run([sys.executable, "-c", reader, path], capture_output=True,
                              text=True, timeout=120, check=True).stdout
        assert seen.split() == ["[0.0,", "4.0,", "8.0,", "12.0,", "16.0,", "20.0]"]
    seen = subprocess.run([sys.executable, "-c", reader, path], capture_output=True,
                          text=True, timeout=120, check=True).stdout
    assert seen.split()[0] == "[-1.0,"
