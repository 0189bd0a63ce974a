"""Consolidation: every tensor leaf of a collection as a view into ONE flat uint8 storage.

``td.consolidate()`` copies the tensor leaves (nested ones, those of lazy stacks and
tensorclasses too) into one byte buffer, each at an 8-byte aligned offset, and returns
the same structure (non-tensor data, batch sizes, dim names, device kept) over views of
it, locked. Such a collection moves to a device as one copy (``to``), pickles as one
buffer plus a small description (its *metadata*), and can be written to a file that
:func:`from_consolidated` maps back. Writing into its leaves in place writes into the
buffer; adding, replacing or removing a tensor leaf (once unlocked) ends the
consolidation.

The metadata has upstream's layout: per collection ``{"cls", "non_tensors", "leaves",
"cls_metadata"}`` plus one entry per sub-collection (for a lazy stack, per part:
``"0"``, ``"1"``...). A leaf is ``(dtype, shape, start, end, pad)`` in bytes of the
buffer; a jagged nested tensor is laid out as its parts, ``<NJT_VALUES>key``,
``<NJT_LENGTHS>key`` (where it has lengths) and ``<NJT_OFFSETS>key`` (whose entry ends
with the ragged dim); a non-tensor entry is ``(data, batch_size, device)``. A file holds the buffer,
the metadata as JSON, then the JSON's length (8 bytes, little endian): upstream's files
and ours read each other. A rebuilt collection (from a file or a pickle) lists its
non-tensor entries first, then its tensors, then its sub-collections, as upstream's.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.ones(3, 2)}}, [3])
    >>> c = td.consolidate()
    >>> c.is_consolidated(), c["n", "b"].untyped_storage().nbytes()
    (True, 40)
"""

from __future__ import annotations

import importlib
import json
import os
import weakref
from pathlib import Path
from typing import Any

import torch

from tensordict._collection import classes, is_tensor_collection, is_tensorclass
from tensordict._metadata import unlock_count
from tensordict._nontensor import NonTensorData
from tensordict._shapes import as_device

_Tensor = torch.Tensor
_ALIGN = 8  # leaves padded to 8 bytes (a complex128 one starts 16-byte aligned)
_RESERVED = frozenset({"cls", "non_tensors", "leaves", "cls_metadata"})
_STACKS = ("LazyStackedTensorDict", "NonTensorStack")

#: id(collection) -> (weak reference to it, its flat uint8 storage, its leaf count, a
#: cache once the metadata was asked for: [fingerprint, metadata, the unlock count when
#: it was last checked locked (else None), its non-tensor leaves with their data])
_MARKS: dict[int, tuple[weakref.ref, _Tensor, int, list[Any]]] = {}


def mark_consolidated(td: Any, storage: _Tensor, count: int | None = None) -> Any:
    """Record that the ``count`` tensor leaves of ``td`` (counted if not given) are views
    into ``storage``; returns ``td``.

    >>> from tensordict import TensorDict
    >>> storage = torch.zeros(8, dtype=torch.uint8)
    >>> td = TensorDict(a=storage[:4].view(torch.float32))
    >>> mark_consolidated(td, storage).is_consolidated()
    True
    """
    key = id(td)
    if count is None:
        count = len(td._tensor_leaves())
    _MARKS[key] = (weakref.ref(td, lambda _, key=key: _MARKS.pop(key, None)), storage, count,
                   [])
    return td


def _storage_and_leaves(td: Any) -> tuple[_Tensor, list[_Tensor], list[_Tensor]] | None:
    """``(storage, tensor leaves, their flat parts)`` of ``td`` if it is consolidated,
    else None (see :func:`_flat_parts`)."""
    entry = _MARKS.get(id(td))
    if entry is None or entry[0]() is not td:
        return None
    storage = entry[1]
    leaves = td._tensor_leaves()
    if len(leaves) != entry[2]:
        return None
    parts = _flat_parts(td, leaves)
    cdata = storage.untyped_storage()._cdata
    for part in parts:
        if part.untyped_storage()._cdata != cdata:
            return None
    return storage, leaves, parts


def consolidated_storage(td: Any) -> _Tensor | None:
    """The flat storage of ``td`` if it is consolidated (made by ``consolidate``, with
    the same number of tensor leaves, each a view into that storage), else None.

    >>> from tensordict import TensorDict
    >>> c = TensorDict(a=torch.zeros(2), b=torch.ones(1)).consolidate()
    >>> consolidated_storage(c).dtype, consolidated_storage(c.unlock_().exclude("b"))
    (torch.uint8, None)
    """
    found = _storage_and_leaves(td)
    return None if found is None else found[0]


def _contiguous_view(typed: dict[Any, _Tensor], storage: _Tensor, dtype: torch.dtype,
                     shape: Any, start: int) -> _Tensor:
    """A contiguous ``dtype`` tensor of ``shape`` at byte ``start`` of the uint8
    ``storage``; ``typed`` caches the storage viewed as each dtype (keyed by ``dtype``)."""
    whole = typed.get(dtype)
    if whole is None:
        whole = typed[dtype] = storage.view(dtype)
    stride = []
    step = 1
    for size in reversed(shape):
        stride.append(step)
        step *= size or 1
    return whole.as_strided(shape, stride[::-1],
                            (storage.storage_offset() + start) // whole.itemsize)


def _views(storage: _Tensor, leaves: list[_Tensor], starts: list[int]) -> list[_Tensor]:
    """Contiguous views of ``storage`` shaped as ``leaves``, at the byte ``starts``."""
    typed: dict[Any, _Tensor] = {}
    return [_contiguous_view(typed, storage, leaf.dtype, leaf.shape, start)
            for leaf, start in zip(leaves, starts)]


def _unsupported(td: Any, leaf: _Tensor) -> Exception:
    """The error for a leaf that has no flat layout (strided nested, sparse...), naming
    its key."""
    key = next((key for key, value in td.items(True, True, is_leaf=_is_tensor)
                if value is leaf), None)
    if leaf.is_nested:  # upstream's class and words
        return NotImplementedError("NST is not supported, please use layout=torch.jagged "
                                   f"when building the nested tensor (entry {key!r}).")
    return RuntimeError(f"consolidate() needs strided tensors: the entry {key!r} is a "
                        f"{leaf.layout} tensor of shape {tuple(leaf.shape)}")


def _jagged_parts(leaf: _Tensor) -> list[_Tensor]:
    """The strided tensors a jagged nested tensor is made of, in the buffer's order:
    its values, its lengths (where it has some), its offsets."""
    lengths = leaf._lengths
    return [leaf._values, leaf._offsets] if lengths is None else \
        [leaf._values, lengths, leaf._offsets]


def _flat_parts(td: Any, leaves: list[_Tensor]) -> list[_Tensor]:
    """The strided tensors laid out in the buffer for ``leaves``: the leaves themselves,
    a jagged nested tensor replaced by its parts (:func:`_jagged_parts`). Other layouts
    raise, naming the key."""
    parts = leaves
    for i, leaf in enumerate(leaves):
        if leaf.layout is torch.strided and not leaf.is_nested:
            if parts is not leaves:
                parts.append(leaf)
            continue
        if leaf.layout is not torch.jagged:
            raise _unsupported(td, leaf)
        if parts is leaves:
            parts = leaves[:i]
        parts += _jagged_parts(leaf)
    return parts


def _regroup(leaves: list[_Tensor], parts: list[_Tensor]) -> list[_Tensor]:
    """``parts`` (new strided tensors laid out as :func:`_flat_parts` gave them for
    ``leaves``) back as leaves: the parts of a jagged leaf rebuilt into one."""
    if len(parts) == len(leaves):  # no jagged leaf
        return parts
    out = []
    it = iter(parts)
    for leaf in leaves:
        if leaf.layout is not torch.jagged:
            out.append(next(it))
            continue
        values = next(it)
        lengths = None if leaf._lengths is None else next(it)
        out.append(_jagged(values, next(it), lengths, leaf._ragged_idx))
    return out


def _jagged(values: _Tensor, offsets: _Tensor, lengths: _Tensor | None,
            ragged_idx: int) -> _Tensor:
    """The jagged nested tensor over ``values`` split at ``offsets``."""
    return torch.nested.nested_tensor_from_jagged(values, offsets, lengths=lengths,
                                                  jagged_dim=ragged_idx)


def _is_tensor(cls: type) -> bool:
    return issubclass(cls, _Tensor)


def _allocate(size: int, filename: Any, trailer: bytes, device: Any, share_memory: bool,
              pin_memory: bool) -> _Tensor:
    """A flat uint8 buffer of ``size`` bytes followed by ``trailer``: in a file mapped in
    memory, in shared or pinned memory, on ``device``, or plain."""
    total = size + len(trailer)
    if filename is not None:
        filename = os.fspath(filename)
        if os.path.exists(filename):
            os.remove(filename)  # a shorter previous file would keep its tail
        buffer = torch.from_file(filename, shared=True, size=total, dtype=torch.uint8)
    elif share_memory:
        buffer = torch.empty(total, dtype=torch.uint8).share_memory_()
    else:
        buffer = torch.empty(total, dtype=torch.uint8, device=device, pin_memory=pin_memory)
    if trailer:
        buffer[size:].copy_(torch.frombuffer(bytearray(trailer), dtype=torch.uint8))
    return buffer


def move_consolidated(td: Any, device: torch.device, non_blocking: bool) -> Any:
    """``td`` on ``device`` if it is consolidated (else None): its storage moved as one
    copy, the leaves rebuilt as views of the copy; locked and consolidated.

    >>> from tensordict import TensorDict
    >>> c = TensorDict(a=torch.zeros(2), b=torch.ones(3)).consolidate()
    >>> m = move_consolidated(c, torch.device("meta"), False)
    >>> m["b"].device, m.is_consolidated(), move_consolidated(TensorDict(), "meta", False)
    (device(type='meta'), True, None)
    """
    found = _storage_and_leaves(td)
    if found is None:
        return None
    storage, leaves, parts = found
    moved = storage.to(device, non_blocking=non_blocking)
    base = storage.storage_offset()  # the consolidated leaves are contiguous views
    views = _regroup(leaves, _views(moved, parts, [
        part.storage_offset() * part.element_size() - base for part in parts]))
    return mark_consolidated(td._from_leaves(views, device=device), moved, len(views)).lock_()


# -- metadata ---------------------------------------------------------------------------
def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _load_class(name: Any) -> Any:
    """A tensorclass from its metadata entry: the class itself, or ``module:qualname``."""
    if name.__class__ is not str:
        return name
    module, _, qualname = name.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def _non_tensor(value: Any) -> tuple[Any, list[int], str | None]:
    device = value.device
    return (value.data, list(value.batch_size), None if device is None else str(device))


def _dtype_info(dtype: torch.dtype) -> tuple[str, int]:
    """``(str(dtype), element size)``, cached (the metadata of every leaf needs them)."""
    info = _DTYPE_INFO.get(dtype)
    if info is None:
        info = _DTYPE_INFO[dtype] = (str(dtype), dtype.itemsize)
    return info


_DTYPE_INFO: dict[torch.dtype, tuple[str, int]] = {}


_NJT_OFFSETS = "<NJT_OFFSETS>"
#: the metadata names of the parts of a jagged leaf, by their number (see _jagged_parts)
_NJT_PREFIXES = {2: ("<NJT_VALUES>", _NJT_OFFSETS),
                 3: ("<NJT_VALUES>", "<NJT_LENGTHS>", _NJT_OFFSETS)}


def _leaf_entry(value: _Tensor, base: int) -> tuple[Any, ...]:
    """``(dtype, shape, start, end, pad)`` of a contiguous view (bytes from ``base``)."""
    name, size = _dtype_info(value.dtype)
    start = value.storage_offset() * size - base
    nbytes = value.numel() * size
    pad = -nbytes % _ALIGN
    return (name, list(value.shape), start, start + nbytes + pad, pad)


def _describe(node: Any, base: int) -> dict[str, Any]:
    """The metadata of ``node`` (upstream's layout, see the module doc); leaf offsets are
    in bytes from ``base``, the byte offset of the buffer in its storage."""
    if node.__class__ is not classes.TensorDict and is_tensorclass(node):
        out = _describe(node._tensordict, base)
        out["cls"] = type(node)
        return out
    non_tensors: dict[str, Any] = {}
    leaves: dict[str, Any] = {}
    out = {"cls": type(node).__name__, "non_tensors": non_tensors, "leaves": leaves}
    if isinstance(node, classes.LazyStackedTensorDict):
        info = out["cls_metadata"] = {"stack_dim": node.stack_dim, "stack_dim_name":
                                      node._stack_dim_name, "is_locked": False}
        items: Any = [(str(i), part) for i, part in enumerate(node.tensordicts)]
        if not items:  # nothing to take the batch size from
            info["batch_size"] = list(node.batch_size)
    else:
        device = node.device
        items = node._tensordict.items() if node.__class__ is classes.TensorDict else \
            [(key, node._get_str(key)) for key in node._keys_str()]
        out["cls_metadata"] = {"device": None if device is None else str(device),
                               "names": node.names, "batch_size": list(node.batch_size),
                               "is_locked": False}
    for key, value in items:
        if value.__class__ is _Tensor or isinstance(value, _Tensor):
            if value.is_nested:  # upstream's names for the parts of a jagged leaf
                parts = _jagged_parts(value)
                for prefix, part in zip(_NJT_PREFIXES[len(parts)], parts):
                    leaves[prefix + key] = _leaf_entry(part, base)
                leaves[_NJT_OFFSETS + key] += (value._ragged_idx,)
            else:
                leaves[key] = _leaf_entry(value, base)
        elif getattr(value, "_is_non_tensor", False) and not isinstance(
                value, classes.LazyStackedTensorDict):
            non_tensors[key] = _non_tensor(value)
        else:
            if key in _RESERVED:
                raise ValueError(f"cannot describe the consolidated entry {key!r}: the "
                                 f"name is reserved by the metadata {sorted(_RESERVED)}")
            out[key] = _describe(value, base)
    return out


def _fingerprint(node: Any, out: list[Any], non_tensors: list[Any]) -> list[Any]:
    """What the metadata of ``node`` holds, by identity: the classes, sizes, names,
    devices, keys and entries of it and its sub-collections, and the storage of each
    tensor (the offsets cannot change: the tensors are the same objects); its non-tensor
    leaves go to ``non_tensors`` with their data."""
    if node.__class__ is not classes.TensorDict and is_tensorclass(node):
        out.append(node.__class__)
        node = node._tensordict
    if isinstance(node, classes.LazyStackedTensorDict):
        out += (node.__class__, node._stack_dim, node._stack_dim_name)
        items: Any = enumerate(node.tensordicts)
    else:
        out += (node.__class__, node.batch_size, node.names, node.device)
        items = node._tensordict.items() if node.__class__ is classes.TensorDict else \
            [(key, node._get_str(key)) for key in node._keys_str()]
    for key, value in items:
        out += (key, id(value))
        if value.__class__ is _Tensor or isinstance(value, _Tensor):
            out.append((value._values if value.is_nested else value).untyped_storage()._cdata)
            continue
        if getattr(value, "_is_non_tensor", False) and not isinstance(
                value, classes.LazyStackedTensorDict):
            out += (id(value.data), value.batch_size)
            non_tensors.append((value, value.data))
        else:
            _fingerprint(value, out, non_tensors)
    return out


def storage_and_metadata(td: Any) -> tuple[_Tensor, dict[str, Any]] | None:
    """``(storage, metadata)`` of ``td`` if it is consolidated, else None. The metadata is
    kept while the structure does not change: pickling the same collection again checks
    it, leaf by leaf, or, if no collection was unlocked since it was last checked locked,
    only its non-tensor leaves (which ``set_`` rewrites in place, lock or not).

    >>> from tensordict import TensorDict
    >>> c = TensorDict(a=torch.zeros(3)).consolidate()
    >>> storage_and_metadata(c)[1] is storage_and_metadata(c)[1]
    True
    """
    entry = _MARKS.get(id(td))
    if entry is None or entry[0]() is not td:
        return None
    storage, cache = entry[1], entry[3]
    if cache and cache[2] == unlock_count() and td.is_locked and (not cache[3] or all(
            leaf.data is data for leaf, data in cache[3])):
        return storage, cache[1]  # locked all along: no entry added, replaced or removed
    non_tensors: list[Any] = []
    fingerprint = _fingerprint(td, [], non_tensors)
    if not cache or cache[0] != fingerprint:
        if _storage_and_leaves(td) is None:
            return None
        cache[:] = [fingerprint, consolidated_metadata(td, storage), None, None]
    cache[2:] = [unlock_count() if td.is_locked else None, non_tensors]
    return storage, cache[1]


def consolidated_metadata(td: Any, storage: _Tensor) -> dict[str, Any]:
    """The metadata of ``td``, consolidated over ``storage`` (see the module doc).

    >>> from tensordict import TensorDict
    >>> c = TensorDict(a=torch.zeros(3)).consolidate()
    >>> consolidated_metadata(c, c._consolidated["storage"])["leaves"]
    {'a': ('torch.float32', [3], 0, 16, 4)}
    """
    return _describe(td, storage.storage_offset())


def _json_default(value: Any) -> Any:
    if isinstance(value, type):
        return _class_path(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _to_json(metadata: dict[str, Any]) -> bytes:
    try:
        return json.dumps(metadata, default=_json_default).encode()
    except TypeError as err:
        raise RuntimeError(f"Failed to convert the metadata to json: {err}. Non-tensor "
                           "data written to a file must be JSON serializable.") from None


def rebuild(metadata: dict[str, Any], storage: _Tensor,
            typed_views: dict[Any, _Tensor] | None = None) -> Any:
    """The collection ``metadata`` describes, its leaves views into ``storage``
    (``typed_views``: the storage viewed as each dtype met so far, filled on the way).

    >>> from tensordict import TensorDict
    >>> c = TensorDict(a=torch.arange(3.)).consolidate()
    >>> storage = c._consolidated["storage"]
    >>> rebuild(consolidated_metadata(c, storage), storage)["a"]
    tensor([0., 1., 2.])
    """
    if typed_views is None:
        typed_views = {}
    cls = metadata["cls"]
    info = metadata["cls_metadata"]
    if cls in _STACKS:
        kind = classes.NonTensorStack if cls == "NonTensorStack" else \
            classes.LazyStackedTensorDict
        non_tensors = metadata["non_tensors"]
        parts = []
        for i in range(len(non_tensors) + len(metadata) - 4):
            entry = non_tensors.get(str(i))
            parts.append(rebuild(metadata[str(i)], storage, typed_views) if entry is None
                         else _non_tensor_data(entry))
        return kind(*parts, stack_dim=info["stack_dim"], stack_dim_name=info["stack_dim_name"],
                    batch_size=None if parts else info.get("batch_size"))
    entries = {key: _non_tensor_data(entry) for key, entry in metadata["non_tensors"].items()}
    jagged: dict[str, _Tensor] = {}
    for key, (dtype, shape, start, *rest) in metadata["leaves"].items():
        view = _contiguous_view(typed_views, storage, getattr(torch, dtype.rpartition(".")[2]),
                                shape, start)
        if not key.startswith("<NJT_"):
            entries[key] = view
        elif not key.startswith(_NJT_OFFSETS):
            jagged[key] = view
        else:  # the last part of a jagged leaf: the leaf, its ragged dim last in the entry
            key = key[len(_NJT_OFFSETS):]
            entries[key] = _jagged(jagged.pop("<NJT_VALUES>" + key), view,
                                   jagged.pop("<NJT_LENGTHS>" + key, None), rest[2])
    for key, sub in metadata.items():
        if key not in _RESERVED:
            entries[key] = rebuild(sub, storage, typed_views)
    names = info.get("names")
    td = classes.TensorDict._from_entries(
        entries, torch.Size(info["batch_size"]), as_device(info.get("device")),
        tuple(names) if names and any(n is not None for n in names) else None)
    if cls.__class__ is str and ":" not in cls:  # a TensorDict-like class: a TensorDict
        return td
    return _load_class(cls)._from_tensordict(td)


def _non_tensor_data(entry: Any) -> Any:
    data, batch_size, device = entry
    return NonTensorData(data, batch_size=batch_size, device=device)


def from_consolidated(filename: str | Path | _Tensor) -> Any:
    """The collection written by ``consolidate(filename)``, locked and consolidated, its
    leaves views of the file mapped in memory. A tensor is read the same way: its
    storage holds the buffer then the metadata (``consolidate(metadata=True)``). A
    tensorclass recorded in the metadata is imported from its module, as pickle does.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp() + "/td.bin"
    >>> _ = TensorDict({"a": torch.ones(2), "s": "text"}, [2]).consolidate(path)
    >>> td = from_consolidated(path)
    >>> td["a"], td["s"], td.is_consolidated()
    (tensor([1., 1.]), 'text', True)
    """
    if isinstance(filename, _Tensor):  # the whole storage: the buffer and its trailer
        buffer = torch.empty(0, dtype=torch.uint8, device=filename.device).set_(
            filename.untyped_storage())
    else:
        filename = os.fspath(filename)
        buffer = torch.from_file(filename, shared=False, size=os.path.getsize(filename),
                                 dtype=torch.uint8)
    length = int.from_bytes(buffer[-8:].cpu().numpy().tobytes(), "little")
    end = buffer.numel() - 8 - length
    metadata = json.loads(buffer[end:-8].cpu().numpy().tobytes())
    storage = buffer[:end]
    return mark_consolidated(rebuild(metadata, storage), storage).lock_()


def _set_device_label(node: Any, device: torch.device) -> None:
    if node.__class__ is not classes.TensorDict and is_tensorclass(node):
        node = node._tensordict
    node._device = device
    if isinstance(node, classes.LazyStackedTensorDict):
        for part in node.tensordicts:
            _set_device_label(part, device)
        return
    for key in node._keys_str():
        value = node._get_str(key)
        if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
            _set_device_label(value, device)


def _replace_leaves(old: Any, new: Any) -> None:
    """Put the entries of ``new`` (same structure) into ``old`` and its sub-collections,
    bypassing the lock: ``consolidate(inplace=True)``."""
    if old.__class__ is not classes.TensorDict and is_tensorclass(old):
        old, new = old._tensordict, new._tensordict
    if isinstance(old, classes.LazyStackedTensorDict):
        for part, new_part in zip(old.tensordicts, new.tensordicts):
            _replace_leaves(part, new_part)
        return
    store = old._tensordict
    for key, value in new._tensordict.items():
        if isinstance(value, _Tensor):
            store[key] = value
        elif not getattr(value, "_is_non_tensor", False):
            _replace_leaves(store[key], value)


class ConsolidateMixin:
    """``consolidate``, ``is_consolidated``, ``from_consolidated`` and ``auto_device_``."""

    __slots__ = ()

    def consolidate(self, filename: Path | str | None = None, *, num_threads: int = 0,
                    device: torch.device | None = None, non_blocking: bool = False,
                    inplace: bool = False, return_early: bool = False,
                    use_buffer: bool = False, share_memory: bool = False,
                    pin_memory: bool = False, metadata: bool = False) -> Any:
        """A locked copy whose tensor leaves are views into one flat uint8 storage.

        Args:
            filename: write the storage (and its metadata) to this file, mapped in
                memory: :func:`~tensordict.from_consolidated` reads it back.
            num_threads, return_early, use_buffer: accepted for compatibility (one
                copy call fills the storage).
            device: the device of the storage (and so of the result).
            non_blocking: passed to the move to ``device``.
            inplace: replace the leaves of this collection instead (returns it, locked).
            share_memory: put the storage in shared memory.
            pin_memory: put the storage in page-locked memory (needs an accelerator).
            metadata: also store the metadata after the buffer, in the file layout:
                ``from_consolidated(td._consolidated["storage"])`` then rebuilds it.

        The result stays consolidated until a tensor leaf is added, replaced or
        removed (once unlocked). Leaves must be strided or jagged nested tensors (a
        jagged one is laid out as its values, lengths and offsets; strided nested and
        sparse ones are refused); a file, shared or pinned memory live on the CPU (another
        ``device`` is refused).

        >>> td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.ones(3)}}, [3])
        >>> c = td.consolidate()
        >>> c["n", "b"].untyped_storage().data_ptr() == c["a"].untyped_storage().data_ptr()
        True
        >>> c.is_locked, td.is_consolidated()
        (True, False)
        """
        if (filename is None and device is None and not share_memory and not pin_memory
                and not metadata and consolidated_storage(self) is not None):
            return self
        leaves = self._tensor_leaves()
        parts = _flat_parts(self, leaves)
        starts = []
        size = 0
        align = _ALIGN  # every start, and the size, a multiple of each element size
        for leaf in parts:
            itemsize = leaf.element_size()
            if itemsize > _ALIGN:  # complex128
                align = itemsize
                size += -size % itemsize
            starts.append(size)
            nbytes = leaf.numel() * itemsize
            size += nbytes + -nbytes % _ALIGN
        size += -size % align
        trailer = b""
        if filename is not None or metadata:  # checked before the file is written
            layout = torch.empty(size, dtype=torch.uint8, device="meta")
            trailer = _to_json(consolidated_metadata(
                self._from_leaves(_regroup(leaves, _views(layout, parts, starts))), layout))
            trailer += len(trailer).to_bytes(8, "little")
        device = given = as_device(device)
        if given is not None and given.type != "cpu" and (
                filename is not None or share_memory or pin_memory):
            raise ValueError(f"consolidate(device={given}) cannot be combined with a file, "
                             "shared or pinned memory: these live on the CPU")
        if device is None:
            device = leaves[0].device if leaves else self.device
        storage = _allocate(size, filename, trailer, device, share_memory, pin_memory)[:size]
        views = _views(storage, parts, starts)
        if parts:
            with torch.no_grad():
                torch._foreach_copy_(views, parts, non_blocking=non_blocking)
            views = _regroup(leaves, views)
        out = self._from_leaves(views) if given is None else \
            self._from_leaves(views, device=device)
        if inplace:
            _replace_leaves(self, out)
            if given is not None:
                _set_device_label(self, device)
            out = self
        return mark_consolidated(out, storage, len(leaves)).lock_()

    def is_consolidated(self) -> bool:
        """Whether the tensor leaves are views into one flat storage made by
        :meth:`consolidate` (none added, replaced or removed since).

        >>> td = TensorDict(a=torch.zeros(2))
        >>> td.is_consolidated(), td.consolidate().is_consolidated()
        (False, True)
        """
        if not _MARKS:  # nothing is consolidated in this process (the usual case)
            return False
        return id(self) in _MARKS and consolidated_storage(self) is not None

    @property
    def _consolidated(self) -> dict[str, Any] | None:
        """Upstream's record of a consolidated collection: ``{"storage", "metadata"}``
        (None when not consolidated)."""
        found = storage_and_metadata(self)
        return None if found is None else {"storage": found[0], "metadata": found[1]}

    @classmethod
    def from_consolidated(cls, filename: str | Path | _Tensor) -> Any:
        """See :func:`tensordict.from_consolidated`.

        >>> import tempfile
        >>> path = tempfile.mkdtemp() + "/td.bin"
        >>> _ = TensorDict(a=torch.ones(2)).consolidate(path)
        >>> TensorDict.from_consolidated(path)["a"]
        tensor([1., 1.])
        """
        return from_consolidated(filename)

    def auto_device_(self) -> Any:
        """Set the device (of sub-collections too) to the one every tensor leaf is on;
        nothing changes when the leaves are on several devices or there are none.

        >>> td = TensorDict(a=torch.zeros(2), n={"b": torch.zeros(1)})
        >>> td.device, td.auto_device_().device, td["n"].device
        (None, device(type='cpu'), device(type='cpu'))
        """
        devices = {leaf.device for leaf in self._tensor_leaves()}
        if len(devices) == 1:
            _set_device_label(self, devices.pop())
        return self

