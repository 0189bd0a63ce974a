"""A tensorclass written to a store comes back as that tensorclass (as upstream 0.15.3):
``to_store`` returns the class over the store, ``from_store`` opens a store as the class
it was written from (only where its module is imported) or as ``tensorclass_cls``, its
attributes read and write the server, and pickling keeps the class."""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import pytest
import redis
import torch

from tensordict import TensorDict
from tensordict.store import TensorDictStore

sys.path.insert(0, str(Path(__file__).parent))
from store_classes import Episode  # noqa: E402


def episode() -> Episode:
    return Episode(obs=torch.arange(6.0).view(3, 2), label="run", batch_size=[3])


def reopen(store, server, **kwargs):
    td_id = getattr(store, "_tensordict", store)._td_id
    return TensorDictStore.from_store(td_id=td_id, **server, **kwargs)


def test_to_store_returns_the_class_over_the_store(server):
    tc = episode().to_store(**server)
    assert type(tc) is Episode and type(tc._tensordict) is TensorDictStore
    assert tc.label == "run" and torch.equal(tc.obs, episode().obs)
    tc.obs = torch.zeros(3, 2)  # attribute writes reach the server
    tc.label = "new"
    again = reopen(tc, server)
    assert type(again) is Episode and again.label == "new"
    assert torch.equal(again.obs, torch.zeros(3, 2))
    assert type(again[1]) is Episode and again[1].obs.tolist() == [0.0, 0.0]


def test_from_tensordict_records_the_class(server):
    store = TensorDictStore.from_tensordict(episode(), **server)
    assert type(store) is TensorDictStore  # as upstream: the store itself
    key = f"tensordict:{{{store._td_id}}}:__tensorclass__"
    assert redis.Redis(**server).get(key) == b"store_classes.Episode"
    assert type(reopen(store, server)) is Episode
    plain = TensorDictStore.from_tensordict(TensorDict(obs=torch.zeros(3, 2), batch_size=[3]),
                                            **server)
    assert type(reopen(plain, server)) is TensorDictStore


@pytest.mark.parametrize("spec", [Episode, "store_classes.Episode"])
def test_tensorclass_cls_opens_any_store_as_the_class(server, spec):
    store = TensorDictStore.from_tensordict(
        TensorDict(obs=torch.ones(3, 2), label="x", batch_size=[3]), **server)
    opened = reopen(store, server, tensorclass_cls=spec)
    assert type(opened) is Episode and opened.label == "x"
    assert torch.equal(opened.obs, torch.ones(3, 2))


@pytest.mark.parametrize("spec, error, match", [
    (TensorDict, TypeError, "Expected a TensorClass type"),
    ("store_classes.Missing", AttributeError, "Missing"),
    ("no_such_module_44.Episode", ModuleNotFoundError, "no_such_module_44"),
    ("Episode", ValueError, "dotted path"),
])
def test_bad_tensorclass_cls_raises_as_upstream(server, spec, error, match):
    store = TensorDictStore.from_tensordict(episode(), **server)
    with pytest.raises(error, match=match):
        reopen(store, server, tensorclass_cls=spec)


def test_a_recorded_class_is_resolved_only_in_imported_modules(server):
    store = TensorDictStore.from_tensordict(episode(), **server)
    client = redis.Redis(**server)
    key = f"tensordict:{{{store._td_id}}}:__tensorclass__"
    client.set(key, "store_never_imported.Hidden")
    with pytest.warns(UserWarning, match="store_never_imported.Hidden"):
        opened = reopen(store, server)
    assert type(opened) is TensorDictStore and "store_never_imported" not in sys.modules
    client.set(key, "os.system")  # imported, but no tensorclass
    with pytest.raises(TypeError, match="Expected a TensorClass type"):
        reopen(store, server)
    assert type(reopen(store, server, tensorclass_cls=Episode)) is Episode


def test_pickling_keeps_the_class(server):
    tc = episode().to_store(**server)
    again = pickle.loads(pickle.dumps(tc))
    assert type(again) is Episode and type(again._tensordict) is TensorDictStore
    assert again._tensordict._td_id == tc._tensordict._td_id
    again.obs = torch.full((3, 2), 5.0)
    assert torch.equal(reopen(tc, server).obs, torch.full((3, 2), 5.0))


def test_a_clone_of_a_stored_tensorclass_is_a_new_store_of_the_class(server):
    tc = episode().to_store(**server)
    copy = tc.clone()
    assert type(copy) is Episode and type(copy._tensordict) is TensorDictStore
    assert copy._tensordict._td_id != tc._tensordict._td_id
    copy.obs = torch.zeros(3, 2)
    assert torch.equal(reopen(tc, server).obs, episode().obs)
    assert type(reopen(copy, server)) is Episode
