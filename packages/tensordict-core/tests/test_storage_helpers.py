"""tensordict.storage: what storage plugins build on (tested here on a toy store that
keeps its entries as bytes, so that every read is a copy)."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from tensordict import TensorDict
from tensordict.storage import WriteBackMixin, atomic_write, check_fits, split_rows


class BytesStore(WriteBackMixin, TensorDict):
    """Reads give copies: writes must go through set_/_set_at_index to stick."""

    def to_tensordict(self, **kwargs):
        return TensorDict({k: v.clone() for k, v in self.items()}, self.batch_size)


def store() -> BytesStore:
    return BytesStore(a=torch.zeros(3, 2), b=torch.ones(3), batch_size=[3])


def test_in_place_ops_are_written_back():
    td = store()
    td += 1
    td.mul_(2)
    td.apply_(lambda x: x - 1)
    assert td["a"].tolist() == [[1.0, 1.0]] * 3 and td["b"].tolist() == [3.0] * 3


def test_update_checks_every_entry_first():
    td = store()
    with pytest.raises(RuntimeError, match=r"'b'.*\(3,\)"):
        td.update_({"a": torch.full((3, 2), 5.0), "b": torch.zeros(3, 2)})
    assert td["a"].sum() == 0  # nothing written
    with pytest.raises(KeyError):  # none of the keys exists
        td.update_({"zzz": torch.zeros(3)})
    assert td["a"].sum() == 0
    td.update_(TensorDict(a=torch.full((2,), 5.0)))  # broadcasts over the batch
    assert td["a"].sum() == 30
    # as upstream: the keys this TensorDict lacks are skipped when others exist
    td.update_({"a": torch.full((3, 2), 1.0), "zzz": torch.zeros(3)})
    assert td["a"].sum() == 6 and "zzz" not in td.keys()


def test_rows_written_through_set_at_index():
    td = store()
    td.update_at_({"a": torch.full((2,), 7.0)}, 1)
    td.set_at_("b", torch.tensor(9.0), 2)
    assert td["a"][1].tolist() == [7.0, 7.0] and td["b"].tolist() == [1.0, 1.0, 9.0]


@pytest.mark.parametrize(("index", "rows", "rest"), [
    (2, slice(2, 3), (0,)),
    (-1, slice(4, 5), (0,)),
    (slice(1, None, 2), slice(1, 5, 2), (slice(None),)),
    (torch.tensor([True, False, True, False, False]), [0, 2], (slice(None),)),
    ([3, 1, 3], [1, 3], (torch.tensor([1, 0, 1]),)),
    ((1, 0), slice(1, 2), (0, 0)),
])
def test_split_rows(index, rows, rest):
    got_rows, got_rest = split_rows(index, torch.Size([5, 2]))
    assert (got_rows == rows) if isinstance(rows, slice) else got_rows.tolist() == rows
    assert len(got_rest) == len(rest)
    for got, expected in zip(got_rest, rest):
        assert torch.equal(got, expected) if isinstance(expected, torch.Tensor) \
            else got == expected
    x = torch.arange(10).view(5, 2)
    first = x[got_rows] if isinstance(got_rows, slice) else x[torch.from_numpy(got_rows)]
    assert torch.equal(first[got_rest], x[index])


@pytest.mark.parametrize("index", [(Ellipsis, 0), (slice(None), None),
                                   (torch.tensor([0]), torch.tensor([1])), slice(None, None, -1)])
def test_split_rows_reads_everything_when_rows_cannot_do(index):
    assert split_rows(index, torch.Size([5, 2]))[0] is None


def test_split_rows_bounds():
    with pytest.raises(IndexError):
        split_rows(5, torch.Size([5]))
    with pytest.raises(IndexError):
        split_rows(np.array([0, 7]), torch.Size([5]))


def test_check_fits():
    check_fits((1, 3), (4, 3), "x")
    with pytest.raises(RuntimeError, match=r"'x' at 2, of shape \(4,\)"):
        check_fits((5,), (4,), "x", 2)


def test_atomic_write_keeps_the_previous_file(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"old")

    def fail(tmp):
        with open(tmp, "wb") as file:
            file.write(b"partial")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        atomic_write(path, fail)
    assert path.read_bytes() == b"old" and os.listdir(tmp_path) == ["f.bin"]


def test_atomic_write_of_a_folder(tmp_path):
    path = tmp_path / "store"
    path.mkdir()
    (path / "old.txt").write_text("old")

    def write(tmp):
        os.mkdir(tmp)
        with open(os.path.join(tmp, "new.txt"), "w") as file:
            file.write("new")

    atomic_write(path, write)
    assert os.listdir(path) == ["new.txt"] and os.listdir(tmp_path) == ["store"]


SCHEMA = {"obs": ([4, 3], torch.uint8), "next": {"reward": ([], torch.float32)}}


def test_from_schema_in_memory_and_shared():
    td = TensorDict.from_schema(SCHEMA, batch_size=[5])
    assert td["obs"].shape == (5, 4, 3) and td["obs"].dtype == torch.uint8
    assert td["next", "reward"].shape == (5,) and td["next", "reward"].abs().sum() == 0
    td["obs"][0] = 1  # real, writable memory (not the expanded prototype)
    assert td["obs"].sum() == 12
    shared = TensorDict.from_schema(SCHEMA, batch_size=[2], storage="shared")
    assert shared["obs"].is_shared() and shared["next", "reward"].is_shared()


def test_from_schema_errors():
    with pytest.raises(TypeError, match="'obs'"):
        TensorDict.from_schema({"obs": [4, 3]}, batch_size=[2])
    with pytest.raises(TypeError, match="'obs'"):
        TensorDict.from_schema({"obs": ([4], "float")}, batch_size=[2])
    with pytest.raises(ValueError, match="unknown storage backend 'nope'"):
        TensorDict.from_schema(SCHEMA, storage="nope")
    with pytest.raises(TypeError, match="unexpected"):
        TensorDict.from_schema(SCHEMA, prefix="/tmp/x")


def test_update_writes_non_tensor_entries_too():
    td = store()
    td["s"] = "old"
    td.update_({"s": "new", "b": torch.full((3,), 2.0)})
    assert td["s"] == "new" and td["b"].tolist() == [2.0] * 3
