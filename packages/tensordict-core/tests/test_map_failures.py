"""TensorDict.map / map_iter never hang: a worker that dies or hangs, Ctrl-C and a killed
caller end the call (or the workers) promptly, with fork and with spawn.

Every worker records its pid (and the time it reaches the failure) in files under
``tmp_path``, so the tests can check that no worker process is left behind. Spawned
workers import torch first: under load that takes seconds, so the time limits below are
measured from the moment of the failure, not from the start of the call.
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import torch

from tensordict import TensorDict

sys.path.insert(0, str(Path(__file__).parent))  # spawned workers import the helpers by name
from map_failure_workers import fail_on_last, sleep_forever  # noqa: E402

METHODS = ["fork", "spawn"]
WORKERS = {"fork": 2, "spawn": 1}  # one spawned worker: its import of torch is what is slow
TIMEOUT = 30
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self"),
                                reason="reads worker processes from /proc")


@pytest.fixture(autouse=True)
def no_leftover_workers():
    yield
    assert multiprocessing.active_children() == []


def _records(folder: Path, name: str) -> list[tuple[int, float]]:
    path = folder / name
    lines = path.read_text().split("\n") if path.exists() else []
    return [(int(pid), float(at)) for pid, at in (line.split() for line in lines if line)]


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a parent that does not reap is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for(condition, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _assert_workers_gone(folder: Path, seconds: float = 3.0) -> None:
    pids = {pid for name in ("seen", "failing") for pid, _ in _records(folder, name)}
    assert pids, "no worker recorded itself"
    assert _wait_for(lambda: not any(_alive(pid) for pid in pids), seconds), \
        f"workers left behind: {[pid for pid in pids if _alive(pid)]}"


def data(n: int = 6) -> TensorDict:
    return TensorDict(a=torch.arange(float(n)), batch_size=[n])


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("method, how, signal_name", [
    ("fork", "exit", "code 3"), ("fork", "segv", "SIGSEGV"), ("spawn", "exit", "code 3")])
def test_dead_worker_raises_and_keeps_written_chunks(tmp_path, method, how, signal_name):
    pytest.importorskip("tensordict.memmap")
    out = TensorDict(a=torch.zeros(6), batch_size=[6]).memmap_(tmp_path / "out")
    fn = functools.partial(fail_on_last, str(tmp_path), how)
    with pytest.raises(RuntimeError, match=rf"worker process \d+ .*{signal_name} while "
                                           r"running chunk 5 of 6") as info:
        data().map(fn, num_workers=WORKERS[method], chunksize=1, out=out,
                   mp_start_method=method)
    raised = time.time()
    [(dead, died)] = _records(tmp_path, "failing")
    assert str(dead) in str(info.value) and raised - died < 3
    assert torch.equal(out["a"][:5], torch.arange(5.0) * 2)  # the finished chunks stay
    assert torch.equal(TensorDict.load_memmap(tmp_path / "out")["a"][:5], torch.arange(5.0) * 2)
    _assert_workers_gone(tmp_path)


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("method", METHODS)
def test_stuck_worker_times_out(tmp_path, method):
    fn = functools.partial(fail_on_last, str(tmp_path), "hang")
    with pytest.raises(TimeoutError, match=r"chunk 5 of 6 ran longer than timeout=1.0 s"):
        data().map(fn, num_workers=WORKERS[method], chunksize=1, timeout=1.0,
                   mp_start_method=method)
    late = time.time() - _records(tmp_path, "failing")[0][1]
    assert 0.5 < late < 3.0
    _assert_workers_gone(tmp_path)


@pytest.mark.timeout(TIMEOUT)
def test_map_iter_dead_worker_and_timeout(tmp_path):
    fn = functools.partial(fail_on_last, str(tmp_path), "hang")
    got = []
    with pytest.raises(TimeoutError, match="chunk 5 of 6"):
        for part in data().map_iter(fn, num_workers=2, chunksize=1, timeout=0.5,
                                    mp_start_method="fork"):
            got.append(part["a"].item())
    assert got == [0.0, 2.0, 4.0, 6.0, 8.0]
    dies = functools.partial(fail_on_last, str(tmp_path), "exit")
    with pytest.raises(RuntimeError, match="exited with code 3"):
        list(data().map_iter(dies, num_workers=2, chunksize=1, mp_start_method="fork"))


def test_no_timeout_when_chunks_are_quick(tmp_path):
    td = data()
    out = td.map(functools.partial(fail_on_last, str(tmp_path), "none"), num_workers=2,
                 chunksize=7, timeout=30, mp_start_method="fork")
    assert torch.equal(out["a"], td["a"] * 2)


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_timeout_must_be_positive(timeout):
    with pytest.raises(ValueError, match="timeout must be a positive"):
        data().map(torch.clone, num_workers=2, timeout=timeout, mp_start_method="fork")


@pytest.mark.timeout(TIMEOUT)
def test_abandoned_map_iter_terminates_its_workers(tmp_path):
    fn = functools.partial(fail_on_last, str(tmp_path), "hang")
    parts = data().map_iter(fn, num_workers=2, chunksize=1, mp_start_method="fork")
    assert next(parts)["a"].item() == 0.0
    parts.close()
    assert multiprocessing.active_children() == []


@pytest.mark.timeout(TIMEOUT)
def test_given_pool_is_left_open_on_death_and_timeout(tmp_path):
    folder = str(tmp_path)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        with pytest.raises(RuntimeError, match="of the given pool exited with code 3"):
            data().map(functools.partial(fail_on_last, folder, "exit"), chunksize=1, pool=pool)
        assert pool.apply(abs, (-3,)) == 3
        with pytest.raises(TimeoutError, match="in the given pool"):
            data().map(functools.partial(fail_on_last, folder, "hang"), chunksize=1, pool=pool,
                       timeout=0.5)
        assert pool.apply(abs, (-4,)) == 4  # the other worker still serves
        pool.terminate()


def _caller(folder: str, method: str) -> None:
    """A process that runs a map whose workers sleep; it exits 42 on KeyboardInterrupt."""
    # a shell without job control starts background jobs with SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        data(4).map(functools.partial(sleep_forever, folder), num_workers=WORKERS[method],
                    chunksize=1, mp_start_method=method)
    except KeyboardInterrupt:
        os._exit(42)  # skip multiprocessing's exit handler: map itself must clean up
    os._exit(0)


def _start_caller(folder: Path, method: str):
    caller = multiprocessing.get_context("fork").Process(target=_caller,
                                                         args=(str(folder), method))
    caller.start()
    assert _wait_for(lambda: len(_records(folder, "seen")) == WORKERS[method], TIMEOUT - 10), \
        "workers did not start"
    return caller


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("method", METHODS)
def test_ctrl_c_raises_keyboard_interrupt_and_stops_the_workers(tmp_path, method):
    caller = _start_caller(tmp_path, method)
    os.kill(caller.pid, signal.SIGINT)
    caller.join(5)
    assert caller.exitcode == 42
    _assert_workers_gone(tmp_path, seconds=0.5)


@pytest.mark.timeout(TIMEOUT)
@pytest.mark.parametrize("method", METHODS)
def test_workers_exit_when_their_caller_is_killed(tmp_path, method):
    caller = _start_caller(tmp_path, method)
    os.kill(caller.pid, signal.SIGKILL)
    caller.join(5)
    assert caller.exitcode == -signal.SIGKILL
    _assert_workers_gone(tmp_path, seconds=3.0)
