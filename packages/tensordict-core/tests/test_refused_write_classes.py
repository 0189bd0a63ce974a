"""Refused writes raise upstream's exception class, and leave everything as it was.

* an in-place write into a leaf that requires grad, or a view of one (an index of it):
  ``InplaceWriteError`` (``tensordict.base._InplaceWriteError`` upstream), before any
  leaf is written;
* ``update_at_`` of a bare value (a str, a number) into a key the TensorDict lacks: a
  ``KeyError`` naming the key that is also the ``TypeError`` upstream raises;
* a delete in a locked TensorDict: the lock error, whatever the key (upstream checks the
  lock first), even for a nested key or one that is missing.
"""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.base import _InplaceWriteError
from tensordict.errors import InplaceWriteError, LockedTensorDictError


def _grad_td() -> TensorDict:
    return TensorDict(
        a=torch.zeros(2, 3, requires_grad=True),
        n=TensorDict(c=torch.zeros(2, 3, requires_grad=True), batch_size=[2, 3]),
        batch_size=[2, 3],
    )


@pytest.mark.parametrize(
    "write",
    [
        lambda td: td.apply_(lambda x: x + 1),
        lambda td: td[0].apply_(lambda x: x + 1),
        lambda td: td[:, 1:].apply_(lambda x: x + 1),
        lambda td: td["n"].apply_(lambda x: x + 1),
        lambda td: td.update({"a": torch.ones(2, 3)}, inplace=True),
        lambda td: td.select("a").update({"a": torch.ones(2, 3)}, inplace=True),
        lambda td: td.update_({"a": torch.ones(2, 3), ("n", "c"): torch.ones(2, 3)}),
        lambda td: td.set_("a", torch.ones(2, 3)),
    ],
    ids=["apply_", "int-apply_", "slice-apply_", "nested-apply_", "update-inplace",
         "select-update-inplace", "update_", "set_"],
)
def test_in_place_write_into_a_grad_leaf_is_upstreams_class(write) -> None:
    td = _grad_td()
    with pytest.raises(InplaceWriteError, match="requires grad") as info:
        write(td)
    assert isinstance(info.value, _InplaceWriteError) and isinstance(info.value, RuntimeError)
    assert td["a"].eq(0).all() and td["n", "c"].eq(0).all()
    assert td["a"]._version == 0 and td["n", "c"]._version == 0


def test_grad_leaves_are_written_under_no_grad() -> None:
    td = _grad_td()
    with torch.no_grad():
        td[0].apply_(lambda x: x + 1)
    assert td["a"][0].eq(1).all() and td["a"][1].eq(0).all()


@pytest.mark.parametrize("value", ["new", 1.0, [1, 2, 3]])
@pytest.mark.parametrize("key", ["x", ("n", "x"), ("y", "x")])
def test_update_at_of_a_bare_value_to_a_missing_key(key, value) -> None:
    td = TensorDict(a=torch.zeros(2, 3), n=TensorDict(c=torch.zeros(2, 3), batch_size=[2, 3]),
                    batch_size=[2, 3])
    before = td.clone()
    with pytest.raises(KeyError, match="not found") as info:
        td.update_at_({key: value}, 0)
    assert isinstance(info.value, TypeError)
    assert sorted(td.keys(True, True), key=str) == sorted(before.keys(True, True), key=str)
    assert (td == before).all()


def test_update_at_of_a_tensor_to_a_missing_key_is_a_plain_key_error() -> None:
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    with pytest.raises(KeyError) as info:
        td.update_at_({"x": torch.ones(3)}, 0)
    assert not isinstance(info.value, TypeError)


@pytest.mark.parametrize(
    "key", ["a", "x", ("n", "c"), ("n", "x"), ("x", "y"), ("a", "b"), ("n", "c", "d")]
)
@pytest.mark.parametrize("through", ["root", "nested"])
def test_delete_in_a_locked_tensordict_raises_the_lock_error(key, through) -> None:
    td = TensorDict(a=torch.zeros(2), n=TensorDict(c=torch.zeros(2), batch_size=[2]),
                    batch_size=[2]).lock_()
    target = td if through == "root" else td["n"]
    with pytest.raises(LockedTensorDictError):
        del target[key]
    with pytest.raises(RuntimeError, match="locked"):
        target.del_(key)
    assert list(td.keys(True, True)) == ["a", ("n", "c")] and td.is_locked
