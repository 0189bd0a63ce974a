"""Reading saved folders back: ``load_memmap`` (formats 0 and 1 of upstream tensordict).

Tensors are mapped, not read: loading costs a few system calls per leaf whatever the
size of the data, and ``device="meta"`` or an active ``FakeTensorMode`` (fake leaves,
:mod:`tensordict.memmap._fake`) opens no data file at all. Every error names the file at
fault.

A folder is data, never code: unless the caller passes ``allow_pickle=True`` (trusting
the folder), a pickled non-tensor value loads only if it is plain data (containers,
numbers, strings, tensors, numpy arrays: :mod:`tensordict._restricted_pickle`), any other
pickle is refused, and no module is imported (a tensorclass must already be defined in
this process). No path leads out of the folder: a symbolic
link to somewhere else is refused. A folder missing because a save to it was killed
half-way is loaded from the old save set aside (:func:`tensordict.memmap._atomic.recover`).

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
import stat
import sys
from dataclasses import dataclass
from typing import Any

import torch

from tensordict import NonTensorData, NonTensorStack
from tensordict.extending import UnsafePickleError, as_device, key_to_path, loads_data
from tensordict.memmap import _archive, _atomic, _fake, _jsonsafe, _layout, _nested, _tensor
from tensordict.memmap._tensor import MemoryMappedTensor

_CLASS_RE = re.compile(r"^<class '((?:[^'<>]|<locals>)+)'>$")  # "f.<locals>.C" too


@dataclass
class _Context:
    device: torch.device | None
    non_blocking: bool
    robust_key: bool
    allow_pickle: bool
    root: str  # the loaded folder, resolved: nothing outside it is read
    cls: Any = None  # the class load_memmap was called on
    mode: str | None = None  # "r": writes stay in memory; "r+": they reach the files
    archive: _archive.Archive | None = None  # the archive the folder is in, if any
    fake: bool = False  # a FakeTensorMode is active: fake leaves, no data file opened

    def inside(self, path: str) -> str:
        return _layout.check_inside(self.root, path)

    def read_meta(self, folder: str) -> dict[str, Any]:
        if self.archive is not None:
            return self.archive.read_meta(folder)
        return _layout.read_meta(folder)

    def isdir(self, path: str) -> bool:
        return self.archive.isdir(path) if self.archive is not None else os.path.isdir(path)

    def read_bytes(self, path: str) -> bytes:
        if self.archive is not None:
            return self.archive.read_bytes(path)
        with open(path, "rb") as file:
            return file.read()


def load(prefix: str | os.PathLike[str], device: Any = None, non_blocking: bool = False, *,
         robust_key: bool | None = True, allow_pickle: bool | None = False,
         cls: Any = None, subpath: Any = None, mode: str | None = None) -> Any:
    """The collection saved under ``prefix``, a folder or an archive (any saved sub-folder
    works too, or ``subpath``, the key of a sub-collection); ``cls``: the class
    ``load_memmap`` was called on (a tensorclass saved at the root is loaded as it, even
    if its name was not found); ``mode``: ``"r"`` (writes to the leaves stay in memory),
    ``"r+"`` (they reach the files) or None (``"r+"`` for writable files)."""
    if mode not in (None, "r", "r+"):
        raise ValueError(f"mode must be 'r', 'r+' or None, got {mode!r}.")
    folder = _atomic.recover(os.path.abspath(os.fspath(prefix)))
    if not os.path.isfile(folder):
        return _load_root(folder, device, non_blocking, robust_key, allow_pickle, cls,
                          subpath, mode, None)
    with _archive.Archive(folder, writable=mode == "r+") as archive:
        return _load_root(archive.root, device, non_blocking, robust_key, allow_pickle, cls,
                          subpath, mode, archive)


def _load_root(folder: str, device: Any, non_blocking: bool, robust_key: bool | None,
               allow_pickle: bool | None, cls: Any, subpath: Any, mode: str | None,
               archive: _archive.Archive | None) -> Any:
    robust = robust_key is not False
    for name in () if subpath is None else key_to_path(subpath):
        folder = _layout.child_path(folder, name, robust)
    ctx = _Context(as_device(device), non_blocking, robust, bool(allow_pickle),
                   os.path.realpath(folder), cls, mode, archive, _fake.active())
    return _load_folder(folder, ctx, None)


def _load_folder(folder: str, ctx: _Context, batch_size: torch.Size | None) -> Any:
    where = ctx.inside(os.path.join(ctx.inside(folder), _layout.META))
    meta = ctx.read_meta(folder)
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


def _size(value: Any, where: str, key: str | None = None) -> torch.Size:
    """The shape ``value`` read from ``where`` (of the entry ``key``, None: the TensorDict);
    only a list of sizes (ints, never bools or negatives) is one."""
    if value.__class__ is not list or not _INT.issuperset(map(type, value)) or (
            value and min(value) < 0):
        what = "the TensorDict" if key is None else repr(key)
        raise ValueError(f"{where} is corrupt: the shape of {what} is {value!r}")
    return torch.Size(value)


_INT = frozenset({int})


def _load_tensordict(folder: str, meta: dict[str, Any], ctx: _Context, where: str) -> Any:
    from tensordict import TensorDict

    batch_size = _size(meta.get("shape"), where)
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
    dtype = _layout.parse_dtype(entry.get("dtype"), where, key)
    shape = _size(entry.get("shape"), where, key)
    if ctx.fake:
        return _fake.leaf(shape, dtype, ctx.device, entry.get("is_nested"),
                          f"the entry {key!r} of {where}")
    if ctx.archive is not None:
        return _load_archived(ctx.archive.leaf_path(folder, key, ctx.robust_key), dtype,
                              shape, entry, ctx)
    path, info = _layout.leaf_path(folder, key, ctx.robust_key)
    size = None  # known for a plain file: no link to check, no second stat
    if info is not None and stat.S_ISREG(info.st_mode):
        size = info.st_size
    else:
        path = ctx.inside(path)
    if entry.get("is_nested"):
        if ctx.device is not None and ctx.device.type == "meta":
            raise NotImplementedError(f"{path}: nested tensors cannot be loaded on 'meta'")
        sizes_path = ctx.inside(path[: -len(".memmap")] + ".shape.memmap")
        sizes = MemoryMappedTensor.from_filename(sizes_path, torch.int64, shape)
        total = sum(torch.Size(row).numel() for row in sizes.tolist())
        tensor = _nested.view(MemoryMappedTensor.from_filename(path, dtype, [total]), sizes)
    elif ctx.device is not None and ctx.device.type == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    elif shape.numel() == 0 and not os.path.exists(path):  # upstream writes no empty file
        tensor = torch.empty(shape, dtype=dtype).as_subclass(MemoryMappedTensor)
    elif size is None:
        tensor = MemoryMappedTensor.from_filename(path, dtype, shape, mode=ctx.mode)
    else:
        tensor = _tensor.map_sized(path, dtype, shape, size, private=ctx.mode == "r")
        tensor = tensor.as_subclass(MemoryMappedTensor)
    if ctx.device is not None and ctx.device.type != "cpu":
        tensor = tensor.to(ctx.device, non_blocking=ctx.non_blocking)
    return tensor


def _load_archived(path: str, dtype: torch.dtype, shape: torch.Size, entry: dict[str, Any],
                   ctx: _Context) -> torch.Tensor:
    """A leaf of an archive: a plain tensor viewing the mapped archive, as upstream."""
    assert ctx.archive is not None
    if entry.get("is_nested"):
        if ctx.device is not None and ctx.device.type == "meta":
            raise NotImplementedError(f"{path}: nested tensors cannot be loaded on 'meta'")
        sizes = ctx.archive.tensor(path[: -len(".memmap")] + ".shape.memmap", torch.int64,
                                   shape)
        total = sum(torch.Size(row).numel() for row in sizes.tolist())
        tensor = _nested.view(ctx.archive.tensor(path, dtype, torch.Size([total])), sizes)
    elif ctx.device is not None and ctx.device.type == "meta":
        return torch.empty(shape, dtype=dtype, device="meta")
    else:
        tensor = ctx.archive.tensor(path, dtype, shape)
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
    while ctx.isdir(os.path.join(folder, str(len(parts)))):
        parts.append(_load_folder(os.path.join(folder, str(len(parts))), ctx, batch_size))
    return parts


def _unpickle(folder: str, name: str, ctx: _Context) -> Any:
    """The value pickled in ``folder/name``: anything if the caller trusts the folder,
    else only plain data (:func:`tensordict._restricted_pickle.loads_data`)."""
    path = ctx.inside(os.path.join(folder, name))
    try:
        data = ctx.read_bytes(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} is missing") from None
    if ctx.allow_pickle:
        return pickle.loads(data)
    try:
        return loads_data(data)
    except UnsafePickleError as err:
        raise pickle.UnpicklingError(
            f"{path} holds pickled data that needs {err.name}, and unpickling it could run "
            "arbitrary code: pass allow_pickle=True to load_memmap if you trust this folder"
        ) from None
    except pickle.UnpicklingError as err:
        raise ValueError(f"{path} is corrupt: {err}") from None


def _load_non_tensor(folder: str, meta: dict[str, Any], ctx: _Context,
                     batch_size: torch.Size | None, where: str) -> NonTensorData:
    metadata = _decoded(meta.get("_metadata"), where)
    if "data" in meta:
        data = _decoded(meta["data"], where)
    else:
        stored = _unpickle(folder, "other.pickle", ctx)
        if not isinstance(stored, dict) or "data" not in stored:
            raise ValueError(f"{os.path.join(folder, 'other.pickle')} is corrupt")
        data, metadata = stored["data"], stored.get("_metadata", metadata)
    return NonTensorData(data, metadata, batch_size=batch_size or (),
                         device=_device(ctx, None))


def _decoded(data: Any, where: str) -> Any:
    try:
        return _jsonsafe.decode(data)
    except ValueError as err:
        raise ValueError(f"{where} is corrupt: {err}") from None


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
        data = _decoded(meta["data"], where)
    if not isinstance(data, list):
        raise ValueError(f"{where} is corrupt: the stacked data is not a list")
    try:
        return NonTensorStack.from_list(data, batch_size or None, device)
    except (ValueError, RuntimeError) as err:
        raise ValueError(f"{where}: {err}") from err


def _load_tensorclass(folder: str, meta: dict[str, Any], ctx: _Context, where: str) -> Any:
    inner = _load_folder(os.path.join(folder, "_tensordict"), ctx, None)
    if os.path.realpath(folder) == ctx.root and getattr(ctx.cls, "_is_tensorclass", False):
        return ctx.cls.from_tensordict(inner)
    name = meta.get("_type")
    match = _CLASS_RE.match(name) if isinstance(name, str) else None
    if match is None:
        raise ValueError(f"{where} is corrupt: its '_type' is {name!r}")
    cls = _defined_tensorclass(match.group(1), ctx.allow_pickle)
    if cls is None:
        short = match.group(1).rsplit(".", 1)[-1]
        raise RuntimeError(
            f"Could not find the class {match.group(1)} saved in {folder}. Import the module "
            f"that defines it, or call {short}.load_memmap() instead of "
            "TensorDict.load_memmap() (or pass allow_pickle=True to let load_memmap import "
            "it, if you trust this folder)."
        )
    return cls.from_tensordict(inner)


def _defined_tensorclass(path: str, allow_import: bool) -> type | None:
    """The tensorclass at the dotted ``path`` (``module.Name``): one defined in this
    process (the latest of that name, which finds classes defined in a function), else
    looked up in the modules already imported; ``allow_import`` imports its module."""
    return _live_tensorclass(path) or _module_tensorclass(path, allow_import)


def _live_tensorclass(path: str) -> type | None:
    """The last defined tensorclass whose ``module.qualname`` is ``path`` (none exists
    unless the tensorclass plugin was imported)."""
    base = getattr(sys.modules.get("tensordict.tensorclasses"), "TensorClassBase", None)
    found, pending = None, [] if base is None else [base]
    while pending:
        cls = pending.pop(0)
        if getattr(cls, "_is_tensorclass", False) and \
                f"{cls.__module__}.{cls.__qualname__}" == path:
            found = cls
        pending.extend(cls.__subclasses__())
    return found


def _module_tensorclass(path: str, allow_import: bool) -> type | None:
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:split])
        module = sys.modules.get(module_name)
        if module is None and allow_import:
            try:
                module = importlib.import_module(module_name)
            except ImportError:
                continue
        if module is None:
            continue
        obj: Any = module
        for attr in parts[split:]:
            obj = getattr(obj, attr, None)
        return obj if isinstance(obj, type) and getattr(obj, "_is_tensorclass", False) else None
    return None
