"""Non-tensor entries of a store hold one value per element (as upstream 0.15.3): writes
per element, by slice, by tensor index or mask, and of a whole NonTensorStack, each read
back from a freshly opened store; writes at an index create the entries a store lacks,
as a TensorDict creates them."""

from __future__ import annotations

import pytest
import redis
import torch

from tensordict import NonTensorData, NonTensorStack, TensorDict
from tensordict.store import TensorDictStore


def reopen(store, server) -> TensorDictStore:
    return TensorDictStore.from_store(td_id=store._td_id, **server)


@pytest.fixture
def store(server):
    td = TensorDict(a=torch.arange(4.0), batch_size=[4])
    td.set_non_tensor("s", "x")
    return TensorDictStore.from_tensordict(td, **server)


def stack(*items):
    return TensorDict(s=NonTensorStack(*items), a=torch.zeros(len(items)),
                      batch_size=[len(items)])


WRITES = {
    "element": (lambda s: s.__setitem__(0, TensorDict(a=torch.tensor(9.0), s="y")),
                ["y", "x", "x", "x"]),
    "view": (lambda s: s[0].set_non_tensor("s", "y"), ["y", "x", "x", "x"]),
    "set_at_": (lambda s: s.set_at_("s", "w", 1), ["x", "w", "x", "x"]),
    "update_at_": (lambda s: s.update_at_({"s": NonTensorData("w")}, 1), ["x", "w", "x", "x"]),
    "slice": (lambda s: s.__setitem__(slice(1, 3), stack("p", "q")), ["x", "p", "q", "x"]),
    "slice of one value": (
        lambda s: s.__setitem__(slice(1, 3), TensorDict(s="z", a=torch.zeros(2),
                                                        batch_size=[2])),
        ["x", "z", "z", "x"]),
    "tensor index": (lambda s: s.__setitem__(torch.tensor([3, 0]), stack("p", "q")),
                     ["q", "x", "x", "p"]),
    "mask": (lambda s: s.__setitem__(torch.tensor([True, False, True, False]),
                                     stack("p", "q")), ["p", "x", "q", "x"]),
    "stack": (lambda s: s.set("s", NonTensorStack("a", "b", "c", "d")), ["a", "b", "c", "d"]),
    "list": (lambda s: s.set("s", ["a", "b", "c", "d"]), ["a", "b", "c", "d"]),
}


@pytest.mark.parametrize("write", WRITES, ids=list(WRITES))
def test_non_tensor_entries_hold_one_value_per_element(store, server, write):
    apply, expected = WRITES[write]
    apply(store)
    again = reopen(store, server)
    assert isinstance(again.get("s"), NonTensorStack)
    assert again["s"] == expected
    assert again[1]["s"] == expected[1]  # one element read back alone
    meta = redis.Redis(**server).hgetall(f"tensordict:{{{store._td_id}}}:m:s")
    assert meta[b"encoding"] == b"json_array"  # upstream's layout for it


def test_a_bad_write_at_an_index_changes_nothing(store, server):
    with pytest.raises(RuntimeError):
        store[0:2] = TensorDict(a=torch.zeros(2, 5), s=NonTensorStack("p", "q"),
                                batch_size=[2])
    again = reopen(store, server)
    assert again["s"] == "x" and again["a"].tolist() == [0.0, 1.0, 2.0, 3.0]


INDEX_WRITES = {
    "int": (1, TensorDict(a=torch.tensor(2.0), b=torch.ones(2, dtype=torch.int64))),
    "dict": (1, {"a": torch.tensor(2.0), "b": torch.ones(2, dtype=torch.int64)}),
    "slice": (slice(1, 3), TensorDict(a=torch.ones(2), batch_size=[2])),
    "tensor": (torch.tensor([0, 2]), TensorDict(a=torch.ones(2), batch_size=[2])),
    "nested": (1, TensorDict(n=TensorDict(c=torch.ones(3)))),
    "non-tensor": (1, TensorDict(a=torch.tensor(2.0), s="hi")),
    "stack": (slice(0, 2), TensorDict(s=NonTensorStack("p", "q"), batch_size=[2])),
}


@pytest.mark.parametrize("write", INDEX_WRITES, ids=list(INDEX_WRITES))
def test_writes_at_an_index_create_the_entries(server, write):
    index, value = INDEX_WRITES[write]
    store = TensorDictStore(batch_size=[4], **server)
    store[index] = value
    expected = TensorDict(batch_size=[4])
    expected[index] = value
    again = reopen(store, server).to_tensordict()
    assert set(again.keys(True, True)) == set(expected.keys(True, True))
    for key, leaf in expected.items(True, True):
        if isinstance(leaf, torch.Tensor):
            assert again[key].dtype == leaf.dtype and torch.equal(again[key], leaf), key
        else:
            assert again[key] == expected[key], key


def test_a_locked_store_creates_no_entry_at_an_index(server):
    store = TensorDictStore.from_tensordict(TensorDict(a=torch.zeros(4), batch_size=[4]),
                                            **server).lock_()
    with pytest.raises(RuntimeError, match="locked"):
        store[1] = TensorDict(a=torch.tensor(1.0), z=torch.tensor(5))
    store[1] = TensorDict(a=torch.tensor(1.0))  # an existing entry: written, as upstream
    again = reopen(store, server)
    assert list(again.keys()) == ["a"] and again["a"].tolist() == [0.0, 1.0, 0.0, 0.0]


def test_a_list_is_converted_as_a_tensordict_converts_it(store, server):
    store["n"] = {"labels": ["a", "b", "c", "d"]}
    store["numbers"] = [1, 2, 3, 4]
    with pytest.raises(RuntimeError, match="batch dimension mismatch.*'short'"):
        store["short"] = [1, 2, 3]
    again = reopen(store, server)
    assert again["n", "labels"] == ["a", "b", "c", "d"]
    assert again["numbers"].tolist() == [1, 2, 3, 4] and "short" not in again.keys()
