"""MemoryMappedTensor's nested-tensor constructors (a 2-D shape tensor, a nested source)
and the deprecated ``from_handler``, as upstream 0.15.3."""

from __future__ import annotations

import os

import pytest
import torch

from tensordict import MemoryMappedTensor

SIZES = torch.tensor([[2, 3], [1, 3]])


def _nested() -> torch.Tensor:
    return torch.nested.nested_tensor([torch.arange(6.).reshape(2, 3), torch.ones(1, 3)])


@pytest.mark.parametrize("factory, value", [("zeros", 0), ("empty", 0), ("ones", 1)])
def test_factories_with_nested_shapes(tmp_path, factory, value):
    out = getattr(MemoryMappedTensor, factory)(SIZES, dtype=torch.int32,
                                               filename=tmp_path / "n.memmap")
    assert type(out) is MemoryMappedTensor and out.is_nested and out.dtype == torch.int32
    assert out[0].shape == (2, 3) and out[1].shape == (1, 3)
    assert out[1].tolist() == [[value] * 3]
    assert os.listdir(tmp_path) == ["n.memmap"] and os.path.getsize(out.filename) == 36
    assert getattr(MemoryMappedTensor, factory)(shape=SIZES).is_nested  # anonymous


def test_full_with_nested_shapes():
    out = MemoryMappedTensor.full(SIZES, fill_value=2.5)
    assert out[0].tolist() == [[2.5] * 3] * 2 and out[1].tolist() == [[2.5] * 3]


def test_from_tensor_nested_and_from_filename(tmp_path):
    out = MemoryMappedTensor.from_tensor(_nested(), filename=tmp_path / "n.memmap")
    assert out.is_nested and out[0].tolist() == [[0., 1., 2.], [3., 4., 5.]]
    assert os.path.getsize(tmp_path / "n.memmap") == 36
    mapped = MemoryMappedTensor.from_filename(tmp_path / "n.memmap", torch.float32, SIZES)
    assert mapped.is_nested and mapped[1].tolist() == [[1., 1., 1.]]
    mapped[1].fill_(7)
    assert out[1].tolist() == [[7., 7., 7.]]  # the same file
    blank = MemoryMappedTensor.from_tensor(_nested(), copy_data=False)
    assert blank.is_nested and blank[0].tolist() == [[0.] * 3] * 2


def test_from_handler_is_deprecated(tmp_path):
    mapped = MemoryMappedTensor.from_tensor(torch.arange(4.), filename=tmp_path / "x.memmap")
    with pytest.warns(DeprecationWarning, match="from_handler.*deprecated"):
        row = MemoryMappedTensor.from_handler(mapped.filename, torch.float32, [2, 2], index=1)
    assert row.tolist() == [2., 3.]
    anonymous = MemoryMappedTensor.from_tensor(torch.arange(9.))
    with pytest.warns(DeprecationWarning):
        nested = MemoryMappedTensor.from_handler(anonymous.untyped_storage(), torch.float32,
                                                 SIZES)
    assert nested.is_nested and nested[1].tolist() == [[6., 7., 8.]]
