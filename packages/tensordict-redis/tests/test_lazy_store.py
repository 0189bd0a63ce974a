"""LazyStackedTensorDictStore against a real redis-server: elements of different shapes
in upstream 0.15.3's layout, element views that write through, reopening by id."""

from __future__ import annotations

import numpy as np
import pytest
import redis
import torch

import tensordict
from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack
from tensordict.store import LazyStackedTensorDictStore


def ragged():
    return lazy_stack([TensorDict(a=torch.zeros(2), b=torch.ones(3), s="x"),
                       TensorDict(a=torch.arange(3.0), b=torch.full((3,), 2.0), s="y")])


@pytest.fixture
def store(server):
    out = ragged().to_store(**server)
    yield out
    out.close()


def test_lazy_stacks_become_lazy_stores(store):
    assert isinstance(store, LazyStackedTensorDictStore)
    assert store.batch_size == torch.Size([2])
    assert tensordict.LazyStackedTensorDictStore is LazyStackedTensorDictStore


def test_reads(store, server):
    again = LazyStackedTensorDictStore.from_store(td_id=store._td_id, **server)
    assert again[1]["a"].tolist() == [0.0, 1.0, 2.0]
    assert again[0]["s"] == "x" and again[1]["s"] == "y"
    assert torch.equal(again["b"], torch.stack([torch.ones(3), torch.full((3,), 2.0)]))
    with pytest.raises(RuntimeError, match="'a'"):
        again["a"]  # the elements differ in shape: read them one by one
    local = again.to_tensordict()
    assert isinstance(local, LazyStackedTensorDict)
    assert local.tensordicts[0]["a"].shape == (2,)


def test_upstream_layout(store, server):
    client = redis.Redis(**server)
    space = f"tensordict:{{{store._td_id}}}:"
    assert client.get(space + "__type__") == b"lazy_stack"
    assert client.get(space + "__count__") == b"2"
    assert client.get(space + "__inner_batch_size__") == b"[]"
    ragged_meta = client.hgetall(space + "m:a")
    assert ragged_meta[b"homogeneous"] == b"0" and ragged_meta[b"shapes"] == b"[[2], [3]]"
    offsets = np.frombuffer(client.get(space + "d:a:idx"), dtype="<i8").tolist()
    assert offsets == [0, 8, 20]
    assert client.hgetall(space + "m:b")[b"homogeneous"] == b"1"


def test_element_writes_reach_the_server(store, server):
    store[0]["a"] = torch.full((2,), 7.0)  # (in place: another shape raises, as upstream)
    store[1] = {"b": torch.zeros(3)}
    store["c"] = torch.arange(2)
    again = LazyStackedTensorDictStore.from_store(td_id=store._td_id, **server)
    assert again[0]["a"].tolist() == [7.0] * 2
    assert again["b"][1].tolist() == [0.0, 0.0, 0.0]
    assert again[1]["c"].item() == 1
    del again["c"]
    # this instance caches the keys (cache_metadata=True); a new one, or one that does
    # not cache, sees the other instance's change
    assert "c" not in LazyStackedTensorDictStore.from_store(
        td_id=store._td_id, **server).keys()
    uncached = LazyStackedTensorDictStore.from_store(td_id=store._td_id,
                                                     cache_metadata=False, **server)
    del again["b"]
    assert set(uncached.keys()) == {"a", "s"}


def test_bad_writes_change_nothing(store):
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        store["c"] = torch.zeros(3)
    with pytest.raises(KeyError, match="No LazyStackedTensorDictStore with td_id='missing' "
                       "found"):  # upstream's words
        LazyStackedTensorDictStore.from_store(td_id="missing", host="127.0.0.1",
                                              port=store._shared.client.connection_pool
                                              .connection_kwargs["port"])
    assert set(store.keys()) == {"a", "b", "s"}


def test_in_place_ops_write_back(store):
    store.del_("s")
    store.add_(1)
    assert store[0]["a"].tolist() == [1.0, 1.0]
    assert store[1]["b"].tolist() == [3.0, 3.0, 3.0]
