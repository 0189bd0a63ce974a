"""TensorDict.map and map_iter with real worker processes (fork: fast to start; spawn is
covered by integration_tests/test_map_seed_example.py)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from tensordict import TensorDict
from tensordict._map import _chunk_indices

FORK = {"mp_start_method": "fork", "num_workers": 2}


@pytest.fixture(autouse=True)
def no_leftover_workers():
    yield
    assert multiprocessing.active_children() == []


def data(n: int = 10) -> TensorDict:
    return TensorDict({
        "a": torch.arange(float(n)),
        "nested": {"b": torch.arange(2.0 * n).view(n, 2), "i": torch.arange(n)},
        "text": "hello",
    }, batch_size=[n])


def double(td):
    return td.apply(lambda x: x * 2)


def leaf_a(td):
    return td["a"] + 1


def increment(td):
    td["a"].add_(1)
    td["nested", "b"].mul_(-1)


def random_values(td):
    return torch.rand(td.shape)


def fail_on_five(td):
    if (td["a"] == 5).any():
        raise ValueError(f"bad chunk {td['a'].tolist()}")
    return td


def mixed(td):
    return None if td["a"][0] == 0 else td


def threads(td):
    return torch.full(td.shape, torch.get_num_threads())


def sees_text(td):
    assert td["text"] == "hello", td["text"]
    return td["a"]


def assert_leaves_equal(got: TensorDict, want: TensorDict) -> None:
    assert got.batch_size == want.batch_size
    for key in want.keys(True, True):
        if isinstance(want.get(key), torch.Tensor):
            assert torch.equal(got.get(key), want.get(key)), key


def test_chunk_indices_plans():
    gen = torch.Generator()
    assert _chunk_indices(7, 0, 3, None, 2, False, gen) == [slice(0, 3), slice(3, 6),
                                                             slice(6, 7)]
    assert _chunk_indices(7, 0, None, 3, 2, False, gen) == [slice(0, 3), slice(3, 6),
                                                             slice(6, 7)]
    assert _chunk_indices(7, 0, None, None, 2, False, gen) == [slice(0, 4), slice(4, 7)]
    assert _chunk_indices(3, 0, 0, None, 2, False, gen) == [0, 1, 2]
    assert _chunk_indices(2, 1, 0, None, 2, False, gen) == [(slice(None), 0), (slice(None), 1)]
    shuffled = _chunk_indices(7, 0, 3, None, 2, True, torch.Generator().manual_seed(0))
    assert sorted(torch.cat(shuffled).tolist()) == list(range(7))
    assert [len(part) for part in shuffled] == [3, 3, 1]


@pytest.mark.parametrize("chunks", [{"chunksize": 3}, {"num_chunks": 4}, {}, {"chunksize": 100}])
def test_map_concatenates_results_in_order(chunks):
    td = data()
    assert_leaves_equal(td.map(double, **FORK, **chunks), double(td))


def test_map_chunksize_zero_passes_elements_and_stacks():
    td = data(5)
    out = td.map(double, chunksize=0, **FORK)
    assert_leaves_equal(out, double(td))


def test_map_along_dim_one():
    td = TensorDict(a=torch.arange(12.0).view(3, 4), n={"b": torch.ones(3, 4, 2)},
                    batch_size=[3, 4])
    assert_leaves_equal(td.map(double, dim=1, chunksize=1, **FORK), double(td))
    assert_leaves_equal(td.map(double, dim=-1, chunksize=0, **FORK), double(td))


def test_map_tensor_results_and_non_tensor_inputs():
    td = data()
    assert torch.equal(td.map(leaf_a, chunksize=4, **FORK), td["a"] + 1)
    assert torch.equal(td.map(sees_text, chunksize=4, **FORK), td["a"])


def test_map_in_place_on_plain_tensordict_goes_through_shared_memory():
    td = data()
    expected_a, expected_b = td["a"] + 1, -td["nested", "b"]
    assert td.map(increment, chunksize=3, **FORK) is None
    assert torch.equal(td["a"], expected_a) and torch.equal(td["nested", "b"], expected_b)
    assert td["a"].is_shared() and td["nested", "i"].is_shared()


def test_map_in_place_on_memmapped_tensordict_writes_the_files(tmp_path):
    pytest.importorskip("tensordict.memmap")
    mm = data().memmap(tmp_path / "ds")
    storage = mm["a"].untyped_storage().data_ptr()
    assert mm.map(increment, chunksize=0, **FORK) is None
    again = TensorDict.load_memmap(tmp_path / "ds")
    assert torch.equal(again["a"], torch.arange(10.0) + 1)
    assert torch.equal(again["nested", "b"], -torch.arange(20.0).view(10, 2))
    assert mm["a"].untyped_storage().data_ptr() == storage  # still the file's map
    assert torch.equal(mm["a"], again["a"])


@pytest.mark.parametrize("share", [True, False])
def test_map_writes_into_out(share):
    td = data()
    out = double(td).zero_()
    if share:
        out.apply(lambda x: x.share_memory_())
    assert td.map(double, out=out, chunksize=3, **FORK) is out
    assert_leaves_equal(out, double(td))


@pytest.mark.parametrize("share", [True, False])
def test_map_writes_tensor_results_into_a_tensor_out(share):
    td = data()
    out = torch.zeros(10)
    if share:
        out.share_memory_()
    assert td.map(leaf_a, out=out, chunksize=4, **FORK) is out
    assert torch.equal(out, td["a"] + 1)


def test_map_iter_yields_chunks_in_order():
    td = data()
    parts = list(td.map_iter(double, chunksize=4, **FORK))
    assert [p.batch_size[0] for p in parts] == [4, 4, 2]
    assert torch.equal(torch.cat([p["a"] for p in parts]), td["a"] * 2)


def test_map_iter_shuffle_covers_every_element_reproducibly():
    td = data()

    def seen(seed):
        gen = torch.Generator().manual_seed(seed)
        return [p["a"].tolist() for p in td.map_iter(double, chunksize=3, shuffle=True,
                                                    generator=gen, **FORK)]

    first = seen(0)
    assert sorted(sum(first, [])) == (td["a"] * 2).tolist()
    assert first == seen(0) and first != seen(1)
    assert sum(first, []) != (td["a"] * 2).tolist()


def test_map_generator_seeds_chunks_reproducibly():
    td = data()
    one = td.map(random_values, chunksize=2, generator=torch.Generator().manual_seed(0), **FORK)
    two = td.map(random_values, chunksize=2, generator=torch.Generator().manual_seed(0), **FORK)
    other = td.map(random_values, chunksize=2, generator=torch.Generator().manual_seed(1), **FORK)
    assert torch.equal(one, two) and not torch.equal(one, other)
    assert not torch.equal(one[:2], one[2:4])  # chunks get different seeds


def test_map_error_in_worker_surfaces_with_its_traceback():
    with pytest.raises(ValueError, match=r"bad chunk \[4.0, 5.0\]") as info:
        data().map(fail_on_five, chunksize=2, **FORK)
    assert "fail_on_five" in str(info.value.__cause__)  # the worker's traceback


def test_map_with_a_given_pool_leaves_it_open():
    with multiprocessing.get_context("fork").Pool(2) as pool:
        td = data()
        assert_leaves_equal(td.map(double, pool=pool, chunksize=3), double(td))
        assert pool.apply(abs, (-3,)) == 3


def test_map_worker_threads_and_max_tasks_per_child():
    out = data().map(threads, chunksize=1, worker_threads=2, max_tasks_per_child=2, **FORK)
    assert (out == 2).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"chunksize": 2, "num_chunks": 2}, "not both"),
    ({"chunksize": -1}, "chunksize must be >= 0"),
    ({"num_chunks": 0}, "num_chunks >= 1"),
    ({"dim": 1}, "out of range"),
])
def test_map_argument_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        data().map(double, **FORK, **kwargs)


def test_map_refuses_zero_dim_tensordict():
    with pytest.raises(ValueError, match="at least one batch dim"):
        TensorDict(a=torch.zeros(())).map(double, **FORK)


def test_map_mixing_none_and_results_is_an_error():
    with pytest.raises(RuntimeError, match="None for some chunks"):
        data().map(mixed, chunksize=5, **FORK)


def test_map_progress_bar(capfd):
    pytest.importorskip("tqdm")
    data().map(double, chunksize=2, pbar=True, **FORK)
    assert "5/5" in capfd.readouterr().err


def _run_script(code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kwargs)


def test_map_without_tqdm_warns_and_runs():
    proc = _run_script("""
        import sys; sys.modules["tqdm"] = None
        import torch, warnings
        from tensordict import TensorDict
        def double(td):
            return td * 2
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = TensorDict(a=torch.ones(4), batch_size=[4]).map(
                double, num_workers=2, pbar=True, mp_start_method="fork")
        print(out["a"].tolist(), [str(w.message) for w in caught if "tqdm" in str(w.message)])
    """)
    stdout, stderr = proc.communicate(timeout=120)
    assert "[2.0, 2.0, 2.0, 2.0]" in stdout and "needs tqdm" in stdout, stderr


def test_map_ctrl_c_stops_the_pool(tmp_path):
    pids = tmp_path / "pids"
    proc = _run_script(f"""
        import os, signal, time, torch
        from tensordict import TensorDict
        # a shell without job control starts background jobs with SIGINT ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
        def slow(td):
            with open({str(pids)!r}, "a") as f:
                f.write(f"{{os.getpid()}}\\n")
            time.sleep(60)
        print("started", flush=True)
        TensorDict(a=torch.ones(8), batch_size=[8]).map(
            slow, num_workers=2, chunksize=1, mp_start_method="fork")
    """)
    assert proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 60
    while (not pids.exists() or len(pids.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode != 0 and "KeyboardInterrupt" in stderr
    workers = [int(p) for p in pids.read_text().split()]
    assert len(workers) == 2
    time.sleep(0.5)
    assert not [p for p in workers if os.path.exists(f"/proc/{p}")], "workers left behind"
