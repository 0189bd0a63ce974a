"""TensorDict methods of tensordict-memmap: memmap, memmap_, memmap_like, load_memmap..."""

from __future__ import annotations

import multiprocessing
import os
import pickle

import pytest
import torch
from torch import nn

import tensordict
import tensordict.utils
from tensordict import MemoryMappedTensor, NonTensorData, NonTensorStack, TensorDict, plugins


def _sample() -> TensorDict:
    td = TensorDict(
        {"obs": torch.arange(12.0).reshape(3, 4), "done": torch.tensor([True, False, True]),
         "next": {"reward": torch.randn(3, 1), "deep": {"step": torch.arange(3)}},
         "label": "a string", "tags": NonTensorStack.from_list(["x", "y", "z"])},
        batch_size=[3], names=["time"],
    )
    td["scalar_like"] = torch.zeros(3, dtype=torch.bfloat16)
    return td


def _leaves(td):
    return dict(td.items(include_nested=True, leaves_only=True))


def _assert_same_leaves(result, expected):
    got, want = _leaves(result), _leaves(expected)
    assert set(got) == set(want)
    for key, value in want.items():
        if isinstance(value, torch.Tensor):
            assert got[key].dtype == value.dtype and got[key].shape == value.shape, key
            assert torch.equal(got[key].as_subclass(torch.Tensor), value), key
        else:
            assert type(got[key]) is type(value) and got[key].tolist() == value.tolist(), key


def test_memmap_returns_locked_copy_of_memory_mapped_tensors(tmp_path):
    td = _sample()
    out = td.memmap(tmp_path)
    assert out is not td and out.is_locked and out.is_memmap()
    assert out.device == torch.device("cpu") and out.batch_size == td.batch_size
    assert out.names == ["time"] and out["next"].names[0] == "time"
    assert out.saved_path == str(tmp_path) and out["next"].saved_path == str(tmp_path / "next")
    for key, value in _leaves(out).items():
        if isinstance(value, torch.Tensor):
            assert type(value) is MemoryMappedTensor, key
    _assert_same_leaves(out, td)
    assert out["label"] == "a string" and out["tags"] == ["x", "y", "z"]
    assert not td.is_locked and type(td["obs"]) is torch.Tensor  # the source is unchanged
    with pytest.raises(RuntimeError):
        out["new"] = torch.zeros(3)


def test_the_result_is_freed_at_once_and_stays_locked_after_a_with_block(tmp_path):
    """No reference cycle: dropping the result unmaps its files at once, not at the next
    garbage collection (which would then pay for it in an unrelated call)."""
    import gc
    import weakref

    gc.disable()
    try:
        out = _sample().memmap(tmp_path / "a")
        ref = weakref.ref(out)
        del out
        assert ref() is None
        source = _sample()
        ref = weakref.ref(source.memmap_(tmp_path / "b"))
        assert ref() is source and source.is_locked
    finally:
        gc.enable()
    for saved in (_sample().memmap(tmp_path / "c"), _sample().memmap_(tmp_path / "d")):
        with saved as inside:  # as upstream: the with block does not unlock it
            assert inside.is_locked
        assert saved.is_locked and saved.is_memmap()


def test_load_memmap_round_trip_is_unlocked(tmp_path):
    td = _sample()
    td.memmap(tmp_path)
    loaded = TensorDict.load_memmap(tmp_path)
    assert not loaded.is_locked and not loaded.is_memmap()
    assert loaded.names == ["time"] and loaded.device == torch.device("cpu")
    _assert_same_leaves(loaded, td)
    assert isinstance(loaded["obs"], MemoryMappedTensor)
    sub = TensorDict.load_memmap(tmp_path / "next")  # a sub-folder loads alone
    _assert_same_leaves(sub, td["next"])
    assert sub.batch_size == (3,)


def test_zero_dim_and_empty(tmp_path):
    td = TensorDict({"a": torch.tensor(2.5), "e": torch.zeros(0, 4), "n": {}}, batch_size=[])
    out = td.memmap(tmp_path / "z")
    assert out["a"].item() == 2.5 and out["e"].shape == (0, 4) and "n" in out.keys()
    loaded = TensorDict.load_memmap(tmp_path / "z")
    assert loaded["a"].item() == 2.5 and loaded["e"].shape == (0, 4)
    assert TensorDict().memmap(tmp_path / "empty").batch_size == ()
    assert len(TensorDict.load_memmap(tmp_path / "empty").keys()) == 0


def test_anonymous_memmap(tmp_path):
    td = _sample()
    out = td.memmap()
    assert out.is_memmap() and out.saved_path is None
    _assert_same_leaves(out, td)
    assert type(out["obs"]) is MemoryMappedTensor and out["obs"].is_shared()


def test_memmap_in_place_keeps_identity(tmp_path):
    td = _sample()
    sub = td["next"]
    expected = td.clone()
    assert td.memmap_(tmp_path) is td
    assert td["next"] is sub and td.is_locked and sub.is_locked and td.is_memmap()
    assert type(sub["reward"]) is MemoryMappedTensor and td.device == torch.device("cpu")
    _assert_same_leaves(td, expected)
    assert sub.saved_path == str(tmp_path / "next")


def test_failed_memmap_changes_nothing(tmp_path):
    td = _sample()
    (tmp_path / "obs.memmap").write_bytes(b"old")
    before = sorted(os.listdir(tmp_path))
    with pytest.raises(RuntimeError, match="obs.memmap already exists"):
        td.memmap_(tmp_path, existsok=False)
    assert not td.is_locked and type(td["obs"]) is torch.Tensor
    assert sorted(os.listdir(tmp_path)) == before
    assert (tmp_path / "obs.memmap").read_bytes() == b"old"


def test_memmap_like_allocates_zeros(tmp_path):
    td = _sample()
    out = td.memmap_like(tmp_path)
    assert out.is_locked and out["label"] == "a string"
    for key, value in _leaves(td).items():
        if isinstance(value, torch.Tensor):
            assert out[key].shape == value.shape and out[key].dtype == value.dtype
            assert not out[key].as_subclass(torch.Tensor).any()
    out["obs"][1] = 5.0
    assert TensorDict.load_memmap(tmp_path)["obs"][1].sum() == 20.0


def test_threads_and_future(tmp_path):
    td = TensorDict({f"p{i}": torch.randn(64, 8) for i in range(20)}, batch_size=[64])
    td["nested"] = {"q": torch.randn(64)}
    serial = td.memmap(tmp_path / "serial")
    threaded = td.memmap(tmp_path / "threaded", num_threads=2)
    _assert_same_leaves(threaded, serial)
    assert threaded.is_locked and threaded.is_memmap()
    future = td.memmap(tmp_path / "future", num_threads=2, return_early=True)
    assert isinstance(future, tensordict.utils.TensorDictFuture)
    result = future.result()
    assert future.done() and result.is_memmap()
    _assert_same_leaves(result, td)
    _assert_same_leaves(TensorDict.load_memmap(tmp_path / "future"), td)
    assert isinstance(td.memmap(tmp_path / "direct", return_early=True), TensorDict)


def test_future_in_place_and_its_failure(tmp_path):
    td = TensorDict({"a": torch.ones(3), "n": {"b": torch.zeros(3)}}, [3])
    future = td.memmap_(tmp_path / "ok", num_threads=2, return_early=True)
    assert future.result() is td and td.is_memmap() and type(td["n", "b"]) is MemoryMappedTensor
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.memmap").mkdir()  # a folder where a file must go
    failing = TensorDict({"a": torch.ones(3)}, [3]).memmap(tmp_path / "bad", num_threads=2,
                                                          return_early=True)
    with pytest.raises(OSError):
        failing.result()
    assert not (tmp_path / "bad" / "meta.json").exists()


def test_multi_dim_batch_round_trip(tmp_path):
    td = TensorDict({"x": torch.randn(2, 3, 4), "s": NonTensorData("z", batch_size=[2, 3]),
                     "n": TensorDict({"y": torch.arange(24).reshape(2, 3, 4)}, [2, 3, 4])},
                    batch_size=[2, 3], names=["env", "time"])
    td.memmap(tmp_path)
    loaded = TensorDict.load_memmap(tmp_path)
    assert loaded.batch_size == (2, 3) and loaded["n"].batch_size == (2, 3, 4)
    assert loaded.names == ["env", "time"] and loaded["n"].names[:2] == ["env", "time"]
    assert loaded["s"] == "z" and loaded[1, 2]["s"] == "z"
    _assert_same_leaves(loaded, td)
    assert torch.equal(loaded[1, 2]["n", "y"], td[1, 2]["n", "y"])


def test_threaded_failure_raises_and_writes_no_meta(tmp_path, monkeypatch):
    from tensordict.memmap import _tensor

    calls = []

    def failing(filename, *args):
        calls.append(filename)
        raise OSError(f"disk full writing {filename}")

    monkeypatch.setattr(_tensor, "write_file", failing)
    td = TensorDict({f"p{i}": torch.randn(4) for i in range(6)})
    with pytest.raises(OSError, match="disk full"):
        td.memmap(tmp_path, num_threads=2)
    assert calls and not (tmp_path / "meta.json").exists()


def test_copy_existing(tmp_path):
    saved = TensorDict(a=torch.arange(3)).memmap(tmp_path / "one")
    other = TensorDict(a=saved["a"])
    with pytest.raises(RuntimeError, match="copy_existing=True"):
        other.memmap(tmp_path / "two")
    copied = other.memmap(tmp_path / "two", copy_existing=True)
    assert copied["a"].filename == str(tmp_path / "two" / "a.memmap")
    assert torch.equal(copied["a"], torch.arange(3))
    again = saved.memmap(tmp_path / "one")  # already in place: reused, not copied
    assert again["a"] is saved["a"]


def test_resave_view_of_own_folder(tmp_path):
    saved = TensorDict(a=torch.arange(6)).memmap(tmp_path)
    view = TensorDict(a=saved["a"][2:])
    view.memmap(tmp_path)  # the old file is replaced, the view's data is what is written
    assert torch.equal(TensorDict.load_memmap(tmp_path)["a"], torch.arange(2, 6))
    assert torch.equal(saved["a"], torch.arange(6))  # earlier maps keep their data


def test_module_parameters_with_grad(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    params = TensorDict(dict(model.state_dict(keep_vars=True))).unflatten_keys(".")
    out = params.memmap(tmp_path)
    for name, value in model.state_dict().items():
        assert torch.equal(out.get(tuple(name.split("."))), value)
    first = TensorDict.load_memmap(tmp_path / "0")  # a slice of the model only
    assert torch.equal(first["weight"], model[0].weight.detach())


def test_seeds_checkpoint_example(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 3))
    x = torch.randn(5, 3)
    expected = model(x)
    TensorDict.from_module(model).memmap(tmp_path, num_threads=2)
    fresh = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 3))
    params = TensorDict.load_memmap(tmp_path, num_threads=2)
    params.to_module(fresh)
    assert torch.allclose(fresh(x), expected)
    assert isinstance(fresh[0].weight, nn.Parameter) and fresh[0].weight.requires_grad
    fresh(x).sum().backward()  # the mapped weights train like any parameter
    assert fresh[1].bias.grad is not None
    other = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 3))
    TensorDict.load_memmap(tmp_path / "0").to_module(other[0])  # a slice of the model
    assert torch.equal(other[0].weight.detach(), model[0].weight.detach())


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors")
def test_nested_ragged_tensor(tmp_path):
    nt = torch.nested.nested_tensor([torch.arange(6.0).reshape(2, 3), torch.ones(4, 3)])
    TensorDict(nt=nt).memmap(tmp_path)
    assert os.path.getsize(tmp_path / "nt.memmap") == 72
    assert os.path.getsize(tmp_path / "nt.shape.memmap") == 32
    loaded = TensorDict.load_memmap(tmp_path)["nt"]
    assert loaded.is_nested
    for got, want in zip(loaded.unbind(), nt.unbind(), strict=True):
        assert torch.equal(got, want)


def test_load_on_meta_reads_no_data(tmp_path):
    _sample().memmap(tmp_path)
    for folder, _, files in os.walk(tmp_path):
        for name in files:
            if name.endswith(".memmap"):
                os.unlink(os.path.join(folder, name))
    meta = TensorDict.load_memmap(tmp_path, device="meta")
    assert meta.device == torch.device("meta") and meta["obs"].device == torch.device("meta")
    assert meta["obs"].shape == (3, 4) and meta["label"] == "a string"


def test_load_out_and_load_memmap_(tmp_path):
    TensorDict(a=torch.ones(2), b={"c": torch.zeros(2)}, batch_size=[2]).memmap(tmp_path)
    out = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert TensorDict.load_memmap(tmp_path, out=out) is out
    assert torch.equal(out["a"], torch.ones(2)) and ("b", "c") in out.keys(True)
    target = TensorDict(batch_size=[2])
    assert target.load_memmap_(tmp_path) is target and torch.equal(target["a"], torch.ones(2))
    legacy = TensorDict(batch_size=[2])
    assert legacy.load_(tmp_path) is legacy and "b" in legacy.keys()


def test_memmap_refresh(tmp_path):
    td = TensorDict(a=torch.ones(2), batch_size=[2]).memmap(tmp_path)
    TensorDict(a=torch.full((2,), 5.0), z=torch.zeros(2), batch_size=[2]).memmap(tmp_path)
    assert td.memmap_refresh_() is td
    assert td.is_locked and td.is_memmap() and torch.equal(td["a"], torch.full((2,), 5.0))
    assert "z" in td.keys()
    with pytest.raises(RuntimeError, match="not memory mapped"):
        TensorDict(a=torch.ones(1)).memmap_refresh_()


def test_is_memmap_and_saved_path_follow_the_lock(tmp_path):
    td = TensorDict(a=torch.ones(1)).memmap(tmp_path)
    assert td.is_memmap() and td.saved_path == str(tmp_path)
    td.unlock_()
    assert not td.is_memmap()
    with pytest.raises(AttributeError, match="no saved path"):
        td.saved_path
    assert not TensorDict(a=torch.ones(1)).is_memmap()


def test_make_memmap_family(tmp_path):
    td = TensorDict({"n": {"x": torch.zeros(2)}}, batch_size=[2]).memmap(tmp_path)
    made = td.make_memmap("a", [2, 3], dtype=torch.int32)
    assert made.filename == str(tmp_path / "a.memmap") and td["a"] is made and td.is_locked
    from_tensor = td.make_memmap_from_tensor(("n", "b"), torch.arange(2.0))
    assert from_tensor.filename == str(tmp_path / "n" / "b.memmap")
    storage = MemoryMappedTensor.zeros(2, filename=tmp_path / "s.memmap").untyped_storage()
    from_storage = td.make_memmap_from_storage("s", storage, [2], dtype=torch.float32)
    assert from_storage.filename == str(tmp_path / "s.memmap")
    loaded = TensorDict.load_memmap(tmp_path)
    assert loaded["a"].dtype == torch.int32 and torch.equal(loaded["n", "b"], torch.arange(2.0))
    assert "s" in loaded.keys()
    with pytest.raises(RuntimeError, match="not memory-mapped"):
        TensorDict(batch_size=[2]).make_memmap("a", [2])


def test_top_level_functions_and_backend(tmp_path):
    td = _sample()
    assert tensordict.memmap(td, tmp_path / "m").is_memmap()
    _assert_same_leaves(tensordict.load_memmap(tmp_path / "m"), td)
    tensordict.save(td, tmp_path / "s")
    _assert_same_leaves(tensordict.load(tmp_path / "s"), td)
    backend = plugins.storage_backend("memmap")
    assert backend.save(td, tmp_path / "b", num_threads=2).is_memmap()
    assert backend.can_load(tmp_path / "b") and not backend.can_load(tmp_path / "nothing")
    _assert_same_leaves(backend.load(tmp_path / "b"), td)
    assert callable(tensordict.memmap) and tensordict.MemoryMappedTensor is MemoryMappedTensor


def test_dumps_is_memmap(tmp_path):
    td = _sample()
    assert td.dumps(tmp_path).is_memmap()
    _assert_same_leaves(TensorDict.load_memmap(tmp_path), td)


def test_non_tensor_collections_alone(tmp_path):
    data = NonTensorData("hello").memmap(tmp_path / "d")
    assert data.data == "hello"
    assert TensorDict.load_memmap(tmp_path / "d").data == "hello"
    stack = NonTensorStack.from_list(["a", "b"]).memmap(tmp_path / "s")
    assert stack.tolist() == ["a", "b"]
    assert TensorDict.load_memmap(tmp_path / "s").tolist() == ["a", "b"]


def test_memmapped_td_pickles_file_names(tmp_path):
    td = TensorDict(big=torch.zeros(1000, 100)).memmap(tmp_path)
    payload = pickle.dumps(td)
    assert len(payload) < 10_000
    back = pickle.loads(payload)
    back["big"][0, 0] = 1.0
    assert td["big"][0, 0] == 1.0


def _child_writes(queue, done):
    td = queue.get()
    td["obs"][1] = 7.0
    td["next", "reward"].fill_(-1.0)
    done.put(td.is_locked)


@pytest.mark.parametrize("anonymous", [True, False])
def test_memmapped_td_shared_with_another_process(tmp_path, anonymous):
    td = _sample().memmap(None if anonymous else tmp_path)
    ctx = multiprocessing.get_context("fork")
    queue, done = ctx.Queue(), ctx.Queue()
    child = ctx.Process(target=_child_writes, args=(queue, done))
    child.start()
    queue.put(td)
    done.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    assert td["obs"][1].tolist() == [7.0] * 4 and td["next", "reward"].eq(-1.0).all()


def test_lazy_stack(tmp_path):
    lazy_stack = getattr(tensordict, "lazy_stack", None)
    if lazy_stack is None:
        pytest.skip("core has no lazy stacks yet")
    parts = [TensorDict(a=torch.zeros(3), b=torch.ones(3)), TensorDict(a=torch.ones(3))]
    stacked = lazy_stack(parts, 0)
    out = TensorDict(lazy=stacked, batch_size=[2]).memmap(tmp_path)
    assert sorted(os.listdir(tmp_path / "lazy")) == ["0", "1", "meta.json"]
    assert type(out["lazy"]).__name__ == "LazyStackedTensorDict"
    loaded = TensorDict.load_memmap(tmp_path / "lazy")
    assert type(loaded).__name__ == "LazyStackedTensorDict"
    assert torch.equal(loaded.tensordicts[1]["a"], torch.ones(3))
    assert "b" in loaded.tensordicts[0].keys() and "b" not in loaded.tensordicts[1].keys()


try:
    from tensordict import tensorclass
except ImportError:  # tensordict-tensorclass is not installed
    tensorclass = None

if tensorclass is not None:

    @tensorclass
    class Point:
        x: torch.Tensor
        label: str


@pytest.mark.skipif(tensorclass is None, reason="tensordict-tensorclass is not installed")
def test_tensorclass(tmp_path):
    point = Point(x=torch.arange(6.0).reshape(2, 3), label="hi", batch_size=[2])
    out = point.memmap(tmp_path / "top")
    assert type(out) is Point and isinstance(out.x, MemoryMappedTensor) and out.is_memmap()
    assert (tmp_path / "top" / "_tensordict" / "x.memmap").exists()
    loaded = TensorDict.load_memmap(tmp_path / "top")
    assert type(loaded) is Point and torch.equal(loaded.x, point.x) and loaded.label == "hi"
    inner = TensorDict.load_memmap(tmp_path / "top" / "_tensordict")
    assert torch.equal(inner["x"], point.x) and inner["label"] == "hi"
    td = TensorDict(p=point, batch_size=[2]).memmap(tmp_path / "nested")
    assert type(td["p"]) is Point
    again = TensorDict.load_memmap(tmp_path / "nested")
    assert type(again["p"]) is Point and torch.equal(again["p"].x, point.x)


def test_core_save_and_load_dispatch_to_memmap(tmp_path):
    td = _sample()
    assert td.save(tmp_path).is_memmap()
    _assert_same_leaves(TensorDict.load(tmp_path), td)
    # the seeds' checkpoint example passes num_threads to load_memmap too
    _assert_same_leaves(TensorDict.load_memmap(tmp_path, num_threads=16), td)


def test_from_schema_memmap(tmp_path):
    schema = {"obs": ([64, 64, 3], torch.uint8), "next": {"reward": ([], torch.float32)}}
    td = TensorDict.from_schema(schema, batch_size=[1000], storage="memmap", prefix=tmp_path)
    assert isinstance(td["obs"], MemoryMappedTensor) and td["obs"].shape == (1000, 64, 64, 3)
    td["obs"][5] = 1
    loaded = TensorDict.load_memmap(tmp_path)
    assert loaded["obs"][5].sum() == 64 * 64 * 3 and loaded["next", "reward"].sum() == 0


def test_state_dict_of_a_memmapped_tensordict_holds_plain_tensors_sharing_memory():
    """As upstream: ``state_dict()`` detaches memory-mapped leaves into plain tensors (over
    the same memory), so torch.save takes it even for anonymous memmaps (a TorchRL
    replay buffer's LazyMemmapStorage); ``keep_vars=True`` keeps the leaves as they are."""
    import io

    mapped = TensorDict(a=torch.arange(3.0), n={"b": torch.ones(3)}, batch_size=[3]).memmap_like()
    state = mapped.state_dict()
    assert [type(v) for v in state.values()] == [torch.Tensor, torch.Tensor]
    assert state["a"].data_ptr() == mapped["a"].data_ptr()
    assert type(mapped.state_dict(keep_vars=True)["n.b"]) is MemoryMappedTensor
    buffer = io.BytesIO()
    torch.save(state, buffer)
    mapped["a"].add_(1)  # the state shares the mapped memory
    buffer.seek(0)
    assert torch.load(buffer)["a"].tolist() == [0.0, 0.0, 0.0]
    assert state["a"].tolist() == [1.0, 1.0, 1.0]


def test_memmap_in_place_of_a_consolidated_collection_ends_the_consolidation(tmp_path):
    # memmap_ unlocks the locked collection for a moment to swap its leaves: pickling
    # afterwards must not reuse the consolidated description kept while it was locked
    td = TensorDict(a=torch.arange(3.0), b={"c": torch.ones(3)}, batch_size=[3]).consolidate()
    pickle.dumps(td)
    td.memmap_(tmp_path)
    assert td.is_locked and not td.is_consolidated()
    out = pickle.loads(pickle.dumps(td))
    assert isinstance(out["a"], MemoryMappedTensor)
    assert torch.equal(out["a"], torch.arange(3.0)) and torch.equal(out["b", "c"], torch.ones(3))


@pytest.mark.parametrize("how", ["memmap", "memmap_"])
def test_a_memmapped_sub_tensordict_unlocks_alone(tmp_path, how):
    """As upstream's, memmap locks each sub-TensorDict on its own: one can be unlocked
    alone, its parent staying locked; a new entry then lives in memory only, as after
    unlocking the whole."""
    source = _sample()
    td = source.memmap(tmp_path) if how == "memmap" else source.memmap_(tmp_path)
    nested = td["next"]
    assert td.is_locked and nested.is_locked and nested["deep"].is_locked
    assert nested.unlock_() is nested
    assert td.is_locked and not nested.is_locked and not td["next", "deep"].is_locked
    assert td.is_memmap() and not nested.is_memmap()
    nested["new"] = torch.zeros(3)
    with pytest.raises(RuntimeError, match="locked"):
        td["other"] = torch.zeros(3)
    assert "new" in td["next"].keys()
    loaded = TensorDict.load_memmap(tmp_path)
    assert ("next", "new") not in loaded.keys(True) and ("next", "reward") in loaded.keys(True)
    td.unlock_()
    assert not td.is_locked and not td["next"].is_locked
    td.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        td["next"].unlock_()
