"""``TensorDict.map`` and ``map_iter``: a function applied to chunks of a TensorDict by a
pool of worker processes.

The TensorDict is cut along ``dim`` into chunks (``chunksize`` elements each,
``num_chunks`` of them, or single elements with ``chunksize=0``). The workers never
receive copies of the data: memory-mapped leaves travel as file names, every other leaf
is moved to shared memory first (in place, so the caller's TensorDict sees what the
workers write). Each worker receives the whole TensorDict and every chunk's index once,
when it starts; a task is then just a chunk's number, so the cost per chunk is a few small
messages. The workers, and how a dead or stuck one is noticed, are in ``_map_pool``.

Results come back as pickled bytes and are joined in chunk order (``torch.cat``, or
``torch.stack`` for ``chunksize=0``). A function that returns None has updated its chunk
in place, and ``map`` returns None (or ``out``).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> def double(td):
    ...     return td * 2
    >>> td = TensorDict(a=torch.arange(6.0), batch_size=[6])
    >>> td.map(double, num_workers=2, chunksize=2)["a"]  # doctest: +SKIP
    tensor([ 0.,  2.,  4.,  6.,  8., 10.])
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from tensordict._map_pool import _Chunk


def _travels_by_reference(x: torch.Tensor) -> bool:
    """Whether a worker can reach ``x``'s storage without a copy."""
    return bool(getattr(x, "filename", None)) or x.is_shared()


def _share(td: Any) -> None:
    """Move every leaf that is neither memory-mapped nor shared to shared memory, in place."""
    def share(x: torch.Tensor) -> torch.Tensor:
        return x if _travels_by_reference(x) else x.share_memory_()

    td._apply_nest(share, filter_empty=False)


def _all_by_reference(out: Any) -> bool:
    """Whether workers can write every leaf of ``out`` (a TensorDict or a tensor)."""
    if isinstance(out, torch.Tensor):
        return _travels_by_reference(out)
    leaves: list[torch.Tensor] = []
    out._apply_nest(leaves.append, filter_empty=False)
    return all(_travels_by_reference(x) for x in leaves)


def _chunk_indices(size: int, dim: int, chunksize: int | None, num_chunks: int | None,
                   num_workers: int, shuffle: bool, generator: torch.Generator) -> list[_Chunk]:
    """The index of every chunk along ``dim`` (a tuple of leading full slices if dim > 0)."""
    if chunksize is not None and num_chunks is not None:
        raise ValueError("Either chunksize or num_chunks must be provided, but not both.")
    if (chunksize is not None and chunksize < 0) or (num_chunks is not None and num_chunks < 1):
        raise ValueError(f"chunksize must be >= 0 and num_chunks >= 1, got chunksize="
                         f"{chunksize}, num_chunks={num_chunks}")
    if chunksize is None:
        chunksize = -(-size // (num_chunks or num_workers)) if size else 1
    order = torch.randperm(size, generator=generator) if shuffle else None
    if chunksize == 0:
        parts: list[Any] = list(range(size)) if order is None else order.tolist()
    elif order is None:
        parts = [slice(start, min(start + chunksize, size)) for start in range(0, size, chunksize)]
    else:
        parts = list(order.split(chunksize))
    lead = (slice(None),) * dim
    return [lead + (part,) for part in parts] if dim else parts


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        warnings.warn("pbar=True needs tqdm, which is not installed (pip install tqdm): "
                      "running without a progress bar", stacklevel=4)
        return None
    return tqdm(total=total, unit="chunk")


def _map_chunks(td: Any, fn: Callable[[Any], Any], dim: int, num_workers: int | None,
                out: Any, shuffle: bool, chunksize: int | None, num_chunks: int | None,
                pool: Any, generator: torch.Generator | None, max_tasks_per_child: int | None,
                worker_threads: int, pbar: bool, mp_start_method: str | None,
                timeout: float | None) -> Iterator[tuple[_Chunk, Any]]:
    """Yield ``(chunk index, result)`` in chunk order; our own workers have exited (been
    terminated on an error, Ctrl-C or an abandoned iterator) when this generator ends."""
    if not td.batch_size:
        raise ValueError("map needs a TensorDict with at least one batch dim")
    dim = dim + td.ndim if dim < 0 else dim
    if not 0 <= dim < td.ndim:
        raise ValueError(f"dim {dim} is out of range for batch size {td.batch_size}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds or None, got {timeout}")
    if num_workers is None:
        num_workers = os.cpu_count() or 1
    elif num_workers < 1:
        raise ValueError(f"Number of processes must be at least 1, got num_workers={num_workers}")
    if generator is None:
        generator = torch.Generator()
    indices = _chunk_indices(td.batch_size[dim], dim, chunksize, num_chunks, num_workers,
                             shuffle, generator)
    base_seed = int(torch.randint(0, 2**62, (), generator=generator))
    _share(td)
    # the worker machinery (multiprocessing.pool...) is imported on the first map only
    from tensordict._map_pool import Job, in_pool, own_workers

    job = Job(fn, td, out if out is not None and _all_by_reference(out) else None)
    batch = max(1, min(64, len(indices) // (4 * num_workers)))
    if pool is None:
        results = own_workers(job, indices, base_seed, num_workers=num_workers,
                              start_method=mp_start_method, worker_threads=worker_threads,
                              max_tasks_per_child=max_tasks_per_child, timeout=timeout,
                              batch=batch)
    else:
        results = in_pool(pool, job, indices, base_seed, timeout=timeout, batch=batch)
    bar = _progress(len(indices), pbar)
    try:
        for index, result in zip(indices, results):
            if bar is not None:
                bar.update()
            yield index, result
    finally:
        results.close()
        if bar is not None:
            bar.close()


class MapMixin:
    """``map`` and ``map_iter`` for tensor collections."""

    __slots__ = ()

    def map(
        self,
        fn: Callable[[Any], Any],
        dim: int = 0,
        num_workers: int | None = None,
        *,
        out: Any = None,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: Any = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = False,
        pbar: bool = False,
        mp_start_method: str | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Apply ``fn`` to chunks of this TensorDict in worker processes; join the results.

        Args:
            fn: called on each chunk (a TensorDict, a slice of this one along ``dim``).
                Returns a TensorDict, a tensor, or None when it updated its chunk in place
                (the update reaches this TensorDict: memory-mapped leaves are written
                through, other leaves were moved to shared memory). Must be picklable: a
                function defined at the top level of a module or script.
            dim: the batch dim along which to cut.
            num_workers: worker processes (default ``os.cpu_count()``).
            out: a TensorDict (or tensor) to write the results into; if its leaves are
                shared or memory-mapped the workers write them directly.
            chunksize: elements per chunk; ``0`` passes single elements and stacks the
                results. Exclusive with ``num_chunks``.
            num_chunks: number of chunks (default: ``num_workers``).
            pool: an existing ``multiprocessing`` pool to use. It is never terminated,
                not even on an error: chunks it already queued may still run, and a
                stuck worker keeps running (terminate the pool yourself). A dead worker
                of a ``multiprocessing.Pool`` is noticed (best effort; ``timeout`` is the
                sure way).
            generator: seeds the work: chunk ``i`` runs with the CPU generator (and
                ``random``) seeded with ``s + i``, where ``s`` is drawn from
                ``generator`` (a fresh ``torch.Generator`` if None), so results do not
                depend on which worker ran which chunk.
            max_tasks_per_child: replace a worker after this many tasks.
            worker_threads: ``torch.set_num_threads`` in each worker.
            index_with_generator: accepted for compatibility; the chunks' indices are
                always computed once, and sent to each worker when it starts.
            pbar: show a tqdm progress bar over the chunks.
            mp_start_method: ``"fork"``, ``"spawn"`` or ``"forkserver"`` (default: the
                platform's).
            timeout: seconds a chunk may run (from the moment its worker starts it)
                before ``TimeoutError`` is raised; None (default): no limit.

        Returns:
            The joined results, ``out`` if given, or None if ``fn`` returned None.

        Failures never hang the call. Each ends it with an error after our workers
        were terminated (results already written to ``out``, or in place, stay):

        * an exception raised by ``fn`` is raised again, with the worker's traceback
          as its cause;
        * a worker process that dies (``os._exit``, a crash, a signal) raises
          ``RuntimeError`` naming its exit code or signal, as soon as it is seen;
        * a chunk running longer than ``timeout`` raises ``TimeoutError``;
        * Ctrl-C raises ``KeyboardInterrupt`` (the workers ignore SIGINT).

        Workers also exit on their own when the calling process is killed.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> def normalise(td):
        ...     return td.apply(lambda x: x / x.abs().max())
        >>> data = TensorDict(x=torch.arange(8.0), batch_size=[8])
        >>> if __name__ == "__main__":  # doctest: +SKIP
        ...     data.map(normalise, num_workers=2, chunksize=4)
        """
        results = []
        written = updated = False
        for index, result in _map_chunks(self, fn, dim, num_workers, out, False, chunksize,
                                         num_chunks, pool, generator, max_tasks_per_child,
                                         worker_threads, pbar, mp_start_method,
                                         timeout):
            if result is None:
                updated = True
            elif out is not None:
                out[index] = result
                written = True
            else:
                results.append(result)
        if out is not None:
            return out
        if results and (updated or written):
            raise RuntimeError("map: fn returned None for some chunks and a value for others")
        if not results:
            return None
        dim = dim + self.ndim if dim < 0 else dim
        return torch.stack(results, dim) if chunksize == 0 else torch.cat(results, dim)

    def map_iter(
        self,
        fn: Callable[[Any], Any],
        dim: int = 0,
        num_workers: int | None = None,
        *,
        shuffle: bool = False,
        chunksize: int | None = None,
        num_chunks: int | None = None,
        pool: Any = None,
        generator: torch.Generator | None = None,
        max_tasks_per_child: int | None = None,
        worker_threads: int = 1,
        index_with_generator: bool = True,
        pbar: bool = False,
        mp_start_method: str | None = None,
        timeout: float | None = None,
    ) -> Iterator[Any]:
        """Like :meth:`map`, yielding each chunk's result as soon as it (and every chunk
        before it) is done, in chunk order.

        Failures end the iteration as they end :meth:`map` (``timeout`` included); so
        does closing the iterator early, which terminates the workers.

        With ``shuffle=True`` the chunks are drawn from a random permutation of the
        elements (from ``generator``), as a data loader would; such chunks are copies, so
        in-place updates do not reach this TensorDict.

        >>> for batch in data.map_iter(normalise, num_workers=2, chunksize=4):  # doctest: +SKIP
        ...     print(batch["x"].max())
        """
        for _, result in _map_chunks(self, fn, dim, num_workers, None, shuffle, chunksize,
                                     num_chunks, pool, generator, max_tasks_per_child,
                                     worker_threads, pbar, mp_start_method,
                                     timeout):
            yield result
