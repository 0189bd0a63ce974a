"""TensorDict.map over a memory-mapped dataset of 10,000 images, beside a plain loop.

Groups:

* ``map-10k-images``: flip + 4 passes of a 5x5 blur + per-image normalisation of
  10,000 ``3x32x32`` uint8 images read from a memory-mapped TensorDict and written into a
  shared-memory ``out``, with 1 and 2 worker processes (fork), beside the same chunks
  processed by a plain Python loop in this process. Throughput ratio = loop time / map time.
* ``map-chunk-overhead``: a function doing nothing over 1,000 chunks of 10 elements with
  2 workers, beside the same loop in-process: (map - loop) / 1,000 is the cost per chunk,
  pool start-up included.

Every process uses one torch thread, so the ratios measure processes, not threads.
"""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict

N, CHUNK = 10_000, 250
BLUR, PASSES = torch.ones(3, 1, 5, 5) / 25, 4


def preprocess(td: TensorDict) -> TensorDict:
    images = td["images"].flip(-1).float().div_(255)
    for _ in range(PASSES):
        images = torch.nn.functional.conv2d(images, BLUR, padding=2, groups=3)
    mean = images.mean(dim=(-1, -2), keepdim=True)
    std = images.std(dim=(-1, -2), keepdim=True)
    return TensorDict(images=(images - mean) / (std + 1e-6), labels=td["labels"] // 10,
                      batch_size=td.batch_size)


def nothing(td: TensorDict) -> None:
    return None


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    data = TensorDict(images=torch.randint(0, 256, (N, 3, 32, 32), dtype=torch.uint8,
                                           generator=gen),
                      labels=torch.randint(0, 100, (N,), generator=gen), batch_size=[N])
    try:
        return data.memmap(tmp_path_factory.mktemp("map") / "dataset")
    except AttributeError:  # tensordict-memmap not installed: shared memory instead
        return data.apply(lambda x: x.share_memory_())


@pytest.fixture
def out():
    return TensorDict(images=torch.empty(N, 3, 32, 32), labels=torch.empty(N, dtype=torch.int64),
                      batch_size=[N]).apply(lambda x: x.share_memory_())


def check(out: TensorDict, dataset: TensorDict) -> None:
    for i in (0, N // 2, N - 1):
        expected = preprocess(dataset[i:i + 1])
        assert torch.allclose(out["images"][i], expected["images"][0], atol=1e-5)
        assert out["labels"][i] == expected["labels"][0]


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.benchmark(group="map-10k-images")
def test_map_images(benchmark, dataset, out, workers):
    benchmark.pedantic(dataset.map, args=(preprocess,),
                       kwargs={"num_workers": workers, "chunksize": CHUNK, "out": out,
                               "mp_start_method": "fork"}, rounds=2, warmup_rounds=0)
    check(out, dataset)


@pytest.mark.benchmark(group="map-10k-images")
def test_map_images_loop_baseline(benchmark, dataset, out):
    def loop():
        for start in range(0, N, CHUNK):
            out[start:start + CHUNK] = preprocess(dataset[start:start + CHUNK])

    benchmark.pedantic(loop, rounds=2, warmup_rounds=0)
    check(out, dataset)


@pytest.mark.benchmark(group="map-chunk-overhead")
def test_map_chunk_overhead(benchmark, dataset):
    result = benchmark.pedantic(dataset.map, args=(nothing,),
                                kwargs={"num_workers": 2, "chunksize": 10,
                                        "mp_start_method": "fork"}, rounds=3)
    assert result is None


@pytest.mark.benchmark(group="map-chunk-overhead")
def test_map_chunk_overhead_loop_baseline(benchmark, dataset):
    def loop():
        for start in range(0, N, 10):
            nothing(dataset[start:start + 10])

    benchmark.pedantic(loop, rounds=3)
