"""Datasets larger than memory: the seeds' 1,000,000-image example on sparse files, and
random access that keeps the number of open files flat."""

from __future__ import annotations

import os

import torch

from tensordict import MemoryMappedTensor, TensorDict


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def _disk_bytes(folder) -> int:
    return sum(os.stat(os.path.join(root, name)).st_blocks * 512
               for root, _, names in os.walk(folder) for name in names)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_million_images_allocated_as_sparse_files(tmp_path):
    # the seeds' example: allocate ~49 GB on disk, fill a few chunks, read 3 items
    data = TensorDict({
        "images": torch.zeros((128, 128, 3), dtype=torch.uint8),
        "labels": torch.zeros((), dtype=torch.int)}, batch_size=[])
    data = data.expand(1000000)
    rss_before = _rss_bytes()
    data = data.memmap_like(tmp_path / "dataset")
    assert os.path.getsize(tmp_path / "dataset" / "images.memmap") == 1000000 * 128 * 128 * 3
    for start in (0, 10000, 500000):  # "fill your dataset here", a chunk at a time
        chunk = torch.arange(start, start + 100)
        data["images"][start: start + 100] = (chunk % 251).to(torch.uint8).view(-1, 1, 1, 1)
        data["labels"][start: start + 100] = chunk.to(torch.int)
    items = data[torch.tensor([1, 10000, 500000])]
    assert items.batch_size == (3,) and items["images"].shape == (3, 128, 128, 3)
    assert items["labels"].tolist() == [1, 10000, 500000]
    assert items["images"][:, 5, 7, 2].tolist() == [1, 10000 % 251, 500000 % 251]
    assert data["images"][999999].sum() == 0
    assert _disk_bytes(tmp_path) < 100 * 2**20  # a few MB of 49 GB were written
    assert _rss_bytes() - rss_before < 300 * 2**20  # nothing was materialised
    reloaded = TensorDict.load_memmap(tmp_path / "dataset")
    assert reloaded["labels"][10050].item() == 10050


def test_random_rows_keep_open_files_flat(tmp_path):
    n = 100_000
    TensorDict({"obs": torch.arange(n * 4, dtype=torch.float32).reshape(n, 4),
                "meta": {"step": torch.arange(n)}}, batch_size=[n]).memmap(tmp_path)
    data = TensorDict.load_memmap(tmp_path)
    before = _open_fds()
    seen = 0
    for _ in range(10):  # 100,000 random rows, gathered 10,000 at a time
        rows = torch.randint(0, n, (10_000,))
        batch = data[rows]
        assert torch.equal(batch["meta", "step"], rows)
        seen += len(batch)
    for row in torch.randint(0, n, (1000,)).tolist():  # and single rows
        assert data[row]["obs"][0].item() == row * 4
    assert seen == n and _open_fds() == before
    for _ in range(50):  # reloading maps again without keeping descriptors open
        TensorDict.load_memmap(tmp_path)
    assert _open_fds() == before
    assert isinstance(data["obs"][5:9], MemoryMappedTensor)
