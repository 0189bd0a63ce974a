"""File formats a :class:`~tensordict.persistent.PersistentTensorDict` can live in.

A format is a small adapter over a library of hierarchical array files (HDF5 through
``h5py``, Zarr through ``zarr``): both have groups holding named arrays and groups, with
attributes, and arrays read and written by numpy index. The adapter says how to open a
file, tell a group from an array, and store metadata and non-tensor values. Formats come
from plugin packages: ``tensordict-h5`` provides ``"h5"``, ``tensordict-zarr`` provides
``"zarr"``. A package providing the format named ``name`` is the module
``tensordict.<name>``, imported on first use; it registers its adapter with
:func:`register_format`.

>>> get_format("h5").name in known_formats()
True
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

#: the group attribute upstream tensordict keeps its metadata in (``batch_size``...)
META_ATTR = "__tensordict__"


class FileFormat(Protocol):
    """What :class:`PersistentTensorDict` needs from a file library. Each format stores
    non-tensor values and group metadata as upstream tensordict does for that format."""

    name: str

    def open(self, filename: str, mode: str) -> Any:
        """The root group of the file (``mode``: ``"r"``, ``"r+"``, ``"w"``, ``"a"``)."""

    def close(self, root: Any) -> None:
        """Close a file :meth:`open` returned."""

    def is_group(self, node: Any) -> bool:
        """Whether ``node`` (a member of a group) is a group rather than an array."""

    def write_array(self, group: Any, name: str, array: Any, **options: Any) -> Any:
        """Create the array ``group[name]`` holding the numpy array ``array``; ``options``
        are the library's own for a new array (compression, chunks...), which an array
        of one value (``array.ndim == 0``) may leave aside."""

    def read(self, node: Any, selection: Any) -> Any:
        """The numpy array of ``node[selection]``: ``...`` (all of it), an int or a
        slice of the first dim, or a sorted list of its row numbers."""

    def write(self, node: Any, selection: Any, array: Any) -> None:
        """``node[selection] = array`` (selections as for :meth:`read`)."""

    def rename(self, group: Any, old: str, new: str) -> None:
        """Rename the member ``old`` of ``group`` to ``new`` (a name not in use)."""

    def read_meta(self, group: Any) -> dict[str, Any] | None:
        """The metadata :meth:`write_meta` stored on ``group`` (None if there is none)."""

    def write_meta(self, group: Any, meta: dict[str, Any]) -> None:
        """Store ``meta`` (JSON data) on ``group``."""

    def is_non_tensor(self, node: Any) -> bool:
        """Whether the array ``node`` holds a non-tensor value."""

    def write_non_tensor(self, group: Any, name: str, value: Any, key: Any) -> None:
        """Store ``value`` (a NonTensorData or NonTensorStack) as ``group[name]``."""

    def read_non_tensor(self, node: Any, batch_size: Any, device: Any) -> Any:
        """The NonTensorData or NonTensorStack :meth:`write_non_tensor` stored."""


_FORMATS: dict[str, FileFormat] = {}


def register_format(file_format: FileFormat) -> None:
    """Make ``file_format`` available as ``PersistentTensorDict(backend=file_format.name)``."""
    _FORMATS[file_format.name] = file_format


def known_formats() -> list[str]:
    """The names of the formats registered so far."""
    return sorted(_FORMATS)


def get_format(name: str) -> FileFormat:
    """The format called ``name``, importing ``tensordict.<name>`` the first time.

    >>> get_format("csv")
    Traceback (most recent call last):
    ...
    ModuleNotFoundError: no file format 'csv' for PersistentTensorDict: install the \
package that provides it (pip install tensordict-csv)
    """
    if name in _FORMATS:
        return _FORMATS[name]
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not the name of a file format")
    try:
        importlib.import_module(f"tensordict.{name}")
    except ImportError:
        pass
    if name not in _FORMATS:
        raise ModuleNotFoundError(
            f"no file format {name!r} for PersistentTensorDict: install the package that "
            f"provides it (pip install tensordict-{name})"
        )
    return _FORMATS[name]
