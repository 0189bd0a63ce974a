"""torch.vmap taking a plain TensorDict as one unit (tensordict._vmap), and the pytree
route it leaves the other cases to."""

import pytest
import torch
from torch.utils import _pytree as pytree

from tensordict import TensorDict


@pytest.fixture
def flattened(monkeypatch):
    """How many times pytree flattened a TensorDict."""
    node = pytree.SUPPORTED_NODES[TensorDict]
    calls = []

    def counting(td):
        calls.append(td)
        return node.flatten_fn(td)

    monkeypatch.setitem(pytree.SUPPORTED_NODES, TensorDict, node._replace(flatten_fn=counting))
    return calls


def _params() -> TensorDict:
    return TensorDict({"w": torch.randn(2, 4, 3), "n": {"b": torch.randn(2, 4, 5, 3)}},
                      batch_size=[2, 4], names=["ens", "x"])


def test_a_plain_tensordict_goes_through_vmap_without_pytree(flattened):
    params = _params()
    params["n"].batch_size = [2, 4, 5]
    x = torch.randn(4, 3)

    def f(p, x):
        assert p.batch_size == torch.Size([4]) and p["n"].batch_size == torch.Size([4, 5])
        assert p.names == ["x"]
        return p.apply(lambda t: t * x.sum())

    out = torch.vmap(f, (0, None))(params, x)
    assert flattened == []
    assert out.batch_size == torch.Size([2, 4]) and out["n"].batch_size == torch.Size([2, 4, 5])
    assert out.names == [None, "x"]
    expected = torch.stack([f(p, x) for p in params.unbind(0)])
    assert (out == expected).all()


def test_negative_and_inner_dims_and_out_dims():
    params = _params()
    out = torch.vmap(lambda p: p.set("s", p["w"].sum(-1)), in_dims=-1, out_dims=1)(params)
    assert out.batch_size == torch.Size([2, 4])
    assert torch.equal(out["s"], params["w"].sum(-1))
    moved = torch.vmap(lambda p: p, in_dims=1, out_dims=0)(params)
    assert moved.batch_size == torch.Size([4, 2])
    assert torch.equal(moved["n", "b"], params["n", "b"].transpose(0, 1))


def test_an_unmapped_tensordict_is_a_copy_the_function_may_write_into(flattened):
    td = TensorDict(a=torch.zeros(3), n={"c": torch.zeros(3)}, batch_size=[3])
    seen = []

    def f(t, x):
        seen.append(t)
        t["b"] = x * 2
        t["n", "d"] = x
        return t

    out = torch.vmap(f, (None, 0))(td, torch.ones(2, 3))
    assert flattened == []
    assert seen[0] is not td and set(td.keys(True)) == {"a", "n", ("n", "c")}
    assert out.batch_size == torch.Size([2, 3]) and out["n"].batch_size == torch.Size([2, 3])
    assert torch.equal(out["b"], torch.full((2, 3), 2.0))
    assert torch.equal(out["a"], torch.zeros(2, 3))  # expanded, as any unmapped leaf


def test_torch_checks_the_mapped_sizes_of_tensordicts_and_tensors():
    with pytest.raises(ValueError, match=r"same size in the mapped dimension, got sizes \[2, 3\]"):
        torch.vmap(lambda p, x: p)(_params(), torch.zeros(3))
    with pytest.raises(ValueError, match="at least one Tensor to vmap over"):
        torch.vmap(lambda p: p, in_dims=(None,))(_params())


def test_chunked_and_nested_vmap():
    params = _params()
    out = torch.vmap(lambda p: p.apply(torch.sin), chunk_size=1)(params)
    assert out.batch_size == torch.Size([2, 4])
    assert torch.allclose(out["n", "b"], params["n", "b"].sin())
    inner = torch.vmap(torch.vmap(lambda p: p.set("m", p["w"].mean())))(params)
    assert inner.batch_size == torch.Size([2, 4])
    assert torch.allclose(inner["m"], params["w"].mean(-1))


def test_dims_past_the_batch_dims_take_the_pytree_route(flattened):
    text = TensorDict(a=torch.arange(3.0), s="x", batch_size=[3])  # one unit
    out = torch.vmap(lambda t: t.set("b", t["a"] + 1))(text)
    assert not flattened and out["s"] == "x" and torch.equal(out["b"], torch.arange(1.0, 4.0))
    wide = TensorDict(a=torch.zeros(3, 4), batch_size=[3])
    assert torch.vmap(lambda t: t, in_dims=1)(wide)["a"].shape == torch.Size([4, 3])
    assert flattened


def test_gradients_flow_through_the_one_unit_route():
    params = _params().requires_grad_()
    out = torch.vmap(lambda p: p["w"].pow(2).sum() + p["n", "b"].sum())(params)
    out.sum().backward()
    assert torch.allclose(params["w"].grad, 2 * params["w"])
    assert torch.equal(params["n", "b"].grad, torch.ones_like(params["n", "b"]))
