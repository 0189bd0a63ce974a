"""Writing collections to disk: ``memmap``, ``memmap_`` and ``memmap_like``.

A save runs in three steps so that a failure, or a crash, changes nothing it should not:

1. *plan* (main thread): walk the collection, check every key, file and option, and
   encode the non-tensor data; nothing on disk changes if this raises;
2. *write* everything in a temporary folder beside the target: the tensor leaves, one
   job each (in parallel with ``num_threads``), then every ``meta.json`` (the root's
   last); then swap it in with renames (:mod:`tensordict.memmap._atomic`). A failure
   deletes the temporary folder: the target is left as it was;
3. *build* the locked result, its leaves mapping the files at their final paths.

Every byte is written once: no copy of the data is made to replace a save.

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.ones(3), "n": {"b": torch.zeros(3, 2)}}, [3])
    >>> saved = td.memmap(tempfile.mkdtemp(), num_threads=2)
    >>> saved.is_locked, type(saved["n", "b"]).__name__
    (True, 'MemoryMappedTensor')
"""

from __future__ import annotations

import errno
import os
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import torch

from tensordict import TensorDict
from tensordict.extending import typed_hook, typed_like
from tensordict.memmap import _atomic, _fake, _layout, _nested, _state, _tensor
from tensordict.memmap import _saved_non_tensor as _saved
from tensordict.memmap._shared_non_tensor import SharedNonTensorData
from tensordict.memmap._tensor import MemoryMappedTensor
from tensordict.utils import TensorDictFuture

_CPU = torch.device("cpu")
_NAME_MAX = 255
TD_TYPE = "<class 'tensordict._td.TensorDict'>"
LAZY_TYPE = "<class 'tensordict._lazy.LazyStackedTensorDict'>"


@dataclass
class _Options:
    robust_key: bool
    existsok: bool
    copy_existing: bool
    like: bool
    share: bool = False
    allow_pickle: bool = True
    fake: bool = False  # a FakeTensorMode is active: a tensor cannot be written


@dataclass
class _Job:
    """One tensor leaf: its file (None: anonymous shared memory, or no data at all) is
    written from ``source`` (None: allocated only), or, when ``result`` already maps it,
    linked into the new save; then it is mapped at its final path."""

    source: torch.Tensor | None
    shape: torch.Size
    dtype: torch.dtype
    filename: str | None
    result: torch.Tensor | None = None

    def write(self, staging: _atomic.Staging | None) -> None:
        if self.filename is None:
            if self.result is None:
                self.result = MemoryMappedTensor._create(self.shape, self.dtype, None, True,
                                                         self.source)
        elif self.result is not None:  # the file stays: the new save links it
            _link(self.filename, staging.path(self.filename))
        else:
            _tensor.write_file(staging.path(self.filename), self.source,
                               self.shape.numel() * self.dtype.itemsize)

    def map(self, writable: bool) -> None:
        if self.result is None:
            self.result = _tensor.map_file(self.filename, self.dtype, self.shape,
                                           writable=writable).as_subclass(MemoryMappedTensor)


def data_of(collection: Any) -> Any:
    """The TensorDict holding the entries of a tensorclass or a TypedTensorDict (the one
    saved, and marked memmapped); the collection itself otherwise.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(1))
    >>> data_of(td) is td
    True
    """
    what = _state.kind(collection)
    if what == "tensorclass":
        return collection._tensordict
    if what == "tensordict" and typed_hook(collection) is not None:
        return collection._source
    return collection


def _link(source: str, dest: str) -> None:
    """``dest`` becomes another name of the file ``source`` (a copy where links fail):
    the tensors mapping it stay the tensors of the new save."""
    try:
        os.link(source, dest)
    except OSError:
        shutil.copyfile(source, dest)


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
    share: bool = False  # build a SharedNonTensorData reading its value from meta.json
    allow_pickle: bool = True  # an in-place write of its non-tensor value may pickle it


class UnsupportedLayoutError(TypeError, RuntimeError):
    """A leaf of a layout that cannot be memory-mapped (sparse...): a TypeError, and the
    RuntimeError upstream raises for it."""


# -- planning ----------------------------------------------------------------------------------
def _path_str(path: tuple[Any, ...]) -> str:
    return repr(path[0]) if len(path) == 1 else repr(path)


def _plan_tensor(tensor: torch.Tensor, filename: str | None, opts: _Options,
                 path: tuple[Any, ...]) -> _Job:
    if tensor.layout != torch.strided:
        raise UnsupportedLayoutError(
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
    node = _Node(value, what, folder, {}, share=opts.share, allow_pickle=opts.allow_pickle)
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
        _plan_non_tensor(node, path, opts)
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
            if opts.fake:
                _fake.refuse_write(f"the tensor {_path_str(where)}")
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
        if node.folder is not None and len(name) > _NAME_MAX // 4 and (  # 4 bytes a char
                len(os.fsencode(name)) > _NAME_MAX):
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


def _plan_non_tensor(node: _Node, path: tuple[Any, ...], opts: _Options) -> None:
    value, where = node.value, _path_str(path or ("",))
    if node.kind == "nontensor":
        node.meta, node.pickled = _saved.encode_data(
            value.data, getattr(value, "_metadata", None), where, opts.allow_pickle)
    else:
        node.meta, node.pickled = _saved.encode_stack(value.tolist(), value.device, where,
                                                      opts.allow_pickle)
    if node.pickled is not None:
        node.keep.add(node.pickled[0])


# -- writing, swapping in, building the result -------------------------------------------------
def _check_kept(node: _Node) -> None:
    """Refuse to put a file where a folder that no save wrote is, or a folder where such a
    file is (OSError, as writing there would be): what the earlier save did not write is
    kept, so it must not stand in the way of the new one."""
    if node.folder is None:
        return
    try:  # name -> is a real folder, for what is in the folder now
        present = {entry.name: entry.is_dir(follow_symlinks=False)
                   for entry in os.scandir(node.folder)}
    except OSError:  # no earlier save
        return
    folders = {os.path.basename(child.folder): child for child in node.children.values()
               if isinstance(child, _Node)}
    owned: set[str] | None = None  # what the earlier save wrote: read only when needed
    for name in node.keep:
        is_dir = present.get(name)
        if is_dir is None or is_dir == (name in folders):
            continue
        if owned is None:
            owned = _layout.owned_names(node.folder)
        if name in owned:
            continue
        path = os.path.join(node.folder, name)
        if is_dir:
            raise IsADirectoryError(errno.EISDIR, "cannot save a file over this folder, "
                                    "which no save wrote", path)
        raise FileExistsError(errno.EEXIST, "cannot save a folder over this file, "
                              "which no save wrote", path)
    for name, child in folders.items():
        if present.get(name):
            _check_kept(child)


def _make_folders(node: _Node, staging: _atomic.Staging) -> None:
    """The sub-folders of ``node`` in the staging folder (which is its own folder)."""
    for child in node.children.values():
        if isinstance(child, _Node):
            os.mkdir(staging.path(child.folder))
            _make_folders(child, staging)


def _written(node: _Node, root: str, out: dict[str, set[str]]) -> dict[str, set[str]]:
    """The names the save writes in each folder, keyed by its path relative to ``root``
    (see :meth:`tensordict.memmap._atomic.Staging.tidy`)."""
    out[node.folder[len(root) + 1:]] = node.keep | {_layout.META}
    for child in node.children.values():
        if isinstance(child, _Node):
            _written(child, root, out)
    return out


def _write_folders(node: _Node, staging: _atomic.Staging) -> None:
    """Every pickle and meta.json, bottom-up: the root's meta.json is the last file."""
    for child in node.children.values():
        if isinstance(child, _Node):
            _write_folders(child, staging)
    folder = staging.path(node.folder)
    files = [node.pickled] if node.pickled is not None else []
    files.append((_layout.META, node.meta.encode("utf-8")))
    for name, data in files:
        _tensor.write_file(os.path.join(folder, name), data, len(data))


def _run(jobs: list[_Job], staging: _atomic.Staging | None, num_threads: int) -> None:
    if num_threads <= 0:
        for job in jobs:
            job.write(staging)
        return
    with ThreadPoolExecutor(num_threads, thread_name_prefix="tensordict-memmap") as pool:
        futures = [pool.submit(job.write, staging) for job in jobs]
        try:
            for future in futures:
                future.result()
        except BaseException:
            for future in futures:  # the running ones finish before the pool closes
                future.cancel()
            raise


def _write(node: _Node, jobs: list[_Job], staging: _atomic.Staging | None,
           num_threads: int) -> None:
    """Write the save and swap it in; on failure, the temporary folder goes."""
    if staging is None:
        _run(jobs, None, num_threads)
        return
    try:
        _check_kept(node)
        _make_folders(node, staging)
        _run(jobs, staging, num_threads)
        _write_folders(node, staging)
        staging.commit()
    except BaseException:
        staging.abort()
        raise
    staging.tidy(_written(node, node.folder, {}))


def _build_tree(node: _Node) -> Any:
    """The result of ``node``, from its mapped jobs."""
    built: dict[Any, Any] = {}
    for key, child in node.children.items():
        if isinstance(child, _Node):
            built[key] = _build_tree(child)
        elif isinstance(child, tuple):
            built[key] = _nested.view(child[0].result, child[1].result)
        else:
            built[key] = child.result
    return _build(node, built)


def _build(node: _Node, built: dict[Any, Any]) -> Any:
    value = node.value
    if node.kind == "tensordict":
        from tensordict import TensorDict

        names = value.names
        td = TensorDict._from_entries(built, value.batch_size, _CPU,
                                      tuple(names) if any(n is not None for n in names) else None)
        return typed_like(value, td)  # a TypedTensorDict keeps its class
    if node.kind == "lazy":
        kwargs = {"stack_dim": value.stack_dim}
        if getattr(value, "stack_dim_name", None) is not None:
            kwargs["stack_dim_name"] = value.stack_dim_name
        return type(value)(*[built[i] for i in range(len(built))], **kwargs)
    if node.kind == "tensorclass":
        return type(value).from_tensordict(built["_tensordict"])
    if node.folder is None:  # shared memory: no folder to write back to
        return value.to(_CPU)
    shared = node.share or isinstance(value, SharedNonTensorData)  # a re-save stays shared
    if node.kind == "nontensor" and shared and node.pickled is None:
        return SharedNonTensorData(node.folder, batch_size=value.batch_size, device=_CPU,
                                   names=value._names)
    if node.kind == "nontensor":  # in-place writes of it rewrite its folder
        return _saved.SavedNonTensorData.saved(
            value.data, node.folder, metadata=getattr(value, "_metadata", None),
            allow_pickle=node.allow_pickle, batch_size=value.batch_size, device=_CPU,
            names=value._names)
    return _saved.SavedNonTensorStack.saved(value.to(_CPU), node.folder,
                                            allow_pickle=node.allow_pickle)


def _lock_and_mark(result: Any, node: _Node) -> None:
    if node.kind in ("nontensor", "nontensorstack"):
        return
    target = data_of(result)
    lock_levels(target)
    _mark_tree(target, node.children["_tensordict"] if node.kind == "tensorclass" else node)


def lock_levels(collection: Any) -> None:
    """Lock ``collection`` and, each on its own, its sub-TensorDicts, as upstream's memmap
    does: one can be unlocked alone, its parent staying locked (its new entries then live
    in memory only, as after unlocking the whole). Not ``lock_()``: as upstream, a with
    block does not unlock the result, and no exit action (a bound method) keeps it alive
    in a reference cycle until the GC runs."""
    collection._propagate_lock(True)
    if collection.__class__ is TensorDict:
        for value in collection.values():
            if value.__class__ is TensorDict:
                lock_levels(value)


def _mark_tree(collection: Any, node: _Node) -> None:
    _state.mark(data_of(collection), node.folder)
    if node.kind == "lazy":
        for i, part in enumerate(collection.tensordicts):
            _mark_tree(part, node.children[i])
    elif node.kind == "tensordict":
        for key, child in node.children.items():
            if isinstance(child, _Node) and child.kind in ("tensordict", "lazy"):
                _mark_tree(collection._get_str(key), child)


def _map(jobs: list[_Job]) -> None:
    """Map the files the save wrote: all alike, so only the first is asked if writable."""
    writable = None
    for job in jobs:
        if job.result is None:
            if writable is None:
                writable = os.access(job.filename, os.W_OK)
            job.map(writable)


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
         like: bool, share: bool = False, allow_pickle: bool = True,
         then: Callable[[Any], Any] | None = None,
         sources: dict[str, torch.Tensor] | None = None) -> Any:
    """Write ``collection`` under ``prefix`` (None: anonymous shared memory) and return
    the locked memmapped copy (or a :class:`TensorDictFuture`). ``sources``: the data
    files are only allocated, and this dict gets the tensor each of them is to hold, by
    final path (for an archive, which copies the data from there)."""
    folder = None if prefix is None else os.path.abspath(os.fspath(prefix))
    opts = _Options(robust_key is not False, existsok, copy_existing, like, share, allow_pickle,
                    _fake.active())
    node = _plan(collection, folder, opts)
    jobs = _jobs(node)
    if sources is not None:
        for job in jobs:
            if job.source is not None and job.filename is not None and job.result is None:
                sources[job.filename], job.source = job.source, None
    staging = None if folder is None else _atomic.Staging(folder)

    def complete() -> Any:
        _write(node, jobs, staging, num_threads)
        _map(jobs)
        result = _build_tree(node)
        _lock_and_mark(result, node)
        return result if then is None else then(result)

    if not return_early or num_threads <= 0:
        return complete()
    pool = ThreadPoolExecutor(1, thread_name_prefix="tensordict-memmap")
    done = pool.submit(complete)
    pool.shutdown(wait=False)
    return TensorDictFuture([done], None)
