"""The dictionary side of TensorDict: get/set/update/select/... on nested data."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, set_get_defaults_to_none
from tensordict.errors import KeyThroughLeafError, LockedTensorDictError


@pytest.fixture
def td():
    return TensorDict(
        {"a": torch.zeros(3, 4), "n": {"b": torch.ones(3, 2), "c": {"d": torch.arange(3)}},
         "s": "txt"},
        batch_size=[3],
    )


def test_getitem_and_get(td):
    assert td["a"].shape == (3, 4)
    assert td["n", "c", "d"].tolist() == [0, 1, 2]
    assert td.get(("n", "b")) is td["n"]["b"]
    assert td["s"] == "txt" and isinstance(td.get("s"), NonTensorData)
    assert td.get("missing") is None and td.get("missing", 7) == 7
    assert td.get(("n", "missing"), "d") == "d"


def test_get_can_raise_when_asked():
    set_get_defaults_to_none(False)
    try:
        with pytest.raises(KeyError):
            TensorDict().get("x")
    finally:
        set_get_defaults_to_none(True)


def test_missing_key_errors_name_path_and_available_keys(td):
    with pytest.raises(KeyError, match=r"zzz.*\['a', 'n', 's'\]"):
        td["zzz"]
    with pytest.raises(KeyError, match=r"\('n', 'c'\).*'zz'.*\['d'\]"):
        td["n", "c", "zz"]
    with pytest.raises(KeyThroughLeafError, match="'a' is a Tensor"):
        td["a", "b"]


def test_set_nested_creates_levels(td):
    td["x", "y", "z"] = torch.zeros(3)
    assert td["x", "y"].batch_size == (3,)
    assert ("x", "y", "z") in td.keys(True)
    td.set(("n", ("c", ("e",))), torch.ones(3))
    assert td["n", "c", "e"].sum() == 3


def test_set_inplace_and_set_(td):
    original = td["a"]
    td.set("a", torch.ones(3, 4), inplace=True)
    assert td["a"] is original and original.sum() == 12
    td.set_(("n", "b"), torch.full((3, 2), 2.0))
    assert td["n", "b"].sum() == 12
    with pytest.raises(KeyError, match="zz"):
        td.set_("zz", torch.zeros(3))
    td.set("new", torch.zeros(3), inplace=True)  # missing key: plain write
    assert "new" in td


def test_failed_set_leaves_td_unchanged(td):
    before = list(td.keys(True))
    with pytest.raises(RuntimeError):
        td["bad"] = torch.zeros(5)
    with pytest.raises(RuntimeError):
        td["n", "bad"] = torch.zeros(5)
    assert list(td.keys(True)) == before


def test_update_is_atomic(td):
    with pytest.raises(RuntimeError, match="'bad'"):
        td.update({"ok": torch.zeros(3), "bad": torch.zeros(5)})
    assert "ok" not in td


def test_update_merges_nested_and_filters(td):
    td.update({"n": {"b": torch.zeros(3, 2), "new": torch.zeros(3)}, "z": torch.zeros(3)})
    assert td["n", "b"].sum() == 0 and ("n", "c", "d") in td.keys(True)
    other = td.clone()
    other.update({"a": torch.ones(3, 4), "q": torch.ones(3)}, keys_to_update=["a"])
    assert other["a"].sum() == 12 and "q" not in other
    kept = td["n", "b"]
    td.update({"n": {"b": torch.ones(3, 2)}}, inplace=True)
    assert td["n", "b"] is kept and kept.sum() == 6


def test_update_from_tensordict_and_clone(td):
    src = TensorDict({"a": torch.ones(3, 4)}, [3])
    td.update(src, clone=True)
    assert td["a"] is not src["a"] and td["a"].sum() == 12


@pytest.mark.parametrize("kwargs", [{}, {"clone": True}, {"inplace": True},
                                    {"keys_to_update": ["a"]}])
def test_update_from_itself_changes_nothing(td, kwargs):
    """As upstream (TorchRL's rollout runs ``td.update(policy(td))`` with a policy that
    writes in place): every entry stays the very object it was."""
    before = {key: td.get(key) for key in td.keys(True)}
    assert td.update(td, **kwargs) is td
    assert all(td.get(key) is value for key, value in before.items())
    lazy = LazyStackedTensorDict.lazy_stack([td.clone(), td.clone()])
    part = lazy.tensordicts[0]["a"]
    assert lazy.update(lazy) is lazy and lazy.tensordicts[0]["a"] is part


def test_update_from_itself_of_a_locked_tensordict_raises(td):
    td.lock_()
    with pytest.raises(LockedTensorDictError):
        td.update(td)
    lazy = LazyStackedTensorDict.lazy_stack([td.clone(), td.clone()]).lock_()
    with pytest.raises(LockedTensorDictError):
        lazy.update(lazy)


def test_update_inplace_variants(td):
    td.update_({"a": torch.ones(3, 4), "n": {"b": torch.zeros(3, 2)}})
    assert td["a"].sum() == 12 and td["n", "b"].sum() == 0
    with pytest.raises(KeyError, match="zz"):
        td.update_({"zz": torch.zeros(3)})
    td.update_at_({"a": torch.full((4,), 5.0)}, 1)
    assert td["a"][1].tolist() == [5.0] * 4 and td["a"][0].sum() == 4


def test_delete_pop_popitem_setdefault_clear(td):
    del td["a"]
    assert "a" not in td
    td.del_(("n", "c"))
    assert ("n", "c") not in td
    value = td.pop(("n", "b"))
    assert value.shape == (3, 2) and ("n", "b") not in td
    assert td.pop("zz", 1) == 1
    with pytest.raises(KeyError):
        td.pop("zz")
    key, _ = td.popitem()
    assert key == "s"
    assert td.setdefault("q", torch.ones(3)).sum() == 3
    assert td.setdefault("q", torch.zeros(3)).sum() == 3
    assert td.pop("q", None).sum() == 3 and "q" not in td  # a default, the key present
    td.clear()
    assert list(td.keys()) == []
    with pytest.raises(KeyError):
        td.popitem()


def test_keys_views(td):
    assert list(td.keys()) == ["a", "n", "s"]
    assert list(td.keys(True)) == ["a", ("n", "b"), ("n", "c", "d"), ("n", "c"), "n", "s"]
    assert list(td.keys(True, True)) == ["a", ("n", "b"), ("n", "c", "d")]
    assert list(td.keys(leaves_only=True)) == ["a"]
    assert list(td.keys(True, sort=True))[0] == "a"
    assert ("n", "b") in td and ("n", "b") not in td.keys()
    assert (("n",), ("c", ("d",))) in td.keys(True)
    assert len(td.keys(True, True)) == 3
    keys = td.keys()
    td["late"] = torch.zeros(3)
    assert "late" in keys  # live view


def test_values_and_items(td):
    assert [type(v).__name__ for v in td.values()] == ["Tensor", "TensorDict", "NonTensorData"]
    items = dict(td.items(True, True))
    assert set(items) == {"a", ("n", "b"), ("n", "c", "d")}
    assert items[("n", "b")] is td["n", "b"]


def test_select_exclude(td):
    sel = td.select("a", ("n", "c", "d"))
    assert list(sel.keys(True, True)) == ["a", ("n", "c", "d")]
    assert sel["a"] is td["a"]
    with pytest.raises(KeyError):
        td.select("zz")
    assert list(td.select("zz", "a", strict=False).keys()) == ["a"]
    exc = td.exclude("a", ("n", "c"))
    assert list(exc.keys(True)) == [("n", "b"), "n", "s"]
    copy = td.clone()
    copy.select("a", inplace=True)
    assert list(copy.keys()) == ["a"]
    copy = td.clone()
    copy.exclude("a", inplace=True)
    assert "a" not in copy


def test_split_keys_and_separates(td):
    first, second, rest = td.split_keys(["a"], [("n", "b")])
    assert list(first.keys()) == ["a"]
    assert list(second.keys(True, True)) == [("n", "b")]
    assert "a" not in rest and ("n", "c", "d") in rest
    popped = td.separates("a")
    assert "a" in popped and "a" not in td


def test_rename_key(td):
    td.rename_key_("a", ("x", "y"))
    assert ("x", "y") in td and "a" not in td
    with pytest.raises(KeyError, match="already exists"):
        td.rename_key_("s", ("x", "y"), safe=True)
    renamed = td.rename_keys({"s": "text"})
    assert "text" in renamed and "s" in td


def test_rename_key_to_itself_keeps_the_entry_in_place(td):
    keys = list(td.keys(True))
    assert td.rename_key_("s", "s", safe=True) is td and list(td.keys(True)) == keys
    assert td.rename_key_(("n", "b"), ("n", "b")) is td and list(td.keys(True)) == keys
    with pytest.raises(KeyError, match="zz"):
        td.rename_key_("zz", "zz")
    td.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td.rename_key_("s", "s")


def test_flatten_unflatten(td):
    flat = td.flatten_keys()
    assert list(flat.keys()) == ["a", "n.b", "n.c.d", "s"]
    assert flat["n.b"] is td["n", "b"]
    assert list(td.flatten_keys("/").keys())[1] == "n/b"
    back = flat.unflatten_keys()
    assert list(back.keys(True, True)) == list(td.keys(True, True))
    assert back["s"] == "txt"
    clash = TensorDict({"n.b": torch.zeros(3), "n": {"b": torch.zeros(3)}}, [3])
    with pytest.raises(KeyError, match="twice"):
        clash.flatten_keys()


def test_empty_and_is_empty(td):
    assert list(td.empty().keys()) == []
    assert td.empty().batch_size == td.batch_size
    rec = td.empty(recurse=True)
    assert list(rec.keys(True)) == [("n", "c"), "n", "s"]
    # non-tensor data is a leaf (as upstream): only without it is the skeleton empty
    assert not rec.is_empty() and rec.exclude("s").is_empty() and not td.is_empty()
    assert TensorDict({"x": {}}).is_empty()


def test_to_dict_and_tolist():
    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)}, "s": "x"}, [])
    d = td.to_dict()
    assert d["s"] == "x" and torch.equal(d["n"]["b"], torch.ones(2))
    assert TensorDict({"a": torch.zeros(2)}).to_dict(convert_tensors=True) == {"a": [0.0, 0.0]}


def test_filter_non_tensor_and_non_tensor_items(td):
    filtered = td.filter_non_tensor_data()
    assert "s" not in filtered and ("n", "c", "d") in filtered
    assert [k for k, _ in td.non_tensor_items()] == ["s"]
    assert td.is_non_tensor("s") and not td.is_non_tensor("a")
    assert td.get_non_tensor("s") == "txt"


def test_item_shape_entry_class_depth(td):
    assert td.get_item_shape("a") == (3, 4)
    assert td.get_item_shape("n") == (3,)
    assert td.entry_class("n") is TensorDict
    assert td.depth == 2


def test_copy_and_clone(td):
    shallow = td.copy()
    assert shallow["a"] is td["a"] and shallow is not td
    deep = td.clone()
    assert deep["a"] is not td["a"] and torch.equal(deep["a"], td["a"])
    import copy

    assert copy.copy(td)["a"] is td["a"]
    assert copy.deepcopy(td)["a"] is not td["a"]


def test_len_iter_bool_contains():
    td = TensorDict({"a": torch.arange(3)}, [3])
    assert len(td) == 3 and [t["a"].item() for t in td] == [0, 1, 2]
    with pytest.raises(TypeError, match="0-d"):
        iter(TensorDict(a=torch.tensor(1)))
    with pytest.raises(RuntimeError, match="boolean"):
        bool(td)
    with pytest.raises(TypeError):
        hash(td)
    with pytest.raises(RuntimeError, match="key"):  # upstream's class
        1 in td


def test_invalid_keys():
    with pytest.raises(KeyError, match="strings"):
        TensorDict({1: torch.zeros(())})
    with pytest.raises(TypeError):
        TensorDict().set(("a", 2), torch.zeros(()))
    with pytest.raises(KeyError, match="empty"):
        TensorDict().set((), torch.zeros(()))


def test_create_nested_and_filter_empty():
    td = TensorDict(batch_size=[2]).create_nested(("x", "y"))
    assert td["x", "y"].batch_size == (2,)
    td["z"] = torch.zeros(2)
    td.filter_empty_()
    assert list(td.keys()) == ["z"]


def test_replace():
    td = TensorDict(a=torch.zeros(1), b=torch.zeros(1))
    new = td.replace(a=torch.ones(1))
    assert new["a"].item() == 1 and td["a"].item() == 0 and new["b"] is td["b"]


def test_zero_dim_tensordict():
    td = TensorDict(a=torch.tensor(1.0), s="x")
    assert td.batch_size == () and td["a"].item() == 1.0
    td["n", "b"] = torch.zeros(5)
    assert td["n"].batch_size == ()


def test_select_follows_the_requested_order_and_never_edits_the_source():
    td = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2),
                     "c": {"d": torch.zeros(2), "e": torch.zeros(2)}}, [2])
    assert list(td.select("c", "a").keys(True)) == [("c", "d"), ("c", "e"), "c", "a"]
    narrowed = td.select("c", ("c", "d"))
    assert list(narrowed.keys(True)) == [("c", "d"), "c"]
    assert list(td["c"].keys()) == ["d", "e"]  # the source kept both entries
    whole = td.select("c")
    assert whole["c"] is td["c"]  # whole sub-TensorDicts are shared, like leaves
