"""The worker processes behind ``TensorDict.map``: they run chunks, and the caller notices
when one dies or hangs.

``multiprocessing.Pool`` loses the task of a worker that dies: it starts a new worker and
waits for the lost result forever. Here every worker has a pipe of its own and the caller
knows which chunks each worker holds, so the caller waits on the pipes *and* on the
workers' process sentinels: a death is seen at once, and a chunk that runs past
``timeout`` when its deadline passes. That error, an exception from ``fn``, Ctrl-C or an
abandoned iterator terminates every worker before it propagates.

Each worker receives the job and every chunk's index once, when it starts; a task is then
a chunk number, so the messages to a worker stay a few hundred bytes (they never fill a
pipe, which could deadlock against a large result coming back). A watchdog thread in each
worker ends it when its parent process goes away: no worker outlives a caller that was
killed outright (SIGKILL runs no cleanup in the caller).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import random
import selectors
import signal
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection
from multiprocessing.pool import ExceptionWithTraceback
from typing import Any, NoReturn

import torch

_Chunk = Any  # an index: an int, a slice, a LongTensor, or a tuple leading up to `dim`
_PARENT_POLL_S = 0.2  # how often a worker checks that its parent is alive
_POOL_POLL_S = 0.1  # how often a wait on a caller's pool checks its workers and deadline
_EXIT_GRACE_S = 5.0  # how long a worker whose pipe closed may take to exit
_STOP = b""  # the message that ends a worker (and, from a worker, says it is ready)
_PROTOCOL = pickle.HIGHEST_PROTOCOL


class Job:
    """What every task needs: the function, the data and, if workers can write it, ``out``."""

    __slots__ = ("fn", "td", "out")

    def __init__(self, fn: Callable[[Any], Any], td: Any, out: Any) -> None:
        self.fn, self.td, self.out = fn, td, out

    def run(self, index: _Chunk, seed: int) -> Any:
        """``fn`` on one chunk; None if it updated the chunk in place or wrote ``out``."""
        torch.default_generator.manual_seed(seed)  # torch.manual_seed costs ~0.2 ms
        random.seed(seed)
        result = self.fn(self.td[index])
        if result is not None and self.out is not None:
            self.out[index] = result
            return None
        return result


def _run_task(task: tuple[_Chunk, int, Job]) -> bytes | None:
    """One chunk in a caller's pool; the result is pickled here, as plain bytes (a pool's
    own pickler would move every result tensor to shared memory)."""
    index, seed, job = task
    result = job.run(index, seed)
    return None if result is None else pickle.dumps(result, protocol=_PROTOCOL)


def _exit_with_parent(parent: int) -> None:
    """Watchdog thread of a worker: exit once the parent is gone (the worker is re-parented)."""
    while os.getppid() == parent:
        time.sleep(_PARENT_POLL_S)
    os._exit(1)


def _failure(error: Exception) -> bytes:
    """The reply for a chunk whose ``fn`` raised: the exception, with the worker's
    traceback as the ``__cause__`` it gets back in the caller."""
    try:
        reply = pickle.dumps((False, ExceptionWithTraceback(error, error.__traceback__)))
        pickle.loads(reply)
        return reply
    except Exception:  # the exception does not survive pickling: keep its text
        plain = RuntimeError(f"{type(error).__name__}: {error}")
        return pickle.dumps((False, ExceptionWithTraceback(plain, error.__traceback__)))


def _worker_main(conn: Connection, job: Job, indices: bytes, base_seed: int,
                 worker_threads: int) -> None:
    """A worker: answer each chunk number received (in order) until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the caller's to handle
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    torch.set_num_threads(worker_threads)
    chunks = pickle.loads(indices)
    conn.send_bytes(_STOP)  # ready
    while True:
        try:
            message = conn.recv_bytes()
        except EOFError:
            return
        if message == _STOP:
            return
        for number in pickle.loads(message):
            try:
                result = job.run(chunks[number], base_seed + number)
                reply = pickle.dumps((True, result), protocol=_PROTOCOL)
            except Exception as error:
                reply = _failure(error)
            conn.send_bytes(reply)


def _exit_status(code: int | None) -> str:
    if code is None:
        return "closed its pipe"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


class _Worker:
    __slots__ = ("process", "conn", "pending", "since", "sent", "ready")

    def __init__(self, process: Any, conn: Connection) -> None:
        self.process, self.conn = process, conn
        self.pending: deque[int] = deque()  # chunk numbers sent, not answered yet, in order
        self.since: float | None = None  # when the first pending chunk started
        self.sent = 0
        self.ready = False


class _Workers:
    """The worker processes of one ``map`` call and the chunks each of them holds."""

    def __init__(self, job: Job, indices: list[_Chunk], base_seed: int, num_workers: int,
                 start_method: str | None, worker_threads: int,
                 max_tasks_per_child: int | None, timeout: float | None, batch: int) -> None:
        self.context = mp.get_context(start_method)
        self.args = (job, pickle.dumps(indices, protocol=_PROTOCOL), base_seed, worker_threads)
        self.total, self.size, self.batch = len(indices), min(num_workers, len(indices)), batch
        self.cap, self.timeout = max_tasks_per_child, timeout
        self.todo = deque(range(len(indices)))
        self.done: dict[int, Any] = {}
        self.workers: list[_Worker] = []
        self.events = selectors.DefaultSelector()  # workers' connections and sentinels
        self.retired: list[Any] = []

    def results(self) -> Iterator[Any]:
        """Each chunk's result, in chunk order."""
        finished = False
        try:
            for _ in range(self.size):
                self._start()
            for number in range(self.total):
                self._step(0)  # keep the workers fed while the results are consumed
                while number not in self.done:
                    self._step(self._wait_time())
                yield self.done.pop(number)
            finished = True
        finally:
            self._stop(finished)

    def _start(self) -> None:
        conn, child = self.context.Pipe()
        process = self.context.Process(target=_worker_main, args=(child, *self.args),
                                       daemon=True)
        process.start()
        child.close()
        worker = _Worker(process, conn)
        self.workers.append(worker)
        self.events.register(conn, selectors.EVENT_READ, (worker, True))
        self.events.register(process.sentinel, selectors.EVENT_READ, (worker, False))

    def _wait_time(self) -> float | None:
        starts = [w.since for w in self.workers if w.since is not None]
        if self.timeout is None or not starts:
            return None
        return max(0.0, min(starts) + self.timeout - time.monotonic())

    def _step(self, timeout: float | None) -> None:
        """Wait up to ``timeout`` for replies or deaths, handle them, hand out chunks."""
        ready = [key.data for key, _ in self.events.select(timeout)]
        for worker, is_reply in ready:  # replies first: a worker may answer, then die
            if is_reply and worker in self.workers:
                self._read(worker)
        for worker, is_reply in ready:
            if not is_reply and worker in self.workers:
                while worker in self.workers and worker.conn.poll():
                    self._read(worker)
                if worker in self.workers:  # not retired by its last reply
                    self._died(worker)
        self._check_deadlines()
        self._dispatch()

    def _read(self, worker: _Worker) -> None:
        """Handle one message of ``worker``: it is ready, or a chunk's reply."""
        try:
            message = worker.conn.recv_bytes()
        except (EOFError, OSError):
            self._died(worker)
        if not worker.ready:
            worker.ready = True
            return
        number = worker.pending.popleft()
        ok, result = pickle.loads(message)
        if not ok:
            raise result
        self.done[number] = result
        worker.since = time.monotonic() if worker.pending else None
        if not worker.pending and worker.sent == self.cap:
            self._retire(worker)

    def _died(self, worker: _Worker) -> NoReturn:
        worker.process.join(_EXIT_GRACE_S)  # its pipe may close a moment before it exits
        status = _exit_status(worker.process.exitcode)
        if not worker.ready:
            doing = "while starting (can a fresh process unpickle fn?)"
        elif worker.pending:
            doing = f"while running chunk {worker.pending[0]} of {self.total}"
        else:
            doing = "with chunks left to run"
        raise RuntimeError(f"map: worker process {worker.process.pid} {status} {doing}; "
                           "the other workers were terminated")

    def _check_deadlines(self) -> None:
        if self.timeout is None:
            return
        now = time.monotonic()
        for worker in self.workers:
            if worker.since is not None and now - worker.since >= self.timeout:
                raise TimeoutError(
                    f"map: chunk {worker.pending[0]} of {self.total} ran longer than "
                    f"timeout={self.timeout} s (worker process {worker.process.pid}); "
                    "the workers were terminated")

    def _dispatch(self) -> None:
        """A batch for every idle worker; once none is idle, one batch ahead for each."""
        for ahead in (False, True):
            if ahead and any(not w.pending for w in self.workers):
                return
            for worker in self.workers:
                if worker.ready and self.todo and len(worker.pending) <= ahead * self.batch:
                    self._send(worker)

    def _send(self, worker: _Worker) -> None:
        room = self.batch if self.cap is None else min(self.batch, self.cap - worker.sent)
        numbers = [self.todo.popleft() for _ in range(min(room, len(self.todo)))]
        if not numbers:
            return
        try:
            worker.conn.send_bytes(pickle.dumps(numbers, protocol=_PROTOCOL))
        except OSError:
            self._died(worker)
        if not worker.pending:
            worker.since = time.monotonic()
        worker.pending.extend(numbers)
        worker.sent += len(numbers)

    def _retire(self, worker: _Worker) -> None:
        """Stop a worker that ran ``max_tasks_per_child`` chunks; start another if needed."""
        self._forget(worker)
        worker.conn.send_bytes(_STOP)
        worker.conn.close()
        self.retired.append(worker.process)
        if self.todo:
            self._start()

    def _forget(self, worker: _Worker) -> None:
        self.workers.remove(worker)
        self.events.unregister(worker.conn)
        self.events.unregister(worker.process.sentinel)

    def _stop(self, finished: bool) -> None:
        """Let idle workers exit once all is done; otherwise terminate them."""
        processes = [w.process for w in self.workers] + self.retired
        for worker in self.workers:
            try:
                if finished:
                    worker.conn.send_bytes(_STOP)
                else:
                    worker.process.terminate()
            except OSError:  # it is gone already
                pass
        for process in processes:
            process.join(1)
            if process.exitcode is None:
                process.kill()
                process.join()
        for worker in self.workers:
            worker.conn.close()
        self.events.close()


def own_workers(job: Job, indices: list[_Chunk], base_seed: int, *, num_workers: int,
                start_method: str | None, worker_threads: int,
                max_tasks_per_child: int | None, timeout: float | None,
                batch: int) -> Iterator[Any]:
    """Run chunk ``i`` (seeded ``base_seed + i``) in new worker processes; yield the results
    in chunk order. Every worker has exited when the iterator finishes or is closed."""
    return _Workers(job, indices, base_seed, num_workers, start_method, worker_threads,
                    max_tasks_per_child, timeout, batch).results()


def _check_pool_workers(pool: Any, watched: set[Any]) -> None:
    """Raise if a worker of ``pool`` died: ``multiprocessing.Pool`` replaces it and waits
    for its chunk forever. Best effort, through the pool's (private) list of workers."""
    watched.update(getattr(pool, "_pool", ()))
    recycles = getattr(pool, "_maxtasksperchild", None) is not None
    for process in watched:
        code = process.exitcode
        if code is not None and (code != 0 or not recycles):
            raise RuntimeError(f"map: worker process {process.pid} of the given pool "
                               f"{_exit_status(code)}; its chunk is lost (the pool is left "
                               "open; terminate it if it cannot be reused)")


def in_pool(pool: Any, job: Job, indices: list[_Chunk], base_seed: int, *,
            timeout: float | None, batch: int) -> Iterator[Any]:
    """Run the chunks in the caller's ``multiprocessing`` pool, which is never terminated:
    on an error, chunks already queued may still run there."""
    watched = {p for p in getattr(pool, "_pool", ()) if p.exitcode is None}
    tasks = [(index, base_seed + i, job) for i, index in enumerate(indices)]
    results = pool.imap(_run_task, tasks, chunksize=batch)
    for number in range(len(tasks)):
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            poll = _POOL_POLL_S if deadline is None else min(
                _POOL_POLL_S, max(0.0, deadline - time.monotonic()))
            try:
                payload = results.next(poll)
                break
            except mp.TimeoutError:
                _check_pool_workers(pool, watched)
                if deadline is not None and time.monotonic() >= deadline:
                    raise TimeoutError(
                        f"map: chunk {number} of {len(tasks)} ran longer than "
                        f"timeout={timeout} s in the given pool (left open: its stuck "
                        "worker keeps running; terminate the pool to stop it)") from None
        yield None if payload is None else pickle.loads(payload)
