"""Tensorclasses and non-tensor values through HDF5 and Zarr files, as upstream: a
tensorclass written with ``to_h5``/``to_zarr`` comes back as itself over the file, and
``MyClass.from_h5``/``from_zarr`` open a file as ``MyClass``."""

from __future__ import annotations

import pytest
import torch

import tensordict
from tensordict import TensorDict
from tensordict.persistent import PersistentTensorDict

tensorclasses = pytest.importorskip("tensordict.tensorclasses")


@tensorclasses.tensorclass
class Episode:
    obs: torch.Tensor
    env: str
    cfg: dict = None


def test_a_tensorclass_round_trips_as_itself(tmp_path, backend, read_text):
    path = tmp_path / f"episode.{backend}"
    episode = Episode(obs=torch.arange(12.0).view(4, 3), env="cartpole",
                      cfg={"lr": 0.5}, batch_size=[4])
    written = getattr(episode, f"to_{backend}")(path)
    assert type(written) is Episode
    assert isinstance(written._tensordict, PersistentTensorDict)  # over the file
    written.obs[...] = 0  # a copy read: the file keeps its values
    written[1] = Episode(obs=torch.ones(3), env="cartpole", cfg={"lr": 0.5}, batch_size=[])
    written._tensordict.close()
    again = getattr(Episode, f"from_{backend}")(path)
    try:
        assert type(again) is Episode and again.batch_size == torch.Size([4])
        assert again.obs[1].tolist() == [1.0, 1.0, 1.0]
        assert again.obs[2].tolist() == [6.0, 7.0, 8.0]
        assert again.env == read_text("cartpole") and again.cfg == {"lr": 0.5}
        assert type(again[2:]) is Episode and again[2:].obs.shape == (2, 3)
    finally:
        again._tensordict.close()
    for open_file in (getattr(tensordict, f"from_{backend}"),
                      getattr(TensorDict, f"from_{backend}")):
        with open_file(path) as plain:
            assert type(plain) is PersistentTensorDict
