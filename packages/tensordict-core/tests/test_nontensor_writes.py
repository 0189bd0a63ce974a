"""In-place writes of non-tensor data land, or raise with nothing written.

A NonTensorStack or NonTensorData (or a plain object) written by ``update_``,
``update_at_``, ``set_``, ``set_at_``, ``set(inplace=True)``, ``update(inplace=True)``,
``copy_`` or ``td[idx] = ...``, from a dict or a TensorDict, into dense, nested and
lazy-stacked TensorDicts: each test reads back what is left behind.
"""

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, NonTensorStack, TensorDict


def _stack_entry():
    return TensorDict({"s": NonTensorStack("x", "y", "z"), "a": torch.zeros(3)}, [3])


def _data_entry():
    td = TensorDict({"a": torch.zeros(3)}, [3])
    td.set_non_tensor("s", "x")
    return td


def _lazy():
    return LazyStackedTensorDict.lazy_stack(
        [TensorDict({"s": NonTensorData(c), "a": torch.zeros(())}, []) for c in "xyz"], 0)


def _nested():
    return TensorDict({"n": _stack_entry()}, [3])


_TARGETS = {"stack": _stack_entry, "lazy": _lazy}


def _strings(td, key="s"):
    return td.get(key).tolist()


def _full_write(td, how, value, key="s"):
    if how == "update_ dict":
        td.update_({key: value} if isinstance(key, str) else {key[0]: {key[1]: value}})
    elif how == "update_ td":
        td.update_(TensorDict({key: value}, [3]))
    elif how == "update inplace":
        td.update({key: value}, inplace=True)
    elif how == "set_":
        td.set_(key, value)
    elif how == "set inplace":
        td.set(key, value, inplace=True)
    elif how == "update_at_ all":
        td.update_at_({key: value}, slice(None))
    elif how == "copy_":
        td.copy_(td.clone().set_(key, value))


_FULL = ["update_ dict", "update_ td", "update inplace", "set_", "set inplace",
         "update_at_ all", "copy_"]


@pytest.mark.parametrize("target", sorted(_TARGETS))
@pytest.mark.parametrize("how", _FULL)
def test_a_stack_written_in_place_lands(target, how):
    td = _TARGETS[target]()
    _full_write(td, how, NonTensorStack("p", "q", "r"))
    assert _strings(td) == ["p", "q", "r"]


@pytest.mark.parametrize("how", ["update_ dict", "set_", "update_at_ all"])
def test_a_stack_written_into_a_nested_entry_lands(how):
    td = _nested()
    _full_write(td, how, NonTensorStack("p", "q", "r"), key=("n", "s"))
    assert _strings(td, ("n", "s")) == ["p", "q", "r"]


@pytest.mark.parametrize("target", sorted(_TARGETS))
@pytest.mark.parametrize("how", [h for h in _FULL if h != "update_at_ all"])
@pytest.mark.parametrize("value", ["p", NonTensorData("p"), NonTensorData("p", batch_size=[3])],
                         ids=["str", "data", "batched-data"])
def test_one_object_written_into_a_stack_fills_every_element(target, how, value):
    td = _TARGETS[target]()
    _full_write(td, how, value)
    assert _strings(td) == ["p", "p", "p"]


def test_the_stack_entry_is_written_in_place():
    td = _stack_entry()
    entry = td.get("s")
    td.update_({"s": NonTensorStack("p", "q", "r")})
    assert td.get("s") is entry and entry.tolist() == ["p", "q", "r"]


@pytest.mark.parametrize("how", ["update_ dict", "update_ td", "update inplace", "set_",
                                 "set inplace"])
def test_a_stack_into_a_data_entry_raises_and_writes_nothing(how):
    td = _data_entry()
    with pytest.raises(RuntimeError, match="NonTensorStack"):
        _full_write(td, how, NonTensorStack("p", "q", "r"))
    assert td.get("s").data == "x" and td.get("a").sum() == 0


@pytest.mark.parametrize("how", ["update_", "update inplace"])
@pytest.mark.parametrize("value", [NonTensorStack("p", "q", "r"), torch.ones(3)],
                         ids=["stack", "tensor"])
def test_a_failed_in_place_update_writes_no_other_entry(how, value):
    td = _data_entry()
    source = {"a": torch.ones(3), "s": value}
    with pytest.raises(RuntimeError, match="in place"):
        if how == "update_":
            td.update_(source)
        else:
            td.update(source, inplace=True)
    assert td.get("s").data == "x" and td.get("a").sum() == 0


_INDICES = {"slice": (slice(0, 2), ["p", "q", "z"]),
            "mask": (torch.tensor([True, False, True]), ["p", "y", "q"])}


@pytest.mark.parametrize("target", sorted(_TARGETS))
@pytest.mark.parametrize("index", sorted(_INDICES))
@pytest.mark.parametrize("how", ["update_at_ dict", "update_at_ td", "set_at_", "setitem"])
def test_a_stack_written_at_an_index_lands(target, index, how):
    td = _TARGETS[target]()
    idx, expected = _INDICES[index]
    value = NonTensorStack("p", "q")
    if how == "update_at_ dict":
        td.update_at_({"s": value}, idx)
    elif how == "update_at_ td":
        td.update_at_(TensorDict({"s": value}, [2]), idx)
    elif how == "set_at_":
        td.set_at_("s", value, idx)
    else:
        td[idx] = TensorDict({"s": value, "a": torch.ones(2)}, [2])
    assert _strings(td) == expected


@pytest.mark.parametrize("how", ["update_at_ dict", "set_at_", "setitem"])
@pytest.mark.parametrize("value", ["p", NonTensorData("p")], ids=["str", "data"])
def test_one_object_written_at_an_int_into_a_lazy_stack_lands(how, value):
    td = _lazy()
    if how == "update_at_ dict":
        td.update_at_({"s": value}, 0)
    elif how == "set_at_":
        td.set_at_("s", value, 0)
    else:
        td[0] = TensorDict({"s": value, "a": torch.ones(())}, [])
    assert _strings(td) == ["p", "y", "z"]


def test_a_stack_written_at_a_slice_of_a_data_entry_makes_it_a_stack():
    td = _data_entry()
    td.update_at_({"s": NonTensorStack("p", "q")}, slice(0, 2))
    assert _strings(td) == ["p", "q", "x"]


def test_a_view_update__writes_the_stack_through():
    td = _stack_entry()
    td[0:2].update_({"s": NonTensorStack("p", "q")})
    assert _strings(td) == ["p", "q", "z"]


def _locked_data_entry():
    return _data_entry().lock_()


@pytest.mark.parametrize("make", [_data_entry, _stack_entry, _locked_data_entry])
@pytest.mark.parametrize("value", ["new", 1, ["new"]])
@pytest.mark.parametrize("index", [0, slice(0, 2)])
def test_a_bare_object_written_at_an_index_of_a_non_tensor_entry_raises(make, value, index):
    # upstream's TypeError: a bare object fits no index of a non-tensor entry; through an
    # index copy (td[0].update_at_) it would otherwise land in the copy alone
    td = make()
    before = td["s"]
    with pytest.raises(TypeError, match="'s'"):
        td.update_at_({"s": value, "a": torch.ones(())}, index)
    assert td["s"] == before
    assert (td["a"] == 0).all()
    view = make()
    with pytest.raises(TypeError, match="'s'"):
        view[0].update_at_({"s": value}, ())


def test_wrapped_data_written_at_an_index_of_a_non_tensor_entry_lands():
    td = _data_entry()
    td.update_at_({"s": NonTensorData("new")}, 0)
    assert td["s"] == ["new", "x", "x"]


_COPIES = {
    "to_dtype": lambda t: t.to(torch.float64),
    "double": lambda t: t.double(),
    "apply": lambda t: t.apply(lambda x: x + 1),
    "named_apply": lambda t: t.named_apply(lambda k, x: x),
    "_fast_apply": lambda t: t._fast_apply(lambda x: x),
    "clone_shallow": lambda t: t.clone(False),
    "copy": lambda t: t.copy(),
    "detach": lambda t: t.detach(),
    "contiguous": lambda t: t.contiguous(),
}


@pytest.mark.parametrize("key", ["s", ("n", "s")])
@pytest.mark.parametrize("entry", ["data", "stack"])
@pytest.mark.parametrize("op", sorted(_COPIES))
def test_a_non_tensor_write_into_a_copy_stays_in_the_copy(op, entry, key):
    # upstream: the copy holds its own wrapper of the object
    td = TensorDict({"a": torch.zeros(3)}, [3])
    if entry == "data":
        td.set_non_tensor(key, "orig")
    else:
        td[key] = NonTensorStack("x", "y", "z")
    before = td[key]
    out = _COPIES[op](td)
    out.set_(key, "new")
    assert out[key] == "new" or out[key] == ["new"] * 3
    assert td[key] == before


@pytest.mark.parametrize("op", ["select", "exclude"])
def test_a_non_tensor_write_through_select_or_exclude_reaches_the_source(op):
    td = _data_entry()
    view = td.select("s") if op == "select" else td.exclude("a")
    view.set_("s", "new")
    assert td["s"] == "new"


@pytest.mark.parametrize("view", ["select", "exclude"])
def test_a_write_at_an_index_of_a_lazy_select_reaches_the_stack(view):
    # the part's entry is written into, not replaced: the selection shares it (upstream)
    stack = LazyStackedTensorDict(_data_entry(), _data_entry(), stack_dim=0)
    out = stack.select("s", "a") if view == "select" else stack.exclude("a")
    out.update_at_({"s": NonTensorData("new")}, 0)
    assert stack["s"] == [["new"] * 3, ["x"] * 3]


def test_one_value_written_over_a_whole_data_entry_keeps_it_one_value():
    td = _data_entry()
    entry = td._get_str("s")
    td[:] = TensorDict({"s": NonTensorData("new", batch_size=[3])}, [3])
    assert isinstance(td._get_str("s"), NonTensorData) and td._get_str("s") is entry
    assert td["s"] == "new"


@pytest.mark.parametrize("how", ["set_", "setitem"])
def test_a_write_at_one_index_of_a_locked_data_entry_makes_it_a_stack(how):
    # upstream: the entry becomes a stack, the keys stay, the lock too
    td = _locked_data_entry()
    sub = td._get_sub_tensordict(0)
    if how == "set_":
        sub.set_("s", "new")
    else:
        sub["s"] = "new"
    assert td["s"] == ["new", "x", "x"]
    assert td.is_locked and sorted(td.keys()) == ["a", "s"]
    with pytest.raises(RuntimeError, match="locked"):
        td._get_sub_tensordict(0)["t"] = "other"
    assert sorted(td.keys()) == ["a", "s"]


# views covering every element of the batch: a non-tensor write through them reaches the
# source, and one into the source is read through them (upstream: the first six; ours also
# the index None and the reshapes, which upstream gives a copy of their own)
_WHOLE_VIEWS = {
    "slice_all": lambda t: t[:],
    "ellipsis": lambda t: t[...],
    "none": lambda t: t[None],
    "unsqueeze": lambda t: t.unsqueeze(0),
    "unsqueeze_permute": lambda t: t.unsqueeze(1).permute(1, 0),
    "unsqueeze_squeeze": lambda t: t.unsqueeze(0).squeeze(0),
    "view": lambda t: t.view(3, 1),
    "reshape": lambda t: t.reshape(1, 3),
    "flatten": lambda t: t.unsqueeze(0).flatten(0, 1),
    "unflatten": lambda t: t.unflatten(0, (3, 1)),
}
_WRITES = {
    "set_": lambda v, key: v.set_(key, "new"),
    "update_": lambda v, key: v.update_({key: "new"}),
    "set_inplace": lambda v, key: v.set(key, "new", inplace=True),
}


def _data_at(key):
    td = TensorDict({"a": torch.zeros(3)}, [3])
    td.set_non_tensor(key, "orig")
    return td


def _read(view, key):
    entry = view.get(key)
    return entry.data if isinstance(entry, NonTensorData) else set(_flat_strings(entry))


def _flat_strings(entry):
    out = entry.tolist()
    while isinstance(out[0], list):
        out = [x for row in out for x in row]
    return out


@pytest.mark.parametrize("key", ["s", ("n", "s")])
@pytest.mark.parametrize("write", sorted(_WRITES))
@pytest.mark.parametrize("op", sorted(_WHOLE_VIEWS))
def test_a_non_tensor_write_through_a_whole_view_reaches_the_source(op, write, key):
    td = _data_at(key)
    _WRITES[write](_WHOLE_VIEWS[op](td), key)
    assert td.get(key).data == "new"
    assert sorted(td.keys(True, True), key=str) == sorted(_data_at(key).keys(True, True), key=str)


@pytest.mark.parametrize("op", sorted(_WHOLE_VIEWS))
def test_a_non_tensor_write_into_the_source_shows_in_a_whole_view(op):
    td = _data_at("s")
    view = _WHOLE_VIEWS[op](td)
    td.set_("s", "new")
    assert _read(view, "s") in ("new", {"new"})


_PART_VIEWS = {
    "int": lambda t: t[0],
    "slice": lambda t: t[0:2],
    "mask": lambda t: t[torch.tensor([True, False, True])],
    "index": lambda t: t[torch.tensor([0, 2])],
    "expand": lambda t: t.expand(2, 3),
}


@pytest.mark.parametrize("op", sorted(_PART_VIEWS))
def test_a_non_tensor_write_through_a_partial_or_repeating_view_stays_in_it(op):
    # upstream: writing the one object would change elements the view does not hold
    td = _data_at("s")
    view = _PART_VIEWS[op](td)
    view.set_("s", "new")
    assert td["s"] == "orig"
    assert _read(view, "s") in ("new", {"new"})


@pytest.mark.parametrize("index", [torch.tensor([0, 0, 1]), torch.tensor([True, True, True]),
                                   (Ellipsis, torch.tensor([2, 1, 0]))])
def test_a_tensor_index_copies_the_entry(index):
    """A tensor or mask index picks elements (some maybe twice): its non-tensor entry is
    a copy, as its tensors are, so a write through it cannot reach elements it lacks."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td.set_non_tensor("s", "orig")
    td[index].set_("s", "new")
    assert td["s"] == "orig"
