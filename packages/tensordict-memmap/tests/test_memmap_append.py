"""``append_memmap``: growing a saved folder, upstream's checks and messages, and a failed
append leaving the folder as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, NonTensorData, NonTensorStack, TensorDict
from tensordict.memmap import _append


def _saved(tmp_path: Path) -> Path:
    td = TensorDict(a=torch.zeros(3, 2),
                    n=TensorDict(b=torch.zeros(3, 4, dtype=torch.int64), batch_size=[3, 4]),
                    s=NonTensorData("x"), batch_size=[3])
    tensordict.save(td, tmp_path / "x")
    return tmp_path / "x"


def _rows(count: int = 2, **changes) -> TensorDict:
    entries = {"a": torch.ones(count, 2),
               "n": TensorDict(b=torch.ones(count, 4, dtype=torch.int64),
                               batch_size=[count, 4]),
               "s": "x"}
    entries.update(changes)
    return TensorDict({k: v for k, v in entries.items() if v is not None}, batch_size=[count])


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_append(tmp_path):
    path = _saved(tmp_path)
    reader = tensordict.load_memmap(path)
    assert tensordict.append_memmap(path, _rows()) is None
    loaded = tensordict.load_memmap(path)
    assert loaded.batch_size == torch.Size([5]) and loaded["n"].batch_size == (5, 4)
    assert loaded["a"].sum().item() == 4 and loaded["n", "b"].sum().item() == 8
    assert loaded["s"] == "x" and reader.batch_size == torch.Size([3])
    tensordict.append_memmap(path, _rows(3, s=NonTensorStack("x", "x", "x")))
    assert tensordict.load_memmap(path).batch_size == torch.Size([8])
    assert sorted(os.listdir(path)) == ["a.memmap", "meta.json", "n", "s"]


def test_append_lazy_stack_and_no_rows(tmp_path):
    tensordict.save(TensorDict(a=torch.zeros(2, 3), batch_size=[2]), tmp_path)
    tensordict.append_memmap(tmp_path, LazyStackedTensorDict(TensorDict(a=torch.ones(3)),
                                                             TensorDict(a=torch.ones(3))))
    tensordict.append_memmap(tmp_path, TensorDict(a=torch.ones(0, 3), batch_size=[0]))
    loaded = tensordict.load_memmap(tmp_path)
    assert loaded.batch_size == torch.Size([4]) and loaded["a"].sum().item() == 6


def test_append_tensorclass(tmp_path):
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Rows:
        x: torch.Tensor

    tensordict.save(Rows(x=torch.zeros(2), batch_size=[2]), tmp_path / "tc")
    tensordict.append_memmap(tmp_path / "tc", Rows(x=torch.ones(1), batch_size=[1]))
    assert Rows.load_memmap(tmp_path / "tc").x.tolist() == [0., 0., 1.]
    with pytest.raises(ValueError, match="Cannot append a TensorDict to the saved "
                                         "tensordict, a Rows"):
        tensordict.append_memmap(tmp_path / "tc", TensorDict(x=torch.ones(1), batch_size=[1]))


@pytest.mark.parametrize("rows, message", [
    (_rows(n=None, s=None), r"keys \['a'\] to the saved tensordict, which has the keys "
                            r"\['a', 'n', 's'\]"),
    (_rows(z=torch.ones(2)), r"keys \['a', 'n', 's', 'z'\]"),
    (_rows(a=torch.ones(2, 2, dtype=torch.float64)),
     r"rows of dtype torch.float64 and shape \(2, 2\) to the entry 'a', of dtype "
     r"torch.float32 and shape \(3, 2\)"),
    (_rows(a=torch.ones(2, 3)), r"shape \(2, 3\) to the entry 'a'"),
    (_rows(s="y"), "the saved non-tensor value 'x' stays as it is, so the rows must hold "
                   "the same value, not 'y'"),
    (_rows(n=TensorDict(b=torch.ones(2, 5, dtype=torch.int64), batch_size=[2, 5])),
     r"batch size torch.Size\(\[2, 5\]\) to the entry 'n', of batch size "
     r"torch.Size\(\[3, 4\]\): they differ beyond the first dimension"),
    (TensorDict(a=torch.ones(2, 2), batch_size=[2, 2]),
     "to the saved tensordict, of batch size torch.Size.*differ beyond the first"),
    (TensorDict(a=torch.ones(2, 2)), "appends along the first batch dimension"),
])
def test_append_errors_write_nothing(tmp_path, rows, message):
    path = _saved(tmp_path)
    before = _snapshot(path)
    with pytest.raises(ValueError, match=message):
        tensordict.append_memmap(path, rows)
    assert _snapshot(path) == before


def test_append_refuses(tmp_path):
    with pytest.raises(TypeError, match="rows must be a tensordict or a tensorclass"):
        tensordict.append_memmap(_saved(tmp_path), "rows")
    TensorDict(a=torch.zeros(1), batch_size=[1]).save(tmp_path / "y.tdz")
    for path in [tmp_path / "y.tdz", tmp_path / "missing"]:
        with pytest.raises(ValueError, match="An archive cannot grow"):
            tensordict.append_memmap(path, _rows())


def test_append_refuses_nested(tmp_path):
    try:
        nested = TensorDict(n=torch.nested.nested_tensor([torch.zeros(2), torch.ones(1)]),
                            batch_size=[2])
    except RuntimeError as err:  # a core fast path that reads a nested tensor's shape
        pytest.skip(f"this build's TensorDict cannot hold a nested tensor: {err}")
    tensordict.save(nested, tmp_path / "nested")
    with pytest.raises(ValueError, match="a saved nested tensor cannot grow"):
        tensordict.append_memmap(tmp_path / "nested", nested)


def test_failed_append_leaves_the_folder(tmp_path, monkeypatch):
    path = _saved(tmp_path)
    before = _snapshot(path)
    written = []
    dumps = _append._layout.dumps_meta

    def failing(meta, compact=False):
        written.append(meta)
        if len(written) == 2:
            raise OSError("disk full")
        return dumps(meta, compact)

    monkeypatch.setattr(_append._layout, "dumps_meta", failing)
    with pytest.raises(OSError, match="disk full"):
        tensordict.append_memmap(path, _rows())
    assert _snapshot(path) == before
