"""Memmap archives (``.tdz``): a saved folder in one zip file that loads without a copy.

The entries of the zip are the files of the folder (``meta.json`` first in each folder,
then its other files in sorted order, then its sub-folders), so ``unzip`` gives the folder
back. As upstream tensordict 0.15.3 writes them, every entry has a ZIP64 local header, and
the data of each uncompressed ``.memmap`` entry starts at a multiple of 64 bytes (an extra
field of id ``0x6474``, ``"td"``, pads its local header): loading maps the archive once and
makes each leaf a view of that mapping. Compressed entries are read into memory instead.

An archive is always written in a temporary file beside its target and renamed over it:
a failed write leaves the previous archive untouched.

Example:
    >>> import os, tempfile, torch
    >>> from tensordict import TensorDict
    >>> folder = tempfile.mkdtemp()
    >>> _ = TensorDict(a=torch.arange(3)).memmap(os.path.join(folder, "saved"))
    >>> path = pack_memmap(os.path.join(folder, "saved"), os.path.join(folder, "saved.tdz"))
    >>> is_memmap_archive(path), TensorDict.load_memmap(path)["a"]
    (True, tensor([0, 1, 2]))
"""

from __future__ import annotations

import os
import shutil
import stat
import struct
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

from tensordict.memmap import _layout
from tensordict.memmap._tensor import _raw_bytes

SUFFIX = ".tdz"
_ALIGN = 64
_PAD_ID = 0x6474  # "td": the extra field that aligns the data of a leaf
_ZIP64_LOCAL = 20  # bytes of the ZIP64 extra field zipfile adds to a local header
_CHUNK = 1 << 22
_COMPRESSIONS = {"bzip2": zipfile.ZIP_BZIP2, "deflate": zipfile.ZIP_DEFLATED,
                 "deflated": zipfile.ZIP_DEFLATED, "lzma": zipfile.ZIP_LZMA,
                 "stored": zipfile.ZIP_STORED}


def compression_method(compression: str | int | None) -> int:
    """The :mod:`zipfile` constant of ``compression`` (a name, a constant or None)."""
    if compression is None:
        return zipfile.ZIP_STORED
    method = _COMPRESSIONS.get(compression) if isinstance(compression, str) else compression
    if method not in _COMPRESSIONS.values():
        raise ValueError(f"Unknown compression {compression!r}. Expected one of "
                         f"{sorted(_COMPRESSIONS)} or a zipfile compression constant.")
    return method


def is_memmap_archive(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a memory-mapped tensordict archive: a zip file with a top-level
    ``meta.json`` entry. A folder, a missing path or another file gives False.

    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> folder = tempfile.mkdtemp()
    >>> _ = TensorDict(a=torch.zeros(3)).save(folder + "/td.tdz")
    >>> is_memmap_archive(folder + "/td.tdz"), is_memmap_archive(folder)
    (True, False)
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            archive.getinfo(_layout.META)
    except (zipfile.BadZipFile, KeyError, OSError):
        return False
    return True


def _check_archive(path: str) -> None:
    if not is_memmap_archive(path):
        raise ValueError(f"{path} is not a memory-mapped tensordict archive.")


# -- writing -----------------------------------------------------------------------------
def _walk(folder: str, rel: str = "") -> Iterator[tuple[str, str]]:
    """``(path, entry name)`` of every file under ``folder``, in archive order."""
    files, dirs = [], []
    for entry in os.scandir(folder):
        (dirs if entry.is_dir() else files).append(entry.name)
    files.sort(key=lambda name: (name != _layout.META, name))
    for name in files:
        yield os.path.join(folder, name), rel + name
    for name in sorted(dirs):
        yield from _walk(os.path.join(folder, name), f"{rel}{name}/")


def _write_entry(archive: zipfile.ZipFile, path: str, name: str, method: int,
                 level: int | None, source: torch.Tensor | None = None) -> None:
    """Add the file at ``path`` as the entry ``name`` (its data taken from ``source``
    instead, if given)."""
    info = zipfile.ZipInfo(name, time.localtime()[:6])
    info.external_attr = 0o644 << 16
    leaf = name.endswith(".memmap")
    info.compress_type = method if leaf else zipfile.ZIP_STORED
    info._compresslevel = level  # type: ignore[attr-defined]
    if info.compress_type == zipfile.ZIP_STORED and leaf:
        header = archive.fp.tell() + 30 + len(info.filename.encode()) + 4 + _ZIP64_LOCAL
        pad = -header % _ALIGN
        info.extra = struct.pack("<HH", _PAD_ID, pad) + bytes(pad)
    with archive.open(info, "w", force_zip64=True) as dest:
        if source is not None:
            data = _raw_bytes(source)
            for start in range(0, len(data), _CHUNK):
                dest.write(data[start:start + _CHUNK])
            return
        with open(path, "rb") as file:
            shutil.copyfileobj(file, dest, _CHUNK)


def _new_file(target: str) -> str:
    """A new empty file beside ``target`` (mode: the umask's, or ``target``'s)."""
    parent, name = os.path.split(target)
    mode = stat.S_IMODE(os.stat(target).st_mode) if os.path.exists(target) else 0o666
    for _ in range(100):
        tmp = os.path.join(parent, f".{name}.{os.urandom(4).hex()}.tmp")
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"cannot create a temporary file beside {target}")


def write_archive(folder: str, target: str, compression: str | int | None = None,
                  compresslevel: int | None = None,
                  sources: dict[str, torch.Tensor] | None = None) -> Path:
    """Zip ``folder`` into ``target`` (through a temporary file renamed over it);
    ``sources``: the data of some of its files, by path (they are only allocated)."""
    method = compression_method(compression)
    target = os.path.realpath(target)  # a symbolic link is followed
    if os.path.isdir(target):
        raise ValueError(f"Cannot write an archive at {target}: it is an existing directory.")
    if os.path.exists(target) and not os.access(target, os.W_OK):
        raise PermissionError(f"Cannot replace {target}: the file is not writable.")
    tmp = _new_file(target)
    try:
        with zipfile.ZipFile(tmp, "w", allowZip64=True) as archive:
            for path, name in _walk(folder):
                _write_entry(archive, path, name, method, compresslevel,
                             None if sources is None else sources.get(path))
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    return Path(target)


def pack_memmap(prefix: str | os.PathLike[str], archive_path: str | os.PathLike[str], *,
                compression: str | int | None = None,
                compresslevel: int | None = None) -> Path:
    """Pack a folder written by ``memmap``/``save`` into a single-file archive.

    Leaves are stored uncompressed and 64-byte aligned by default, so that
    ``load_memmap(archive)`` maps them without a copy; a compressed archive
    (``compression="deflate"``, ``"bzip2"``, ``"lzma"`` or a :mod:`zipfile` constant) is
    smaller, and its leaves are read into memory. An existing archive is replaced only
    once the new one is complete.

    Raises ValueError if ``prefix`` has no ``meta.json``, or if ``archive_path`` is inside
    ``prefix``.

    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> folder = tempfile.mkdtemp()
    >>> _ = TensorDict(a=torch.zeros(3)).memmap(folder + "/saved")
    >>> pack_memmap(folder + "/saved", folder + "/saved.tdz").name
    'saved.tdz'
    """
    folder = os.path.abspath(os.fspath(prefix))
    if not os.path.isfile(os.path.join(folder, _layout.META)):
        raise ValueError(f"{folder} does not look like a memory-mapped tensordict directory "
                         "(no meta.json found).")
    target = os.path.abspath(os.fspath(archive_path))
    real_folder, real_target = os.path.realpath(folder), os.path.realpath(target)
    if Path(real_target).is_relative_to(real_folder):
        raise ValueError(f"The archive path {target} must be outside the source directory "
                         f"{folder} and must not alias a source file.")
    write_archive(folder, target, compression, compresslevel)
    return Path(target)


def save_to_archive(folder_writer: Callable[[str], dict[str, torch.Tensor]], target: str,
                    existsok: bool, compression: str | int | None) -> None:
    """Write an archive at ``target`` from the folder that ``folder_writer(path)`` saves
    (in a temporary folder beside ``target``, deleted afterwards), with the data files
    only allocated: it returns their data, by path."""
    compression_method(compression)
    if os.path.isdir(target):
        raise ValueError(f"Cannot write an archive at {target}: it is an existing directory.")
    if os.path.lexists(target) and not existsok:
        raise RuntimeError(f"A file already exists at {target}, cannot save the tensordict "
                           "there. Set existsok=True to overwrite.")
    parent = os.path.dirname(os.path.realpath(target))
    os.makedirs(parent, exist_ok=True)
    scratch = tempfile.mkdtemp(dir=parent, prefix=f".{os.path.basename(target)}.",
                               suffix=".dir")
    try:
        sources = folder_writer(os.path.join(scratch, "td"))
        write_archive(os.path.join(scratch, "td"), target, compression, sources=sources)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def unpack_memmap(archive_path: str | os.PathLike[str],
                  prefix: str | os.PathLike[str]) -> Path:
    """Extract an archive into the folder ``prefix`` (created if missing; files there are
    overwritten), the same as ``unzip``.

    >>> import os, tempfile, torch
    >>> from tensordict import TensorDict
    >>> folder = tempfile.mkdtemp()
    >>> _ = TensorDict(a=torch.zeros(3)).save(folder + "/td.tdz")
    >>> sorted(os.listdir(unpack_memmap(folder + "/td.tdz", folder + "/td")))
    ['a.memmap', 'meta.json']
    """
    path = os.fspath(archive_path)
    _check_archive(path)
    folder = Path(os.fspath(prefix))
    with zipfile.ZipFile(path) as archive:
        archive.extractall(folder)
    return folder


def refresh_archive_checksums(archive_path: str | os.PathLike[str]) -> Path:
    """Recompute the CRC-32 of every uncompressed entry of an archive, after in-place
    writes (``load_memmap(path, mode="r+")`` or ``memmap_like(".tdz")``) that left them
    stale: only tools that check them (``unzip``, :mod:`zipfile`) need this.

    >>> import tempfile, zipfile, torch
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp() + "/td.tdz"
    >>> _ = TensorDict(a=torch.zeros(3)).save(path)
    >>> _ = TensorDict.load_memmap(path, mode="r+")["a"].add_(1)
    >>> zipfile.ZipFile(path).testzip(), zipfile.ZipFile(refresh_archive_checksums(path)).testzip()
    ('a.memmap', None)
    """
    path = os.fspath(archive_path)
    _check_archive(path)
    with zipfile.ZipFile(path) as archive:
        infos, central = archive.infolist(), archive.start_dir  # type: ignore[attr-defined]
    with open(path, "r+b") as file:
        for info in infos:
            record = central
            file.seek(record + 28)
            sizes = struct.unpack("<HHH", file.read(6))
            central += 46 + sum(sizes)
            if info.compress_type != zipfile.ZIP_STORED:
                continue
            start = data_offset(file, info)
            crc, left = 0, info.file_size
            file.seek(start)
            while left:
                chunk = file.read(min(left, _CHUNK))
                crc, left = zlib.crc32(chunk, crc), left - len(chunk)
            if crc != info.CRC:
                packed = struct.pack("<I", crc)
                for offset in (info.header_offset + 14, record + 16):
                    file.seek(offset)
                    file.write(packed)
    return Path(path)


# -- reading ---------------------------------------------------------------------------------
def data_offset(file: Any, info: zipfile.ZipInfo) -> int:
    """Where the data of the entry ``info`` starts in the open zip ``file``."""
    file.seek(info.header_offset + 26)
    name_len, extra_len = struct.unpack("<HH", file.read(4))
    return info.header_offset + 30 + name_len + extra_len


class Archive:
    """An archive opened for loading (a context manager: it holds the open zip file): its
    entries by path, and tensors viewing them.

    Paths are those of the folder the archive stands for: ``<archive path>/<entry>``.
    ``writable``: leaves write through to the archive (``mode="r+"``); otherwise writes
    stay in memory (copy-on-write).
    """

    def __init__(self, path: str, writable: bool) -> None:
        self.root = os.path.realpath(path)
        self.writable = writable
        try:
            self._zip = zipfile.ZipFile(self.root)
        except zipfile.BadZipFile:
            raise ValueError(f"{path} is a file, not a folder written by memmap/save nor a "
                             "memory-mapped tensordict archive") from None
        self._entries = {info.filename: info for info in self._zip.infolist()}
        if _layout.META not in self._entries:
            self._zip.close()
            raise ValueError(f"{path} is a zip file, but not a memory-mapped tensordict "
                             "archive: it has no top-level meta.json")
        self._dirs = {name.rsplit("/", i)[0] for name in self._entries
                      for i in range(1, name.count("/") + 1)}
        self._mapped: torch.Tensor | None = None

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    def _name(self, path: str) -> str:
        """The entry name of ``path`` (built by joining names to :attr:`root`)."""
        return path[len(self.root) + 1:].replace(os.sep, "/")

    def leaf_path(self, folder: str, key: str, robust: bool) -> str:
        """The path of the leaf ``key`` of ``folder`` (see :func:`_layout.leaf_path`)."""
        path = os.path.join(folder, _layout.key_to_name(key, robust) + ".memmap")
        if robust and self._name(path) not in self._entries:
            try:
                raw = os.path.join(folder, _layout.key_to_name(key, robust=False) + ".memmap")
            except ValueError:
                return path
            if self._name(raw) in self._entries:
                return raw
        return path

    def isdir(self, path: str) -> bool:
        return self._name(path) in self._dirs

    def exists(self, path: str) -> bool:
        return self._name(path) in self._entries

    def read_bytes(self, path: str) -> bytes:
        name = self._name(path)
        if name not in self._entries:
            raise FileNotFoundError(f"{path} is missing from the archive {self.root}")
        return self._zip.read(name)

    def read_meta(self, folder: str) -> dict[str, Any]:
        return _layout.parse_meta(self.read_bytes(os.path.join(folder, _layout.META)),
                                  os.path.join(folder, _layout.META))

    def tensor(self, path: str, dtype: torch.dtype, shape: torch.Size) -> torch.Tensor:
        """The leaf stored at ``path``: a view of the mapped archive when it is stored
        uncompressed and aligned, else a copy in memory."""
        nbytes = shape.numel() * dtype.itemsize
        info = self._entries.get(self._name(path))
        if info is None:
            if nbytes == 0:  # no file is written for an empty tensor
                return torch.empty(shape, dtype=dtype)
            raise FileNotFoundError(f"{path} is missing from the archive {self.root}")
        if info.file_size < nbytes:
            raise ValueError(f"{path} is truncated: a {dtype} tensor of shape {list(shape)} "
                             f"needs {nbytes} bytes, the entry has {info.file_size}")
        if info.compress_type != zipfile.ZIP_STORED:
            if self.writable:
                raise RuntimeError(
                    f"Cannot open {self.root} with mode='r+': entry {info.filename!r} is "
                    "compressed, so in-place writes cannot propagate to the file. Re-save "
                    "the archive without compression to make it writable.")
            return self._copy(path, dtype, shape, nbytes)
        start = data_offset(self._zip.fp, info)
        if start % dtype.itemsize:  # not written by this package nor upstream: a copy
            return self._copy(path, dtype, shape, nbytes)
        if self._mapped is None:
            self._mapped = torch.from_file(self.root, shared=self.writable,
                                           size=os.path.getsize(self.root), dtype=torch.uint8)
        return self._mapped[start:start + nbytes].view(dtype).view(shape)

    def _copy(self, path: str, dtype: torch.dtype, shape: torch.Size,
              nbytes: int) -> torch.Tensor:
        out = torch.empty(shape, dtype=dtype)
        if nbytes:
            data = bytearray(self.read_bytes(path)[:nbytes])
            out.view(-1).view(torch.uint8).copy_(torch.frombuffer(data, dtype=torch.uint8))
        return out
