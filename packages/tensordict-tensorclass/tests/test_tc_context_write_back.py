"""``with tc.<op>(...) as out:`` writes ``out`` back into the tensorclass ``tc`` on exit, as
for a TensorDict (issue 43, family 1): changed fields and fields first set in the block land
in ``tc`` with its batch shape; nothing is written when the block raises."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, tensorclass


@tensorclass
class Inner:
    z: torch.Tensor


@tensorclass
class Pair:
    x: torch.Tensor
    inner: Inner
    y: torch.Tensor = None
    label: str = "a"


def make() -> Pair:
    return Pair(x=torch.randn(2, 3, 4), inner=Inner(z=torch.randn(2, 3), batch_size=[2, 3]),
                batch_size=[2, 3])


OPS = [
    ("flatten", (0, 1)), ("unflatten", (1, (3, 1))), ("view", (-1,)), ("permute", (1, 0)),
    ("transpose", (0, 1)), ("unsqueeze", (0,)), ("movedim", (0, 1)), ("flip", ([1],)),
    ("roll", (1, 0)), ("rot90", ()), ("atleast_3d", ()), ("flatten_keys", ()),
    ("to", (torch.float64,)), ("cpu", ()),
]


@pytest.mark.parametrize("op, args", OPS, ids=[op for op, _ in OPS])
def test_changed_and_new_fields_are_written_back(op, args):
    tc = make()
    x, z = tc.x.clone(), tc.inner.z.clone()
    y = torch.randn(2, 3)
    y_out = getattr(Pair(x=torch.zeros(2, 3), inner=Inner(z=y, batch_size=[2, 3]),
                         batch_size=[2, 3]), op)(*args)
    z_key = "inner.z" if op == "flatten_keys" else ("inner", "z")
    with getattr(tc, op)(*args) as out:  # (flatten_keys: a TensorDict, keys not fields)
        assert type(out) is (TensorDict if op == "flatten_keys" else Pair) and out is not tc
        out.set("x", out.get("x") + 1)
        out.set(z_key, out.get(z_key) + 1)
        out.set("y", y_out.get(z_key))
    assert tc.x.dtype == torch.float32 and torch.equal(tc.x, x + 1)
    assert torch.equal(tc.inner.z, z + 1)
    assert tc.y.shape == torch.Size([2, 3]) and torch.equal(tc.y.to(y.dtype), y)
    assert tc.label == "a"


@pytest.mark.parametrize("op, args", OPS, ids=[op for op, _ in OPS])
def test_nothing_is_written_when_the_block_raises(op, args):
    tc = make()
    x = tc.x.clone()
    with pytest.raises(KeyError):
        with getattr(tc, op)(*args) as out:
            out.set("x", out.get("x") + 1)
            raise KeyError("inside")
    assert torch.equal(tc.x, x) and tc.y is None
