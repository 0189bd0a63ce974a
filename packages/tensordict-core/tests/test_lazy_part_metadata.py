"""Metadata written through a part of a lazy stack (or a view of one) leaves what upstream
leaves:

* shrinking a TensorDict's batch size keeps the extra dims of its non-tensor data, as it
  does for sub-TensorDicts (so a part's string still stacks with the other parts');
* a stack whose parts disagree on their number of dims has no names (ValueError);
* a locked stack keeps what it read: its nested stacks (the same object on each read, so
  names set on one stay) and its names, until unlocked.
"""

from __future__ import annotations

import pickle

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict


def _part(value: float) -> TensorDict:
    td = TensorDict(a=torch.full((1, 3), value),
                    nested=TensorDict(c=torch.full((1, 3), value), batch_size=[1, 3]),
                    batch_size=[1, 3])
    td.set_non_tensor("s", "orig")
    return td


def _stack() -> LazyStackedTensorDict:
    return LazyStackedTensorDict(_part(0.0), _part(1.0), stack_dim=0)


def test_shrinking_the_batch_size_keeps_the_dims_of_non_tensor_data() -> None:
    td = _part(0.0)
    td.batch_size = [1]
    assert td.get("s").batch_size == (1, 3) and td["nested"].batch_size == (1, 3)
    assert td[0].get("s").batch_size == (3,) and td["s"] == "orig"


def test_growing_the_batch_size_rebatches_non_tensor_data() -> None:
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    td.set_non_tensor("s", "orig")
    td.batch_size = [2, 3]
    assert td.get("s").batch_size == (2, 3) and td[0, 1]["s"] == "orig"


@pytest.mark.parametrize("view", ["part", "int", "chained", "unbind"])
def test_a_part_batch_size_set_alone(view) -> None:
    stack = _stack()
    target = {"part": lambda: stack.tensordicts[0], "int": lambda: stack[0],
              "chained": lambda: stack[1:][0], "unbind": lambda: stack.unbind(0)[1]}[view]()
    target.batch_size = target.batch_size[:-1]
    with pytest.raises(ValueError, match="Not all dim names match"):
        stack.names  # noqa: B018
    assert stack.batch_size == (2, 1, 3)
    assert stack.get("s").tolist() == [[["orig"] * 3]] * 2
    assert stack["a"].shape == (2, 1, 3) and stack["nested"].names == [None] * 3


def test_a_locked_stack_reads_its_nested_stack_once() -> None:
    stack = _stack().lock_()
    nested = stack["nested"]
    assert stack["nested"] is nested and stack.get("nested") is nested
    assert stack["a"] is not stack["a"]  # tensors are stacked on each read
    nested.names = ["p", "q", "r"]
    assert stack["nested"].names == ["p", "q", "r"]
    assert stack.tensordicts[0]["nested"].names == ["q", "r"]
    nested.set_("c", torch.full((2, 1, 3), 5.0))  # still a view of the parts
    assert stack.tensordicts[1]["nested", "c"].eq(5).all()
    stack.unlock_()
    assert stack["nested"] is not nested and stack["nested"].names == [None, "q", "r"]


@pytest.mark.parametrize("write", ["names", "batch_size"])
def test_a_locked_stack_keeps_the_names_it_read(write) -> None:
    stack = _stack().lock_()
    assert stack.names == [None] * 3 and stack["nested"].names == [None] * 3
    part = stack.tensordicts[0]
    if write == "names":
        part.names = ["x", "y"]
    else:
        part.batch_size = [1]
    assert stack.names == [None] * 3 and stack["nested"].names == [None] * 3
    assert stack.get("s").tolist() == [[["orig"] * 3]] * 2
    stack.unlock_()
    with pytest.raises(ValueError, match="Not all dim names match"):
        stack.names  # noqa: B018


def test_a_locked_stack_renamed_as_a_whole() -> None:
    stack = _stack().lock_()
    assert stack.names == [None] * 3
    stack.names = ["p", "q", "r"]
    assert stack.names == ["p", "q", "r"] and stack.tensordicts[1].names == ["q", "r"]


def test_what_a_locked_stack_read_is_not_pickled() -> None:
    stack = _stack().lock_()
    stack["nested"].names = ["p", "q", "r"]
    copy = pickle.loads(pickle.dumps(stack))
    assert copy.is_locked and copy._frozen is None
    assert copy["nested"].names == [None, "q", "r"]
    copy["nested"].set_("c", torch.full((2, 1, 3), 5.0))
    assert copy.tensordicts[0]["nested", "c"].eq(5).all()


def test_a_locked_stack_renamed_as_a_whole_renames_its_nested_stacks() -> None:
    stack = _stack().lock_()
    assert stack["nested"].names == [None] * 3
    stack.names = ["p", "q", "r"]
    assert stack["nested"].names == ["p", "q", "r"]
