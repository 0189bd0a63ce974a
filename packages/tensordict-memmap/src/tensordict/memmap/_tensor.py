"""MemoryMappedTensor: a CPU tensor whose storage is a file (or anonymous shared memory).

Files are mapped with ``torch.from_file`` (no file handle stays open: reading any number
of rows opens nothing). Indexing, ``unbind``, ``split`` and ``chunk`` give views that share
the file; arithmetic gives plain tensors. Pickling sends the file name, not the data.

Example:
    >>> import tempfile, os, pickle, torch
    >>> from tensordict import MemoryMappedTensor
    >>> path = os.path.join(tempfile.mkdtemp(), "x.memmap")
    >>> t = MemoryMappedTensor.from_tensor(torch.arange(6.).reshape(2, 3), filename=path)
    >>> row = pickle.loads(pickle.dumps(t[1]))   # maps the same file
    >>> _ = row.fill_(0.0)
    >>> t
    MemoryMappedTensor([[0., 1., 2.],
                        [0., 0., 0.]])
    >>> t[0]
    MemoryMappedTensor([0., 1., 2.])
"""

from __future__ import annotations

import errno
import math
import os
import warnings
from collections.abc import Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch

from tensordict.extending import WRITABLE_AS_TENSOR, is_row_index
from tensordict.memmap import _fake

__all__ = ["MemoryMappedTensor"]

_WRITE_CHUNK = 1 << 30  # os.write moves at most ~2 GiB per call
_getitem = torch.Tensor.__getitem__
_SIZE_CLASSES = (tuple, list, torch.Size)  # (checked before the slower Sequence ABC)
_index_select = torch.Tensor.index_select


def contiguous_strides(shape: Sequence[int]) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def shared_storage(nbytes: int) -> torch.UntypedStorage:
    """``nbytes`` of fresh zero-filled shared memory, as torch shares it between
    processes (``is_shared()``, sent by file descriptor). On Linux an anonymous memory
    file: its pages are reserved as they are written (as a sparse file's are), so it
    costs a quarter of torch's ``_new_shared``, which fills /dev/shm up front.

    >>> shared_storage(8).is_shared(), bytes(shared_storage(4))
    (True, b'\\x00\\x00\\x00\\x00')
    """
    try:
        fd = os.memfd_create("tensordict", os.MFD_CLOEXEC) if nbytes else -1
    except (AttributeError, OSError):  # not Linux, or a sandbox that forbids it
        fd = -1
    if fd < 0:
        return torch.UntypedStorage._new_shared(nbytes)
    try:
        os.ftruncate(fd, nbytes)
        return torch.UntypedStorage._new_shared_fd_cpu(fd, nbytes)  # (maps a copy of fd)
    finally:
        os.close(fd)


def _as_shape(args: tuple[Any, ...], shape: Any) -> torch.Size | torch.Tensor:
    """The size given as ``*size``, one sequence, or ``shape=`` (as upstream, giving none
    is a TypeError); or the element shapes of a nested tensor, a 2-D integer tensor."""
    if shape is not None:
        if args:
            raise TypeError("give the size either positionally or as shape=, not both")
        args = (shape,)
    elif not args:
        raise TypeError("Could not find the shape argument in the arguments.")
    if len(args) == 1 and args[0].__class__ is torch.Tensor and args[0].ndim == 2:
        return args[0]
    if len(args) == 1 and (args[0].__class__ in _SIZE_CLASSES or isinstance(args[0], Sequence)):
        args = tuple(args[0])
    return torch.Size(args)


def _nested_numel(sizes: torch.Tensor) -> int:
    """The number of values of a nested tensor whose element shapes are ``sizes``."""
    return sum(math.prod(row) for row in sizes.tolist())


def _check_shape(shape: torch.Size, dtype: torch.dtype) -> int:
    """The byte size of a ``shape``/``dtype`` tensor; RuntimeError (upstream's class) for
    a shape no tensor can have."""
    negative = [size for size in shape if size < 0]
    if negative:
        raise RuntimeError(f"cannot create a MemoryMappedTensor of shape {list(shape)}: "
                           f"the dimension {negative[0]} is negative")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes >= 1 << 63:
        raise RuntimeError(f"cannot create a MemoryMappedTensor of shape {list(shape)}: "
                           f"{nbytes} bytes is more than a file can hold")
    return nbytes


def _check_device(device: Any) -> None:
    if device is not None and torch.device(device).type != "cpu":
        raise RuntimeError("Only CPU tensors are supported.")


def _raw_bytes(tensor: torch.Tensor) -> memoryview:
    """The bytes of ``tensor`` in C order (copied only if it is not contiguous)."""
    try:  # a contiguous CPU tensor of a dtype numpy has: no copy, no intermediate tensor
        return memoryview(tensor.detach().numpy()).cast("B")
    except (TypeError, RuntimeError, ValueError):  # bfloat16, strided, conj/neg bit, GPU...
        flat = tensor.detach().cpu().resolve_conj().resolve_neg().contiguous().reshape(-1)
        return memoryview(flat.view(torch.uint8).numpy())


def write_file(filename: str, data: torch.Tensor | bytes | None, nbytes: int,
               overwrite: bool = False) -> None:
    """Write ``data`` (a tensor's bytes, or bytes) to ``filename``, or ``nbytes`` of zeros
    as a sparse file when ``data`` is None. The file must not exist, unless ``overwrite``
    (then it has exactly ``nbytes`` and is rewritten in place: its cached pages are
    reused). A file this call created is removed if writing fails."""
    flags = os.O_WRONLY | os.O_NOFOLLOW | (0 if overwrite else os.O_CREAT | os.O_EXCL)
    fd = os.open(filename, flags, 0o644)
    try:
        if data is None:
            os.ftruncate(fd, nbytes)
        else:
            view = _raw_bytes(data) if isinstance(data, torch.Tensor) else memoryview(data)
            offset = 0
            while offset < nbytes:
                offset += os.write(fd, view[offset: offset + _WRITE_CHUNK])
    except BaseException:
        os.close(fd)
        if not overwrite:
            os.unlink(filename)
        raise
    os.close(fd)


def file_id(path: str | None) -> tuple[int, int] | None:
    """The identity (device, inode) of the file at ``path``, None if there is none."""
    try:
        stat = os.stat(path) if path is not None else None
    except FileNotFoundError:
        return None
    return None if stat is None else (stat.st_dev, stat.st_ino)


def maps_file(tensor: torch.Tensor | None, filename: str) -> bool:
    """Whether ``tensor``'s data lives in the file ``filename`` (whatever the path)."""
    mapped = None if tensor is None else file_id(tensor.untyped_storage().filename)
    return mapped is not None and mapped == file_id(filename)


def map_file(filename: str, dtype: torch.dtype, shape: Sequence[int],
             private: bool = False, writable: bool | None = None) -> torch.Tensor:
    """A tensor mapping the raw file ``filename`` (which must be large enough). Writes
    reach the file unless ``private`` or the file is read-only (copy-on-write then);
    ``writable``: whether it is, when the caller knows (None: ask the file system)."""
    numel = torch.Size(shape).numel()
    shared = not private and (os.access(filename, os.W_OK) if writable is None else writable)
    flat = torch.from_file(filename, shared=shared, size=numel, dtype=dtype)
    return flat.view(shape)


def map_sized(filename: str, dtype: torch.dtype, shape: torch.Size, size: int,
              private: bool = False) -> torch.Tensor:
    """:func:`map_file` for a file of ``size`` bytes, checked to be large enough
    (ValueError naming the file otherwise)."""
    nbytes = shape.numel() * dtype.itemsize
    if size < nbytes:
        raise ValueError(
            f"memory-mapped file {filename} is truncated: a {dtype} tensor of shape "
            f"{list(shape)} needs {nbytes} bytes, the file has {size}"
        )
    return map_file(filename, dtype, shape, private)


class _AnonymousHandle:
    """Carries the storage of an anonymous map; only multiprocessing may pickle it
    (the file descriptor travels with the message, the data is not copied)."""

    __slots__ = ("storage",)

    def __init__(self, storage: torch.UntypedStorage) -> None:
        self.storage = storage

    def __reduce__(self) -> Any:
        raise TypeError(
            "an anonymous MemoryMappedTensor (created without a filename) can only be "
            "sent through multiprocessing (queues, pipes, pool arguments); give it a "
            "filename to pickle it with pickle or torch.save"
        )


def _reduce_handle(handle: _AnonymousHandle) -> Any:
    return _AnonymousHandle, (handle.storage,)


ForkingPickler.register(_AnonymousHandle, _reduce_handle)


def _rebuild(source: str | _AnonymousHandle, dtype: torch.dtype, nbytes: int,
             offset: int, size: tuple[int, ...], stride: tuple[int, ...]) -> MemoryMappedTensor:
    if isinstance(source, _AnonymousHandle):
        storage = source.storage
    else:
        writable = os.access(source, os.W_OK)
        storage = torch.UntypedStorage.from_file(source, shared=writable, nbytes=nbytes)
    base = torch.empty(0, dtype=dtype).set_(storage, offset, size, stride)
    return base.as_subclass(MemoryMappedTensor)


class MemoryMappedTensor(torch.Tensor):
    """A CPU tensor stored in a file (``filename``) or in anonymous shared memory.

    Build one with :meth:`from_tensor`, :meth:`from_filename`, :meth:`empty`,
    :meth:`zeros`, :meth:`ones`, :meth:`full`, the ``*_like`` constructors or
    :meth:`from_storage`. The file holds the raw C-order bytes, no header.

    >>> import torch
    >>> t = MemoryMappedTensor.zeros(2, 3, dtype=torch.int32)
    >>> (t + 1).sum().item(), type(t + 1).__name__, type(t[0]).__name__
    (6, 'Tensor', 'MemoryMappedTensor')
    """

    __module__ = "tensordict.memmap"
    # results of torch ops are plain tensors; views are re-wrapped below
    __torch_function__ = torch._C._disabled_torch_function_impl

    # -- constructors ---------------------------------------------------------------------
    @classmethod
    def from_tensor(
        cls,
        input: torch.Tensor,
        *,
        filename: str | os.PathLike[str] | None = None,
        existsok: bool = False,
        copy_existing: bool = False,
        copy_data: bool = True,
        shape: Sequence[int] | None = None,
    ) -> MemoryMappedTensor:
        """A memory-mapped copy of ``input`` (``copy_data=False``: same shape and dtype,
        zero-filled, nothing copied).

        Args:
            input: the tensor to copy (any device; the copy lives on the CPU).
            filename: the file to write; None makes an anonymous shared-memory map.
            existsok: overwrite an existing file instead of raising.
            copy_existing: copy a MemoryMappedTensor already stored in another file
                (otherwise that is an error).
            copy_data: copy the values (False only allocates).
            shape: allocate this shape instead of ``input``'s (only with
                ``copy_data=False``).

        >>> MemoryMappedTensor.from_tensor(torch.ones(2), copy_data=False)
        MemoryMappedTensor([0., 0.])
        """
        if input.requires_grad and copy_data:
            raise RuntimeError(
                "MemoryMappedTensor.from_tensor is incompatible with tensor.requires_grad."
            )
        if input.is_nested:
            from tensordict.memmap import _nested

            values, sizes = _nested.flatten(input)
            flat = cls.from_tensor(values, filename=filename, existsok=existsok,
                                   copy_existing=copy_existing, copy_data=copy_data)
            return _nested.view(flat, sizes).as_subclass(cls)
        if input.layout != torch.strided:
            raise TypeError(
                f"MemoryMappedTensor.from_tensor needs a dense strided tensor, got layout "
                f"{input.layout}{' (nested)' if input.is_nested else ''}"
            )
        filename = None if filename is None else os.fspath(filename)
        if isinstance(input, MemoryMappedTensor) and filename is not None:
            existing = input.untyped_storage().filename
            if existing is not None and os.path.abspath(existing) == os.path.abspath(filename):
                if input._maps_whole_file():
                    return input
            elif existing is not None and not copy_existing:
                raise RuntimeError(
                    "A filename was provided but the tensor already has a file associated "
                    f"({existing}). To copy the tensor onto the new location, pass "
                    "copy_existing=True."
                )
        if shape is None:
            shape = input.shape
        elif copy_data:
            raise ValueError("shape= can only be given with copy_data=False")
        source = input if copy_data else None
        if source is not None and source.device.type != "cpu":
            source = source.cpu()
        return cls._create(torch.Size(shape), input.dtype, filename, existsok, source)

    @classmethod
    def _create(cls, shape: torch.Size, dtype: torch.dtype, filename: str | None,
                existsok: bool, source: torch.Tensor | None) -> MemoryMappedTensor:
        """Allocate (and fill from ``source``) a map of ``shape``/``dtype``.

        An existing file of the same size is rewritten in place (as upstream: its other
        readers see the new values); otherwise it is unlinked and created anew (readers
        of the old file keep the old data, never a truncated map).
        """
        nbytes = _check_shape(shape, dtype)
        if _fake.active():
            _fake.refuse_write("a MemoryMappedTensor")
        if filename is None:
            storage = shared_storage(nbytes)
            out = torch.empty(0, dtype=dtype).set_(storage, 0, shape, contiguous_strides(shape))
            if source is not None:
                out.copy_(source.detach())
            return out.as_subclass(cls)
        overwrite = False
        if os.path.lexists(filename):
            if not existsok:
                raise RuntimeError(f"The file {filename} already exists.")
            overwrite = not (source is None or os.path.islink(filename)
                             or os.path.getsize(filename) != nbytes
                             or maps_file(source, filename))
            if not overwrite:
                os.unlink(filename)
        try:
            write_file(filename, source, nbytes, overwrite)
        except OSError as err:
            if err.errno != errno.EFBIG:
                raise
            raise RuntimeError(f"cannot create a MemoryMappedTensor of shape {list(shape)} "
                               f"in {filename}: {err.strerror}") from err
        return map_file(filename, dtype, shape).as_subclass(cls)

    @classmethod
    def from_filename(
        cls,
        filename: str | os.PathLike[str],
        dtype: torch.dtype,
        shape: Sequence[int],
        index: Any = None,
        mode: str | None = None,
    ) -> MemoryMappedTensor:
        """Map an existing raw file holding a tensor of ``shape`` and ``dtype``
        (``index``, if given, is applied to the result). ``mode="r"`` maps it
        copy-on-write: the tensor can be modified, the file never is. Under
        ``FakeTensorMode`` it is a fake tensor of that shape and dtype, and the file is
        not opened (:mod:`tensordict.memmap._fake`).

        >>> import tempfile, os
        >>> path = os.path.join(tempfile.mkdtemp(), "y.memmap")
        >>> _ = MemoryMappedTensor.from_tensor(torch.arange(4), filename=path)
        >>> MemoryMappedTensor.from_filename(path, torch.int64, [2, 2], index=1)
        MemoryMappedTensor([2, 3])
        """
        filename = os.fspath(filename)
        if mode not in (None, "r", "r+", "w+"):
            raise ValueError(f"mode must be 'r', 'r+' or 'w+', got {mode!r}")
        if _fake.active():  # the file is not opened
            out = _fake.leaf(shape, dtype, None, isinstance(shape, torch.Tensor), filename)
            return out if index is None else out[index]
        if shape.__class__ is torch.Tensor and shape.ndim == 2:  # a nested tensor
            from tensordict.memmap import _nested

            flat = cls.from_filename(filename, dtype, [_nested_numel(shape)], mode=mode)
            out = _nested.view(flat, shape).as_subclass(cls)
            return out if index is None else out[index]
        try:
            size = os.path.getsize(filename)
        except FileNotFoundError:
            raise FileNotFoundError(f"memory-mapped file {filename} does not exist") from None
        out = map_sized(filename, dtype, torch.Size(shape), size, private=mode == "r")
        out = out.as_subclass(cls)
        return out if index is None else out[index]

    @classmethod
    def from_handler(cls, handler: Any, dtype: torch.dtype, shape: Sequence[int] | torch.Tensor,
                     index: Any = None) -> MemoryMappedTensor:
        """Rebuild a MemoryMappedTensor from a handler: a file name, a storage or the
        handle pickling sends for shared memory. Deprecated, as upstream.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     t = MemoryMappedTensor.from_handler(torch.UntypedStorage._new_shared(8),
        ...                                         torch.float32, [2])
        >>> t.shape
        torch.Size([2])
        """
        warnings.warn("MemoryMappedTensor.from_handler() is deprecated and will be removed "
                      "in TensorDict 0.17.", DeprecationWarning, stacklevel=2)
        if isinstance(handler, (str, os.PathLike)):
            return cls.from_filename(handler, dtype, shape, index)
        storage = handler.storage if isinstance(handler, _AnonymousHandle) else handler
        if shape.__class__ is torch.Tensor and shape.ndim == 2:
            from tensordict.memmap import _nested

            flat = cls.from_storage(storage, shape=[_nested_numel(shape)], dtype=dtype)
            out = _nested.view(flat, shape).as_subclass(cls)
        else:
            out = cls.from_storage(storage, shape=shape, dtype=dtype)
        return out if index is None else out[index]

    @classmethod
    def from_storage(
        cls,
        storage: torch.UntypedStorage | torch.TypedStorage,
        *,
        shape: Sequence[int] | None = None,
        dtype: torch.dtype | None = None,
        device: torch.device | str | None = None,
        index: Any = None,
        filename: str | os.PathLike[str] | None = None,
    ) -> MemoryMappedTensor:
        """A MemoryMappedTensor viewing an existing file-backed or shared ``storage``.

        >>> storage = torch.UntypedStorage._new_shared(8)
        >>> MemoryMappedTensor.from_storage(storage, dtype=torch.int32).shape
        torch.Size([2])
        """
        _check_device(device)
        if isinstance(storage, torch.TypedStorage):
            dtype = dtype or storage.dtype
            storage = storage.untyped()
        dtype = dtype or torch.get_default_dtype()
        if filename is not None and storage.filename != os.fspath(filename):
            raise ValueError(f"the storage does not map the file {os.fspath(filename)}")
        if shape is None:
            shape = (storage.nbytes() // dtype.itemsize,)
        shape = torch.Size(shape)
        out = torch.empty(0, dtype=dtype).set_(storage, 0, shape, contiguous_strides(shape))
        out = out.as_subclass(cls)
        return out if index is None else out[index]

    @classmethod
    def empty(cls, *size: Any, shape: Sequence[int] | None = None, dtype: torch.dtype | None = None,
              device: Any = None, filename: str | os.PathLike[str] | None = None,
              existsok: bool = False) -> MemoryMappedTensor:
        """An allocated map (zero-filled: files are created sparse, shared memory is fresh).
        A 2-D integer tensor as the shape gives a nested tensor of elements of those shapes
        (its file holds their values, one after the other), as for every constructor.

        >>> MemoryMappedTensor.empty(2, dtype=torch.int64).shape
        torch.Size([2])
        >>> MemoryMappedTensor.empty(torch.tensor([[2, 3], [1, 3]]))[1].shape
        torch.Size([1, 3])
        """
        _check_device(device)
        dtype = dtype or torch.get_default_dtype()
        filename = None if filename is None else os.fspath(filename)
        shape = _as_shape(size, shape)
        if shape.__class__ is torch.Size:
            return cls._create(shape, dtype, filename, existsok, None)
        from tensordict.memmap import _nested

        flat = cls._create(torch.Size([_nested_numel(shape)]), dtype, filename, existsok, None)
        return _nested.view(flat, shape).as_subclass(cls)

    @classmethod
    def zeros(cls, *size: Any, shape: Sequence[int] | None = None, dtype: torch.dtype | None = None,
              device: Any = None, filename: str | os.PathLike[str] | None = None,
              existsok: bool = False) -> MemoryMappedTensor:
        """A zero-filled map.

        >>> MemoryMappedTensor.zeros((2, 2))
        MemoryMappedTensor([[0., 0.],
                            [0., 0.]])
        """
        return cls.empty(*size, shape=shape, dtype=dtype, device=device, filename=filename,
                         existsok=existsok)

    @classmethod
    def ones(cls, *size: Any, shape: Sequence[int] | None = None, dtype: torch.dtype | None = None,
             device: Any = None, filename: str | os.PathLike[str] | None = None,
             existsok: bool = False) -> MemoryMappedTensor:
        """A map filled with ones.

        >>> MemoryMappedTensor.ones(2, dtype=torch.int32)
        MemoryMappedTensor([1, 1], dtype=torch.int32)
        """
        return cls.full(*size, shape=shape, fill_value=1, dtype=dtype, device=device,
                        filename=filename, existsok=existsok)

    @classmethod
    def full(cls, *size: Any, fill_value: Any, shape: Sequence[int] | None = None,
             dtype: torch.dtype | None = None, device: Any = None,
             filename: str | os.PathLike[str] | None = None,
             existsok: bool = False) -> MemoryMappedTensor:
        """A map filled with ``fill_value`` (keyword-only).

        >>> MemoryMappedTensor.full(2, fill_value=3.5)
        MemoryMappedTensor([3.5000, 3.5000])
        """
        out = cls.empty(*size, shape=shape, dtype=dtype, device=device, filename=filename,
                        existsok=existsok)
        if out.is_nested:  # fill the values the elements view
            out.values().fill_(fill_value)
        else:
            out.fill_(fill_value)
        return out

    @classmethod
    def empty_like(cls, input: torch.Tensor, *,
                   filename: str | os.PathLike[str] | None = None) -> MemoryMappedTensor:
        """An allocated map with the shape and dtype of ``input``.

        >>> MemoryMappedTensor.empty_like(torch.ones(3)).shape
        torch.Size([3])
        """
        return cls.empty(input.shape, dtype=input.dtype, filename=filename)

    @classmethod
    def zeros_like(cls, input: torch.Tensor, *,
                   filename: str | os.PathLike[str] | None = None) -> MemoryMappedTensor:
        """A zero-filled map with the shape and dtype of ``input``.

        >>> MemoryMappedTensor.zeros_like(torch.ones(2))
        MemoryMappedTensor([0., 0.])
        """
        return cls.zeros(input.shape, dtype=input.dtype, filename=filename)

    @classmethod
    def ones_like(cls, input: torch.Tensor, *,
                  filename: str | os.PathLike[str] | None = None) -> MemoryMappedTensor:
        """A map of ones with the shape and dtype of ``input``.

        >>> MemoryMappedTensor.ones_like(torch.zeros(2))
        MemoryMappedTensor([1., 1.])
        """
        return cls.ones(input.shape, dtype=input.dtype, filename=filename)

    @classmethod
    def full_like(cls, input: torch.Tensor, fill_value: Any, *,
                  filename: str | os.PathLike[str] | None = None) -> MemoryMappedTensor:
        """A map filled with ``fill_value`` with the shape and dtype of ``input``.

        >>> MemoryMappedTensor.full_like(torch.zeros(2), 2)
        MemoryMappedTensor([2., 2.])
        """
        return cls.full(input.shape, fill_value=fill_value, dtype=input.dtype,
                        filename=filename)

    # -- file -----------------------------------------------------------------------------
    @property
    def filename(self) -> str:
        """The mapped file (RuntimeError for an anonymous map)."""
        name = self.untyped_storage().filename
        if name is None:
            raise RuntimeError("The MemoryMappedTensor has no file associated.")
        return name

    def _maps_whole_file(self) -> bool:
        """Whether this tensor is its file's full contiguous content (not a view)."""
        storage = self.untyped_storage()
        return (self.storage_offset() == 0 and self.is_contiguous()
                and self.numel() * self.element_size() == storage.nbytes()
                and os.path.getsize(storage.filename) == storage.nbytes())

    # -- views stay memory-mapped -----------------------------------------------------------
    def __getitem__(self, index: Any) -> torch.Tensor:
        if is_row_index(index) and self.ndim:
            # rows picked by a 1-D index: index_select copies them several times faster
            # than advanced indexing; a negative or out-of-range index takes the general
            # path below (which wraps negatives and raises upstream's IndexError)
            try:
                return _index_select(self, 0, index)
            except (IndexError, RuntimeError):
                pass
        out = _getitem(self, index)
        return out.as_subclass(MemoryMappedTensor) if out._is_view() else out

    def unbind(self, dim: int = 0) -> tuple[MemoryMappedTensor, ...]:  # type: ignore[override]
        return tuple(t.as_subclass(MemoryMappedTensor) for t in torch.Tensor.unbind(self, dim))

    def split(self, split_size: Any, dim: int = 0) -> tuple[MemoryMappedTensor, ...]:  # type: ignore[override]
        return tuple(t.as_subclass(MemoryMappedTensor)
                     for t in torch.Tensor.split(self, split_size, dim))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[MemoryMappedTensor, ...]:  # type: ignore[override]
        return tuple(t.as_subclass(MemoryMappedTensor)
                     for t in torch.Tensor.chunk(self, chunks, dim))

    def detach(self) -> MemoryMappedTensor:  # type: ignore[override]
        """The same mapped data without autograd history (so ``nn.Parameter`` accepts a
        MemoryMappedTensor: loaded weights stay mapped in the module)."""
        return torch.Tensor.detach(self).as_subclass(MemoryMappedTensor)

    # -- pickling and copies ------------------------------------------------------------------
    def __reduce_ex__(self, protocol: Any) -> Any:
        storage = self.untyped_storage()
        source: str | _AnonymousHandle = storage.filename or _AnonymousHandle(storage)
        return _rebuild, (source, self.dtype, storage.nbytes(), self.storage_offset(),
                          tuple(self.shape), tuple(self.stride()))

    def __deepcopy__(self, memo: dict[int, Any]) -> torch.Tensor:
        """A deep copy is a plain tensor: it owns its data, no file."""
        return torch.Tensor.clone(self)


# ``td[index] = value`` writes into memory-mapped leaves as into plain tensors (fast path)
WRITABLE_AS_TENSOR.add(MemoryMappedTensor)
