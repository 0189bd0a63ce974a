"""pad / pad_sequence with non-tensor leaves, in place and on lazy stacks (upstream 0.15.3
behaviour, observed with the same inputs)."""

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    pad,
    pad_sequence,
)


def test_pad_non_tensor_data_becomes_a_stack_padded_with_none():
    td = TensorDict(a=torch.ones(2, 3), s="txt", n={"t": "in", "b": torch.ones(2)},
                    batch_size=[2])
    out = pad(td, [0, 1])
    assert type(out.get("s")) is NonTensorStack and out.get("s").batch_size == (3,)
    assert out["s"] == ["txt", "txt", None]
    assert out["a"].tolist() == [[1] * 3, [1] * 3, [0] * 3]
    assert pad(td, [1, 0])["n", "t"] == [None, "in", "in"]
    assert list(out.keys(True)) == list(td.keys(True)) == [
        "a", "s", ("n", "t"), ("n", "b"), "n"]
    assert td["s"] == "txt" and td.batch_size == (2,)  # the input is left as it was
    kept = pad(td, [0, 0])
    assert type(kept.get("s")).__name__ == "NonTensorData" and kept["s"] == "txt"
    grid = pad(TensorDict(s="x", batch_size=[2, 3]), [0, 1, 1, 0])
    assert grid.get("s").batch_size == (3, 4)
    assert grid["s"] == [[None, "x", "x", "x"], [None, "x", "x", "x"], [None] * 4]
    stacked = pad(TensorDict(s=NonTensorStack("x", "y"), batch_size=[2]), [1, 1])
    assert stacked["s"] == [None, "x", "y", None]


def test_pad_size_error_names_upstream_phrase():
    td = TensorDict(a=torch.ones(2), batch_size=[2])
    with pytest.raises(RuntimeError, match="The length of pad_size must be <= 2 \\* the number"):
        pad(td, [0, 0, 0, 2], inplace=True)
    assert td.batch_size == (2,) and td["a"].shape == (2,)


def test_pad_inplace():
    td = TensorDict(a=torch.ones(2), s="x", n={"b": torch.ones(2)}, batch_size=[2])
    nested = td["n"]
    assert pad(td, [0, 1], inplace=True) is td
    assert td.batch_size == (3,) and td["a"].tolist() == [1, 1, 0]
    assert td["s"] == ["x", "x", None]
    assert td["n"] is nested and nested.batch_size == (3,) and nested["b"].tolist() == [1, 1, 0]
    grid = TensorDict(a=torch.ones(2, 3), batch_size=[2, 3])
    assert grid.pad([1, 1, 0, 1], inplace=True) is grid and grid.batch_size == (4, 4)
    untouched = TensorDict(a=torch.ones(2), batch_size=[2])
    assert pad(untouched, [0, 1], inplace=False) is not untouched
    assert untouched.batch_size == (2,)
    locked = TensorDict(a=torch.ones(2), batch_size=[2]).lock_()
    with pytest.raises(RuntimeError, match="Cannot modify locked TensorDict"):
        pad(locked, [0, 1], inplace=True)
    assert locked.batch_size == (2,) and locked["a"].tolist() == [1, 1]


def test_pad_lazy_stack():
    def make(dim=0):
        return lazy_stack([TensorDict(a=torch.ones(3), s="u", batch_size=[3]),
                           TensorDict(a=torch.zeros(3), s="v", batch_size=[3])], dim)

    out = pad(make(), [0, 0, 1, 1])
    assert type(out) is TensorDict and out.batch_size == (2, 5)
    assert out["s"] == [[None, "u", "u", "u", None], [None, "v", "v", "v", None]]
    stack = make()
    first = stack.tensordicts[0]
    assert pad(stack, [0, 0, 0, 2], inplace=True) is stack
    assert type(stack) is LazyStackedTensorDict and stack.batch_size == (2, 5)
    assert stack.tensordicts[0] is first and first.batch_size == (5,)
    assert stack["a"].tolist() == [[1, 1, 1, 0, 0], [0] * 5]
    assert stack["s"] == [["u"] * 3 + [None] * 2, ["v"] * 3 + [None] * 2]
    along = make()
    pad(along, [0, 1], inplace=True)  # along the stack dim: a new part
    assert along.batch_size == (3, 3) and len(along.tensordicts) == 3
    assert along["a"].tolist() == [[1] * 3, [0] * 3, [0] * 3]
    assert along["s"] == [["u"] * 3, ["v"] * 3, [None] * 3]
    other = make(1)
    part = other.tensordicts[0]
    pad(other, [1, 0], inplace=True)
    assert other.batch_size == (4, 2) and other.tensordicts[0] is part
    assert part.batch_size == (4,) and other["a"].tolist() == [[0, 0], [1, 0], [1, 0], [1, 0]]


def test_pad_sequence_keeps_non_tensor_entries():
    tds = [TensorDict(a=torch.ones(n), s=f"s{n}", batch_size=[n]) for n in (1, 3)]
    out = pad_sequence(tds, return_mask=True)
    assert out.batch_size == (2, 3) and type(out.get("s")) is NonTensorStack
    assert out["s"] == [["s1", None, None], ["s3", "s3", "s3"]]
    assert set(out["masks"].keys()) == {"a"}
    assert out["masks", "a"].tolist() == [[True, False, False], [True] * 3]
    left = pad_sequence(tds, padding_side="left", padding_value={"a": -1})
    assert left["s"] == [[None, None, "s1"], ["s3"] * 3]
    assert left["a"].tolist() == [[-1, -1, 1], [1, 1, 1]]
    stacks = [TensorDict(s=NonTensorStack(*[f"s{j}" for j in range(n)]), batch_size=[n])
              for n in (1, 3)]
    assert pad_sequence(stacks)["s"] == [["s0", None, None], ["s0", "s1", "s2"]]
    unbatched = [TensorDict(a=torch.ones(n), s=text) for n, text in ((1, "p"), (3, "q"))]
    out = pad_sequence(unbatched)
    assert out.batch_size == (2,) and out["s"] == ["p", "q"]
    same = pad_sequence([TensorDict(a=torch.ones(n), s="same") for n in (1, 3)])
    assert type(same.get("s")) is NonTensorStack and same["s"] == ["same", "same"]
    inner = [TensorDict(a=torch.ones(2, n), s="x", batch_size=[2]) for n in (1, 3)]
    out = pad_sequence(inner, pad_dim=1, padding_value=-1)
    assert out.batch_size == (2, 2) and out["a"][0].tolist() == [[1, -1, -1]] * 2
    assert out["s"] == [["x", "x"], ["x", "x"]]


def test_pad_sequence_of_lazy_stacks():
    stack = lazy_stack([TensorDict(a=torch.ones(n), s="u", batch_size=[n]) for n in (1, 3)])
    out = pad_sequence(stack, return_mask=True)
    assert out.batch_size == (2, 3) and out["a"].tolist() == [[1, 0, 0], [1, 1, 1]]
    assert out["s"] == [["u", None, None], ["u", "u", "u"]]
