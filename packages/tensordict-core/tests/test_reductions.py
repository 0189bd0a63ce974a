"""Reductions over batch dims, checked against the same reduction on each leaf."""

import pytest
import torch

from tensordict import TensorDict


def make():
    return TensorDict(
        a=torch.rand(2, 3),
        nested=TensorDict(c=torch.rand(2, 3, 4, 2), batch_size=[2, 3, 4]),
        s="text",
        batch_size=[2, 3],
        names=["x", "y"],
    )


LEAVES = ["a", ("nested", "c")]
SIMPLE = ["sum", "mean", "nansum", "nanmean", "std", "var", "amax", "amin"]


@pytest.mark.parametrize("name", SIMPLE)
@pytest.mark.parametrize("dim,keepdim", [(0, False), (-1, False), (1, True), ((0, 1), False)])
def test_reduce_over_batch_dims(name, dim, keepdim):
    td = make()
    out = getattr(td, name)(dim=dim, keepdim=keepdim)
    dims = (dim,) if isinstance(dim, int) else dim
    dims = tuple(d % 2 for d in dims)
    for key in LEAVES:
        torch.testing.assert_close(out[key], getattr(torch, name)(td[key], dim=dims,
                                                                  keepdim=keepdim))
    expected = [1 if i in dims else s for i, s in enumerate(td.batch_size)] if keepdim else [
        s for i, s in enumerate(td.batch_size) if i not in dims]
    assert out.batch_size == torch.Size(expected)
    assert out["nested"].batch_size == torch.Size(expected + [4])
    assert out["s"] == "text"
    if keepdim:
        assert out.names == ["x", "y"]
    elif dims == (0,):
        assert out.names == ["y"]


@pytest.mark.parametrize("name", SIMPLE + ["prod"])
def test_full_reduction(name):
    td = make()
    out = getattr(td, name)()
    assert out.batch_size == torch.Size([]) and out["nested"].batch_size == torch.Size([])
    for key in LEAVES:
        torch.testing.assert_close(out[key], getattr(torch, name)(td[key]))
    assert out["s"] == "text"


def test_reduce_true_gives_one_tensor():
    td = make()
    every = torch.cat([td["a"].reshape(-1), td["nested", "c"].reshape(-1)])
    torch.testing.assert_close(td.sum(reduce=True), every.sum())
    torch.testing.assert_close(td.mean(reduce=True), every.mean())
    torch.testing.assert_close(td.amax(reduce=True), every.max())
    torch.testing.assert_close(td.max(reduce=True), every.max())
    per_row = torch.cat([td["a"].reshape(2, 3, -1), td["nested", "c"].reshape(2, 3, -1)], -1)
    torch.testing.assert_close(td.sum(dim=1, reduce=True), per_row.sum((1, 2)))


def test_feature_dim():
    td = make()
    out = td.sum(dim="feature")
    assert out.batch_size == td.batch_size
    torch.testing.assert_close(out["a"], td["a"])
    torch.testing.assert_close(out["nested", "c"], td["nested", "c"].sum(-1))


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_with_dim(name):
    td = make()
    result = getattr(td, name)(dim=1)
    assert isinstance(result, getattr(torch.return_types, name))
    values, indices = result
    for key in LEAVES:
        expected = getattr(torch, name)(td[key], dim=1)
        torch.testing.assert_close(values[key], expected.values)
        torch.testing.assert_close(indices[key], expected.indices)
    assert values.batch_size == torch.Size([2]) and values.names == ["x"]
    assert "s" not in values.keys()
    only = getattr(td, name)(dim=1, return_indices=False)
    torch.testing.assert_close(only["a"], values["a"])
    assert only["s"] == "text"
    full = getattr(td, name)()
    torch.testing.assert_close(full["a"], getattr(td["a"], name)())


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative(name):
    td = make()
    values, indices = getattr(td, name)(1)
    for key in LEAVES:
        expected = getattr(torch, name)(td[key], 1)
        torch.testing.assert_close(values[key], expected.values)
        torch.testing.assert_close(indices[key], expected.indices)


def test_prod_multiple_dims_logsumexp_norm_softmax():
    td = make()
    torch.testing.assert_close(td.prod(dim=(0, 1))["a"], td["a"].prod())
    torch.testing.assert_close(td.logsumexp(1)["nested", "c"],
                               td["nested", "c"].logsumexp(1))
    torch.testing.assert_close(td.logsumexp()["a"], td["a"].logsumexp((0, 1)))
    torch.testing.assert_close(td.norm()["nested", "c"], td["nested", "c"].norm())
    assert td.norm()["nested"].batch_size == torch.Size([])
    torch.testing.assert_close(td.softmax(0)["nested", "c"], td["nested", "c"].softmax(0))
    assert td.softmax(-1).names == ["x", "y"]


def test_std_correction_and_dtype():
    td = make()
    torch.testing.assert_close(td.std(0, correction=0)["a"], td["a"].std(0, correction=0))
    assert td.sum(dtype=torch.float64)["a"].dtype == torch.float64


def test_torch_reductions():
    td = make()
    torch.testing.assert_close(torch.sum(td, 0)["a"], td["a"].sum(0))
    torch.testing.assert_close(torch.mean(td)["a"], td["a"].mean())
    torch.testing.assert_close(torch.std(td, 1)["a"], td["a"].std(1))
    torch.testing.assert_close(torch.var(td, 1)["a"], td["a"].var(1))


def test_errors():
    td = make()
    with pytest.raises(IndexError, match="out of range"):
        td.sum(dim=2)
    with pytest.raises(IndexError, match="out of range"):
        TensorDict(a=torch.ones(3)).sum(0)
    with pytest.raises(ValueError, match="feature"):
        td.sum(dim="bad")
    with pytest.raises(RuntimeError, match="without tensor leaves"):
        TensorDict(s="x").sum(reduce=True)


def test_zero_dim():
    td = TensorDict(a=torch.arange(4.0))
    assert td.sum()["a"] == 6.0
    assert td.max()["a"] == 3.0
