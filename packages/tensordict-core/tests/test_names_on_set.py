"""Dim names go with what is set into a named TensorDict, as upstream.

A collection (TensorDict, lazy stack, non-tensor data) set, updated or written at a
nested key takes the parent's names on its leading dims: it is stored as a renamed copy
(its leaves shared, the value given left as it was). A name that differs raises, with
nothing written. Unnamed TensorDicts store the value itself.
"""

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict


def _named():
    return TensorDict({"a": torch.zeros(3, 5)}, [3, 5], names=["b", "t"])


_VALUES = {
    "td": (lambda: TensorDict({"c": torch.ones(3, 5)}, [3, 5]), ["b", "t"]),
    "shorter td": (lambda: TensorDict({"c": torch.ones(3, 5)}, [3]), ["b", "t"]),
    "longer td": (lambda: TensorDict({"c": torch.ones(3, 5, 2)}, [3, 5, 2],
                                     names=[None, None, "z"]), ["b", "t", "z"]),
    "lazy stack": (lambda: LazyStackedTensorDict.lazy_stack(
        [TensorDict({"c": torch.ones(5)}, [5]) for _ in range(3)], 0), ["b", "t"]),
    "string": (lambda: "p", ["b", "t"]),
}


def _set(td, how, value):
    """Write ``value`` at "q" (or below "sub") the ``how`` way; returns the key written."""
    if how == "setitem":
        td["q"] = value
    elif how == "set":
        td.set("q", value)
    elif how == "nested key, new level":
        td["sub", "q"] = value
        return ("sub", "q")
    elif how == "update td":
        td.update(TensorDict({"q": value}, [3]))
    elif how == "update dict":
        td.update({"q": value})
    return "q"


@pytest.mark.parametrize("value", sorted(_VALUES))
@pytest.mark.parametrize("how", ["setitem", "set", "nested key, new level", "update td",
                                 "update dict"])
def test_a_value_set_into_a_named_td_takes_its_names(value, how):
    make, expected = _VALUES[value]
    td = _named()
    given = make()
    given_names = None if isinstance(given, str) else given.names
    key = _set(td, how, given)
    assert td.get(key).names == expected
    if given_names is not None:
        assert given.names == given_names  # the value given is not renamed


def test_the_stored_copy_shares_the_leaves_and_renames_nested_levels():
    td = TensorDict({"a": torch.zeros(3)}, [3], names=["b"])
    value = TensorDict({"c": TensorDict({"d": torch.ones(3, 5)}, [3, 5]), "e": torch.ones(3)},
                       [3])
    td["q"] = value
    assert td["q"].names == ["b"] and td["q", "c"].names == ["b", None]
    assert td["q", "e"] is value["e"] and td["q", "c", "d"] is value["c", "d"]
    assert value.names == [None] and value["c"].names == [None, None]


def test_set_non_tensor_and_a_non_tensor_stack_take_the_names():
    td = TensorDict({"a": torch.zeros(3)}, [3], names=["b"])
    td.set_non_tensor("s", "p")
    td["stack"] = NonTensorStack("p", "q", "r")
    assert td.get("s").names == ["b"] and td.get("stack").names == ["b"]
    assert td["stack"] == ["p", "q", "r"]


@pytest.mark.parametrize("how", ["setitem", "set", "nested key, new level", "update td",
                                 "update dict"])
def test_a_value_with_another_name_raises_and_writes_nothing(how):
    td = _named()
    with pytest.raises(RuntimeError, match="names"):
        _set(td, how, TensorDict({"c": torch.ones(3, 5)}, [3, 5], names=["x", None]))
    assert list(td.keys()) == ["a"]


def test_an_unnamed_td_stores_the_value_itself():
    td = TensorDict({"a": torch.zeros(3)}, [3])
    value = TensorDict({"c": torch.ones(3)}, [3])
    td["q"] = value
    td.update({"r": value})
    assert td.get("q") is value and td.get("r") is value and value.names == [None]


def test_a_lazy_stack_sets_its_stack_dim_name_and_its_parts_names():
    stack = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"a": torch.zeros(5)}, [5], names=["t"]) for _ in range(3)], 0,
        stack_dim_name="b")
    stack["q"] = TensorDict({"c": torch.ones(3, 5)}, [3, 5])
    assert stack.get("q").names == ["b", "t"]
    assert [part.get("q").names for part in stack.tensordicts] == [["t"]] * 3


def test_a_shorter_non_tensor_stack_widens_as_a_lazy_stack_does_and_takes_the_names():
    td = _named()
    stack = NonTensorStack("p", "q", "r")
    td["q"] = stack
    assert td.get("q").batch_size == (3, 5) and td.get("q").names == ["b", "t"]
    assert td[1, 2]["q"] == "q" and stack.batch_size == (3,)
