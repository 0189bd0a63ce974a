"""Shape ops of lazy stacks, done part by part: the same values and names as the op on
the dense stack, views of the parts (writes reach them), the stack dim moving as upstream
0.15.3 moves it, and a locked stack giving locked results."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, lazy_stack


def _stack(stack_dim: int) -> tuple[list[TensorDict], LazyStackedTensorDict]:
    parts = [TensorDict({"a": torch.arange(20.0).reshape(4, 5) + 100 * k,
                         "n": {"b": torch.arange(40.0).reshape(4, 5, 2) - k}},
                        batch_size=[4, 5], names=["x", "y"]) for k in range(3)]
    return parts, lazy_stack(parts, stack_dim)


OPS: dict[str, Callable[[Any], Any]] = {
    "unsqueeze(0)": lambda t: t.unsqueeze(0),
    "unsqueeze(2)": lambda t: t.unsqueeze(2),
    "unsqueeze(-1)": lambda t: t.unsqueeze(-1),
    "squeeze(1) after unsqueeze": lambda t: t.unsqueeze(1).squeeze(1),
    "squeeze() after unsqueeze": lambda t: t.unsqueeze(-1).squeeze(),
    "permute(2, 0, 1)": lambda t: t.permute(2, 0, 1),
    "permute(1, 0, 2)": lambda t: t.permute(1, 0, 2),
    "transpose(0, 2)": lambda t: t.transpose(0, 2),
    "flatten()": lambda t: t.flatten(),
    "flatten(0, 1)": lambda t: t.flatten(0, 1),
    "flatten(1, 2)": lambda t: t.flatten(1, 2),
    "reshape(-1)": lambda t: t.reshape(-1),
    "view(-1)": lambda t: t.view(-1),
    "view(60)": lambda t: t.view(60),
    "expand": lambda t: t.unsqueeze(0).expand(2, *t.batch_size),
}


def _same(result: Any, expected: TensorDict) -> None:
    assert result.batch_size == expected.batch_size
    assert result.names == expected.names
    dense = result.contiguous()
    for key in expected.keys(True, True):
        assert torch.equal(dense[key], expected[key]), key


@pytest.mark.parametrize("stack_dim", [0, 1, 2])
@pytest.mark.parametrize("op", list(OPS))
def test_part_wise_op_matches_the_dense_op(stack_dim: int, op: str) -> None:
    _, stack = _stack(stack_dim)
    dense = stack.contiguous()
    assert dense.names == stack.names
    result = OPS[op](stack)
    assert type(result) is LazyStackedTensorDict
    _same(result, OPS[op](dense))


@pytest.mark.parametrize("stack_dim", [0, 1, 2])
@pytest.mark.parametrize("dim", [0, 1, 2])
def test_unbind_matches_the_dense_op(stack_dim: int, dim: int) -> None:
    parts, stack = _stack(stack_dim)
    pieces, expected = stack.unbind(dim), stack.contiguous().unbind(dim)
    assert len(pieces) == len(expected)
    for piece, want in zip(pieces, expected):
        _same(piece, want)
    if dim == stack_dim:
        assert all(piece is part for piece, part in zip(pieces, parts))


@pytest.mark.parametrize("op", ["unsqueeze(0)", "permute(2, 0, 1)", "flatten()", "flatten(0, 1)",
                                "reshape(-1)", "expand"])
def test_results_are_views_of_the_parts(op: str) -> None:
    parts, stack = _stack(1)
    result = OPS[op](stack)
    leaves = [leaf for td in result.tensordicts for leaf in (td["a"], td["n", "b"])]
    storages = {part[key].untyped_storage().data_ptr()
                for part in parts for key in ("a", ("n", "b"))}
    assert all(leaf.untyped_storage().data_ptr() in storages for leaf in leaves)
    if op != "expand":  # an expanded view cannot be written
        result.tensordicts[0]["a"].fill_(-1.0)
        assert (torch.stack([p["a"] for p in parts], 1) == -1.0).sum() > 0


def test_transpose_that_keeps_the_parts_dims_keeps_the_parts() -> None:
    parts, stack = _stack(0)
    moved = stack.transpose(0, 1)
    assert moved.stack_dim == 1 and moved.batch_size == torch.Size([4, 3, 5])
    assert all(a is b for a, b in zip(moved.tensordicts, parts))
    assert moved.names == ["x", None, "y"]


def test_stack_dim_and_parts_follow_upstream() -> None:
    _, stack = _stack(0)
    assert (stack.unsqueeze(0).stack_dim, stack.unsqueeze(1).stack_dim) == (1, 0)
    flat = stack.flatten(0, 1)
    assert flat.stack_dim == 0 and len(flat.tensordicts) == 12
    assert flat.tensordicts[0].batch_size == torch.Size([5])
    everything = stack.reshape(-1)
    assert len(everything.tensordicts) == 60 and everything.tensordicts[0].batch_size == ()
    _, stack = _stack(1)
    flat = stack.flatten(0, 1)  # (4, 3, 5) -> 12 slices, in row-major order
    assert [td["a"][0].item() for td in flat.tensordicts[:4]] == [0.0, 100.0, 200.0, 5.0]


def test_shape_ops_of_a_locked_stack_are_locked_but_not_its_slices() -> None:
    _, stack = _stack(1)
    stack.lock_()
    for op in ("unsqueeze(0)", "transpose(0, 2)", "flatten()", "expand"):
        assert OPS[op](stack).is_locked, op
    assert not any(piece.is_locked for piece in stack.unbind(2))


def test_bad_dims_raise_before_touching_the_parts() -> None:
    _, stack = _stack(0)
    with pytest.raises(IndexError):
        stack.unsqueeze(5)
    with pytest.raises(ValueError, match="permutation"):
        stack.permute(0, 0, 1)
    with pytest.raises(ValueError, match="start_dim"):
        stack.flatten(2, 1)
    with pytest.raises(IndexError):
        stack.unbind(3)


def test_unflatten_splits_the_parts_dims() -> None:
    _, stack = _stack(0)
    out = stack.unflatten(1, (2, 2))
    assert out.stack_dim == 0 and out.tensordicts[0].batch_size == torch.Size([2, 2, 5])
    _same(out, stack.contiguous().unflatten(1, (2, 2)))


def test_non_tensor_data_unbinds_to_the_same_object() -> None:
    data = NonTensorData("hello", batch_size=[2, 3], names=["x", "y"])
    pieces = data.unbind(1)
    assert len(pieces) == 3 and all(p.data == "hello" for p in pieces)
    assert pieces[0].batch_size == torch.Size([2]) and pieces[0].names == ["x"]
    stack = lazy_stack([TensorDict(tag=NonTensorData("a", batch_size=[2]), batch_size=[2]),
                        TensorDict(tag=NonTensorData("b", batch_size=[2]), batch_size=[2])])
    assert stack.flatten().tolist() == [{"tag": "a"}] * 2 + [{"tag": "b"}] * 2


@pytest.mark.parametrize("make", [lambda s: s.new_zeros(4), lambda s: s.new_ones(4),
                                  lambda s: s.new_full([4], 3.0)])
def test_new_filled_of_a_one_part_stack_has_distinct_rows(make: Callable[[Any], Any]) -> None:
    # a one-element stack used to look like a gather of element 0: the result repeated
    # one TensorDict four times, and a write to a row reached every row (TorchRL's
    # SerialEnv partial steps build their result so)
    stack = lazy_stack([TensorDict(obs=torch.tensor([5.0]))])
    out = make(stack)
    assert type(out) is TensorDict and out.batch_size == torch.Size([4])
    before = out["obs"].clone()
    out[torch.tensor([False, False, False, True])] = stack
    assert torch.equal(out["obs"][:3], before[:3]) and out["obs"][3].item() == 5.0
