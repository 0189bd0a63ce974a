"""Device moves (CUDA only: skipped without it) beside the same copies on a plain dict of
tensors. Every timed call synchronizes, so the times cover the copies themselves. Each
size is its own group ("small": 50 leaves of 12 floats, "big": 10 leaves of 4 MB).
"""

import pytest
import torch

from tensordict import TensorDict

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

SMALL = {f"k{i}": torch.randn(4, 3) for i in range(50)}
BIG = {f"k{i}": torch.randn(4, 1 << 18) for i in range(10)}  # 10 leaves of 4 MB


def synced(fn):
    def call():
        out = fn()
        torch.cuda.synchronize()
        return out
    return call


def to_each(data, device, **kwargs):
    return {key: value.to(device, **kwargs) for key, value in data.items()}


@pytest.fixture(scope="module")
def on_gpu():
    return {"small": to_each(SMALL, "cuda"), "big": to_each(BIG, "cuda")}


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_cuda(benchmark, size):
    benchmark.group = f"to cuda {size}"
    td = TensorDict(SMALL if size == "small" else BIG, batch_size=[4])
    benchmark(synced(lambda: td.to("cuda")))


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_cuda_baseline(benchmark, size):
    benchmark.group = f"to cuda {size}"
    data = SMALL if size == "small" else BIG
    benchmark(synced(lambda: to_each(data, "cuda")))


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_cuda_non_blocking_baseline(benchmark, size):
    benchmark.group = f"to cuda {size}"
    data = SMALL if size == "small" else BIG
    benchmark(synced(lambda: to_each(data, "cuda", non_blocking=True)))


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_cpu(benchmark, size, on_gpu):
    benchmark.group = f"to cpu {size}"
    td = TensorDict(on_gpu[size], batch_size=[4])
    benchmark(lambda: td.to("cpu"))


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_cpu_baseline(benchmark, size, on_gpu):
    benchmark.group = f"to cpu {size}"
    benchmark(lambda: to_each(on_gpu[size], "cpu"))


@pytest.mark.parametrize("size", ["small", "big"])
def test_to_cpu_non_blocking_baseline(benchmark, size, on_gpu):
    benchmark.group = f"to cpu {size}"
    benchmark(synced(lambda: to_each(on_gpu[size], "cpu", non_blocking=True)))


@pytest.mark.benchmark(group="pin_memory")
def test_pin_memory(benchmark):
    td = TensorDict(SMALL, batch_size=[4])
    benchmark(td.pin_memory)


@pytest.mark.benchmark(group="pin_memory")
def test_pin_memory_baseline(benchmark):
    benchmark(lambda: {key: value.pin_memory() for key, value in SMALL.items()})


@pytest.mark.benchmark(group="pinned to cuda")
def test_pinned_to_cuda(benchmark):
    td = TensorDict(BIG, batch_size=[4]).pin_memory()
    benchmark(synced(lambda: td.to("cuda", non_blocking=True)))


@pytest.mark.benchmark(group="pinned to cuda")
def test_pinned_to_cuda_baseline(benchmark):
    pinned = {key: value.pin_memory() for key, value in BIG.items()}
    benchmark(synced(lambda: to_each(pinned, "cuda", non_blocking=True)))
