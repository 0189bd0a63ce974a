"""In-place ops of a lazy stack whose parts read copies (storage, views of it): run on
the stack's data read into memory and written back through ``update_`` (they wrote
nothing); checked against the same op on a lazy stack of in-memory TensorDicts."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, lazy_stack
from tensordict.base import NO_DEFAULT
from tensordict.storage import WriteBackMixin


class CopyStore(WriteBackMixin, TensorDict):
    """Every read is a copy."""

    def _get_str(self, key, default=NO_DEFAULT):
        value = TensorDict._get_str(self, key, default)
        return value.clone() if isinstance(value, torch.Tensor) else value

    def to_tensordict(self, **kwargs):
        return TensorDict({k: v.clone() for k, v in TensorDict.items(self, True, True)},
                          self.batch_size)

    def _set_at_index(self, index, value):
        TensorDict._from_entries(self._tensordict, self.batch_size)[index] = value


def sample(value: float) -> TensorDict:
    return TensorDict({"a": torch.full((3, 2), value), "n": {"b": torch.full((3,), value)}},
                      [3])


def stored(value: float) -> CopyStore:
    return CopyStore({"a": torch.full((3, 2), value), "n": {"b": torch.full((3,), value)}},
                     [3])


OPS = {
    "add_": lambda t: t.add_(10),
    "zero_": lambda t: t.zero_(),
    "fill_": lambda t: t.fill_("a", 7),
    "+=": lambda t: t.__iadd__(3),
    "masked_fill_": lambda t: t.masked_fill_(torch.tensor([[True, False, True],
                                                          [False, True, True]]), 6.0),
    "clamp_min_": lambda t: t.clamp_min_(0.5),
    "mask add_": lambda t: t[torch.tensor([False, True])].add_(2),
    "nested zero_": lambda t: t["n"].zero_(),
    "view parts mul_": lambda t: t[:, 1:].mul_(5),
}


@pytest.mark.parametrize("op", list(OPS))
def test_in_place_ops_of_a_stack_of_copying_parts_reach_the_parts(op):
    stores = [stored(1.0), stored(2.0)]
    expected = lazy_stack([sample(1.0), sample(2.0)])
    OPS[op](lazy_stack(stores))
    OPS[op](expected)
    for store, part in zip(stores, expected.tensordicts):
        assert torch.equal(store.to_tensordict()["a"], part["a"]), op
        assert torch.equal(store.to_tensordict()["n", "b"], part["n", "b"]), op


def test_a_stack_of_stacks_of_copying_parts_too():
    stores = [stored(1.0), stored(2.0)]
    lazy_stack([lazy_stack(stores)]).add_(1)
    assert [store.to_tensordict()["a"][0, 0].item() for store in stores] == [2.0, 3.0]


def test_a_failing_op_writes_no_part():
    stores = [stored(1.0), stored(2.0)]
    with pytest.raises(RuntimeError):
        lazy_stack(stores).add_(torch.ones(5))  # fits no leaf
    assert [store.to_tensordict()["a"][0, 0].item() for store in stores] == [1.0, 2.0]


def test_update_of_a_stack_of_copying_parts_writes_what_they_store():
    stores = [stored(1.0), stored(2.0)]
    lazy_stack(stores).update_(lazy_stack([sample(5.0), sample(6.0)]))
    assert [store.to_tensordict()["a"][0, 0].item() for store in stores] == [5.0, 6.0]
    bad = lazy_stack([sample(7.0), TensorDict({"a": torch.ones(3, 4)}, [3])])
    with pytest.raises(RuntimeError, match="'a'"):  # the second part's "a" does not fit
        lazy_stack(stores).update_(bad)
    assert [store.to_tensordict()["a"][0, 0].item() for store in stores] == [5.0, 6.0]
