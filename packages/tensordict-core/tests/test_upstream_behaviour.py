"""Behaviours TorchRL relies on, each asserting what upstream tensordict 0.15.3 does
(observed by running it): option switches, ``to(None)``, ``named_apply`` keys and
filtering, lenient ``unravel_key``, comparisons with non-tensor values, state-dict batch
sizes, widening empty children, and the private members clients call (``_fast_apply``,
``_has_exclusive_keys``, ``set_at_``, ``update_at_``, ``get_at``, ragged lazy writes)."""

import inspect
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    NestedKey,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    unravel_key,
    unravel_key_list,
    unravel_key_to_tuple,
)

SWITCHES = [
    (tensordict.set_lazy_legacy, tensordict.lazy_legacy, "LAZY_LEGACY_OP"),
    (tensordict.set_list_to_stack, tensordict.list_to_stack, "LIST_TO_STACK"),
    (tensordict.set_capture_non_tensor_stack, tensordict.capture_non_tensor_stack,
     "CAPTURE_NONTENSOR_STACK"),
]


def nested():
    return TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2), "m": {"c": torch.ones(2)}},
                       "e": {}, "s": "str"}, batch_size=[2])


def leaf_keys(td):
    return None if td is None else sorted(map(str, td.keys(True)))


# -- option switches ---------------------------------------------------------------------------
@pytest.mark.parametrize("switch, getter, env", SWITCHES)
def test_switch_changes_nothing_until_applied(switch, getter, env):
    before, env_before = getter(), os.environ.get(env)
    obj = switch(not before)
    assert getter() == before and obj.mode == (not before)
    assert os.environ.get(env) == env_before
    with obj as entered:
        assert entered is None and getter() == (not before)
        assert os.environ[env] == str(not before)  # subprocesses inherit it
        with switch(before):
            assert getter() == before
        assert getter() == (not before)
    assert getter() == before and os.environ.get(env) == env_before
    obj.set()
    try:
        assert getter() == (not before)
    finally:
        switch(before).set()
    assert getter() == before


@pytest.mark.parametrize("switch, getter, env", SWITCHES)
def test_switch_decorator_clone_and_no_unset(switch, getter, env):
    before = getter()
    obj = switch(not before)

    @obj
    def inside():
        return getter()

    assert inside() == (not before) and getter() == before
    clone = obj.clone()
    assert type(clone) is switch and clone is not obj and clone.mode == obj.mode
    assert not hasattr(obj, "unset")  # upstream has set() and clone(), no unset()
    try:
        assert obj.set() is None and getter() == (not before)
    finally:
        switch(before).set()


def test_switch_state_comes_from_the_environment():
    code = ("import tensordict as t; print(t.lazy_legacy(), t.lazy_legacy(allow_none=True), "
            "t.list_to_stack(allow_none=True))")
    env = {k: v for k, v in os.environ.items() if k not in ("LAZY_LEGACY_OP", "LIST_TO_STACK")}
    fresh = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                           text=True, check=True)
    assert fresh.stdout.split() == ["False", "None", "None"]
    forced = subprocess.run([sys.executable, "-c", code], env={**env, "LAZY_LEGACY_OP": "1"},
                            capture_output=True, text=True, check=True)
    assert forced.stdout.split() == ["True", "True", "None"]


def test_set_get_defaults_to_none_is_a_plain_call():
    assert list(inspect.signature(tensordict.set_get_defaults_to_none).parameters) == [
        "set_to_none"]
    try:
        assert tensordict.set_get_defaults_to_none(False) is None
        assert not tensordict.get_defaults_to_none()
        with pytest.raises(KeyError, match="zzz"):
            TensorDict().get("zzz")
        with pytest.raises(TypeError):
            with tensordict.set_get_defaults_to_none(False):
                pass
    finally:
        tensordict.set_get_defaults_to_none(True)
    assert TensorDict().get("zzz") is None


def test_set_printoptions_applies_when_used():
    td = TensorDict(a=torch.zeros(2))
    compact = repr(td)
    switch = tensordict.set_printoptions(compact=False)
    assert repr(td) == compact and tensordict.get_printoptions()["compact"]
    with switch:
        assert repr(td).startswith("TensorDict(\n")
    assert repr(td) == compact
    switch.set()
    try:
        assert not tensordict.get_printoptions()["compact"]
        with tensordict.set_printoptions():  # no option given: keeps the current ones
            assert not tensordict.get_printoptions()["compact"]
    finally:
        tensordict.set_printoptions(compact=True).set()


# -- to(None) ----------------------------------------------------------------------------------
def test_to_none_returns_the_collection_itself():
    td = TensorDict(a=torch.zeros(2), batch_size=[2], device="cpu")
    stack = lazy_stack([td[0], td[1]])
    data, strings = NonTensorData("x"), NonTensorStack("x", "y")
    for obj in (td, stack, data, strings):
        assert obj.to(None) is obj
    assert td.to(device=None) is td and td.to(None, None) is td and td.to(dtype=None) is td
    assert td.to(None, non_blocking=True).device == torch.device("cpu")
    cast = td.to(None, torch.float64)
    assert cast is not td and cast["a"].dtype == torch.float64 and cast.device == td.device
    # only a batch size: set in place on the TensorDict itself
    assert td.to(batch_size=[]) is td and td.batch_size == torch.Size([])


# -- named_apply and the apply family ----------------------------------------------------------
@pytest.mark.parametrize("lazy", [False, True])
def test_named_apply_passes_a_string_at_the_top_level(lazy):
    td = nested()
    if lazy:
        td = lazy_stack([td[0], td[1]])
    seen = []
    td.named_apply(lambda key, x: seen.append(key) or x, nested_keys=True)
    per_part = ["a", ("n", "b"), ("n", "m", "c")]
    assert seen == per_part * (2 if lazy else 1)
    seen.clear()
    td.named_apply(lambda key, x: seen.append(key) or x)
    assert seen == ["a", "b", "c"] * (2 if lazy else 1)


@pytest.mark.parametrize("filter_empty, expected", [
    (None, ["('n', 'b')", "a", "e", "n", "s"]),  # drops only what fn emptied (n.m)
    (True, ["('n', 'b')", "a", "n", "s"]),  # drops every empty sub-TensorDict
    (False, ["('n', 'b')", "('n', 'm')", "a", "e", "n", "s"]),
])
def test_named_apply_filter_gives_upstream_keys(filter_empty, expected):
    def keep(key, x):
        return x if key in ("a", ("n", "b")) else None

    out = nested().named_apply(keep, nested_keys=True, filter_empty=filter_empty)
    assert leaf_keys(out) == expected
    assert torch.equal(out["n", "b"], torch.ones(2)) and out["s"] == "str"


def test_apply_returns_none_once_everything_is_filtered():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert td.apply(lambda x: None) is None
    assert td.named_apply(lambda k, x: None, filter_empty=True) is None
    assert lazy_stack([td, td]).apply(lambda x: None) is None
    assert td.apply(lambda x: None, filter_empty=False).is_empty()
    assert TensorDict(batch_size=[2]).apply(lambda x: x) is not None  # nothing was emptied
    assert TensorDict(batch_size=[2]).apply(lambda x: x, filter_empty=True) is None
    # non-tensor data are not seen by fn, so they keep the result alive
    kept = nested().named_apply(lambda k, x: None, nested_keys=True)
    assert leaf_keys(kept) == ["e", "s"]
    assert leaf_keys(nested().apply(lambda x: None, filter_empty=False)) == [
        "('n', 'm')", "e", "n", "s"]


def test_lazy_apply_keeps_an_empty_part_for_a_part_filtered_out():
    stack = lazy_stack([TensorDict(a=torch.zeros(())),
                        TensorDict(a=torch.zeros(()), b=torch.ones(()))])
    out = stack.named_apply(lambda key, x: x if key == "b" else None)
    assert isinstance(out, LazyStackedTensorDict)
    assert [list(part.keys()) for part in out.tensordicts] == [[], ["b"]]


@pytest.mark.parametrize("nested_keys", [False, True])
def test_apply_default_fills_every_leaf_of_a_missing_subtree(nested_keys):
    other = TensorDict({"a": torch.ones(2), "n": {"b": torch.full((2,), 2.0)}}, [2])
    seen = []

    def add(key, x, y):
        seen.append((key, y.tolist()))
        return x + y

    out = nested().named_apply(add, other, nested_keys=nested_keys,
                               default=torch.full((2,), 7.0))
    keys = ["a", ("n", "b"), ("n", "m", "c")] if nested_keys else ["a", "b", "c"]
    assert seen == list(zip(keys, [[1.0, 1.0], [2.0, 2.0], [7.0, 7.0]]))
    assert out["n", "m", "c"].tolist() == [8.0, 8.0]
    stack = lazy_stack([nested()[0], nested()[1]])
    out = stack.apply(lambda x, y: x if y is None else x + y, other, default=None)
    assert out["n", "m", "c"].tolist() == [1.0, 1.0] and out["a"].tolist() == [1.0, 1.0]
    with pytest.raises(KeyError, match=r"\('n', 'm'\)"):
        nested().apply(lambda x, y: x + y, other)


def test_call_on_nested_and_is_leaf_hand_non_tensor_data_to_fn():
    td = TensorDict(a=torch.zeros(2), n={"b": torch.ones(2)}, s="str",
                    l=NonTensorStack("x", "y"), batch_size=[2])
    seen = []
    td.apply(lambda x: seen.append(type(x).__name__) or x, call_on_nested=True)
    assert seen == ["Tensor", "TensorDict", "NonTensorData", "NonTensorStack"]
    seen.clear()
    td.apply(lambda x: seen.append(type(x).__name__) or x, is_leaf=tensordict.is_leaf_nontensor)
    assert seen == ["Tensor", "Tensor", "NonTensorData", "NonTensorStack"]
    assert td.apply(lambda x: None, call_on_nested=True) is None


def test_fast_apply_is_apply_without_checks():
    params = list(inspect.signature(TensorDict._fast_apply).parameters)
    assert params == ["self", "fn", "others", "batch_size", "device", "names", "inplace",
                      "call_on_nested", "default", "named", "nested_keys", "filter_empty",
                      "is_leaf", "propagate_lock", "out", "num_threads", "checked",
                      "constructor_kwargs"]
    assert inspect.signature(TensorDict._fast_apply).parameters["filter_empty"].default is False
    td = TensorDict(a=torch.arange(6.0).reshape(2, 3), n={"b": torch.ones(2, 3)}, s="x",
                    batch_size=[2])
    unchecked = td._fast_apply(lambda x: x[:1])  # no batch-size check, as upstream
    assert unchecked["a"].shape == (1, 3)
    with pytest.raises(RuntimeError, match=r"batch dimension mismatch.*'a'"):
        td.apply(lambda x: x[:1])
    with pytest.raises(RuntimeError, match=r"\('n', 'b'\)"):
        td.exclude("a").apply(lambda x: x[:1])
    assert td._fast_apply(lambda x: None).batch_size == td.batch_size  # kept empty levels
    out = td.clone().zero_()
    assert td._fast_apply(lambda x: x + 1, out=out) is out
    assert torch.equal(out["a"], td["a"] + 1)
    locked = td.clone().lock_()
    assert locked._fast_apply(lambda x: x, propagate_lock=True).is_locked
    assert not locked.apply(lambda x: x).is_locked
    seen = []
    td._fast_apply(lambda key, x: seen.append(key), named=True, nested_keys=True)
    assert seen == ["a", ("n", "b")]


# -- keys --------------------------------------------------------------------------------------
def test_unravel_key_is_lenient_like_upstream():
    assert unravel_key((0,)) == () and unravel_key(("a", 0)) == ()
    assert unravel_key(("a", ())) == () and unravel_key(()) == ()
    assert unravel_key((("a",),)) == "a" and unravel_key(("a", ("b",))) == ("a", "b")
    assert unravel_key_to_tuple(0) == () and unravel_key_to_tuple(("a", ("b",))) == ("a", "b")
    with pytest.raises(RuntimeError):
        unravel_key(0)
    with pytest.raises(RuntimeError):
        unravel_key_list(["a", (0,)])
    with pytest.raises(TypeError):
        unravel_key_list("a")
    with pytest.raises(KeyError, match=r"Only NestedKeys.*\(0,\)"):
        TensorDict(a=torch.zeros(())).get((0,))


def test_nested_key_works_with_isinstance_and_annotations():
    for key in ("a", ("a",), ("a", ("b", ("c",)))):
        assert isinstance(key, NestedKey)
    for key in (0, (0,), (), ("a", 1), ["a"], None, ("a", ())):
        assert not isinstance(key, NestedKey)

    def f(key: NestedKey | None = None, keys: list[NestedKey] | None = None) -> NestedKey:
        return key

    assert f("a") == "a" and "NestedKey" in str(inspect.signature(f))


# -- comparisons -------------------------------------------------------------------------------
@pytest.mark.parametrize("other", ["str", None, [0, 1], (0, 1), np.zeros(2), object(), ...])
def test_comparing_with_a_non_tensor_value_is_never_equal(other):
    td = TensorDict(a=torch.zeros(2), n={"b": torch.ones(2)}, batch_size=[2])
    stack = lazy_stack([td[0], td[1]])
    for obj in (td, stack):
        assert (obj == other) is False and (obj != other) is True
    assert (td < other) is False and (td >= other) is False
    with pytest.raises(ValueError, match="Incompatible value"):
        stack < other  # noqa: B015


def test_comparisons_that_stay_leafwise():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert td not in [None, "x"] and [None, td].index(td) == 1
    assert (td == {"a": torch.zeros(2)})["a"].all()
    assert (td == np.float64(0))["a"].all() and (td <= 0)["a"].all()
    with pytest.raises(KeyError):
        td == {"b": torch.zeros(2)}  # noqa: B015


# -- batch sizes -------------------------------------------------------------------------------
def test_load_state_dict_restores_the_batch_size():
    src = TensorDict(a=torch.ones(3, 2), n={"b": torch.zeros(3, 2, 4)}, batch_size=[3, 2],
                     device="cpu")
    state = src.state_dict()
    empty = TensorDict()
    assert empty.load_state_dict(state, strict=False) is empty
    assert empty.batch_size == (3, 2) and empty["n"].batch_size == (3, 2)
    assert empty.device is None  # the device is not restored, as upstream
    assert torch.equal(empty["n", "b"], src["n", "b"])
    assert TensorDict(batch_size=[3]).load_state_dict(state, strict=False).batch_size == (3, 2)
    target = TensorDict(a=torch.zeros(3, 2), n={"b": torch.zeros(3, 2, 4)}, batch_size=[3, 2])
    leaf = target["a"]
    target.load_state_dict(state)
    assert target["a"] is leaf and leaf.sum() == 6  # copied in place


def test_setting_the_batch_size_widens_empty_children():
    td = TensorDict(a=torch.zeros(3, 2), e={}, n={"x": torch.zeros(3, 2), "e": {}})
    child = td["e"]
    td.batch_size = [3, 2]
    assert td["e"] is child and child.batch_size == (3, 2)
    assert td["n"].batch_size == (3, 2) and td["n", "e"].batch_size == (3, 2)
    bad = TensorDict(a=torch.zeros(3), e={}, n={"x": torch.zeros(4)})
    with pytest.raises(RuntimeError, match=r"'x' has shape torch.Size\(\[4\]\)"):
        bad.batch_size = [3]
    assert bad.batch_size == () and bad["e"].batch_size == () and bad["n"].batch_size == ()
    with pytest.raises(RuntimeError, match="'e'"):
        TensorDict(e=TensorDict(batch_size=[2])).batch_size = [3]


# -- private members clients call --------------------------------------------------------------
@pytest.mark.parametrize("parts, expected", [
    ([{"a": 0}, {"a": 0}], False),
    ([{"a": 0}, {"a": 0, "b": 0}], True),
    ([{"a": 0}, {"b": 0}], True),
    ([{"n": {"a": 0}}, {"n": {"a": 0, "b": 0}}], True),
    ([{"s": "x"}, {}], False),  # non-tensor data do not count
    ([{"e": {}}, {}], False),  # nor empty sub-TensorDicts
])
def test_has_exclusive_keys(parts, expected):
    def build(spec):
        return TensorDict({k: build(v) if isinstance(v, dict) else
                           (v if isinstance(v, str) else torch.zeros(())) for k, v in spec.items()})

    assert lazy_stack([build(p) for p in parts])._has_exclusive_keys is expected
    assert TensorDict()._has_exclusive_keys is False
    ragged = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))])
    assert ragged._has_exclusive_keys is False


def test_set_at_writes_in_place():
    td = TensorDict(a=torch.zeros(4, 2), n={"b": torch.zeros(4)}, batch_size=[4])
    assert td.set_at_("a", torch.ones(2), 1) is td
    td.set_at_(("n", "b"), torch.tensor(5.0), 2)
    td.set_at_("a", 7.0, slice(2, 4))
    td.set_at_("a", torch.full((2, 2), 3.0), torch.tensor([0, 3]))
    assert td["a"].tolist() == [[3, 3], [1, 1], [7, 7], [3, 3]]
    assert td["n", "b"].tolist() == [0, 0, 5, 0]
    td.lock_().set_at_("a", torch.zeros(2), 1)  # in place: allowed when locked
    with pytest.raises(KeyError, match='"z"'):
        td.set_at_("z", torch.ones(2), 1)
    stack = lazy_stack([TensorDict(a=torch.zeros(3, 2), batch_size=[3]) for _ in range(2)])
    stack.set_at_("a", torch.tensor([1.0, 2.0]), (slice(None), slice(0, 2)))  # broadcast
    assert all(p["a"].tolist() == [[1, 2], [1, 2], [0, 0]] for p in stack.tensordicts)
    ragged = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(3))])
    ragged.set_at_("x", torch.ones(3), 1)
    assert ragged.tensordicts[1]["x"].tolist() == [1, 1, 1]
    assert ragged.tensordicts[0]["x"].tolist() == [0, 0]


def test_update_at_checks_keys_before_writing():
    td = TensorDict(a=torch.zeros(4, 2), n={"b": torch.zeros(4)}, batch_size=[4])
    td.update_at_({"a": torch.ones(2), "n": {"b": torch.tensor(3.0)}}, 1)
    td.update_at_(TensorDict(a=torch.full((2, 2), 2.0), batch_size=[2]), slice(2, 4))
    td.update_at_({"a": torch.full((2,), 9.0), "n": {"b": 9.0}}, 0, keys_to_update=["a"])
    assert td["a"][:, 0].tolist() == [9, 1, 2, 2] and td["n", "b"].tolist() == [0, 3, 0, 0]
    with pytest.raises(KeyError, match='"z"'):
        td.update_at_({"a": torch.full((2,), 5.0), "z": torch.ones(2)}, 3)
    assert td["a"][3].tolist() == [2, 2]  # nothing written
    stack = lazy_stack([TensorDict(a=torch.zeros(2)) for _ in range(3)])
    stack.update_at_({"a": torch.full((2,), 4.0)}, 2)
    assert stack.tensordicts[2]["a"].tolist() == [4, 4]


def test_get_at():
    td = TensorDict(a=torch.arange(4), s="x", batch_size=[4])
    assert td.get_at("a", 1) == 1 and td.get_at("a", index=2) == 2
    assert td.get_at("z", 1) is None and td.get_at("z", 1, "d") == "d"
    assert td.get_at("z", 1, default="d") == "d"
    assert isinstance(td.get_at("s", 1), NonTensorData)
    with pytest.raises(TypeError, match="index argument missing"):
        td.get_at("a", idx=1)
    assert lazy_stack([td, td]).get_at("a", (1, 3)) == 3


def test_ragged_lazy_stack_takes_one_value_per_part():
    def ragged():
        return lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(3))])

    def shapes(stack, key="x"):
        return [p[key].tolist() for p in stack.tensordicts]

    stack = ragged()
    stack["x"] = [torch.ones(2), torch.ones(3)]
    assert shapes(stack) == [[1, 1], [1, 1, 1]]
    stack.set_("x", torch.nested.nested_tensor([torch.full((2,), 2.0), torch.full((3,), 2.0)]))
    assert shapes(stack) == [[2, 2], [2, 2, 2]]
    stack["z"] = [[1.0, 2.0], [1.0, 2.0, 3.0]]
    assert shapes(stack, "z") == [[1, 2], [1, 2, 3]]
    stack[1] = TensorDict(x=torch.full((3,), 5.0), z=torch.zeros(3))
    assert shapes(stack) == [[2, 2], [5, 5, 5]]
    with pytest.raises(ValueError, match="1 values at key 'x'"):
        stack["x"] = [torch.ones(2)]
    with pytest.raises(RuntimeError, match="part 1"):
        stack.set_("x", [torch.ones(2), torch.ones(4)])
    assert shapes(stack) == [[2, 2], [5, 5, 5]]  # nothing written
    stack.lock_()
    stack.set_("x", [torch.zeros(2), torch.zeros(3)])  # in place: fine when locked
    with pytest.raises(RuntimeError, match="locked"):
        stack["x"] = [torch.zeros(2), torch.zeros(3)]
    assert shapes(stack) == [[0, 0], [0, 0, 0]]


# -- what TorchRL's collectors, losses and specs call ---------------------------------------
def test_apply_named_passes_keys_like_named_apply():
    td = TensorDict(a=torch.zeros(2), b=torch.ones(2), batch_size=[2])
    out = td.apply(lambda name, x: x + 1 if name == "a" else None, named=True,
                   filter_empty=True, default=None)
    assert list(out.keys()) == ["a"] and torch.equal(out["a"], torch.ones(2))


def test_get_accepts_the_lazy_stack_read_options_on_a_dense_tensordict():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    assert td.get("a", None, as_padded_tensor=True, padding_value=1.0) is td["a"]
    assert td.get("missing", None, as_list=True) is None
    with pytest.raises(TypeError, match="unexpected"):
        td.get("a", None, no_such_option=True)


def test_to_module_accepts_preserve_module_state():
    module = torch.nn.Linear(2, 2).eval()
    zeros = TensorDict.from_module(module).apply(torch.zeros_like)
    with zeros.to_module(module, preserve_module_state=False):
        assert torch.equal(module.weight, torch.zeros(2, 2)) and not module.training
    assert not torch.equal(module.weight, torch.zeros(2, 2))


def test_has_names():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    assert not td._has_names()
    td.refine_names(None, "time")
    assert td._has_names()


def test_stacked_names_are_a_tuple_so_vmap_can_extend_them():
    td = TensorDict(x=torch.ones(3, 4), batch_size=[3], names=["time"])
    stacked = torch.stack([td, td.clone()])
    assert stacked.names == [None, "time"]
    out = torch.vmap(lambda t: t.set("y", t["x"].sum(-1, keepdim=True)), (0,))(stacked)
    assert out["y"].shape == (2, 3, 1)


def test_apply_nest_takes_a_list_batch_size():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    out = td._apply_nest(lambda x: x[0], batch_size=[3])
    assert out.batch_size.__class__ is torch.Size and out.batch_size == (3,)


def test_shape_of_tensors_collections_and_nested_tensors():
    from tensordict.utils import _shape

    assert _shape(torch.zeros(2, 3)) == (2, 3)
    assert _shape(TensorDict(batch_size=[4])) == (4,)
    nested = torch.nested.nested_tensor([torch.zeros(2, 4), torch.zeros(3, 4)])
    assert _shape(nested) == (2, -1, 4)


def test_reduce_every_feature_to_one_value_per_batch_element():
    td = TensorDict(a=torch.ones(2, 3, 4), b=TensorDict(c=torch.ones(2, 3, 5), batch_size=[2, 3]),
                    batch_size=[2])
    assert torch.equal(td.sum(dim="feature", reduce=True), torch.tensor([27.0, 27.0]))


def test_from_module_and_to_module_see_through_tensordict_params_children():
    nn_ = pytest.importorskip("tensordict.nn")
    module = torch.nn.Module()
    module.actor = torch.nn.Sequential(torch.nn.Linear(2, 2))
    module.actor_params = nn_.TensorDictParams(TensorDict.from_module(module.actor).clone())
    params = TensorDict.from_module(module)  # nested like the module's parameter names
    assert ("actor_params", "0", "weight") in params.keys(True, True)
    zeros = params.apply(torch.zeros_like)
    with zeros.to_module(module):
        assert torch.equal(module.actor_params["0", "weight"], torch.zeros(2, 2))
    assert not torch.equal(module.actor_params["0", "weight"], torch.zeros(2, 2))


def test_where_with_pad_keeps_the_leaves_of_both_and_fills_out():
    cond = torch.tensor([True, False])
    a = TensorDict(x=torch.ones(2, 3), z=torch.full((2,), 5.0), batch_size=[2])
    b = TensorDict(x=torch.zeros(2, 3), y=torch.full((2,), 7.0), batch_size=[2])
    out = TensorDict(batch_size=[2])
    result = a.where(cond, b, out=out, pad=0, update_batch_size=True)
    assert result is out
    assert torch.equal(out["z"], torch.tensor([5.0, 0.0]))
    assert torch.equal(out["y"], torch.tensor([0.0, 7.0]))
    assert torch.equal(out["x"][1], torch.zeros(3))


def test_where_out_replaces_its_tensors_instead_of_writing_them():
    action = torch.ones(2, 2)
    root = TensorDict(action=action, batch_size=[2])
    step = TensorDict(action=action, batch_size=[2])  # a stored step shares the tensor
    reset = TensorDict(obs=torch.zeros(2, 3), batch_size=[2])
    root.where(torch.tensor([True, False]), reset, out=root, pad=0)
    assert torch.equal(root["action"], torch.tensor([[1.0, 1.0], [0.0, 0.0]]))
    assert torch.equal(step["action"], torch.ones(2, 2)) and root["action"] is not action


def test_expand_as_right_broadcasts_size_one_dims_and_names_bad_shapes():
    from tensordict.utils import expand_as_right, expand_right

    mask = torch.ones(2, 1, dtype=torch.bool)
    assert expand_as_right(mask, torch.zeros(2, 3, 1)).shape == (2, 3, 1)
    assert expand_right(torch.arange(2.0), (2, 3)).shape == (2, 3)
    assert expand_as_right(TensorDict(a=1.0), torch.zeros(2)).batch_size == (2,)
    with pytest.raises(RuntimeError, match=r"\(2, 2\).*\(2, 3, 1\)"):
        expand_as_right(torch.ones(2, 2), torch.zeros(2, 3, 1))
    with pytest.raises(RuntimeError, match=r"at least as many dims.*\(2, 3\) and \(2,\)"):
        expand_as_right(torch.ones(2, 3), torch.zeros(2))
