"""The long tail of TensorDict methods, as upstream tensordict 0.15.3 behaves (observed).

Reductions over batch dims and features, keyword forms of the shape ops, the shape ops'
``inplace=True``, ``split_keys``, dim names through tensor indices, the device of
``torch.*_like`` and what ``apply`` stores for a result that is no tensor.
"""

from __future__ import annotations

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict


def _td() -> TensorDict:
    nested = TensorDict(c=torch.arange(12.).view(3, 4) / 10, batch_size=[3, 4])
    return TensorDict(a=torch.arange(12.).view(3, 4), b=torch.ones(3, 4, 2), n=nested,
                      batch_size=[3, 4])


def _leafwise(td: TensorDict, fn) -> dict:
    return {key: fn(value) for key, value in td.items(True, True)}


def _assert_leaves(td: TensorDict, expected: dict) -> None:
    assert set(td.keys(True, True)) == set(expected)
    for key, value in expected.items():
        torch.testing.assert_close(td[key], value)


# -- reductions ----------------------------------------------------------------------------
@pytest.mark.parametrize(("dim", "keepdim", "batch"), [
    (0, False, [4]), (-1, False, [3]), ((0, 1), False, []), (None, False, []),
    (1, True, [3, 1]), (None, True, [1, 1]),
])
def test_logsumexp_over_batch_dims(dim, keepdim, batch):
    td = _td()
    out = td.logsumexp(dim, keepdim=keepdim)
    dims = (0, 1) if dim is None else dim % 2 if isinstance(dim, int) else dim  # batch dims
    assert out.batch_size == torch.Size(batch)
    _assert_leaves(out, _leafwise(td, lambda x: torch.logsumexp(x, dims, keepdim=keepdim)))


def test_softmax_over_batch_dims_dense_and_lazy():
    td = _td()
    _assert_leaves(td.softmax(1), _leafwise(td, lambda x: torch.softmax(x, 1)))
    _assert_leaves(td.softmax(0, dtype=torch.float64),
                   _leafwise(td, lambda x: torch.softmax(x, 0, dtype=torch.float64)))
    stack = LazyStackedTensorDict.lazy_stack([td[0], td[1]])
    out = stack.softmax(1)  # along a dim of the parts: a lazy stack, as upstream
    assert isinstance(out, LazyStackedTensorDict) and out.batch_size == torch.Size([2, 4])
    _assert_leaves(out, _leafwise(td[:2], lambda x: torch.softmax(x, 1)))
    _assert_leaves(stack.softmax(0), _leafwise(td[:2], lambda x: torch.softmax(x, 0)))


def test_feature_reductions_with_reduce_ignore_keepdim():
    td = TensorDict(a=torch.arange(6.).view(2, 3), b=torch.ones(2, 3, 2), batch_size=[2, 3])
    flat = torch.cat([td["a"].unsqueeze(-1), td["b"]], -1)  # every feature of every leaf
    for name in ("sum", "mean", "nansum", "nanmean", "std", "var", "amax", "amin"):
        out = getattr(td, name)("feature", keepdim=True, reduce=True)
        torch.testing.assert_close(out, getattr(torch, name)(flat, dim=-1))
    values, indices = td.max("feature", keepdim=True, reduce=True)
    torch.testing.assert_close(values, flat.max(-1).values)
    torch.testing.assert_close(indices, flat.max(-1).indices)
    with pytest.raises(TypeError, match="incompatible with keepdim=True"):
        td.sum("feature", keepdim=True)  # without reduce, as upstream


def test_max_min_over_a_batch_dim_with_reduce_give_values_and_indices():
    td = TensorDict(a=torch.tensor([[1., 5.], [3., 2.]]), b=torch.tensor([[4., 0.], [9., 1.]]),
                    batch_size=[2, 2])
    out = td.max(dim=1, reduce=True)  # observed upstream: the leaves side by side
    assert out.values.tolist() == [5., 9.] and out.indices.tolist() == [1, 2]
    out = td.min(dim=0, reduce=True)
    assert out.values.tolist() == [1., 0.] and out.indices.tolist() == [0, 2]
    out = td.max(dim=1, keepdim=True, reduce=True)
    assert out.values.tolist() == [[5.], [9.]] and out.indices.tolist() == [[1], [2]]


def test_prod_and_sum_over_batch_dims_with_reduce():
    td = TensorDict(a=torch.arange(1., 13.).view(3, 4), b=torch.full((3, 4), 2.),
                    batch_size=[3, 4])
    both = torch.cat([td["a"], td["b"]], 1)
    torch.testing.assert_close(td.prod(1, reduce=True), both.prod(1))
    torch.testing.assert_close(td.prod(1, keepdim=True, reduce=True), both.prod(1, True))
    torch.testing.assert_close(td.sum((0, 1), reduce=True), both.sum())
    torch.testing.assert_close(td.prod((0, 1), reduce=True), both.prod())  # upstream: raises


# -- keyword forms ---------------------------------------------------------------------------
def test_shape_ops_take_keywords():
    td = _td()
    assert td.reshape(size=(12,)).batch_size == torch.Size([12])
    assert td.reshape(size=[4, 3])["b"].shape == torch.Size([4, 3, 2])
    assert td.view(size=(12,))["n", "c"].shape == torch.Size([12])
    assert td.permute(dims=(1, 0)).batch_size == torch.Size([4, 3])
    assert td.transpose(dim0=0, dim1=1).batch_size == torch.Size([4, 3])
    assert td.unsqueeze(dim=0).squeeze(dim=0).batch_size == torch.Size([3, 4])
    assert td.gather(dim=1, index=torch.zeros(3, 2, dtype=torch.long)).batch_size == \
        torch.Size([3, 2])
    with pytest.raises(TypeError):
        td.reshape(12, sizes=3)


@pytest.mark.parametrize(("op", "batch"), [
    (lambda td: td.flatten(0, 1, inplace=True), [12]),
    (lambda td: td.unflatten(0, (3, 1), inplace=True), [3, 1, 4]),
    (lambda td: td.repeat(2, 1, inplace=True), [6, 4]),
    (lambda td: td.repeat_interleave(2, 0, inplace=True), [6, 4]),
    (lambda td: td.gather(1, torch.zeros(3, 2, dtype=torch.long), inplace=True), [3, 2]),
    (lambda td: td.roll(1, 0, inplace=True), [3, 4]),
])
def test_shape_ops_in_place_give_this_tensordict_the_result(op, batch):
    td, reference = _td(), _td()
    nested = td["n"]
    out = op(td)
    assert out is td and td.batch_size == torch.Size(batch)
    assert td["n"] is nested and nested.batch_size == torch.Size(batch)  # the same object
    expected = op(reference)  # (computed the same way on a copy)
    for key in ("a", "b", ("n", "c")):
        torch.testing.assert_close(td[key], expected[key])


def test_flatten_in_place_shares_the_leaves_and_drops_the_merged_names():
    td = _td()
    td.names = ["x", "y"]
    a = td["a"]
    td.flatten(0, 1, inplace=True)
    assert td["a"].data_ptr() == a.data_ptr() and td.names == [None]


def test_shape_op_in_place_on_a_locked_tensordict_changes_nothing():
    td = _td().lock_()
    with pytest.raises(RuntimeError, match="Cannot modify locked TensorDict"):
        td.flatten(0, 1, inplace=True)
    assert td.batch_size == torch.Size([3, 4]) and td["n"].batch_size == torch.Size([3, 4])
    assert td["a"].shape == torch.Size([3, 4])


# -- split_keys ------------------------------------------------------------------------------
def _keys(td: TensorDict) -> list[str]:
    return sorted(map(str, td.keys(True)))


def _three_levels() -> TensorDict:
    inner = TensorDict(d=torch.zeros(3), batch_size=[3])
    return TensorDict(a=torch.zeros(3), n=TensorDict(c=torch.zeros(3), m=inner, batch_size=[3]),
                      batch_size=[3])


def test_split_keys_in_place_returns_this_tensordict_with_the_rest():
    td = _three_levels()
    first, rest = td.split_keys(["a"], inplace=True)
    assert rest is td and _keys(first) == ["a"]
    assert _keys(td) == ["('n', 'c')", "('n', 'm')", "('n', 'm', 'd')", "n"]
    *parts, rest = _three_levels().split_keys(["a"], [("n", "c")], inplace=True)
    assert len(parts) == 2 and _keys(rest) == ["('n', 'm')", "('n', 'm', 'd')", "n"]


def test_split_keys_rest_drops_emptied_sub_tensordicts_without_touching_the_source():
    td = _three_levels()
    td["e"] = TensorDict(batch_size=[3])
    first, rest = td.split_keys([("n", "m", "d")])
    assert _keys(first) == ["('n', 'm')", "('n', 'm', 'd')", "n"]
    assert _keys(rest) == ["('n', 'c')", "a", "n"]  # no empty ('n', 'm'), no empty 'e'
    assert "e" in td.keys() and ("n", "m", "d") in td.keys(True)  # the source keeps all


def test_split_keys_reproduce_struct_keeps_every_sub_tensordict():
    first, rest = _three_levels().split_keys([("n", "c")], reproduce_struct=True)
    assert _keys(first) == ["('n', 'c')", "('n', 'm')", "n"]
    assert _keys(rest) == ["('n', 'm')", "('n', 'm', 'd')", "a", "n"]
    first, rest = _three_levels().split_keys([("n", "m")], reproduce_struct=True)
    assert _keys(rest) == ["('n', 'c')", "a", "n"]  # the split-off sub-TensorDict is gone


def test_split_keys_default_fills_missing_keys_when_not_strict():
    td = TensorDict(a=torch.zeros(3), b=torch.ones(3), batch_size=[3])
    first, second, rest = td.split_keys(["a"], ["z"], default=torch.full((3,), 7.),
                                        strict=False)
    assert second["z"].tolist() == [7., 7., 7.] and _keys(rest) == ["b"]
    assert _keys(td.split_keys(["a"], ["z"], strict=False)[1]) == []
    with pytest.raises(KeyError, match="z"):
        td.split_keys(["z"], default=0)


# -- names, devices, apply -------------------------------------------------------------------
@pytest.mark.parametrize(("index", "names"), [
    (torch.tensor([0, 1]), ["x", "y"]),
    (torch.tensor(0), ["y"]),
    (torch.tensor([[0, 1]]), [None, "x", "y"]),
    ((slice(None), torch.tensor([0, 1])), ["x", "y"]),
    ((torch.tensor([0, 1]), torch.tensor([0, 1])), [None]),
])
def test_names_through_tensor_indices(index, names):
    td = _td()
    td.names = ["x", "y"]
    assert td[index].names == names


def test_like_factories_give_the_device_asked_for():
    td = _td()
    out = torch.empty_like(td, device="meta")
    assert out.device == torch.device("meta") and out["n"].device == torch.device("meta")
    assert out["n", "c"].is_meta
    assert torch.zeros_like(td, device="cpu").device == torch.device("cpu")
    assert torch.zeros_like(td).device is None


def test_apply_stores_results_that_are_no_tensor_as_a_set_would():
    td = TensorDict(a=torch.zeros(3))
    assert torch.equal(td.apply(lambda x: 1)["a"], torch.tensor(1))
    assert torch.equal(td.apply(lambda x: [1, 2, 3])["a"], torch.tensor([1, 2, 3]))
    assert td.apply(lambda x: "s")["a"] == "s"
    batched = TensorDict(a=torch.zeros(3), batch_size=[3])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        batched.apply(lambda x: 1.5)


def test_unflatten_keys_clash_keeps_both_entries():
    td = TensorDict({"a.b": torch.zeros(3), "a": torch.ones(3)}, [3])
    with pytest.raises(KeyError, match="will override an existing"):
        td.unflatten_keys()
    with pytest.raises(KeyError, match="will override an existing"):
        td.unflatten_keys(inplace=True)
    assert sorted(td.keys()) == ["a", "a.b"] and td["a"].tolist() == [1., 1., 1.]


def test_to_with_bad_arguments_raises():
    td = _td()
    with pytest.raises(TypeError):
        td.to(torch.float64, torch.float32)
    with pytest.raises(TypeError):
        td.to(memory_format=1)  # (it was ignored)
    with pytest.raises(TypeError):
        td.to(torch.float64, torch.float32, inplace=True)
    assert td["a"].dtype == torch.float32
