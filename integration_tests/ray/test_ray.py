"""TensorDicts through a real local Ray cluster (tox env ``ray``): exact round trips of
every collection kind, a 256 MB TensorDict handed to an actor without a copy (pickle
protocol 5 out of band: the leaves view Ray's read-only object store), and memory-mapped
TensorDicts passed by reference."""

import os
import pathlib
import sys

import pytest
import torch

ray = pytest.importorskip("ray")

from tensordict import TensorDict  # noqa: E402
from tensordict.memmap import MemoryMappedTensor  # noqa: E402

HERE = pathlib.Path(__file__).parent


@pytest.fixture(scope="module")
def cluster():
    os.environ["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(HERE), os.environ.get("PYTHONPATH")]))
    ray.init(num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, object_store_memory=1 << 30)
    sys.path.insert(0, str(HERE))
    import ray_payloads
    yield ray_payloads
    ray.shutdown()


def _same(a, b):
    assert type(a) is type(b) and a.batch_size == b.batch_size
    if hasattr(a, "tensordicts"):  # a lazy stack (of parts of different shapes)
        assert len(a.tensordicts) == len(b.tensordicts)
        for x, y in zip(a.tensordicts, b.tensordicts):
            _same(x, y)
        return
    assert sorted(map(str, a.keys(True, True))) == sorted(map(str, b.keys(True, True)))
    for key in a.keys(True, True):
        x, y = a.get(key), b.get(key)
        if isinstance(x, torch.Tensor):
            assert x.dtype == y.dtype and torch.equal(x, y), key
        else:
            assert x == y, key


@pytest.mark.parametrize("kind", ["nested", "consolidated", "lazy stack", "tensorclass"])
def test_put_get_and_actor_round_trip(cluster, kind):
    value = cluster.payloads()[kind]
    _same(ray.get(ray.put(value)), value)
    reader = cluster.Reader.remote()
    _same(ray.get(reader.echo.remote(value)), value)
    _same(ray.get(reader.echo.remote(ray.put(value))), value)


def test_leaves_from_the_store_are_read_only(cluster):
    td = ray.get(ray.put(TensorDict(a=torch.zeros(8))))
    assert type(td["a"]).__name__ == "ReadOnlyTensor"
    with pytest.raises(RuntimeError, match="read-only buffer.*clone"):
        td["a"].add_(1)
    with pytest.raises(RuntimeError, match="read-only buffer"):
        td.zero_()
    assert (ray.get(ray.put(td))["a"] == 0).all()
    writable = td.clone()
    writable["a"].add_(1)
    assert (writable["a"] == 1).all()
    reader = cluster.Reader.remote()
    assert ray.get(reader.leaf_types.remote(TensorDict(a=torch.zeros(2)))) == ["ReadOnlyTensor"]


def test_256mb_reaches_an_actor_without_a_copy(cluster):
    """The reader's ray.get takes about the same time at 1 MB and at 256 MB: its leaves
    view the object store (a copy of 256 MB takes tens of milliseconds or more)."""
    reader = cluster.Reader.remote()
    times = {}
    for megabytes in (1, 256):
        td = TensorDict(a=torch.ones(megabytes << 18), b=torch.zeros(10))
        ref = ray.put(td)
        runs = [ray.get(reader.time_get.remote([ref])) for _ in range(3)]
        times[megabytes] = min(seconds for seconds, _ in runs)
        assert {kind for _, kind in runs} == {"ReadOnlyTensor"}
        del ref
    assert times[256] < 10 * max(times[1], 1e-3), times


def test_memmap_backed_passed_by_reference(cluster, tmp_path):
    td = TensorDict(a=torch.arange(6.0), b=torch.ones(3, 2)).memmap_(tmp_path / "td")
    files = {k: v.filename for k, v in td.items()}
    reader = cluster.Reader.remote()
    assert ray.get(reader.memmap_files.remote(td)) == files
    out = ray.get(ray.put(td))
    assert all(isinstance(v, MemoryMappedTensor) for v in out.values())
    assert {k: v.filename for k, v in out.items()} == files
    assert torch.equal(out["a"], td["a"])
