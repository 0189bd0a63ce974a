"""Saves that never lose data: atomic saves killed at random moments or hitting a full disk,
MemoryMappedTensor shape errors, the JSON encoding of non-tensor values, and loading
hand-crafted malicious folders."""

from __future__ import annotations

import errno
import json
import math
import multiprocessing
import os
import pickle
import random
import shutil
import signal
import stat
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch

from tensordict import MemoryMappedTensor, NonTensorData, NonTensorStack, TensorDict

FORK = multiprocessing.get_context("fork")


def _leftovers(prefix) -> list[str]:
    """The temporary and old folders of saves to ``prefix`` left beside it."""
    return sorted(name for name in os.listdir(prefix.parent)
                  if name.startswith(f".{prefix.name}."))


def _listing(folder) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes()
            for path in sorted(folder.rglob("*")) if path.is_file()}


# -- killed at random moments -------------------------------------------------------------------
N = 1024
#: key -> (shape, dtype, offset of its value): ~290 MB in all
LEAVES = {
    "obs": ((N, 32768), torch.float32, 0),
    "action": ((N, 4096), torch.int64, 1),
    "done": ((N, 1), torch.bool, 2),
    ("next", "obs"): ((N, 16384), torch.float32, 3),
    ("next", "reward"): ((N, 1), torch.float32, 4),
    ("next", "deep", "x"): ((N, 8192), torch.int64, 5),
}


def _value(version: int, offset: int, dtype: torch.dtype) -> float | bool:
    return bool(version % 2) if dtype is torch.bool else version * 10 + offset


def _info(version: int) -> dict:
    return {"v": version, "t": (version, b"\x00raw", -math.inf)}


def _big(version: int) -> TensorDict:
    """About 300 MB, nested, with non-tensors; every value is unique to ``version``."""
    td = TensorDict({"next": TensorDict({"deep": TensorDict(batch_size=[N])}, [N])}, [N])
    for key, (shape, dtype, offset) in LEAVES.items():
        td[key] = torch.full(shape, _value(version, offset, dtype), dtype=dtype)
    td["label"] = f"version-{version}"
    td["info"] = NonTensorData(_info(version))
    return td


def _saved_version(prefix) -> int:
    """The version saved at ``prefix``, after checking every leaf is exactly that one."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # loaded from the old save set aside
        td = TensorDict.load_memmap(prefix)
    version = td["info"]["v"]
    assert set(td.keys(True, True)) == set(LEAVES)
    assert set(td.keys()) == {"obs", "action", "done", "next", "label", "info"}
    for key, (shape, dtype, offset) in LEAVES.items():
        leaf = td[key]
        assert leaf.shape == shape and leaf.dtype == dtype, key
        assert bool((leaf == _value(version, offset, dtype)).all()), (key, version)
    assert td["label"] == f"version-{version}" and td["info"] == _info(version)
    return version


def _save_in_child(how: str, td: TensorDict, prefix, pipe) -> None:
    pipe.send("start")
    start = time.perf_counter()
    if how == "memmap_":
        td.memmap_(prefix)
    else:
        td.memmap(prefix)
    pipe.send(time.perf_counter() - start)


def _save_in_a_child(how: str, td: TensorDict, prefix, kill_after: float | None = None):
    """Run the save in a forked child; SIGKILL it ``kill_after`` seconds after the save
    starts. Without ``kill_after``, wait for it and return how long the save took."""
    receiver, sender = FORK.Pipe(duplex=False)
    child = FORK.Process(target=_save_in_child, args=(how, td, prefix, sender))
    child.start()
    assert receiver.poll(60) and receiver.recv() == "start"
    if kill_after is None:
        assert receiver.poll(60)
        duration = receiver.recv()
        child.join(60)
        assert child.exitcode == 0
        return duration
    time.sleep(kill_after)
    os.kill(child.pid, signal.SIGKILL)  # a child already done is a zombie: no error
    child.join(60)
    return None


@pytest.fixture(scope="module")
def big():
    return {1: _big(1), 2: _big(2)}


def _timed(how: str, td: TensorDict, prefix) -> float:
    if how == "fresh" and prefix.exists():
        shutil.rmtree(prefix)
    return _save_in_a_child(how, td, prefix)


@pytest.mark.parametrize("how", ["fresh", "overwrite", "memmap_"])
def test_killed_save_leaves_the_old_or_the_new_save(tmp_path, big, how):
    rng = random.Random(f"killed-{how}")
    prefix = tmp_path / "data"
    big[1].memmap(prefix)
    duration = max(_timed(how, big[version], prefix) for version in (2, 1))
    assert _saved_version(prefix) == 1
    current = 1
    for _ in range(20):
        new = 3 - current
        if how == "fresh" and prefix.exists():
            shutil.rmtree(prefix)
        for name in _leftovers(prefix):  # what the next save would delete first: each save
            if ".tmp-" in name:  # then takes as long as the ones timed
                shutil.rmtree(prefix.parent / name)
        _save_in_a_child(how, big[new], prefix, kill_after=rng.uniform(0, duration))
        if how == "fresh" and not prefix.exists():
            with pytest.raises(FileNotFoundError):
                TensorDict.load_memmap(prefix)  # nothing save-like
            continue
        got = _saved_version(prefix)
        assert got == new if how == "fresh" else got in (current, new)
        current = got
    TensorDict(a=torch.ones(2)).memmap(prefix)  # a complete save cleans what killed ones left
    assert _leftovers(prefix) == [] and TensorDict.load_memmap(prefix)["a"].tolist() == [1, 1]


# -- killed at the worst moments ------------------------------------------------------------------
def _small(version: int) -> TensorDict:
    return TensorDict({"a": torch.full((3, 2), float(version)),
                       "n": {"b": torch.full((3,), version), "s": f"v{version}"}}, [3])


def _killed_at(prefix, td: TensorDict, where: str, calls: int = 1) -> None:
    """Save ``td`` in a child that SIGKILLs itself at its ``calls``-th call of ``where``."""

    def run() -> None:
        import tensordict.memmap._atomic as atomic

        module, name = (atomic, "_merge") if where == "_merge" else (os, where)
        real, seen = getattr(module, name), []

        def kill_then_call(*args, **kwargs):
            seen.append(args)
            if len(seen) == calls:
                os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        setattr(module, name, kill_then_call)
        td.memmap(prefix)

    child = FORK.Process(target=run)
    child.start()
    child.join(60)
    assert child.exitcode == -signal.SIGKILL


def test_killed_between_the_two_renames_loads_the_old_save(tmp_path):
    prefix = tmp_path / "data"
    _small(1).memmap(prefix)
    (prefix / "notes.txt").write_text("mine")
    _killed_at(prefix, _small(2), "rename", calls=2)  # the old save is aside, the new not in
    assert not prefix.exists()
    with pytest.warns(RuntimeWarning, match="interrupted; loading the previous save"):
        loaded = TensorDict.load_memmap(prefix)
    assert loaded["a"].tolist() == [[1.0, 1.0]] * 3 and loaded["n", "s"] == "v1"
    with pytest.warns(RuntimeWarning):
        assert TensorDict.load_memmap(prefix / "n")["b"].tolist() == [1, 1, 1]
    saved = _small(3).memmap(prefix)  # the next save merges the old folder: nothing is lost
    assert (prefix / "notes.txt").read_text() == "mine" and _leftovers(prefix) == []
    assert saved["n", "b"].filename == str(prefix / "n" / "b.memmap")


def test_killed_while_removing_the_old_save(tmp_path):
    prefix = tmp_path / "data"
    _small(1).memmap(prefix)
    (prefix / "n" / "notes.txt").write_text("mine")
    _killed_at(prefix, _small(2), "_merge")
    assert TensorDict.load_memmap(prefix)["n", "s"] == "v2"  # the new save is in place
    assert [name[len(".data."):][:4] for name in _leftovers(prefix)] == ["old-"]
    _small(3).memmap(prefix)  # the old folder of the dead process is merged, then removed
    assert (prefix / "n" / "notes.txt").read_text() == "mine" and _leftovers(prefix) == []


def test_a_live_process_leftovers_are_kept(tmp_path):
    prefix = tmp_path / "data"
    _small(1).memmap(prefix)
    alive = tmp_path / f".data.tmp-{_host()}-{os.getpid()}-0abc"
    alive.mkdir()
    _small(2).memmap(prefix)
    assert alive.exists()  # maybe a save in progress: never touched


def _host() -> str:
    from tensordict.memmap import _atomic

    return _atomic._HOST


# -- a full disk ----------------------------------------------------------------------------------
def _full_disk(monkeypatch, room: int | None) -> list[int]:
    """Make ``os.write`` fail with ENOSPC once ``room`` bytes are written (None: never);
    returns the running count of bytes written."""
    real, written = os.write, [0]

    def write(fd: int, data) -> int:
        if fd <= 2:
            return real(fd, data)
        left = len(data) if room is None else room - written[0]
        if left <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        count = real(fd, memoryview(data)[:left])
        written[0] += count
        return count

    monkeypatch.setattr(os, "write", write)
    return written


def _medium(version: int) -> TensorDict:
    td = _small(version)
    td["x"] = torch.full((3, 1000), version, dtype=torch.int32)
    td["info"] = NonTensorData((version, b"raw"))
    return td


def _bytes_of_a_save(tmp_path, monkeypatch) -> int:
    counter = _full_disk(monkeypatch, None)
    _medium(2).memmap(tmp_path / "count")
    monkeypatch.undo()
    return counter[0]


def test_a_save_writes_each_byte_once(tmp_path, monkeypatch):
    counter = _full_disk(monkeypatch, None)
    _medium(1).memmap(tmp_path / "data")
    _medium(2).memmap(tmp_path / "data", num_threads=2)  # replacing a save copies nothing
    monkeypatch.undo()
    on_disk = sum(len(data) for data in _listing(tmp_path / "data").values())
    assert counter[0] == 2 * on_disk


@pytest.mark.parametrize("num_threads", [0, 2])
def test_full_disk_keeps_the_old_save(tmp_path, monkeypatch, num_threads):
    total = _bytes_of_a_save(tmp_path, monkeypatch)
    prefix = tmp_path / "data"
    _medium(1).memmap(prefix)
    (prefix / "notes.txt").write_text("mine")
    before = _listing(prefix)
    for room in (0, 1, 100, total // 2, total - 1):  # total - 1: the root meta.json fails
        _full_disk(monkeypatch, room)
        with pytest.raises(OSError) as info:
            _medium(2).memmap(prefix, num_threads=num_threads)
        monkeypatch.undo()
        assert info.value.errno == errno.ENOSPC
        assert _listing(prefix) == before and _leftovers(prefix) == []
        loaded = TensorDict.load_memmap(prefix)
        assert loaded["x"].unique().tolist() == [1] and loaded["info"] == (1, b"raw")


@pytest.mark.parametrize("method", ["save", "dumps", "memmap_like", "memmap_"])
def test_full_disk_on_every_way_to_save(tmp_path, monkeypatch, method):
    prefix = tmp_path / "data"
    _medium(1).memmap(prefix)
    before = _listing(prefix)
    source = _medium(2)
    for room in (0, 100):  # no room for a data file, or no room for the meta.json files
        _full_disk(monkeypatch, room)
        with pytest.raises(OSError, match="No space left"):
            getattr(source, method)(prefix)
        monkeypatch.undo()
        assert _listing(prefix) == before and _leftovers(prefix) == []
    assert not source.is_locked and type(source["x"]) is torch.Tensor


def test_full_disk_on_a_fresh_save_and_memmap_(tmp_path, monkeypatch):
    total = _bytes_of_a_save(tmp_path, monkeypatch)
    prefix = tmp_path / "fresh"
    for room in (0, total // 2, total - 1):
        _full_disk(monkeypatch, room)
        with pytest.raises(OSError, match="No space left"):
            _medium(2).memmap(prefix)
        source = _medium(2)
        with pytest.raises(OSError, match="No space left"):
            source.memmap_(prefix, num_threads=2)
        monkeypatch.undo()
        assert not prefix.exists() and _leftovers(prefix) == []  # nothing save-like
        assert not source.is_locked and type(source["x"]) is torch.Tensor  # unchanged
    (tmp_path / "empty").mkdir()  # a fresh save into an existing empty folder
    _full_disk(monkeypatch, total // 2)
    with pytest.raises(OSError):
        _medium(2).memmap(tmp_path / "empty")
    monkeypatch.undo()
    assert os.listdir(tmp_path / "empty") == [] and _leftovers(tmp_path / "empty") == []


# -- what an atomic save leaves -------------------------------------------------------------------
def test_results_map_the_final_paths(tmp_path):
    prefix = tmp_path / "data"
    saved = _medium(1).memmap(prefix)
    source = _medium(2)
    same = source.memmap_(prefix, num_threads=2)
    for td in (saved, same):
        assert td.saved_path == str(prefix) and td["n"].saved_path == str(prefix / "n")
    assert same is source and same["n", "b"].filename == str(prefix / "n" / "b.memmap")
    assert same["x"].filename == str(prefix / "x.memmap")
    same["x"][0, 0] = 7  # writes reach the file at the final path
    assert TensorDict.load_memmap(prefix)["x"][0, 0].item() == 7
    assert saved["x"].unique().tolist() == [1]  # maps of the replaced save keep their data
    assert sorted(os.listdir(tmp_path)) == ["data"]


def test_resaving_in_place_keeps_the_files_shared(tmp_path):
    saved = _small(1).memmap(tmp_path / "data")
    saved.make_memmap("extra", [3])  # rewrites the folder; every file is kept, not copied
    saved["a"][0, 0] = 5.0
    again = TensorDict.load_memmap(tmp_path / "data")
    assert again["a"][0, 0].item() == 5.0 and set(again.keys()) == {"a", "n", "extra"}


def test_permissions_symlinked_prefix_and_atomic_flag(tmp_path):
    target = tmp_path / "real"
    target.mkdir(mode=0o750)
    os.chmod(target, 0o750)
    link = tmp_path / "link"
    link.symlink_to(target)
    _small(1).memmap(link)
    _small(2).memmap(link, atomic=True)
    assert link.is_symlink() and stat.S_IMODE(os.stat(target).st_mode) == 0o750
    assert TensorDict.load_memmap(target)["n", "s"] == "v2"
    with pytest.raises(ValueError, match="atomic=True needs a prefix"):
        _small(1).memmap(atomic=True)
    with pytest.raises(FileExistsError, match="it is a file"):
        _small(1).memmap(tmp_path / "link" / "a.memmap")


def test_what_no_save_wrote_is_kept_or_refused(tmp_path):
    prefix = tmp_path / "data"
    prefix.mkdir()
    (prefix / "n").mkdir()
    (prefix / "n" / "README").write_text("mine")  # in a folder the save will also write
    _small(1).memmap(prefix)
    _small(2).memmap(prefix)
    assert (prefix / "n" / "README").read_text() == "mine"
    (prefix / "x.memmap").mkdir()  # a folder where the save must put a file
    (prefix / "x.memmap" / "keep").write_text("mine")
    with pytest.raises(IsADirectoryError, match="x.memmap"):
        _medium(3).memmap(prefix)
    assert (prefix / "x.memmap" / "keep").read_text() == "mine"
    assert TensorDict.load_memmap(prefix)["n", "s"] == "v2"


# -- MemoryMappedTensor constructors --------------------------------------------------------------
@pytest.mark.parametrize("make", [
    lambda **kw: MemoryMappedTensor.empty(-1, 3, **kw),
    lambda **kw: MemoryMappedTensor.zeros((2, -3), **kw),
    lambda **kw: MemoryMappedTensor.ones(shape=[-1], **kw),
    lambda **kw: MemoryMappedTensor.full([2, -1], fill_value=1.5, **kw),
    lambda **kw: MemoryMappedTensor.from_tensor(torch.ones(2), copy_data=False, shape=[-2],
                                                **kw),
    lambda **kw: MemoryMappedTensor.zeros(2**40, 2**40, **kw),
])
def test_invalid_shapes_raise_and_leave_no_file(tmp_path, make):
    path = tmp_path / "t.memmap"
    for filename in (None, path):
        with pytest.raises(RuntimeError, match=r"cannot create a MemoryMappedTensor of shape \["):
            make(filename=filename)
    assert os.listdir(tmp_path) == []


def test_constructors_without_a_shape(tmp_path):
    for make in (MemoryMappedTensor.empty, MemoryMappedTensor.zeros, MemoryMappedTensor.ones):
        with pytest.raises(TypeError, match="Could not find the shape argument"):
            make(filename=tmp_path / "t.memmap")
    with pytest.raises(TypeError, match="Could not find the shape argument"):
        MemoryMappedTensor.full(fill_value=1)
    assert os.listdir(tmp_path) == []
    assert MemoryMappedTensor.zeros(shape=()).shape == torch.Size([])  # an explicit 0-dim shape


# -- non-tensor values: a JSON encoding for what JSON cannot hold ---------------------------------
VALUES = {
    "nan": math.nan, "inf": math.inf, "ninf": -math.inf, "tuple": (1, "a", None),
    "bytes": b"\x00\xff raw", "nested": {"t": [(1, 2), {"b": b"x", "f": -math.inf}], "e": ()},
    "tagged": {"__tensordict__": "tuple", "value": [1]},  # looks like an encoding: stays a dict
    "plain": {"k": [1, 2.5, "s", True, None]},
}


def _same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return type(b) is dict and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, torch.Tensor):
        return type(b) is torch.Tensor and torch.equal(a, b)
    return type(a) is type(b) and a == b


def _strict_json(path):
    def refuse(token):
        raise AssertionError(f"{path} holds the non-JSON token {token}")

    return json.loads(path.read_text(), parse_constant=refuse)


def test_json_unsafe_values_round_trip_without_pickle(tmp_path):
    td = TensorDict({key: NonTensorData(value) for key, value in VALUES.items()}, [2])
    td["meta"] = NonTensorData("x", _metadata={"when": (1, 2)}, batch_size=[2])
    td["stack"] = NonTensorStack(NonTensorData((1, b"a")), NonTensorData((2, math.nan)))
    td.memmap(tmp_path)
    for path in tmp_path.rglob("meta.json"):
        _strict_json(path)
    assert not list(tmp_path.rglob("*.pickle")) and not list(tmp_path.rglob("*.pkl"))
    loaded = TensorDict.load_memmap(tmp_path)  # no allow_pickle needed
    for key, value in VALUES.items():
        assert _same(value, loaded[key]), key
    assert loaded.get("meta")._metadata == {"when": (1, 2)}
    stack = loaded["stack"]
    assert _same(stack[0], (1, b"a")) and stack[1][0] == 2 and math.isnan(stack[1][1])


def test_shared_non_tensor_values_use_the_encoding(tmp_path):
    td = TensorDict(t=NonTensorData((1, 2))).memmap(tmp_path, share_non_tensor=True)
    td.set_("t", (b"x", math.inf))
    assert td["t"] == (b"x", math.inf)
    assert TensorDict.load_memmap(tmp_path)["t"] == (b"x", math.inf)
    _strict_json(tmp_path / "t" / "meta.json")


def test_upstream_files_still_load(tmp_path):
    folder = tmp_path / "up"
    (folder / "s").mkdir(parents=True)
    (folder / "meta.json").write_text(
        '{"s": {"type": "NonTensorData"}, "shape": [], "device": "cpu", "_type": '
        '"<class \'tensordict._td.TensorDict\'>", "_format_version": 1, '
        '"_class": "tensordict:TensorDict"}')
    (folder / "s" / "meta.json").write_text(  # upstream writes bare NaN, and tuples as lists
        '{"_type": "<class \'tensordict.tensorclass.NonTensorData\'>", "data": '
        '{"a": NaN, "b": [1, 2], "c": Infinity}, "_metadata": null, "_is_non_tensor": true}')
    value = TensorDict.load_memmap(folder)["s"]
    assert math.isnan(value["a"]) and value["b"] == [1, 2] and value["c"] == math.inf


class Opaque:
    """A value of a class: its pickle names code (this module's class) to run on load."""

    def __init__(self, tag: int) -> None:
        self.tag = tag

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Opaque) and other.tag == self.tag


@pytest.mark.parametrize("value", [{1, 2}, {1: "a"}, 1j, Opaque(3),
                                   {"w": torch.arange(3.0), "steps": [torch.ones(2)]}])
def test_values_without_json_are_pickled_by_default(tmp_path, value):
    td = _small(2)
    td["n", "odd"] = NonTensorData(value)
    td.memmap(tmp_path)
    assert (tmp_path / "n" / "odd" / "other.pickle").exists()
    assert _same(value, TensorDict.load_memmap(tmp_path, allow_pickle=True)["n", "odd"])


@pytest.mark.parametrize("value", [{1, 2}, {1: "a"}, 1j, {(1, 2): frozenset({3})},
                                   {"w": torch.arange(3.0), "steps": [torch.ones(2)]}])
def test_pickled_plain_data_loads_without_allow_pickle(tmp_path, value):
    TensorDict(odd=NonTensorData(value)).memmap(tmp_path)
    assert _same(value, TensorDict.load_memmap(tmp_path)["odd"])


def test_a_pickle_that_names_code_needs_allow_pickle(tmp_path):
    TensorDict(odd=NonTensorData(Opaque(3))).memmap(tmp_path)
    with pytest.raises(pickle.UnpicklingError,
                       match=r"odd/other.pickle .*needs \S*test_memmap_safety.Opaque.*"
                             r"allow_pickle=True"):
        TensorDict.load_memmap(tmp_path)
    assert TensorDict.load_memmap(tmp_path, allow_pickle=True)["odd"] == Opaque(3)


class _RunsCode:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


def test_a_malicious_pickle_is_refused_before_it_runs(tmp_path):
    marker = tmp_path / "ran"
    TensorDict(s=NonTensorData({1})).memmap(tmp_path / "victim")
    payload = pickle.dumps({"data": _RunsCode(str(marker)), "_metadata": None})
    (tmp_path / "victim" / "s" / "other.pickle").write_bytes(payload)
    with pytest.raises(pickle.UnpicklingError, match=r"needs posix.mkdir"):
        TensorDict.load_memmap(tmp_path / "victim")
    assert not marker.exists()
    (tmp_path / "victim" / "s" / "other.pickle").write_bytes(payload[:-5])
    with pytest.raises(ValueError, match="other.pickle is corrupt"):
        TensorDict.load_memmap(tmp_path / "victim")


def test_allow_pickle_false_refuses_to_write_a_pickle(tmp_path):
    prefix = tmp_path / "data"
    _small(1).memmap(prefix)
    before = _listing(prefix)
    td = _small(2)
    td["n", "odd"] = NonTensorData({1, 2})
    with pytest.raises(TypeError, match=r"\('n', 'odd'\) without pickle: a set.*"
                                        r"allow_pickle=False"):
        td.memmap(prefix, allow_pickle=False)
    with pytest.raises(TypeError, match="allow_pickle=False"):
        td.memmap(tmp_path / "fresh", allow_pickle=False)
    assert _listing(prefix) == before and not (tmp_path / "fresh").exists()
    assert _leftovers(prefix) == []
    stack = TensorDict(objs=NonTensorStack.from_list([{1}, {2}]), batch_size=[2])
    with pytest.raises(TypeError, match="'objs' without pickle: a set"):
        stack.memmap(tmp_path / "s", allow_pickle=False)
    meta = TensorDict(m=NonTensorData("x", _metadata={"s": {1}}))
    with pytest.raises(TypeError, match="'m' without pickle: a set"):
        meta.memmap(tmp_path / "m", allow_pickle=False)
    meta.memmap(tmp_path / "m")
    assert TensorDict.load_memmap(tmp_path / "m").get("m")._metadata == {"s": {1}}


# -- loading hand-crafted malicious folders -------------------------------------------------------
TD_META = ('{"shape": [], "device": "cpu", "_type": "<class \'tensordict._td.TensorDict\'>", '
           '"_format_version": 1, "_class": "tensordict:TensorDict"}')


def _tensorclass_folder(folder, class_path: str) -> None:
    (folder / "_tensordict").mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"_type": f"<class '{class_path}'>"}))
    (folder / "_tensordict" / "meta.json").write_text(TD_META)


def test_a_folder_never_imports_a_module(tmp_path, monkeypatch):
    modules = tmp_path / "modules"
    modules.mkdir()
    marker = tmp_path / "imported"
    (modules / "td_evil_module.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass Payload:\n    pass\n")
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.delitem(sys.modules, "td_evil_module", raising=False)
    _tensorclass_folder(tmp_path / "top", "td_evil_module.Payload")
    with pytest.raises(RuntimeError, match="Could not find the class td_evil_module.Payload"):
        TensorDict.load_memmap(tmp_path / "top")
    nested = tmp_path / "nested"
    nested.mkdir()
    (nested / "meta.json").write_text(TD_META[:1] + '"p": {"type": "Payload"}, ' + TD_META[1:])
    _tensorclass_folder(nested / "p", "td_evil_module.Payload")
    with pytest.raises(RuntimeError, match="allow_pickle=True to let load_memmap import"):
        TensorDict.load_memmap(nested)
    assert not marker.exists() and "td_evil_module" not in sys.modules
    with pytest.raises(RuntimeError, match="Could not find the class"):  # not a tensorclass
        TensorDict.load_memmap(tmp_path / "top", allow_pickle=True)
    assert marker.exists()  # the caller trusted the folder: its module was imported


def test_tensorclass_of_a_module_not_imported(tmp_path, monkeypatch):
    pytest.importorskip("tensordict.tensorclasses")
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "td_points_module.py").write_text(
        "import torch\nfrom tensordict import tensorclass\n\n\n@tensorclass\n"
        "class Point:\n    x: torch.Tensor\n")
    monkeypatch.syspath_prepend(str(modules))
    import td_points_module

    td_points_module.Point(x=torch.arange(3), batch_size=[3]).memmap(tmp_path / "p")
    assert type(TensorDict.load_memmap(tmp_path / "p")).__name__ == "Point"  # defined: found
    point = td_points_module.Point.load_memmap(tmp_path / "p")  # the class itself: no lookup
    assert type(point) is td_points_module.Point and point.x.tolist() == [0, 1, 2]
    # a folder naming a module this process never imported: nothing is imported (the
    # module would leave a file behind) unless the caller allows it
    (modules / "td_never_imported.py").write_text(
        f"open({str(tmp_path / 'ran')!r}, 'w').close()\n"
        + (modules / "td_points_module.py").read_text())
    meta = tmp_path / "p" / "meta.json"
    meta.write_text(meta.read_text().replace("td_points_module", "td_never_imported"))
    with pytest.raises(RuntimeError, match="Import the module that defines it"):
        TensorDict.load_memmap(tmp_path / "p")
    assert not (tmp_path / "ran").exists() and "td_never_imported" not in sys.modules
    imported = TensorDict.load_memmap(tmp_path / "p", allow_pickle=True)
    assert type(imported).__module__ == "td_never_imported" and (tmp_path / "ran").exists()
    monkeypatch.delitem(sys.modules, "td_never_imported")


@pytest.fixture
def outside(tmp_path):
    """A saved folder the malicious one points into."""
    TensorDict({"a": torch.arange(4.0), "n": {"b": torch.ones(4)}}, [4]).memmap(
        tmp_path / "outside")
    return tmp_path / "outside"


def _victim(tmp_path) -> Path:
    TensorDict({"a": torch.zeros(4), "n": {"b": torch.zeros(4)}, "s": NonTensorData({1}),
                "ok": torch.zeros(2)}).memmap(tmp_path / "victim")
    return tmp_path / "victim"


@pytest.mark.parametrize("link, to", [
    ("a.memmap", "a.memmap"), ("n", "n"), ("meta.json", "meta.json"),
    ("n/meta.json", "n/meta.json"), ("s/other.pickle", "a.memmap"),
])
def test_links_out_of_the_folder_are_refused(tmp_path, outside, link, to):
    victim = _victim(tmp_path)
    path = victim / link
    shutil.rmtree(path) if path.is_dir() else path.unlink()
    path.symlink_to(outside / to)
    with pytest.raises(ValueError, match=f"victim/{link} resolves to .*/outside/{to}, outside"):
        TensorDict.load_memmap(victim, allow_pickle=True)


def test_links_inside_the_folder_and_a_linked_prefix_load(tmp_path):
    victim = _victim(tmp_path)
    (victim / "ok.memmap").rename(victim / "n" / "moved.memmap")
    (victim / "ok.memmap").symlink_to(victim / "n" / "moved.memmap")
    (tmp_path / "alias").symlink_to(victim)
    loaded = TensorDict.load_memmap(tmp_path / "alias", allow_pickle=True)
    assert loaded["ok"].tolist() == [0.0, 0.0] and loaded["s"] == {1}


def test_a_tensorclass_defined_in_a_function_loads_in_the_same_process(tmp_path):
    """Its name (``f.<locals>.C``) cannot be imported, but the class is defined here."""
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    def define():
        @tensorclass
        class Local:
            x: torch.Tensor
            label: str
        return Local

    local = define()
    local(x=torch.arange(3.0), label="a", batch_size=[3]).memmap(tmp_path / "tc")
    loaded = TensorDict.load_memmap(tmp_path / "tc")
    assert type(loaded) is local and loaded.label == "a"
    assert torch.equal(loaded.x, torch.arange(3.0))
