"""Every write to a store lands or raises (issue 43): index views of a store, lazy
stacks of stores, casts and bad writes, each read back from a freshly opened store and
compared with the same write on an in-memory TensorDict."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, lazy_stack
from tensordict.store import LazyStackedTensorDictStore, TensorDictStore


def sample(value: float = 0.0) -> TensorDict:
    return TensorDict({"a": torch.full((4, 2), value), "n": {"b": torch.full((4,), value)},
                       "h": torch.full((4,), value, dtype=torch.bfloat16)}, [4])


def fresh(store, server) -> TensorDict:
    """What a new connection to ``store`` reads."""
    return TensorDictStore.from_store(td_id=store._td_id, **server).to_tensordict()


def assert_same(got: TensorDict, expected: TensorDict) -> None:
    assert set(got.keys(True, True)) == set(expected.keys(True, True))
    for key, value in expected.items(True, True):
        assert got[key].dtype == value.dtype, key
        assert torch.equal(got[key], value), (key, got[key], value)


MASK = torch.tensor([True, False, True, False])
VIEW_WRITES = {
    "s[0].add_(100)": lambda t: t[0].add_(100),
    "s[2:].zero_()": lambda t: t[2:].zero_(),
    "s[1].set_('a', ...)": lambda t: t[1].set_("a", torch.full((2,), 6.0)),
    "s[0]['a'] = 5": lambda t: t[0].__setitem__("a", 5),  # (see EXPECTED)
    "s[1:3].update_(...)": lambda t: t[1:3].update_({"a": torch.full((2, 2), 3.0)}),
    "s[mask].add_(3)": lambda t: t[MASK].add_(3),
    "s[[0, 2]].mul_(2)": lambda t: t[[0, 2]].add_(1).mul_(2),
    "s[::2].fill_('a', 4)": lambda t: t[::2].fill_("a", 4),
    "s['n'][2].add_(7)": lambda t: t["n"][2].add_(7),
    "s['n'][2]['b'] = 7": lambda t: t["n"][2].__setitem__("b", torch.tensor(7.0)),
    "s[0]['n']['b'] = 2": lambda t: t[0]["n"].__setitem__("b", torch.tensor(2.0)),
    "s[1].apply_(...)": lambda t: t[1].apply_(lambda x: x + 1),
    "s[0].copy_(...)": lambda t: t[0].copy_(TensorDict(
        {"a": torch.ones(2), "n": {"b": torch.tensor(2.0)}, "h": torch.tensor(3.0)}, [])),
    "s[1:3][0].add_(1)": lambda t: t[1:3][0].add_(1),
}
# where an in-memory TensorDict's ``td[index]`` is no view (a tensor index) or
# ``td[0][key] = v`` replaces the entry there: what a sub-TensorDict view (and upstream's
# index views of files) leaves behind
EXPECTED = {
    "s[mask].add_(3)": lambda t: t.__setitem__(MASK, t[MASK] + 3),
    "s[[0, 2]].mul_(2)": lambda t: t.__setitem__([0, 2], (t[[0, 2]] + 1) * 2),
    "s[0]['a'] = 5": lambda t: t["a"].__setitem__(0, 5),
    "s['n'][2]['b'] = 7": lambda t: t["n", "b"].__setitem__(2, 7),
    "s[0]['n']['b'] = 2": lambda t: t["n", "b"].__setitem__(0, 2),
}


@pytest.mark.parametrize("write", list(VIEW_WRITES))
def test_index_views_write_through(server, write):
    store = sample(1.0).to_store(**server)
    expected = sample(1.0)
    EXPECTED.get(write, VIEW_WRITES[write])(expected)
    VIEW_WRITES[write](store)
    assert_same(fresh(store, server), expected)


def test_a_new_key_through_a_view_is_created_with_zeros_elsewhere(server):
    store = sample().to_store(**server)
    store[1]["new"] = torch.ones(3)
    got = fresh(store, server)
    assert got["new"].tolist() == [[0.0] * 3, [1.0] * 3, [0.0] * 3, [0.0] * 3]


def test_views_read_what_is_stored_now(server):
    store = sample().to_store(**server)
    view = store[1:3]
    TensorDictStore.from_store(td_id=store._td_id, **server)["a"] = torch.ones(4, 2)
    assert view["a"].tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_casts_convert_values(server):
    store = sample().to_store(**server)
    store.set_("a", torch.tensor([[1.5, 2.0]] * 4, dtype=torch.bfloat16))
    store.set_("h", torch.full((4,), 2.5))
    store[0] = {"n": {"b": torch.tensor(3.5, dtype=torch.bfloat16)}}
    store[1].set_("h", torch.tensor(4.5, dtype=torch.float64))
    got = fresh(store, server)
    assert got["a"].dtype == torch.float32 and got["a"][0].tolist() == [1.5, 2.0]
    assert got["h"].dtype == torch.bfloat16 and got["h"].tolist() == [2.5, 4.5, 2.5, 2.5]
    assert got["n", "b"].tolist() == [3.5, 0.0, 0.0, 0.0]


BAD_WRITES = {
    "set_ shape": lambda s: s.set_("a", torch.ones(4, 3)),
    "set_ nested shape": lambda s: s.set_(("n", "b"), torch.ones(4, 2)),
    "update_ one bad": lambda s: s.update_({"n": {"b": torch.ones(4)},
                                           "a": torch.ones(4, 3)}),
    "view set_": lambda s: s[0].set_("a", torch.ones(3)),
    "view update_": lambda s: s[1:3].update_({"n": {"b": torch.ones(2)},
                                              "a": torch.ones(2, 5)}),
    "view setitem": lambda s: s[0].__setitem__("a", torch.ones(5)),
    "index write": lambda s: s.__setitem__(0, {"n": {"b": torch.tensor(1.0)},
                                              "a": torch.ones(3)}),
}


@pytest.mark.parametrize("write", list(BAD_WRITES))
def test_bad_writes_raise_and_change_nothing(server, write):
    store = sample().to_store(**server)
    with pytest.raises(RuntimeError, match="shape"):
        BAD_WRITES[write](store)
    assert_same(fresh(store, server), sample())


@pytest.mark.parametrize("method", ["select", "exclude"])
def test_select_and_exclude_raise_as_upstream(server, method):
    store = sample().to_store(**server)
    with pytest.raises(NotImplementedError, match=f"Cannot call {method}"):
        getattr(store, method)("a")
    with pytest.raises(NotImplementedError, match=f"Cannot call {method}"):
        getattr(store[0], method)("a")
    with pytest.raises(NotImplementedError, match=f"Cannot call {method}"):
        getattr(lazy_stack([store, store]), method)("a")
    assert store.to_tensordict()["a"].shape == (4, 2)


def stacks(server):
    """A lazy stack of two stores, and the same stack of TensorDicts."""
    stores = [sample(0.0).to_store(**server), sample(1.0).to_store(**server)]
    return stores, lazy_stack(stores), lazy_stack([sample(0.0), sample(1.0)])


STACK_WRITES = {
    "update_": lambda t: t.update_({"a": torch.full((2, 4, 2), 5.0)}),
    "update_ nested": lambda t: t.update_({"n": {"b": torch.full((2, 4), 5.0)}}),
    "update_ bf16": lambda t: t.update_({"a": torch.full((2, 4, 2), 1.5,
                                                         dtype=torch.bfloat16)}),
    "set_": lambda t: t.set_("a", torch.full((2, 4, 2), 5.0)),
    "set_ nested": lambda t: t.set_(("n", "b"), torch.full((2, 4), 5.0)),
    "set_ bf16": lambda t: t.set_("a", torch.full((2, 4, 2), 1.5, dtype=torch.bfloat16)),
    "apply_": lambda t: t.apply_(lambda x: x + 2),
    "copy_": lambda t: t.copy_(lazy_stack([sample(8.0), sample(9.0)])),
    "setitem key": lambda t: t.__setitem__("a", torch.full((2, 4, 2), 4.0)),
    "setitem index": lambda t: t.__setitem__((slice(None), 1),
                                             TensorDict({"a": torch.full((2, 2), 4.0)}, [2])),
    "update_at_": lambda t: t.update_at_({"a": torch.full((2,), 9.0)}, (1, 2)),
    "part add_": lambda t: t[0].add_(4),
}
# in-place ops: core's lazy stack runs them on its data read into memory and update_s itself
# with the result, since its parts read copies
STACK_WRITES.update({
    "add_": lambda t: t.add_(10),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_("a", 7),
    "mul_": lambda t: t.mul_(3),
    "+=": lambda t: t.__iadd__(3),
    "masked_fill_": lambda t: t.masked_fill_(
        torch.tensor([[True, False, True, False], [False, False, True, True]]), 6.0),
    "clamp_min_": lambda t: t.clamp_min_(0.5),
    "mask add_": lambda t: t[torch.tensor([True, False])].add_(2),
    "nested zero_": lambda t: t["n"].zero_(),
})


@pytest.mark.parametrize("write", list(STACK_WRITES))
def test_lazy_stacks_of_stores_write_through(server, write):
    op = STACK_WRITES[write]
    stores, stack, expected = stacks(server)
    op(expected)
    op(stack)
    for store, part in zip(stores, expected.tensordicts):
        assert_same(fresh(store, server), part)


def test_a_bad_write_into_a_stack_of_stores_changes_no_part(server):
    stores, stack, _ = stacks(server)
    with pytest.raises(RuntimeError, match="shape"):
        stack.update_({"n": {"b": torch.full((2, 4), 5.0)}, "a": torch.ones(2, 4, 3)})
    with pytest.raises(RuntimeError, match="shape"):
        stack.set_("a", torch.ones(2, 4, 3))
    for store, value in zip(stores, (0.0, 1.0)):
        assert_same(fresh(store, server), sample(value))


def test_deleted_keys_raise_key_error(server):
    stores, stack, _ = stacks(server)
    assert stack["a"].shape == (2, 4, 2)  # the keys and metadata are cached now
    for store in stores:
        other = TensorDictStore.from_store(td_id=store._td_id, **server)
        del other["a"]
        del other["n"]
    for read in (lambda: stack["a"], lambda: stack[0]["a"], lambda: stores[0]["a"],
                 lambda: stores[1][0]["a"], lambda: stack["n", "b"]):
        with pytest.raises(KeyError):
            read()
    assert set(stores[0].to_tensordict().keys()) == {"h"}
    assert set(stores[1][1:3].to_tensordict().keys()) == {"h"}


def test_deleted_keys_of_a_stacked_store_raise_key_error(server):
    store = lazy_stack([sample(0.0), sample(1.0)]).to_store(**server)
    assert store["a"].shape == (2, 4, 2)
    del LazyStackedTensorDictStore.from_store(td_id=store._td_id, **server)["a"]
    with pytest.raises(KeyError, match="a"):
        store["a"]
    with pytest.raises(KeyError, match="a"):
        store[0]["a"]
    assert "a" not in store.to_tensordict().keys()


def test_index_views_of_a_stacked_store_write_through(server):
    store = lazy_stack([sample(0.0), sample(1.0)]).to_store(**server)
    store[0:1].add_(5)
    store[:, 2].zero_()
    got = LazyStackedTensorDictStore.from_store(td_id=store._td_id, **server)
    expected = lazy_stack([sample(0.0), sample(1.0)])
    expected[0:1].add_(5)
    expected[:, 2].zero_()
    assert_same(got.to_tensordict(), expected.to_tensordict())


def ragged_store(server):
    stack = lazy_stack([TensorDict(a=torch.zeros(2), r=torch.zeros(2)),
                        TensorDict(a=torch.ones(2), r=torch.ones(3))])
    return stack.to_store(**server)


def read_elements(store, server):
    again = LazyStackedTensorDictStore.from_store(td_id=store._td_id, **server)
    return [again[i].to_tensordict() for i in range(2)]


STACKED_STORE_WRITES = {
    "set_ bf16": (lambda s: s.set_("a", torch.full((2, 2), 1.5, dtype=torch.bfloat16)),
                  [[1.5, 1.5], [1.5, 1.5]]),
    "update_ bf16": (lambda s: s.update_({"a": torch.full((2, 2), 1.5,
                                                          dtype=torch.bfloat16)}),
                     [[1.5, 1.5], [1.5, 1.5]]),
    "element set_ bf16": (lambda s: s[0].set_("a", torch.full((2,), 1.5,
                                                              dtype=torch.bfloat16)),
                          [[1.5, 1.5], [1.0, 1.0]]),
    "element setitem number": (lambda s: s[0].__setitem__("a", 5.0),
                               [[5.0, 5.0], [1.0, 1.0]]),
    "index view add_": (lambda s: s[0:1].add_(3), [[3.0, 3.0], [1.0, 1.0]]),
    "index view zero_": (lambda s: s[torch.tensor([False, True])].zero_(),
                         [[0.0, 0.0], [0.0, 0.0]]),
}


@pytest.mark.parametrize("write", list(STACKED_STORE_WRITES))
def test_stacked_store_writes_keep_shapes_and_dtypes(server, write):
    op, expected = STACKED_STORE_WRITES[write]
    store = ragged_store(server)
    op(store)
    elements = read_elements(store, server)
    assert [element["a"].tolist() for element in elements] == expected
    assert all(element["a"].dtype == torch.float32 for element in elements)


@pytest.mark.parametrize("write", [
    lambda s: s.set_("a", torch.ones(2, 3)),
    lambda s: s.update_({"a": torch.ones(2, 3)}),
    lambda s: s[0].set_("a", torch.ones(3)),
    lambda s: s[0].__setitem__("a", torch.ones(3)),
    lambda s: s[1].update({"r": torch.ones(2)}),
])
def test_stacked_store_bad_writes_change_nothing(server, write):
    store = ragged_store(server)
    with pytest.raises(RuntimeError, match="shape"):
        write(store)
    elements = read_elements(store, server)
    assert [element["a"].tolist() for element in elements] == [[0.0, 0.0], [1.0, 1.0]]
    assert [element["r"].tolist() for element in elements] == [[0.0, 0.0], [1.0] * 3]


def test_stacked_store_select_and_exclude_raise_as_upstream(server):
    store = ragged_store(server)
    for target in (store, store[0]):
        with pytest.raises(NotImplementedError, match="Cannot call select"):
            target.select("a")
        with pytest.raises(NotImplementedError, match="Cannot call exclude"):
            target.exclude("a")


def test_update__writes_non_tensor_data_with_the_tensors(server):
    td = sample()
    td.set_non_tensor("s", "orig")
    store = td.to_store(**server)
    store.update_({"s": "new", "a": torch.ones(4, 2)})
    got = TensorDictStore.from_store(td_id=store._td_id, **server)
    assert got["s"] == "new" and got["a"].sum().item() == 8.0
    with pytest.raises(RuntimeError, match="shape"):
        store.update_({"s": "newer", "a": torch.ones(4, 3)})
    assert got["s"] == "new"


def test_element_update__writes_every_entry(server):
    store = ragged_store(server)
    store[1].update_({"a": torch.full((2,), 4.0), "r": torch.full((3,), 5.0)})
    elements = read_elements(store, server)
    assert elements[1]["a"].tolist() == [4.0, 4.0] and elements[1]["r"].tolist() == [5.0] * 3
    assert elements[0]["a"].tolist() == [0.0, 0.0]


def test_a_locked_store_takes_in_place_writes_only(server):
    store = sample().to_store(**server)
    store.lock_()
    store[0] = {"a": torch.ones(2)}
    store[1].add_(2)
    store.set_("h", torch.full((4,), 3.0))
    with pytest.raises(RuntimeError, match="locked"):
        store["new"] = torch.ones(4)
    with pytest.raises(RuntimeError, match="locked"):
        store[0]["new"] = torch.ones(())
    got = fresh(store, server)
    assert got["a"][:, 0].tolist() == [1.0, 2.0, 0.0, 0.0]
    assert got["h"].tolist() == [3.0] * 4 and "new" not in got.keys()


# -- new sub-collections through a view: leaves from the start (a store holds no empty node)
NEW_THROUGH_VIEW = {  # rows(index): the view of the rows at index
    "s[0]['q'] = td": lambda rows: rows(0).__setitem__(
        "q", TensorDict({"r": torch.full((2,), 3.0)}, [])),
    "s[1:3][('q', 'r')] = v": lambda rows: rows(slice(1, 3)).__setitem__(
        ("q", "r"), torch.ones(2, 5)),
    "s[1].update(keys_to_update)": lambda rows: rows(1).update(
        TensorDict({("q", "r"): torch.ones(3), "a": torch.ones(2)}, []),
        keys_to_update=[("q", "r")]),
}


@pytest.mark.parametrize("write", list(NEW_THROUGH_VIEW))
def test_new_sub_collections_through_a_view_hold_zero_leaves(server, write):
    store, expected = sample(0.0).to_store(**server), sample(0.0)
    NEW_THROUGH_VIEW[write](store.__getitem__)
    NEW_THROUGH_VIEW[write](expected._get_sub_tensordict)
    assert_same(fresh(store, server), expected)


def test_an_index_view_pickles_as_its_own_class(server):
    import pickle

    store = sample(0.0).to_store(**server)
    view = pickle.loads(pickle.dumps(store[1:3]))
    assert type(view) is type(store[1:3])
    view.add_(1)
    assert fresh(store, server)["a"][:, 0].tolist() == [0.0, 1.0, 1.0, 0.0]


def test_a_failed_apply_over_a_stack_leaves_its_view_parts_unwritten(server):
    store = sample(0.0).to_store(**server)
    other = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.zeros(2)},
                        "h": torch.zeros(2, dtype=torch.bfloat16)}, [2])
    stack = lazy_stack([store[1:3], other])
    with pytest.raises(RuntimeError):  # other's "a" cannot take a (2, 2) result
        stack.apply_(lambda x: x[..., :2] + 1 if x.ndim == 2 else x + 1)
    assert_same(fresh(store, server), sample(0.0))
