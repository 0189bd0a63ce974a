"""Saving and loading with tensordict-memmap beside torch.save / torch.load, and random
access into a memory-mapped dataset beside loading one file per item.

Groups (``*_baseline`` is the reference in each):

* ``memmap-save``: the parameters of a ~200 MB model (100 tensors), ``td.memmap(path)``
  with 0 and 2 threads, vs ``torch.save(state_dict)``.
* ``memmap-load``: ``TensorDict.load_memmap`` (maps the files) vs ``torch.load``.
* ``memmap-random-rows``: 64 random rows of a 1,000,000-row memmapped dataset with
  ``td[idx]`` vs ``torch.load`` of 64 separate per-item files.
* ``disk-read``: one uncached (``O_DIRECT``) sequential read of 64 MiB, for the raw disk
  bandwidth (``extra_info["MB/s"]``); compare with the bytes ``td[idx]`` delivers.
"""

from __future__ import annotations

import os

import pytest
import torch
from torch import nn

from tensordict import TensorDict

ROWS = 1_000_000
ITEM_FILES = 512


@pytest.fixture(scope="module")
def model_params():
    torch.manual_seed(0)
    model = nn.Sequential(*[nn.Linear(1024, 1024) for _ in range(50)])  # 50 x 4 MiB + biases
    state = {k: v.detach() for k, v in model.state_dict().items()}
    return state, TensorDict(state).unflatten_keys(".")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return tmp_path_factory.mktemp("bench_memmap")


@pytest.mark.benchmark(group="memmap-save")
def test_memmap_save(benchmark, model_params, folder):
    _, params = model_params
    benchmark(params.memmap, folder / "save0")


@pytest.mark.benchmark(group="memmap-save")
def test_memmap_save_2_threads(benchmark, model_params, folder):
    _, params = model_params
    benchmark(params.memmap, folder / "save2", num_threads=2)


@pytest.mark.benchmark(group="memmap-save")
def test_memmap_save_baseline(benchmark, model_params, folder):
    state, _ = model_params
    benchmark(torch.save, state, folder / "state.pt")


@pytest.fixture(scope="module")
def saved_model(model_params, folder):
    state, params = model_params
    params.memmap(folder / "load")
    torch.save(state, folder / "load.pt")
    return folder


@pytest.mark.benchmark(group="memmap-load")
def test_memmap_load(benchmark, saved_model):
    loaded = benchmark(TensorDict.load_memmap, saved_model / "load")
    assert loaded["49", "weight"].shape == (1024, 1024)


@pytest.mark.benchmark(group="memmap-load")
def test_memmap_load_baseline(benchmark, saved_model):
    loaded = benchmark(torch.load, saved_model / "load.pt", weights_only=True)
    assert loaded["49.weight"].shape == (1024, 1024)


@pytest.fixture(scope="module")
def dataset(folder):
    """1,000,000 rows of a 16x16 uint8 image and an int64 label (~264 MB)."""
    images = (torch.arange(ROWS * 256, dtype=torch.int64) % 251).to(torch.uint8)
    data = TensorDict({"images": images.reshape(ROWS, 16, 16), "labels": torch.arange(ROWS)},
                      batch_size=[ROWS]).memmap(folder / "dataset", num_threads=2)
    del images
    for i in range(ITEM_FILES):  # the one-file-per-item layout
        torch.save({"images": data["images"][i].clone(), "labels": data["labels"][i].clone()},
                   folder / f"item{i}.pt")
    for path in folder.rglob("*"):  # a dataset is read long after it was written: flush it
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
    return TensorDict.load_memmap(folder / "dataset"), folder


@pytest.fixture
def one_thread():
    """Data loading runs with one intra-op thread, as in a DataLoader worker (on a busy
    2-core machine, waking a second OpenMP thread costs ~30 ms per op)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.mark.benchmark(group="memmap-random-rows")
def test_memmap_random_rows(benchmark, dataset, one_thread):
    data, _ = dataset
    generator = torch.Generator().manual_seed(0)

    def gather():
        return data[torch.randint(0, ROWS, (64,), generator=generator)]

    batch = benchmark(gather)
    assert batch["images"].shape == (64, 16, 16)


@pytest.mark.benchmark(group="memmap-random-rows")
def test_memmap_random_rows_baseline(benchmark, dataset, one_thread):
    _, folder = dataset
    generator = torch.Generator().manual_seed(0)

    def load_items():
        rows = torch.randint(0, ITEM_FILES, (64,), generator=generator).tolist()
        items = [torch.load(folder / f"item{i}.pt", weights_only=True) for i in rows]
        return {key: torch.stack([item[key] for item in items]) for key in items[0]}

    batch = benchmark(load_items)
    assert batch["images"].shape == (64, 16, 16)


@pytest.mark.benchmark(group="disk-read")
def test_disk_read_baseline(benchmark, dataset):
    """Raw disk bandwidth: 64 MiB read with O_DIRECT (no page cache)."""
    _, folder = dataset
    path = folder / "dataset" / "images.memmap"
    size = 64 * 2**20
    block = 4 * 2**20
    import mmap

    buffer = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT needs

    def read_direct():
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
        try:
            done = 0
            while done < size:
                done += os.readv(fd, [buffer])
        finally:
            os.close(fd)
        return done

    assert benchmark(read_direct) == size
    if benchmark.stats is not None:  # None with --benchmark-disable (one plain call)
        benchmark.extra_info["MB/s"] = size / benchmark.stats.stats.mean / 1e6
