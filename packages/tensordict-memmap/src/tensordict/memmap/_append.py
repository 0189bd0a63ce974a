"""``append_memmap``: grow a saved folder along its first batch dimension.

Everything is checked before the first byte is written. Then each leaf file grows by the
bytes of the new rows, and the new ``meta.json`` files are written beside the old ones as
``.meta.json.append.tmp`` and renamed over them, the top one first (upstream's recovery
rule: while the top temporary file exists, no ``meta.json`` was replaced). If writing
fails, the leaf files are cut back to their old sizes and the temporary files deleted.

Example:
    >>> import tempfile, torch, tensordict
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = tensordict.save(TensorDict(a=torch.zeros(3, 2), batch_size=[3]), path)
    >>> append_memmap(path, TensorDict(a=torch.ones(2, 2), batch_size=[2]))
    >>> tensordict.load_memmap(path)["a"].sum(-1).tolist()
    [0.0, 0.0, 0.0, 2.0, 2.0]
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import torch

from tensordict.memmap import _layout, _load, _state
from tensordict.memmap._tensor import _raw_bytes

_TMP = ".meta.json.append.tmp"


@dataclass
class _Plan:
    """What an append writes: leaf files and their new rows, and new ``meta.json`` files
    (top first)."""

    rows: int
    leaves: list[tuple[str, torch.Tensor]] = field(default_factory=list)
    metas: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def append_memmap(prefix: str | os.PathLike[str], rows: Any, *,
                  allow_pickle: bool | None = None) -> None:
    """Append ``rows`` to the tensordict (or tensorclass) saved in the folder ``prefix``,
    along its first batch dimension.

    ``rows`` must have the saved keys, classes, dtypes and trailing shapes; its batch size
    may differ in its first dimension only. A non-tensor entry stays as saved, and its
    value in ``rows`` must equal it. A saved non-tensor stack, lazy stack, nested tensor or
    archive cannot grow (ValueError). Nothing is written unless every check passes, and a
    failed write leaves the folder as it was. Use one writer at a time.

    Args:
        prefix: the folder written by ``save``/``memmap``.
        rows: the rows to append.
        allow_pickle: as for ``load_memmap`` (the saved pickled non-tensor values are
            compared with those of ``rows``).

    >>> import tempfile, torch, tensordict
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = tensordict.save(TensorDict(a=torch.zeros(1), batch_size=[1]), path)
    >>> append_memmap(path, TensorDict(a=torch.ones(2), batch_size=[2]))
    >>> tensordict.load_memmap(path)["a"].tolist()
    [0.0, 1.0, 1.0]
    """
    folder = os.path.abspath(os.fspath(prefix))
    if not os.path.isfile(os.path.join(folder, _layout.META)):
        raise ValueError(
            f"append_memmap appends to a directory written by save or memmap, and {folder} "
            "is not one. An archive cannot grow: unpack it with unpack_memmap first.")
    if _state.kind(rows) not in ("tensordict", "tensorclass", "lazy"):
        raise TypeError(f"rows must be a tensordict or a tensorclass, got {type(rows)}.")
    saved = _load.load(folder, allow_pickle=allow_pickle)
    plan = _Plan(_check_batch(saved, rows))
    _plan(saved, rows, folder, None, plan)
    _write(plan)


def _check_batch(saved: Any, rows: Any) -> int:
    """The number of rows appended (ValueError unless the batch sizes allow it)."""
    old, new = saved.batch_size, rows.batch_size
    if not old or not new:
        raise ValueError(
            "append_memmap appends along the first batch dimension, which the saved "
            f"tensordict (batch size {old}) and the rows (batch size {new}) must both have.")
    if old[1:] != new[1:]:
        raise ValueError(f"Cannot append rows of batch size {new} to the saved tensordict, "
                         f"of batch size {old}: they differ beyond the first dimension.")
    return new[0]


def _where(key: str | None) -> str:
    return "the saved tensordict" if key is None else f"the entry {key!r}"


def _plan(saved: Any, rows: Any, folder: str, key: str | None, plan: _Plan) -> None:
    """Check that ``rows`` can be appended to ``saved`` (saved in ``folder``; ``key``: its
    entry, None for the root) and add what that writes to ``plan``."""
    kind = _state.kind(saved)
    if kind in ("lazy", "nontensorstack"):
        raise ValueError(f"Cannot append to {_where(key)}: a saved {type(saved).__name__} "
                         "cannot grow.")
    if _state.kind(rows) == "lazy":  # rows stacked lazily append as their dense stack
        rows = rows.contiguous()
    if type(rows) is not type(saved) and not (kind == "tensordict" and
                                              _state.kind(rows) == "tensordict"):
        raise ValueError(f"Cannot append a {type(rows).__name__} to {_where(key)}, a "
                         f"{type(saved).__name__}.")
    if kind == "tensorclass":
        _plan(saved._tensordict, rows._tensordict, os.path.join(folder, "_tensordict"), key,
              plan)
        return
    if key is not None and saved.batch_size[1:] != rows.batch_size[1:]:
        raise ValueError(f"Cannot append rows of batch size {rows.batch_size} to the entry "
                         f"{key!r}, of batch size {saved.batch_size}: they differ beyond "
                         "the first dimension.")
    if sorted(saved.keys()) != sorted(rows.keys()):
        raise ValueError(f"Cannot append rows with the keys {sorted(rows.keys())} to "
                         f"{_where(key)}, which has the keys {sorted(saved.keys())}.")
    meta = _layout.read_meta(folder)
    plan.metas.append((folder, meta))
    meta["shape"][0] += plan.rows
    for name in saved.keys():
        value, new = saved._get_str(name, None), rows._get_str(name, None)
        what = _state.kind(value)
        if what == "tensor":
            _plan_leaf(value, new, folder, name, meta[name], plan)
        elif what == "nontensor":
            _check_non_tensor(value, new, name)
        else:
            _plan(value, new, _layout.child_path(folder, name), name, plan)


def _plan_leaf(saved: torch.Tensor, new: Any, folder: str, name: str, entry: dict[str, Any],
               plan: _Plan) -> None:
    if saved.is_nested or entry.get("is_nested"):
        raise ValueError(f"Cannot append to the entry {name!r}: a saved nested tensor "
                         "cannot grow.")
    if not isinstance(new, torch.Tensor) or new.is_nested or new.dtype != saved.dtype or (
            new.shape[1:] != saved.shape[1:]):
        shape = tuple(new.shape) if isinstance(new, torch.Tensor) else None
        raise ValueError(
            f"Cannot append rows of dtype {getattr(new, 'dtype', type(new).__name__)} and "
            f"shape {shape} to the entry {name!r}, of dtype {saved.dtype} and shape "
            f"{tuple(saved.shape)}.")
    entry["shape"][0] += new.shape[0]
    plan.leaves.append((_layout.leaf_path(folder, name)[0], new))


def _check_non_tensor(saved: Any, new: Any, name: str) -> None:
    kind = _state.kind(new)
    if kind == "nontensor":
        values = [new.data]
    elif kind == "nontensorstack":
        values = new.tolist()
        while values and isinstance(values[0], list):  # nested stacks: all their values
            values = [item for part in values for item in part]
    else:
        values = [new]
    for value in values:
        if not _equal(value, saved.data):
            raise ValueError(
                f"Cannot append to the entry {name!r}: the saved non-tensor value "
                f"{saved.data!r} stays as it is, so the rows must hold the same value, not "
                f"{value!r}.")


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except (RuntimeError, ValueError, TypeError):
        return a is b


def _write(plan: _Plan) -> None:
    """Grow the leaf files, then replace the ``meta.json`` files (see the module's doc);
    on failure, undo what was written."""
    sizes: list[tuple[str, int]] = []
    tmps: list[tuple[str, str]] = []
    try:
        for path, new in plan.leaves:
            sizes.append((path, os.path.getsize(path) if os.path.exists(path) else -1))
            with open(path, "ab") as file:
                file.write(_raw_bytes(new.detach().cpu()))
        for folder, meta in plan.metas:
            text = _layout.dumps_meta(meta)
            tmps.append((os.path.join(folder, _TMP), os.path.join(folder, _layout.META)))
            with open(tmps[-1][0], "w", encoding="utf-8") as file:
                file.write(text)
    except BaseException:
        for path, size in sizes:
            if size < 0:
                if os.path.exists(path):
                    os.unlink(path)
            else:
                os.truncate(path, size)
        for tmp, _ in tmps:
            if os.path.exists(tmp):
                os.unlink(tmp)
        raise
    for tmp, meta in tmps:
        os.replace(tmp, meta)
