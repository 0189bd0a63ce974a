"""Fast paths of device moves, casts, shallow copies, detach, to_dict, all/any, comparisons
and lerp on dense TensorDicts, checked against the general paths and upstream's
behaviour."""

from __future__ import annotations

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, MetaData, NonTensorData, NonTensorStack, TensorDict


def nested(**kwargs) -> TensorDict:
    return TensorDict(a=torch.zeros(2, 3), b=torch.arange(2), n={"c": torch.ones(2, 1)},
                      batch_size=[2], **kwargs)


def leaves(td) -> list[torch.Tensor]:
    return [td["a"], td["b"], td["n", "c"]]


# -- copy() / clone(recurse=False) -----------------------------------------------------
def test_shallow_copy_is_new_nodes_holding_the_same_values():
    param = torch.nn.Parameter(torch.zeros(2))
    stack = LazyStackedTensorDict(TensorDict(x=torch.zeros(())), TensorDict(x=torch.ones(())))
    td = nested(names=["x"], p=param, s=NonTensorData("text", batch_size=[2]), lazy=stack,
                sub={"deep": {"d": torch.zeros(2, 4)}}).lock_()
    for out in (td.copy(), td.clone(recurse=False)):
        assert out is not td and not out.is_locked and out.names == ["x"]
        assert out.batch_size == td.batch_size and out.device == td.device
        assert all(x is y for x, y in zip(leaves(out), leaves(td)))
        assert out["p"] is param and out["s"] is td["s"]  # tensor subclass, non-tensor
        for key in ("n", "sub", ("sub", "deep"), "lazy"):
            assert out[key] is not td[key] and out[key].__class__ is td[key].__class__
        assert out["sub", "deep", "d"] is td["sub", "deep", "d"]
        assert out["lazy"].tensordicts[1]["x"] is stack.tensordicts[1]["x"]
        out["n", "new"] = torch.zeros(2)  # the copy's structure is its own
        assert "new" not in td["n"].keys()


# -- to(device) ----------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["cpu", torch.device("cpu")])
def test_to_device_from_no_device_is_a_new_td_of_the_same_leaves(device):
    td = nested(names=["x"])
    out = td.to(device)
    assert out is not td and out["n"] is not td["n"]
    assert out.device == torch.device("cpu") and out["n"].device == torch.device("cpu")
    assert td.device is None  # unchanged
    assert all(x is y for x, y in zip(leaves(out), leaves(td)))
    assert out.names == ["x"] and out.batch_size == td.batch_size
    assert not out.is_locked


def test_cpu_of_a_locked_td_is_locked():
    td = nested().lock_()
    out = td.cpu()
    assert out is not td and out.is_locked and out["n"].is_locked


def test_to_the_device_it_is_on_returns_itself():
    td = nested(device="cpu")
    assert td.to("cpu") is td and td.cpu() is td and td.to(torch.device("cpu")) is td
    assert td.to("cpu", non_blocking=True) is td
    stack = LazyStackedTensorDict.lazy_stack([nested(device="cpu"), nested(device="cpu")])
    assert stack.to("cpu") is stack


def test_to_device_with_non_tensor_entries_takes_the_general_path():
    td = TensorDict(a=torch.zeros(2), s="x", batch_size=[2])
    out = td.to("cpu")
    assert out.device == torch.device("cpu") and out["s"] == "x" and out["a"] is td["a"]


def test_to_device_and_dtype_together():
    td = nested()
    out = td.to("cpu", torch.float64)
    assert out.device == torch.device("cpu") and out["b"].dtype is torch.float64


# -- dtype casts ---------------------------------------------------------------------------
def test_float_keeps_leaves_of_that_dtype_and_casts_the_others():
    td = nested()
    out = td.float()
    assert out["a"] is td["a"] and out["n", "c"] is td["n", "c"]
    assert out["b"].dtype is torch.float32 and out["b"].tolist() == [0.0, 1.0]
    assert td["b"].dtype is torch.int64  # unchanged


def test_double_of_a_grad_leaf_keeps_the_graph():
    x = torch.ones(2, requires_grad=True)
    out = TensorDict(x=x, y=torch.zeros(2)).double()
    assert out["x"].dtype is torch.float64 and out["x"].grad_fn is not None
    out["x"].sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_named_casts_of_a_locked_td_are_locked_but_type_is_not():
    td = nested().lock_()
    assert td.float().is_locked and td.double().is_locked and td.int().is_locked
    assert td.float(cast_filter=tensordict.is_integer).is_locked
    with pytest.warns(FutureWarning, match="unlocked"):
        out = td.type(torch.float64)
    assert not out.is_locked and out["b"].dtype is torch.float64


def test_cast_filter_gets_the_key_as_a_tuple_and_the_leaf():
    td = nested()
    seen = []

    def keep(key, x):
        seen.append((key, x.dtype))
        return key != ("n", "c")

    out = td.double(cast_filter=keep)
    assert seen == [(("a",), torch.float32), (("b",), torch.int64), (("n", "c"), torch.float32)]
    assert out["a"].dtype is torch.float64 and out["n", "c"].dtype is torch.float32


@pytest.mark.parametrize("args", [(torch.zeros(1),), (("a",), torch.zeros(1))])
def test_cast_filters_take_a_leaf_or_a_key_and_a_leaf(args):
    assert tensordict.is_floating(*args) and tensordict.is_inexact(*args)
    assert not tensordict.is_integer(*args) and not tensordict.is_bool(*args)
    out = nested().double(cast_filter=tensordict.is_integer)
    assert out["a"].dtype is torch.float32 and out["b"].dtype is torch.float64


# -- detach --------------------------------------------------------------------------------
def test_detach_shares_storage_and_keeps_structure():
    x = torch.ones(2, requires_grad=True)
    td = TensorDict(x=x * 2, n={"y": x * 3}, batch_size=[2], names=["b"]).lock_()
    out = td.detach()
    assert not out["x"].requires_grad and not out["n", "y"].requires_grad
    assert out["x"].data_ptr() == td["x"].data_ptr()
    assert out.is_locked and out["n"].is_locked and out.names == ["b"]
    assert td["x"].requires_grad  # unchanged


def test_detach_with_non_tensor_entries():
    td = TensorDict(x=torch.ones(2, requires_grad=True) * 2, s="x", batch_size=[2])
    out = td.detach()
    assert not out["x"].requires_grad and out["s"] == "x"


# -- clone ---------------------------------------------------------------------------------
def test_clone_copies_every_leaf_keeping_strides_names_and_structure():
    td = TensorDict(a=torch.arange(6.0).view(3, 2).t(),  # non-contiguous
                    b=torch.zeros(2, 4, dtype=torch.long), n={"c": torch.ones(2, 1)},
                    batch_size=[2], names=["b"]).lock_()
    out = td.clone()
    assert not out.is_locked and out.names == ["b"] and out["n"].names == ["b"]
    for key in ("a", "b", ("n", "c")):
        assert out[key].data_ptr() != td[key].data_ptr()
        assert out[key].stride() == td[key].stride() and out[key].dtype == td[key].dtype
        assert torch.equal(out[key], td[key])
    out["n", "c"].add_(1)
    assert (td["n", "c"] == 1).all()  # independent copies


def test_clone_is_recorded_by_autograd():
    w = torch.ones(2, requires_grad=True)
    out = TensorDict(x=w * 2, n={"y": w * 3}, batch_size=[2]).clone()
    (out["x"].sum() + out["n", "y"].sum()).backward()
    assert torch.equal(w.grad, torch.full((2,), 5.0))


def test_clone_of_nested_tensor_leaves_and_non_tensor_entries():
    ragged = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    out = TensorDict(r=ragged, x=torch.ones(2), y=torch.ones(2), batch_size=[2]).clone()
    assert out["r"].is_nested and out["r"] is not ragged and torch.equal(out["x"], torch.ones(2))
    td = TensorDict(x=torch.ones(2), s="text", batch_size=[2])
    assert td.clone()["s"] == "text" and td.clone()["x"] is not td["x"]


# -- to_dict -------------------------------------------------------------------------------
def test_to_dict_returns_the_leaves_and_unwraps_non_tensors():
    td = TensorDict(a=torch.zeros(2), n={"s": "x", "c": torch.ones(1)}, z=None)
    out = td.to_dict()
    assert out.keys() == {"a", "n", "z"} and out["a"] is td["a"]
    assert out["n"]["s"] == "x" and out["n"]["c"] is td["n", "c"] and out["z"] is None
    assert "z" not in td.to_dict(retain_none=False)
    assert td.to_dict(convert_tensors=True)["n"] == {"s": "x", "c": [1.0]}


def test_to_dict_of_a_lazy_stack():
    stack = LazyStackedTensorDict.lazy_stack([nested(), nested()])
    out = stack.to_dict()
    assert out["n"]["c"].shape == (2, 2, 1)


# -- all / any ----------------------------------------------------------------------------
@pytest.mark.parametrize("values, expected_all, expected_any", [
    ((True, True), True, True), ((True, False), False, True), ((False, False), False, False),
])
def test_all_any_over_nested_leaves(values, expected_all, expected_any):
    td = TensorDict(a=torch.tensor([values[0]] * 2), n={"b": torch.tensor([values[1]] * 2)},
                    s="text", batch_size=[2])
    assert td.all() is expected_all and td.any() is expected_any


def test_all_any_of_empty_tds():
    assert TensorDict().all() is True and TensorDict().any() is False
    assert TensorDict(n={}).all() is True and TensorDict(n={}).any() is False


def test_all_any_with_a_lazy_stack_entry():
    stack = LazyStackedTensorDict.lazy_stack([TensorDict(a=torch.ones(2)),
                                              TensorDict(a=torch.zeros(2))])
    td = TensorDict(s=stack, batch_size=[2])
    assert td.all() is False and td.any() is True


# -- comparisons ---------------------------------------------------------------------------
def test_eq_of_dense_tds_and_numbers():
    td = nested(names=["x"])
    other = td.clone()
    other["n", "c"][0] = 5
    out = td == other
    assert out["a"].all() and out["n", "c"].tolist() == [[False], [True]]
    assert out.names == ["x"] and out.batch_size == td.batch_size
    assert (td == 0)["b"].tolist() == [True, False] and (td != torch.zeros(1))["b"].tolist() == [
        False, True]


def test_eq_with_different_keys_raises_key_error():
    with pytest.raises(KeyError):
        _ = TensorDict(a=torch.zeros(1)) == TensorDict(b=torch.zeros(1))
    with pytest.raises(KeyError):  # a node on one side, a leaf on the other
        _ = TensorDict(a={"b": torch.zeros(1)}) == TensorDict(a=torch.zeros(1))


# -- lerp / addcmul / addcdiv -----------------------------------------------------------------
def test_lerp_with_number_and_td_weights():
    td = TensorDict(a=torch.zeros(2), n={"b": torch.zeros(2)})
    end = TensorDict(a=torch.ones(2) * 4, n={"b": torch.ones(2) * 8})
    assert td.lerp(end, 0.25)["n", "b"].tolist() == [2.0, 2.0]
    weight = TensorDict(a=torch.full((2,), 0.5), n={"b": torch.full((2,), 0.75)})
    out = td.lerp(end, weight)
    assert out["a"].tolist() == [2.0, 2.0] and out["n", "b"].tolist() == [6.0, 6.0]
    assert td["a"].tolist() == [0.0, 0.0]  # unchanged
    assert td.lerp_(end, weight) is td and td["n", "b"].tolist() == [6.0, 6.0]


def test_addcmul_addcdiv_fast_paths_match_torch():
    td = TensorDict(a=torch.ones(3), n={"b": torch.ones(3) * 2})
    t1 = TensorDict(a=torch.full((3,), 2.0), n={"b": torch.full((3,), 3.0)})
    t2 = TensorDict(a=torch.full((3,), 4.0), n={"b": torch.full((3,), 5.0)})
    assert td.addcmul(t1, t2, value=2)["n", "b"].tolist() == [32.0] * 3
    assert td.addcdiv(t1, t2, value=2)["a"].tolist() == [2.0] * 3
    td.addcmul_(t1, t2, value=0.5)
    assert td["a"].tolist() == [5.0] * 3 and td["n", "b"].tolist() == [9.5] * 3


def test_lerp_in_place_broadcasting_into_the_leaves():
    td = TensorDict(a=torch.zeros(2, 3), b=torch.zeros(2, 3))
    td.lerp_(TensorDict(a=torch.ones(3), b=torch.ones(3)), 0.5)
    assert td["a"].tolist() == [[0.5] * 3] * 2


@pytest.mark.parametrize("end", [
    TensorDict(a=torch.ones(2), b=torch.ones(2, dtype=torch.float64)),  # dtype of b
    TensorDict(a=torch.ones(2), b=torch.ones(3, 2)),  # b broadcasts beyond its leaf
])
def test_failed_lerp_in_place_writes_nothing(end):
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(2))
    with pytest.raises(RuntimeError, match="'b'"):
        td.lerp_(end, 0.5)
    assert td["a"].tolist() == [0.0, 0.0] and td["b"].tolist() == [0.0, 0.0]


def test_failed_addcdiv_in_place_writes_nothing():
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(2, dtype=torch.long))
    t = TensorDict(a=torch.ones(2), b=torch.ones(2))
    with pytest.raises(RuntimeError, match="'b'"):
        td.addcdiv_(t, t)
    assert td["a"].tolist() == [0.0, 0.0]


# -- non-tensor dtype / ndim --------------------------------------------------------------------
@pytest.mark.parametrize("entry", [NonTensorData("a"), NonTensorData(torch.zeros(2)),
                                   MetaData("x"), NonTensorStack("a", "b")])
def test_non_tensor_entries_have_no_dtype(entry):
    assert entry.dtype is None
    assert entry.ndim == len(entry.batch_size)


def test_non_tensor_data_ndim_and_device():
    data = NonTensorData("a", batch_size=[3, 2], device="cpu")
    assert data.ndim == 2 and data.shape == (3, 2) and data.device == torch.device("cpu")


def test_casts_with_non_tensor_or_nested_grad_entries_take_the_general_path():
    td = TensorDict(a=torch.zeros(2, dtype=torch.long), n={"s": "x"}, batch_size=[2])
    out = td.double()
    assert out["a"].dtype is torch.float64 and out["n", "s"] == "x"
    x = torch.ones(2, requires_grad=True)
    td = TensorDict(a=torch.zeros(2, dtype=torch.long), n={"x": x})
    out = td.to(torch.float64)
    assert out["a"].dtype is torch.float64 and out["n", "x"].grad_fn is not None
