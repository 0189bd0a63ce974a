"""Zarr stores for TensorDict (through ``zarr`` 3).

Installing ``tensordict-zarr`` adds ``tensordict.from_zarr``, ``TensorDict.from_zarr``,
``td.to_zarr`` and the ``"zarr"`` format of
:class:`~tensordict.persistent.PersistentTensorDict`, in upstream tensordict's layout
(a ``__tensordict__`` attribute with the batch size on each group, non-tensor values as
JSON bytes, string stacks as string arrays), so stores move between the two.

>>> import os, tempfile, torch
>>> from tensordict import TensorDict
>>> path = os.path.join(tempfile.mkdtemp(), "data.zarr")
>>> ptd = TensorDict(obs=torch.zeros(4, 3), batch_size=[4]).to_zarr(path)
>>> ptd[2:]["obs"].shape
torch.Size([2, 3])
>>> ptd.close()
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any

import numpy as np
import zarr
from zarr.storage import LocalStore

from tensordict import NonTensorData, NonTensorStack, is_tensorclass
from tensordict.persistent import PersistentTensorDict, register_format
from tensordict.persistent.formats import META_ATTR, json_text
from tensordict.zarr._version import __version__

__all__ = ["ZarrFormat", "__version__", "from_zarr", "to_zarr"]

#: upstream's attribute on an array of JSON bytes holding one non-tensor value
_NON_TENSOR_ATTR = "__tensordict_non_tensor__"
#: upstream's attribute on a string array holding one string per batch element
_STACK_ATTR = "__tensordict_stack__"


class ZarrFormat:
    """The ``"zarr"`` format of PersistentTensorDict: Zarr v3 stores (folders)."""

    name = "zarr"

    def open(self, filename: str, mode: str) -> zarr.Group:
        if mode == "r" and not os.path.exists(filename):
            raise FileNotFoundError(f"no Zarr store at {filename!r}")
        return zarr.open_group(filename, mode=mode, use_consolidated=False)

    def close(self, root: zarr.Group) -> None:
        if not root.read_only:  # keep upstream's consolidated metadata up to date
            with warnings.catch_warnings():  # "not part of the Zarr 3 specification"
                warnings.filterwarnings("ignore", "Consolidated metadata", UserWarning)
                zarr.consolidate_metadata(root.store)
        root.store.close()

    def is_group(self, node: Any) -> bool:
        return isinstance(node, zarr.Group)

    def write_array(self, group: zarr.Group, name: str, array: np.ndarray,
                    **options: Any) -> zarr.Array:
        chunks = options.get("chunks")
        if isinstance(chunks, (tuple, list)):  # chunks of the leading dims, as upstream
            options["chunks"] = (*chunks[:array.ndim], *array.shape[len(chunks):])
        if array.size > 1 and not any(array.strides):  # one value expanded: no chunk written
            return group.create_array(name, shape=array.shape, dtype=array.dtype,
                                      fill_value=array.flat[0], **options)
        return group.create_array(name, data=array, **options)

    def read(self, node: zarr.Array, selection: Any) -> np.ndarray:
        return node.oindex[selection] if isinstance(selection, list) else node[selection]

    def write(self, node: zarr.Array, selection: Any, array: np.ndarray) -> None:
        if isinstance(selection, list):
            node.oindex[selection] = array
        else:
            node[selection] = array

    def rename(self, group: zarr.Group, old: str, new: str) -> None:
        store = group.store
        if not isinstance(store, LocalStore):
            raise NotImplementedError(f"renaming entries of a {type(store).__name__}")
        folder = os.path.join(str(store.root), group.path)
        os.replace(os.path.join(folder, old), os.path.join(folder, new))

    def read_meta(self, group: zarr.Group) -> dict[str, Any] | None:
        return group.attrs.get(META_ATTR)

    def write_meta(self, group: zarr.Group, meta: dict[str, Any]) -> None:
        group.attrs[META_ATTR] = meta

    def is_non_tensor(self, node: Any) -> bool:
        # marked by upstream's attributes, or an array of strings another program wrote
        return node.dtype.kind not in _NUMERIC or _NON_TENSOR_ATTR in node.attrs or \
            _STACK_ATTR in node.attrs

    def write_non_tensor(self, group: zarr.Group, name: str, value: Any, key: Any) -> None:
        if isinstance(value, NonTensorStack):
            items = value.tolist()
            flat = np.array(items, dtype=object)
            if flat.shape == tuple(value.batch_size) and all(
                    isinstance(item, str) for item in flat.reshape(-1)):
                node = group.create_array(name, shape=flat.shape, dtype=str)
                node[...] = flat
                node.attrs[_STACK_ATTR] = list(value.batch_size)
                return
            encoding = {"encoding": "json", "stack": True}
            data = items
        elif isinstance(value.data, np.ndarray) and value.data.dtype.kind in "OSUT":
            group.create_array(name, shape=value.data.shape, dtype=str)[...] = value.data
            return  # an array of strings as it was read (unmarked)
        else:
            encoding, data = {"encoding": "json"}, value.data
        text = json_text(data, key).encode()
        node = group.create_array(name, data=np.frombuffer(text, dtype=np.uint8))
        node.attrs[_NON_TENSOR_ATTR] = encoding

    def read_non_tensor(self, node: zarr.Array, batch_size: Any, device: Any) -> Any:
        if _STACK_ATTR in node.attrs:
            return NonTensorStack.from_list(node[...].tolist(), batch_size=batch_size,
                                            device=device)
        encoding = node.attrs.get(_NON_TENSOR_ATTR)
        if encoding is None:  # an unmarked array of strings: as upstream, the array
            return NonTensorData(node[...], batch_size=batch_size, device=device)
        data = json.loads(bytes(node[...]).decode())
        if encoding.get("stack"):
            return NonTensorStack.from_list(data, batch_size=batch_size, device=device)
        return NonTensorData(data, batch_size=batch_size, device=device)


#: the dtype kinds of the arrays read as tensors: bool, integers, floats, complex
_NUMERIC = frozenset("biufc")

register_format(ZarrFormat())


def from_zarr(zarr_file: str, *, mode: str = "r", auto_batch_size: bool = False,
              batch_dims: int | None = None, batch_size: Any = None,
              **kwargs: Any) -> PersistentTensorDict:
    """Open the Zarr store ``zarr_file`` as a :class:`PersistentTensorDict` (see
    :meth:`PersistentTensorDict.from_zarr`)."""
    return PersistentTensorDict.from_zarr(zarr_file, mode=mode, auto_batch_size=auto_batch_size,
                                          batch_dims=batch_dims, batch_size=batch_size,
                                          **kwargs)


def _from_zarr_classmethod(cls: type, zarr_file: str, **kwargs: Any) -> Any:
    """``TensorDict.from_zarr``; a tensorclass gets an instance of itself over the file."""
    ptd = from_zarr(zarr_file, **kwargs)
    return cls.from_tensordict(ptd) if is_tensorclass(cls) else ptd


def to_zarr(td: Any, filename: str, **kwargs: Any) -> Any:
    """Write ``td`` to the Zarr store ``filename`` (replaced once the new store is
    complete) and return it opened for reading and writing (a tensorclass: an instance
    of its class over the file)."""
    ptd = PersistentTensorDict.from_dict(td, filename, backend="zarr", **kwargs)
    return type(td).from_tensordict(ptd) if is_tensorclass(td) else ptd


METHODS: dict[str, Any] = {"to_zarr": to_zarr, "from_zarr": classmethod(_from_zarr_classmethod)}
