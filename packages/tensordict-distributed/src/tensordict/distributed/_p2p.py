"""Point-to-point transfers of whole TensorDicts: send, recv, isend, irecv, asend, arecv,
init_remote.

Every transfer starts with a 4 kB envelope: a header (leaf count, a 63-bit fingerprint
of the structure, sizes, identity of the files the leaves map) and the structure's
signature (key paths, shapes and dtypes). A small TensorDict travels entirely inside the
envelope, in one message; a larger one follows it without waiting, one message per
tensor leaf plus one message holding the non-tensor leaves (if any), encoded as JSON
(see :func:`~tensordict.distributed._wire.encode_objects`). The receiver compares the
fingerprint with its own TensorDict's before posting its receives: on a mismatch it
takes the data off the wire (so the pair stays in step), leaves its TensorDict untouched
and raises a :class:`StructureMismatchError` naming the keys, shapes and dtypes that
differ.

When the sender's leaves are memory-mapped files, it waits for one answer first: if the
receiver maps the very same files (a shared scratch space), the tensor bytes are not sent
at all, since the receiver already sees them.

Non-tensor values that JSON cannot describe are pickled. A pickle of plain data (sets,
tensors, dicts of them...: :func:`tensordict._restricted_pickle.loads_data`) is rebuilt by
the restricted unpickler, which runs no code; for any other, the header says so, and
unless the receiving call passes ``allow_pickle=True``, the receiver takes the data off
the wire without writing anything and raises a
:class:`~tensordict.distributed.PickledDataError` naming the entries. (A sender that hides
code in a plain-data pickle gets the same error, after the tensors have landed.)

Example (on two ranks of a process group)::

    >>> data = TensorDict({"a": torch.zeros(()), ("b", "c"): torch.ones(())}, [])  # doctest: +SKIP
    >>> if rank == 1:                                   # doctest: +SKIP
    ...     data.isend(dst=0)
    ... else:
    ...     data.irecv(src=1)
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import os
from typing import Any

import torch
import torch.distributed as dist

from tensordict.distributed._structure import (
    Path,
    Structure,
    as_tensordict,
    collect,
    dtype_from_name,
    fingerprint_of,
    leaf_payload,
    path_names,
    rewrap,
    set_non_tensor,
)
from tensordict.distributed._wire import (
    MAGIC,
    Incoming,
    PeerError,
    Pending,
    PickledDataError,
    StructureMismatchError,
    decode_objects,
    encode_objects,
    from_bytes,
    outgoing,
    peer_errors,
    tags,
    to_bytes,
    wait_all,
    wire_device,
)

# receiver's answers to a header (_NO_TENSORS: send the non-tensor message only, as the
# receiver maps the same files or refuses the data)
_DATA, _MISMATCH, _NO_TENSORS = 0, 1, 2
# the first message: _FIELDS int64 fields, then the signature and, for small
# TensorDicts, every leaf and the non-tensor payload ("packed": one message in all)
_ENVELOPE, _FIELDS = 4096, 8
_ROOM = _ENVELOPE - 8 * _FIELDS


def _global_rank(rank: int | None, group_rank: int | None, group: Any, name: str) -> int:
    if (rank is None) == (group_rank is None):
        raise ValueError(f"give exactly one of {name} and group_{name}")
    return dist.get_global_rank(group, group_rank) if rank is None else rank


def _files_id(leaves: list[tuple[Path, torch.Tensor]]) -> int:
    """A 63-bit id of the file regions the leaves map, or 0 if any leaf is in memory."""
    if not leaves:
        return 0
    regions = []
    for _, x in leaves:
        filename = getattr(x, "filename", None)
        if not filename:
            return 0
        regions.append((os.path.realpath(filename), x.storage_offset(), tuple(x.shape),
                        x.stride()))
    digest = hashlib.blake2b(repr(regions).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> 1 or 1


def _send_bytes(data: bytes, dst: int, group: Any, tag: int) -> None:
    device = wire_device(group)
    dist.send(torch.tensor([len(data)], device=device), dst, group=group, tag=tag)
    dist.send(from_bytes(data, device), dst, group=group, tag=tag + 1)


def _recv_bytes(src: int, group: Any, tag: int) -> bytes:
    device = wire_device(group)
    size = torch.zeros(1, dtype=torch.int64, device=device)
    dist.recv(size, src, group=group, tag=tag)
    payload = torch.empty(int(size), dtype=torch.uint8, device=device)
    dist.recv(payload, src, group=group, tag=tag + 1)
    return to_bytes(payload)


def _envelope(fields: list[int], inline: list[torch.Tensor], device: torch.device
              ) -> torch.Tensor:
    """The first message of a transfer: the header fields, then ``inline`` bytes."""
    envelope = torch.zeros(_ENVELOPE, dtype=torch.uint8, device=device)
    body = torch.cat([torch.tensor(fields, device=device).view(torch.uint8), *inline])
    envelope[: body.numel()] = body
    return envelope


def _post_send(td: Any, dst: int, group: Any, init_tag: int, pseudo_rand: bool
               ) -> tuple[list[Any], int]:
    """Post the envelope, the signature and the data to ``dst``; returns (works, next
    tag)."""
    td = as_tensordict(td)
    leaves, non_tensor = collect(td)
    signature = Structure.of(td, leaves, non_tensor).signature()
    device = wire_device(group)
    data = [outgoing(x, device) for _, x in leaves]
    pickled = False
    if non_tensor:
        payload, pickled = encode_objects([leaf_payload(v) for _, v in non_tensor])
        data.append(from_bytes(payload, device))
    extra_size = data[-1].numel() if non_tensor else 0
    files = _files_id(leaves)
    signature_bytes = from_bytes(signature, device)
    signature_inline = len(signature) <= _ROOM
    packed = not files and len(signature) + sum(d.numel() for d in data) <= _ROOM
    fields = [MAGIC, len(leaves), fingerprint_of(signature), len(signature), extra_size,
              files, int(packed), int(pickled)]
    inline = [signature_bytes] if signature_inline else []
    envelope = _envelope(fields, inline + data if packed else inline, device)
    message_tags = tags(init_tag + 2, len(leaves) + 1, pseudo_rand)
    with peer_errors("sending a TensorDict", dst):
        works = [dist.isend(envelope, dst, group=group, tag=init_tag)]
        if not signature_inline:
            works.append(dist.isend(signature_bytes, dst, group=group, tag=init_tag + 1))
        status = _DATA
        if files:  # the receiver may map the same files: ask whether to send the data
            answer = torch.zeros(1, dtype=torch.int64, device=device)
            dist.recv(answer, dst, group=group, tag=init_tag)
            status = int(answer)
        if status == _MISMATCH:
            wait_all(works, "sending a TensorDict", dst)
            raise StructureMismatchError(
                f"rank {dst} holds a TensorDict of another structure (keys, shapes or "
                f"dtypes differ); rank {dst} raised an error listing the differences"
            )
        if status == _NO_TENSORS:
            data = data[len(leaves):]
            message_tags = message_tags[len(leaves):]
        if not packed:
            works += [dist.isend(d, dst, group=group, tag=tag)
                      for d, tag in zip(data, message_tags)]
    return works, init_tag + len(leaves) + 3


def _post_recv(td: Any, src: int, group: Any, init_tag: int, pseudo_rand: bool,
               allow_pickle: bool) -> tuple[list[Pending], int]:
    """Receive the envelope from ``src``, check it against this TensorDict, then post
    the receives; returns (pending receives, next tag)."""
    td = as_tensordict(td)
    leaves, non_tensor = collect(td)
    structure = Structure.of(td, leaves, non_tensor)
    device = wire_device(group)
    envelope = torch.empty(_ENVELOPE, dtype=torch.uint8, device=device)
    with peer_errors("receiving a TensorDict", src):
        dist.recv(envelope, src, group=group, tag=init_tag)
        fields = envelope[: 8 * _FIELDS].view(torch.int64).tolist()
        magic, count, fingerprint, signature_size, extra_size, files, packed, pickled = fields
        if magic != MAGIC:
            raise PeerError(
                f"rank {src} sent a message that is not a TensorDict header on tag "
                f"{init_tag}: the two ranks' calls are out of step"
            )
        status = _DATA if fingerprint == structure.fingerprint() else _MISMATCH
        refuse = status == _DATA and pickled and not allow_pickle
        if files:
            if status == _DATA and (refuse or files == _files_id(leaves)):
                status = _NO_TENSORS
            dist.send(torch.tensor([status], device=device), src, group=group, tag=init_tag)
        cursor = 8 * _FIELDS
        if signature_size <= _ROOM:
            signature = envelope[cursor:cursor + signature_size]
            cursor += signature_size
            pending = []
        else:
            signature = torch.empty(signature_size, dtype=torch.uint8, device=device)
            work = dist.irecv(signature, src, group=group, tag=init_tag + 1)
            pending = [Pending(work, None, "receiving a TensorDict", src)]
        message_tags = tags(init_tag + 2, count + 1, pseudo_rand)
        if status == _MISMATCH:
            wait_all(pending, "receiving a TensorDict", src)
            theirs = Structure.from_signature(to_bytes(signature))
            if not files and not packed:  # the data is on its way: take it off the wire
                _drain(theirs, extra_size, src, group, message_tags)
            raise StructureMismatchError(
                f"the TensorDict sent by rank {src} does not match the receiving one: "
                + "; ".join(structure.differences(theirs))
            )
        if status == _NO_TENSORS:
            landings, targets = [], []
        elif refuse:  # the tensors land in scratch buffers, this TensorDict stays as it is
            landings = []
            targets = [torch.empty(x.numel() * x.element_size(), dtype=torch.uint8,
                                   device=device) for _, x in leaves]
        else:
            landings = [Incoming(x, device) for _, x in leaves]
            targets = [landing.bytes for landing in landings]
        payload = torch.empty(extra_size, dtype=torch.uint8, device=device)
        targets += [payload] if extra_size else []
        if packed:  # everything came inside the envelope
            for target in targets:
                target.copy_(envelope[cursor:cursor + target.numel()])
                cursor += target.numel()
        else:
            if status == _NO_TENSORS:
                message_tags = message_tags[count:]
            for target, tag in zip(targets, message_tags):
                work = dist.irecv(target, src, group=group, tag=tag)
                pending.append(Pending(work, None, "receiving a TensorDict", src))

    def non_tensor_values() -> list[Any]:
        return decode_objects(to_bytes(payload), allow_pickle,
                              path_names(non_tensor))

    if refuse:
        wait_all(pending, "receiving a TensorDict", src)
        non_tensor_values()  # raises, naming the pickled entries
        raise PickledDataError(f"rank {src} flagged its non-tensor data as pickled")

    def finish() -> None:
        values = non_tensor_values() if extra_size else []
        for landing in landings:
            landing.finish()
        if extra_size:
            set_non_tensor(td, non_tensor, values)

    return pending + [_Finish(pending, finish)], init_tag + len(leaves) + 3


class _Finish:
    """The last step of a receive: waits for every message, then writes staged leaves
    and non-tensor data into the TensorDict (once)."""

    def __init__(self, pending: list[Pending], action: Any) -> None:
        self._pending, self._action, self._done = pending, action, False

    def wait(self) -> bool:
        if not self._done:
            for item in self._pending:
                item.wait()
            self._action()
            self._done = True
        return True

    def is_completed(self) -> bool:
        return self._done or all(item.is_completed() for item in self._pending)


def _drain(theirs: Structure, extra_size: int, src: int, group: Any,
           message_tags: list[int]) -> None:
    """Receive (and drop) the data a mismatched sender sends, so both ranks stay in step."""
    device = wire_device(group)
    sizes = [math.prod(shape) * dtype_from_name(dtype).itemsize
             for _, shape, dtype in theirs.leaves] + [extra_size]
    works = [dist.irecv(torch.empty(size, dtype=torch.uint8, device=device), src,
                        group=group, tag=tag)
             for size, tag in zip(sizes, message_tags) if size]
    wait_all(works, "receiving a TensorDict", src)


# -- public methods ------------------------------------------------------------------------
def send(self: Any, dst: int | None = None, init_tag: int = 0, pseudo_rand: bool = False,
         group: Any = None, *, group_dst: int | None = None,
         consolidated: bool = False) -> None:
    """Send this TensorDict to rank ``dst``, which calls :meth:`recv` (or :meth:`irecv`)
    on a TensorDict of the same structure; blocks until the data is sent.

    Args:
        dst: the receiving rank (global rank); or give ``group_dst``, its rank in ``group``.
        init_tag: the first message tag (use different tags for concurrent transfers).
        pseudo_rand: draw the message tags pseudo-randomly from ``init_tag``.
        group: the process group (default: the world).
        consolidated: accepted for compatibility; each leaf travels as its own message
            (they are posted together, so this costs no extra round trip).

    Raises:
        StructureMismatchError: the receiver's TensorDict has other keys, shapes or dtypes.
        PeerError: the receiver died or did not answer within the group's timeout.

    >>> td.send(dst=1)  # doctest: +SKIP
    """
    dst = _global_rank(dst, group_dst, group, "dst")
    works, _ = _post_send(self, dst, group, init_tag, pseudo_rand)
    wait_all(works, "sending a TensorDict", dst)


def recv(self: Any, src: int | None = None, init_tag: int = 0, pseudo_rand: bool = False,
         group: Any = None, *, group_src: int | None = None,
         consolidated: bool = False, allow_pickle: bool = False) -> int:
    """Receive into this TensorDict, in place, what rank ``src`` sends with :meth:`send`.

    Non-tensor leaves are replaced by the sender's. Returns the next free message tag.
    Non-tensor values travel as JSON (with tags for tuples, bytes, dicts with any keys,
    NaN and infinities); values of other types are pickled by the sender, and decoding
    them needs ``allow_pickle=True`` here (unpickling lets the sender run code on this
    rank: pass it only for a trusted sender).

    Raises:
        StructureMismatchError: the sender's TensorDict differs (the message names the
            keys, shapes and dtypes that differ); nothing is written.
        PickledDataError: the sender pickled some non-tensor values and ``allow_pickle``
            is false (the message names them); nothing is written.
        PeerError: the sender died or did not send within the group's timeout.

    >>> td.recv(src=0)  # doctest: +SKIP
    """
    src = _global_rank(src, group_src, group, "src")
    pending, next_tag = _post_recv(self, src, group, init_tag, pseudo_rand, allow_pickle)
    for item in pending:
        item.wait()
    return next_tag


def isend(self: Any, dst: int | None = None, init_tag: int = 0, pseudo_rand: bool = False,
          group: Any = None, return_early: bool = False, *, group_dst: int | None = None,
          consolidated: bool = False) -> int | list[Any]:
    """Send asynchronously to ``dst`` (matched by :meth:`irecv` or :meth:`recv`).

    Every message is posted at once (for memory-mapped leaves, after the receiver's
    answer on whether it maps the same files). Returns the next free tag once everything
    is sent, or, with ``return_early=True``, at once the list of works to ``wait()`` on
    (keep the TensorDict unchanged until they complete).

    >>> works = td.isend(dst=0, return_early=True)  # doctest: +SKIP
    """
    dst = _global_rank(dst, group_dst, group, "dst")
    works, next_tag = _post_send(self, dst, group, init_tag, pseudo_rand)
    if return_early:
        return works
    wait_all(works, "sending a TensorDict", dst)
    return next_tag


def irecv(self: Any, src: int | None = None, return_premature: bool = False,
          init_tag: int = 0, pseudo_rand: bool = False, group: Any = None, *,
          group_src: int | None = None, consolidated: bool = False,
          allow_pickle: bool = False) -> list[Pending] | None:
    """Receive asynchronously from ``src`` (which calls :meth:`isend` or :meth:`send`).

    Returns None once the data has arrived, or, with ``return_premature=True``, at once
    a list of pending receives; call ``wait()`` on each before reading the TensorDict.
    ``allow_pickle`` and the errors are those of :meth:`recv`.

    >>> pending = td.irecv(src=1, return_premature=True)  # doctest: +SKIP
    >>> for p in pending:  # doctest: +SKIP
    ...     p.wait()
    """
    src = _global_rank(src, group_src, group, "src")
    pending, _ = _post_recv(self, src, group, init_tag, pseudo_rand, allow_pickle)
    if return_premature:
        return pending
    for item in pending:
        item.wait()
    return None


def _pipe(end: Any, method: str) -> bool:
    """Whether ``end`` is a pipe (an object with the coroutine method ``method``, such as
    upstream's UCXX ``TensorDictPipe``) rather than a rank."""
    return not isinstance(end, int) and end is not None and hasattr(end, method)


async def asend(self: Any, dst: Any = None, init_tag: int = 0, pseudo_rand: bool = False,
                group: Any = None, *, group_dst: int | None = None) -> None:
    """:meth:`send` as a coroutine: the transfer runs in a worker thread, so the event
    loop serves other tasks meanwhile. ``dst`` is a rank (the receiver calls
    :meth:`arecv`, :meth:`recv` or :meth:`irecv`), or a pipe: any object with an
    ``asend`` coroutine method, awaited as ``dst.asend(self)``.

    >>> async def produce(td):  # doctest: +SKIP
    ...     for _ in range(10):
    ...         await td.asend(1)
    """
    if _pipe(dst, "asend"):
        await dst.asend(self)
        return
    await asyncio.to_thread(send, self, dst, init_tag, pseudo_rand, group, group_dst=group_dst)


async def arecv(self: Any, src: Any = None, init_tag: int = 0, pseudo_rand: bool = False,
                group: Any = None, *, group_src: int | None = None, device: Any = None,
                allow_pickle: bool = False) -> Any:
    """:meth:`recv` as a coroutine (the transfer runs in a worker thread); returns this
    TensorDict once the data is in. ``src`` is a rank, or a pipe: any object with an
    ``arecv`` coroutine method, awaited as ``src.arecv(self, device=device)``, whose
    result is returned. ``device`` only applies to pipes; ``allow_pickle`` and the
    errors are those of :meth:`recv`.

    >>> async def consume(td):  # doctest: +SKIP
    ...     for _ in range(10):
    ...         td = await td.arecv(0)
    """
    if _pipe(src, "arecv"):
        return await src.arecv(self, device=device)
    await asyncio.to_thread(recv, self, src, init_tag, pseudo_rand, group, group_src=group_src,
                            allow_pickle=allow_pickle)
    return self


def init_remote(self: Any, dst: int | None = None, group: Any = None,
                device: torch.device | str | None = None, use_broadcast: bool = False) -> None:
    """Send this TensorDict's structure, then its data, to a rank that has no TensorDict
    yet and calls :meth:`TensorDict.from_remote_init`. Later transfers between the two
    can use :meth:`send`/:meth:`recv`, which move only the data.

    With ``use_broadcast=True`` every other rank of ``group`` receives it (see
    :meth:`broadcast`). ``device`` is accepted for symmetry with ``from_remote_init``.

    >>> td.init_remote(dst=1)  # doctest: +SKIP
    """
    if use_broadcast:
        from tensordict.distributed._collectives import broadcast

        broadcast(self, dist.get_rank(), group=group)
        return
    if dst is None:
        raise ValueError("init_remote needs dst (or use_broadcast=True)")
    td = as_tensordict(self, dense=True)
    message = Structure.of(td).to_bytes() + b"\n" + (_saved_path(td) or "").encode()
    with peer_errors("sending a TensorDict structure", dst):
        _send_bytes(message, dst, group, 0)
    send(td, dst, group=group)


def from_remote_init(cls: type, src: int, group: Any = None,
                     device: torch.device | str | None = None, use_broadcast: bool = False,
                     *, map_files: bool = True, allow_pickle: bool = False) -> Any:
    """Build a TensorDict from the structure and data that rank ``src`` sends with
    :meth:`init_remote`.

    Args:
        src: the sending rank.
        group: the process group.
        device: where the tensors are allocated (default: CPU).
        use_broadcast: receive what ``src`` sent with ``init_remote(use_broadcast=True)``.
        map_files: if the sender's TensorDict is memory-mapped and its folder exists on
            this machine (a shared scratch space), map the same files with
            ``TensorDict.load_memmap`` instead of receiving the data.
        allow_pickle: accept non-tensor values the sender pickled (see :meth:`recv`).

    >>> td = TensorDict.from_remote_init(src=0)  # doctest: +SKIP
    """
    if use_broadcast:
        from tensordict.distributed._collectives import broadcast

        return rewrap(cls, broadcast(None, src, group=group, device=device,
                                     allow_pickle=allow_pickle))
    with peer_errors("receiving a TensorDict structure", src):
        message = _recv_bytes(src, group, 0)
    description, _, folder = message.rpartition(b"\n")
    structure = Structure.from_bytes(description)
    if map_files and folder and device is None and os.path.isdir(folder.decode()):
        from tensordict import TensorDict

        td = TensorDict.load_memmap(folder.decode())
    else:
        td = structure.empty(structure.local_device(device))
    recv(td, src, group=group, allow_pickle=allow_pickle)
    return rewrap(cls, td)


def _saved_path(td: Any) -> str | None:
    """The folder of a memory-mapped TensorDict (tensordict-memmap), or None."""
    try:
        path = td.saved_path
    except (AttributeError, RuntimeError):
        return None
    path = path() if callable(path) else path
    return None if path is None else str(path)
