"""The memmap methods every tensor collection gets from this plugin, the top-level
functions (``tensordict.memmap``, ``load_memmap``, ``save``, ``load``) and the ``memmap``
storage backend.

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> td = TensorDict(a=torch.zeros(2), batch_size=[2]).memmap_(path)
    >>> td.is_memmap(), td.saved_path == path
    (True, True)
    >>> TensorDict.load_memmap(path)["a"]
    MemoryMappedTensor([0., 0.])
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

from tensordict import NestedKey, TensorDict
from tensordict.extending import key_to_path, unlock_tree
from tensordict.memmap import _archive, _layout, _load, _save, _state
from tensordict.memmap._tensor import MemoryMappedTensor

PathLike = str | os.PathLike[str]


_target = _save.data_of
_MARKED = _state.REGISTRY


# -- writing --------------------------------------------------------------------------------
def memmap(self: Any, prefix: PathLike | None = None, copy_existing: bool = False, *,
           num_threads: int = 0, return_early: bool = False, share_non_tensor: bool = False,
           existsok: bool = True, robust_key: bool | None = True, archive: bool | None = None,
           compression: str | int | None = None, atomic: bool = False,
           allow_pickle: bool = True) -> Any:
    """Write every tensor to a memory-mapped file under ``prefix`` and return a new locked
    collection of :class:`MemoryMappedTensor` (on the CPU); or write an archive (see
    ``archive``) and return it loaded (unlocked, its leaves plain tensors viewing it).

    A save to a folder is atomic: it is written in a temporary folder beside ``prefix``
    and renamed into place, so a crash or an error (a full disk...) at any moment leaves
    the earlier save at ``prefix`` (or nothing, for a first save), or the complete new
    one; until the swap, the disk holds both. Files in ``prefix`` that no save wrote are
    kept.

    Args:
        prefix: the folder (one sub-folder per sub-collection); None uses anonymous
            shared memory instead of files.
        copy_existing: copy leaves already memory-mapped elsewhere (otherwise an error;
            an archive always copies them).
        num_threads: write the files with this many threads.
        return_early: with ``num_threads > 0``, return a :class:`TensorDictFuture`.
        share_non_tensor: non-tensor values (JSON ones, in a folder) are read from and
            written to their ``meta.json``, so an in-place update (``set_``, ``update_``)
            in any process is seen by every process holding this collection.
        existsok: overwrite existing files (otherwise an error).
        robust_key: escape keys that are not valid file names (``%XX``).
        archive: write one ``.tdz`` archive file (:func:`tensordict.pack_memmap`) instead
            of a folder; None: when ``prefix`` ends with ``.tdz``. It is written in a
            temporary file renamed over ``prefix``: a failed write leaves the old archive.
        compression: of the archive's leaves: ``"deflate"``, ``"bzip2"``, ``"lzma"``
            (read into memory when loaded) or None (stored, mapped without a copy).
        atomic: accepted for compatibility: every save to a folder is atomic (as upstream,
            ``atomic=True`` needs a ``prefix``).
        allow_pickle: store non-tensor values that JSON cannot hold with pickle, as
            upstream does (False: such a value is a TypeError and nothing is written).
            JSON values, NaN and infinities, tuples and bytes (and lists and dicts of
            them) are never pickled: they load back exactly. A pickle of plain data
            (containers, tensors, numpy arrays) loads by default; any other needs
            ``load_memmap(..., allow_pickle=True)``.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.ones(2), "s": "text"}, [2]).memmap(tempfile.mkdtemp())
    >>> td.is_locked, td["s"], td.device
    (True, 'text', device(type='cpu'))
    """
    _check_atomic(prefix, atomic)
    target = _archive_target(prefix, archive, return_early)
    if target is None and compression is not None:
        raise ValueError("compression is only supported when writing a memmap archive (pass "
                         "archive=True or use a '.tdz' prefix).")
    if target is not None:
        return _save_archive(self, target, num_threads=num_threads, existsok=existsok,
                             robust_key=robust_key, like=False, share=share_non_tensor,
                             allow_pickle=allow_pickle, compression=compression)
    return _save.save(self, prefix, copy_existing=copy_existing, num_threads=num_threads,
                      return_early=return_early, existsok=existsok, robust_key=robust_key,
                      like=False, share=share_non_tensor, allow_pickle=allow_pickle)


def _archive_target(prefix: PathLike | None, archive: bool | None,
                    return_early: bool) -> str | None:
    """The archive to write (None: write a folder): ``prefix`` if ``archive``, or if
    ``archive`` is None and ``prefix`` ends with ``.tdz``."""
    if archive is None:
        archive = prefix is not None and os.fspath(prefix).endswith(_archive.SUFFIX)
    if not archive:
        return None
    if prefix is None:
        raise ValueError("A path is required to write a memmap archive.")
    if return_early:
        raise NotImplementedError(
            "return_early is not supported when writing a memmap archive.")
    return os.path.abspath(os.fspath(prefix))


def _save_archive(collection: Any, target: str, *, existsok: bool, like: bool,
                  compression: str | int | None, allow_pickle: bool, **options: Any) -> Any:
    """Write ``collection`` as an archive at ``target`` and load it (``memmap_like``:
    writable, its leaves writing into the archive)."""
    def write(folder: str) -> dict[str, torch.Tensor]:
        sources: dict[str, torch.Tensor] = {}
        _save.save(collection, folder, return_early=False, existsok=True, like=like,
                   allow_pickle=allow_pickle, copy_existing=True, sources=sources, **options)
        return sources

    _archive.save_to_archive(write, target, existsok, compression)
    return _load.load(target, cls=type(collection), mode="r+" if like else None,
                      allow_pickle=allow_pickle)


def _check_atomic(prefix: PathLike | None, atomic: bool) -> None:
    if atomic and prefix is None:
        raise ValueError("atomic=True needs a prefix to write the directory to.")


def dumps(self: Any, prefix: PathLike | None = None, copy_existing: bool = False, *,
          num_threads: int = 0, return_early: bool = False, share_non_tensor: bool = False,
          robust_key: bool | None = True, archive: bool | None = None,
          compression: str | int | None = None, atomic: bool = False,
          allow_pickle: bool = True) -> Any:
    """Save to disk: same as :func:`memmap`.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> TensorDict(a=torch.ones(1)).dumps(tempfile.mkdtemp()).is_memmap()
    True
    """
    return memmap(self, prefix, copy_existing, num_threads=num_threads,
                  return_early=return_early, share_non_tensor=share_non_tensor,
                  robust_key=robust_key, archive=archive, compression=compression,
                  atomic=atomic, allow_pickle=allow_pickle)


def memmap_like(self: Any, prefix: PathLike | None = None, copy_existing: bool = False, *,
                existsok: bool = True, num_threads: int = 0, return_early: bool = False,
                share_non_tensor: bool = False, robust_key: bool | None = True,
                archive: bool | None = None, allow_pickle: bool = True) -> Any:
    """Like :func:`memmap` (atomic too), allocating zero-filled (sparse) files of the same
    shapes without copying any value: the way to create a dataset larger than memory.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> template = torch.zeros(64, 64, 3, dtype=torch.uint8).expand(10_000, 64, 64, 3)
    >>> data = TensorDict(images=template, batch_size=[10_000]).memmap_like(tempfile.mkdtemp())
    >>> data["images"][3] = 255
    >>> data["images"][3].float().mean().item(), data.batch_size
    (255.0, torch.Size([10000]))

    An archive (``archive``, as for :func:`memmap`) is loaded writable: writes to its
    leaves reach the archive (then call :func:`tensordict.refresh_archive_checksums`
    before giving it to a tool that checks them).
    """
    target = _archive_target(prefix, archive, return_early)
    if target is not None:
        return _save_archive(self, target, num_threads=num_threads, existsok=existsok,
                             robust_key=robust_key, like=True, share=share_non_tensor,
                             allow_pickle=allow_pickle, compression=None)
    return _save.save(self, prefix, copy_existing=copy_existing, num_threads=num_threads,
                      return_early=return_early, existsok=existsok, robust_key=robust_key,
                      like=True, share=share_non_tensor, allow_pickle=allow_pickle)


def memmap_(self: Any, prefix: PathLike | None = None, copy_existing: bool = False, *,
            num_threads: int = 0, return_early: bool = False, share_non_tensor: bool = False,
            existsok: bool = True, robust_key: bool | None = True, atomic: bool = False,
            allow_pickle: bool = True) -> Any:
    """:func:`memmap` in place (atomic too): this collection's leaves become memory-mapped
    at their final paths and it is locked. Nothing changes if writing fails.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.ones(2))
    >>> td.memmap_(tempfile.mkdtemp()) is td, type(td["a"]).__name__
    (True, 'MemoryMappedTensor')
    """
    _check_atomic(prefix, atomic)
    return _save.save(self, prefix, copy_existing=copy_existing, num_threads=num_threads,
                      return_early=return_early, existsok=existsok, robust_key=robust_key,
                      like=False, share=share_non_tensor, allow_pickle=allow_pickle,
                      then=lambda new: _adopt(self, new))


@contextmanager
def _unlocked(collection: Any) -> Iterator[None]:
    locked = collection.is_locked
    if locked:
        unlock_tree(collection)
    try:
        yield
    finally:
        if locked:
            collection._propagate_lock(True)


def _adopt(old: Any, new: Any) -> Any:
    """Make ``old`` hold ``new``'s entries, keeping the identity of every sub-collection."""
    from tensordict import TensorDict

    what = _state.kind(old)
    if what in ("nontensor", "nontensorstack"):  # nothing memory-mapped to adopt
        return old
    target = _target(old)
    if target is not old:  # a tensorclass or TypedTensorDict: the TensorDict of its data
        _adopt(target, _target(new))
        return old
    if what == "lazy":
        for part, new_part in zip(old.tensordicts, new.tensordicts, strict=True):
            _adopt(part, new_part)
    else:
        with _unlocked(old):
            for key in list(old._keys_str()):
                if key not in new._keys_str():
                    old._del_str(key)
            for key in new._keys_str():
                value, current = new._get_str(key), old._get_str(key, None)
                nested = _state.kind(value)
                if nested in ("tensordict", "lazy", "tensorclass") and (
                        _state.kind(current) == nested):
                    _adopt(current, value)
                else:
                    old._set_str(key, value, inplace=False, validated=True)
        if isinstance(old, TensorDict):
            old._device = new.device
    if new.is_locked and not old.is_locked:
        _save.lock_levels(old)
    if _state.is_memmap(new):
        _state.mark(old, _state.saved_path(new))
    return old


# -- reading --------------------------------------------------------------------------------
def load_memmap(cls: Any, prefix: PathLike, device: Any = None, non_blocking: bool = False, *,
                out: Any = None, robust_key: bool | None = True, subpath: NestedKey | None = None,
                mode: str | None = None, num_threads: int = 0,
                allow_pickle: bool | None = False) -> Any:
    """Load a collection saved with :func:`memmap` (or any saved sub-folder of one), or
    an archive (:func:`tensordict.pack_memmap`).

    Tensors are memory-mapped, not read (the leaves of an archive are plain tensors
    viewing the mapped archive; compressed ones are read). The result is unlocked.

    Args:
        prefix: the saved folder, or archive.
        device: move the tensors there; ``"meta"`` reads only the metadata.
        non_blocking: passed to the device moves.
        out: update this collection with the loaded entries and return it.
        robust_key: keys were escaped when saving (files with raw key names are found
            too).
        subpath: load only the sub-collection saved under this key.
        mode: ``"r"``: writes to the leaves stay in memory; ``"r+"``: they reach the files
            (an archive's leaves then write into it); None: ``"r+"`` for writable files of
            a folder, ``"r"`` for an archive.
        num_threads: accepted for compatibility; mapping files needs no threads.
        allow_pickle: trust the folder: load any non-tensor data stored with pickle, and
            import the module of a tensorclass it names. Without it, only pickles of plain
            data load (containers, numbers, strings, tensors, numpy arrays: what a state
            dict holds), any other is an ``UnpicklingError`` naming what it needs, and a
            tensorclass must already be defined (its module imported), or be ``cls``
            itself (``MyClass.load_memmap(path)``).

    Nothing outside ``prefix`` is read: a symbolic link leading out of it is a
    ValueError. If ``prefix`` is missing because a save to it was killed between its two
    renames, the earlier save, set aside beside it, is loaded (with a RuntimeWarning).

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = TensorDict({"layer": {"w": torch.ones(2, 2)}}).memmap(path)
    >>> TensorDict.load_memmap(path + "/layer")["w"].sum().item()
    4.0

    Under ``FakeTensorMode`` the leaves are fake tensors of the saved shapes and dtypes,
    and no tensor file is opened (to plan or trace a model from a checkpoint):

    >>> from torch._subclasses.fake_tensor import FakeTensorMode
    >>> with FakeTensorMode():
    ...     w = TensorDict.load_memmap(path)["layer", "w"]
    >>> type(w).__name__, w.shape
    ('FakeTensor', torch.Size([2, 2]))
    """
    loaded = _load.load(prefix, device, non_blocking, robust_key=robust_key,
                        allow_pickle=allow_pickle, cls=cls, subpath=subpath, mode=mode)
    if out is None:
        return loaded
    out.update(loaded)
    return out


def load_memmap_(self: Any, prefix: PathLike, robust_key: bool | None = True, *,
                 allow_pickle: bool | None = False, mode: str | None = None) -> Any:
    """Update this collection with the entries saved under ``prefix``; returns self.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = TensorDict(a=torch.ones(1)).memmap(path)
    >>> TensorDict().load_memmap_(path)["a"]
    MemoryMappedTensor([1.])
    """
    return load_memmap(type(self), prefix, out=self, robust_key=robust_key,
                       allow_pickle=allow_pickle, mode=mode)


def load_(self: Any, prefix: PathLike, *args: Any, **kwargs: Any) -> Any:
    """Same as :func:`load_memmap_`."""
    return load_memmap_(self, prefix, *args, **kwargs)


def memmap_refresh_(self: Any, *, allow_pickle: bool | None = False) -> Any:
    """Re-read this memmapped collection from its folder (entries written there since by
    another process appear); returns self.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> td = TensorDict(a=torch.ones(1)).memmap(path)
    >>> _ = TensorDict(a=torch.ones(1), b=torch.zeros(1)).memmap(path)
    >>> sorted(td.memmap_refresh_().keys())
    ['a', 'b']
    """
    path = _state.saved_path(_target(self)) if is_memmap(self) else None
    if path is None:
        raise RuntimeError(
            "Cannot refresh a TensorDict that is not memory mapped or has no path associated."
        )
    return _adopt(self, _load.load(path, allow_pickle=allow_pickle))


# -- state ----------------------------------------------------------------------------------
def is_memmap(self: Any) -> bool:
    """Whether this collection was created by ``memmap`` and is still locked (unlocking
    ends that state).

    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.ones(1)).memmap()
    >>> td.is_memmap(), td.unlock_().is_memmap()
    (True, False)
    """
    if self.__class__ is TensorDict:  # the hot path: its own entries, unlocked unless
        return self._is_locked and id(self) in _MARKED and _state.is_memmap(self)  # saved
    target = _target(self)
    return id(target) in _MARKED and _state.is_memmap(target)


def _saved_path(self: Any) -> str | None:
    """The folder this memmapped collection lives in (None for shared memory).

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> TensorDict({"n": {"a": torch.ones(1)}}).memmap(path)["n"].saved_path == path + "/n"
    True
    """
    return _state.saved_path(_target(self))


saved_path = property(_saved_path)


# -- adding one leaf to a memmapped collection ---------------------------------------------------
def _new_leaf(self: Any, key: NestedKey, robust_key: bool | None,
              make: Any) -> MemoryMappedTensor:
    path = key_to_path(key)
    td = _target(self)
    parent = td._get_path(path[:-1]) if len(path) > 1 else td
    if not _state.is_memmap(parent):
        raise RuntimeError(
            f"cannot add the memory-mapped entry {key!r}: the TensorDict is not memory-mapped"
        )
    folder = _state.saved_path(parent)
    filename = None if folder is None else os.path.join(
        folder, _layout.key_to_name(path[-1], robust_key is not False) + ".memmap")
    tensor = make(filename)
    with _unlocked(parent):
        parent._set_str(path[-1], tensor, inplace=False, validated=False)
    if folder is not None:  # rewrite the folder's meta.json; every other leaf is reused
        memmap_(parent, folder, robust_key=robust_key)
    return tensor


def make_memmap(self: Any, key: NestedKey, shape: torch.Size | Any, *,
                dtype: torch.dtype | None = None,
                robust_key: bool | None = True) -> MemoryMappedTensor:
    """Add an empty memory-mapped tensor under ``key`` of a memmapped TensorDict (its file
    and meta.json are written at once); returns it.

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> td = TensorDict(batch_size=[2]).memmap(tempfile.mkdtemp())
    >>> td.make_memmap("x", [2, 3]).shape, TensorDict.load_memmap(td.saved_path)["x"].shape
    (torch.Size([2, 3]), torch.Size([2, 3]))
    """
    return _new_leaf(self, key, robust_key, lambda filename: MemoryMappedTensor.empty(
        shape, dtype=dtype, filename=filename, existsok=True))


def make_memmap_from_tensor(self: Any, key: NestedKey, tensor: torch.Tensor, *,
                            copy_data: bool = True, existsok: bool = True,
                            robust_key: bool | None = True) -> MemoryMappedTensor:
    """Add a memory-mapped copy of ``tensor`` under ``key`` of a memmapped TensorDict.

    >>> from tensordict import TensorDict
    >>> td = TensorDict(batch_size=[2]).memmap()
    >>> td.make_memmap_from_tensor("y", torch.ones(2))
    MemoryMappedTensor([1., 1.])
    """
    return _new_leaf(self, key, robust_key, lambda filename: MemoryMappedTensor.from_tensor(
        tensor, filename=filename, existsok=existsok, copy_data=copy_data))


def make_memmap_from_storage(self: Any, key: NestedKey, storage: torch.UntypedStorage,
                             shape: torch.Size | Any, *, dtype: torch.dtype | None = None,
                             robust_key: bool | None = True) -> MemoryMappedTensor:
    """Add a tensor viewing ``storage`` (which must map the key's file, or be shared memory
    for an anonymous TensorDict) under ``key``.

    >>> from tensordict import TensorDict
    >>> td = TensorDict().memmap()
    >>> td.make_memmap_from_storage("z", torch.UntypedStorage._new_shared(8), [2],
    ...                             dtype=torch.float32).shape
    torch.Size([2])
    """
    return _new_leaf(self, key, robust_key, lambda filename: MemoryMappedTensor.from_storage(
        storage, shape=shape, dtype=dtype, filename=filename))


# -- module-level functions and the storage backend ---------------------------------------------
def memmap_function(data: Any, prefix: PathLike | None = None, copy_existing: bool = False, *,
                    num_threads: int = 0, return_early: bool = False,
                    share_non_tensor: bool = False, existsok: bool = True,
                    robust_key: bool | None = True, archive: bool | None = None,
                    compression: str | int | None = None, atomic: bool = False,
                    allow_pickle: bool = True) -> Any:
    """``tensordict.memmap(data, prefix)``: same as ``data.memmap(prefix)``.

    >>> import tempfile, tensordict
    >>> tensordict.memmap(tensordict.TensorDict(a=torch.ones(1)), tempfile.mkdtemp()).is_memmap()
    True
    """
    return memmap(data, prefix, copy_existing, num_threads=num_threads,
                  return_early=return_early, share_non_tensor=share_non_tensor,
                  existsok=existsok, robust_key=robust_key, archive=archive,
                  compression=compression, atomic=atomic, allow_pickle=allow_pickle)


def load_memmap_function(prefix: PathLike, device: Any = None, non_blocking: bool = False, *,
                         out: Any = None, robust_key: bool | None = True,
                         subpath: NestedKey | None = None, mode: str | None = None,
                         num_threads: int = 0, allow_pickle: bool | None = False) -> Any:
    """``tensordict.load_memmap(prefix)``: load a saved collection of any kind.

    >>> import tempfile, tensordict
    >>> path = tempfile.mkdtemp()
    >>> _ = tensordict.save(tensordict.TensorDict(a=torch.ones(1)), path)
    >>> tensordict.load(path)["a"]
    MemoryMappedTensor([1.])
    """
    return load_memmap(None, prefix, device, non_blocking, out=out, robust_key=robust_key,
                       subpath=subpath, mode=mode, num_threads=num_threads,
                       allow_pickle=allow_pickle)


class MemmapBackend:
    """The ``memmap`` storage backend: a folder per collection, ``meta.json`` and raw
    ``.memmap`` files (upstream tensordict's format).

    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> backend, path = MemmapBackend(), tempfile.mkdtemp()
    >>> _ = backend.save(TensorDict(a=torch.ones(1)), path)
    >>> backend.can_load(path), backend.load(path)["a"]
    (True, MemoryMappedTensor([1.]))
    """

    def save(self, td: Any, path: PathLike, **kwargs: Any) -> Any:
        """Write ``td`` under ``path`` (keywords of :func:`memmap`)."""
        return memmap(td, path, **kwargs)

    def load(self, path: PathLike, **kwargs: Any) -> Any:
        """Load what :meth:`save` wrote (keywords of :func:`load_memmap`)."""
        return load_memmap(None, path, **kwargs)

    def can_load(self, path: PathLike) -> bool:
        """Whether ``path`` is a folder holding a ``meta.json``, or an archive."""
        return os.path.isfile(os.path.join(os.fspath(path), _layout.META)) or \
            _archive.is_memmap_archive(path)

    def from_schema(self, prototype: Any, *, device: Any = None, prefix: PathLike | None = None,
                    **kwargs: Any) -> Any:
        """``TensorDict.from_schema(..., storage="memmap", prefix=...)``: zero-filled
        memory-mapped tensors (keywords of :func:`memmap_like`; ``device`` is ignored)."""
        return memmap_like(prototype, prefix, **kwargs)


METHODS: dict[str, Any] = {
    "memmap": memmap,
    "memmap_": memmap_,
    "memmap_like": memmap_like,
    "dumps": dumps,
    "load_memmap": classmethod(load_memmap),
    "load_memmap_": load_memmap_,
    "load_": load_,
    "memmap_refresh_": memmap_refresh_,
    "is_memmap": is_memmap,
    "saved_path": saved_path,
    "make_memmap": make_memmap,
    "make_memmap_from_tensor": make_memmap_from_tensor,
    "make_memmap_from_storage": make_memmap_from_storage,
}
