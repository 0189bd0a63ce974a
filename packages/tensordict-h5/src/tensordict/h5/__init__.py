"""HDF5 files for TensorDict (through ``h5py``).

Installing ``tensordict-h5`` adds ``tensordict.from_h5``, ``TensorDict.from_h5``,
``td.to_h5`` and the ``"h5"`` format of
:class:`~tensordict.persistent.PersistentTensorDict`.

>>> import os, tempfile, torch
>>> from tensordict import TensorDict
>>> path = os.path.join(tempfile.mkdtemp(), "data.h5")
>>> ptd = TensorDict(obs=torch.zeros(4, 3), batch_size=[4]).to_h5(path)
>>> ptd[2:]["obs"].shape
torch.Size([2, 3])
>>> ptd.close()
"""

from __future__ import annotations

import json
from typing import Any

import h5py
import numpy as np

from tensordict import NonTensorData, NonTensorStack, is_tensorclass
from tensordict.h5._version import __version__
from tensordict.persistent import PersistentTensorDict, register_format
from tensordict.persistent.formats import META_ATTR, json_text

#: the attribute upstream tensordict sets on a dataset holding a string
_STRING_ATTR = "__tensordict_str__"
#: marks other non-tensor values, stored as JSON text: "data" or "stack"
_JSON_ATTR = "__tensordict_json__"

__all__ = ["H5Format", "__version__", "from_h5", "to_h5"]


class H5Format:
    """The ``"h5"`` format of PersistentTensorDict: HDF5 files through h5py.

    Strings are variable-length string datasets marked ``__tensordict_str__``, as
    upstream tensordict writes them, and read back as upstream reads them: as h5py gives
    them, ``bytes`` (so is any dataset of strings or other non-numeric data, a string
    array as a numpy array of ``bytes``); other non-tensor values are JSON text marked
    ``__tensordict_json__`` (``"data"``, or ``"stack"`` for one value per element).
    A group's batch size is JSON text in its ``__tensordict__`` attribute.
    """

    name = "h5"

    def open(self, filename: str, mode: str) -> h5py.File:
        return h5py.File(filename, mode)

    def close(self, root: h5py.File) -> None:
        root.close()

    def is_group(self, node: Any) -> bool:
        return isinstance(node, h5py.Group)

    def write_array(self, group: h5py.Group, name: str, array: np.ndarray,
                    **options: Any) -> h5py.Dataset:
        if not array.ndim:  # h5py refuses chunks and filters for a scalar
            options = {}
        if array.size > 1 and not any(array.strides):  # one value expanded: nothing to send
            options.setdefault("chunks", _row_chunks(array))
            return group.create_dataset(name, shape=array.shape, dtype=array.dtype,
                                        fillvalue=array.flat[0], **options)
        return group.create_dataset(name, data=array, **options)

    def read(self, node: h5py.Dataset, selection: Any) -> np.ndarray:
        return node[selection]

    def write(self, node: h5py.Dataset, selection: Any, array: np.ndarray) -> None:
        node[selection] = array

    def rename(self, group: h5py.Group, old: str, new: str) -> None:
        group.move(old, new)

    def read_meta(self, group: h5py.Group) -> dict[str, Any] | None:
        text = group.attrs.get(META_ATTR)
        return None if text is None else json.loads(text)

    def write_meta(self, group: h5py.Group, meta: dict[str, Any]) -> None:
        group.attrs[META_ATTR] = json.dumps(meta)

    def is_non_tensor(self, node: Any) -> bool:
        return node.dtype.kind not in _NUMERIC  # strings, bytes (marked or not), JSON text

    def write_non_tensor(self, group: h5py.Group, name: str, value: Any, key: Any) -> None:
        if isinstance(value, NonTensorStack):
            kind, data = "stack", value.tolist()
        else:
            kind, data = "data", value.data
        if kind == "data" and isinstance(data, (str, bytes)):
            self._write_text(group, name, data).attrs[_STRING_ATTR] = True
        elif kind == "data" and isinstance(data, np.ndarray) and data.dtype.kind in "OSU":
            # a dataset of strings as upstream reads it (np.array of bytes): as it was
            dtype = data.dtype if data.dtype.kind == "S" else h5py.string_dtype()
            group.create_dataset(name, data=data, dtype=dtype)
        else:
            self._write_text(group, name, json_text(data, key)).attrs[_JSON_ATTR] = kind

    def read_non_tensor(self, node: h5py.Dataset, batch_size: Any, device: Any) -> Any:
        kind = node.attrs.get(_JSON_ATTR)
        if kind is None:  # bytes, or an array of them, as h5py and upstream give them
            return NonTensorData(node[()], batch_size=batch_size, device=device)
        text = node[()]
        data = json.loads(text.decode() if isinstance(text, bytes) else str(text))
        if str(kind) == "stack":
            return NonTensorStack.from_list(data, batch_size=batch_size, device=device)
        return NonTensorData(data, batch_size=batch_size, device=device)

    @staticmethod
    def _write_text(group: h5py.Group, name: str, text: str | bytes) -> h5py.Dataset:
        return group.create_dataset(name, data=text, dtype=h5py.string_dtype())


def _row_chunks(array: np.ndarray) -> tuple[int, ...] | bool:
    """Chunks of whole rows, about 1 MiB each, so that writing a row allocates little
    of a dataset created empty (h5py's own guess for other shapes)."""
    row_bytes = array[:1].nbytes if array.ndim else 0
    if not array.ndim or not 0 < row_bytes <= _CHUNK_BYTES:
        return True
    return (max(1, min(array.shape[0], _CHUNK_BYTES // row_bytes)), *array.shape[1:])


_CHUNK_BYTES = 1 << 20
#: the dtype kinds of the datasets read as tensors: bool, integers, floats, complex
_NUMERIC = frozenset("biufc")

register_format(H5Format())


def from_h5(filename: str, *, mode: str = "r", auto_batch_size: bool = False,
            batch_dims: int | None = None, batch_size: Any = None,
            **kwargs: Any) -> PersistentTensorDict:
    """Open the HDF5 file ``filename`` as a :class:`PersistentTensorDict` (see
    :meth:`PersistentTensorDict.from_h5`)."""
    return PersistentTensorDict.from_h5(filename, mode=mode, auto_batch_size=auto_batch_size,
                                        batch_dims=batch_dims, batch_size=batch_size, **kwargs)


def _from_h5_classmethod(cls: type, filename: str, **kwargs: Any) -> Any:
    """``TensorDict.from_h5``; a tensorclass gets an instance of itself over the file."""
    ptd = from_h5(filename, **kwargs)
    return cls.from_tensordict(ptd) if is_tensorclass(cls) else ptd


def to_h5(td: Any, filename: str, **kwargs: Any) -> Any:
    """Write ``td`` to the HDF5 file ``filename`` (replaced once the new file is complete)
    and return it opened for reading and writing (a tensorclass: an instance of its
    class over the file)."""
    ptd = PersistentTensorDict.from_dict(td, filename, backend="h5", **kwargs)
    return type(td).from_tensordict(ptd) if is_tensorclass(td) else ptd


METHODS: dict[str, Any] = {"to_h5": to_h5, "from_h5": classmethod(_from_h5_classmethod)}
