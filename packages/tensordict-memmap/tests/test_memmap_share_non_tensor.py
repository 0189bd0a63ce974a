"""``memmap(..., share_non_tensor=True)``: non-tensor values shared through meta.json."""

import json
import multiprocessing as mp
import pickle
import sys
from pathlib import Path

import pytest
import torch

from tensordict import NonTensorData, TensorDict
from tensordict.memmap._shared_non_tensor import SharedNonTensorData

sys.path.insert(0, str(Path(__file__).parent))
from memmap_share_workers import set_from_queue, set_in_child  # noqa: E402


def _sample():
    nested = {"t": "inner", "z": NonTensorData(0.5)}
    return TensorDict({"a": torch.arange(2), "s": "old", "n": nested}, [2])


def _meta(path):
    return json.loads((path / "meta.json").read_text())


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_child_process_update_is_seen_by_parent(tmp_path, method):
    ctx = mp.get_context(method)
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    done = ctx.Queue()
    child = ctx.Process(target=set_in_child, args=(td, ("n", "t"), "from child", done))
    child.start()
    assert done.get(timeout=30) == "from child"
    child.join(30)
    assert child.exitcode == 0
    assert td["n", "t"] == "from child" and td["s"] == "old"
    assert _meta(tmp_path / "n" / "t")["data"] == "from child"


def test_td_sent_through_a_queue_is_shared(tmp_path):
    ctx = mp.get_context("spawn")
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    inbox, done = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=set_from_queue, args=(inbox, done))
    child.start()
    inbox.put(td)
    assert done.get(timeout=30) == "queued"
    child.join(30)
    assert td["s"] == "queued"


def test_same_process_handles_share_the_value(tmp_path):
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    leaf = td.get("s")
    copy = pickle.loads(pickle.dumps(td))
    assert isinstance(leaf, SharedNonTensorData) and leaf.batch_size == torch.Size([2])
    td.set_("s", "new")
    assert leaf.data == "new" and copy["s"] == "new" and td["s"] == "new"
    copy.set_(("n", "z"), NonTensorData(1.5))
    assert td["n", "z"] == 1.5 and td.get(("n", "z"))[0].data == 1.5
    assert _meta(tmp_path / "s") == {"_type": "<class 'tensordict.tensorclass.NonTensorData'>",
                                     "data": "new", "_metadata": None, "_is_non_tensor": True}
    assert "n: {t: str, z: float}" in repr(td) and "s: str" in repr(td)


def test_locked_result_refuses_setitem_like_a_new_entry(tmp_path):
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    with pytest.raises(RuntimeError, match="locked"):
        td["s"] = "new"
    with pytest.raises(RuntimeError, match="locked"):
        td.update({"s": "new"})
    assert td["s"] == "old" and _meta(tmp_path / "s")["data"] == "old"


def test_unshareable_value_raises_and_keeps_the_old_one(tmp_path):
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    with pytest.raises(TypeError, match="JSON"):
        td.set_("s", object())
    assert td["s"] == "old"


def test_load_memmap_reads_the_latest_value(tmp_path):
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    td.set_("s", "latest")
    loaded = TensorDict.load_memmap(tmp_path)
    assert type(loaded.get("s")) is NonTensorData
    assert loaded["s"] == "latest" and loaded["n", "t"] == "inner"
    assert torch.equal(loaded["a"], torch.arange(2))


def test_memmap_and_memmap_like_in_place(tmp_path):
    td = _sample()
    assert td.memmap_(tmp_path / "x", share_non_tensor=True) is td
    td.set_("s", "x")
    assert TensorDict.load_memmap(tmp_path / "x")["s"] == "x"
    like = _sample().memmap_like(tmp_path / "y", share_non_tensor=True)
    like.set_("s", "y")
    assert like["s"] == "y" and TensorDict.load_memmap(tmp_path / "y")["s"] == "y"


def test_not_shared_without_the_flag_or_a_folder(tmp_path):
    td = _sample().memmap(tmp_path)
    copy = pickle.loads(pickle.dumps(td))
    td.set_("s", "local")  # the folder is written (as upstream), not re-read by a copy
    assert td["s"] == "local" and _meta(tmp_path / "s")["data"] == "local"
    assert copy["s"] == "old"
    anonymous = _sample().memmap(share_non_tensor=True)
    anonymous.set_("s", "mem")
    assert anonymous["s"] == "mem"


def test_adding_a_memmap_leaf_keeps_the_value_shared(tmp_path):
    td = _sample().memmap(tmp_path, share_non_tensor=True)
    copy = pickle.loads(pickle.dumps(td))
    td.make_memmap("b", [2])
    td.set_("s", "after")
    assert isinstance(td.get("s"), SharedNonTensorData) and copy["s"] == "after"
