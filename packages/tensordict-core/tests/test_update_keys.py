"""``keys_to_update``: matched alike by every update method, as upstream matches it.

A key selects its whole subtree, keys are unravelled first, ``update`` writes whole an
entry a key runs through where the destination has no sub-TensorDict to merge it into,
and the in-place updates raise KeyError for a selected leaf the destination lacks.
Each test reads back the state left behind, on dense, nested and lazy-stacked
destinations.
"""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.storage import WriteBackMixin


def _source():
    return TensorDict({("agents", "obs"): torch.ones(3, 2), ("agents", "rew"): torch.ones(3),
                       ("agents", "sub", "z"): torch.ones(3), "x": torch.ones(3)}, [3])


def _flat():
    return TensorDict({"x": torch.zeros(3)}, [3])


def _nested():
    return TensorDict({("agents", "obs"): torch.zeros(3, 2), ("agents", "rew"): torch.zeros(3),
                       "x": torch.zeros(3)}, [3])


def _lazy():
    return LazyStackedTensorDict.lazy_stack([_nested()[i] for i in range(3)], 0)


def _state(td):
    """Each leaf as (key, the sum of its values): what a write changed."""
    return {key: td.get(key).sum().item() for key in td.keys(True, True)}


_SOURCES = {"td": _source, "dict": lambda: _source().to_dict(),
            "lazy": lambda: LazyStackedTensorDict.lazy_stack(list(_source().unbind(0)), 0)}
_NESTED = {"nested": _nested, "lazy": _lazy}


@pytest.mark.parametrize("source", sorted(_SOURCES))
@pytest.mark.parametrize("key", [("agents", "obs"), (("agents",), "obs"), ("agents", "missing"),
                                 ("agents", "obs", "deeper")])
def test_update_creates_the_level_the_destination_lacks_whole(source, key):
    dest = _flat()
    dest.update(_SOURCES[source](), keys_to_update=[key])
    # upstream writes the whole entry "agents" a key runs through when dest has no
    # sub-TensorDict there to merge it into
    assert _state(dest) == {"x": 0.0, ("agents", "obs"): 6.0, ("agents", "rew"): 3.0,
                            ("agents", "sub", "z"): 3.0}


@pytest.mark.parametrize("dest", sorted(_NESTED))
@pytest.mark.parametrize("source", sorted(_SOURCES))
def test_update_merges_under_a_nested_key_into_an_existing_level(dest, source):
    td = _NESTED[dest]()
    td.update(_SOURCES[source](), keys_to_update=[("agents", "obs"), ("agents", "sub", "z")])
    assert _state(td) == {"x": 0.0, ("agents", "obs"): 6.0, ("agents", "rew"): 0.0,
                          ("agents", "sub", "z"): 3.0}


@pytest.mark.parametrize("make", [_flat, _nested, _lazy])
def test_update_writes_a_leaf_a_longer_key_runs_through(make):
    td = make()
    td.update(_source(), keys_to_update=[("x", "deeper")])
    assert _state(td)["x"] == 3.0


@pytest.mark.parametrize("dest", sorted(_NESTED))
@pytest.mark.parametrize("source", sorted(_SOURCES))
@pytest.mark.parametrize("key", ["agents", ("agents",)])
def test_update__takes_the_whole_subtree_of_a_key(dest, source, key):
    td = _NESTED[dest]()
    src = _SOURCES[source]()
    if source == "dict":
        del src["agents"]["sub"]
    else:
        src = src.exclude(("agents", "sub"))
    td.update_(src, keys_to_update=[key, "x"])
    assert _state(td) == {"x": 3.0, ("agents", "obs"): 6.0, ("agents", "rew"): 3.0}


@pytest.mark.parametrize("dest", sorted(_NESTED))
def test_update_at__takes_the_whole_subtree_of_a_key(dest):
    td = _NESTED[dest]()
    td.update_at_(_source()[1:].exclude(("agents", "sub")), slice(1, None),
                  keys_to_update=["agents"])
    assert _state(td) == {"x": 0.0, ("agents", "obs"): 4.0, ("agents", "rew"): 2.0}


@pytest.mark.parametrize("make", [_flat, _nested, _lazy])
@pytest.mark.parametrize("method", ["update_", "update_at_"])
def test_in_place_update_of_a_selected_leaf_the_destination_lacks_raises(make, method):
    td = make()
    before = _state(td)
    with pytest.raises(KeyError, match="sub"):
        if method == "update_":
            td.update_(_source(), keys_to_update=["x", ("agents", "sub")])
        else:
            td.update_at_(_source()[0], 0, keys_to_update=["x", ("agents", "sub")])
    assert _state(td) == before  # nothing written, "x" included


@pytest.mark.parametrize("make", [_flat, _nested, _lazy])
@pytest.mark.parametrize("method", ["update", "update_", "update_at_"])
@pytest.mark.parametrize("keys", [[("agents", "missing")], ["nothere"], []])
def test_keys_the_source_lacks_write_nothing(make, method, keys):
    td = make()
    before = _state(td)
    if method == "update_at_":
        td.update_at_(_source()[0], 0, keys_to_update=keys)
    else:
        getattr(td, method)(_source(), keys_to_update=keys)
    if make is _flat and keys == [("agents", "missing")] and method == "update":
        before.update({("agents", "obs"): 6.0, ("agents", "rew"): 3.0,
                       ("agents", "sub", "z"): 3.0})  # the missing level, written whole
    assert _state(td) == before


def test_update_without_keys_to_update_skips_missing_leaves_unless_all_are():
    td = TensorDict({"x": torch.zeros(3), "y": torch.zeros(3)}, [3])
    td.update_({"x": torch.ones(3), "z": torch.ones(3)})
    assert _state(td) == {"x": 3.0, "y": 0.0}
    with pytest.raises(KeyError, match="z"):
        td.update_({"z": torch.ones(3)})


@pytest.mark.parametrize("method", ["update", "update_", "update_at_"])
@pytest.mark.parametrize("keys, error", [("x", TypeError), (5, TypeError), ([1], RuntimeError),
                                         ([("a", 1)], RuntimeError)])
def test_bad_keys_to_update_raise_and_write_nothing(method, keys, error):
    td = _nested()
    before = _state(td)
    with pytest.raises(error):
        if method == "update_at_":
            td.update_at_(_source()[0], 0, keys_to_update=keys)
        else:
            getattr(td, method)(_source(), keys_to_update=keys)
    assert _state(td) == before


def test_update_inplace_and_clone_select_the_same_entries():
    for kwargs in ({"inplace": True}, {"clone": True}):
        td = _nested()
        td.update(_source(), keys_to_update=[("agents", "obs")], **kwargs)
        assert _state(td) == {"x": 0.0, ("agents", "obs"): 6.0, ("agents", "rew"): 0.0}


def test_update_of_a_locked_destination_with_keys_to_update_raises_and_writes_nothing():
    td = _nested().lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td.update(_source(), keys_to_update=["agents"])
    assert _state(td) == {"x": 0.0, ("agents", "obs"): 0.0, ("agents", "rew"): 0.0}
    td.update_(_source().exclude(("agents", "sub")), keys_to_update=["agents"])
    assert _state(td) == {"x": 0.0, ("agents", "obs"): 6.0, ("agents", "rew"): 3.0}


def test_update_batch_size_with_keys_to_update_raises_when_sizes_differ():
    td = _nested()
    other = TensorDict({"x": torch.ones(4)}, [4])
    with pytest.raises(RuntimeError, match="keys_to_update"):
        td.update(other, keys_to_update=["x"], update_batch_size=True)
    assert td.batch_size == (3,) and _state(td)["x"] == 0.0


class _Copies(WriteBackMixin, TensorDict):
    """A collection whose reads are copies: its update_ is WriteBackMixin's."""

    def to_tensordict(self, **kwargs):
        return TensorDict({k: v.clone() for k, v in self.items(True, True)}, self.batch_size)


@pytest.mark.parametrize("key", ["agents", ("agents",), ("agents", "obs")])
def test_a_write_back_collection_takes_the_subtree_of_a_key(key):
    td = _Copies(_nested().to_dict(), batch_size=[3])
    td.update_(_source().exclude(("agents", "sub")), keys_to_update=[key])
    assert _state(td)[("agents", "obs")] == 6.0 and _state(td)["x"] == 0.0
    td.update_at_(_source()[0].exclude(("agents", "sub")).apply(lambda t: t * 2), 0,
                  keys_to_update=[key])
    assert _state(td)[("agents", "obs")] == 8.0 and _state(td)["x"] == 0.0


def test_a_write_back_collection_raises_for_a_selected_leaf_it_lacks():
    td = _Copies(_nested().to_dict(), batch_size=[3])
    with pytest.raises(KeyError, match="sub"):
        td.update_(_source(), keys_to_update=["x", "agents"])
    assert _state(td) == {"x": 0.0, ("agents", "obs"): 0.0, ("agents", "rew"): 0.0}
