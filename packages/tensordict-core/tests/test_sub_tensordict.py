"""``td._get_sub_tensordict(idx)`` is a view that writes through to ``td`` at ``idx``.

Every write form goes through the view of a dense, a nested and a lazily stacked parent,
at each kind of index; the parent's state afterwards is compared with the same write
done by hand on a dense copy (``copy[key][idx] = value``, a new key zeros outside
``idx``), as upstream's ``_SubTensorDict`` leaves it. Memory-mapped parents are tested in
tensordict-memmap (test_sub_tensordict_memmap.py).
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.utils import _pytree as pytree

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, lazy_stack
from tensordict.errors import LockedTensorDictError

INDICES = {
    "int": 0,
    "slice": slice(0, 1),
    "column": (slice(None), 1),
    "point": (1, 2),
    "mask": torch.tensor([True, False]),
    "tensor": torch.tensor([1, 0]),
    "ellipsis": ...,
    "ellipsis-int": (..., 2),
}


def _dense() -> TensorDict:
    return TensorDict(a=torch.arange(24.).reshape(2, 3, 4),
                      n={"c": torch.arange(6).reshape(2, 3)}, batch_size=[2, 3])


def _lazy() -> LazyStackedTensorDict:
    return lazy_stack(list(_dense().clone().unbind(0)), 0)


PARENTS = {"dense": _dense, "lazy": _lazy}


def _full(shape: torch.Size, fill: float, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.full(shape, fill, dtype=dtype)


def _at(idx: Any, key: Any, make: Callable[[torch.Size], torch.Tensor]):
    """The hand-made write of ``make(indexed shape)`` into ``copy[key][idx]``."""
    def write(copy: TensorDict) -> None:
        leaf = copy.get(key)
        leaf[idx] = make(leaf[idx].shape)
    return write


def _new(idx: Any, key: Any, make: Callable[[torch.Size], torch.Tensor],
         extra: tuple[int, ...] = ()):
    """The hand-made creation of ``key``: zeros of the parent's batch size, ``make(...)``
    at ``idx``."""
    def write(copy: TensorDict) -> None:
        whole = torch.zeros(copy.batch_size + extra)
        whole[idx] = make(whole[idx].shape)
        copy.set(key, whole)
    return write


def _cases(idx: Any, first: Any) -> dict[str, tuple[Callable[[Any], Any],
                                                   Callable[[TensorDict], None]]]:
    """name: (the write through the view, the same write by hand on a dense copy); ``idx``
    and ``first`` are the parent's indices of the view and of ``view[0]``."""
    five = lambda s: _full(s, 5.0)  # noqa: E731
    seven = lambda s: _full(s, 7, torch.int64)  # noqa: E731
    return {
        "setitem": (lambda v: v.__setitem__("a", _full(v.batch_size + (4,), 5.0)),
                    _at(idx, "a", five)),
        "set-inplace": (lambda v: v.set("a", _full(v.batch_size + (4,), 5.0), inplace=True),
                        _at(idx, "a", five)),
        "set_": (lambda v: v.set_("a", _full(v.batch_size + (4,), 5.0)), _at(idx, "a", five)),
        "update": (lambda v: v.update({"a": _full(v.batch_size + (4,), 5.0)}),
                   _at(idx, "a", five)),
        "update_": (lambda v: v.update_({"a": _full(v.batch_size + (4,), 5.0)}),
                    _at(idx, "a", five)),
        "copy_": (lambda v: v.copy_(TensorDict(a=_full(v.batch_size + (4,), 5.0),
                                               batch_size=v.batch_size)),
                  _at(idx, "a", five)),
        "nested-setitem": (lambda v: v.__setitem__(("n", "c"), _full(v.batch_size, 7,
                                                                     torch.int64)),
                           _at(idx, ("n", "c"), seven)),
        "nested-view": (lambda v: v["n"].__setitem__("c", _full(v.batch_size, 7, torch.int64)),
                        _at(idx, ("n", "c"), seven)),
        "nested-update_": (lambda v: v.update_({"n": {"c": _full(v.batch_size, 7,
                                                                 torch.int64)}}),
                           _at(idx, ("n", "c"), seven)),
        "new-key": (lambda v: v.__setitem__("new", _full(v.batch_size, 5.0)),
                    _new(idx, "new", five)),
        "new-key-set": (lambda v: v.set("new", _full(v.batch_size + (2,), 5.0)),
                        _new(idx, "new", five, (2,))),
        "new-nested-key": (lambda v: v.__setitem__(("n", "d"), _full(v.batch_size, 5.0)),
                           _new(idx, ("n", "d"), five)),
        "new-nested-path": (lambda v: v.__setitem__(("x", "y"), _full(v.batch_size, 5.0)),
                            _new(idx, ("x", "y"), five)),
        "update-new-key": (lambda v: v.update({"new": _full(v.batch_size, 5.0)}),
                           _new(idx, "new", five)),
        "add_": (lambda v: v.add_(1), lambda c: (_at(idx, "a", lambda s: c["a"][idx] + 1)(c),
                                                 _at(idx, ("n", "c"),
                                                     lambda s: c["n", "c"][idx] + 1)(c))),
        "zero_": (lambda v: v.zero_(), lambda c: (_at(idx, "a", torch.zeros)(c),
                                                  _at(idx, ("n", "c"),
                                                      lambda s: c["n", "c"][idx] * 0)(c))),
        "apply_": (lambda v: v.apply_(lambda x: x * 2),
                   lambda c: (_at(idx, "a", lambda s: c["a"][idx] * 2)(c),
                              _at(idx, ("n", "c"), lambda s: c["n", "c"][idx] * 2)(c))),
        "fill_": (lambda v: v.fill_("a", 5.0), _at(idx, "a", five)),
        "set_at_": (lambda v: v.set_at_("a", _full(v[0].batch_size + (4,), 5.0), 0),
                    _at(first, "a", five)),
        "setitem-index": (lambda v: v.__setitem__(0, TensorDict(
            a=_full(v[0].batch_size + (4,), 5.0), batch_size=v[0].batch_size)),
                          _at(first, "a", five)),
        "view-of-view": (lambda v: v[0].__setitem__("a", _full(v[0].batch_size + (4,), 5.0)),
                         _at(first, "a", five)),
        "update_at_": (lambda v: v.update_at_({"a": _full(v[0].batch_size + (4,), 5.0)}, 0),
                       _at(first, "a", five)),
    }


#: the index of the view and of ``view[0]`` in the parent, as batch indices of a tensor
BY_HAND = {"int": (0, (0, 0)), "slice": (slice(0, 1), (0,)), "column": ((slice(None), 1), (0, 1)),
           "point": ((1, 2), None), "mask": (torch.tensor([True, False]), (0,)),
           "tensor": (torch.tensor([1, 0]), (1,)), "ellipsis": (..., (0,)),
           "ellipsis-int": ((slice(None), 2), (0, 2))}


def _leaves(td: Any) -> dict[Any, Any]:
    return {key: value for key, value in td.to_tensordict().items(True, True)}


def _assert_same(td: Any, expected: TensorDict) -> None:
    got, want = _leaves(td), _leaves(expected)
    assert sorted(map(str, got)) == sorted(map(str, want))
    for key, value in want.items():
        assert torch.equal(got[key], value), key


@pytest.mark.parametrize("parent", PARENTS)
@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("case", _cases(0, 0))
def test_every_write_reaches_the_parent(parent, index, case):
    if index == "point" and case in ("set_at_", "setitem-index", "view-of-view",
                                     "update_at_"):
        pytest.skip("a 0-dim view has no batch dim to index")
    td = PARENTS[parent]()
    expected = td.to_tensordict()
    through_view = _cases(INDICES[index], None)[case][0]
    by_hand = _cases(*BY_HAND[index])[case][1]
    through_view(td._get_sub_tensordict(INDICES[index]))
    by_hand(expected)
    _assert_same(td, expected)


@pytest.mark.parametrize("parent", PARENTS)
@pytest.mark.parametrize("index", ["int", "column", "mask", "tensor"])
def test_delete_and_rename_act_on_the_parent_entry(parent, index):
    td = PARENTS[parent]()
    whole = td["a"].clone()
    view = td._get_sub_tensordict(INDICES[index])
    view.rename_key_("a", "b")
    assert "a" not in td.keys() and torch.equal(td["b"], whole)
    del view["b"]
    assert list(td.keys()) == ["n"]
    assert view.pop(("n", "c")).shape == view.batch_size
    assert list(td["n"].keys()) == []


@pytest.mark.parametrize("index", ["int", "mask"])
def test_non_tensor_data_through_the_view(index):
    td = _dense()
    td.set_non_tensor("s", "orig")
    view = td._get_sub_tensordict(INDICES[index])
    assert view["s"] == "orig"
    view["label"] = "new"  # a new entry: the whole parent holds it, as upstream
    assert td.get("label").data == "new" and td.get("label").batch_size == td.batch_size
    view["s"] = "changed"  # an existing one: only at the index (a stack)
    rows = td.get("s").tolist()
    assert rows[0] == ["changed"] * 3 and rows[1] == ["orig"] * 3


def test_new_nested_tensordict_gets_the_parent_batch_size():
    td = _dense()
    view = td._get_sub_tensordict(1)
    view["q"] = TensorDict(x=torch.ones(3, 2), batch_size=[3, 2])
    assert td["q"].batch_size == (2, 3, 2)
    assert td["q", "x"][1].sum() == 6 and td["q", "x"][0].sum() == 0


def test_view_of_a_view_writes_to_the_root():
    td = _dense()
    view = td._get_sub_tensordict(torch.tensor([1]))._get_sub_tensordict(
        (0, torch.tensor([0, 2])))
    view["a"] = torch.full((2, 4), -1.0)
    view["b"] = torch.ones(2)
    assert td["a"][1, [0, 2]].eq(-1).all() and td["a"][0].ge(0).all()
    assert td["b"].tolist() == [[0.0, 0.0, 0.0], [1.0, 0.0, 1.0]]


# -- failures: nothing written ---------------------------------------------------------------
BAD_WRITES = {
    "setitem-shape": lambda v: v.__setitem__("a", torch.ones(3, 5)),
    "setitem-batch": lambda v: v.__setitem__("a", torch.ones(2, 4)),
    "set_-shape": lambda v: v.set_("a", torch.ones(3, 5)),
    "set_-missing": lambda v: v.set_("zz", torch.ones(3)),
    "set_-scalar": lambda v: v.set_("a", torch.tensor(5.0)),  # (upstream raises too)
    "update_-second-bad": lambda v: v.update_({"a": torch.ones(3, 4),
                                               "n": {"c": torch.ones(3, 2)}}),
    "update-second-bad": lambda v: v.update({"a": torch.ones(3, 4), "z": torch.ones(2)}),
    "update-existing-bad": lambda v: v.update({"a": torch.ones(3, 4),
                                               ("n", "c"): torch.ones(3, 9)}),
    "new-key-batch": lambda v: v.__setitem__("z", torch.ones(2)),
    "new-nested-batch": lambda v: v.__setitem__(("x", "y"), torch.ones(2)),
    "set-existing": lambda v: v.set("a", torch.ones(3, 4)),
    "setitem-index-shape": lambda v: v.__setitem__(0, TensorDict(a=torch.ones(5))),
    "add_-shape": lambda v: v.add_(torch.ones(7)),
}
ERRORS = {"set_-missing": KeyError}


@pytest.mark.parametrize("parent", PARENTS)
@pytest.mark.parametrize("index", ["int", "mask"])
@pytest.mark.parametrize("case", BAD_WRITES)
def test_a_failed_write_leaves_the_parent_unchanged(parent, index, case):
    td = PARENTS[parent]()
    idx = INDICES[index] if index == "int" else torch.tensor([False, True])
    before = td.to_tensordict()
    with pytest.raises(ERRORS.get(case, RuntimeError)):
        BAD_WRITES[case](td._get_sub_tensordict(idx))
    _assert_same(td, before)


@pytest.mark.parametrize("method", ["update", "update_"])
def test_a_dtype_a_tensor_index_cannot_take_leaves_the_parent_unchanged(method):
    """At a mask a dense parent's write is an index_put, which needs the dtype of the
    entry: the second entry's refusal comes before the first entry's write."""
    td = _dense()
    before = td.to_tensordict()
    view = td._get_sub_tensordict(torch.tensor([True, False]))
    with pytest.raises(RuntimeError, match="dtype"):
        getattr(view, method)({"a": torch.ones(1, 3, 4), ("n", "c"): torch.ones(1, 3)})
    _assert_same(td, before)


def test_locked_parent_takes_in_place_writes_only():
    td = _dense().lock_()
    view = td._get_sub_tensordict(0)
    assert view.is_locked
    view["a"] = torch.ones(3, 4)
    view.set("a", torch.full((3, 4), 2.0), inplace=True)
    assert td["a"][0].eq(2).all()
    before = td.to_tensordict()
    for write in (lambda: view.__setitem__("z", torch.ones(3)),
                  lambda: view.update({"a": torch.ones(3, 4)}),
                  lambda: view.__delitem__("a"),
                  lambda: view.__setitem__(("n", "q"), torch.ones(3))):
        with pytest.raises(LockedTensorDictError):
            write()
    _assert_same(td, before)
    with pytest.raises(RuntimeError, match="lock the parent"):
        td.unlock_()._get_sub_tensordict(0).lock_()
    assert not td.is_locked


# -- what a view is ----------------------------------------------------------------------------
def test_view_metadata_and_reads():
    from tensordict._td import _SubTensorDict

    td = _dense()
    td.names = ["x", "y"]
    view = td._get_sub_tensordict((..., 2))
    assert type(view) is _SubTensorDict and view.get_parent_tensordict() is td
    assert view.idx == (slice(None), 2) and view.batch_size == (2,)
    assert view.names == ["x"] and view.device is None
    assert view["a"].data_ptr() == td["a"][:, 2].data_ptr()  # a basic index: views
    assert type(view["n"]) is _SubTensorDict and view["n"]["c"].tolist() == [2, 5]
    assert type(view[0]) is _SubTensorDict
    assert type(view.clone()) is TensorDict and type(view.to_tensordict()) is TensorDict
    assert view.to_tensordict()["a"].data_ptr() != view["a"].data_ptr()
    assert repr(view) == ("_SubTensorDict(batch_size=[2], fields={a: f32[4], "
                          "n: _SubTensorDict{c: i64[]}})")
    with pytest.raises(RuntimeError):
        view.names = ["q"]
    with pytest.raises(RuntimeError):
        view.batch_size = [1]


def test_pickled_view_keeps_writing_through_its_parent():
    view = pickle.loads(pickle.dumps(_dense()._get_sub_tensordict(1)))
    assert type(view).__name__ == "_SubTensorDict"
    view["a"] = torch.zeros(3, 4)
    assert view.get_parent_tensordict()["a"][1].sum() == 0


def test_pytree_flattens_the_entries_read_and_rebuilds_a_tensordict():
    td = _dense()
    view = td._get_sub_tensordict(0)
    leaves, spec = pytree.tree_flatten(view)
    assert sorted(leaf.shape for leaf in leaves) == [(3,), (3, 4)]
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert type(rebuilt) is TensorDict and rebuilt.batch_size == (3,)
    assert torch.equal(pytree.tree_map(lambda x: x + 1, view)["a"], td["a"][0] + 1)


def test_torchrl_checkpoint_loader_fills_a_lazy_stack_of_views():
    """TorchRL's TED2Flat loader: a lazy stack of column views of an empty TensorDict,
    filled column by column (new keys, nested ones) through ``unbind``."""
    out = TensorDict(batch_size=[4, 2])
    views = [out._get_sub_tensordict((slice(None), j)) for j in range(2)]
    stack = lazy_stack(views, 1)
    for j, column in enumerate(stack.unbind(-1)):
        assert column is views[j]
        column.set("obs", torch.full((4, 3), float(j)), inplace=True)
        column.set(("next", "obs"), torch.full((4, 3), j + 10.0), inplace=True)
        column.set("obs", torch.full((4, 3), j + 20.0), inplace=True)
    assert out["obs"][..., 0].tolist() == [[20.0, 21.0]] * 4
    assert out["next", "obs"][..., 0].tolist() == [[10.0, 11.0]] * 4
    assert torch.equal(stack["obs"], out["obs"])


def test_lazy_parent_int_view_creates_the_key_in_every_part():
    stack = _lazy()
    stack._get_sub_tensordict(0)["w"] = torch.ones(3)
    assert [part["w"].tolist() for part in stack.tensordicts] == [[1.0] * 3, [0.0] * 3]
    assert isinstance(stack._get_sub_tensordict(0).get("w"), torch.Tensor)


def test_non_tensor_entry_stays_whole_when_written_unchanged():
    td = _dense()
    td.set_non_tensor("s", "orig")
    td._get_sub_tensordict(torch.tensor([True, False])).add_(1)
    assert isinstance(td.get("s"), NonTensorData) and td.get("s").data == "orig"


def _zero(view: Any) -> None:
    assert view.is_shared()
    view.zero_()


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_view_of_a_shared_parent_zeroed_in_another_process(method):
    """TorchRL's test_shared: a worker process zeroes the view; the parent sees it."""
    td = TensorDict(a=torch.ones(4, 3), b=torch.ones(4, 2), batch_size=[4]).share_memory_()
    view = td._get_sub_tensordict(0)
    process = multiprocessing.get_context(method).Process(target=_zero, args=(view,))
    process.start()
    process.join(60)
    assert process.exitcode == 0
    assert td["a"][0].eq(0).all() and td["b"][0].eq(0).all() and td["a"][1:].eq(1).all()


@pytest.mark.parametrize("write", [
    lambda view: view.set_at_("s", "new", 0),
    lambda view: view[0].__setitem__("s", "new"),
    lambda view: view[0].update_({"s": "new"}),
])
def test_non_tensor_writes_at_an_index_of_a_view_reach_that_element_alone(write):
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    td.set_non_tensor("s", "orig")
    write(td._get_sub_tensordict(1))
    assert td.get("s").tolist() == [["orig"] * 3, ["new", "orig", "orig"]]  # as upstream


def test_update__of_a_value_that_is_no_tensor_for_a_missing_key_is_upstreams_type_error():
    td = TensorDict({"a": torch.zeros(3), "n": {"c": torch.zeros(3, 2)}}, [3])
    view = td._get_sub_tensordict(0)
    for source in ({"zz": "new"}, {"zz": 1}, {"n": {"zz": "x"}}):
        with pytest.raises(TypeError, match="zz") as info:
            view.update_(source)
        assert isinstance(info.value, KeyError)  # and the KeyError naming the key
    with pytest.raises(KeyError, match="zz") as info:  # tensors: the KeyError alone
        view.update_({"zz": torch.zeros(())})
    assert not isinstance(info.value, TypeError)
    assert set(td.keys(True, True)) == {"a", ("n", "c")}
    assert not td["a"].any() and not td["n", "c"].any()
