"""tensordict-h5: HDF5 files written by upstream tensordict read here and the other way
round, the names it adds, and the ``"h5"`` storage backend."""

from __future__ import annotations

import pathlib

import h5py
import pytest
import torch

import tensordict
from tensordict import TensorDict
from tensordict.persistent import PersistentTensorDict

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "upstream_0153.h5"


def transition() -> TensorDict:
    return TensorDict({"obs": torch.arange(12, dtype=torch.float32).view(4, 3),
                       "done": torch.tensor([False, False, True, True]),
                       "next": {"reward": torch.arange(4, dtype=torch.float64).view(4, 1)},
                       "name": "cartpole"}, [4])


def test_reads_a_file_written_by_upstream():
    # upstream 0.15.3 stores no batch size in HDF5 files: give it, or let it be guessed
    with tensordict.from_h5(FIXTURE, batch_size=[4]) as ptd:
        expected = transition()
        assert torch.equal(ptd["obs"], expected["obs"])
        assert torch.equal(ptd["next", "reward"], expected["next", "reward"])
        assert ptd["done"].tolist() == [False, False, True, True]
        assert ptd["name"] == b"cartpole"  # as upstream reads its strings back: bytes
        assert ptd[1:3]["obs"].shape == (2, 3)
        assert ptd["next"].batch_size == torch.Size([4])
    # guessed as upstream does, with or without auto_batch_size: each group its own
    for options in ({}, {"auto_batch_size": True}):
        with tensordict.from_h5(FIXTURE, **options) as guessed:
            assert guessed.batch_size == torch.Size([4])
            assert guessed["next"].batch_size == torch.Size([4, 1])
    with tensordict.from_h5(FIXTURE, auto_batch_size=True, batch_dims=1) as one:
        assert one.batch_size == torch.Size([4]) and one["next"].batch_size == torch.Size([4])
    with tensordict.from_h5(FIXTURE, batch_dims=1) as ignored:  # as upstream: no effect
        assert ignored["next"].batch_size == torch.Size([4, 1])


def test_writes_upstreams_layout(tmp_path):
    path = tmp_path / "ours.h5"
    transition().to_h5(path).close()
    with h5py.File(path) as file:
        assert file["obs"].shape == (4, 3) and file["obs"].dtype == "float32"
        assert file["next/reward"].dtype == "float64"
        assert bool(file["name"].attrs["__tensordict_str__"])
        assert file["name"][()] in (b"cartpole", "cartpole")


def test_names_and_methods():
    assert tensordict.PersistentTensorDict is PersistentTensorDict
    assert tensordict.from_h5.__module__ == "tensordict.h5"
    with TensorDict.from_h5(FIXTURE, batch_size=[4]) as ptd:
        assert isinstance(ptd, PersistentTensorDict)


def test_storage_backend(tmp_path):
    path = tmp_path / "saved.h5"
    transition().save(path, backend="h5").close()
    with TensorDict.load(path) as loaded:  # the backend is recognised from the file
        assert isinstance(loaded, PersistentTensorDict)
        assert loaded.batch_size == torch.Size([4])
        assert loaded["name"] == b"cartpole"


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        tensordict.from_h5(tmp_path / "nope.h5")


def test_view_and_cast_writes_land_in_the_dataset(tmp_path):
    """What h5py itself reads back: rows written through index views, and bfloat16
    values written into a float32 dataset as values (not as their int16 bits)."""
    path = tmp_path / "writes.h5"
    ptd = transition().to_h5(path)
    ptd["next"][1].add_(10)
    ptd[1].set_("done", torch.tensor(True))
    ptd["next"][2]["reward"] = torch.tensor([-1.0])
    ptd[2:].set_("obs", torch.tensor([[0.5, 1.5, 2.5]], dtype=torch.bfloat16).expand(2, 3))
    with pytest.raises(RuntimeError, match="'obs'"):
        ptd.set_("obs", torch.zeros(4, 5))
    ptd.close()
    with h5py.File(path) as file:
        assert file["obs"].dtype == "float32" and file["obs"].shape == (4, 3)
        assert file["obs"][1].tolist() == [3.0, 4.0, 5.0]
        assert file["obs"][2:].tolist() == [[0.5, 1.5, 2.5]] * 2
        assert file["next/reward"][:, 0].tolist() == [0.0, 11.0, -1.0, 3.0]
        assert file["done"][:].tolist() == [False, True, True, True]
