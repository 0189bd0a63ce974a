"""The operations the bad-input table checks still write everything with good input."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))  # the collections are shared with test_bad_input
from bad_input_collections import dense, lazy, locked  # noqa: E402


def test_update_in_place_writes_every_entry():
    td = dense()
    td.update_({"a": torch.ones(3), "n": {"c": torch.ones(3, 4)}})
    assert td["a"].tolist() == [1.0] * 3 and td["n", "c"].sum() == 12


def test_setitem_at_a_tensor_index_writes_every_leaf():
    td, value = dense(), dense()[:2].apply(lambda x: x + 100 if x.dtype != torch.bool else x)
    td[torch.tensor([2, 0])] = value
    assert td["a"].tolist() == [101.0, 1.0, 100.0]
    assert td["n", "c"][2].tolist() == value["n", "c"][0].tolist()


def test_apply_in_place_writes_every_leaf_and_the_lazy_parts():
    stack = lazy()
    stack.apply_(lambda x: x * 0 if x.dtype is not torch.bool else x)
    assert all(part["a"].sum() == 0 and part["n", "c"].sum() == 0
               for part in stack.tensordicts)


def test_set_of_a_new_nested_key_creates_the_levels():
    td = dense()
    td.set(("x", "y", "z"), torch.ones(3))
    assert td["x", "y", "z"].tolist() == [1.0] * 3 and td["x"].batch_size == (3,)


def test_stack_and_cat_into_out():
    parts = [dense(), dense()]
    out = torch.stack(parts, 0).zero_()
    assert torch.stack(parts, 0, out=out) is out and out["a"][1].tolist() == [0.0, 1.0, 2.0]
    out = torch.cat(parts, 0).zero_()
    assert torch.cat(parts, 0, out=out) is out and out["a"].tolist() == [0.0, 1.0, 2.0] * 2


def test_update_in_place_of_a_leaf_that_requires_grad_under_no_grad():
    td = TensorDict(w=torch.zeros(2, requires_grad=True), batch_size=[2])
    with torch.no_grad():
        td.update_({"w": torch.ones(2)})
    assert td["w"].tolist() == [1.0, 1.0]


def test_unlocking_the_root_unlocks_the_nested_ones():
    td = locked()
    td.unlock_()
    td["n"].unlock_()  # not locked by a parent any more
    td["n"]["z"] = torch.zeros(3)
    assert ("n", "z") in td.keys(True)


def test_a_nested_tensordict_locked_alone_still_unlocks_alone():
    td = dense()
    td["n"].lock_()
    td["n"].unlock_()
    assert not td["n"].is_locked


def test_unlock_context_manager_of_the_root_relocks_the_nested_ones():
    td = locked()
    with td.unlock_():
        assert not td["n"].is_locked
    assert td["n"].is_locked
    with pytest.raises(RuntimeError, match="locked"):
        td["n"].unlock_()


def test_a_nested_tensordict_of_a_locked_one_unpickles_unlockable():
    import pickle

    child = pickle.loads(pickle.dumps(locked()["n"]))
    assert child.is_locked
    assert not child.unlock_().is_locked


def test_batch_size_of_a_locked_tensordict_can_be_set_to_itself():
    td = locked()
    td.batch_size = [3]
    assert td.batch_size == (3,)


def test_an_apply_error_names_the_nested_key():
    with pytest.raises(RuntimeError, match=r"\('n', 'm', 'd'\)"):
        dense().apply(lambda x: x.view(-1, 7) if x.dtype is torch.bool else x)
