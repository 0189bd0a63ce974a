"""Every write to a PersistentTensorDict lands in the file or raises with the file left
as it was: writes through index views (``ptd[0].add_(1)``, ``ptd["n"][2]["c"] = v``),
dtype casts (values converted, never bits), shapes (``set_`` never replaces an array),
and ``select``/``exclude`` (refused, as upstream: their copies would write nowhere).
Each write is read back from a freshly opened file, over every installed format."""

from __future__ import annotations

import pickle

import pytest
import torch

from tensordict import TensorDict
from tensordict.persistent import PersistentTensorDict
from tensordict.storage import IndexView


def sample() -> TensorDict:
    return TensorDict({
        "a": torch.arange(4, dtype=torch.float32),
        "b": torch.arange(8).view(4, 2),
        "h": torch.arange(4, dtype=torch.bfloat16),
        "n": {"c": torch.arange(12, dtype=torch.float64).view(4, 3)},
    }, batch_size=[4])


@pytest.fixture
def ptd(tmp_path, backend):
    out = PersistentTensorDict.from_dict(sample(), tmp_path / f"data.{backend}",
                                         backend=backend)
    yield out
    out.close()


def on_disk(ptd: PersistentTensorDict) -> TensorDict:
    """What the file holds: closed, opened again read-only, read into memory."""
    ptd.close()
    with PersistentTensorDict(filename=ptd.filename, backend=ptd._format.name) as again:
        return again.to_tensordict()


def assert_same(got: TensorDict, expected: TensorDict) -> None:
    assert sorted(got.keys(True, True), key=str) == sorted(expected.keys(True, True), key=str)
    for key in expected.keys(True, True):
        assert got[key].dtype == expected[key].dtype, key
        assert torch.equal(got[key], expected[key]), (key, got[key], expected[key])


INDICES = [1, -1, slice(1, 3), slice(0, 4, 2), torch.tensor([True, False, True, True]),
           torch.tensor([3, 1]), [0, 2], (2,)]
WRITES = {
    "add_": lambda v: v.add_(100),
    "zero_": lambda v: v.zero_(),
    "fill_": lambda v: v.fill_("a", 7),
    "apply_": lambda v: v.apply_(lambda x: x * 2 + 1),
    "set_": lambda v: v.set_("a", torch.full(v.batch_size, 5.0)),
    "set_ nested": lambda v: v.set_(("n", "c"), torch.full((*v.batch_size, 3), 5.0)),
    "sub set_": lambda v: v["n"].set_("c", torch.full((*v.batch_size, 3), 6.0)),
    "setitem": lambda v: v.__setitem__("a", torch.full(v.batch_size, 8.0)),
    "setitem nested": lambda v: v.__setitem__(("n", "c"), torch.ones(*v.batch_size, 3,
                                                                     dtype=torch.float64)),
    "update_": lambda v: v.update_({"a": torch.full(v.batch_size, 9.0),
                                    "n": {"c": torch.ones(*v.batch_size, 3)}}),
    "update": lambda v: v.update({"b": torch.full((*v.batch_size, 2), 3)}),
    "copy_": lambda v: v.copy_(v.to_tensordict().apply(lambda x: x + 10)),
    "iadd": lambda v: v.__iadd__(1),
}


@pytest.mark.parametrize("index", INDICES, ids=repr)
@pytest.mark.parametrize("write", WRITES)
def test_index_view_writes_reach_the_file(ptd, index, write):
    view = ptd[index]
    assert isinstance(view, IndexView) and not view.is_locked
    WRITES[write](view)
    expected = sample()
    rows = expected[index]  # (a copy for a mask or a tensor index)
    WRITES[write](rows)
    expected[index] = rows
    assert_same(on_disk(ptd), expected)


def test_writes_at_an_index_of_a_view(ptd):
    ptd[1:4].set_at_("a", torch.tensor(-1.0), 1)
    ptd[1:4].update_at_({"b": torch.tensor([-2, -2])}, torch.tensor([True, False, True]))
    ptd[1:3][0] = TensorDict({"n": {"c": torch.full((3,), -3.0)}}, [])
    ptd[1:3][1].set_("a", torch.tensor(42.0))  # a view of a view
    ptd["n"][0].add_(1000)  # a view of a sub-TensorDict
    ptd["n"][3]["c"] = torch.full((3,), -4.0)
    expected = sample()
    expected["a"][2], expected["b"][1], expected["b"][3] = -1.0, -2, -2
    expected["n", "c"][1] = -3.0
    expected["a"][2] = 42.0
    expected["n", "c"][0] += 1000
    expected["n", "c"][3] = -4.0
    assert_same(on_disk(ptd), expected)


def test_new_keys_through_a_view_are_created_in_the_file(ptd):
    ptd[1]["z"] = torch.tensor(5.0)
    ptd[1:3]["m", "q"] = torch.ones(2, 2, dtype=torch.int32)
    ptd[0]["w"] = TensorDict({"x": torch.ones(3)}, [])
    ptd[2].update({"u": torch.tensor(True)})
    expected = sample()
    expected["z"] = torch.tensor([0.0, 5.0, 0.0, 0.0])  # zeros outside the index, as upstream
    expected["m", "q"] = torch.tensor([[0, 0], [1, 1], [1, 1], [0, 0]], dtype=torch.int32)
    expected["w", "x"] = torch.tensor([[1.0] * 3] + [[0.0] * 3] * 3)
    expected["u"] = torch.tensor([False, False, True, False])
    assert_same(on_disk(ptd), expected)


def test_views_read_only_their_rows(ptd):
    view = ptd[torch.tensor([3, 1, 3])]
    assert view.batch_size == torch.Size([3])
    assert torch.equal(view["a"], torch.tensor([3.0, 1.0, 3.0]))
    assert torch.equal(view["n"]["c"], sample()["n", "c"][[3, 1, 3]])
    assert view.get_item_shape(("n", "c")) == torch.Size([3, 3])
    assert isinstance(view + 1, TensorDict) and isinstance(view.clone(), TensorDict)
    again = pickle.loads(pickle.dumps(ptd[1:3]))  # pickled as (file, index)
    assert torch.equal(again["a"], torch.tensor([1.0, 2.0]))
    again._source.close()


def test_views_of_a_locked_file_write_in_place_only(ptd):
    ptd.lock_()
    view = ptd[0]
    assert view.is_locked
    view.set_("a", torch.tensor(50.0))  # in-place writes are allowed, as upstream
    view["b"] = torch.tensor([7, 7])
    with pytest.raises(RuntimeError, match="locked"):
        view["new"] = torch.tensor(1.0)
    with pytest.raises(RuntimeError, match="locked"):
        view.unlock_()
    ptd.unlock_()
    with pytest.raises(RuntimeError, match="lock the parent"):
        ptd[1].lock_()
    assert not ptd.is_locked
    expected = sample()
    expected["a"][0], expected["b"][0] = 50.0, 7
    assert_same(on_disk(ptd), expected)


BAD_VIEW_WRITES = {
    "set_ shape": (lambda t: t[0].set_("a", torch.ones(2)), RuntimeError),
    "setitem shape": (lambda t: t[1:3].__setitem__("b", torch.ones(2, 5)), RuntimeError),
    "update_ one bad": (lambda t: t[1:3].update_({"a": torch.ones(2), "b": torch.ones(2, 3)}),
                        RuntimeError),
    "set_ missing": (lambda t: t[0].set_("missing", torch.ones(())), KeyError),
    "non-tensor": (lambda t: t[0].__setitem__("a", "text"), TypeError),
    "new non-tensor": (lambda t: t[0].__setitem__("s", "text"), TypeError),
    "index write shape": (lambda t: t[1:3].__setitem__(0, TensorDict({"a": torch.ones(2)}, [])),
                          RuntimeError),
    "out of bounds": (lambda t: t[9], IndexError),
    "select": (lambda t: t[0].select("a").set_("a", torch.tensor(1.0)), NotImplementedError),
    "exclude": (lambda t: t[0].exclude("b").zero_(), NotImplementedError),
}


@pytest.mark.parametrize("write", BAD_VIEW_WRITES)
def test_bad_view_writes_raise_and_leave_the_file_unchanged(ptd, write):
    do, error = BAD_VIEW_WRITES[write]
    with pytest.raises(error):
        do(ptd)
    assert_same(on_disk(ptd), sample())


CASTS = {
    "set_": lambda t, key, v: t.set_(key, v),
    "update_": lambda t, key, v: t.update_({key: v}),
    "index write": lambda t, key, v: t.__setitem__(slice(None), TensorDict({key: v}, [4])),
    "set_at_": lambda t, key, v: t.set_at_(key, v, slice(None)),
    "view set_": lambda t, key, v: t[:].set_(key, v),
    "view index write": lambda t, key, v: t[1:].__setitem__(
        slice(None), TensorDict({key: v[1:]}, [3])) or t.set_at_(key, v[0], 0),
}


@pytest.mark.parametrize("write", CASTS)
@pytest.mark.parametrize(("key", "dtype"), [("a", torch.bfloat16), ("h", torch.float32)])
def test_casts_convert_values_never_bits(ptd, write, key, dtype):
    """bfloat16 into a float32 array and float32 into a bfloat16 one (stored as int16
    bits): the values are converted to the array's dtype."""
    CASTS[write](ptd, key, torch.tensor([1.5, 2.0, -3.0, 4.0], dtype=dtype))
    expected = sample()
    expected[key] = torch.tensor([1.5, 2.0, -3.0, 4.0], dtype=expected[key].dtype)
    assert_same(on_disk(ptd), expected)


def test_set_with_another_shape_raises_and_writes_nothing(ptd):
    with pytest.raises(RuntimeError, match=r"shape \(4, 3\) into 'b'"):
        ptd.set_("b", torch.zeros(4, 3))
    with pytest.raises(RuntimeError, match="'a'"):
        ptd.set("a", torch.zeros(4, 2), inplace=True)
    with pytest.raises(RuntimeError, match="'c'"):
        ptd["n"].set_("c", torch.zeros(4, 2))
    assert_same(on_disk(ptd), sample())


def test_set_broadcasts_and_setitem_replaces(ptd):
    ptd.set_("b", torch.tensor([[1, 2]]).expand(4, 2))
    ptd["a"] = torch.zeros(4, 2)  # setitem stores the new value, whatever its shape
    expected = sample()
    expected["b"] = torch.tensor([[1, 2]] * 4)
    expected["a"] = torch.zeros(4, 2)
    assert_same(on_disk(ptd), expected)


@pytest.mark.parametrize("method", ["select", "exclude"])
def test_select_and_exclude_are_refused_as_upstream(ptd, method):
    for target in (ptd, ptd["n"], ptd[1:3]):
        with pytest.raises(NotImplementedError, match=f"Cannot call {method}.*to_tensordict"):
            getattr(target, method)("a")
    assert torch.equal(ptd.to_tensordict().select("a")["a"], sample()["a"])
    assert_same(on_disk(ptd), sample())


def test_non_tensor_entries_through_update_and_index_writes(ptd, read_text):
    ptd["s"] = "orig"
    ptd.update_({"s": "new"})  # lands (upstream silently keeps the old value)
    row = ptd[2].to_tensordict()
    row["a"] = torch.tensor(-5.0)
    ptd[1] = row  # the same string as stored: the tensors are written
    with pytest.raises(TypeError, match="'s'"):
        ptd[1:3].update_({"s": "other"})  # one value per entry: it cannot land at rows
    with pytest.raises(TypeError, match="'s'"):
        ptd[0] = TensorDict({"a": torch.tensor(7.0), "s": "other"}, [])
    ptd[0:2].rename_key_("a", "z")  # the whole entry, as upstream
    expected = sample()
    expected["a"][1] = -5.0
    expected["b"][1], expected["h"][1] = expected["b"][2], expected["h"][2]
    expected["n", "c"][1] = expected["n", "c"][2]
    expected["z"] = expected.pop("a")
    got = on_disk(ptd)
    assert got["s"] == read_text("new")
    del got["s"]
    assert_same(got, expected)
