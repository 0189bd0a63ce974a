"""The on-disk layout (upstream tensordict 0.15.3, format version 1): file names of keys,
``meta.json`` reading and atomic writing, which files a save wrote, and the check that
what a folder points to stays inside it.

A folder per collection holds ``meta.json`` and one raw ``<key>.memmap`` file per tensor
(nested/ragged tensors add ``<key>.shape.memmap``); sub-collections are sub-folders.

Example:
    >>> key_to_name("a/b"), key_to_name(""), key_to_name(".."), key_to_name("obs")
    ('a%2Fb', '%', '%2E%2E', 'obs')
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import torch

META = "meta.json"
FORMAT_VERSION = 1
#: Fields of a TensorDict's meta.json next to its entries: keys with these names cannot
#: be stored (the format would silently lose them).
NODE_FIELDS = frozenset({"shape", "device", "_type", "_format_version", "_class", "_names"})
_TMP_PREFIX = ".meta.json."
_UNSAFE = re.compile(r'[/<>:"|?*\\ %\x00-\x1f\x7f]')  # escaped as %XX


def key_to_name(key: str, robust: bool = True) -> str:
    """The file-system name of ``key`` inside its folder (never a path: no separator,
    never ``.``/``..``, never empty)."""
    if not robust:
        if key in ("", ".", "..") or "/" in key or "\0" in key:
            raise ValueError(
                f"key {key!r} is not a valid file name; save with robust_key=True to escape it"
            )
        return key
    if _UNSAFE.search(key) is None:
        if key in ("", ".", ".."):
            return "%2E" * len(key) if key else "%"
        return key
    return _UNSAFE.sub(_escape, key)


def _escape(match: re.Match[str]) -> str:
    return f"%{ord(match.group()):02X}"


def leaf_path(folder: str, key: str, robust: bool = True) -> tuple[str, os.stat_result | None]:
    """Where the tensor stored under ``key`` lives, and its ``lstat`` (None: nothing is
    there); for loading, a folder written with raw key names (older tensordict,
    ``robust_key=False``) is found too."""
    path = os.path.join(folder, key_to_name(key, robust) + ".memmap")
    info = _lstat(path)
    if robust and info is None:
        try:
            raw = os.path.join(folder, key_to_name(key, robust=False) + ".memmap")
        except ValueError:
            return path, None
        raw_info = _lstat(raw)
        if raw_info is not None:
            return raw, raw_info
    return path, info


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None


def child_path(folder: str, key: str, robust: bool = True) -> str:
    """The sub-folder of the collection stored under ``key`` (see :func:`leaf_path`);
    a key named ``meta.json`` gets an escaped folder name."""
    name = key_to_name(key, robust)
    if name == META:
        if not robust:
            raise ValueError("a sub-collection named 'meta.json' needs robust_key=True")
        name = "meta%2Ejson"
    path = os.path.join(folder, name)
    if robust and not os.path.isdir(path):
        try:
            raw = os.path.join(folder, key_to_name(key, robust=False))
        except ValueError:
            return path
        if os.path.isdir(raw):
            return raw
    return path


# -- meta.json -------------------------------------------------------------------------------
def dumps_meta(meta: dict[str, Any], compact: bool = False) -> str:
    """meta.json text, laid out as upstream writes it."""
    if compact:
        return json.dumps(meta, separators=(",", ":"), allow_nan=False)
    return json.dumps(meta, allow_nan=False)


def write_meta(folder: str, text: str) -> None:
    """Write ``folder/meta.json`` atomically (a reader sees the old file or the new one)."""
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=_TMP_PREFIX, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(tmp, os.path.join(folder, META))
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_meta(folder: str) -> dict[str, Any]:
    """The parsed ``folder/meta.json``; errors name the file."""
    path = os.path.join(folder, META)
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        if not os.path.exists(folder):
            raise FileNotFoundError(
                f"no saved TensorDict at {folder}: the folder does not exist") from None
        raise FileNotFoundError(
            f"{path} is missing: {folder} is not a saved TensorDict, or its save did not finish"
        ) from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a directory, not a meta.json file") from None
    return parse_meta(text, path)


def parse_meta(text: str | bytes, path: str) -> dict[str, Any]:
    """The parsed text of the ``meta.json`` at ``path`` (ValueError naming it if corrupt)."""
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"{path} is corrupt (not valid JSON: {err})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{path} is corrupt: expected a JSON object, got {type(meta).__name__}")
    return meta


def parse_dtype(name: Any, where: str, key: str | None = None) -> torch.dtype:
    """The torch dtype written as ``"torch.float32"`` (the error names ``where`` and the
    entry ``key``)."""
    dtype = _DTYPES.get(name) if name.__class__ is str else None
    if dtype is None:
        dtype = getattr(torch, name[len("torch."):], None) if isinstance(name, str) else None
        if not isinstance(dtype, torch.dtype) or not name.startswith("torch."):
            entry = "" if key is None else f", entry {key!r}"
            raise ValueError(f"{where}{entry}: unknown dtype {name!r}")
        _DTYPES[name] = dtype
    return dtype


_DTYPES: dict[str, torch.dtype] = {}


# -- what an earlier save wrote ---------------------------------------------------------------
def _names_of(key: str, suffix: str = "") -> set[str]:
    """The file names ``key`` may have been saved under (escaped, or raw by older saves)."""
    names = {key_to_name(key) + suffix}
    try:
        names.add(key_to_name(key, robust=False) + suffix)
    except ValueError:
        pass
    if not suffix and META in names:
        names = (names - {META}) | {"meta%2Ejson"}
    return names


def _owned_by(folder: str, meta: dict[str, Any]) -> set[str]:
    """The names in ``folder`` that the save described by ``meta`` wrote."""
    names = {entry.name for entry in os.scandir(folder) if entry.name.startswith(_TMP_PREFIX)}
    cls = str(meta.get("_class") or meta.get("_type") or "")
    if meta.get("_is_non_tensor"):
        names.add("other.pickle")
    elif "NonTensorStack" in cls or "LazyStackedTensorDict" in cls:
        names.add("pickle.pkl")
        names.update(entry.name for entry in os.scandir(folder) if entry.name.isdigit())
    elif "shape" in meta:  # a TensorDict: its entries
        for key, entry in meta.items():
            if key in NODE_FIELDS or not isinstance(entry, dict):
                continue
            if "type" in entry:
                names |= _names_of(key)
            else:
                names |= _names_of(key, ".memmap") | _names_of(key, ".shape.memmap")
    else:  # a tensorclass
        names |= {"_tensordict", "other.pickle"}
    return names


def _saved_meta(folder: str) -> dict[str, Any] | None:
    try:
        return read_meta(folder)
    except (OSError, ValueError):
        return None


def owned_names(folder: str) -> set[str]:
    """The names in ``folder`` that the save there wrote, its ``meta.json`` included
    (none if ``folder`` holds no readable save): the rest belongs to someone else."""
    meta = _saved_meta(folder)
    return set() if meta is None else _owned_by(folder, meta) | {META}


# -- loading safely ----------------------------------------------------------------------------
def check_inside(root: str, path: str) -> str:
    """``path`` (an entry of a folder already known to be inside ``root``, a resolved
    folder), once sure that it stays inside: a symbolic link in a saved folder never leads
    a load out of it (ValueError naming the path). Only links are resolved.

    >>> import tempfile
    >>> root = os.path.realpath(tempfile.mkdtemp())
    >>> os.symlink("/elsewhere/x", os.path.join(root, "a.memmap"))
    >>> check_inside(root, os.path.join(root, "a.memmap"))
    Traceback (most recent call last):
    ValueError: .../a.memmap resolves to /elsewhere/x, outside the saved folder ...
    """
    if not os.path.islink(path):
        return path
    real = os.path.realpath(path)
    if not Path(real).is_relative_to(root):
        raise ValueError(f"{path} resolves to {real}, outside the saved folder {root}: "
                         "refusing to follow a link out of it")
    return path
