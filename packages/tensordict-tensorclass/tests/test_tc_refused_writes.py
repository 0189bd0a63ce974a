"""Writes a tensorclass refuses, as upstream, instead of returning having written nothing:
``del tc[key]`` (a tensorclass has no item deletion: AttributeError '__delitem__'), and
``tc.set(field, bare_object, inplace=True)`` into a non-tensor field (RuntimeError: a bare
object is not wrapped for an in-place write; on an index copy it would land nowhere).
Each failed write leaves the instance and its source as they were."""

from __future__ import annotations

import pytest
import torch

from tensordict import NonTensorData, TensorDict, tensorclass


@tensorclass
class Item:
    x: torch.Tensor
    s: str
    n: TensorDict = None


def make() -> Item:
    return Item(x=torch.arange(3.0), s="orig", n=TensorDict(x=torch.ones(3), batch_size=[3]),
                batch_size=[3])


def state(tc: Item) -> tuple:
    return (sorted(map(str, tc._tensordict.keys(True))), tc.x.tolist(), tc.s,
            tc.n["x"].tolist())


VIEWS = {
    "self": lambda tc: tc,
    "int": lambda tc: tc[0],
    "slice": lambda tc: tc[1:],
    "mask": lambda tc: tc[torch.tensor([True, False, True])],
    "tuple": lambda tc: tc[(slice(None),)],
    "select": lambda tc: tc.select("x", "s", "n"),
    "unsqueeze": lambda tc: tc.unsqueeze(0),
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("key", ["x", ("n", "x"), "missing"])
def test_del_item_raises_attribute_error_naming_the_key(view, key):
    tc = make()
    before = state(tc)
    target = VIEWS[view](tc)
    with pytest.raises(AttributeError, match=r"__delitem__.*" + repr(key).replace("(", r"\(")
                       .replace(")", r"\)")):
        del target[key]
    assert state(tc) == before


def test_del_item_inside_a_shape_context_raises_and_writes_nothing_back():
    tc = make()
    before = state(tc)
    with pytest.raises(AttributeError, match="__delitem__"), tc.unsqueeze(0) as view:
        del view["x"]
    assert state(tc) == before


def test_fields_are_still_deleted_by_attribute_and_del_():
    tc = make()
    del tc.x
    assert tc.x is None
    tc.del_(("n", "x"))
    assert list(tc.n.keys()) == [] and tc.s == "orig"


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("value", ["new", ["p", "q", "r"]])
def test_set_inplace_of_a_bare_object_into_a_non_tensor_field_raises(view, value):
    tc = make()
    before = state(tc)
    target = VIEWS[view](tc)
    with pytest.raises(RuntimeError, match="'s'"):
        target.set("s", value, inplace=True)
    assert state(tc) == before


def test_non_tensor_writes_that_land_still_write():
    tc = make()
    tc.set("s", NonTensorData("wrapped", batch_size=[3]), inplace=True)
    assert tc.s == "wrapped"
    tc.set("s", "plain")
    assert tc.s == "plain"
    tc.update({"s": "updated"}, inplace=True)
    assert tc.s == "updated"
    tc.set("x", torch.zeros(3), inplace=True)
    assert tc.x.tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("view", [view for view in VIEWS if view != "int"])
def test_copy_at_fast_path_refuses_a_tensorclass_as_upstream(view):
    """``copy_at_(..., fast=True)`` takes plain TensorDicts only (upstream's rule): a
    tensorclass destination raises before any write, even an index copy (``tc[mask]``),
    where a write would land nowhere."""
    tc = make()
    before = state(tc)
    target = VIEWS[view](tc)
    source = target[0].apply(lambda x: x + 5)
    with pytest.raises(RuntimeError, match="fast=False or update_at_"):
        target.copy_at_(source, 0)
    with pytest.raises(RuntimeError, match="fast=False or update_at_"):
        target.copy_at_(source._tensordict, 0)
    assert state(tc) == before


def test_copy_at_slow_path_writes_into_a_tensorclass():
    tc = make()
    tc.copy_at_(tc[2].apply(lambda x: x + 5), 0, fast=False)
    assert state(tc) == (["('n', 'x')", "n", "s", "x"], [7.0, 1.0, 2.0], "orig", [6.0, 1.0, 1.0])
