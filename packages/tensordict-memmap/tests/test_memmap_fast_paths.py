"""The fast paths taken by memory-mapped TensorDicts: ``is_memmap`` and ``td[i] = row``."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict, _setitem
from tensordict.memmap import MemoryMappedTensor


def _memmapped(tmp_path, rows: int = 4) -> TensorDict:
    td = TensorDict({"a": torch.zeros(rows, 3), "n": {"b": torch.zeros(rows, dtype=torch.int64)}},
                    [rows])
    return td.memmap(tmp_path / "td")


def _row(value: float) -> TensorDict:
    return TensorDict({"a": torch.full((3,), value), "n": {"b": torch.tensor(int(value))}}, [])


def test_is_memmap_fast_path(tmp_path) -> None:
    plain = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert plain.is_memmap() is False
    mm = _memmapped(tmp_path)
    assert mm.is_memmap() is True and mm["n"].is_memmap() is True
    mm.unlock_()
    assert mm.is_memmap() is False  # unlocking ends the memmapped state, as before


def test_memmap_tensor_is_writable_as_tensor() -> None:
    assert MemoryMappedTensor in _setitem.WRITABLE_AS_TENSOR


def test_row_write_takes_the_fast_path(tmp_path, monkeypatch) -> None:
    mm = _memmapped(tmp_path)
    monkeypatch.setattr(_setitem, "plan_at_index",
                        lambda *args: pytest.fail("the general path was taken"))
    mm[1] = _row(2.0)
    mm[-1] = _row(3.0)
    mm[torch.tensor([0, 2])] = TensorDict({"a": torch.ones(2, 3),
                                           "n": {"b": torch.ones(2, dtype=torch.int64)}}, [2])
    assert mm["a"][:, 0].tolist() == [1.0, 2.0, 1.0, 3.0]
    assert mm["n", "b"].tolist() == [1, 2, 1, 3]
    assert type(mm["a"]) is MemoryMappedTensor  # the leaves stay memory-mapped
    reloaded = TensorDict.load_memmap(tmp_path / "td")
    assert reloaded["a"][:, 0].tolist() == [1.0, 2.0, 1.0, 3.0]  # written to the files


def test_row_write_with_another_dtype(tmp_path) -> None:
    mm = _memmapped(tmp_path)
    mm[0] = TensorDict({"a": torch.full((3,), 5, dtype=torch.int32),
                        "n": {"b": torch.tensor(7)}}, [])
    assert mm["a"].dtype is torch.float32 and mm["a"][0].tolist() == [5.0, 5.0, 5.0]


@pytest.mark.parametrize("bad", [
    TensorDict({"a": torch.ones(4), "n": {"b": torch.tensor(1)}}, []),  # wrong shape
    TensorDict({"a": torch.ones(3), "n": {"b": torch.tensor(1)}, "c": torch.ones(1)},
               []),  # a new key: the memmapped TensorDict is locked
])
def test_failed_row_write_leaves_the_td_unchanged(tmp_path, bad) -> None:
    mm = _memmapped(tmp_path)
    mm[0] = _row(1.0)
    before = mm.to_tensordict()
    with pytest.raises((RuntimeError, KeyError)):
        mm[2] = bad
    assert (mm == before).all()
    with pytest.raises(IndexError):
        mm[4] = _row(9.0)
    assert (mm == before).all()
