"""In-place writes of a memory-mapped collection reach its files, or raise with the
files and the values left as they were: non-tensor entries written in place (each
read back from the folder), and index views that, as upstream's, are locked."""

import os

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict
from tensordict.errors import LockedTensorDictError
from tensordict.memmap import _layout


def _files(folder):
    """Every file under ``folder`` and its bytes."""
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as file:
                out[os.path.relpath(path, folder)] = file.read()
    return out


def _source():
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(3)}}, [3])
    td.set_non_tensor("s", "orig")
    td.set_non_tensor(("n", "t"), "orig")
    return td


MAKERS = {
    "memmap_": lambda td, path: td.memmap_(path),
    "memmap": lambda td, path: td.memmap(path),
    "memmap_like": lambda td, path: td.memmap_like(path),
}

WRITES = {
    "update_": lambda td, key, v: td.update_({key: v}),
    "set_": lambda td, key, v: td.set_(key, v),
    "set_inplace": lambda td, key, v: td.set(key, v, inplace=True),
    "update_inplace": lambda td, key, v: td.update({key: v}, inplace=True),
    "copy_": lambda td, key, v: td.copy_(_with(td, key, v)),
}


def _with(td, key, value):
    out = td.clone()
    out.unlock_()
    out.set(key, value)
    return out


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("write", WRITES)
@pytest.mark.parametrize("key", ["s", ("n", "t")])
def test_non_tensor_write_reaches_the_folder(tmp_path, make, write, key):
    td = MAKERS[make](_source(), tmp_path)
    WRITES[write](td, key, "new")
    assert td[key] == "new"
    loaded = TensorDict.load_memmap(tmp_path)
    assert loaded[key] == "new"
    other = ("n", "t") if key == "s" else "s"  # the other entry is untouched
    assert loaded[other] == "orig" and td[other] == "orig"


@pytest.mark.parametrize("write", WRITES)
def test_non_tensor_stack_write_reaches_the_folder(tmp_path, write):
    td = TensorDict({"a": torch.zeros(3), "s": NonTensorStack("x", "y", "z")}, [3])
    td = td.memmap(tmp_path)
    WRITES[write](td, "s", NonTensorStack("p", "q", "r"))
    assert td.get("s").tolist() == ["p", "q", "r"]
    assert TensorDict.load_memmap(tmp_path).get("s").tolist() == ["p", "q", "r"]


def test_non_tensor_stack_element_write_reaches_the_folder(tmp_path):
    td = TensorDict({"s": NonTensorStack("x", "y", "z")}, [3]).memmap(tmp_path)
    td.get("s")[1] = "q"
    assert td.get("s").tolist() == ["x", "q", "z"]
    assert TensorDict.load_memmap(tmp_path).get("s").tolist() == ["x", "q", "z"]


def test_a_stack_element_written_through_an_index_view_reaches_the_folder(tmp_path):
    td = TensorDict({"s": NonTensorStack("x", "y", "z")}, [3]).memmap(tmp_path)
    td[1].set_("s", "q")  # (upstream raises; ours writes the element through)
    td[0:1].update_({"s": NonTensorStack("p")})
    assert td.get("s").tolist() == ["p", "q", "z"]
    assert TensorDict.load_memmap(tmp_path).get("s").tolist() == ["p", "q", "z"]


def test_write_through_an_index_view_reaches_the_folder(tmp_path):
    td = _source().memmap(tmp_path)
    td[0].set_("s", "new")  # the view shares the entry's one value, as upstream's file
    assert td["s"] == "new" and TensorDict.load_memmap(tmp_path)["s"] == "new"


def test_values_json_cannot_hold_are_pickled_and_back(tmp_path):
    td = _source().memmap(tmp_path)
    td.set_("s", {1, 2})
    assert TensorDict.load_memmap(tmp_path, allow_pickle=True)["s"] == {1, 2}
    td.set_("s", "text")
    assert TensorDict.load_memmap(tmp_path)["s"] == "text"


def test_a_value_that_cannot_be_written_changes_nothing(tmp_path):
    td = _source().memmap(tmp_path, allow_pickle=False)
    before = _files(tmp_path)
    with pytest.raises(TypeError, match="allow_pickle=False"):
        td.set_("s", {1, 2})
    assert td["s"] == "orig" and _files(tmp_path) == before
    with pytest.raises(RuntimeError, match="'s'"):  # a tensor into a non-tensor entry
        td.set_("s", torch.ones(3))
    assert td["s"] == "orig" and _files(tmp_path) == before


def test_a_failed_meta_write_puts_the_pickle_back(tmp_path, monkeypatch):
    td = _source().memmap(tmp_path)
    td.set_("s", {1})
    before = _files(tmp_path)

    def fail(folder, text):
        raise OSError("disk full")

    monkeypatch.setattr(_layout, "write_meta", fail)
    with pytest.raises(OSError, match="disk full"):
        td.set_("s", {2})
    assert td["s"] == {1} and _files(tmp_path) == before
    monkeypatch.undo()
    assert TensorDict.load_memmap(tmp_path, allow_pickle=True)["s"] == {1}


def test_a_stack_write_that_does_not_fit_changes_nothing(tmp_path):
    td = TensorDict({"s": NonTensorStack("x", "y", "z")}, [3]).memmap(tmp_path)
    before = _files(tmp_path)
    with pytest.raises((RuntimeError, ValueError, IndexError)):
        td.get("s")[5] = "q"
    assert td.get("s").tolist() == ["x", "y", "z"] and _files(tmp_path) == before


# -- index views of a memmapped TensorDict are locked (upstream raises too) ------------------
VIEW_WRITES = {
    "new key": lambda view: view.__setitem__("x", torch.ones(view.batch_size)),
    "existing key": lambda view: view.__setitem__("a", torch.ones(view.batch_size)),
    "set": lambda view: view.set("a", torch.ones(view.batch_size)),
    "nested": lambda view: view.__setitem__(("n", "c"), torch.ones(view.batch_size)),
    "non-tensor": lambda view: view.__setitem__("s", "new"),
    "delete": lambda view: view.__delitem__("a"),
}


@pytest.mark.parametrize("index", [0, slice(0, 2), slice(1, None), (Ellipsis, 0), None])
@pytest.mark.parametrize("write", VIEW_WRITES)
def test_a_write_an_index_view_would_keep_raises(tmp_path, index, write):
    td = _source().memmap(tmp_path)
    before = _files(tmp_path)
    view = td[index]
    assert view.is_locked and view["n"].is_locked
    with pytest.raises(LockedTensorDictError, match="'(x|a|c|s)'|delete"):
        VIEW_WRITES[write](view)
    assert _files(tmp_path) == before
    loaded = TensorDict.load_memmap(tmp_path)
    assert set(loaded.keys(True)) == set(td.keys(True))
    assert (loaded["a"] == 0).all() and loaded["s"] == "orig"


def test_an_index_view_writes_in_place_through(tmp_path):
    td = _source().memmap(tmp_path)
    td[1].set_("a", torch.tensor(5.0))
    td[0:2]["n"].set_("b", torch.ones(2))
    loaded = TensorDict.load_memmap(tmp_path)
    assert loaded["a"].tolist() == [0.0, 5.0, 0.0] and loaded["n", "b"].tolist() == [1, 1, 0]


def test_copies_and_unlocked_collections_give_unlocked_views(tmp_path):
    td = _source().memmap(tmp_path)
    assert not td[torch.tensor([0, 2])].is_locked  # a copy, as upstream
    assert not td[torch.tensor([True, False, True])].is_locked
    td.unlock_()  # ends the memmapped state: a later lock does not lock views
    assert not td[0].is_locked and not td.lock_()[0].is_locked
    assert not TensorDict.load_memmap(tmp_path)[0].is_locked


def test_a_memmapped_lazy_stack_gives_locked_views(tmp_path):
    parts = [TensorDict({"c": torch.zeros(3)}, [3]) for _ in range(2)]
    stack = LazyStackedTensorDict.lazy_stack(parts, 0).memmap(tmp_path)
    before = _files(tmp_path)
    for view in (stack[:, 0], stack[0], stack[0][1:]):
        with pytest.raises(LockedTensorDictError, match="'c'"):
            view["c"] = torch.ones(view.batch_size)
    assert _files(tmp_path) == before


def test_a_pickled_copy_is_plain_and_writes_no_folder(tmp_path):
    import pickle

    td = TensorDict({"s": NonTensorStack("x", "y"), "t": "u"}, [2]).memmap(tmp_path)
    before = _files(tmp_path)
    copy = pickle.loads(pickle.dumps(td))
    with copy.unlock_():
        copy.set_("t", "v")
        copy.get("s")[0] = "z"
    assert copy["t"] == "v" and copy.get("s").tolist() == ["z", "y"]
    assert _files(tmp_path) == before and td["t"] == "u"
    assert "s: NonTensorStack" in repr(td) and repr(td.get("t")).startswith("NonTensorData(")
