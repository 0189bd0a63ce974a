"""Reading saved folders back: ``load_memmap`` (formats 0 and 1 of upstream tensordict).

Tensors are mapped, not read: loading costs a few system calls per leaf whatever the
size of the data, and ``device="meta"`` opens no data file at all. Pickled non-tensor
data is refused unless the caller passes ``allow_pickle=True``. Every error names the
file at fault.

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = TensorDict({"a": torch.arange(3), "n": {"b": torch.ones(3)}}, [3]).memmap(path)
    >>> TensorDict.load_memmap(path)["a"]
    MemoryMappedTensor([0, 1, 2])
    >>> TensorDict.load_memmap(path + "/n", device="meta")["b"].device
    device(type='meta')
"""

from __future__ import annotations

import importlib
import os
import pickle
import re
import sys
import warnings
from dataclasses import dataclass
from typing import Any

import torch

from tensordict._nontensor import NonTensorData, NonTensorStack
from tensordict._shapes import as_device
from tensordict.memmap import _layout, _nested
from tensordict.memmap._tensor import MemoryMappedTensor

_CLASS_RE = re.compile(r"^<class '([^'<>]+)'>$")


@dataclass
class _Context:
    device: torch.device | None
    non_blocking: bool
    robust_key: bool
    allow_pickle: bool


def load(prefix: str | os.PathLike[str], device: Any = None, non_blocking: bool = False, *,
         robust_key: bool | None = True, allow_pickle: bool | None = False) -> Any:
    """The collection saved under ``prefix`` (any saved sub-folder works too)."""
    folder = os.path.abspath(os.fspath(prefix))
    if os.path.isfile(folder):
        raise ValueError(f"{folder} is a file, not a folder written by memmap/save")
    ctx = _Context(as_device(device), non_blocking, robust_key is not False, bool(allow_pickle))
    return _load_folder(folder, ctx, None)


def _load_folder(folder: str, ctx: _Context, batch_size: torch.Size | None) -> Any:
    meta = _layout.read_meta(folder)
    where = os.path.join(folder, _layout.META)
    kind = _meta_kind(meta, where)
    if kind == "tensordict":
        return _load_tensordict(folder, meta, ctx, where)
    if kind == "lazy":
        return _load_lazy(folder, meta, ctx, where)
    if kind == "nontensor":
        return _load_non_tensor(folder, meta, ctx, batch_size, where)
    if kind == "nontensorstack":
        return _load_stack(folder, meta, ctx, batch_size, where)
    return _load_tensorclass(folder, meta, ctx, where)


def _meta_kind(meta: dict[str, Any], where: str) -> str:
    cls = meta.get("_class") or meta.get("_type")
    if not isinstance(cls, str):
        if "shape" in meta:  # the oldest layouts had no class entry
            return "tensordict"
        raise ValueError(f"{where} is corrupt: it says neither '_class' nor '_type'")
    if meta.get("_is_non_tensor") or cls.endswith("NonTensorData'>"):
        return "nontensor"
    if cls.endswith("NonTensorStack") or cls.endswith("NonTensorStack'>"):
        return "nontensorstack"
    if cls.endswith("LazyStackedTensorDict") or cls.endswith("LazyStackedTensorDict'>"):
        return "lazy"
    if "shape" in meta:
        return "tensordict"
    return "tensorclass"


def _size(value: Any, where: str, what: str) -> torch.Size:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        raise ValueError(f"{where} is corrupt: the shape of {what} is {value!r}")
    return torch.Size(value)


def _load_tensordict(folder: str, meta: dict[str, Any], ctx: _Context, where: str) -> Any:
    from tensordict._td import TensorDict

    batch_size = _size(meta.get("shape"), where, "the TensorDict")
    device = ctx.device if ctx.device is not None else as_device(meta.get("device"))
    entries: dict[str, Any] = {}
    for key, entry in meta.items():
        if key in _layout.NODE_FIELDS:
            continue
        if not isinstance(entry, dict):
            raise ValueError(f"{where} is corrupt: the entry {key!r} is {entry!r}")
        if "type" in entry:
            entries[key] = _load_folder(_layout.child_path(folder, key, ctx.robust_key),
                                        ctx, batch_size)
        else:
            entries[key] = _load_tensor(folder, key, entry, ctx, where)
    names = meta.get("_names")
    try:
        return TensorDict(entries, batch_size=batch_size, device=device, names=names,
                          non_blocking=ctx.non_blocking)
    except (RuntimeError, ValueError, TypeError) as err:
        raise ValueError(f"{where} does not describe a valid TensorDict: {err}") from err


def _load_tensor(folder: str, key: str, entry: dict[str, Any], ctx: _Context,
                 where: str) -> torch.Tensor:
    dtype = _layout.parse_dtype(entry.get("dtype"), f"{where}, entry {key!r}")
    shape = _size(entry.get("shape"), where, repr(key))
    path = _layout.leaf_path(folder, key, ctx.robust_key)
    if entry.get("is_nested"):
        if ctx.device is not None and ctx.device.type == "meta":
            raise NotImplementedError(f"{path}: nested tensors cannot be loaded on 'meta'")
        sizes = MemoryMappedTensor.from_filename(path[: -len(".memmap")] + ".shape.memmap",
                                                 torch.int64, shape)
        total = sum(torch.Size(row).numel() for row in sizes.tolist())
        tensor = _nested.view(MemoryMappedTensor.from_filename(path, dtype, [total]), sizes)
    elif ctx.device is not None and ctx.device.type == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    elif shape.numel() == 0 and not os.path.exists(path):  # upstream writes no empty file
        tensor = torch.empty(shape, dtype=dtype).as_subclass(MemoryMappedTensor)
    else:
        tensor = MemoryMappedTensor.from_filename(path, dtype, shape)
    if ctx.device is not None and ctx.device.type != "cpu":
        tensor = tensor.to(ctx.device, non_blocking=ctx.non_blocking)
    return tensor


def _load_lazy(folder: str, meta: dict[str, Any], ctx: _Context, where: str) -> Any:
    import tensordict

    stack_dim = meta.get("stack_dim", 0)
    if not isinstance(stack_dim, int) or isinstance(stack_dim, bool):
        raise ValueError(f"{where} is corrupt: 'stack_dim' is {stack_dim!r}")
    parts = _numbered_parts(folder, ctx, None)
    try:
        lazy_cls = tensordict.LazyStackedTensorDict
    except AttributeError:
        raise NotImplementedError(
            f"{where} holds a lazy stack, and this tensordict has no LazyStackedTensorDict"
        ) from None
    kwargs: dict[str, Any] = {"stack_dim": stack_dim}
    if meta.get("stack_dim_name") is not None:
        kwargs["stack_dim_name"] = meta["stack_dim_name"]
    return lazy_cls(*parts, **kwargs)


def _numbered_parts(folder: str, ctx: _Context, batch_size: torch.Size | None) -> list[Any]:
    """The collections saved in the sub-folders ``0/``, ``1/``, ... of a stack."""
    parts = []
    while os.path.isdir(os.path.join(folder, str(len(parts)))):
        parts.append(_load_folder(os.path.join(folder, str(len(parts))), ctx, batch_size))
    return parts


def _unpickle(folder: str, name: str, ctx: _Context) -> Any:
    path = os.path.join(folder, name)
    if not ctx.allow_pickle:
        raise pickle.UnpicklingError(
            f"{path} holds pickled data, and unpickling can run arbitrary code: pass "
            "allow_pickle=True to load_memmap if you trust this folder"
        )
    try:
        with open(path, "rb") as file:
            return pickle.load(file)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing") from None


def _load_non_tensor(folder: str, meta: dict[str, Any], ctx: _Context,
                     batch_size: torch.Size | None, where: str) -> NonTensorData:
    if "data" in meta:
        data = meta["data"]
    else:
        stored = _unpickle(folder, "other.pickle", ctx)
        if not isinstance(stored, dict) or "data" not in stored:
            raise ValueError(f"{os.path.join(folder, 'other.pickle')} is corrupt")
        data = stored["data"]
    return NonTensorData(data, meta.get("_metadata"), batch_size=batch_size or (),
                         device=_device(ctx, None))


def _device(ctx: _Context, stored: Any) -> torch.device | None:
    return ctx.device if ctx.device is not None else as_device(stored)


def _load_stack(folder: str, meta: dict[str, Any], ctx: _Context,
                batch_size: torch.Size | None, where: str) -> NonTensorStack:
    device = _device(ctx, meta.get("device"))
    if "data" not in meta:  # format 0: one NonTensorData folder per element
        data = [part.data for part in _numbered_parts(folder, ctx, torch.Size())]
    elif meta["data"] == "pickle.pkl":
        data = _unpickle(folder, "pickle.pkl", ctx)
    else:
        data = meta["data"]
    if not isinstance(data, list):
        raise ValueError(f"{where} is corrupt: the stacked data is not a list")
    try:
        return NonTensorStack.from_list(data, batch_size or None, device)
    except (ValueError, RuntimeError) as err:
        raise ValueError(f"{where}: {err}") from err


def _load_tensorclass(folder: str, meta: dict[str, Any], ctx: _Context, where: str) -> Any:
    inner = _load_folder(os.path.join(folder, "_tensordict"), ctx, None)
    cls = _tensorclass_type(meta.get("_type"))
    if cls is None:
        warnings.warn(
            f"{where}: the tensorclass {meta.get('_type')} cannot be imported; "
            "returning its content as a TensorDict",
            stacklevel=3,
        )
        return inner
    return cls.from_tensordict(inner)


def _tensorclass_type(name: Any) -> type | None:
    """The tensorclass ``<class 'module.Name'>`` names (its module is imported if
    needed; the result must be a tensorclass), or None."""
    match = _CLASS_RE.match(name) if isinstance(name, str) else None
    if match is None:
        return None
    parts = match.group(1).split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        try:
            obj: Any = sys.modules.get(module_name) or importlib.import_module(module_name)
        except ImportError:
            continue
        for attr in parts[split:]:
            obj = getattr(obj, attr, None)
        return obj if getattr(obj, "_is_tensorclass", False) else None
    return None
