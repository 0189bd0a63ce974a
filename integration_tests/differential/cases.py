"""The differential cases: every container x every view x every write that applies.

A case builds a fresh container (in its own temporary folder, which the containers
stored in files create), opens a view of it, writes
through the view, and reports the state of the ROOT container, plus, for storage-backed
containers, the state read back from a freshly opened file or store. The same code runs
under upstream tensordict 0.15.3 and ours (see ``runner.py``), so it uses only public API
both share (and ``_get_sub_tensordict`` / a store's ``_td_id``, which both have).

>>> cases = all_cases()
>>> len(cases) > 1000, cases[0].id
(True, 'dense/self/setitem')
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import torch
from snapshot import snapshot
from views import LOCKED_ONLY, STACK_ONLY, VIEWS
from writes import NON_TENSOR_WRITES, WRITES

from tensordict import LazyStackedTensorDict, PersistentTensorDict, TensorDict, tensorclass

BATCH = (2, 1, 3)

REDIS_ADDRESS: tuple[str, int] | None = None
"""(host, port) of a redis-server for the store cases; the runner sets it when it has one."""


class Fixture(NamedTuple):
    """A built container: the root whose state is compared, the target views are taken of,
    and the states read back afresh (run after ``close``) for storage-backed ones."""

    root: Any
    target: Any
    close: Callable[[], None] = lambda: None
    reopened: dict[str, Callable[[], dict]] = {}

    def state(self) -> dict:
        """The root's snapshot, then (once closed) every freshly reopened one."""
        state = {"root": snapshot(self.root)}
        self.close()
        state.update({name: read() for name, read in self.reopened.items()})
        return state


class Case(NamedTuple):
    """One write through one view of one container."""

    container: str
    view: str
    write: str

    @property
    def id(self) -> str:
        return f"{self.container}/{self.view}/{self.write}"

    @property
    def family(self) -> str:
        """What the report groups by: the container and the kind of view."""
        return f"{self.container}|{VIEWS[self.view].group}"

    def build(self, tmp: Path) -> Fixture:
        return CONTAINERS[self.container](tmp)

    def write_through_view(self, fixture: Fixture) -> None:
        with VIEWS[self.view].open(fixture.target) as view:
            WRITES[self.write](view)


# -- the data every container starts from ------------------------------------------------


def dense() -> TensorDict:
    """Distinct values everywhere, so a write to the wrong place shows."""
    td = TensorDict(
        {
            "a": torch.arange(6.0).reshape(BATCH),
            "b": torch.arange(12).reshape(*BATCH, 2),
            "nested": TensorDict({"c": -torch.arange(6.0).reshape(BATCH)}, BATCH),
        },
        BATCH,
    )
    td.set_non_tensor("s", "orig")
    return td


@tensorclass
class Sample:
    a: torch.Tensor
    b: torch.Tensor
    nested: TensorDict
    s: str


def _stack_parts() -> list[TensorDict]:
    return [dense()[i].clone() for i in range(BATCH[0])]


def _reopened(name: str, open_: Callable[[], Any]) -> dict[str, Callable[[], dict]]:
    def read() -> dict:
        obj = open_()
        try:
            return snapshot(obj)
        finally:
            if hasattr(obj, "close"):
                obj.close()

    return {name: read}


# -- in-memory containers ---------------------------------------------------------------


def _dense(tmp: Path) -> Fixture:
    td = dense()
    return Fixture(td, td)


def _named(tmp: Path) -> Fixture:
    td = dense()
    td.names = ["x", "y", "z"]
    return Fixture(td, td)


def _locked(tmp: Path) -> Fixture:
    td = dense().lock_()
    return Fixture(td, td)


def _nested(tmp: Path) -> Fixture:
    root = TensorDict({"outer": dense(), "z": torch.zeros(BATCH)}, BATCH)
    return Fixture(root, root["outer"])


def _lazy(tmp: Path) -> Fixture:
    ls = LazyStackedTensorDict(*_stack_parts(), stack_dim=0)
    return Fixture(ls, ls)


def _lazy_locked(tmp: Path) -> Fixture:
    ls = LazyStackedTensorDict(*_stack_parts(), stack_dim=0).lock_()
    return Fixture(ls, ls)


def _memmap(tmp: Path) -> Fixture:
    tmp.mkdir()
    td = dense().memmap_(tmp / "mm")
    return Fixture(td, td, reopened=_reopened("loaded", lambda: TensorDict.load_memmap(tmp / "mm")))


def _tensorclass(tmp: Path) -> Fixture:
    td = dense()
    tc = Sample(a=td["a"], b=td["b"], nested=td["nested"], s="orig", batch_size=BATCH)
    return Fixture(tc, tc)


def _params(tmp: Path) -> Fixture:
    from tensordict.nn import TensorDictParams

    source = dense()
    params = TensorDictParams(source)
    return Fixture(params, params, reopened={"source": lambda: snapshot(source)})


def _sub_td(tmp: Path) -> Fixture:
    parent = torch.stack([dense(), dense()], 0)
    return Fixture(parent, parent._get_sub_tensordict(1))


# -- storage-backed containers (each read back from a freshly opened file or store) ------


def _h5(tmp: Path) -> Fixture:
    return _persistent(tmp / "td.h5", "h5")


def _zarr(tmp: Path) -> Fixture:
    return _persistent(tmp / "td.zarr", "zarr")


def _persistent(path: Path, fmt: str) -> Fixture:
    path.parent.mkdir()
    getattr(dense(), f"to_{fmt}")(str(path)).close()
    open_ = getattr(PersistentTensorDict, f"from_{fmt}")
    root = open_(str(path), mode="r+", batch_size=BATCH)
    return Fixture(
        root,
        root,
        close=root.close,
        reopened=_reopened("file", lambda: open_(str(path), mode="r", batch_size=BATCH)),
    )


def _redis_store(td: TensorDict) -> Any:
    from tensordict.store import TensorDictStore

    host, port = REDIS_ADDRESS
    return TensorDictStore.from_tensordict(td, host=host, port=port)


def _reopen_store(td_id: str) -> Any:
    from tensordict.store import TensorDictStore

    host, port = REDIS_ADDRESS
    return TensorDictStore.from_store(td_id=td_id, host=host, port=port)


def _redis(tmp: Path) -> Fixture:
    store = _redis_store(dense())
    td_id = store._td_id
    return Fixture(
        store, store, store.close, _reopened("store", lambda: _reopen_store(td_id))
    )


def _redis_stack(tmp: Path) -> Fixture:
    stores = [_redis_store(part) for part in _stack_parts()]
    ids = [store._td_id for store in stores]
    reopened = {}
    for i, td_id in enumerate(ids):
        reopened.update(_reopened(f"store{i}", lambda td_id=td_id: _reopen_store(td_id)))
    ls = LazyStackedTensorDict(*stores, stack_dim=0)
    return Fixture(ls, ls, lambda: [store.close() for store in stores], reopened)


def _parquet(tmp: Path) -> Fixture:
    """Not write-through: the written TensorDict is saved again and read back."""
    tmp.mkdir()
    flat = TensorDict(
        {"a": torch.arange(6.0), "b": torch.arange(6), ("nested", "c"): -torch.arange(6.0)},
        [6],
    )
    flat.to_parquet(tmp / "in.parquet", separator=".")
    root = TensorDict.from_parquet(tmp / "in.parquet", separator=".", batch_size=[6])

    def save() -> None:
        root.to_parquet(tmp / "out.parquet", separator=".")

    return Fixture(
        root,
        root,
        save,
        _reopened(
            "file",
            lambda: TensorDict.from_parquet(tmp / "out.parquet", separator=".", batch_size=[6]),
        ),
    )


CONTAINERS: dict[str, Callable[[Path], Fixture]] = {
    "dense": _dense,
    "named": _named,
    "locked": _locked,
    "nested": _nested,
    "lazy": _lazy,
    "lazy_locked": _lazy_locked,
    "memmap": _memmap,
    "tensorclass": _tensorclass,
    "params": _params,
    "sub_td": _sub_td,
    "h5": _h5,
    "zarr": _zarr,
    "redis": _redis,
    "redis_stack": _redis_stack,
    "parquet": _parquet,
}
"""Every container by name. safetensors files are not in: upstream 0.15.3 has no API for them."""

_STORAGE = frozenset({"h5", "zarr", "redis", "redis_stack", "parquet"})
_ALL_VIEWS = frozenset(VIEWS)
_CORE_VIEWS = frozenset(
    {"self", "int", "slice", "mask", "tuple", "nested", "int_nested", "sub_td", "select",
     "exclude", "ctx_flatten", "ctx_permute", "ctx_unsqueeze", "ctx_flatten_keys",
     "ctx_to_dtype"}
)  # fmt: skip
_FEW_VIEWS = frozenset(
    {"self", "int", "tuple", "nested", "sub_td", "ctx_flatten", "ctx_unlock", "part"}
)
_STORAGE_VIEWS = frozenset(
    {"self", "int", "slice", "mask", "nested", "nested_int", "select", "exclude", "ctx_flatten"}
)
_SLOW_STORAGE_VIEWS = frozenset({"self", "int", "nested_int"})
_STORAGE_WRITES = frozenset(
    {"setitem", "setitem_new", "setitem_nested", "setitem_td", "set_", "set_inplace",
     "set_wrong_shape_", "set_bf16_", "update", "update_", "update_ktu_subtree",
     "update__ktu_subtree", "update_at_", "set_at_", "copy_", "copy_at_", "zero_", "fill_",
     "add_", "apply_", "masked_fill_", "setitem_index", "delitem", "rename_key_",
     "set_non_tensor", "setitem_str", "set__str", "update__str", "update__stack"}
)  # fmt: skip

VIEWS_OF: dict[str, frozenset[str]] = {
    "dense": _ALL_VIEWS,
    "lazy": _ALL_VIEWS,
    **dict.fromkeys(["nested", "memmap", "tensorclass", "params", "sub_td"], _CORE_VIEWS),
    **dict.fromkeys(["named", "locked", "lazy_locked"], _FEW_VIEWS),
    **dict.fromkeys(["h5", "redis", "redis_stack", "parquet"], _STORAGE_VIEWS),
    "zarr": _SLOW_STORAGE_VIEWS,
}
"""The views each container is written through: every one for the plain dense and lazy
containers, the main kinds for the others (so that the run stays within minutes; storage
is slow, and its containers take one write of each path, ``_STORAGE_WRITES``)."""

_METADATA_WRITES = frozenset({"set_batch_size", "set_names", "lock_", "unlock_"})


def applies(container: str, view: str, write: str) -> bool:
    """Whether the combination is generated: the view is one of the container's, applies
    to it (stack parts of stacks, unlocking of locked ones), and the write means something
    there (metadata set on the temporary result of a shape op's context is no write-back;
    parquet holds no non-tensor column)."""
    if view not in VIEWS_OF[container]:
        return False
    if container in _STORAGE and write not in _STORAGE_WRITES:
        return False
    if view in STACK_ONLY and "lazy" not in container and container != "redis_stack":
        return False
    if view in LOCKED_ONLY and "locked" not in container:
        return False
    if write in _METADATA_WRITES and VIEWS[view].group == "shape_ctx":
        return False
    return container != "parquet" or write not in NON_TENSOR_WRITES


def all_cases(containers: list[str] | None = None) -> list[Case]:
    """Every case of the harness (of ``containers`` only, if given), in a fixed order.

    The redis containers come only when ``REDIS_ADDRESS`` is set.
    """
    names = [
        name
        for name in containers or CONTAINERS
        if REDIS_ADDRESS or not name.startswith("redis")
    ]
    return [
        Case(container, view, write)
        for container in names
        for view in VIEWS
        for write in WRITES
        if applies(container, view, write)
    ]


