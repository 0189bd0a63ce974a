"""Tensorclasses on a CUDA device. Skipped without a GPU."""

import pytest
import torch

from tensordict import TensorDict, tensorclass

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

CUDA = torch.device("cuda", 0)


@tensorclass
class Batch:
    obs: torch.Tensor
    extra: TensorDict
    label: str


def _batch(**kwargs) -> Batch:
    return Batch(obs=torch.arange(6.0).reshape(2, 3),
                 extra=TensorDict(z=torch.ones(2, 1), batch_size=[2]), label="walk",
                 batch_size=[2], **kwargs)


def test_construction_on_the_device_moves_the_fields():
    batch = _batch(device="cuda")
    assert batch.device == CUDA and batch.obs.device == CUDA and batch.extra["z"].device == CUDA
    assert batch.label == "walk"


@pytest.mark.parametrize("move", [lambda b: b.to("cuda"), lambda b: b.cuda(),
                                  lambda b: b.to(CUDA, non_blocking=True)])
def test_moves_keep_values_and_non_tensor_fields(move):
    batch = _batch()
    on_gpu = move(batch)
    torch.cuda.synchronize()
    assert type(on_gpu) is Batch and on_gpu.device == CUDA and on_gpu.label == "walk"
    assert on_gpu.obs.device == CUDA and on_gpu.extra["z"].device == CUDA
    back = on_gpu.cpu()
    assert torch.equal(back.obs, batch.obs) and back.device == torch.device("cpu")


def test_indexing_and_stacking_stay_on_the_device():
    batch = _batch(device="cuda")
    row = batch[torch.tensor([1], device=CUDA)]
    assert row.obs.device == CUDA and torch.equal(row.obs.cpu(), torch.tensor([[3.0, 4.0, 5.0]]))
    stacked = torch.stack([batch, batch])
    assert type(stacked) is Batch and stacked.batch_size == torch.Size([2, 2])
    assert stacked.obs.device == CUDA


def test_pin_memory_pins_tensor_fields():
    pinned = _batch().pin_memory()
    assert pinned.obs.is_pinned() and pinned.extra["z"].is_pinned() and pinned.label == "walk"
