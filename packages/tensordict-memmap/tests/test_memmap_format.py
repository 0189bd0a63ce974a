"""The on-disk format: upstream 0.15.3 fixtures, byte-for-byte meta.json, key escaping,
pickle opt-in, replacing earlier saves, and errors on damaged folders."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tensordict import NonTensorData, TensorDict

FIXTURES = Path("/work/shared/fixtures/upstream-tensordict-0.15.3")
needs_fixtures = pytest.mark.skipif(not FIXTURES.exists(), reason="upstream fixtures not found")


@pytest.fixture
def fixtures(tmp_path):
    """A private copy of the fixtures (loading maps files read-write)."""
    return Path(shutil.copytree(FIXTURES, tmp_path / "fixtures"))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


# -- upstream fixtures ---------------------------------------------------------------------------
@needs_fixtures
@pytest.mark.parametrize("name", ["nested_td", "mlp_params"])
def test_fixture_values_match_expected_json(fixtures, name):
    expected = json.loads((fixtures / "expected.json").read_text())[name]
    td = TensorDict.load_memmap(fixtures / name)
    assert list(td.batch_size) == expected["batch_size"]
    leaves = {".".join(k) if isinstance(k, tuple) else k: v
              for k, v in td.items(include_nested=True, leaves_only=True)
              if isinstance(v, torch.Tensor)}
    assert set(leaves) == set(expected["leaves"])
    for key, want in expected["leaves"].items():
        got = leaves[key]
        assert str(got.dtype) == want["dtype"] and list(got.shape) == want["shape"], key
        assert got.double().reshape(-1).tolist() == pytest.approx(want["values"]), key


@needs_fixtures
def test_fixture_non_tensor_entries(fixtures):
    nested = TensorDict.load_memmap(fixtures / "nested_td")
    assert nested["label"] == "a string"
    td = TensorDict.load_memmap(fixtures / "nontensor_td")
    assert td.batch_size == (2,) and td["num"].tolist() == [0, 1]
    assert td["tags"] == ["a", "b"] and td["note"] == "shared"
    assert td[1]["tags"] == "b"


@needs_fixtures
def test_fixture_params_equal_torch_save(fixtures):
    state = torch.load(fixtures / "mlp_state_dict.pt", weights_only=True)
    params = TensorDict.load_memmap(fixtures / "mlp_params")
    for name, value in state.items():
        assert torch.equal(params.get(tuple(name.split("."))), value), name
    layer = TensorDict.load_memmap(fixtures / "mlp_params" / "2")
    assert torch.equal(layer["bias"], state["2.bias"])


@needs_fixtures
def test_we_write_the_fixture_byte_for_byte(fixtures, tmp_path):
    td = TensorDict(
        {"obs": torch.arange(12, dtype=torch.float32).reshape(3, 4),
         "action": torch.tensor([1, 0, 2]), "done": torch.tensor([False, True, False]),
         "half": torch.ones(3, 2, dtype=torch.bfloat16),
         "next": {"obs": torch.arange(12, dtype=torch.float32).reshape(3, 4) + 1,
                  "reward": torch.tensor([[0.5], [1.0], [-1.0]])},
         "label": "a string"},
        batch_size=[3],
    )
    td.memmap(tmp_path / "ours")
    assert _files(tmp_path / "ours") == _files(fixtures / "nested_td")
    params = TensorDict.load_memmap(fixtures / "mlp_params").clone()
    params.memmap(tmp_path / "params")
    assert _files(tmp_path / "params") == _files(fixtures / "mlp_params")


@needs_fixtures
def test_format_zero_without_version_fields(fixtures):
    for meta_path in (fixtures / "nested_td").rglob("meta.json"):
        meta = json.loads(meta_path.read_text())
        for field in ("_format_version", "_class"):
            meta.pop(field, None)
        meta_path.write_text(json.dumps(meta))
    td = TensorDict.load_memmap(fixtures / "nested_td")
    assert td["next", "reward"].tolist() == [[0.5], [1.0], [-1.0]] and td["label"] == "a string"


def test_reference_layout_meta_json(tmp_path):
    td = TensorDict({"a": torch.arange(6, dtype=torch.float32).reshape(3, 2),
                     "nested": {"b": torch.zeros(3, dtype=torch.int64),
                                "c": torch.ones(3, 4, dtype=torch.bool)},
                     "text": "hello"}, batch_size=[3], names=["t"])
    td["nested", "d"] = torch.ones(3, 1, dtype=torch.bfloat16)
    td.memmap(tmp_path)
    assert (tmp_path / "meta.json").read_text() == (
        '{"a": {"device": "cpu", "shape": [3, 2], "dtype": "torch.float32", "is_nested": false}, '
        '"nested": {"type": "TensorDict"}, "text": {"type": "NonTensorData"}, "shape": [3], '
        '"device": "cpu", "_type": "<class \'tensordict._td.TensorDict\'>", "_format_version": 1, '
        '"_class": "tensordict:TensorDict", "_names": ["t"]}')
    assert (tmp_path / "text" / "meta.json").read_text() == (
        '{"_type": "<class \'tensordict.tensorclass.NonTensorData\'>", "data": "hello", '
        '"_metadata": null, "_is_non_tensor": true}')
    names = ("b.memmap", "c.memmap", "d.memmap")
    sizes = {name: os.path.getsize(tmp_path / "nested" / name) for name in names}
    assert sizes == {"b.memmap": 24, "c.memmap": 12, "d.memmap": 6}


# -- keys and file names -------------------------------------------------------------------------
ESCAPED = {"key with space": "key%20with%20space.memmap", "a/b": "a%2Fb.memmap",
           "": "%.memmap", "..": "%2E%2E.memmap", ".": "%2E.memmap", "%x": "%25x.memmap",
           "tab\tx": "tab%09x.memmap", "é": "é.memmap", "a.b": "a.b.memmap"}


def test_keys_are_escaped_as_upstream(tmp_path):
    td = TensorDict({key: torch.full((2,), float(i)) for i, key in enumerate(ESCAPED)}, [2])
    td.memmap(tmp_path)
    assert sorted(os.listdir(tmp_path)) == sorted([*ESCAPED.values(), "meta.json"])
    loaded = TensorDict.load_memmap(tmp_path)
    for i, key in enumerate(ESCAPED):
        assert loaded[key].tolist() == [float(i)] * 2


MALICIOUS = ["../escape", "../../etc/passwd", "/abs/path", "..", "a/../../b", "",
             "\x00nul", "sub/../../x"]


def test_malicious_keys_never_leave_the_prefix(tmp_path):
    prefix = tmp_path / "inside" / "data"
    td = TensorDict({key: torch.ones(1) for key in MALICIOUS})
    td["nested"] = TensorDict({key: torch.zeros(1) for key in MALICIOUS})
    td["../evil_dir"] = TensorDict(x=torch.ones(1))
    td.memmap(prefix)
    outside = [p for p in tmp_path.rglob("*") if prefix not in p.parents and p != prefix
               and p not in prefix.parents]
    assert outside == []
    loaded = TensorDict.load_memmap(prefix)
    assert set(loaded.keys()) == {*MALICIOUS, "nested", "../evil_dir"}
    assert set(loaded["nested"].keys()) == set(MALICIOUS)


def test_raw_keys_refuse_invalid_names(tmp_path):
    with pytest.raises(ValueError, match="not a valid file name"):
        TensorDict({"a/b": torch.ones(1)}).memmap(tmp_path, robust_key=False)
    assert not (tmp_path / "meta.json").exists() and not (tmp_path / "a").exists()
    TensorDict({"key with space": torch.ones(1)}).memmap(tmp_path / "raw", robust_key=False)
    assert (tmp_path / "raw" / "key with space.memmap").exists()  # as older tensordict wrote
    assert TensorDict.load_memmap(tmp_path / "raw")["key with space"].tolist() == [1.0]


def test_colliding_and_reserved_names(tmp_path):
    with pytest.raises(ValueError, match="'shape'.*rename it"):
        TensorDict({"shape": torch.ones(1)}).memmap(tmp_path / "r")
    with pytest.raises(ValueError, match="collide"):
        TensorDict({"x": torch.ones(1), "x.memmap": {"y": torch.ones(1)}}).memmap(tmp_path / "c")
    with pytest.raises(ValueError, match="longer than the 255 bytes"):
        TensorDict({"k" * 250: torch.ones(1)}).memmap(tmp_path / "long")
    assert not (tmp_path / "long").exists()
    td = TensorDict({"meta.json": {"y": torch.ones(1)}})
    td.memmap(tmp_path / "m")
    assert TensorDict.load_memmap(tmp_path / "m")["meta.json", "y"].tolist() == [1.0]


# -- non-tensor data -----------------------------------------------------------------------------
def test_json_and_pickled_non_tensor_data(tmp_path):
    td = TensorDict({"s": "text", "n": NonTensorData(None), "d": NonTensorData({"k": [1, 2]}),
                     "set": NonTensorData({1, 2}), "tup": NonTensorData((1, 2))})
    td.memmap(tmp_path)
    assert json.loads((tmp_path / "d" / "meta.json").read_text())["data"] == {"k": [1, 2]}
    assert "data" not in json.loads((tmp_path / "set" / "meta.json").read_text())
    assert not (tmp_path / "tup" / "other.pickle").exists()  # tuples have a JSON encoding
    assert (tmp_path / "set" / "other.pickle").exists()
    loaded = TensorDict.load_memmap(tmp_path)  # a set is plain data: no allow_pickle needed
    assert loaded["set"] == {1, 2} and loaded["tup"] == (1, 2) and loaded["n"] is None
    assert loaded["d"] == {"k": [1, 2]} and loaded["s"] == "text"


def test_pickled_non_tensor_stack(tmp_path):
    td = TensorDict(objs=NonTensorData({1}, batch_size=[2]), batch_size=[2])
    td["objs"] = [{1}, {2}]
    td.memmap(tmp_path)
    meta = json.loads((tmp_path / "objs" / "meta.json").read_text())
    assert meta["data"] == "pickle.pkl" and (tmp_path / "objs" / "pickle.pkl").exists()
    assert TensorDict.load_memmap(tmp_path)["objs"] == [{1}, {2}]
    td["objs"] = [{1}, print]
    td.memmap(tmp_path)
    with pytest.raises(pickle.UnpicklingError, match="objs/pickle.pkl .*needs builtins.print"):
        TensorDict.load_memmap(tmp_path)
    assert TensorDict.load_memmap(tmp_path, allow_pickle=True)["objs"] == [{1}, print]


# -- saving over an earlier save -----------------------------------------------------------------
def test_resave_removes_stale_leaves_keeps_foreign_files(tmp_path):
    TensorDict({"a": torch.zeros(2), "old": torch.zeros(2), "n": {"x": torch.zeros(2)},
                "s": "gone"}, [2]).memmap(tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "mine").mkdir()
    (tmp_path / "foreign.memmap").write_bytes(b"not from a save")
    TensorDict({"a": torch.ones(2)}, [2]).memmap(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["a.memmap", "foreign.memmap", "meta.json",
                                            "mine", "notes.txt"]
    assert list(TensorDict.load_memmap(tmp_path).keys()) == ["a"]


def test_stale_sub_folder_keeps_foreign_files(tmp_path):
    TensorDict({"n": {"x": torch.zeros(2), "m": {"y": torch.zeros(2)}}}, [2]).memmap(tmp_path)
    (tmp_path / "n" / "README").write_text("mine")
    TensorDict({"b": torch.ones(2)}, [2]).memmap(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["b.memmap", "meta.json", "n"]
    assert os.listdir(tmp_path / "n") == ["README"]  # the save's files and sub-folder went


def test_resave_merges_foreign_files_at_every_depth(tmp_path):
    TensorDict({"a": torch.zeros(2), "gone": torch.zeros(2), "n": {"x": torch.zeros(2),
                "m": {"y": torch.zeros(2)}}, "s": "old"}, [2]).memmap(tmp_path)
    (tmp_path / "notes.txt").write_text("root")
    (tmp_path / "n" / "notes.txt").write_text("n")
    (tmp_path / "n" / "m" / "notes.txt").write_text("m")
    (tmp_path / "n" / "mine").mkdir()
    (tmp_path / "n" / "mine" / "data").write_text("kept")
    TensorDict({"a": torch.ones(2), "n": {"x": torch.ones(2), "z": torch.ones(2)}},
               [2]).memmap(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["a.memmap", "meta.json", "n", "notes.txt"]
    assert sorted(os.listdir(tmp_path / "n")) == ["m", "meta.json", "mine", "notes.txt",
                                                  "x.memmap", "z.memmap"]
    assert os.listdir(tmp_path / "n" / "m") == ["notes.txt"]  # the stale save's files went
    assert (tmp_path / "n" / "mine" / "data").read_text() == "kept"
    assert [(tmp_path / p / "notes.txt").read_text() for p in ("", "n", "n/m")] == [
        "root", "n", "m"]
    loaded = TensorDict.load_memmap(tmp_path)
    assert set(loaded.keys(include_nested=True, leaves_only=True)) == {
        "a", ("n", "x"), ("n", "z")}
    assert loaded["n", "z"].tolist() == [1.0, 1.0]
    assert [name for name in os.listdir(tmp_path.parent)
            if name.startswith(f".{tmp_path.name}.")] == []


def test_resave_swapped_leaves_of_the_same_folder(tmp_path):
    TensorDict({"a": torch.zeros(4), "b": torch.ones(4)}).memmap(tmp_path)
    loaded = TensorDict.load_memmap(tmp_path)
    swapped = TensorDict({"a": loaded["b"], "b": loaded["a"]})
    swapped.memmap(tmp_path, copy_existing=True)  # each file is read while the other is written
    again = TensorDict.load_memmap(tmp_path)
    assert again["a"].tolist() == [1.0] * 4 and again["b"].tolist() == [0.0] * 4


def test_resave_leaves_open_maps_on_the_old_data(tmp_path):
    first = TensorDict({"a": torch.zeros(4)}).memmap(tmp_path)
    TensorDict({"a": torch.ones(4)}).memmap(tmp_path)
    assert first["a"].tolist() == [0.0] * 4  # saves are atomic: new files, swapped in
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [1.0] * 4


def test_interrupted_save_keeps_the_old_save(tmp_path, monkeypatch):
    from tensordict.memmap import _tensor

    TensorDict({"a": torch.zeros(3), "b": torch.zeros(3)}, [3]).memmap(tmp_path)
    written = []
    original = _tensor.write_file

    def crash_after_one(filename, *args):
        if written:
            raise KeyboardInterrupt("power cut")
        written.append(filename)
        original(filename, *args)

    monkeypatch.setattr(_tensor, "write_file", crash_after_one)
    source = TensorDict({"a": torch.ones(3), "b": torch.ones(3)}, [3])
    with pytest.raises(KeyboardInterrupt):
        source.memmap_(tmp_path)
    assert not source.is_locked and type(source["a"]) is torch.Tensor
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [0.0] * 3  # no mix of old and new
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]
    assert not [name for name in os.listdir(tmp_path.parent) if ".tmp-" in name]


# -- damaged folders -----------------------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    TensorDict({"a": torch.arange(4.0), "n": {"b": torch.ones(4, 2)}}, [4]).memmap(tmp_path)
    return tmp_path


def test_missing_folder_or_meta(tmp_path, saved):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        TensorDict.load_memmap(tmp_path / "nope")
    (saved / "n" / "meta.json").unlink()
    with pytest.raises(FileNotFoundError, match="n/meta.json is missing"):
        TensorDict.load_memmap(saved)
    with pytest.raises(ValueError, match="is a file"):
        TensorDict.load_memmap(saved / "a.memmap")


def test_missing_leaf(saved):
    (saved / "n" / "b.memmap").unlink()
    with pytest.raises(FileNotFoundError, match="n/b.memmap does not exist"):
        TensorDict.load_memmap(saved)
    assert not (saved / "n" / "b.memmap").exists()


def test_truncated_leaf(saved):
    with open(saved / "a.memmap", "r+b") as file:
        file.truncate(10)
    with pytest.raises(ValueError, match="a.memmap is truncated.*needs 16 bytes, the file has 10"):
        TensorDict.load_memmap(saved)
    assert os.path.getsize(saved / "a.memmap") == 10  # loading never grows a file


@pytest.mark.parametrize("text, message", [
    ('{"a": {"device": "cpu", "shape": [4], "dtype": "torch.float32"', "not valid JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"a": {"shape": [4], "dtype": "torch.nope"}, "shape": [4]}', "unknown dtype"),
    ('{"a": {"shape": "x", "dtype": "torch.float32"}, "shape": [4]}', "shape of 'a'"),
    ('{"a": {"shape": [5], "dtype": "torch.float32"}, "shape": [4]}', "truncated"),
    ('{"a": {"shape": [4], "dtype": "torch.float32"}, "shape": [3]}', "not describe a valid"),
    ('{"a": 3, "shape": [4]}', "the entry 'a' is 3"),
])
def test_corrupt_meta_json(saved, text, message):
    (saved / "meta.json").write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        TensorDict.load_memmap(saved)
    assert str(saved) in str(info.value)


def test_no_temporary_files_left(saved):
    assert not [p for p in saved.rglob("*") if p.name.endswith(".tmp")]


# -- without the plugin --------------------------------------------------------------------------
def test_core_alone_says_what_to_install():
    from tensordict import plugins
    from tensordict.memmap._methods import METHODS

    assert set(METHODS) <= {k for k, v in plugins.PROVIDED_BY.items() if v == "memmap"}
    code = (
        "import torch\n"
        "from tensordict import TensorDict\n"
        "from tensordict.plugins import MissingMethodError\n"
        f"for name in {sorted(METHODS)!r}:\n"
        "    try:\n"
        "        getattr(TensorDict(a=torch.ones(1)), name)\n"
        "    except MissingMethodError as err:\n"
        "        assert 'install tensordict-memmap' in str(err), err\n"
        "    else:\n"
        "        raise SystemExit(name + ' did not fail')\n"
        "try:\n"
        "    TensorDict.load_memmap('x')\n"
        "except MissingMethodError as err:\n"
        "    print(err)\n"
    )
    env = dict(os.environ, TENSORDICT_DISABLED_PLUGINS="memmap")
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "install tensordict-memmap, or tensordict[memmap]" in result.stdout
