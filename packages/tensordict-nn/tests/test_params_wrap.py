"""TensorDictParams wraps the TensorDict it is given (as upstream): its leaves become
Parameters and buffers where they stand, and every write through the TensorDictParams
lands in that TensorDict, which parameters(), named_buffers() and state_dict() follow."""

import copy

import pytest
import torch
from torch import nn

from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict
from tensordict.nn import TensorDictParams


def dotted(key):
    return key if isinstance(key, str) else ".".join(key)


def assert_registered(params, source):
    """parameters / buffers / state_dict are exactly the tensor leaves of ``source``."""
    leaves = {dotted(k): v for k, v in source.items(True, True)
              if isinstance(v, torch.Tensor)}
    expected_params = {k for k, v in leaves.items() if isinstance(v, nn.Parameter)}
    assert {k for k, _ in params.named_parameters()} == expected_params
    assert {k for k, _ in params.named_buffers()} == set(leaves) - expected_params
    state = params.state_dict(keep_vars=True)
    assert set(state) == set(leaves)
    assert all(state[k] is leaves[k] for k in leaves)


def make_source(kind):
    if kind == "dense":
        return TensorDict(a=torch.zeros(3), i=torch.arange(3))
    if kind == "nested":
        return TensorDict(a=torch.zeros(3), n={"x": torch.zeros(2), "i": torch.arange(2)})
    source = TensorDict(a=torch.zeros(3), n={"x": torch.zeros(2)})  # "non_tensor"
    source.set_non_tensor("s", "orig")
    source.set_non_tensor(("n", "t"), "inner")
    return source


KINDS = ["dense", "nested", "non_tensor"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("no_convert", [False, True])
def test_wraps_the_given_tensordict(kind, no_convert):
    source = make_source(kind)
    subs = {k: source.get(k) for k in source.keys() if isinstance(source.get(k), TensorDict)}
    params = TensorDictParams(source, no_convert=no_convert)
    assert params._param_td is source
    assert all(source.get(k) is sub for k, sub in subs.items())
    assert type(source["a"]) is (torch.Tensor if no_convert else nn.Parameter)
    for key, value in source.items(True, True):
        if isinstance(value, torch.Tensor):
            assert params[key] is value
            assert type(value) is torch.Tensor or not value.dtype == torch.long
    if kind == "non_tensor":
        assert params.get_non_tensor("s") == "orig"
        assert params.get_non_tensor(("n", "t")) == "inner"
    assert_registered(params, source)


def test_existing_parameters_and_buffers_kept():
    weight = nn.Parameter(torch.ones(2))
    source = TensorDict(w=weight, i=torch.arange(3))
    params = TensorDictParams(source)
    assert source["w"] is weight and params["w"] is weight
    assert type(source["i"]) is torch.Tensor and source["i"].dtype == torch.long


# each write through the TensorDictParams, and what it leaves in the source
def _set_new(p):
    p["b"] = torch.ones(4)


def _check_new(s):
    assert type(s["b"]) is nn.Parameter and s["b"].tolist() == [1.0] * 4


def _set_existing(p):
    p["a"] = torch.ones(3)


def _check_a_ones(s):
    assert type(s["a"]) is nn.Parameter and s["a"].tolist() == [1.0] * 3


def _check_nested_new(s):
    assert type(s["m", "y"]) is nn.Parameter and s["m", "y"].tolist() == [2.0]


def _rename(p):
    p.rename_key_("a", "z")


def _check_renamed(s):
    assert "a" not in s.keys() and type(s["z"]) is nn.Parameter


def _check_no_a(s):
    assert "a" not in s.keys()


def _check_a_plus(value):
    def check(s):
        assert type(s["a"]) is nn.Parameter and s["a"].tolist() == [value] * 3
    return check


WRITES = {
    "setitem_new": (_set_new, _check_new),
    "set_new": (lambda p: p.set("b", torch.ones(4)), _check_new),
    "setdefault": (lambda p: p.setdefault("b", torch.ones(4)), _check_new),
    "update_new": (lambda p: p.update({"b": torch.ones(4)}), _check_new),
    "setitem_existing": (_set_existing, _check_a_ones),
    "set_": (lambda p: p.set_("a", torch.ones(3)), _check_a_ones),
    "set_inplace": (lambda p: p.set("a", torch.ones(3), inplace=True), _check_a_ones),
    "update_": (lambda p: p.update_({"a": torch.ones(3)}), _check_a_ones),
    "nested_new": (lambda p: p.set(("m", "y"), torch.full((1,), 2.0)), _check_nested_new),
    "del": (lambda p: p.__delitem__("a"), _check_no_a),
    "pop": (lambda p: p.pop("a"), _check_no_a),
    "exclude_inplace": (lambda p: p.exclude("a", inplace=True), _check_no_a),
    "rename_key_": (_rename, _check_renamed),
    "apply_": (lambda p: p.apply_(lambda x: x + 1), _check_a_plus(1.0)),
    "add_": (lambda p: p.add_(2), _check_a_plus(2.0)),
    "copy_": (lambda p: p.copy_(p.clone().fill_("a", 3)), _check_a_plus(3.0)),
    "data_fill_": (lambda p: p.data.apply_(lambda x: x.fill_(4)), _check_a_plus(4.0)),
    "load_state_dict": (
        lambda p: p.load_state_dict({k: v + 5 for k, v in p.state_dict().items()}),
        _check_a_plus(5.0)),
    "set_non_tensor": (lambda p: p.set_non_tensor("s", "new"),
                       lambda s: s.get_non_tensor("s") == "new" or pytest.fail("s")),
    "non_tensor_setitem": (lambda p: p.__setitem__("s", "new"),
                           lambda s: s.get_non_tensor("s") == "new" or pytest.fail("s")),
    "lock_": (lambda p: p.lock_(), lambda s: s.is_locked or pytest.fail("lock")),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("write", sorted(WRITES))
def test_write_reaches_source(kind, write):
    source = make_source(kind)
    params = TensorDictParams(source)
    do, check = WRITES[write]
    with torch.no_grad():
        do(params)
    assert params._param_td is source
    check(source)
    assert_registered(params, source)


@pytest.mark.parametrize("kind", ["nested", "non_tensor"])
def test_nested_writes_reach_source(kind):
    source = make_source(kind)
    sub = source["n"]
    params = TensorDictParams(source)
    params["n", "y"] = torch.ones(2)
    assert type(sub["y"]) is nn.Parameter
    params["n"]["z"] = torch.ones(2)  # the sub-TensorDict itself: stored as given
    assert type(sub["z"]) is torch.Tensor
    del params["n", "x"]
    assert "x" not in sub.keys() and source["n"] is sub
    assert_registered(params, source)


def test_index_write_reaches_source():
    source = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    params = TensorDictParams(source)
    weight = source["a"]
    with torch.no_grad():
        params[0] = TensorDict(a=torch.ones(3))
    assert source["a"] is weight and source["a"].tolist() == [[1.0] * 3, [0.0] * 3]


def test_clear_and_unlock_reach_source():
    source = make_source("nested")
    params = TensorDictParams(source, lock=True)
    assert source.is_locked and params.is_locked
    params.unlock_()
    assert not source.is_locked
    params.clear()
    assert list(source.keys()) == [] and list(params.parameters()) == []


@pytest.mark.parametrize("convert", ["module_double", "module_to"])
def test_module_conversion_keeps_wrapping(convert):
    source = make_source("nested")
    params = TensorDictParams(source)
    weight = source["a"]
    if convert == "module_double":
        holder = nn.Module()
        holder.params = params
        holder.double()
    else:
        params.to(torch.float64, inplace=True)
    assert params._param_td is source and source["a"] is weight
    assert weight.dtype == torch.float64 and source["n", "x"].dtype == torch.float64
    params["b"] = torch.ones(1)
    assert "b" in source.keys()
    assert_registered(params, source)


def test_copies_do_not_write_to_source():
    source = make_source("nested")
    params = TensorDictParams(source)
    for other in (params.clone(), params.copy(), copy.deepcopy(params),
                  params.to(torch.float64), params.to_tensordict(),
                  TensorDictParams(params)):
        other["new"] = torch.ones(1)
        other["n", "new"] = torch.ones(1)
    assert "new" not in source.keys() and "new" not in source["n"].keys()
    assert TensorDictParams(params)["a"] is source["a"]  # (as upstream: the same leaves)


def test_locked_source():
    source = make_source("nested").lock_()
    params = TensorDictParams(source)
    assert params._param_td is source and source.is_locked and params.is_locked
    assert type(source["a"]) is nn.Parameter and type(source["n", "x"]) is nn.Parameter
    with pytest.raises(RuntimeError, match="b"):
        params["b"] = torch.ones(1)
    assert "b" not in source.keys()
    assert_registered(params, source)


def test_sub_tensordict_locked_on_its_own():
    source = make_source("nested")
    source["n"].lock_()
    TensorDictParams(source)
    assert type(source["n", "x"]) is nn.Parameter
    assert source["n"].is_locked and not source.is_locked


def _lazy_source():
    return LazyStackedTensorDict(TensorDict(a=torch.zeros(3)), TensorDict(a=torch.zeros(3)))


@pytest.mark.parametrize("where", ["top", "nested"])
def test_lazy_stack_raises_and_changes_nothing(where):
    lazy = _lazy_source()
    source = lazy if where == "top" else TensorDict(w=torch.zeros(2), l=lazy)
    with pytest.raises(RuntimeError, match="LazyStackedTensorDict"):
        TensorDictParams(source)
    assert all(type(v) is torch.Tensor for td in lazy.tensordicts for v in td.values())
    if where == "nested":
        assert type(source["w"]) is torch.Tensor
    # densified, it is wrapped
    dense = lazy.contiguous()
    params = TensorDictParams(dense)
    params["b"] = torch.ones(2, 1)
    assert "b" in dense.keys()
    assert_registered(params, dense)


def test_non_tensor_stack_kept():
    source = TensorDict(a=torch.zeros(3), s=NonTensorStack("x", "y", "z"), batch_size=[3])
    params = TensorDictParams(source)
    assert params._param_td is source and type(source["a"]) is nn.Parameter
    params["s"] = NonTensorStack("p", "q", "r")
    assert source.get("s").tolist() == ["p", "q", "r"]
    assert_registered(params, source)


# in-place writes that upstream runs without autograd: they need no torch.no_grad()
IN_PLACE = {
    "set_": lambda p: p.set_("a", torch.ones(3)),
    "set_nested_": lambda p: p.set_(("n", "x"), torch.ones(3)),
    "set_at_": lambda p: p.set_at_("a", torch.ones(()), 0),
    "update_": lambda p: p.update_({"a": torch.ones(3)}),
    "update_at_": lambda p: p.update_at_({"a": torch.ones(())}, 0),
    "copy_": lambda p: p.copy_(p.clone().fill_("a", 1.0)),
    "fill_": lambda p: p.fill_("a", 1.0),
    "apply_": lambda p: p.apply_(lambda x: x + 1),
    "zero_": lambda p: p.zero_(),
}


@pytest.mark.parametrize("write", sorted(IN_PLACE))
def test_in_place_writes_need_no_no_grad(write):
    source = TensorDict(a=torch.zeros(3), n={"x": torch.zeros(3)}, batch_size=[3])
    params = TensorDictParams(source)
    weight = source["a"]
    IN_PLACE[write](params)
    assert source["a"] is weight and weight.requires_grad and weight.grad_fn is None
    expected = {"zero_": 0.0, "set_nested_": 0.0}.get(write, 1.0)
    assert weight[0].item() == expected
    if write == "set_nested_":
        assert source["n", "x"].tolist() == [1.0] * 3
    assert_registered(params, source)


def test_pointwise_in_place_still_needs_no_grad():
    source = TensorDict(a=torch.zeros(3))
    params = TensorDictParams(source)
    with pytest.raises(RuntimeError, match="requires grad"):
        params.add_(1)
    assert source["a"].tolist() == [0.0] * 3


def test_names_set_through_params():
    source = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
    params = TensorDictParams(source)
    params.names = ["rows"]
    assert source.names == ["rows"] and params.names == ["rows"]
