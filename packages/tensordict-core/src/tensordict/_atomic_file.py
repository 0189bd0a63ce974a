"""Atomic writes for storage plugins: the new file (or folder) is written under a
temporary name beside the target, then renamed over it, so a failed write leaves no
partial file and the previous one as it was.

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
    >>> def write(tmp):
    ...     with open(tmp, "wb") as file:
    ...         _ = file.write(b"new")
    >>> atomic_write(path, write)
    >>> open(path, "rb").read(), os.listdir(os.path.dirname(path))
    (b'new', ['data.bin'])
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path


def atomic_write(path: str | Path, write: Callable[[str], object]) -> None:
    """Call ``write(tmp)`` with a fresh path beside ``path``, then rename it to ``path``.

    ``write`` creates the temporary file, or folder (a Zarr store), whose name has 64
    random bits; it is removed if ``write`` or the rename fails. A folder replaces an
    existing one by setting the old one aside first and deleting it last.
    """
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{secrets.token_hex(8)}.tmp")
    try:
        write(tmp)
        if os.path.isdir(tmp):
            _replace_folder(tmp, path)
        elif os.path.isdir(path):
            raise IsADirectoryError(f"cannot write {path}: it is a folder")
        else:
            os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _replace_folder(tmp: str, path: str) -> None:
    if not os.path.exists(path):
        os.replace(tmp, path)
        return
    if not os.path.isdir(path):
        raise NotADirectoryError(f"cannot write the folder {path}: a file has that name")
    aside = tmp + ".old"
    os.replace(path, aside)
    try:
        os.replace(tmp, path)
    except BaseException:
        os.replace(aside, path)
        raise
    _remove(aside)


def _remove(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.unlink(path)
