"""HDF5 files as upstream tensordict reads them: strings come back as bytes, datasets of
strings (or other non-numeric data) are non-tensor entries left out of the guessed batch
size, and the options of ``from_dict``/``to_h5`` (compression...) reach every dataset."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
import torch

import tensordict
from tensordict import NonTensorData, TensorDict
from tensordict.persistent import PersistentTensorDict


@pytest.fixture
def raw_file(tmp_path):
    """A file written with h5py alone: no batch sizes, string datasets beside arrays."""
    path = tmp_path / "raw.h5"
    with h5py.File(path, "w") as file:
        file["x"] = np.arange(10, dtype=np.float32).reshape(5, 2)
        file.create_dataset("s", data="abc", dtype=h5py.string_dtype())
        file.create_dataset("names", data=["a", "b", "c", "d"], dtype=h5py.string_dtype())
        file["fixed"] = np.array([b"ab", b"cd", b"ef", b"gh", b"ij"], dtype="S2")
        file["g/y"] = np.zeros((5, 3))
        file.create_dataset("g/t", data="z", dtype=h5py.string_dtype())
    return path


@pytest.mark.parametrize("options", [{}, {"auto_batch_size": True}])
def test_string_datasets_are_non_tensor_and_out_of_the_batch_size(raw_file, options):
    with tensordict.from_h5(raw_file, **options) as ptd:
        assert ptd.batch_size == torch.Size([5])
        assert ptd["g"].batch_size == torch.Size([5, 3])  # each group its own, as upstream
        assert ptd["s"] == b"abc" and ptd["g", "t"] == b"z"
        assert isinstance(ptd.get("s"), NonTensorData)
        assert ptd["names"].tolist() == [b"a", b"b", b"c", b"d"]
        assert ptd["fixed"].tolist() == [b"ab", b"cd", b"ef", b"gh", b"ij"]
        assert ptd[1:3]["s"] == b"abc" and ptd[1:3]["x"].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    with tensordict.from_h5(raw_file, auto_batch_size=True, batch_dims=1) as ptd:
        assert ptd["g"].batch_size == torch.Size([5])
    with tensordict.from_h5(raw_file, auto_batch_size=True, batch_dims=0) as ptd:
        assert ptd.batch_size == torch.Size([]) and ptd["g"].batch_size == torch.Size([])
    with tensordict.from_h5(raw_file, batch_size=[5]) as ptd:
        assert ptd["g"].batch_size == torch.Size([5])


def test_strings_read_back_as_bytes_and_written_again(tmp_path, raw_file):
    with tensordict.from_h5(raw_file) as ptd:
        copy = ptd.to_tensordict()
    copy["b"] = b"raw bytes"
    copy["n"] = TensorDict(word="hello", batch_size=[5])
    copy.to_h5(tmp_path / "again.h5").close()
    with tensordict.from_h5(tmp_path / "again.h5") as again:
        assert again["s"] == b"abc" and again["b"] == b"raw bytes"
        assert again["n", "word"] == b"hello"
        assert again["names"].tolist() == [b"a", b"b", b"c", b"d"]
        assert torch.equal(again["x"], torch.arange(10.0).view(5, 2))


@pytest.mark.parametrize("write", ["from_dict", "to_h5"])
def test_dataset_options_reach_nested_datasets(tmp_path, write):
    td = TensorDict({"a": torch.arange(6.0).view(3, 2), "n": {"b": torch.ones(3, 4),
                     "m": {"c": torch.ones(3)}}, "scalar": torch.tensor(1.0),
                     "s": "text"}, [])
    path = tmp_path / "packed.h5"
    options = {"compression": "gzip", "compression_opts": 4, "shuffle": True}
    ptd = PersistentTensorDict.from_dict(td, path, **options) if write == "from_dict" \
        else td.to_h5(path, **options)
    ptd.close()
    with h5py.File(path) as file:
        for name in ("a", "n/b", "n/m/c"):
            assert (file[name].compression, file[name].compression_opts) == ("gzip", 4)
            assert file[name].shuffle
        assert file["scalar"].compression is None  # h5py has no filters for a scalar
    with tensordict.from_h5(path) as again:
        assert torch.equal(again["n", "b"], torch.ones(3, 4)) and again["s"] == b"text"


def test_bad_dataset_options_raise_and_leave_no_file(tmp_path):
    path = tmp_path / "never.h5"
    with pytest.raises(ValueError, match="nope"):
        TensorDict(a=torch.zeros(3), batch_size=[3]).to_h5(path, compression="nope")
    assert not path.exists()
