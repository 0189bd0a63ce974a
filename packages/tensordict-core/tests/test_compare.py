"""Comparisons give TensorDicts of bools; all/any; truth value."""

import pytest
import torch

from tensordict import TensorDict


@pytest.fixture
def td():
    return TensorDict({"a": torch.arange(3.0), "n": {"b": torch.ones(3, 2)}}, [3])


def test_eq_ne_with_tensordict(td):
    eq = td == td.clone()
    assert isinstance(eq, TensorDict) and eq.batch_size == td.batch_size
    assert eq.all() is True
    assert (td != td.clone()).any() is False


@pytest.mark.parametrize("op", ["__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"])
def test_comparisons_match_leafwise(td, op):
    out = getattr(td, op)(1.0)
    assert torch.equal(out["a"], getattr(td["a"], op)(1.0))
    assert torch.equal(out["n", "b"], getattr(td["n", "b"], op)(1.0))


def test_compare_with_tensor_broadcasts_per_leaf(td):
    out = td == torch.tensor(1.0)
    assert out["a"].tolist() == [False, True, False]


def test_mismatched_keys_raise(td):
    with pytest.raises(KeyError, match="only in the first"):
        td == TensorDict({"a": torch.zeros(3)}, [3])


def test_all_any_with_dim(td):
    ones = TensorDict({"a": torch.ones(3, 2, dtype=torch.bool)}, [3, 2])
    per_row = ones.all(dim=1)
    assert per_row.batch_size == (3,) and per_row["a"].all()
    assert (td > 1).any(0)["a"].item() is True
    with pytest.raises(IndexError, match="out of range"):
        ones.all(dim=5)


def test_seed_equality_example():
    weights = TensorDict({"w": torch.ones(2)}, [])
    assert (TensorDict({"0": weights}, []) == TensorDict({"0": weights.clone()}, [])).all()
