"""Memory-mapped storage of TensorDicts that live on a CUDA device. Skipped without a GPU."""

import pytest
import torch

from tensordict import MemoryMappedTensor, TensorDict

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

CUDA = torch.device("cuda", 0)


def _td() -> TensorDict:
    return TensorDict(a=torch.arange(6.0).reshape(2, 3),
                      n=TensorDict(b=torch.ones(2, 4, dtype=torch.int64), batch_size=[2]),
                      batch_size=[2]).to(CUDA)


def test_memmap_of_a_cuda_tensordict_round_trips_its_values(tmp_path):
    td = _td()
    saved = td.memmap(tmp_path / "saved")
    assert isinstance(saved["a"], MemoryMappedTensor) and saved["a"].device.type == "cpu"
    loaded = TensorDict.load_memmap(tmp_path / "saved")
    assert torch.equal(loaded["a"], td["a"].cpu())
    assert torch.equal(loaded["n", "b"], td["n", "b"].cpu())
    back = loaded.to(CUDA)
    assert back["n", "b"].device == CUDA and torch.equal(back["a"], td["a"])


def test_load_memmap_onto_the_device(tmp_path):
    td = _td()
    td.memmap(tmp_path / "saved")
    loaded = TensorDict.load_memmap(tmp_path / "saved", device=CUDA)
    assert loaded["a"].device == CUDA and torch.equal(loaded["a"], td["a"])


def test_memory_mapped_tensor_from_a_cuda_tensor(tmp_path):
    source = torch.arange(10.0, device=CUDA)
    mapped = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "t.memmap")
    assert mapped.device.type == "cpu" and torch.equal(mapped, source.cpu())


def test_memmap_like_of_a_cuda_tensordict(tmp_path):
    like = _td().memmap_like(tmp_path / "like")
    assert like["a"].shape == torch.Size([2, 3]) and like["a"].device.type == "cpu"
    assert like["n", "b"].dtype == torch.int64
