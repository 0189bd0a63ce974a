"""The fast paths of key-shaped ops give what the general paths give, edge cases included:
a locked sub-TensorDict, a sub-TensorDict with more batch dims, merges in
``unflatten_keys``, narrowing ``select``, ``in`` and ``len`` on views."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict
from tensordict.errors import LockedTensorDictError


def nested() -> TensorDict:
    return TensorDict({"a": torch.zeros(2),
                       "n": {"b": torch.zeros(2, 3), "m": {"c": torch.zeros(2)}},
                       "s": NonTensorData("x", batch_size=[2])}, [2])


def test_update_from_a_tensordict_merges_nested_levels_and_shares_values():
    td, value = nested(), torch.ones(2, 3)
    other = TensorDict({"n": {"b": value, "new": torch.ones(2)}, "z": torch.ones(2)}, [2])
    assert td.update(other) is td
    assert td["n", "b"] is value and td["n", "new"].sum() == 2 and td["z"].sum() == 2
    assert td["n", "m", "c"].sum() == 0  # untouched entries stay


def test_update_into_a_locked_sub_tensordict_raises_and_writes_nothing():
    td = nested()
    td["n"].lock_()
    other = TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2, 3)}}, [2])
    with pytest.raises(LockedTensorDictError):
        td.update(other)
    assert td["a"].sum() == 0 and td["n", "b"].sum() == 0


def test_update_checks_leaves_against_a_sub_tensordict_with_more_batch_dims():
    td = TensorDict({"n": TensorDict({"b": torch.zeros(2, 3)}, [2, 3])}, [2])
    with pytest.raises(RuntimeError, match="b"):
        td.update(TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2, 4)}}, [2]))
    assert "a" not in td and td["n", "b"].shape == (2, 3)


def test_update_moves_values_to_the_device_of_the_target():
    td = TensorDict({"a": torch.zeros(2)}, [2], device="cpu")
    td.update(TensorDict({"b": torch.ones(2)}, [2]))
    assert td["b"].device == torch.device("cpu")


def test_nested_set_of_an_existing_parent_checks_the_batch_size_and_the_lock():
    td = nested()
    value = torch.ones(2, 5)
    td["n", "m", "d"] = value
    assert td["n", "m", "d"] is value
    with pytest.raises(RuntimeError, match="d"):
        td["n", "m", "d"] = torch.ones(3)
    td.lock_()
    with pytest.raises(LockedTensorDictError):
        td["n", "m", "e"] = torch.ones(2)
    assert "e" not in td["n", "m"]


def test_unflatten_keys_merges_into_an_existing_sub_tensordict_keeping_its_batch_size():
    inner = TensorDict({"b": torch.zeros(2, 3)}, [2, 3])
    td = TensorDict({"n": inner, "n.c": torch.ones(2, 3, 1), "x.y.z": torch.ones(2)}, [2])
    out = td.unflatten_keys()
    assert out["n"].batch_size == (2, 3) and set(out["n"].keys()) == {"b", "c"}
    assert out["x", "y"].batch_size == (2,) and out["x", "y", "z"].sum() == 2
    assert set(inner.keys()) == {"b"}  # the source is never edited


def test_unflatten_keys_through_a_leaf_raises():
    td = TensorDict({"a": torch.zeros(2), "a.b": torch.zeros(2)}, [2])
    with pytest.raises(KeyError, match="a.b"):
        td.unflatten_keys()


def test_flatten_then_unflatten_round_trips_and_reports_clashes():
    td = nested()
    flat = td.flatten_keys("/")
    assert set(flat.keys()) == {"a", "n/b", "n/m/c", "s"}
    assert (flat.unflatten_keys("/") == td).all()
    clash = TensorDict({"n": {"b": torch.zeros(())}, "n.b": torch.zeros(())})
    with pytest.raises(KeyError, match="n.b"):
        clash.flatten_keys()


def test_select_narrows_and_exclude_covers():
    td = nested()
    assert list(td.select("n", ("n", "b")).keys(True, True)) == [("n", "b")]
    assert list(td.exclude("n", ("n", "b")).keys()) == ["a", "s"]
    assert list(td.exclude(("n", "m", "c"), ("zzz", "q")).keys(True, True)) == ["a", ("n", "b")]
    assert td.select(("a", "x"), strict=False).is_empty()
    with pytest.raises(KeyError):
        td.select(("a", "x"))


def test_select_and_exclude_reach_into_lazy_stacks():
    stack = LazyStackedTensorDict.lazy_stack([nested(), nested()], 0)
    td = TensorDict({"stack": stack, "x": torch.zeros(2, 2)}, [2, 2])
    picked = td.select(("stack", "n", "b"))
    assert list(picked.keys(True, True)) == [("stack", "n", "b")]
    dropped = td.exclude(("stack", "n"))
    assert ("stack", "n") not in dropped.keys(True) and ("stack", "a") in dropped.keys(True)


def test_keys_views_count_and_find_what_they_list():
    td = nested()
    for flags in [(False, False), (True, False), (True, True), (False, True)]:
        view = td.keys(*flags)
        assert len(view) == len(list(view))
        assert all(key in td.keys(True) for key in view)
    assert "n" in td.keys() and ("n", "m", "c") in td.keys(True) and "zzz" not in td.keys()
    assert list(td.values(True, True))[1] is td["n", "b"]


def test_get_and_contains_on_a_tensordict():
    td = nested()
    assert td.get("a") is td["a"] and td.get("zzz", 3) == 3 and td.get("zzz") is None
    assert "a" in td and ("n", "m", "c") in td and "zzz" not in td


def test_update_merges_into_a_lazy_stack_entry_instead_of_replacing_it():
    stack = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(2))], 0)
    td = TensorDict({"lazy": stack}, [])
    td.update(TensorDict({"lazy": TensorDict(done=torch.zeros(2, 1), batch_size=[2])}, []))
    assert td["lazy"] is stack and td["lazy"][1]["a"].shape == (2,)
    assert td["lazy", "done"].shape == (2, 1)
    td.update(TensorDict({"x": stack}, []))
    other = TensorDict({"n": {"b": torch.ones(())}}, [])
    other.update(TensorDict({"n": {"a": torch.zeros(3)}}, []))  # a dense into a dense: merged
    assert set(other["n"].keys()) == {"a", "b"}


def test_update_gives_each_part_of_a_lazy_stack_its_slice_of_a_ragged_input():
    def hetero(n: int, m: int) -> LazyStackedTensorDict:
        return LazyStackedTensorDict.lazy_stack(
            [TensorDict(action=torch.zeros(n)), TensorDict(action=torch.zeros(m))], 0)
    td = TensorDict({"lazy": hetero(3, 2), "x": torch.zeros(())}, [])
    new = hetero(3, 2).apply(lambda t: t + 1)
    td.update(TensorDict({"lazy": new, "x": torch.ones(())}, []))
    assert td["lazy"][0]["action"].sum() == 3 and td["lazy"][1]["action"].sum() == 2
    assert td["x"] == 1
    with pytest.raises(RuntimeError):  # a part that cannot take its slice: nothing written
        td.update(TensorDict({"lazy": hetero(4, 2), "x": torch.zeros(())}, []),
                  inplace=True)
    assert td["x"] == 1 and td["lazy"][0]["action"].shape == (3,)
    td.update({"lazy": new}, keys_to_update=[("lazy", "action")])
    assert td["lazy"][1]["action"].sum() == 2
