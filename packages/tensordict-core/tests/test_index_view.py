"""tensordict.storage.IndexView: ``store[index]`` of a collection whose reads are copies,
as a view whose writes reach the collection (tested on a toy store whose every read is
a copy, so only what goes through ``_set_at_index`` sticks)."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.storage import IndexView, WriteBackMixin


class CopyStore(WriteBackMixin, TensorDict):
    """Every read is a copy; ``store[index]`` is an IndexView."""

    def _get_str(self, key, default=None, *args):
        value = TensorDict._get_str(self, key, *((default,) if default is not None else ()))
        return value.clone() if isinstance(value, torch.Tensor) else value

    def to_tensordict(self, **kwargs):
        return TensorDict({k: v.clone() for k, v in self.items()}, self.batch_size)

    def _index(self, index):
        return IndexView(self, index)

    def _set_str(self, key, value, **kwargs):  # stores a copy, as a file does
        value = value.clone() if isinstance(value, torch.Tensor) else value
        return TensorDict._set_str(self, key, value, **kwargs)

    def _set_at_index(self, index, value):  # into the stored tensors themselves
        TensorDict._from_entries(self._tensordict, self.batch_size)[index] = value


MASK = torch.tensor([True, False, True, False])


def store() -> CopyStore:
    return CopyStore(a=torch.arange(4.0), b=torch.zeros(4, 2, dtype=torch.int64),
                     batch_size=[4])


def test_reads_are_copies_so_the_toy_store_needs_the_view():
    td = store()
    td["a"][0] = 100.0
    assert td["a"][0] == 0.0
    assert type(td[MASK]) is IndexView and td[MASK].batch_size == torch.Size([2])


@pytest.mark.parametrize("write", [
    lambda v: v.add_(1),
    lambda v: v.set_("a", torch.ones(2) + torch.tensor([0.0, 2.0])),
    lambda v: v.__setitem__("a", torch.tensor([1.0, 3.0])),
    lambda v: v.update_({"a": torch.tensor([1.0, 3.0]), "b": torch.ones(2, 2, dtype=torch.int64)}),
    lambda v: v.apply_(lambda x: x + 1),
])
def test_writes_through_a_view_reach_the_store(write):
    td = store()
    write(td[MASK])
    assert td["a"].tolist() == [1.0, 1.0, 3.0, 3.0]
    assert td["b"][:, 0].tolist() in ([1, 0, 1, 0], [0, 0, 0, 0])


def test_new_keys_views_of_views_and_index_writes():
    td = store()
    td[1:3]["z"] = torch.tensor([5, 6])  # zeros outside the index, the value's dtype
    td[1:4][1].set_("a", torch.tensor(-1.0))  # a view of a view
    td[MASK][1] = TensorDict({"a": torch.tensor(-2.0)}, [])
    assert td["z"].tolist() == [0, 5, 6, 0] and td["z"].dtype == torch.int64
    assert td["a"].tolist() == [0.0, 1.0, -2.0, 3.0]


def test_bad_writes_raise_and_change_nothing():
    td = store()
    with pytest.raises(RuntimeError, match="'a'"):
        td[MASK].set_("a", torch.ones(3))
    with pytest.raises(KeyError, match="missing"):
        td[0].set_("missing", torch.ones(()))
    with pytest.raises(IndexError):
        td[7]
    with pytest.raises(NotImplementedError, match="to_tensordict"):
        td[MASK].select("a")
    assert td["a"].tolist() == [0.0, 1.0, 2.0, 3.0] and "missing" not in td.keys()


def test_lock_is_the_stores():
    td = store().lock_()
    view = td[0]
    assert view.is_locked
    view.set_("a", torch.tensor(9.0))  # in place: allowed
    with pytest.raises(RuntimeError, match="locked"):
        view["new"] = torch.tensor(1.0)
    td.unlock_()
    with pytest.raises(RuntimeError, match="lock the parent"):
        td[0].lock_()
    assert td["a"][0] == 9.0 and "new" not in td.keys()
