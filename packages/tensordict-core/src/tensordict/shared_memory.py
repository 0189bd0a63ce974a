"""Hand a TensorDict to another process through one POSIX shared-memory segment.

:func:`share` pickles a collection (any kind: dense, nested, lazy stack, tensorclass,
non-tensor entries) with protocol 5 and writes the pickle and its out-of-band leaf
buffers into one new segment (one copy, on the sender's side). :func:`receive`, in any
process, maps the segment by name and rebuilds the collection with leaves that *view*
the mapped memory: no copy. Receiving removes the segment's name at once, so the memory
lives exactly as long as someone maps it: the kernel frees it when the last user drops
it (the sender's :meth:`SharedHandle.close`, the receiver's last leaf), a crash of
either side included. A segment never received is removed by
:meth:`SharedHandle.close`, or, if the sender dies first, by Python's resource tracker.

One receiver per :func:`share` (a hand-off). The received leaves are read-only
(:class:`tensordict._out_of_band.ReadOnlyTensor`: in-place writes raise; ``clone()``
gives a writable copy) unless ``receive(..., writable=True)``, whose writes are then
seen by the sender while it keeps its handle open.

Linux (``/dev/shm``) only.

>>> import torch
>>> from tensordict import TensorDict
>>> from tensordict.shared_memory import receive, share
>>> handle = share(TensorDict(a=torch.arange(3.0), b={"c": torch.ones(2)}))
>>> td = receive(handle.name)  # in another process: by name (or the pickled handle)
>>> td["b", "c"].tolist(), type(td["a"]).__name__
([1.0, 1.0], 'ReadOnlyTensor')
>>> handle.close()
"""

from __future__ import annotations

import mmap
import os
import pickle
import struct
import weakref
from multiprocessing.shared_memory import SharedMemory
from typing import Any

_FOLDER = "/dev/shm"
_HEADER = struct.Struct("<QQ")  # (offset of the index, its length)
_ALIGN = 64


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


class SharedHandle:
    """The sender's side of :func:`share`: the segment's ``name`` (what the receiver
    needs; the handle pickles to it too) and its size in ``nbytes``. :meth:`close` (or a
    ``with`` block, or garbage collection) drops the sender's mapping and removes the
    segment if it was never received."""

    def __init__(self, segment: SharedMemory) -> None:
        self.name = segment.name
        self.nbytes = segment.size
        self._segment = segment
        self._finalizer = weakref.finalize(self, _release, segment)

    def close(self) -> None:
        """Drop this side's mapping; the memory is freed once no receiver maps it."""
        self._finalizer()

    def __enter__(self) -> SharedHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> tuple[Any, ...]:
        return str, (self.name,)

    def __repr__(self) -> str:
        return f"SharedHandle(name={self.name!r}, nbytes={self.nbytes})"


def _release(segment: SharedMemory) -> None:
    segment.close()
    try:
        segment.unlink()  # never received: the name (and the tracker's record) go
    except FileNotFoundError:  # received: the receiver removed the name
        from multiprocessing import resource_tracker
        resource_tracker.unregister(segment._name, "shared_memory")  # type: ignore[attr-defined]


def share(td: Any) -> SharedHandle:
    """Write ``td`` into a new shared-memory segment; see the module doc.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> with share(TensorDict(a=torch.zeros(1000))) as handle:
    ...     handle.nbytes > 4000
    True
    """
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(td, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    offsets = []
    end = _aligned(_HEADER.size + len(data))
    for raw in raws:
        offsets.append((end, raw.nbytes))
        end = _aligned(end + raw.nbytes)
    index = pickle.dumps((len(data), offsets))
    segment = SharedMemory(create=True, size=end + len(index))
    view = segment.buf
    _HEADER.pack_into(view, 0, end, len(index))
    view[_HEADER.size:_HEADER.size + len(data)] = data
    for raw, (start, nbytes) in zip(raws, offsets):
        view[start:start + nbytes] = raw
    view[end:end + len(index)] = index
    del view
    return SharedHandle(segment)


def receive(name: str | SharedHandle, writable: bool = False) -> Any:
    """The collection :func:`share` put under ``name``, its leaves viewing the shared
    memory (read-only unless ``writable``); removes the name (see the module doc).

    Raises:
        FileNotFoundError: no such segment (never shared, or already received).
    """
    name = name.name if isinstance(name, SharedHandle) else name
    path = os.path.join(_FOLDER, name.lstrip("/"))
    fd = os.open(path, os.O_RDWR)
    try:
        memory = mmap.mmap(fd, 0)
    finally:
        os.close(fd)
    os.unlink(path)  # the mapping keeps the memory until its last user drops it
    view = memoryview(memory)
    if not writable:
        view = view.toreadonly()
    index_start, index_length = _HEADER.unpack_from(view, 0)
    length, offsets = pickle.loads(view[index_start:index_start + index_length])
    buffers = [view[start:start + nbytes] for start, nbytes in offsets]
    return pickle.loads(view[_HEADER.size:_HEADER.size + length], buffers=buffers)
