"""PersistentTensorDict: a TensorDict whose entries live in an HDF5 or Zarr file.

Nothing is read until it is asked for: ``ptd["obs"]`` reads one array, ``ptd[10:20]``
reads ten rows of each, keys and shapes come from the file's metadata. Writes reach the
file: ``ptd["obs"] = t``, ``ptd[i] = step`` and ``ptd.update_(td)`` are checked first
(keys, batch dims, shapes), then written, so a bad write leaves the file as it was.
Nested TensorDicts are groups; strings and JSON data are stored beside the arrays; the
batch size of each group is kept in an attribute and restored on reopen. Ops that
compute new values (``apply``, ``clone``, ``to``, math) read the data and give ordinary
in-memory TensorDicts.

Example:
    >>> import os, tempfile, torch
    >>> from tensordict import TensorDict
    >>> path = os.path.join(tempfile.mkdtemp(), "data.h5")
    >>> td = TensorDict({"obs": torch.arange(6.).view(3, 2), "n": {"r": torch.zeros(3)}}, [3])
    >>> ptd = PersistentTensorDict.from_dict(td, path, backend="h5")
    >>> ptd[1:]["obs"]
    tensor([[2., 3.],
            [4., 5.]])
    >>> ptd[0] = TensorDict({"obs": torch.ones(2), "n": {"r": torch.ones(())}}, [])
    >>> ptd.close()
    >>> reopened = PersistentTensorDict.from_h5(path)
    >>> reopened.batch_size, reopened["obs"][0]
    (torch.Size([3]), tensor([1., 1.]))
    >>> reopened.close()
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tensordict import NonTensorData, TensorDict, TensorDictBase, errors, is_tensor_collection
from tensordict.base import NO_DEFAULT
from tensordict.extending import LOCKED_BY_PARENT
from tensordict.persistent import _leaves
from tensordict.persistent._formats import FileFormat, get_format
from tensordict.persistent._indexing import read_all, read_leaf, write_rows
from tensordict.storage import IndexView, WriteBackMixin, atomic_write, check_fits, split_rows

#: upstream's keyword arguments that change nothing here (non-tensor values are read as
#: stored; batch sizes are always checked)
_ACCEPTED = frozenset({"non_tensor_as_stack", "validate_batch_size"})
#: the prefix of an entry being written, renamed into place once complete
_TMP = ".tensordict-tmp-"


class ReadOnlyFileError(OSError, ValueError):
    """A write into a file opened with ``mode="r"`` (an OSError, and the ValueError that
    upstream's h5py and zarr calls raise)."""


class FileBatchSizeError(RuntimeError, ValueError):
    """A batch size that the arrays of the file do not have (a RuntimeError as every
    batch mismatch, and the ValueError upstream raises)."""


class PersistentTensorDict(WriteBackMixin, TensorDictBase):
    """A TensorDict backed by a group of an HDF5 (``backend="h5"``) or Zarr
    (``backend="zarr"``) file.

    Args:
        batch_size: the batch size; by default the one stored in the file, else ``[]``.
        filename: the file to open (with ``mode``), unless ``group`` is given.
        group: an open group of a file to wrap (the caller keeps it open).
        mode: ``"r"`` (read only), ``"r+"`` (read and write), ``"w"`` (new file),
            ``"a"`` (read and write, created if missing).
        backend: the file format, provided by a plugin package (``tensordict-h5``...).
        device: the device of the tensors read.
        auto_batch_size: accepted for upstream's signature: a file that stores no batch
            size (as upstream writes HDF5 files) always gets the leading dims its arrays
            share, as upstream's; each group gets its own (non-tensor datasets aside).
        batch_dims: with ``auto_batch_size``, the most batch dims such a guessed batch
            size has.
    """

    def __init__(self, *, batch_size: Sequence[int] | None = None, filename: str | None = None,
                 group: Any = None, mode: str = "r", backend: str = "h5", device: Any = None,
                 auto_batch_size: bool = False, batch_dims: int | None = None,
                 allow_pickle: bool | None = None, **kwargs: Any) -> None:
        unknown = kwargs.keys() - _ACCEPTED
        if unknown:
            raise TypeError(f"PersistentTensorDict() got unexpected arguments {sorted(unknown)}")
        if allow_pickle:
            raise ValueError("PersistentTensorDict never pickles: allow_pickle=True is not "
                             "supported (non-tensor values are stored as strings or JSON)")
        if (filename is None) == (group is None):
            raise ValueError("PersistentTensorDict needs exactly one of filename= or group=")
        self._format: FileFormat = get_format(backend)
        self._root = None
        if group is None:
            group = self._root = self._format.open(os.fspath(filename), mode)
        self._group = group
        self.filename = None if filename is None else os.fspath(filename)
        self.mode = mode
        self._device = None if device is None else torch.device(device)
        self._is_locked = False
        self._exit_stack: list[Any] | None = None
        self._children: dict[str, PersistentTensorDict] = {}
        self._path: tuple[str, ...] = ()  # from the root group of the file
        #: set while the batch sizes are guessed from the arrays: the most batch dims
        self._guess: tuple[int | None] | None = None
        stored = _stored_batch_size(self._format, group)
        if batch_size is not None:
            try:
                self.batch_size = batch_size
            except BaseException:
                self.close()
                raise
        elif stored is not None:
            self._batch_size = stored
        else:  # as upstream, batch_dims caps the guess only with auto_batch_size
            self._guess = (batch_dims if auto_batch_size else None,)
            self._batch_size = _shared_batch(self._format, group, self._guess[0])

    @classmethod
    def _child(cls, parent: PersistentTensorDict, group: Any) -> PersistentTensorDict:
        child = cls.__new__(cls)
        child._format, child._root, child._group = parent._format, None, group
        child.filename, child.mode, child._device = parent.filename, parent.mode, parent._device
        child._is_locked = LOCKED_BY_PARENT if parent._is_locked else False
        child._exit_stack, child._children = None, {}
        child._path = parent._path + (group.name.rsplit("/", 1)[-1],)
        child._guess = parent._guess
        batch = _stored_batch_size(parent._format, group)
        if batch is None and parent._guess is not None:
            batch = _shared_batch(parent._format, group, parent._guess[0])
        prefix = parent._batch_size
        child._batch_size = batch if batch is not None and batch[:len(prefix)] == prefix \
            else prefix
        return child

    # -- opening and writing whole files -----------------------------------------------
    @classmethod
    def from_h5(cls, filename: str, *, mode: str = "r", batch_size: Sequence[int] | None = None,
                auto_batch_size: bool = False, batch_dims: int | None = None,
                **kwargs: Any) -> PersistentTensorDict:
        """Open an HDF5 file (``tensordict-h5`` provides the format).

        >>> import os, tempfile, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "f.h5")
        >>> TensorDict(a=torch.zeros(2, 3), batch_size=[2]).to_h5(path).close()
        >>> with PersistentTensorDict.from_h5(path) as ptd:
        ...     ptd.batch_size
        torch.Size([2])
        """
        return cls(filename=filename, mode=mode, backend="h5", batch_size=batch_size,
                   auto_batch_size=auto_batch_size, batch_dims=batch_dims, **kwargs)

    @classmethod
    def from_zarr(cls, filename: str, *, mode: str = "r",
                  batch_size: Sequence[int] | None = None, auto_batch_size: bool = False,
                  batch_dims: int | None = None, **kwargs: Any) -> PersistentTensorDict:
        """Open a Zarr store (``tensordict-zarr`` provides the format)."""
        return cls(filename=filename, mode=mode, backend="zarr", batch_size=batch_size,
                   auto_batch_size=auto_batch_size, batch_dims=batch_dims, **kwargs)

    @classmethod
    def from_dict(cls, input_dict: Mapping[str, Any] | TensorDictBase, filename: str, *,
                  batch_size: Sequence[int] | None = None, device: Any = None,
                  backend: str = "h5", auto_batch_size: bool = False,
                  batch_dims: int | None = None, **kwargs: Any) -> PersistentTensorDict:
        """Write ``input_dict`` (a TensorDict or a dict) to a new file ``filename`` and
        open it for reading and writing. A dict without ``batch_size`` gets the leading
        dims its values share (at most ``batch_dims``), as upstream.

        The file is written under a temporary name and renamed into place: an existing
        file of that name is replaced only once the new one is complete. Other keyword
        arguments are options of every array written, nested ones too (h5py's
        ``compression="gzip"``, ``compression_opts``, ``chunks``...; zarr's
        ``compressors``, ``chunks``...); arrays of one value take no filters.

        >>> import os, tempfile, torch
        >>> path = os.path.join(tempfile.mkdtemp(), "f.h5")
        >>> td = TensorDict(n={"x": torch.zeros(8, 2)}, batch_size=[8])
        >>> with PersistentTensorDict.from_dict(td, path, compression="gzip") as ptd:
        ...     ptd.file["n/x"].compression
        'gzip'
        """
        if not is_tensor_collection(input_dict):
            input_dict = TensorDict(dict(input_dict), batch_size=batch_size or [])
            if batch_size is None:  # as upstream: the leading dims the values share
                input_dict.auto_batch_size_(batch_dims)
        elif batch_size is not None:
            input_dict = input_dict.clone(False)
            input_dict.batch_size = batch_size
        file_format = get_format(backend)

        def write(tmp: str) -> None:
            root = file_format.open(tmp, "w")
            try:
                _write_group(file_format, root, input_dict, (), kwargs)
            finally:
                file_format.close(root)

        atomic_write(filename, write)
        return cls(filename=filename, mode="r+", backend=backend, device=device)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as where it lives (file, group, batch size), never as its data: the
        receiving process opens the file itself (read-only if this one is)."""
        if self.filename is None:
            raise TypeError("a PersistentTensorDict over a group opened by the caller "
                            "(group=...) cannot be pickled: open it with filename=")
        mode = "r" if self.mode == "r" else "r+"
        return _reopen, (self.filename, self._format.name, mode, list(self._batch_size),
                         self._device, self._path)

    def close(self) -> None:
        """Close the file (if this TensorDict opened it)."""
        if self._root is not None:
            self._format.close(self._root)
            self._root = None

    @property
    def file(self) -> Any:
        """The open file (its root group)."""
        return self._root if self._root is not None else getattr(self._group, "file", None)

    def __exit__(self, *exc: object) -> None:
        if self._exit_stack:  # leaving ``with ptd.unlock_():`` and the like
            return super().__exit__(*exc)
        self.close()

    # -- primitives --------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Sequence[int]) -> None:
        size = torch.Size(value)
        for key, shape in _array_shapes(self._format, self._group, ()):
            if shape[:len(size)] != tuple(size):
                raise FileBatchSizeError(f"batch size and array size mismatch: "
                                         f"{errors.batch_mismatch(key, torch.Size(shape), size)}")
        self._batch_size = size
        self._guess = None
        self._children.clear()
        if self.mode != "r":
            _store_batch_size(self._format, self._group, size)

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        inherited = LOCKED_BY_PARENT if locked else False
        for child in self._children.values():
            child._propagate_lock(inherited)

    def _keys_str(self) -> Iterator[str]:
        return (key for key in self._group.keys() if not key.startswith(_TMP))

    def _node(self, key: str, default: Any) -> Any:
        if key.startswith(_TMP) or key not in self._group:
            if default is NO_DEFAULT:
                raise errors.missing_key(key, list(self._keys_str()))
            return None
        return self._group[key]

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        node = self._node(key, default)
        if node is None:
            return default
        if self._format.is_group(node):
            child = self._children.get(key)
            if child is None:
                child = self._children[key] = PersistentTensorDict._child(self, node)
            return child
        if self._format.is_non_tensor(node):
            return self._format.read_non_tensor(node, self._batch_size, self._device)
        return _leaves.from_numpy(self._format.read(node, ...), node, self._device)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """A stand-in telling what ``key`` holds without reading it: a meta tensor of
        the array's shape and dtype, or the entry itself for groups and non-tensors."""
        node = self._node(key, default)
        if node is None:
            return default
        if self._format.is_group(node) or self._format.is_non_tensor(node):
            return self._get_str(key)
        return torch.empty(node.shape, dtype=_leaves.dtype_of(node), device="meta")

    def get_item_shape(self, key: Any) -> torch.Size:
        """The shape of the entry at ``key``, read from the file's metadata."""
        peek = self._parent_of(_as_path(key), False)._peek_str(_as_path(key)[-1])
        return peek.shape if isinstance(peek, torch.Tensor) else peek.batch_size

    # -- writes ------------------------------------------------------------------------
    def _check_writable(self, key: Any, in_place: bool = False) -> None:
        """Raise unless ``key`` can be written: the file must be writable, and this
        TensorDict unlocked unless the write is ``in_place`` (into existing arrays)."""
        if self._is_locked and not in_place:
            raise errors.locked("modify", key)
        if self.mode == "r":
            raise ReadOnlyFileError(f"cannot write {key!r}: the file {self.filename!r} is open "
                                    f"read-only (mode='r'); open it with mode='r+' or 'a'")

    def _validate_value(self, value: Any, key: Any, non_blocking: bool = False) -> Any:
        """``value`` as it will be stored (numbers and arrays as tensors, dicts as
        TensorDicts, other objects as non-tensor data); raises if it does not fit."""
        value = _as_value(value, self._batch_size)
        if getattr(value, "_is_non_tensor", False) or isinstance(value, str):
            return value
        shape = value.shape if isinstance(value, torch.Tensor) else value.batch_size
        batch = self._batch_size
        if tuple(shape[:len(batch)]) != tuple(batch):
            raise errors.batch_mismatch(key, shape, batch)
        return value

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> PersistentTensorDict:
        if not validated:
            value = self._validate_value(value, key)
        node = self._node(key, None) if isinstance(value, torch.Tensor) else None
        if node is not None and not self._format.is_group(node) and \
                not self._format.is_non_tensor(node) and (inplace or (
                    tuple(node.shape) == tuple(value.shape) and
                    _leaves.dtype_of(node) == value.dtype)):
            # into the existing array (set_ raises for a shape it cannot take)
            self._check_writable(key, in_place=True)
            check_fits(value.shape, node.shape, key)
            self._format.write(node, ..., _leaves.stored_array(node, value.expand(node.shape)))
            return self
        self._check_writable(key)
        if not isinstance(value, torch.Tensor):
            if value is self._children.get(key):
                return self
            if isinstance(value, str) or getattr(value, "_is_non_tensor", False):
                self._replace_entry(key, lambda group, name: self._format.write_non_tensor(
                    group, name, _as_non_tensor(value, self._batch_size), key))
            else:
                self._replace_entry(key, lambda group, name: _write_group(
                    self._format, group.create_group(name), value, (key,), {}))
            return self
        self._replace_entry(key, lambda group, name: _leaves.write_tensor(
            self._format, group, name, value))
        return self

    def _replace_entry(self, key: str, write: Callable[[Any, str], Any]) -> None:
        """Write an entry under a temporary name, then put it in place of ``key``."""
        group, tmp = self._group, _TMP + key
        if tmp in group:
            del group[tmp]
        try:
            write(group, tmp)
        except BaseException:
            if tmp in group:
                del group[tmp]
            raise
        if key in group:
            del group[key]
        self._format.rename(group, tmp, key)
        self._children.pop(key, None)

    def _del_str(self, key: str) -> None:
        self._check_writable(key)
        self._node(key, NO_DEFAULT)
        del self._group[key]
        self._children.pop(key, None)

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            child = node._get_str(part, None)
            if child is None:
                if not create:
                    raise errors.missing_key(path, list(node._keys_str()), path[:depth])
                node._check_writable(part)
                group = node._group.create_group(part)
                _store_batch_size(node._format, group, node._batch_size)
                child = node._get_str(part)
            elif not isinstance(child, PersistentTensorDict):
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a TensorDict, so it has "
                    f"no entry {path[depth + 1]!r} (writing {path!r}).")
            node = child
        return node

    # -- indexing ----------------------------------------------------------------------
    def _index(self, index: Any) -> IndexView:
        """A view of the rows ``index`` selects: reads read them from the file, writes
        write them there."""
        return IndexView(self, index)

    def _get_at_str(self, key: str, index: Any, default: Any = NO_DEFAULT) -> Any:
        """The entry ``key`` at ``index``: only the rows of the first dim that ``index``
        selects are read, then indexed with the rest of it."""
        node = self._node(key, default)
        if node is None:
            return default
        if self._format.is_group(node):
            return self._get_str(key)[index]
        rows, rest = split_rows(index, self._batch_size)
        return read_leaf(self, node, rows)[rest]

    #: upstream refuses them: their copies would take writes that never reach the file
    select, exclude = IndexView.select, IndexView.exclude

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._check_writable(index, in_place=True)
        batch = self._indexed_batch(index)
        if not is_tensor_collection(value):
            value = TensorDict(dict(value), batch_size=batch) if isinstance(value, Mapping) \
                else value
        writes: list[tuple[Any, Any]] = []
        _plan_indexed_writes(self, index, value, batch, (), writes)
        for write, args in writes:
            write(*args)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Everything read into an ordinary in-memory TensorDict."""
        return read_all(self)

    def is_contiguous(self) -> bool:
        """False, as upstream: the entries are arrays of a file; :meth:`contiguous` reads
        them into memory."""
        return False

    def share_memory_(self) -> PersistentTensorDict:
        """Refused (the entries live in the file), as upstream."""
        raise NotImplementedError("Cannot call share_memory_ on a PersistentTensorDict: "
                                  "its entries live in the file. Call `to_tensordict()` first.")

    def memmap_(self, *args: Any, **kwargs: Any) -> PersistentTensorDict:
        """Refused (the entries live in the file), as upstream: ``memmap()`` writes a
        memory-mapped copy."""
        raise RuntimeError("Cannot build a memmap TensorDict in-place from a "
                           "PersistentTensorDict. Use `td.memmap()` instead.")

    def pin_memory(self, *args: Any, **kwargs: Any) -> PersistentTensorDict:
        """Refused (the entries live in the file), as upstream."""
        raise RuntimeError("Cannot pin memory of a PersistentTensorDict. Call "
                           "to_tensordict() before making this call.")

    def clone(self, recurse: bool = True, **kwargs: Any) -> TensorDictBase:
        """An in-memory copy (``recurse=True``), or another PersistentTensorDict on the
        same group of the same open file (``recurse=False``)."""
        if recurse:
            return self.to_tensordict()
        return PersistentTensorDict(group=self._group, mode=self.mode,
                                    backend=self._format.name, device=self._device,
                                    batch_size=self._batch_size)

    def __repr__(self) -> str:
        fields = []
        for key in self._keys_str():
            peek = self._peek_str(key)
            if isinstance(peek, PersistentTensorDict):
                fields.append(f"{key}: {peek!r}")
            elif isinstance(peek, torch.Tensor):
                feature = list(peek.shape[len(self._batch_size):])
                fields.append(f"{key}: {str(peek.dtype).replace('torch.', '')}{feature}")
            else:
                fields.append(f"{key}: {type(peek).__name__}")
        return (f"PersistentTensorDict(batch_size={list(self._batch_size)}, "
                f"filename={self.filename!r}, fields={{{', '.join(fields)}}})")


def _reopen(filename: str, backend: str, mode: str, batch_size: list[int], device: Any,
            path: tuple[str, ...]) -> PersistentTensorDict:
    """Open ``filename`` again and go down to the group at ``path`` (for unpickling)."""
    root = PersistentTensorDict(filename=filename, backend=backend, mode=mode, device=device)
    node = root._get_path(path) if path else root
    node._root, root._root = root._root, None  # closing the node closes the file
    node.batch_size = batch_size
    return node


def _array_shapes(file_format: FileFormat, group: Any,
                  where: tuple[str, ...]) -> Iterator[tuple[Any, tuple[int, ...]]]:
    """``(key, shape)`` of every array under ``group`` (non-tensor entries aside)."""
    for key in group.keys():
        if key.startswith(_TMP):
            continue
        node = group[key]
        if file_format.is_group(node):
            yield from _array_shapes(file_format, node, where + (key,))
        elif not file_format.is_non_tensor(node):
            yield (where + (key,) if where else key), tuple(node.shape)


def _stored_batch_size(file_format: FileFormat, group: Any) -> torch.Size | None:
    meta = file_format.read_meta(group)
    batch = None if meta is None else meta.get("batch_size")
    return None if batch is None else torch.Size(batch)


def _store_batch_size(file_format: FileFormat, group: Any, size: Sequence[int]) -> None:
    meta = dict(file_format.read_meta(group) or {})
    meta["batch_size"] = list(size)
    meta.setdefault("version", 1)
    file_format.write_meta(group, meta)


def _as_non_tensor(value: Any, batch: torch.Size) -> Any:
    return value if getattr(value, "_is_non_tensor", False) else \
        NonTensorData(value, batch_size=batch)


def _as_path(key: Any) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else tuple(key)


def _as_value(value: Any, batch: torch.Size) -> Any:
    """Numbers, numpy arrays and nested dicts as what they are stored as."""
    if isinstance(value, (torch.Tensor, str)) or is_tensor_collection(value):
        return value
    if isinstance(value, dict):
        return TensorDict(value, batch_size=batch)
    if isinstance(value, (np.ndarray, np.number, int, float, bool)) and \
            not isinstance(value, np.str_):
        return torch.as_tensor(value)
    return NonTensorData(value, batch_size=batch)


def _write_group(file_format: FileFormat, group: Any, td: TensorDictBase,
                 where: tuple[str, ...], options: dict[str, Any]) -> None:
    """Write every entry of ``td`` into the new group ``group`` (its arrays with the
    format's ``options``)."""
    _store_batch_size(file_format, group, td.batch_size)
    for key in td.keys():
        value = td._get_str(key)
        if getattr(value, "_is_non_tensor", False):
            file_format.write_non_tensor(group, key, value, where + (key,))
        elif is_tensor_collection(value):
            _write_group(file_format, group.create_group(key), value, where + (key,), options)
        else:
            _leaves.write_tensor(file_format, group, key, value, **options)


def _shared_batch(file_format: FileFormat, group: Any, batch_dims: int | None) -> torch.Size:
    """The leading dims shared by the arrays under ``group`` (the guessed batch size of a
    group that stores none, at most ``batch_dims`` of them), from the file's metadata."""
    shapes = []
    for key in group.keys():
        if key.startswith(_TMP):
            continue
        node = group[key]
        if file_format.is_group(node):
            shapes.append(_shared_batch(file_format, node, batch_dims))
        elif not file_format.is_non_tensor(node):
            shapes.append(tuple(node.shape))
    common: list[int] = []
    for sizes in zip(*shapes) if shapes else ():
        if any(size != sizes[0] for size in sizes):
            break
        common.append(sizes[0])
    return torch.Size(common[:batch_dims] if batch_dims is not None else common)


def _plan_indexed_writes(ptd: PersistentTensorDict, index: Any, value: Any,
                         batch: torch.Size, where: tuple[str, ...],
                         writes: list[tuple[Any, Any]]) -> None:
    """Check ``ptd[index] = value`` entry by entry and plan the array writes."""
    for key in value.keys():
        path = where + (key,)
        node = ptd._node(key, None)
        if node is None:
            raise errors.missing_key(path if where else key, list(ptd._keys_str()), where)
        source = value._get_str(key)
        if ptd._format.is_group(node):
            if not is_tensor_collection(source):
                raise TypeError(f"cannot write a {type(source).__name__} into the "
                                f"sub-TensorDict {path!r}")
            _plan_indexed_writes(ptd._get_str(key), index, source, batch, path, writes)
            continue
        if ptd._format.is_non_tensor(node) or getattr(source, "_is_non_tensor", False):
            if _holds_already(ptd, node, index, source):
                continue  # (a row read from this file, written back)
            raise TypeError(f"cannot write non-tensor data at an index of {path!r}: a "
                            f"PersistentTensorDict stores one value per non-tensor entry")
        shape = torch.Size(batch + tuple(node.shape[len(ptd._batch_size):]))
        check_fits(source.shape, shape, path, index)
        writes.append((write_rows, (ptd, node, index, source.expand(shape))))


def _holds_already(ptd: PersistentTensorDict, node: Any, index: Any, source: Any) -> bool:
    """Whether the non-tensor entry ``node`` holds ``source`` at ``index`` already."""
    if not (ptd._format.is_non_tensor(node) and getattr(source, "_is_non_tensor", False)):
        return False
    stored = ptd._format.read_non_tensor(node, ptd.batch_size, ptd.device)[index]

    def python(value: Any) -> Any:  # text the same, be it str or bytes (as HDF5 reads it)
        data = value.data if isinstance(value, NonTensorData) else value.tolist()
        return data.decode() if isinstance(data, bytes) else data

    return python(stored) == python(source)
