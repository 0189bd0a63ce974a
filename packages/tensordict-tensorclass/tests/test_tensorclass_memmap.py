"""Saving tensorclasses on disk through tensordict-memmap's plugin methods, and the
error that names the package when it is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tensordict import plugins
from tensordict.plugins import MissingMethodError
from tensordict.testing import plugin_removed

sys.path.insert(0, str(Path(__file__).parent))
from tensorclass_test_classes import Inner, Outer  # noqa: E402


def make() -> Outer:
    return Outer(inner=Inner(x=torch.arange(3.0), label="a", batch_size=[3]),
                 y=torch.ones(3, 2), extra={"any": "object"}, batch_size=[3])


def test_missing_memmap_plugin_names_the_package():
    with plugin_removed("memmap"):
        with pytest.raises(MissingMethodError, match="tensordict-memmap"):
            make().memmap()
        with pytest.raises(MissingMethodError, match="tensordict-memmap"):
            Outer.load_memmap("nowhere")


def _memmap():
    module = pytest.importorskip("tensordict.memmap", reason="tensordict-memmap is not installed")
    if plugins.method("memmap") is None:
        pytest.skip("the tensordict-memmap plugin is disabled")
    return module


def test_memmap_and_load_memmap(tmp_path):
    memmap = _memmap()
    obj = make()
    saved = obj.memmap(tmp_path)
    assert type(saved) is Outer and saved.is_locked
    assert isinstance(saved.y, memmap.MemoryMappedTensor)
    loaded = Outer.load_memmap(tmp_path)
    assert type(loaded) is Outer and type(loaded.inner) is Inner
    assert torch.equal(loaded.inner.x, obj.inner.x) and torch.equal(loaded.y, obj.y)
    assert loaded.inner.label == "a" and loaded.extra == {"any": "object"}


def test_save_load_dumps_memmap_(tmp_path):
    memmap = _memmap()
    obj = make()
    obj.save(tmp_path / "a")
    assert torch.equal(Outer.load(tmp_path / "a").y, obj.y)
    from tensordict import TensorDict

    assert type(TensorDict.load(tmp_path / "a")) is Outer  # the folder records the class
    obj.dumps(tmp_path / "b")
    assert torch.equal(Outer.load_memmap(tmp_path / "b").inner.x, obj.inner.x)
    same = obj.memmap_(tmp_path / "c")
    assert same is obj and isinstance(obj.y, memmap.MemoryMappedTensor)
