"""lock_ as upstream 0.15.3: a lazy stack whose parts are all locked (by a view of it
that locked them) reads as locked, and ``with td.unlock_():`` relocks on exit whatever
the block called."""

import torch

from tensordict import LazyStackedTensorDict, TensorDict


def _dense() -> TensorDict:
    return TensorDict({"a": torch.zeros(2, 3), "n": {"c": torch.zeros(2, 3)}}, [2, 3])


def _lazy() -> LazyStackedTensorDict:
    return LazyStackedTensorDict(*(_dense()[i].clone() for i in range(2)), stack_dim=0)


def test_a_view_locking_every_part_locks_the_stack():
    root = _lazy()
    root[torch.tensor([1, 0])].lock_()
    assert root.is_locked and root["n"].is_locked
    assert all(part.is_locked for part in root.tensordicts)


def test_a_nested_view_locks_the_nested_stack_not_the_root():
    root = _lazy()
    root["n"].lock_()
    assert root["n"].is_locked and not root.is_locked
    root = _lazy()
    root.select("a", "n").lock_()
    assert root["n"].is_locked and not root.is_locked


def test_a_view_locking_some_parts_leaves_the_stack_unlocked():
    root = _lazy()
    root[1:].lock_()
    assert not root.is_locked and [p.is_locked for p in root.tensordicts] == [False, True]


def test_unlock_context_relocks_after_a_lock_inside_it():
    for td in (_dense().lock_(), _lazy().lock_()):
        with td.unlock_():
            td.lock_()
        assert td.is_locked and td["n"].is_locked
        with td.unlock_():
            td.lock_()
            td.unlock_()
        assert td.is_locked


def test_lock_context_unlocks_on_exit():
    td = _dense()
    with td.lock_():
        assert td.is_locked
    assert not td.is_locked
