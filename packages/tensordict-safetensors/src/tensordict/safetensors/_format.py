"""The structure of a tensordict in a safetensors file: upstream tensordict 0.15.3's layout.

Each tensor is stored under its nested key joined with ``"."`` (the names of a model's
``state_dict``). The metadata of the file holds, under ``"tensordict"``, one JSON string::

    {"version": 1, "root": NODE}
    NODE  = {"batch_size": [...], "names": [...] | null, "keys": {key: ENTRY, ...},
             "stack_dim": int (a lazy stack), "class": "<class 'module.Name'>" (a tensorclass)}
    ENTRY = {"tensor": name, "unbatched": true (an UnbatchedTensor)} | {"td": NODE}
          | {"non_tensor": JSON value}

A file without that metadata (a model checkpoint, say) loads as a nested TensorDict
with an empty batch size, each name split on ``"."``. Nothing is ever unpickled, and no
module is imported: a tensorclass loads only if its module is imported already.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"w": torch.ones(2), "sub": {"b": torch.zeros(2)}}, [2])
    >>> tensors, meta = encode(td)
    >>> sorted(tensors), meta["root"]["keys"]["sub"]["td"]["keys"]
    (['sub.b', 'w'], {'b': {'tensor': 'sub.b'}})
    >>> decode(meta, tensors, "example")["sub", "b"]
    tensor([0., 0.])
"""

from __future__ import annotations

import re
import sys
from typing import Any

import torch

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    is_non_tensor,
    is_tensorclass,
)
from tensordict.utils import acts_as_tensordict

#: The metadata key of the structure, and the version of its format.
METADATA_KEY = "tensordict"
VERSION = 1
SEPARATOR = "."

_CLASS = re.compile(r"<class '([^']+)'>")
_JSON_SCALARS = (str, int, float, bool, type(None))


def _where(path: tuple[str, ...]) -> str:
    return "the root" if not path else f"{path}"


def _check_json(value: Any, path: tuple[str, ...]) -> None:
    """Raise TypeError unless ``value`` is made of JSON values only."""
    if value.__class__ in _JSON_SCALARS:
        return
    if value.__class__ is list:
        for item in value:
            _check_json(item, path)
        return
    if value.__class__ is dict and all(key.__class__ is str for key in value):
        for item in value.values():
            _check_json(item, path)
        return
    raise TypeError(
        f"Cannot save the non-tensor value at {path} as safetensors: "
        f"{type(value).__name__} is not a JSON value (str, int, float, bool, None, list "
        "or dict)."
    )


class _Encoder:
    """Collects the tensors of one tensordict and describes its structure."""

    def __init__(self) -> None:
        self.tensors: dict[str, torch.Tensor] = {}
        self._storages: set[int] = set()

    def node(self, td: Any, path: tuple[str, ...]) -> dict[str, Any]:
        cls = type(td) if is_tensorclass(td) else None
        if cls is not None:
            td = td._tensordict
        names = td.names
        node: dict[str, Any] = {
            "batch_size": list(td.batch_size),
            "names": None if all(name is None for name in names) else list(names),
        }
        if cls is not None:
            node["class"] = f"<class '{cls.__module__}.{cls.__qualname__}'>"
        if isinstance(td, LazyStackedTensorDict):
            keys = {frozenset(part.keys()) for part in td.tensordicts}
            if len(keys) > 1:
                raise TypeError(
                    f"Cannot save the lazy stack at {_where(path)} as safetensors: its "
                    "entries have different keys. Give every entry the same keys first."
                )
            node["stack_dim"] = td.stack_dim
        node["keys"] = {key: self.entry(td.get(key), (*path, key)) for key in td.keys()}
        return node

    def entry(self, value: Any, path: tuple[str, ...]) -> dict[str, Any]:
        if isinstance(value, torch.Tensor):
            return {"tensor": self.tensor(value, path)}
        if isinstance(value, NonTensorStack):
            raise TypeError(f"Cannot save the non-tensor stack at {path} as safetensors: "
                            "only single JSON values are supported.")
        if is_non_tensor(value):
            _check_json(value.data, path)
            return {"non_tensor": value.data}
        if acts_as_tensordict(value):
            return {"td": self.node(value, path)}
        raise TypeError(f"Cannot save the value at {path} as safetensors: "
                        f"{type(value).__name__} is not supported.")

    def tensor(self, value: torch.Tensor, path: tuple[str, ...]) -> str:
        if value.layout is not torch.strided or value.is_nested:
            raise TypeError(
                f"Cannot save the tensor at {path} as safetensors: only dense tensors are "
                f"supported, got layout {value.layout}."
            )
        name = SEPARATOR.join(path)
        if name in self.tensors:
            raise ValueError(f"Two keys of the tensordict have the safetensors name {name!r}.")
        value = value.detach().to("cpu").contiguous()
        storage = value.untyped_storage().data_ptr()
        if storage in self._storages and value.numel():  # safetensors refuses shared memory
            value = value.clone()
        self._storages.add(value.untyped_storage().data_ptr())
        self.tensors[name] = value
        return name


def encode(td: Any) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """The tensors of ``td`` by safetensors name, and the structure (see the module).

    Raises TypeError for what safetensors cannot hold (a non-tensor value that is not
    JSON, a stack of non-tensor values, a nested or sparse tensor, a lazy stack whose
    entries have different keys, a bare non-tensor value), ValueError when two keys have
    the same joined name. Nothing is written before the whole tensordict is checked.
    """
    if is_non_tensor(td):
        raise TypeError("Cannot save a non-tensor value as safetensors: put it in a "
                        "tensordict first.")
    if not acts_as_tensordict(td):
        raise TypeError(f"to_safetensors expects a tensordict or a tensorclass, got "
                        f"{type(td).__name__}.")
    encoder = _Encoder()
    root = encoder.node(td, ())
    return encoder.tensors, {"version": VERSION, "root": root}


def decode(meta: dict[str, Any], tensors: dict[str, torch.Tensor], source: str,
           device: torch.device | None = None) -> Any:
    """The collection that ``meta`` (see :func:`encode`) describes, from ``tensors``."""
    if meta.get("version") != VERSION or not isinstance(meta.get("root"), dict):
        raise ValueError(f"{source} holds tensordict metadata of an unknown version "
                         f"({meta.get('version')!r}); this package reads version {VERSION}.")
    try:
        return _Decoder(tensors, source, device).node(meta["root"])
    except (KeyError, TypeError, AttributeError) as err:  # a field missing or mistyped
        raise ValueError(f"{source} is corrupt: its tensordict metadata is malformed "
                         f"({type(err).__name__}: {err}).") from err


def decode_plain(tensors: dict[str, torch.Tensor], device: torch.device | None) -> TensorDict:
    """A nested TensorDict (empty batch size) of a file without tensordict metadata."""
    td = TensorDict(device=device)
    for name, tensor in tensors.items():
        td.set(tuple(name.split(SEPARATOR)), tensor)
    return td


class _Decoder:
    def __init__(self, tensors: dict[str, torch.Tensor], source: str,
                 device: torch.device | None) -> None:
        self.tensors, self.source, self.device = tensors, source, device

    def node(self, node: dict[str, Any]) -> Any:
        batch_size = torch.Size(node["batch_size"])
        entries = {key: self.entry(entry, batch_size) for key, entry in node["keys"].items()}
        stack_dim = node.get("stack_dim")
        names = node.get("names")
        td = TensorDict(entries, batch_size=batch_size, device=self.device,
                        names=names if stack_dim is None else None)
        if stack_dim is not None:
            td = LazyStackedTensorDict.lazy_stack(list(td.unbind(stack_dim)), stack_dim)
            if names is not None:
                td.names = names
        cls_name = node.get("class")
        if cls_name is None:
            return td
        return self.tensorclass(cls_name)._from_tensordict(td)

    def entry(self, entry: dict[str, Any], batch_size: torch.Size) -> Any:
        if "tensor" in entry:
            name = entry["tensor"]
            if name not in self.tensors:
                raise ValueError(f"{self.source} is corrupt: its metadata names the tensor "
                                 f"{name!r}, which the file does not hold.")
            tensor = self.tensors[name]
            if entry.get("unbatched"):
                return tensordict.UnbatchedTensor(tensor)
            return tensor
        if "td" in entry:
            return self.node(entry["td"])
        if "non_tensor" in entry:
            return NonTensorData(entry["non_tensor"], batch_size=batch_size, device=self.device)
        raise ValueError(f"{self.source} is corrupt: unknown entry {entry!r}.")

    def tensorclass(self, cls_name: str) -> Any:
        match = _CLASS.fullmatch(cls_name)
        cls = None if match is None else _imported_class(match.group(1))
        if cls is None or not getattr(cls, "_is_tensorclass", False):
            raise RuntimeError(
                f"Could not find the tensorclass {cls_name} saved in {self.source}. Import "
                "the module that defines it before you load the file."
            )
        return cls


def _imported_class(path: str) -> Any:
    """The object at the dotted ``path`` in a module imported already (none is imported)."""
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:split]))
        if module is not None:
            obj: Any = module
            for attr in parts[split:]:
                obj = getattr(obj, attr, None)
            return obj
    return None
