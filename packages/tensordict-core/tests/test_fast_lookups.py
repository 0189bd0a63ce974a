"""The fast paths of TensorDict lookups and writes (nested ``get``/``in``/``set``/``set_``,
``is_empty``, ``keys()``, ``len``) give what the general paths give, edge cases included."""

from __future__ import annotations

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict._keys import DictKeysView, TensorDictKeysView, TopKeysView
from tensordict._nested_key import InvalidKeyError, is_flat_path
from tensordict.base import NO_DEFAULT
from tensordict.errors import (
    InplaceWriteError,
    KeyThroughLeafError,
    LockedTensorDictError,
    inplace_mismatch,
)
from tensordict.utils import unravel_key, unravel_key_list


def make() -> TensorDict:
    return TensorDict(
        {"a": torch.zeros(2), "n": {"b": torch.ones(2), "s": "txt", "e": {}},
         "l": LazyStackedTensorDict.lazy_stack([TensorDict(q=torch.zeros(())),
                                                TensorDict(q=torch.ones(()))])},
        batch_size=[2],
    )


def snapshot(td: TensorDict) -> dict:
    return {key: (type(value).__name__, value.clone() if isinstance(value, torch.Tensor)
                  else None) for key, value in td.items(True, True)}


def same(before: dict, after: dict) -> bool:
    return before.keys() == after.keys() and all(
        before[k][0] == after[k][0] and (before[k][1] is None or torch.equal(before[k][1],
                                                                             after[k][1]))
        for k in before)


# -- get ------------------------------------------------------------------------------------
def test_get_nested_existing_returns_the_stored_value():
    td = make()
    assert td.get(("n", "b"), None) is td._tensordict["n"]._tensordict["b"]
    assert td.get(("n", "b")) is td["n", "b"]
    assert td.get(("n",), None) is td["n"]
    assert type(td.get(("n", "s"))).__name__ == "NonTensorData"  # not unwrapped
    assert td.get(("n", "e"), None).batch_size == torch.Size([2])


def test_get_nested_missing_gives_the_default_or_raises_naming_the_key():
    td = make()
    assert td.get(("n", "zz"), None) is None
    assert td.get(("zz", "b"), 5) == 5
    assert td.get(("n", "e", "q"), "d") == "d"
    assert td.get(("n", "zz"), default=7) == 7
    assert td.get(("n", "zz")) is None  # no default: None, as upstream
    with pytest.raises(KeyError, match="zz"):
        td[("n", "zz")]


def test_get_through_a_leaf_or_another_collection_takes_the_general_path():
    td = make()
    assert td.get(("a", "x"), None) is None
    with pytest.raises(KeyThroughLeafError):
        td.get(("a", "x"))
    assert torch.equal(td.get(("l", "q")), torch.tensor([0.0, 1.0]))
    assert td.get(("l", "z"), None) is None


@pytest.mark.parametrize("key", [("n", 0), ("n", ["b"]), (), ("zz", 0)])
def test_get_with_an_invalid_key_raises_even_with_a_default(key):
    td = make()
    with pytest.raises(InvalidKeyError):
        td.get(key, None)
    with pytest.raises(KeyError):
        td.get(key)


@pytest.mark.parametrize("key", ["a", "zz", ("n", "b"), ("n", "zz"), ("a", "x"), ("l", "q"),
                                 ("n", "s")])
def test_get_with_default_as_keyword_is_the_positional_form(key):
    td = make()
    for default in (None, 3):
        positional, keyword = td.get(key, default), td.get(key, default=default)
        assert positional is keyword or torch.equal(positional, keyword)
    if key in ("zz", ("n", "zz")):
        with pytest.raises(KeyError):
            td.get(key, default=NO_DEFAULT)


def test_get_takes_one_default():
    td = make()
    with pytest.raises(TypeError, match="one default"):
        td.get("zz", 1, 2)
    with pytest.raises(TypeError, match="one default"):
        td.get("zz", 1, default=1)
    with pytest.raises(TypeError, match="unexpected arguments"):
        td.get("zz", defualt=1)  # a misspelt keyword is no default


def test_get_of_a_nested_tuple_key_is_unravelled():
    td = make()
    assert td.get(("n", ("b",)), None) is td["n", "b"]
    assert td.get((("n",), "zz"), 4) == 4


# -- in -------------------------------------------------------------------------------------
def test_contains_nested_keys():
    td = make()
    assert ("n", "b") in td and ("n",) in td and ("n", "e") in td
    assert ("n", "zz") not in td and ("zz", "b") not in td and ("n", "e", "q") not in td
    assert ("a", "x") not in td  # through a leaf
    assert ("l", "q") in td and ("l", "z") not in td
    assert ("n", ("b",)) in td


@pytest.mark.parametrize("key", [("n", 0), ()])
def test_contains_with_an_invalid_key_raises(key):
    with pytest.raises(KeyError):
        key in make()  # noqa: B015


# -- set ------------------------------------------------------------------------------------
def test_set_nested_into_an_existing_parent():
    td = make()
    value = torch.arange(2.0)
    assert td.set(("n", "new"), value) is td
    assert td["n", "new"] is value
    td.set(("n", "e", "deep"), value)  # an existing empty sub-TensorDict
    assert td["n", "e", "deep"] is value
    td.set(("x", "y", "z"), value)  # new levels are still created
    assert td["x", "y", "z"] is value and td["x"].batch_size == torch.Size([2])


def test_set_nested_inplace_writes_into_the_storage():
    td = make()
    stored = td["n", "b"]
    td.set(("n", "b"), torch.full((2,), 9.0), inplace=True)
    assert td["n", "b"] is stored and torch.equal(stored, torch.full((2,), 9.0))


def test_set_nested_errors_leave_the_tensordict_unchanged():
    td = make()
    before = snapshot(td)
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        td.set(("n", "c"), torch.zeros(3))
    with pytest.raises(KeyThroughLeafError):
        td.set(("a", "c"), torch.zeros(2))
    with pytest.raises(RuntimeError, match="cannot write a value of shape"):
        td.set(("n", "b"), torch.zeros(2, 3), inplace=True)
    td.lock_()
    with pytest.raises(LockedTensorDictError):
        td.set(("n", "c"), torch.zeros(2))
    with pytest.raises(LockedTensorDictError):
        td.set(("n", "b"), torch.zeros(2))
    assert same(before, snapshot(td))
    td.set(("n", "b"), torch.full((2,), 4.0), inplace=True)  # in place is allowed
    assert torch.equal(td["n", "b"], torch.full((2,), 4.0))


def test_set_into_a_lazy_stack_takes_the_general_path():
    td = make()
    td.set(("l", "q"), torch.tensor([7.0, 8.0]))
    assert td["l"].tensordicts[1]["q"] == 8.0


# -- set_ -----------------------------------------------------------------------------------
def test_set__copies_into_the_existing_entry():
    td = make()
    stored, nested = td["a"], td["n", "b"]
    assert td.set_("a", torch.ones(2, dtype=torch.float64)) is td
    assert td["a"] is stored and torch.equal(stored, torch.ones(2))
    td.set_(("n", "b"), torch.full((2,), 2.0))
    assert td["n", "b"] is nested and torch.equal(nested, torch.full((2,), 2.0))
    td.set_(("n", "s"), "new text")
    assert td["n", "s"] == "new text"
    td.lock_()
    td.set_("a", torch.full((2,), 6.0))  # allowed on a locked TensorDict
    assert torch.equal(stored, torch.full((2,), 6.0))


def test_set__errors_leave_the_tensordict_unchanged():
    td = make()
    before = snapshot(td)
    with pytest.raises(KeyError, match="zz"):
        td.set_("zz", torch.ones(2))
    with pytest.raises(KeyError, match="zz"):
        td.set_(("n", "zz"), torch.ones(2))
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        td.set_("a", torch.ones(3))
    with pytest.raises(RuntimeError, match="cannot write a value of shape"):
        td.set_("a", torch.ones(2, 1))
    assert same(before, snapshot(td))


@pytest.mark.parametrize("key,value", [
    ("n", torch.ones(2)),  # a tensor into a sub-TensorDict
    ("a", TensorDict(b=torch.ones(2), batch_size=[2])),  # a TensorDict into a tensor
    (("n", "s"), torch.ones(2)),  # a tensor into non-tensor data
    ("a", "text"),  # non-tensor data into a tensor
])
def test_an_inplace_write_of_another_kind_raises_and_replaces_nothing(key, value):
    for write in (lambda td: td.set_(key, value), lambda td: td.set(key, value, inplace=True)):
        td = make()
        before = snapshot(td)
        with pytest.raises(InplaceWriteError, match="Failed to update") as info:
            write(td)
        assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
        assert same(before, snapshot(td))
    locked = make().lock_()
    with pytest.raises(InplaceWriteError):
        locked.set_(key, value)


def test_inplace_mismatch_names_the_key_and_both_kinds():
    err = inplace_mismatch(("n", "b"), torch.zeros(()), {})
    assert isinstance(err, RuntimeError)
    assert str(err) == ("Failed to update ('n', 'b') in place: cannot write a dict into the "
                        "entry, a Tensor")


# -- is_empty -------------------------------------------------------------------------------
@pytest.mark.parametrize("td,empty", [
    (TensorDict(), True),
    (TensorDict(a={}, b={"c": {}}), True),
    (TensorDict(a=torch.zeros(())), False),
    (TensorDict(a={}, b={"c": {"d": torch.zeros(())}}), False),
    (TensorDict(s="text"), False),  # non-tensor data is a leaf, as upstream
    (TensorDict(n={"s": "text"}), False),
    (TensorDict(l=LazyStackedTensorDict.lazy_stack([TensorDict(), TensorDict()])), True),
    (TensorDict(l=LazyStackedTensorDict.lazy_stack([TensorDict(a=1), TensorDict(a=2)])),
     False),
    (LazyStackedTensorDict.lazy_stack([TensorDict(), TensorDict()]), True),
    (LazyStackedTensorDict.lazy_stack([TensorDict(a=1), TensorDict(a=2)]), False),
])
def test_is_empty(td, empty):
    assert td.is_empty() is empty


# -- keys(), len ----------------------------------------------------------------------------
def test_keys_without_flags_is_a_live_view_of_the_top_level():
    td = make()
    keys = td.keys()
    assert type(keys) is DictKeysView and isinstance(keys, TopKeysView)
    assert isinstance(keys, TensorDictKeysView)
    assert list(keys) == ["a", "n", "l"] and len(keys) == 3
    assert "n" in keys and ("n", "b") not in keys and "zz" not in keys
    assert not keys.include_nested and not keys.leaves_only and not keys.sort
    td["z"] = torch.zeros(2)
    assert list(keys)[-1] == "z" and len(keys) == 4
    assert [k for k, _ in td.items()] == list(td.keys())
    assert len(td.values()) == 4
    assert repr(TensorDict(a=torch.zeros(())).keys()) == "DictKeysView(['a'])"
    lazy = LazyStackedTensorDict.lazy_stack([TensorDict(q=torch.zeros(()))] * 2)
    assert type(lazy.keys()) is TopKeysView and list(lazy.keys()) == ["q"]


def test_top_level_items_and_values_are_the_dicts_views():
    """As upstream: a TensorDict's items() and values() without flags are its dict's
    views (live, and as fast as the dict's); with flags, the traversal's views."""
    td = make()
    items, values = td.items(), td.values()
    assert type(items) is type({}.items()) and type(values) is type({}.values())
    td["z"] = torch.zeros(2)
    assert [k for k, _ in items][-1] == "z" and values.__len__() == 4
    assert list(td.items(is_leaf=lambda cls: True)) == list(items)
    assert type(td.items(True)) is not type(items) and type(td.values(sort=True)) is not \
        type(values)
    assert ("n", "b") in [k for k, _ in td.items(True)]


def test_items_and_values_with_flags_are_iterators_and_every_leaf_a_list():
    """As upstream: ``items(True, True)`` is a list; other flags give one-shot iterators
    (upstream's generators: ``next()`` works on them), for lazy stacks too."""
    td = make()
    leaves = td.items(True, True)
    assert type(leaves) is list
    assert [key for key, _ in leaves] == list(td.keys(True, True))
    stored = dict(leaves)
    assert stored["a"] is td["a"] and stored["n", "b"] is td["n", "b"]
    assert torch.equal(stored["l", "q"], td["l", "q"]) and ("n", "s") not in stored
    assert type(td.items(True, True, is_leaf=lambda cls: True)) is list
    for flagged in (td.items(True), td.values(True, True), td.values(leaves_only=True),
                    td.items(True, True, sort=True), td["l"].values(True, True),
                    td["l"].items()):
        assert next(flagged) is not None
    values = td.values(True, True)
    assert torch.equal(next(values), td["a"]) and torch.equal(next(values), td["n", "b"])
    assert [key for key, _ in td.items(True, sort=True)] == list(td.keys(True, sort=True))


def test_keys_with_flags_or_a_predicate_keep_the_full_view():
    td = make()
    assert type(td.keys(True)) is TensorDictKeysView
    assert type(td.keys(is_leaf=lambda cls: True)) is TensorDictKeysView
    assert td.keys(sort=True).sort and list(td.keys(sort=True)) == ["a", "l", "n"]
    lazy = LazyStackedTensorDict.lazy_stack([TensorDict(q=torch.zeros(()))] * 2)
    assert list(lazy.keys()) == ["q"] and len(lazy.keys()) == 1


@pytest.mark.parametrize("size,expected", [([], 0), ([3], 3), ([3, 2], 3), ([0, 5], 0)])
def test_len_is_the_first_batch_dim(size, expected):
    assert len(TensorDict(batch_size=size)) == expected


# -- key validation -------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [0, [0], None, 1.5, b"x", ["a", ["b"]]])
def test_unravel_key_error_starts_with_upstreams_words(bad):
    with pytest.raises(RuntimeError, match=r"^key should be a Sequence<NestedKey>") as info:
        unravel_key(bad)
    assert repr(bad) in str(info.value)


@pytest.mark.parametrize("bad,named", [([0], "0"), (["a", ("b", 0)], "('b', 0)"),
                                       ([()], "()"), (("a", None), "None")])
def test_unravel_key_list_error_starts_with_upstreams_words(bad, named):
    with pytest.raises(RuntimeError, match=r"^key should be a Sequence<NestedKey>, got ") as i:
        unravel_key_list(bad)
    assert f"got {named}:" in str(i.value)
    with pytest.raises(TypeError, match=r"^unravel_key_list\(\): incompatible function "
                                        r"arguments\. Expected a list or a tuple of keys, "
                                        r"got <class 'int'>\.$"):
        unravel_key_list(0)


def test_lenient_unravelling_is_unchanged():
    assert unravel_key(("a", 0)) == () and unravel_key(()) == ()
    assert unravel_key_list(["a", ("b", ("c",)), ("d",)]) == ["a", ("b", "c"), "d"]


def test_is_flat_path():
    assert is_flat_path(("a", "b")) and is_flat_path(())
    assert not is_flat_path(("a", ("b",))) and not is_flat_path(("a", 0))


@pytest.mark.parametrize("key", ["x", ("n", "x")])
def test_an_explicit_no_default_raises_as_upstream(key):
    """TorchRL's Composite.is_in passes NO_DEFAULT and relies on the KeyError."""
    from tensordict.base import NO_DEFAULT

    td = TensorDict(a=torch.zeros(1), n={"b": torch.zeros(1)})
    with pytest.raises(KeyError):
        td.get(key, NO_DEFAULT)
    with pytest.raises(KeyError):
        td.get(key, default=NO_DEFAULT)
    assert td.get(key, 3) == 3


def test_is_tensor_collection_of_classes_and_instances_in_any_order():
    """The answer is cached by an instance's class; a class is asked about itself, so a
    metaclass seen first (``type``, ``ABCMeta``) never answers for the classes it makes."""
    from abc import ABCMeta

    from tensordict import NonTensorData, is_tensor_collection

    class Plain:
        pass

    assert not is_tensor_collection(type) and not is_tensor_collection(ABCMeta)
    assert is_tensor_collection(TensorDict) and is_tensor_collection(LazyStackedTensorDict)
    assert is_tensor_collection(TensorDict()) and is_tensor_collection(NonTensorData(1))
    assert not is_tensor_collection(Plain) and not is_tensor_collection(Plain())
    assert not is_tensor_collection(torch.Tensor) and not is_tensor_collection(torch.zeros(1))
    assert is_tensor_collection(TensorDict) and not is_tensor_collection(type)


def test_top_level_keys_are_a_set_as_upstreams():
    from collections.abc import KeysView

    keys = make().keys()
    assert isinstance(keys, KeysView)
    assert keys == {"a", "n", "l"} and keys != {"a"} and keys != ["a", "n", "l"]
    assert keys - {"a"} == {"n", "l"} and keys & {"a", "z"} == {"a"}
    assert keys | {"z"} == {"a", "n", "l", "z"} and keys <= {"a", "n", "l", "z"}
    with pytest.raises(TypeError):
        hash(keys)


def test_a_failed_set__is_an_inplace_write_error_naming_the_entry():
    td = make()
    before = snapshot(td)
    for write in (lambda: td.set_("a", torch.zeros(2, 3)),
                  lambda: td.set(("n", "b"), torch.zeros(2, 3), inplace=True)):
        with pytest.raises(InplaceWriteError, match=r"shape \[2, 3\]") as info:
            write()
        assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
    grad = TensorDict(w=torch.zeros(2, requires_grad=True), batch_size=[2])
    with pytest.raises(InplaceWriteError, match="'w'.*requires grad"):
        grad.set_("w", torch.ones(2))
    assert same(before, snapshot(td))
