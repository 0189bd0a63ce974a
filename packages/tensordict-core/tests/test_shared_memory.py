"""tensordict.shared_memory: a hand-off through one POSIX shared-memory segment, received
by name in a real child process without a copy, freed when the last user drops it, and
no segment left in /dev/shm after a SIGKILLed child on either side."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.shared_memory import receive, share

pytestmark = pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="needs /dev/shm")


def _exists(name):
    return os.path.exists(os.path.join("/dev/shm", name.lstrip("/")))


def _child(code, *args):
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args],
                            stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)


def test_round_trip_in_process_views_the_segment():
    td = TensorDict(a=torch.arange(6.0).view(2, 3), n={"b": torch.ones(2, dtype=torch.int64)},
                    text="hi", batch_size=[2])
    stack = LazyStackedTensorDict(TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(3)))
    for value in (td, td.consolidate(), stack):
        with share(value) as handle:
            out = receive(handle)
            assert not _exists(handle.name)  # received: the name is gone
        assert type(out) is type(value)
        for x, y in zip(out.values(True, True), value.values(True, True)):
            assert torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y
    with pytest.raises(RuntimeError, match="read-only buffer"):
        out.tensordicts[0]["x"].add_(1)


def test_writable_receive_is_seen_by_the_sender():
    handle = share(TensorDict(a=torch.zeros(4)))
    out = receive(handle.name, writable=True)
    out["a"].fill_(2)
    start = handle._segment.buf.obj  # the sender's mapping
    assert torch.frombuffer(start, dtype=torch.uint8).sum() > 0
    handle.close()
    assert out["a"].tolist() == [2.0] * 4  # still mapped by the receiver
    with pytest.raises(FileNotFoundError):
        receive(handle.name)


def test_child_receives_without_copy_and_nothing_is_left():
    td = TensorDict(a=torch.arange(1 << 20, dtype=torch.float32), b=torch.ones(3))
    handle = share(td)
    child = _child("""
        import sys, torch
        from tensordict.shared_memory import receive
        td = receive(sys.argv[1])
        maps = open("/proc/self/maps").read()
        start = td["a"].data_ptr()
        inside = any(int(lo, 16) <= start < int(hi, 16) and sys.argv[1] in line
                     for line in maps.splitlines() for lo, hi in [line.split()[0].split("-")])
        print(float(td["a"].sum()), inside, flush=True)
    """, handle.name)
    total, inside = child.communicate(timeout=120)[0].split()
    assert float(total) == float(td["a"].sum()) and inside == "True"
    assert not _exists(handle.name)
    handle.close()


def test_sigkilled_receiver_leaves_nothing():
    handle = share(TensorDict(a=torch.zeros(1 << 18)))
    child = _child("""
        import sys
        from tensordict.shared_memory import receive
        td = receive(sys.argv[1])
        print("ready", flush=True)
        sys.stdin.read()
    """, handle.name)
    assert child.stdout.readline().strip() == "ready"
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    handle.close()
    assert not _exists(handle.name)


def test_sigkilled_sender_leaves_nothing():
    child = _child("""
        import sys, torch
        from tensordict import TensorDict
        from tensordict.shared_memory import share
        handle = share(TensorDict(a=torch.zeros(1 << 18)))
        print(handle.name, flush=True)
        sys.stdin.read()
    """)
    name = child.stdout.readline().strip()
    assert _exists(name)
    child.send_signal(signal.SIGKILL)
    child.wait(30)
    deadline = time.monotonic() + 30  # Python's resource tracker removes it
    while _exists(name) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _exists(name)
    with pytest.raises(FileNotFoundError):
        receive(name)
