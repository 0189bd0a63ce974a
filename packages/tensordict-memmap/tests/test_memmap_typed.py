"""TypedTensorDicts through memmap: the memmapped result keeps the class (of the root and
of every typed entry), its state lives in the TensorDict of its entries, and a load gives
plain TensorDicts (as observed on upstream 0.15.3)."""

from __future__ import annotations

import json

import pytest
import torch
from torch import Tensor

from tensordict import MemoryMappedTensor, TensorDict, TypedTensorDict


class State(TypedTensorDict):
    eta: Tensor
    X: Tensor


def _state(n: int = 5) -> State:
    return State(eta=torch.zeros(n, 3), X=torch.ones(n, 4), batch_size=[n])


def _holder() -> TensorDict:
    return TensorDict(st=_state(), a=torch.zeros(5), batch_size=[5])


def test_memmap_keeps_typed_entries(tmp_path):
    holder = _holder()
    saved = holder.memmap(tmp_path)
    st = saved["st"]
    assert type(st) is State and type(st._source) is TensorDict
    assert st.is_memmap() and st.is_locked and type(st.eta) is MemoryMappedTensor
    assert st.saved_path == str(tmp_path / "st") == st._source.saved_path
    meta = json.loads((tmp_path / "st" / "meta.json").read_text())
    assert meta["_class"] == "tensordict:TensorDict"  # the on-disk format is upstream's
    loaded = TensorDict.load_memmap(tmp_path)
    assert type(loaded["st"]) is TensorDict and (loaded == holder).all()
    assert type(holder["st"]) is State and not holder.is_locked  # the input is unchanged


@pytest.mark.parametrize("method", ["memmap", "memmap_like"])
def test_memmap_of_a_typed_root(tmp_path, method):
    saved = getattr(_state(), method)(tmp_path)
    assert type(saved) is State and saved.is_memmap() and saved.is_locked
    assert saved.saved_path == str(tmp_path)
    assert type(State.load_memmap(tmp_path)) is TensorDict  # as upstream


def test_memmap_in_place(tmp_path):
    state = _state()
    source = state._source
    assert state.memmap_(tmp_path / "state") is state and state._source is source
    assert state.is_memmap() and source.is_memmap()
    assert state.saved_path == str(tmp_path / "state")
    holder = _holder()
    st = holder["st"]
    holder.memmap_(tmp_path / "held")
    assert holder["st"] is st and st.is_memmap() and type(st.eta) is MemoryMappedTensor
    assert st.saved_path == str(tmp_path / "held" / "st")


def test_make_memmap_and_refresh(tmp_path):
    state = _state().memmap(tmp_path)
    leaf = state.make_memmap("new", [5, 2])
    assert type(leaf) is MemoryMappedTensor and state["new"] is leaf
    assert TensorDict.load_memmap(tmp_path)["new"].shape == (5, 2)
    state.make_memmap_from_tensor("copy", torch.ones(5))
    assert TensorDict.load_memmap(tmp_path)["copy"].sum() == 5
    TensorDict(eta=torch.zeros(5, 3), X=torch.ones(5, 4), extra=torch.ones(5),
               batch_size=[5]).memmap(tmp_path)
    assert state.memmap_refresh_() is state and "extra" in state.keys()
    with pytest.raises(RuntimeError, match="not memory-mapped"):
        _state().make_memmap("x", [5])


def test_memmap_of_a_typed_instance(tmp_path):
    state = _state()
    saved = state.memmap(tmp_path)
    assert type(saved) is State and saved.is_locked and saved.is_memmap()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["X.memmap", "eta.memmap",
                                                          "meta.json"]
    loaded = TensorDict.load_memmap(tmp_path)
    assert type(loaded) is TensorDict and (loaded == state).all()
    assert state.memmap_(tmp_path / "inplace") is state and state.is_locked
    assert type(_state().memmap_like(tmp_path / "like")) is State


def test_memmap_of_a_nested_tensor_entry(tmp_path):
    nested = torch.nested.nested_tensor([torch.zeros(2, 3), torch.ones(4, 3)])
    saved = TensorDict(nt=nested, x=torch.arange(2), batch_size=[2]).memmap(tmp_path)
    assert torch.equal(saved["nt"][1], torch.ones(4, 3))
    assert torch.equal(TensorDict.load_memmap(tmp_path)["nt"][0], torch.zeros(2, 3))
