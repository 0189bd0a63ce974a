"""Batch-size and name writes as upstream 0.15.3 makes them: a lazy stack refuses a new
batch size, a locked TensorDict takes one, names are kept on the dims kept, and a lazy
stack whose parts were renamed apart says so when its names are read."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict

LAZY = "in a lazy TD"


def _dense() -> TensorDict:
    return TensorDict({"a": torch.zeros(2, 1, 3), "n": {"c": torch.zeros(2, 1, 3)}}, [2, 1, 3])


def _lazy() -> LazyStackedTensorDict:
    return LazyStackedTensorDict(*(_dense()[i].clone() for i in range(2)), stack_dim=0)


@pytest.mark.parametrize("view", [
    lambda t: t, lambda t: t[1:], lambda t: t[torch.tensor([1, 0])], lambda t: t["n"],
    lambda t: t.select("a", "n"), lambda t: t.exclude("a"), lambda t: t.split(1, 0)[1],
    lambda t: t[..., 1], lambda t: t[:, 0],
])
def test_a_lazy_stack_refuses_a_new_batch_size_and_keeps_its_own(view):
    root = _lazy()
    target = view(root)
    with pytest.raises(RuntimeError, match=LAZY):
        target.batch_size = target.batch_size[:-1]
    assert root.batch_size == (2, 1, 3)
    assert [part.batch_size for part in root.tensordicts] == [(1, 3)] * 2
    target.batch_size = target.batch_size  # the same one is fine
    locked = _lazy().lock_()
    with pytest.raises(RuntimeError, match=LAZY):
        locked.batch_size = [2, 1]


def test_a_locked_tensordict_takes_a_new_batch_size():
    td = _dense().lock_()
    td.batch_size = [2, 1]
    assert td.batch_size == (2, 1) and td.is_locked
    td["n"].batch_size = [2]
    assert td["n"].batch_size == (2,) and td["n"].is_locked


@pytest.mark.parametrize("size, names", [([2, 1], ["x", "y"]), ([2], ["x"]), ([], []),
                                         ([2, 1, 3, 1], ["x", "y", "z", None])])
def test_names_are_kept_on_the_dims_kept(size, names):
    td = TensorDict({"a": torch.zeros(2, 1, 3, 1)}, [2, 1, 3], names=["x", "y", "z"])
    td.batch_size = size
    assert td.names == names


@pytest.mark.parametrize("rename", [
    lambda t: setattr(t.tensordicts[0], "names", ["p", "q"]),
    lambda t: setattr(t[1:], "names", ["o", "p", "q"]),
    lambda t: setattr(t.unbind(0)[1], "names", ["p", "q"]),
    lambda t: setattr(t[torch.tensor([True, False])], "names", ["o", "p", "q"]),
])
def test_a_lazy_stack_renamed_in_part_raises_on_reading_its_names(rename):
    root = _lazy()
    rename(root)
    with pytest.raises(ValueError, match="Not all dim names match"):
        root.names  # noqa: B018
    with pytest.raises(ValueError, match="Not all dim names match"):
        root["n"].names  # noqa: B018


def test_a_lazy_stack_renamed_as_a_whole_reads_its_names():
    root = _lazy()
    root.names = ["s", "p", "q"]
    assert root.names == ["s", "p", "q"] and root["n"].names == ["s", "p", "q"]
