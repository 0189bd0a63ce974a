"""Index views of locked collections carry the lock as upstream's do: every view of a
locked lazy stack, and the views (not the copies) of a TensorDict marked with
``tensordict.storage.lock_views`` (memory-mapped ones); a plain locked TensorDict's
index results stay unlocked, as upstream's."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.errors import LockedTensorDictError
from tensordict.storage import lock_views


def _stack(stack_dim=0):
    parts = [TensorDict({"c": torch.zeros(3), "n": {"d": torch.zeros(3)}}, [3])
             for _ in range(2)]
    return LazyStackedTensorDict.lazy_stack(parts, stack_dim).lock_()


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("index", [0, (slice(None), 0), slice(1, None),
                                   torch.tensor([0, 1]), (slice(None), torch.tensor([0, 1]))])
def test_views_of_a_locked_lazy_stack_are_locked(stack_dim, index):
    stack = _stack(stack_dim)
    view = stack[index]
    assert view.is_locked
    for key in ("c", "new"):
        with pytest.raises(LockedTensorDictError, match=f"'{key}'"):
            view[key] = torch.ones(view.batch_size)
    assert set(stack.keys()) == {"c", "n"} and (stack["c"] == 0).all()


def test_views_of_a_locked_lazy_stack_write_in_place_through():
    stack = _stack()
    stack[:, 0].set_("c", torch.ones(2))
    assert stack["c"][:, 0].tolist() == [1.0, 1.0] and stack.unlock_()[:, 0].is_locked is False


@pytest.mark.parametrize("index", [0, slice(0, 2), slice(1, None), None, Ellipsis, (0,)])
def test_lock_views_locks_the_views(index):
    td = lock_views(TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(3)}}, [3]).lock_())
    view = td[index]
    assert view.is_locked and view["n"].is_locked
    with pytest.raises(LockedTensorDictError, match="'x'"):
        view["x"] = torch.ones(view.batch_size)
    assert set(td.keys()) == {"a", "n"}


def test_lock_views_leaves_copies_and_plain_locks_alone():
    td = TensorDict({"a": torch.zeros(3)}, [3]).lock_()
    assert not td[0].is_locked  # as upstream: a plain locked TensorDict's views
    lock_views(td)
    assert not td[torch.tensor([0, 1])].is_locked
    assert not td[torch.tensor([True, False, True])].is_locked
    td.unlock_()
    assert not td.lock_()[0].is_locked  # unlocking ended it
    with pytest.raises(RuntimeError, match="locked"):
        lock_views(TensorDict())


def test_share_memory_locks_the_views_as_upstream():
    td = TensorDict({"a": torch.zeros(3)}, [3]).share_memory_()
    with pytest.raises(LockedTensorDictError, match="'x'"):
        td[0]["x"] = torch.ones(())
    td[0].set_("a", torch.tensor(1.0))  # in place: lands in the shared memory
    assert td["a"].tolist() == [1.0, 0.0, 0.0] and set(td.keys()) == {"a"}
