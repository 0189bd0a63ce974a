"""MemoryMappedTensor: constructors, views, pickling across processes, file handles."""

from __future__ import annotations

import copy
import gc
import multiprocessing as mp
import os
import pickle
import sys
from pathlib import Path

import pytest
import torch

from tensordict import MemoryMappedTensor
from tensordict.memmap._tensor import shared_storage

sys.path.insert(0, str(Path(__file__).parent))
from memmap_share_workers import fill_from_queue  # noqa: E402


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_from_tensor_writes_raw_bytes(tmp_path):
    source = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "t.memmap")
    assert isinstance(t, MemoryMappedTensor) and t.filename == str(tmp_path / "t.memmap")
    assert torch.equal(t, source)
    raw = (tmp_path / "t.memmap").read_bytes()
    assert raw == source.numpy().tobytes()  # no header, C order
    t[0, 0] = 42.0  # writes reach the file
    assert MemoryMappedTensor.from_filename(t.filename, torch.float32, [2, 3])[0, 0] == 42.0


@pytest.mark.parametrize("dtype", [torch.bool, torch.uint8, torch.int32, torch.float64,
                                   torch.bfloat16, torch.complex64])
def test_dtypes_round_trip(tmp_path, dtype):
    source = (torch.arange(12) % 3).to(dtype).reshape(3, 4)
    t = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "x.memmap")
    again = MemoryMappedTensor.from_filename(tmp_path / "x.memmap", dtype, (3, 4))
    assert again.dtype == dtype and torch.equal(again, source)
    assert os.path.getsize(t.filename) == source.numel() * source.element_size()


def test_non_contiguous_and_zero_dim_sources(tmp_path):
    source = torch.arange(6).reshape(2, 3).t()
    t = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "t.memmap")
    assert torch.equal(t, source) and t.is_contiguous()
    scalar = MemoryMappedTensor.from_tensor(torch.tensor(3.5), filename=tmp_path / "s.memmap")
    assert scalar.shape == () and scalar.item() == 3.5


def test_saved_bytes_resolve_views_and_lazy_bits(tmp_path):
    """What the fast path to the raw bytes cannot see (a conjugate or negative bit, a
    strided view, bfloat16, a tensor with grad) is written resolved, in C order."""
    from tensordict import TensorDict

    z = torch.tensor([1 + 2j, 3 - 4j, -5j], dtype=torch.complex64)
    grad = torch.arange(3.0, requires_grad=True)
    sources = {"conj": z.conj(), "neg": torch.neg(z.conj()), "strided": torch.arange(6.0)[::2],
               "bf16": torch.tensor([1.5, -2.0, 3.0], dtype=torch.bfloat16), "grad": grad,
               "int": torch.tensor([7, 8, 9], dtype=torch.int16)}
    TensorDict(sources, [3]).memmap(tmp_path)
    for key, value in sources.items():
        expected = value.detach().resolve_conj().resolve_neg().contiguous()
        raw = (tmp_path / f"{key}.memmap").read_bytes()
        assert raw == expected.view(torch.uint8).numpy().tobytes(), key


def test_from_tensor_existing_file_and_existing_memmap(tmp_path):
    path = tmp_path / "t.memmap"
    t = MemoryMappedTensor.from_tensor(torch.zeros(3), filename=path)
    with pytest.raises(RuntimeError, match="already exists"):
        MemoryMappedTensor.from_tensor(torch.ones(3), filename=path)
    assert MemoryMappedTensor.from_tensor(t, filename=path) is t  # already there
    with pytest.raises(RuntimeError, match="copy_existing=True"):
        MemoryMappedTensor.from_tensor(t, filename=tmp_path / "u.memmap")
    moved = MemoryMappedTensor.from_tensor(t, filename=tmp_path / "u.memmap", copy_existing=True)
    assert moved.filename.endswith("u.memmap") and torch.equal(moved, t)
    rewritten = MemoryMappedTensor.from_tensor(torch.ones(3), filename=path, existsok=True)
    assert torch.equal(rewritten, torch.ones(3))
    assert torch.equal(t, torch.ones(3))  # same size: rewritten in place, readers see it
    resized = MemoryMappedTensor.from_tensor(torch.full((2,), 5.0), filename=path,
                                             existsok=True)
    assert torch.equal(resized, torch.full((2,), 5.0)) and os.path.getsize(path) == 8
    assert torch.equal(t, torch.ones(3))  # a new file: the old map is never truncated


def test_from_tensor_refuses_grad_and_copy_data_false(tmp_path):
    with pytest.raises(RuntimeError, match="requires_grad"):
        MemoryMappedTensor.from_tensor(torch.zeros(2, requires_grad=True))
    template = torch.ones(2, 3).expand(1000, 2, 3)
    t = MemoryMappedTensor.from_tensor(template, filename=tmp_path / "big.memmap",
                                       copy_data=False)
    assert t.shape == (1000, 2, 3) and t.sum() == 0


def test_factories():
    assert MemoryMappedTensor.zeros(2, 3).shape == (2, 3)
    assert MemoryMappedTensor.zeros((2, 3)).shape == (2, 3)
    assert MemoryMappedTensor.zeros(shape=[2, 3], dtype=torch.int32).dtype == torch.int32
    assert torch.equal(MemoryMappedTensor.ones(2), torch.ones(2))
    assert torch.equal(MemoryMappedTensor.full(2, 3, fill_value=3.5), torch.full((2, 3), 3.5))
    with pytest.raises(TypeError):
        MemoryMappedTensor.full((2,), 3.5)  # fill_value is keyword-only
    like = torch.arange(4, dtype=torch.int16)
    assert torch.equal(MemoryMappedTensor.zeros_like(like), torch.zeros_like(like))
    assert torch.equal(MemoryMappedTensor.ones_like(like), torch.ones_like(like))
    assert torch.equal(MemoryMappedTensor.full_like(like, 7), torch.full_like(like, 7))
    assert MemoryMappedTensor.empty_like(like).dtype == torch.int16
    with pytest.raises(RuntimeError, match="Only CPU"):
        MemoryMappedTensor.ones(2, device="meta")


def test_factories_with_filename(tmp_path):
    t = MemoryMappedTensor.ones(2, 2, filename=tmp_path / "o.memmap")
    assert t.filename == str(tmp_path / "o.memmap")
    with pytest.raises(RuntimeError, match="already exists"):
        MemoryMappedTensor.zeros(2, 2, filename=tmp_path / "o.memmap")
    z = MemoryMappedTensor.zeros(2, 2, filename=tmp_path / "o.memmap", existsok=True)
    assert z.sum() == 0


def test_anonymous_has_no_filename():
    t = MemoryMappedTensor.zeros(3)
    with pytest.raises(RuntimeError, match="no file associated"):
        t.filename


def test_from_filename_errors_name_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.memmap"):
        MemoryMappedTensor.from_filename(tmp_path / "nope.memmap", torch.float32, [2])
    assert not (tmp_path / "nope.memmap").exists()  # never created by a read
    (tmp_path / "short.memmap").write_bytes(b"\0" * 7)
    with pytest.raises(ValueError, match="short.memmap is truncated"):
        MemoryMappedTensor.from_filename(tmp_path / "short.memmap", torch.float32, [2])


def test_from_filename_read_only_mode(tmp_path):
    t = MemoryMappedTensor.from_tensor(torch.arange(3.0), filename=tmp_path / "r.memmap")
    private = MemoryMappedTensor.from_filename(t.filename, torch.float32, [3], mode="r")
    private.fill_(9.0)
    assert private.tolist() == [9.0] * 3 and t.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="mode"):
        MemoryMappedTensor.from_filename(t.filename, torch.float32, [3], mode="x")


def test_from_storage(tmp_path):
    t = MemoryMappedTensor.from_tensor(torch.arange(6.0), filename=tmp_path / "s.memmap")
    view = MemoryMappedTensor.from_storage(t.untyped_storage(), shape=[2, 3],
                                           dtype=torch.float32, index=1)
    assert torch.equal(view, torch.tensor([3.0, 4.0, 5.0])) and view.filename == t.filename
    with pytest.raises(ValueError, match="does not map"):
        MemoryMappedTensor.from_storage(t.untyped_storage(), filename=tmp_path / "other")


def test_views_stay_memory_mapped_ops_do_not(tmp_path):
    t = MemoryMappedTensor.from_tensor(torch.arange(6.0).reshape(2, 3),
                                       filename=tmp_path / "v.memmap")
    for view in (t[1], t[:, 1], t[0:1], *t.unbind(0), *t.split(1), *t.chunk(2)):
        assert type(view) is MemoryMappedTensor and view.filename == t.filename
    for result in (t + 1, t.sum(), t.clone(), t[torch.tensor([0, 1])], t[t > 2], t.view(-1)):
        assert type(result) is torch.Tensor
    t[1][2] = -1.0  # a write through a view reaches the file
    assert MemoryMappedTensor.from_filename(t.filename, torch.float32, [2, 3])[1, 2] == -1.0
    assert type(copy.deepcopy(t)) is torch.Tensor and torch.equal(copy.deepcopy(t), t)
    detached = t.detach()  # a view without history: still the file (nn.Parameter needs it)
    assert type(detached) is MemoryMappedTensor and detached.filename == t.filename


def test_rows_picked_by_a_long_index_match_torch_indexing(tmp_path):
    data = torch.arange(20.0).reshape(5, 4)
    t = MemoryMappedTensor.from_tensor(data, filename=tmp_path / "r.memmap")
    for index in ([4, 0, 0, 2], [-1, 1], [], [[0, 1], [4, 3]]):
        index = torch.tensor(index, dtype=torch.int64)
        got = t[index]
        assert type(got) is torch.Tensor and torch.equal(got, data[index])
    got = t[torch.tensor([3, 1], dtype=torch.int32)]
    assert type(got) is torch.Tensor and torch.equal(got, data[[3, 1]])
    for bad in ([5], [-6], [0, 7]):
        with pytest.raises(IndexError, match="out of bounds for dimension 0 with size 5"):
            t[torch.tensor(bad)]
    scalar = MemoryMappedTensor.from_tensor(torch.tensor(1.0), filename=tmp_path / "s.memmap")
    with pytest.raises(IndexError):
        scalar[torch.tensor([0])]
    rows = t[torch.tensor([1])]
    rows += 100  # a copy: the file is unchanged
    assert torch.equal(t[1], data[1])


def test_plain_pickle_sends_the_file_name_not_the_data(tmp_path):
    t = MemoryMappedTensor.from_tensor(torch.zeros(1000, 100), filename=tmp_path / "p.memmap")
    view = t[10:20, 5]
    payload = pickle.dumps(view)
    assert len(payload) < 1000  # 400 kB of data are not in there
    back = pickle.loads(payload)
    assert type(back) is MemoryMappedTensor and back.shape == view.shape
    back.fill_(3.0)  # same file
    assert torch.equal(t[10:20, 5], torch.full((10,), 3.0))
    assert t[9, 5] == 0 and t[10, 4] == 0


def test_anonymous_refuses_plain_pickle():
    with pytest.raises(TypeError, match="multiprocessing"):
        pickle.dumps(MemoryMappedTensor.zeros(2))


@pytest.mark.parametrize("method", ["fork", "spawn"])
@pytest.mark.parametrize("anonymous", [True, False])
def test_shared_with_another_process(tmp_path, anonymous, method):
    filename = None if anonymous else tmp_path / "shared.memmap"
    t = MemoryMappedTensor.zeros(4, filename=filename)
    assert t.is_shared() or not anonymous  # (anonymous: shared memory)
    ctx = mp.get_context(method)
    queue, done = ctx.Queue(), ctx.Queue()
    proc = ctx.Process(target=fill_from_queue, args=(queue, done))
    proc.start()
    queue.put(t)
    assert done.get(timeout=60) == "MemoryMappedTensor"
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert torch.equal(t, torch.full((4,), 7.0))


def test_reading_many_rows_opens_no_files(tmp_path):
    data = MemoryMappedTensor.from_tensor(torch.arange(200_000.0).reshape(100_000, 2),
                                          filename=tmp_path / "rows.memmap")
    gc.collect()  # files other tests left to the collector are not counted
    before = _open_fds()
    rows = torch.randint(0, 100_000, (100_000,))
    total = 0.0
    for start in range(0, 100_000, 1000):  # single rows and gathers
        total += data[int(rows[start])].sum().item()
        total += data[rows[start: start + 1000]].sum().item()
    assert total > 0
    reopened = [MemoryMappedTensor.from_filename(tmp_path / "rows.memmap", torch.float32,
                                                 [100_000, 2]) for _ in range(100)]
    assert len(reopened) == 100
    assert _open_fds() <= before


def test_shared_storage_without_memfd_falls_back_to_torch(monkeypatch):
    """Where the memory file cannot be made (not Linux, a sandbox forbidding it), the
    storage still comes zero-filled and shared, from torch's own allocator."""
    def refuse(*args):
        raise OSError("memfd_create is not allowed here")

    monkeypatch.setattr(os, "memfd_create", refuse)
    storage = shared_storage(16)
    assert storage.is_shared() and bytes(storage) == bytes(16)
    t = MemoryMappedTensor.empty(2, 3)
    assert t.is_shared() and torch.equal(t, torch.zeros(2, 3))
