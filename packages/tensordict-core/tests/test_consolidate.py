"""consolidate / from_consolidated / is_consolidated / auto_device_ and the one-buffer
paths of ``to`` and pickling."""

import copy
import io
import os
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, _consolidate

try:
    from tensordict import tensorclass
except ImportError:  # core alone (tox env core): the tensorclass cases skip
    tensorclass = None

if tensorclass is not None:
    @tensorclass
    class Pair:
        x: torch.Tensor
        label: str


def _td():
    return TensorDict({
        "a": torch.arange(3.0),
        "b": {"c": torch.ones(3, 2, dtype=torch.int64), "s": "hello"},
        "d": torch.zeros(3, dtype=torch.bool),
        "h": torch.full((3, 5), 2.0, dtype=torch.float16),
    }, [3], names=["t"])


def _stack():
    a = TensorDict({"x": torch.zeros(2), "y": torch.ones(2, 3)}, [2])
    b = TensorDict({"x": torch.ones(2), "z": torch.ones(2, dtype=torch.int32), "s": "q"}, [2])
    return LazyStackedTensorDict.lazy_stack([a, b], 1)


def _storages(td):
    return {leaf.untyped_storage()._cdata for leaf in td._tensor_leaves()}


def _assert_same(out, ref):
    assert type(out) is type(ref)
    assert out.batch_size == ref.batch_size and out.names == ref.names
    assert out.device == ref.device
    assert sorted(out.keys(True, True), key=str) == sorted(ref.keys(True, True), key=str)
    for key, value in ref.items(True, True):
        other = out.get(key)
        if isinstance(value, torch.Tensor):
            assert other.dtype == value.dtype and torch.equal(other, value), key
        else:
            assert other == value, key


# -- consolidate -----------------------------------------------------------------------------
def test_consolidate_one_storage_keeps_structure():
    td = _td()
    c = td.consolidate()
    _assert_same(c, td)
    assert len(_storages(c)) == 1
    assert c.is_consolidated() and not td.is_consolidated()
    assert c.is_locked and c["b"].is_locked and not td.is_locked
    assert not c["b"].is_consolidated()  # only the root records the storage
    assert c.consolidate() is c


def test_consolidate_layout_is_upstreams():
    c = _td().consolidate()
    meta = c._consolidated["metadata"]
    assert meta["leaves"]["a"] == ("torch.float32", [3], 0, 16, 4)
    assert meta["b"]["leaves"]["c"] == ("torch.int64", [3, 2], 16, 64, 0)
    assert meta["b"]["non_tensors"]["s"] == ("hello", [3], None)
    assert meta["cls_metadata"]["names"] == ["t"]
    assert c._consolidated["storage"].numel() == 72 + 32  # every leaf 8-byte aligned
    assert _td()._consolidated is None


def test_views_write_into_the_storage():
    c = _td().consolidate()
    storage = c._consolidated["storage"]
    c["a"][0] = 100.0
    c.set_("d", torch.ones(3, dtype=torch.bool))
    assert storage[:4].view(torch.float32).item() == 100.0
    assert storage[64:67].tolist() == [1, 1, 1]
    assert c.is_consolidated()  # in-place writes keep it


def test_consolidation_ends_when_a_leaf_changes():
    c = _td().consolidate()
    with pytest.raises(tensordict.errors.LockedTensorDictError):
        c["new"] = torch.zeros(3)
    c.unlock_()
    c["new"] = torch.zeros(3)
    assert not c.is_consolidated()
    c = _td().consolidate().unlock_()
    del c["a"]
    assert not c.is_consolidated()
    c = _td().consolidate().unlock_()
    c["a"] = torch.zeros(3)
    assert not c.is_consolidated()


def test_consolidate_odd_leaves():
    td = TensorDict(t=torch.ones(2, 3).t(), r=torch.ones(2, requires_grad=True),
                    z=torch.zeros(0, 4), s=torch.tensor(7),
                    j=torch.tensor([1 + 2j]).conj(), n=-torch.ones(2).neg())
    c = td.consolidate()
    assert c["t"].is_contiguous() and torch.equal(c["t"], td["t"])
    assert not c["r"].requires_grad
    assert c["z"].shape == (0, 4) and c["s"].item() == 7
    assert c["j"].item() == 1 - 2j and not c["j"].is_conj()
    assert torch.equal(c["n"], td["n"])
    assert len(_storages(c)) == 1


def test_consolidate_aligns_each_dtype():
    td = TensorDict(b=torch.ones(3, dtype=torch.bool), c=torch.full((2,), 1 + 2j,
                    dtype=torch.complex128), h=torch.ones(1, dtype=torch.float16),
                    d=torch.full((1,), 3j, dtype=torch.complex128))
    c = td.consolidate()
    _assert_same(c, td)
    starts = [leaf.storage_offset() * leaf.element_size() for leaf in c._tensor_leaves()]
    assert starts == [0, 16, 48, 64]  # each complex128 16-byte aligned
    assert c._consolidated["storage"].numel() == 80
    _assert_same(pickle.loads(pickle.dumps(c)), td)


def test_consolidate_empty():
    c = TensorDict(batch_size=[2]).consolidate()
    assert c.is_consolidated() and c.batch_size == (2,)
    assert c._consolidated["storage"].numel() == 0


def test_consolidate_strided_nested_tensor_is_refused():
    td = TensorDict(a=torch.nested.nested_tensor([torch.zeros(2), torch.zeros(3)]))
    with pytest.raises(NotImplementedError, match="layout=torch.jagged.*'a'"):
        td.consolidate()


def test_consolidate_inplace():
    td = _td()
    sub = td["b"]
    out = td.consolidate(inplace=True)
    assert out is td and td.is_consolidated() and td.is_locked
    assert td["b"] is sub and len(_storages(td)) == 1
    _assert_same(td, _td())


def test_consolidate_inplace_lazy_stack():
    stack = _stack()
    parts = list(stack.tensordicts)
    assert stack.consolidate(inplace=True) is stack
    assert stack.tensordicts == parts and len(_storages(stack)) == 1
    assert stack.is_consolidated()


def test_consolidate_share_memory_and_device():
    c = _td().consolidate(share_memory=True)
    assert c._consolidated["storage"].is_shared() and c["a"].is_shared()
    m = _td().consolidate(device="meta")
    assert m.device == torch.device("meta") and m["b", "c"].device.type == "meta"
    assert m.is_consolidated() and len(_storages(m)) == 1


def test_file_on_another_device_is_refused(tmp_path):
    with pytest.raises(ValueError, match="meta"):
        _td().consolidate(tmp_path / "td.bin", device="meta")
    assert not os.path.exists(tmp_path / "td.bin")


def test_consolidate_lazy_stack():
    stack = _stack()
    c = stack.consolidate()
    assert type(c) is LazyStackedTensorDict and c.stack_dim == 1
    assert len(_storages(c)) == 1 and c.is_consolidated() and c.is_locked
    assert c.tensordicts[1]["s"] == "q"
    assert torch.equal(c.tensordicts[0]["y"], stack.tensordicts[0]["y"])
    nested = TensorDict({"st": stack, "ns": NonTensorStack("a", "b")}, [2]).consolidate()
    assert type(nested["st"]) is LazyStackedTensorDict
    assert len(_storages(nested)) == 1
    assert list(nested["ns"]) == ["a", "b"]


@pytest.mark.skipif(tensorclass is None, reason="needs tensordict-tensorclass")
def test_consolidate_tensorclass():
    pair = Pair(x=torch.arange(3.0), label="hi", batch_size=[3])
    c = pair.consolidate()
    assert type(c) is Pair and c.is_consolidated() and c.label == "hi"
    out = pickle.loads(pickle.dumps(c))
    assert type(out) is Pair and out.is_consolidated() and torch.equal(out.x, pair.x)
    td = TensorDict({"p": pair, "a": torch.ones(3)}, [3]).consolidate()
    assert type(td["p"]) is Pair and len(_storages(td)) == 1
    assert type(pickle.loads(pickle.dumps(td))["p"]) is Pair


@pytest.mark.skipif(tensorclass is None, reason="needs tensordict-tensorclass")
def test_file_with_a_nested_tensorclass(tmp_path):
    pair = Pair(x=torch.arange(3.0), label="hi", batch_size=[3])
    TensorDict({"p": pair}, [3]).consolidate(tmp_path / "td.bin")
    out = tensordict.from_consolidated(tmp_path / "td.bin")["p"]
    assert type(out) is Pair and out.label == "hi" and torch.equal(out.x, pair.x)


def test_rebuilt_key_order_is_upstreams():
    td = TensorDict({"n": {"c": torch.ones(1)}, "s": "x", "a": torch.zeros(1)})
    assert list(pickle.loads(pickle.dumps(td.consolidate())).keys()) == ["s", "a", "n"]


# -- files and from_consolidated --------------------------------------------------------------
def test_file_round_trip(tmp_path):
    path = tmp_path / "td.bin"
    c = _td().consolidate(path)
    assert c.is_consolidated() and c["a"].is_shared()
    with open(path, "rb") as f:
        raw = f.read()
    length = int.from_bytes(raw[-8:], "little")
    assert len(raw) == 104 + length + 8  # the buffer, the JSON metadata, its length
    for load in (tensordict.from_consolidated, TensorDict.from_consolidated):
        out = load(path)
        _assert_same(out, _td())
        assert out.is_consolidated() and len(_storages(out)) == 1
    c["a"][1] = 5.0  # the file is mapped: writes reach it
    assert tensordict.from_consolidated(str(path))["a"][1] == 5.0


def test_file_overwrite_and_lazy_stack(tmp_path):
    path = tmp_path / "td.bin"
    TensorDict(a=torch.zeros(100)).consolidate(path)
    _stack().consolidate(path)
    out = tensordict.from_consolidated(path)
    assert type(out) is LazyStackedTensorDict and out.stack_dim == 1
    assert out.tensordicts[1]["s"] == "q"


def test_file_refuses_non_json_data_before_writing(tmp_path):
    path = tmp_path / "td.bin"
    TensorDict(a=torch.ones(2)).consolidate(path)
    before = path.read_bytes()
    with pytest.raises(RuntimeError, match="json"):
        TensorDict(a=torch.zeros(2), o=object()).consolidate(path)
    assert path.read_bytes() == before


def test_metadata_in_the_buffer():
    c = _td().consolidate(metadata=True)
    out = tensordict.from_consolidated(c._consolidated["storage"])
    _assert_same(out, _td())
    assert _storages(out) == _storages(c)  # views of the same memory


def test_reserved_key_is_refused(tmp_path):
    td = TensorDict(leaves=TensorDict(a=torch.zeros(1)))
    with pytest.raises(ValueError, match="'leaves'"):
        td.consolidate(tmp_path / "td.bin")
    assert not os.path.exists(tmp_path / "td.bin")


# -- to(device) ---------------------------------------------------------------------------------
def test_to_moves_one_buffer():
    c = _td().consolidate()
    m = c.to("meta")
    assert m.device == torch.device("meta") and m.is_consolidated() and m.is_locked
    assert len(_storages(m)) == 1
    assert m._consolidated["storage"].device.type == "meta"
    assert m["h"].shape == (3, 5) and m["h"].dtype == torch.float16
    stack = _stack().consolidate().to("meta")
    assert type(stack) is LazyStackedTensorDict and len(_storages(stack)) == 1
    assert stack.is_consolidated()


def test_to_same_device_shares_the_buffer():
    c = _td().consolidate()
    out = c.to("cpu")  # like tensor.to: no copy on the same device
    assert out.device == torch.device("cpu") and out.is_consolidated()
    assert _storages(out) == _storages(c)
    _assert_same(out.clear_device_(), c)


def test_to_dtype_is_not_consolidated():
    assert not _td().consolidate().to(torch.float64).is_consolidated()


def test_stale_consolidation_moves_leaf_by_leaf():
    c = _td().consolidate().unlock_()
    c["x"] = torch.zeros(3)
    m = c.to("meta")
    assert not m.is_consolidated() and m["x"].device.type == "meta"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_to_cuda_moves_one_buffer():
    c = _td().consolidate()
    g = c.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    assert g.is_consolidated() and len(_storages(g)) == 1
    _assert_same(g.to("cpu").clear_device_(), c)
    p = _td().consolidate(pin_memory=True)
    assert p["a"].is_pinned()
    d = _td().consolidate(device="cuda")
    assert d["b", "c"].is_cuda and len(_storages(d)) == 1


# -- pickling -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dumps, loads", [
    (pickle.dumps, pickle.loads),
    (lambda o: bytes(ForkingPickler.dumps(o)), pickle.loads),
])
def test_pickle_sends_one_buffer(dumps, loads):
    c = _td().consolidate()
    state = c.__getstate__()
    assert list(state) == ["_consolidated"]
    assert [k for k, v in state["_consolidated"].items() if isinstance(v, torch.Tensor)] == \
        ["storage"]
    out = loads(dumps(c))
    _assert_same(out, _td())
    assert out.is_consolidated() and not out.is_locked and len(_storages(out)) == 1
    out["new"] = torch.zeros(3)  # unlocked, as upstream's
    assert not out.is_consolidated()


def test_forking_pickler_shares_the_shared_buffer():
    c = _td().consolidate(share_memory=True)
    out = pickle.loads(bytes(ForkingPickler.dumps(c)))  # as multiprocessing sends it
    out["a"][0] = 5.0
    assert c["a"][0] == 5.0 and out.is_consolidated()


def test_pickle_lazy_stack_and_copies():
    stack = _stack().consolidate()
    out = pickle.loads(pickle.dumps(stack))
    assert type(out) is LazyStackedTensorDict and out.is_consolidated()
    assert out.tensordicts[1]["s"] == "q" and out.stack_dim == 1
    _assert_same(copy.deepcopy(_td().consolidate()), _td())


def test_pickle_after_structure_changes():
    c = _td().consolidate()
    pickle.dumps(c)  # the metadata is kept from here on...
    c.unlock_()
    c["b", "s"] = "bye"  # ...until the structure changes
    c.rename_key_("d", "e")
    c.names = ["u"]
    out = pickle.loads(pickle.dumps(c))
    assert out.is_consolidated() and out["b", "s"] == "bye" and out.names == ["u"]
    assert "e" in out.keys() and "d" not in out.keys()
    assert torch.equal(out["e"], _td()["d"])


def test_pickle_while_locked_reuses_the_metadata_but_sees_non_tensor_writes(monkeypatch):
    c = _td().consolidate()  # locked: no entry can be added, replaced or removed
    metadata = c.__getstate__()["_consolidated"]["metadata"]
    with monkeypatch.context() as patched:  # no walk over the leaves while locked
        patched.setattr(_consolidate, "_fingerprint", None)
        assert c.__getstate__()["_consolidated"]["metadata"] is metadata
    c.set_(("b", "s"), "bye")  # a non-tensor leaf is rewritten in place, lock or not
    c["a"][0] = 7.0  # a tensor leaf's values live in the one buffer
    out = pickle.loads(pickle.dumps(c))
    assert out["b", "s"] == "bye" and out["a"][0] == 7.0 and out.is_consolidated()


def test_pickle_after_unlocking_and_locking_again():
    c = _td().consolidate()
    pickle.dumps(c)
    with c.unlock_():  # locked again on exit: the unlock in between is what counts
        c["x"] = torch.zeros(3)
        del c["a"]
    assert c.is_locked and "_consolidated" not in c.__getstate__()
    out = pickle.loads(pickle.dumps(c))
    assert "a" not in out.keys() and torch.equal(out["x"], torch.zeros(3))
    parent = TensorDict(c=_td().consolidate(), batch_size=[3]).lock_()
    child = parent["c"]
    pickle.dumps(child)
    with parent.unlock_():  # the child's own lock holds, but an unlock happened
        pass
    assert pickle.loads(pickle.dumps(child)).is_consolidated()


def test_torch_save_load():
    buffer = io.BytesIO()
    torch.save(_td().consolidate(), buffer)
    buffer.seek(0)
    out = torch.load(buffer)
    _assert_same(out, _td())
    assert out.is_consolidated()


def test_pickle_stale_consolidation_pickles_the_leaves():
    c = _td().consolidate()
    pickle.dumps(c)  # metadata kept
    c.unlock_()
    c["x"] = torch.zeros(3)
    assert "_consolidated" not in c.__getstate__()
    assert pickle.loads(pickle.dumps(c))["x"].shape == (3,)


# -- auto_device_ -------------------------------------------------------------------------------
def test_auto_device():
    td = TensorDict(a=torch.zeros(2), b={"c": torch.zeros(1)})
    assert td.auto_device_() is td
    assert td.device == torch.device("cpu") and td["b"].device == torch.device("cpu")
    mixed = TensorDict(a=torch.zeros(2), b=torch.zeros(2, device="meta"))
    assert mixed.auto_device_().device is None
    assert TensorDict().auto_device_().device is None
    assert TensorDict(s="x").auto_device_().device is None
    assert TensorDict(a=torch.zeros(1)).lock_().auto_device_().device.type == "cpu"
    stack = _stack().auto_device_()
    assert stack.device.type == "cpu" and stack.tensordicts[0].device.type == "cpu"
