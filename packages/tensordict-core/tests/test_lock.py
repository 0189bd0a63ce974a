"""Locking: structure changes refused, in-place writes allowed, context managers."""

import pytest
import torch

from tensordict import TensorDict
from tensordict.errors import LockedTensorDictError


@pytest.fixture
def locked():
    return TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2)}}, [2]).lock_()


def test_writes_that_change_structure_are_refused(locked):
    for op in (
        lambda: locked.set("new", torch.zeros(2)),
        lambda: locked.__setitem__("a", torch.ones(2)),
        lambda: locked.__delitem__("a"),
        lambda: locked.rename_key_("a", "z"),
        lambda: locked["n"].set("c", torch.zeros(2)),
        lambda: locked.update({"z": torch.zeros(2)}),
        lambda: locked.pop("a"),
    ):
        with pytest.raises(LockedTensorDictError, match="locked TensorDict"):
            op()
    assert list(locked.keys(True)) == ["a", ("n", "b"), "n"]


def test_locked_error_is_a_runtime_error(locked):
    with pytest.raises(RuntimeError, match="Cannot modify locked TensorDict"):
        locked["x"] = torch.zeros(2)


def test_in_place_writes_pass(locked):
    locked.set_("a", torch.ones(2))
    locked.update_({"n": {"b": torch.ones(2)}})
    locked.set("a", torch.full((2,), 3.0), inplace=True)
    locked[0] = TensorDict({"a": torch.tensor(7.0), "n": {"b": torch.tensor(7.0)}}, [])
    assert locked["a"].tolist() == [7.0, 3.0] and locked["n", "b"].tolist() == [7.0, 1.0]


def test_lock_is_recursive_and_unlock_too(locked):
    assert locked.is_locked and locked["n"].is_locked
    locked.unlock_()
    assert not locked.is_locked and not locked["n"].is_locked


def test_unlock_context_relocks(locked):
    with locked.unlock_():
        locked["b"] = torch.zeros(2)
    assert locked.is_locked and "b" in locked


def test_lock_context_unlocks():
    td = TensorDict(a=torch.zeros(1))
    with td.lock_():
        assert td.is_locked
    assert not td.is_locked


def test_clone_is_unlocked(locked):
    assert not locked.clone().is_locked


def test_is_locked_setter():
    td = TensorDict(a=torch.zeros(1))
    td.is_locked = True
    assert td.is_locked
    td.is_locked = False
    assert not td.is_locked


def test_a_locked_or_swapped_tensordict_is_freed_without_the_garbage_collector():
    import gc
    import weakref

    gc.disable()
    try:
        locked = TensorDict(a=torch.zeros(2), batch_size=[2]).lock_()
        swap = TensorDict.from_module(torch.nn.Linear(2, 2)).to_module(torch.nn.Linear(2, 2))
        refs = [weakref.ref(locked), weakref.ref(swap)]
        del locked, swap
        assert all(ref() is None for ref in refs)  # no reference cycle through the exit stack
    finally:
        gc.enable()


LOCKED_AS_UPSTREAM = {  # what upstream 0.15.3 gives of a locked TensorDict of batch [3, 4]
    "unsqueeze": (lambda t: t.unsqueeze(0), True),
    "squeeze": (lambda t: t.unsqueeze(0).squeeze(0), True),
    "view": (lambda t: t.view(-1), True),
    "reshape": (lambda t: t.reshape(2, 6), True),
    "permute": (lambda t: t.permute(1, 0), True),
    "flatten": (lambda t: t.flatten(), True),
    "unflatten": (lambda t: t.unflatten(1, (2, 2)), True),
    "expand": (lambda t: t.expand(2, 3, 4), True),
    "flip": (lambda t: t.flip(0), True),
    "repeat": (lambda t: t.repeat(2, 1), True),
    "split": (lambda t: t.split(1)[0], True),
    "chunk": (lambda t: t.chunk(3)[0], True),
    "to(float64)": (lambda t: t.to(torch.float64), True),
    "detach": (lambda t: t.detach(), True),
    "unbind": (lambda t: t.unbind(1)[0], False),
    "[0]": (lambda t: t[0], False),
    "clone": (lambda t: t.clone(), False),
    "gather": (lambda t: t.gather(0, torch.zeros(1, 4, dtype=torch.long)), False),
    "view(dtype)": (lambda t: t.view(torch.int32), False),
}


@pytest.mark.parametrize("name", list(LOCKED_AS_UPSTREAM))
def test_shape_ops_and_casts_keep_the_lock_as_upstream(name):
    td = TensorDict(a=torch.zeros(3, 4), n={"b": torch.zeros(3, 4)}, batch_size=[3, 4]).lock_()
    op, locked = LOCKED_AS_UPSTREAM[name]
    out = op(td)
    assert out.is_locked is locked and out["n"].is_locked is locked
    if locked:
        with pytest.raises(RuntimeError):
            out["new"] = torch.zeros(out.batch_size)
    assert set(td.keys()) == {"a", "n"} and td.is_locked
