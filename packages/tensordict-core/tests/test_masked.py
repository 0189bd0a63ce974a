"""masked_fill and where of dense TensorDicts (the fast path), leaf by leaf against torch."""

import pytest
import torch

from tensordict import TensorDict

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8,
          torch.uint8, torch.int64, torch.bool, torch.complex64]


def dense(dtypes=DTYPES):
    """batch [4] with names; one leaf per dtype, the last nested two levels down."""
    leaves = {f"x{i}": (torch.rand(4, 3) * 10).to(dtype) for i, dtype in enumerate(dtypes)}
    leaves["n"] = {"y": torch.randn(4), "m": {"z": torch.randn(4, 2, 2)}}
    return TensorDict(leaves, batch_size=[4], names=["t"])


def leaves_of(td):
    return dict(td.items(include_nested=True, leaves_only=True))


def broadcast(mask, leaf):
    return mask.reshape(*mask.shape, *[1] * (leaf.ndim - mask.ndim))


@pytest.mark.parametrize("value", [0.0, -1, True, 2.5])
def test_masked_fill_matches_torch_per_dtype(value):
    td, mask = dense(), torch.tensor([True, False, True, False])
    out = td.masked_fill(mask, value)
    assert out.batch_size == td.batch_size and out.names == ["t"]
    assert out.device == td.device and out["n", "m"].batch_size == torch.Size([4])
    for key, leaf in leaves_of(td).items():
        expected = leaf.masked_fill(broadcast(mask, leaf), value)
        assert out[key].dtype == leaf.dtype, key
        torch.testing.assert_close(out[key], expected, rtol=0, atol=0)
    assert out["x0"] is not td["x0"]


def test_masked_fill_of_a_value_a_dtype_cannot_hold_raises_as_torch():
    for dtype, value in [(torch.int8, 300), (torch.uint8, 1e10), (torch.float16, 1e10),
                         (torch.int64, float("nan"))]:
        td = dense([dtype])
        with pytest.raises(RuntimeError, match="cannot be converted"):
            td.masked_fill(torch.ones(4, dtype=torch.bool), value)


def test_masked_fill_keeps_gradients():
    x = torch.randn(4, 3, requires_grad=True)
    out = TensorDict(n={"x": x}, batch_size=[4]).masked_fill(
        torch.tensor([True, False, False, True]), 0.0)
    out["n", "x"].sum().backward()
    assert x.grad[:, 0].tolist() == [0.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("kind", ["tensordict", "tensor", "number"])
def test_where_matches_torch(kind):
    td, cond = dense(), torch.tensor([True, False, False, True])
    other = {"tensordict": td.apply(lambda x: x * 0 + 1), "tensor": torch.tensor(3),
             "number": 7}[kind]
    out = td.where(cond, other)
    assert out.batch_size == td.batch_size and out.names == ["t"]
    for key, leaf in leaves_of(td).items():
        theirs = other[key] if kind == "tensordict" else other
        expected = torch.where(broadcast(cond, leaf), leaf, theirs)
        assert out[key].dtype == expected.dtype, key
        torch.testing.assert_close(out[key], expected, rtol=0, atol=0)


def test_where_with_a_leaf_that_does_not_broadcast_names_the_key():
    td = TensorDict(a=torch.zeros(4, 3), n={"b": torch.zeros(4, 2)}, batch_size=[4])
    other = TensorDict(a=torch.ones(4, 3), n={"b": torch.ones(4, 5)}, batch_size=[4])
    with pytest.raises(RuntimeError, match="'b'") as info:
        td.where(torch.ones(4, dtype=torch.bool), other)
    assert "5" in str(info.value)


def test_where_with_a_mask_over_the_wrong_batch_names_the_shapes():
    td = dense()
    with pytest.raises(RuntimeError, match=r"batch size \[4\].*\[3\]"):
        td.where(torch.ones(3, dtype=torch.bool), 0)
    with pytest.raises(RuntimeError, match=r"batch size \[4\].*\[5\]"):
        td.masked_fill(torch.ones(5, dtype=torch.bool), 0)
