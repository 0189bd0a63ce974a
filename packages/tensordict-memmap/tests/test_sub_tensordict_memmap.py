"""``_get_sub_tensordict(idx)`` of a memory-mapped TensorDict writes into its files.

Each write goes through the view of a TensorDict memory-mapped to a folder (locked, as
``memmap_`` leaves it); the files are then read back with ``TensorDict.load_memmap`` and
compared with the same write done by hand on a copy. A write the lock refuses (a new
entry) raises and leaves the files as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.errors import LockedTensorDictError

INDICES = {"int": 1, "slice": slice(1, 3), "mask": torch.tensor([True, False, True]),
           "tensor": torch.tensor([2, 0])}


def _saved(path: Any) -> TensorDict:
    return TensorDict(a=torch.arange(6.).reshape(3, 2), n={"c": torch.arange(3)},
                      batch_size=[3]).memmap_(path)


def _by_hand(key: Any, make: Callable[[torch.Tensor], torch.Tensor], idx: Any):
    def write(copy: TensorDict) -> None:
        leaf = copy.get(key)
        leaf[idx] = make(leaf[idx])
    return write


WRITES = {
    "setitem": (lambda v: v.__setitem__("a", torch.full(v.batch_size + (2,), 5.0)),
                "a", lambda x: torch.full_like(x, 5.0)),
    "set-inplace": (lambda v: v.set("a", torch.full(v.batch_size + (2,), 5.0), inplace=True),
                    "a", lambda x: torch.full_like(x, 5.0)),
    "set_-nested": (lambda v: v.set_(("n", "c"), torch.full(v.batch_size, 7)),
                    ("n", "c"), lambda x: torch.full_like(x, 7)),
    "update_": (lambda v: v.update_({"a": torch.full(v.batch_size + (2,), 5.0)}),
                "a", lambda x: torch.full_like(x, 5.0)),
    "add_": (lambda v: v.add_(1), "a", lambda x: x + 1),
    "zero_": (lambda v: v.zero_(), "a", torch.zeros_like),
    "apply_": (lambda v: v.apply_(lambda x: x * 3), "a", lambda x: x * 3),
}


@pytest.mark.parametrize("index", INDICES)
@pytest.mark.parametrize("case", WRITES)
def test_writes_through_the_view_reach_the_files(tmp_path, index, case):
    idx = INDICES[index]
    td = _saved(tmp_path)
    expected = td.to_tensordict()
    through_view, key, make = WRITES[case]
    through_view(td._get_sub_tensordict(idx))
    _by_hand(key, make, idx)(expected)
    if case in ("add_", "zero_", "apply_"):  # every leaf, the nested one too
        _by_hand(("n", "c"), make, idx)(expected)
    loaded = TensorDict.load_memmap(tmp_path)
    for leaf_key, value in expected.items(True, True):
        assert torch.equal(loaded[leaf_key], value), leaf_key


def test_new_entry_is_refused_and_nothing_is_written(tmp_path):
    td = _saved(tmp_path)
    view = td._get_sub_tensordict(1)
    with pytest.raises(LockedTensorDictError):
        view["z"] = torch.ones(())
    with pytest.raises(RuntimeError):  # a wrong shape: checked before the first write
        view.update_({"a": torch.ones(2), "n": {"c": torch.ones(5)}})
    loaded = TensorDict.load_memmap(tmp_path)
    assert list(loaded.keys(True, True)) == ["a", ("n", "c")]
    assert loaded["a"].tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]]


def test_lazy_stack_of_memmapped_parts(tmp_path):
    parts = [_saved(tmp_path / str(i)) for i in range(2)]
    stack = LazyStackedTensorDict(*parts, stack_dim=0)
    stack._get_sub_tensordict((slice(None), 2))["a"] = torch.full((2, 2), -1.0)
    for i in range(2):
        assert TensorDict.load_memmap(tmp_path / str(i))["a"][2].tolist() == [-1.0, -1.0]


@pytest.mark.parametrize("idx", list(INDICES.values()), ids=list(INDICES))
def test_a_view_of_a_memory_mapped_tensordict_is_memory_mapped(tmp_path, idx):
    td = _saved(tmp_path)
    assert td._get_sub_tensordict(idx).is_memmap()  # as upstream
    assert not TensorDict(a=torch.zeros(3), batch_size=[3])._get_sub_tensordict(idx).is_memmap()
