"""What a store is as a collection, as upstream 0.15.3: ``from_dict`` and
``from_tensordict`` keep the device, ``clone()`` gives a new store (``recurse=False``:
another handle on the same one), ``is_contiguous()`` is False, ``share_memory_()``
raises, the backend name survives pickling and lazy stacks, and the metadata cache can
be disabled and is evicted on delete."""

from __future__ import annotations

import pickle

import pytest
import redis
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack
from tensordict.store import LazyStackedTensorDictStore, TensorDictStore


def reopen(store, server, **kwargs) -> TensorDictStore:
    return TensorDictStore.from_store(td_id=store._td_id, **server, **kwargs)


def sample() -> TensorDict:
    return TensorDict(a=torch.arange(4.0), n=TensorDict(b=torch.ones(4, 2), batch_size=[4]),
                      s="text", batch_size=[4], device="cpu")


@pytest.mark.parametrize("kwargs, batch_size", [
    ({"batch_size": [3]}, [3]), ({"auto_batch_size": True}, [3]), ({"batch_dims": 1}, [3]),
    ({}, []),
])
def test_from_dict(server, kwargs, batch_size):
    store = TensorDictStore.from_dict({"a": torch.zeros(3), "n": {"c": torch.ones(3, 2)}},
                                      backend="redis", device="cpu", **kwargs, **server)
    again = reopen(store, server)
    assert again.batch_size == torch.Size(batch_size) and again.device == torch.device("cpu")
    assert torch.equal(again["n", "c"], torch.ones(3, 2))


def test_the_device_of_the_tensordict_is_kept(server):
    for store in (TensorDictStore.from_tensordict(sample(), **server), sample().to_store(**server)):
        assert store.device == torch.device("cpu")
        assert reopen(store, server).device == torch.device("cpu")
    on_none = TensorDictStore.from_tensordict(sample().clear_device_(), **server)
    assert on_none.device is None and reopen(on_none, server).device is None


def test_a_lazy_stack_keeps_its_device(server):
    stack = lazy_stack([TensorDict(obs=torch.zeros(2), device="cpu"),
                        TensorDict(obs=torch.ones(3), device="cpu")])
    store = stack.to_store(**server)
    assert store.device == torch.device("cpu")
    again = LazyStackedTensorDictStore.from_store(td_id=store._td_id, **server)
    assert again.device == torch.device("cpu") and again[1]["obs"].device.type == "cpu"


def test_clone_is_a_new_store(server):
    store = TensorDictStore.from_tensordict(sample(), **server)
    copy = store.clone()
    assert type(copy) is TensorDictStore and copy._td_id != store._td_id
    assert copy.device == torch.device("cpu")
    copy["a"] += 1
    copy["n", "b"].zero_()  # a read copy: nothing written
    assert reopen(store, server)["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    fresh = reopen(copy, server)
    assert fresh["a"].tolist() == [1.0, 2.0, 3.0, 4.0] and fresh["s"] == "text"
    nested = store["n"].clone()
    assert type(nested) is TensorDictStore and list(nested.keys()) == ["b"]


def test_clone_without_recurse_is_a_handle_on_the_same_store(server):
    store = TensorDictStore.from_tensordict(sample(), **server).lock_()
    handle = store.clone(recurse=False)
    assert type(handle) is TensorDictStore and handle._td_id == store._td_id
    assert not handle.is_locked
    handle["a"] += 10
    assert reopen(store, server)["a"].tolist() == [10.0, 11.0, 12.0, 13.0]


def test_a_lazy_store_clones_as_upstream(server):
    stack = lazy_stack([TensorDict(obs=torch.zeros(2)), TensorDict(obs=torch.ones(3))])
    store = stack.to_store(**server)
    handle, copy = store.clone(False), store.clone()
    assert type(handle) is type(copy) is LazyStackedTensorDictStore
    assert handle._td_id == store._td_id and copy._td_id != store._td_id
    assert copy[1]["obs"].tolist() == [1.0, 1.0, 1.0]


def test_not_contiguous_and_no_shared_memory(server):
    store = TensorDictStore.from_tensordict(sample(), **server)
    lazy = lazy_stack([TensorDict(obs=torch.zeros(2))] * 2).to_store(**server)
    for collection in (store, store["n"], lazy, lazy[0]):
        assert collection.is_contiguous() is False
    assert type(store.contiguous()) is TensorDict
    for collection, name in ((store, "TensorDictStore"), (store["n"], "TensorDictStore"),
                             (lazy, "LazyStackedTensorDictStore")):
        with pytest.raises(NotImplementedError,
                           match=f"Cannot call share_memory_ on a {name}. Call "
                                 "`to_tensordict\\(\\)` first."):
            collection.share_memory_()
    assert not store.is_locked and reopen(store, server)["a"].tolist() == [0, 1, 2, 3]


def test_the_constructor_makes_the_store_of_a_new_id(server):
    store = TensorDictStore(td_id="fresh-44", **server)
    assert store.batch_size == torch.Size([]) and list(store.keys()) == []
    assert redis.Redis(**server).get("tensordict:{fresh-44}:__batch_size__") == b"[]"
    with pytest.raises(ValueError, match="unknown store backend 'foo'"):
        TensorDictStore.from_dict({"a": torch.zeros(2)}, backend="foo", **server)


def test_the_backend_name_survives_pickling_and_lazy_stacks(server):
    store = TensorDictStore.from_tensordict(sample(), **server)
    lazy = lazy_stack([TensorDict(obs=torch.zeros(2))] * 2).to_store(**server)
    assert store._backend == lazy._backend == "redis"
    assert pickle.loads(pickle.dumps(store))._backend == "redis"
    assert pickle.loads(pickle.dumps(lazy))._backend == "redis"
    stacked = pickle.loads(pickle.dumps(LazyStackedTensorDict(store, store)))
    assert [part._backend for part in stacked.tensordicts] == ["redis", "redis"]
    assert "backend='redis'" in repr(stacked.tensordicts[0])


@pytest.mark.parametrize("cache", [True, False])
def test_the_metadata_cache(server, cache):
    store = TensorDictStore.from_tensordict(sample(), cache_metadata=cache, **server)
    other = reopen(store, server, cache_metadata=cache)
    assert sorted(other.keys()) == ["a", "n", "s"]
    store["new"] = torch.ones(4)
    del store["a"]
    assert sorted(store.keys()) == ["n", "new", "s"]  # its own cache is evicted
    with pytest.raises(KeyError):
        store["a"]
    assert store.get("a", None) is None
    # another instance sees the changes at once only without the cache
    assert sorted(other.keys()) == (["a", "n", "s"] if cache else ["n", "new", "s"])
    with pytest.raises(KeyError):
        other["a"]  # deleted: gone for every instance
    assert sorted(reopen(store, server).keys()) == ["n", "new", "s"]
