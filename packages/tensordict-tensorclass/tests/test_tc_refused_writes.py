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


def test_rename_key_to_a_non_field_key_keeps_the_data_with_upstreams_warning():
    """As upstream, ``rename_key_``/``set_non_tensor`` of a key that is not a field write
    it (deprecated: a DeprecationWarning naming the method); the value reads back."""
    tc = make()
    with pytest.warns(DeprecationWarning, match=r"not fields \(\['z'\]\) with Item.rename_key_"):
        assert tc.rename_key_("x", "z") is tc
    assert sorted(tc._tensordict.keys()) == ["n", "s", "z"]
    assert tc.get("z").tolist() == [0.0, 1.0, 2.0] and tc.x is None
    with pytest.warns(DeprecationWarning, match=r"'t'.* with Item.set_non_tensor"):
        tc.set_non_tensor("t", "extra")
    assert tc.get("t") == "extra" and tc.s == "orig"
    assert tc.to_tensordict()["z"].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("view", ["int", "slice", "mask", "select"])
def test_a_non_field_key_written_through_an_index_copy_leaves_the_instance(view):
    tc = make()
    before = state(tc)
    target = VIEWS[view](tc)
    with pytest.warns(DeprecationWarning, match="not fields"):
        target.set_non_tensor("t", "extra")
    assert target.get("t") == "extra"
    assert state(tc) == before


def test_a_dict_update_with_keys_that_are_not_fields_raises_before_any_write():
    tc = make()
    before = state(tc)
    with pytest.raises(ValueError, match=r"no fields \['w'\]"):
        tc.update({"x": torch.ones(3), "w": torch.zeros(3)})
    assert state(tc) == before
    tc.update({("n", "new"): torch.ones(3)})  # a nested key through a field
    assert tc.n["new"].tolist() == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("write", ["rename_key_", "set_non_tensor", "setdefault"])
@pytest.mark.parametrize("dim", [0, -1])
def test_a_shape_context_holding_a_non_field_key_is_not_written_back(write, dim):
    tc = make()
    before = state(tc)
    with pytest.raises(ValueError, match="no fields"), \
            pytest.warns(DeprecationWarning) if write != "setdefault" else _no_check(), \
            tc.unsqueeze(dim) as view:
        {"rename_key_": lambda: view.rename_key_("x", "z"),
         "set_non_tensor": lambda: view.set_non_tensor("t", "extra"),
         "setdefault": lambda: view.setdefault("w", torch.zeros(view.batch_size))}[write]()
    assert state(tc) == before


def _no_check():
    import contextlib

    return contextlib.nullcontext()


def test_the_index_view_of_an_instance_is_an_instance_with_its_rules():
    tc = make()
    view = tc._get_sub_tensordict(0)
    assert type(view) is Item
    view.x = torch.tensor(5.0)
    view.set("x", torch.tensor(6.0), inplace=True)
    assert tc.x.tolist() == [6.0, 1.0, 2.0]
    before = state(tc)
    with pytest.raises(ValueError, match="Invalid indexing arguments|tensorclass is indexed"):
        view["x"] = torch.tensor(7.0)
    with pytest.raises(AttributeError):
        view.set("new", torch.tensor(7.0))
    with pytest.raises(RuntimeError, match="existing"):
        view.set("x", torch.tensor(7.0))
    with pytest.raises(AttributeError, match="__delitem__"):
        del view["x"]
    with pytest.raises(ValueError, match=r"no fields \['new'\]"):
        view.update({"x": torch.tensor(7.0), "new": torch.tensor(7.0)})
    assert state(tc) == before
