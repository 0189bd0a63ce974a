"""Tensorclass results of cutting ops (unbind, split, iteration, stack, cat): the pieces
are rebuilt as the class, nested tensorclasses included, by the forwarding fast path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))
from tensorclass_test_classes import Inner, Outer  # noqa: E402


def _outer(n: int = 4) -> Outer:
    return Outer(inner=Inner(x=torch.arange(n * 2.0).view(n, 2), batch_size=[n]),
                 y=torch.arange(float(n)), td=TensorDict(z=torch.zeros(n, 1), batch_size=[n]),
                 batch_size=[n])


def test_unbind_and_iteration_give_instances() -> None:
    o = _outer()
    parts = o.unbind(0)
    assert type(parts) is tuple and len(parts) == 4
    rows = list(iter(o))
    assert type(iter(o)).__name__ == "tuple_iterator"
    for i, (part, row) in enumerate(zip(parts, rows)):
        for item in (part, row):
            assert type(item) is Outer and item.batch_size == torch.Size([])
            assert type(item.inner) is Inner and item.inner.label == "inner"
            assert type(item.td) is TensorDict
            assert item.y.item() == float(i)
            assert item.inner.x.tolist() == [2.0 * i, 2.0 * i + 1]
    parts[1].y += 10  # views of the original
    assert o.y[1].item() == 11.0
    with pytest.raises(TypeError, match="0-d"):
        iter(o[0])


def test_split_gives_a_tuple_of_instances() -> None:
    pieces = _outer(5).split([2, 3])
    assert type(pieces) is tuple
    assert [type(p) for p in pieces] == [Outer, Outer]
    assert [p.batch_size for p in pieces] == [torch.Size([2]), torch.Size([3])]
    assert type(pieces[1].inner) is Inner and pieces[1].inner.x[0].tolist() == [4.0, 5.0]


def test_stack_and_cat_restore_nested_classes() -> None:
    parts = [_outer(2) for _ in range(3)]
    stacked = torch.stack(parts, 0)
    joined = torch.cat(parts, 0)
    for out, size in ((stacked, [3, 2]), (joined, [6])):
        assert type(out) is Outer and out.batch_size == torch.Size(size)
        assert type(out.inner) is Inner and out.inner.x.shape == torch.Size([*size, 2])
        assert type(out.td) is TensorDict
    assert stacked.y.tolist() == [[0.0, 1.0]] * 3


def test_results_that_are_not_instances_stay_as_they_are() -> None:
    o = _outer()
    assert type(o.to_tensordict()) is TensorDict
    select = o.select("y")  # a TensorDict of fields only becomes the class again
    assert type(select) is Outer
    assert type(o.to_dict()) is dict
    same = o.apply_(lambda t: t)  # an in-place op returns the instance itself
    assert same is o
