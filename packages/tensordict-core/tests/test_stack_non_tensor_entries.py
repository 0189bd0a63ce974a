"""torch.stack of TensorDicts holding non-tensor entries: the entries are lazily stacked
along the stack dim (one copy of each entry per TensorDict, as upstream's layout), the
inputs are left as they were, and equal values merge under capture_non_tensor_stack."""

import pytest
import torch

from tensordict import (
    NonTensorData,
    NonTensorStack,
    TensorDict,
    set_capture_non_tensor_stack,
)


def batched(value, batch=3):
    return TensorDict(a=torch.zeros(batch), s=value, n={"t": value}, batch_size=[batch])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_parts_are_copies_of_the_entries_stacked_along_dim(dim):
    tds = [batched("x0"), batched("x1")]
    out = torch.stack(tds, dim)
    for key in ("s", ("n", "t")):
        entry = out.get(key)
        assert type(entry) is NonTensorStack
        assert entry.stack_dim == dim % 2
        assert [type(p) for p in entry.tensordicts] == [NonTensorData, NonTensorData]
        assert [p.batch_size for p in entry.tensordicts] == [torch.Size([3])] * 2
        assert all(p is not td.get(key) for p, td in zip(entry.tensordicts, tds))
        rows = [["x0"] * 3, ["x1"] * 3]
        assert entry.tolist() == (rows if dim == 0 else [list(r) for r in zip(*rows)])
    assert out.batch_size == (torch.Size([2, 3]) if dim == 0 else torch.Size([3, 2]))


def test_writes_into_the_stack_leave_the_inputs():
    tds = [batched("x"), batched("x")]
    out = torch.stack(tds)
    out[0] = batched("y")
    out.get("s").tensordicts[1].data = "z"
    assert out["s"] == [["y"] * 3, ["z"] * 3]
    assert out["n", "t"] == [["y"] * 3, ["x"] * 3]
    assert [td["s"] for td in tds] == ["x", "x"]
    assert [td["n", "t"] for td in tds] == ["x", "x"]


def test_unbatched_and_captured():
    tds = [TensorDict(a=torch.zeros(()), s="x") for _ in range(2)]
    out = torch.stack(tds)
    assert type(out.get("s")) is NonTensorStack and out["s"] == ["x", "x"]
    with set_capture_non_tensor_stack(True):
        merged = torch.stack(tds).get("s")
    assert type(merged) is NonTensorData
    assert merged.data == "x" and merged.batch_size == torch.Size([2])


def test_entries_of_different_batch_sizes_raise():
    tds = [TensorDict(n=TensorDict(s=NonTensorData("x", batch_size=[3, k]), batch_size=[3]),
                      batch_size=[3]) for k in (1, 2)]
    with pytest.raises(RuntimeError):
        torch.stack(tds)
