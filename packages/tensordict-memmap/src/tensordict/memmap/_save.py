"""Writing collections to disk: ``memmap``, ``memmap_`` and ``memmap_like``.

A save runs in three steps so that a failure changes nothing it should not:

1. *plan* (main thread): walk the collection, check every key, file and option, and
   serialise the non-tensor data; nothing on disk changes if this raises;
2. *write* the tensor leaves, one job each (in parallel with ``num_threads``);
3. *finish*: per folder, bottom-up, remove what an earlier save left, then write
   ``meta.json`` atomically (the root's last); build the locked result.

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.ones(3), "n": {"b": torch.zeros(3, 2)}}, [3])
    >>> saved = td.memmap(tempfile.mkdtemp(), num_threads=2)
    >>> saved.is_locked, type(saved["n", "b"]).__name__
    (True, 'MemoryMappedTensor')
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from tensordict._futures import TensorDictFuture
from tensordict.memmap import _layout, _nested, _state
from tensordict.memmap._shared_non_tensor import SharedNonTensorData
from tensordict.memmap._tensor import MemoryMappedTensor, file_id

_CPU = torch.device("cpu")
_NAME_MAX = 255
TD_TYPE = "<class 'tensordict._td.TensorDict'>"
LAZY_TYPE = "<class 'tensordict._lazy.LazyStackedTensorDict'>"
NONTENSOR_TYPE = "<class 'tensordict.tensorclass.NonTensorData'>"
STACK_TYPE = "<class 'tensordict.tensorclass.NonTensorStack'>"


@dataclass
class _Options:
    robust_key: bool
    existsok: bool
    copy_existing: bool
    like: bool
    share: bool = False
    jobs: list[_Job] = field(default_factory=list)


@dataclass
class _Job:
    """One tensor leaf to write (``source`` None: allocate only)."""

    source: torch.Tensor | None
    shape: torch.Size
    dtype: torch.dtype
    filename: str | None
    result: torch.Tensor | None = None
    replace: bool = False  # the file is read by another leaf of this save: never overwrite

    def run(self) -> None:
        if self.result is None:
            self.result = MemoryMappedTensor._create(self.shape, self.dtype, self.filename,
                                                     True, self.source, self.replace)


@dataclass
class _Node:
    """A planned collection: how to write its folder and rebuild it from the jobs."""

    value: Any
    kind: str
    folder: str | None
    children: dict[str, Any]  # key (or index) -> _Node | _Job | (values _Job, sizes _Job)
    meta: str | None = None
    pickled: tuple[str, bytes] | None = None
    keep: set[str] = field(default_factory=set)  # the names this save writes in the folder
    stale: set[str] = field(default_factory=set)  # what an earlier save wrote there
    share: bool = False  # build a SharedNonTensorData reading its value from meta.json


# -- planning ----------------------------------------------------------------------------------
def _path_str(path: tuple[Any, ...]) -> str:
    return repr(path[0]) if len(path) == 1 else repr(path)


def _plan_tensor(tensor: torch.Tensor, filename: str | None, opts: _Options,
                 path: tuple[Any, ...]) -> _Job:
    if tensor.layout != torch.strided:
        raise TypeError(
            f"cannot memmap {_path_str(path)}: {tensor.layout} tensors are not supported")
    job = _Job(None if opts.like else tensor, tensor.shape, tensor.dtype, filename)
    if isinstance(tensor, MemoryMappedTensor):
        existing = tensor.untyped_storage().filename
        same = (filename is None or existing is not None
                and os.path.abspath(existing) == os.path.abspath(filename))
        if same and (filename is None or tensor._maps_whole_file()):
            job.result = tensor  # already where it should be
            return job
        if existing is not None and not same and not (opts.copy_existing or opts.like):
            raise RuntimeError(
                f"cannot memmap {_path_str(path)}: the tensor is already stored in {existing}; "
                "pass copy_existing=True to copy it to the new location"
            )
    if filename is not None and not opts.existsok and os.path.lexists(filename):
        raise RuntimeError(f"The file {filename} already exists.")
    return job


def _plan_nested(tensor: torch.Tensor, base: str | None, opts: _Options,
                 path: tuple[Any, ...]) -> tuple[_Job, _Job]:
    values, sizes = _nested.flatten(tensor)
    values_job = _plan_tensor(values, _suffix(base, ".memmap"), opts, path)
    sizes_opts = _Options(opts.robust_key, opts.existsok, opts.copy_existing, like=False)
    return values_job, _plan_tensor(sizes, _suffix(base, ".shape.memmap"), sizes_opts, path)


def _suffix(base: str | None, suffix: str) -> str | None:
    return None if base is None else base + suffix


def _plan(value: Any, folder: str | None, opts: _Options, path: tuple[Any, ...] = ()) -> _Node:
    what = _state.kind(value)
    node = _Node(value, what, folder, {}, share=opts.share)
    if what == "tensordict":
        _plan_tensordict(node, opts, path)
    elif what == "lazy":
        for i, part in enumerate(value.tensordicts):
            node.children[i] = _plan(part, _sub(folder, str(i)), opts, path + (i,))
            node.keep.add(str(i))
        node.meta = _layout.dumps_meta({
            "_type": LAZY_TYPE, "_format_version": _layout.FORMAT_VERSION,
            "_class": "tensordict:LazyStackedTensorDict", "stack_dim": value.stack_dim,
            "stack_dim_name": getattr(value, "stack_dim_name", None)})
    elif what == "tensorclass":
        node.children["_tensordict"] = _plan(value._tensordict, _sub(folder, "_tensordict"),
                                             opts, path)
        node.keep.add("_tensordict")
        node.meta = _layout.dumps_meta({"_type": str(type(value))})
    elif what in ("nontensor", "nontensorstack"):
        _plan_non_tensor(node, path)
    else:
        raise TypeError(f"cannot memmap {type(value).__name__} at {_path_str(path or ('',))}")
    return node


def _sub(folder: str | None, name: str) -> str | None:
    return None if folder is None else os.path.join(folder, name)


def _plan_tensordict(node: _Node, opts: _Options, path: tuple[Any, ...]) -> None:
    td, folder = node.value, node.folder
    meta: dict[str, Any] = {}
    for key in td._keys_str():
        value = td._get_str(key)
        where = path + (key,)
        if key in _layout.NODE_FIELDS:
            raise ValueError(
                f"cannot memmap the entry {_path_str(where)}: its name is a field of "
                "meta.json in the on-disk format; rename it"
            )
        if isinstance(value, torch.Tensor):
            name = _layout.key_to_name(key, opts.robust_key)
            base = _sub(folder, name)
            if value.is_nested:
                node.children[key] = _plan_nested(value, base, opts, where)
                _claim(node, where, name + ".memmap", name + ".shape.memmap")
                shape = list(node.children[key][1].shape)
            elif value.numel() == 0:  # as upstream, no file: nothing to map
                empty = torch.empty(value.shape, dtype=value.dtype)
                node.children[key] = _Job(None, value.shape, value.dtype, None,
                                          empty.as_subclass(MemoryMappedTensor))
                shape = list(value.shape)
            else:
                node.children[key] = _plan_tensor(value, _suffix(base, ".memmap"), opts, where)
                _claim(node, where, name + ".memmap")
                shape = list(value.shape)
            meta[key] = {"device": "cpu", "shape": shape, "dtype": str(value.dtype),
                         "is_nested": value.is_nested}
            continue
        sub = None if folder is None else _layout.child_path(folder, key, opts.robust_key)
        node.children[key] = child = _plan(value, sub, opts, where)
        if sub is not None:
            _claim(node, where, os.path.basename(sub))
        meta[key] = {"type": _type_name(child)}
    meta.update(shape=list(td.batch_size), device="cpu", _type=TD_TYPE,
                _format_version=_layout.FORMAT_VERSION, _class="tensordict:TensorDict")
    names = td.names
    if any(n is not None for n in names):
        meta["_names"] = names
    node.meta = _layout.dumps_meta(meta)


def _claim(node: _Node, where: tuple[Any, ...], *names: str) -> None:
    """Reserve file names in ``node``'s folder; two entries never share a file."""
    for name in names:
        if node.folder is not None and len(os.fsencode(name)) > _NAME_MAX:
            raise ValueError(f"cannot memmap {_path_str(where)}: the file name {name!r} is "
                             f"longer than the {_NAME_MAX} bytes a file system allows")
        if name in node.keep:
            raise ValueError(f"cannot memmap {_path_str(where)}: its file {name!r} would "
                             "collide with the file of another entry")
        node.keep.add(name)


def _type_name(node: _Node) -> str:
    return {"tensordict": "TensorDict", "lazy": "LazyStackedTensorDict",
            "nontensor": "NonTensorData", "nontensorstack": "NonTensorStack"}.get(
        node.kind, type(node.value).__name__)


def _json_or_none(data: Any) -> str | None:
    """``data`` as JSON when JSON gives it back unchanged, else None (pickle it)."""
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError):
        return None
    return text if json.loads(text) == data else None


def _plan_non_tensor(node: _Node, path: tuple[Any, ...]) -> None:
    value = node.value
    try:
        if node.kind == "nontensor":
            meta: dict[str, Any] = {"_type": NONTENSOR_TYPE}
            if _json_or_none(value.data) is not None:
                meta["data"] = value.data
            else:
                node.pickled = ("other.pickle", pickle.dumps({"data": value.data}, protocol=4))
            metadata = getattr(value, "_metadata", None)
            meta.update(_metadata=metadata if _json_or_none(metadata) else None,
                        _is_non_tensor=True)
            node.meta = _layout.dumps_meta(meta)
        else:
            data = value.tolist()
            if _json_or_none(data) is None:
                node.pickled = ("pickle.pkl", pickle.dumps(data, protocol=4))
                data = "pickle.pkl"
            device = value.device
            node.meta = _layout.dumps_meta({
                "_type": STACK_TYPE, "_format_version": _layout.FORMAT_VERSION,
                "_class": "tensordict:NonTensorStack", "stack_dim": 0,
                "device": None if device is None else str(device), "data": data}, compact=True)
    except (pickle.PicklingError, TypeError, AttributeError) as err:
        where = _path_str(path or ("",))
        raise TypeError(f"cannot memmap the non-tensor entry {where}: {err}") from err
    if node.pickled is not None:
        node.keep.add(node.pickled[0])


# -- writing and finishing ---------------------------------------------------------------------
def _prepare(node: _Node, root: bool = False) -> None:
    if node.folder is None:
        return
    if not root and os.path.islink(node.folder):
        raise ValueError(f"refusing to save through the symbolic link {node.folder}")
    node.stale = _layout.prepare_folder(node.folder, node.keep)
    for child in node.children.values():
        if isinstance(child, _Node):
            _prepare(child)


def _finish(node: _Node) -> Any:
    """Build the result of ``node`` from its written jobs; write its folder's meta."""
    built: dict[Any, Any] = {}
    for key, child in node.children.items():
        if isinstance(child, _Node):
            built[key] = _finish(child)
        elif isinstance(child, tuple):
            built[key] = _nested.view(child[0].result, child[1].result)
        else:
            built[key] = child.result
    result = _build(node, built)
    if node.folder is not None:
        _layout.remove_stale(node.folder, node.stale)
        if node.pickled is not None:
            with open(os.path.join(node.folder, node.pickled[0]), "wb") as file:
                file.write(node.pickled[1])
        _layout.write_meta(node.folder, node.meta)
    return result


def _build(node: _Node, built: dict[Any, Any]) -> Any:
    value = node.value
    if node.kind == "tensordict":
        from tensordict._td import TensorDict

        names = value.names
        return TensorDict._new_unsafe(built, value.batch_size, _CPU,
                                      tuple(names) if any(n is not None for n in names) else None)
    if node.kind == "lazy":
        kwargs = {"stack_dim": value.stack_dim}
        if getattr(value, "stack_dim_name", None) is not None:
            kwargs["stack_dim_name"] = value.stack_dim_name
        return type(value)(*[built[i] for i in range(len(built))], **kwargs)
    if node.kind == "tensorclass":
        return type(value).from_tensordict(built["_tensordict"])
    shared = node.share or isinstance(value, SharedNonTensorData)  # a re-save stays shared
    if node.kind == "nontensor" and shared and node.folder is not None and (
            node.pickled is None):
        return SharedNonTensorData(node.folder, batch_size=value.batch_size, device=_CPU,
                                   names=value._names)
    return value.to(_CPU)  # non-tensor data


def _lock_and_mark(result: Any, node: _Node) -> None:
    target = result._tensordict if node.kind == "tensorclass" else result
    if node.kind in ("nontensor", "nontensorstack"):
        return
    target.lock_()
    _mark_tree(target, node.children["_tensordict"] if node.kind == "tensorclass" else node)


def _mark_tree(collection: Any, node: _Node) -> None:
    _state.mark(collection, node.folder)
    if node.kind == "lazy":
        for i, part in enumerate(collection.tensordicts):
            _mark_tree(part, node.children[i])
    elif node.kind == "tensordict":
        for key, child in node.children.items():
            if isinstance(child, _Node) and child.kind in ("tensordict", "lazy"):
                _mark_tree(collection._get_str(key), child)


def _jobs(node: _Node) -> list[_Job]:
    out: list[_Job] = []
    for child in node.children.values():
        if isinstance(child, _Node):
            out += _jobs(child)
        elif isinstance(child, tuple):
            out += child
        else:
            out.append(child)
    return out


def save(collection: Any, prefix: str | os.PathLike[str] | None, *, copy_existing: bool,
         num_threads: int, return_early: bool, existsok: bool, robust_key: bool | None,
         like: bool, share: bool = False, then: Callable[[Any], Any] | None = None) -> Any:
    """Write ``collection`` under ``prefix`` (None: anonymous shared memory) and return
    the locked memmapped copy (or a :class:`TensorDictFuture`)."""
    folder = None if prefix is None else os.path.abspath(os.fspath(prefix))
    opts = _Options(robust_key is not False, existsok, copy_existing, like, share)
    node = _plan(collection, folder, opts)
    jobs = _jobs(node)
    read = {file_id(job.source.untyped_storage().filename) for job in jobs
            if job.source is not None} - {None}
    for job in jobs:  # a file another leaf reads from is replaced, never rewritten in place
        job.replace = file_id(job.filename) in read
    _prepare(node, root=True)

    def finish() -> Any:
        result = _finish(node)
        _lock_and_mark(result, node)
        return result if then is None else then(result)

    if num_threads <= 0:
        for job in jobs:
            job.run()
        return finish()
    pool = ThreadPoolExecutor(num_threads, thread_name_prefix="tensordict-memmap")
    futures = [pool.submit(job.run) for job in jobs]

    def wait_and_finish() -> Any:
        for future in futures:
            future.result()
        return finish()

    if return_early:
        done = pool.submit(wait_and_finish)  # queued after every job: no deadlock
        pool.shutdown(wait=False)
        return TensorDictFuture([done], None)
    try:
        return wait_and_finish()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
