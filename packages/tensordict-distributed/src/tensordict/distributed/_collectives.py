"""Collectives on whole TensorDicts: broadcast, all_reduce, reduce, all_gather,
gather_and_stack and scatter, each honouring ``group=``.

Collectives that combine the TensorDicts of several ranks first all-gather their
structure fingerprints (one tiny message), so ranks holding different structures get a
:class:`StructureMismatchError` naming the ranks instead of a hang or mixed-up data.
Collectives that create TensorDicts (broadcast, scatter) send the structure along.
Non-tensor leaves travel as JSON (see :func:`~tensordict.distributed._wire.encode_objects`);
values the sender had to pickle are decoded only by a call given ``allow_pickle=True``,
else it raises :class:`~tensordict.distributed.PickledDataError` once the tensors have
arrived (so every rank stays in step), leaving its own TensorDicts as they were.

Example (on every rank of a process group)::

    >>> td.all_reduce()                       # doctest: +SKIP
    >>> parts = td.all_gather()               # doctest: +SKIP
    >>> copy = td.broadcast(src=0)            # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist
from torch._utils import _flatten_dense_tensors, _unflatten_dense_tensors

from tensordict import NonTensorData, NonTensorStack, TensorDictBase
from tensordict.distributed._structure import (
    Structure,
    as_tensordict,
    leaf_from_payload,
    leaf_payload,
    non_tensor_leaves,
    path_names,
    rewrap,
    set_non_tensor,
    tensor_leaves,
)
from tensordict.distributed._wire import (
    Incoming,
    Pending,
    StructureMismatchError,
    byte_view,
    decode_objects,
    encode_objects,
    from_bytes,
    outgoing,
    peer_errors,
    to_bytes,
    wait_all,
    wire_device,
)


def _check_same_structure(structure: Structure, group: Any, action: str) -> None:
    """Raise on every rank if the ranks of ``group`` hold different structures."""
    device = wire_device(group)
    mine = torch.tensor([structure.fingerprint()], device=device)
    everyone = [torch.zeros_like(mine) for _ in range(dist.get_world_size(group))]
    with peer_errors(action, "group"):
        dist.all_gather(everyone, mine, group=group)
    values = [int(t) for t in everyone]
    if len(set(values)) > 1:
        odd = [i for i, v in enumerate(values) if v != values[0]]
        raise StructureMismatchError(
            f"{action}: the TensorDicts of group ranks {odd} differ in keys, shapes or "
            "dtypes from the one of group rank 0; use send/recv between two of them to "
            "see the differences"
        )


def _payloads(td: TensorDictBase) -> list[Any]:
    """What travels of each non-tensor leaf of ``td`` (see ``leaf_payload``)."""
    return [leaf_payload(v) for _, v in non_tensor_leaves(td)]


def _encoded(td: TensorDictBase) -> bytes:
    """The non-tensor leaves of ``td``, encoded for the wire."""
    return encode_objects(_payloads(td))[0]


def _decoded(data: bytes, td: TensorDictBase, allow_pickle: bool) -> list[Any]:
    """The payloads of the non-tensor leaves of ``td`` that another rank encoded."""
    return decode_objects(data, allow_pickle, path_names(non_tensor_leaves(td)))


def _broadcast_bytes(data: bytes | None, src: int, group: Any) -> bytes:
    """``data`` of rank ``src`` on every rank of ``group``."""
    wire = wire_device(group)
    size = torch.tensor([0 if data is None else len(data)], device=wire)
    dist.broadcast(size, src, group=group)
    buffer = torch.empty(int(size), dtype=torch.uint8, device=wire) if data is None \
        else from_bytes(data, wire)
    dist.broadcast(buffer, src, group=group)
    return to_bytes(buffer)


def _gather_bytes(data: bytes, group: Any, dst: int | None) -> list[bytes] | None:
    """Every rank's ``data`` in group rank order: on every rank (``dst=None``) or on rank
    ``dst`` only (None on the others)."""
    wire, size = wire_device(group), dist.get_world_size(group)
    mine = torch.tensor([len(data)], device=wire)
    lengths = [torch.zeros_like(mine) for _ in range(size)]
    dist.all_gather(lengths, mine, group=group)
    sizes = [int(n) for n in lengths]
    padded = torch.zeros(max(sizes), dtype=torch.uint8, device=wire)
    padded[:len(data)] = from_bytes(data, wire)
    receives = dst is None or dist.get_rank() == dst
    rows = [torch.empty_like(padded) for _ in range(size)] if receives else None
    if dst is None:
        dist.all_gather(rows, padded, group=group)
    else:
        dist.gather(padded, rows, dst=dst, group=group)
    return None if rows is None else [to_bytes(row[:n]) for row, n in zip(rows, sizes)]


def _group_rank(group: Any) -> int:
    return dist.get_group_rank(group or dist.group.WORLD, dist.get_rank())


def _share_structure(td: Any, src: int, group: Any, extra: bytes | None
                     ) -> tuple[Structure, bytes]:
    """Broadcast the structure of ``td`` and the bytes ``extra`` from ``src`` to
    ``group`` (``td`` and ``extra`` are None on the other ranks)."""
    message = None if td is None else Structure.of(td).to_bytes() + b"\n" + extra
    with peer_errors("broadcasting a TensorDict structure", src):
        message = _broadcast_bytes(message, src, group)
    description, _, extra = message.partition(b"\n")  # JSON holds no raw newline
    return Structure.from_bytes(description), extra


def broadcast(self: Any, src: int, *, group: Any = None,
              device: torch.device | str | None = None, allow_pickle: bool = False) -> Any:
    """Rank ``src``'s TensorDict on every rank of ``group`` (the structure travels too,
    so the other ranks may call it on any TensorDict, e.g. an empty one).

    Returns ``self`` on ``src`` and a new TensorDict (on ``device``, default CPU) on the
    other ranks, non-tensor leaves included (``allow_pickle``: accept non-tensor values
    the sender pickled, see :meth:`recv`).

    >>> td = (data if rank == 0 else TensorDict()).broadcast(src=0)  # doctest: +SKIP
    """
    is_src = dist.get_rank() == src
    td = as_tensordict(self, dense=True) if is_src else None
    structure, values = _share_structure(td, src, group, _encoded(td) if is_src else None)
    if not is_src:
        td = structure.empty(structure.local_device(device))
    wire = wire_device(group)
    works, landings = [], []
    with peer_errors("broadcasting a TensorDict", src):
        for _, x in tensor_leaves(td):
            landing = Incoming(x, wire, load=is_src)
            landings.append(landing)
            works.append(dist.broadcast(landing.bytes, src, group=group, async_op=True))
    wait_all(works, "broadcasting a TensorDict", src,
             then=None if is_src else lambda: [landing.finish() for landing in landings])
    if is_src:
        return self
    set_non_tensor(td, non_tensor_leaves(td), _decoded(values, td, allow_pickle))
    return rewrap(self, td)


def _reduce_leaves(self: Any, op: Any, async_op: bool, group: Any, bucket_bytes: int | None,
                   action: str, dst: int | None) -> list[Pending] | None:
    td = as_tensordict(self)
    leaves = [x for _, x in tensor_leaves(td)]
    _check_same_structure(Structure.of(td), group, action)
    op = dist.ReduceOp.SUM if op is None else op
    wire = wire_device(group)
    pending = []
    with peer_errors(action, "group" if dst is None else dst):
        for targets in _buckets(leaves, bucket_bytes):
            if len(targets) == 1:
                landing = Incoming(targets[0], wire, load=True)
                buffer, finish = landing.buffer, landing.finish
            else:
                buffer = _flatten_dense_tensors([t.to(wire) for t in targets])
                finish = _scatter_back(buffer, targets)
            if dst is None:
                work = dist.all_reduce(buffer, op=op, group=group, async_op=True)
            else:
                work = dist.reduce(buffer, dst, op=op, group=group, async_op=True)
            pending.append(Pending(work, finish, action, "group" if dst is None else dst))
    if async_op:
        return pending
    for item in pending:
        item.wait()
    return None


def _buckets(leaves: list[torch.Tensor], bucket_bytes: int | None) -> list[list[torch.Tensor]]:
    """Runs of leaves of one dtype and device, each at most ``bucket_bytes`` (None: one
    leaf per bucket)."""
    if bucket_bytes is None:
        return [[x] for x in leaves]
    buckets: list[list[torch.Tensor]] = []
    size = 0
    for x in leaves:
        nbytes = x.numel() * x.element_size()
        last = buckets[-1][-1] if buckets else None
        if (last is None or (last.dtype, last.device) != (x.dtype, x.device)
                or size + nbytes > bucket_bytes):
            buckets.append([])
            size = 0
        buckets[-1].append(x)
        size += nbytes
    return buckets


def _scatter_back(buffer: torch.Tensor, targets: list[torch.Tensor]) -> Any:
    def finish() -> None:
        for target, part in zip(targets, _unflatten_dense_tensors(buffer, targets)):
            target.copy_(part)
    return finish


def all_reduce(self: Any, op: Any = None, async_op: bool = False, group: Any = None, *,
               bucket_bytes: int | None = None) -> list[Pending] | None:
    """Reduce every tensor leaf across ``group`` (``op``, default sum), in place.

    Args:
        op: a ``torch.distributed.ReduceOp``.
        async_op: return a list of pending operations to ``wait()`` on instead of
            waiting.
        group: the process group.
        bucket_bytes: pack consecutive leaves of one dtype into buffers of at most this
            many bytes (fewer, larger messages); None reduces each leaf on its own.

    >>> td.all_reduce(op=dist.ReduceOp.MAX)  # doctest: +SKIP
    """
    return _reduce_leaves(self, op, async_op, group, bucket_bytes, "all_reduce", None)


def reduce(self: Any, dst: int, op: Any = None, async_op: bool = False,
           return_premature: bool = False, group: Any = None, *,
           bucket_bytes: int | None = None) -> list[Pending] | None:
    """Reduce every tensor leaf onto rank ``dst`` (in place there); see :meth:`all_reduce`.
    ``return_premature`` is a synonym of ``async_op``.

    >>> td.reduce(dst=0)  # doctest: +SKIP
    """
    return _reduce_leaves(self, op, async_op or return_premature, group, bucket_bytes,
                          "reduce", dst)


def all_gather(self: Any, *, group: Any = None, allow_pickle: bool = False) -> list[Any]:
    """The TensorDicts of every rank of ``group``, in rank order (non-tensor leaves
    included; ``allow_pickle``: accept non-tensor values another rank pickled, see
    :meth:`recv`). All ranks must hold TensorDicts of the same structure.

    >>> tds = td.all_gather()  # doctest: +SKIP
    """
    td = as_tensordict(self, dense=True)
    structure = Structure.of(td)
    _check_same_structure(structure, group, "all_gather")
    size, wire = dist.get_world_size(group), wire_device(group)
    outs = [structure.empty(td.device) for _ in range(size)]
    out_leaves = [tensor_leaves(out) for out in outs]
    works, landings = [], []
    with peer_errors("all_gather", "group"):
        for i, (_, x) in enumerate(tensor_leaves(td)):
            row = [Incoming(leaves[i][1], wire) for leaves in out_leaves]
            landings += row
            works.append(dist.all_gather([r.bytes for r in row], outgoing(x, wire),
                                         group=group, async_op=True))
        encoded = _gather_bytes(_encoded(td), group, None)
    wait_all(works, "all_gather", "group", then=lambda: [r.finish() for r in landings])
    me = _group_rank(group)
    values = [_payloads(td) if i == me else _decoded(data, td, allow_pickle)
              for i, data in enumerate(encoded)]
    for out, out_values in zip(outs, values):
        set_non_tensor(out, non_tensor_leaves(out), out_values)
    return [rewrap(self, out) for out in outs]


def gather_and_stack(self: Any, dst: int, group: Any = None, *,
                     allow_pickle: bool = False) -> Any:
    """Stack the TensorDicts of every rank on rank ``dst``: there, returns a TensorDict of
    batch size ``[world_size, *batch_size]``; None on the other ranks. ``allow_pickle``:
    accept non-tensor values another rank pickled (see :meth:`recv`).

    >>> stacked = td.gather_and_stack(dst=0)  # doctest: +SKIP
    """
    td = as_tensordict(self, dense=True)
    structure = Structure.of(td)
    _check_same_structure(structure, group, "gather_and_stack")
    size, wire = dist.get_world_size(group), wire_device(group)
    is_dst = dist.get_rank() == dst
    out = structure.stacked(size).empty(td.device) if is_dst else None
    works, landings = [], []
    with peer_errors("gather_and_stack", dst):
        out_leaves = tensor_leaves(out) if is_dst else None
        for i, (_, x) in enumerate(tensor_leaves(td)):
            rows = None
            if is_dst:
                landing = Incoming(out_leaves[i][1], wire)
                landings.append(landing)
                rows = [byte_view(row) for row in landing.buffer.unbind(0)]
            works.append(dist.gather(outgoing(x, wire), rows, dst=dst, group=group,
                                     async_op=True))
        encoded = _gather_bytes(_encoded(td), group, dst)
    wait_all(works, "gather_and_stack", dst, then=lambda: [r.finish() for r in landings])
    if is_dst:
        me = _group_rank(group)
        values = [_payloads(td) if i == me else _decoded(data, td, allow_pickle)
                  for i, data in enumerate(encoded)]
        for j, (path, _) in enumerate(non_tensor_leaves(out)):
            _set_stacked(out, path, [leaf_from_payload(v[j]) for v in values])
        out = rewrap(self, out)
    return out


def _set_stacked(out: Any, path: tuple[str, ...], parts: list[Any]) -> None:
    """Set the non-tensor leaf ``path`` of a gathered stack from every rank's value: one
    value if all ranks agree, else one per element."""
    first = parts[0]
    if all(isinstance(p, NonTensorData) and p.data == first.data for p in parts):
        out.set_non_tensor(path, first.data)
    else:
        out.set(path, NonTensorStack.from_list([p.tolist() for p in parts], out.batch_size))


def scatter(self: Any, src: int, tensordicts: list[Any] | None = None, *, group: Any = None,
            device: torch.device | str | None = None, allow_pickle: bool = False) -> Any:
    """Send ``tensordicts[i]`` (given on rank ``src``) to group rank ``i``; every rank
    returns its part (a new TensorDict on ``device``, default CPU). The parts must share
    one structure. ``allow_pickle``: accept non-tensor values the sender pickled (see
    :meth:`recv`).

    >>> part = td.scatter(src=0, tensordicts=parts if rank == 0 else None)  # doctest: +SKIP
    """
    is_src = dist.get_rank() == src
    size, wire = dist.get_world_size(group), wire_device(group)
    parts = None
    if is_src:
        if tensordicts is None or len(tensordicts) != size:
            raise ValueError(f"scatter on the source rank needs {size} TensorDicts "
                             f"(one per rank), got {tensordicts!r:.80}")
        parts = [as_tensordict(p, dense=True) for p in tensordicts]
        shapes = {Structure.of(p).fingerprint() for p in parts}
        if len(shapes) > 1:
            raise StructureMismatchError("scatter: the TensorDicts to scatter differ in keys, "
                                         "shapes or dtypes")
    # each rank's non-tensor data, encoded on its own (a rank decodes only its part)
    extra = encode_objects([_encoded(p) for p in parts])[0] if is_src else None
    structure, extra = _share_structure(parts[0] if is_src else None, src, group, extra)
    out = structure.empty(structure.local_device(device))
    part_leaves = [tensor_leaves(p) for p in parts] if is_src else None
    works, landings = [], []
    with peer_errors("scatter", src):
        for i, (_, x) in enumerate(tensor_leaves(out)):
            landing = Incoming(x, wire)
            landings.append(landing)
            chunks = [outgoing(leaves[i][1], wire) for leaves in part_leaves] if is_src else None
            works.append(dist.scatter(landing.bytes, chunks, src=src, group=group,
                                      async_op=True))
    wait_all(works, "scatter", src, then=lambda: [r.finish() for r in landings])
    me = _group_rank(group)
    values = _payloads(parts[me]) if is_src else \
        _decoded(decode_objects(extra)[me], out, allow_pickle)
    set_non_tensor(out, non_tensor_leaves(out), values)
    return rewrap(self, out)
