"""CUDA behaviour of core TensorDicts: moves, non_blocking, pinning, consolidation,
device casting on write, ops staying on the device. Skipped without a GPU."""
import io

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

CUDA = torch.device("cuda", 0)
CPU = torch.device("cpu")


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "b": torch.arange(2),
         "n": {"c": torch.ones(2, 4, dtype=torch.float64),
               "d": {"e": torch.tensor([True, False])}}},
        batch_size=[2], names=["x"],
    )


def _leaves(td):
    return list(td.values(include_nested=True, leaves_only=True))


def _assert_on(td, device):
    leaves = _leaves(td)
    assert leaves
    for leaf in leaves:
        assert leaf.device == device, leaf.device


def _assert_values(td, ref):
    assert set(td.keys(True, True)) == set(ref.keys(True, True))
    for key in ref.keys(True, True):
        got, want = td.get(key), ref.get(key)
        assert got.dtype == want.dtype, key
        assert torch.equal(got.cpu(), want.cpu()), key


# -- moves ----------------------------------------------------------------------------
@pytest.mark.parametrize("move", [
    lambda td: td.to("cuda"), lambda td: td.cuda(), lambda td: td.cuda(0),
    lambda td: td.to(CUDA), lambda td: td.to(device="cuda"),
])
def test_moves_to_cuda(move):
    td = _td()
    out = move(td)
    assert out.device == CUDA
    assert out["n"].device == CUDA and out["n", "d"].device == CUDA
    _assert_on(out, CUDA)
    assert out.batch_size == torch.Size([2]) and out.names == ["x"]
    _assert_values(out, td)
    _assert_on(td, CPU)
    back = out.cpu()
    assert back.device == CPU
    _assert_on(back, CPU)
    _assert_values(back, td)


def _gpu_computed(n=8, size=4_000_000):
    return TensorDict({f"k{i}": torch.full((size,), float(i), device="cuda") * 2 for i in range(n)},
                      device="cuda")


@pytest.mark.parametrize("kwargs", [{}, {"non_blocking": None}, {"non_blocking": False}])
def test_gpu_to_cpu_readable_at_once(kwargs):
    for _ in range(3):
        out = _gpu_computed().to("cpu", **kwargs)
        assert out.device == CPU
        for i in range(8):
            leaf = out[f"k{i}"]
            assert leaf.device == CPU
            assert torch.equal(leaf, torch.full_like(leaf, 2.0 * i)), i


def test_gpu_to_cpu_non_blocking_then_synchronize():
    out = _gpu_computed().to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    for i in range(8):
        assert torch.equal(out[f"k{i}"], torch.full((4_000_000,), 2.0 * i)), i


def test_nested_gpu_to_cpu_default():
    src = TensorDict({"n": {"m": torch.full((4_000_000,), 3.0, device="cuda") + 1}}, device="cuda")
    out = src.to("cpu")
    assert torch.equal(out["n", "m"], torch.full((4_000_000,), 4.0))


@pytest.mark.parametrize("kwargs", [{}, {"non_blocking": True}, {"non_blocking": False}])
def test_cpu_to_cuda_values(kwargs):
    src = TensorDict({f"k{i}": torch.full((1_000_000,), float(i)) for i in range(4)}, [])
    out = src.to("cuda", **kwargs)
    _assert_on(out, CUDA)
    # a CUDA kernel reading the copies runs after them on the same stream
    sums = torch.stack([out[f"k{i}"].sum() for i in range(4)]).cpu()
    torch.testing.assert_close(sums, torch.tensor([i * 1_000_000.0 for i in range(4)]))


def test_to_memory_format():
    td = TensorDict({"img": torch.randn(2, 3, 4, 5), "v": torch.randn(2, 3)}, [2])
    out = td.to(memory_format=torch.channels_last)
    assert out["img"].is_contiguous(memory_format=torch.channels_last)
    assert not out["img"].is_contiguous()
    assert out["v"].stride() == td["v"].stride()
    torch.testing.assert_close(out["img"], td["img"])
    g = td.to("cuda", memory_format=torch.channels_last)
    _assert_on(g, CUDA)
    assert g["img"].is_contiguous(memory_format=torch.channels_last)
    torch.testing.assert_close(g["img"].cpu(), td["img"])
    torch.testing.assert_close(g["v"].cpu(), td["v"])


def test_to_other_td():
    other = TensorDict({"a": torch.zeros(2, dtype=torch.float16)}, [2], device="cuda")
    td = TensorDict({"a": torch.arange(2.0), "n": {"b": torch.ones(2, dtype=torch.float64)}}, [2])
    out = td.to(other=other)
    assert out.device == CUDA
    _assert_on(out, CUDA)
    assert out["a"].dtype == torch.float16 and out["n", "b"].dtype == torch.float16
    torch.testing.assert_close(out["a"].cpu(), torch.arange(2.0, dtype=torch.float16))
    mixed = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2, dtype=torch.int64)},
                       [2], device="cuda")
    out2 = td.to(other=mixed)
    assert out2.device == CUDA and out2["a"].dtype == torch.float32
    assert out2["n", "b"].dtype == torch.float64


def test_to_inplace():
    td = _td()
    nested, deep = td["n"], td["n", "d"]
    ref = td.clone()
    out = td.to("cuda", inplace=True)
    assert out is td and td["n"] is nested and td["n", "d"] is deep
    assert td.device == CUDA
    _assert_on(td, CUDA)
    _assert_values(td, ref)
    locked = _td().lock_()
    with pytest.raises(RuntimeError):
        locked.to("cuda", inplace=True)
    _assert_on(locked, CPU)


def test_to_non_blocking_pin():
    td = _td()
    out = td.to("cuda", non_blocking_pin=True, num_threads=2)
    assert out.device == CUDA
    _assert_on(out, CUDA)
    _assert_values(out, td)


def test_to_attrs_of_mixed_source():
    src = TensorDict({"a": torch.zeros(3, device="cuda", dtype=torch.float16),
                      "b": torch.zeros(3, dtype=torch.int32),
                      "n": {"c": torch.zeros(3, device="cuda", dtype=torch.float64)}}, [3])
    assert src.device is None
    td = TensorDict({"a": torch.arange(3.0), "b": torch.arange(3), "n": {"c": torch.arange(3.0)}},
                    [3])
    out = td.to(src.attrs())
    assert out["a"].device == CUDA and out["a"].dtype == torch.float16
    assert out["b"].device == CPU and out["b"].dtype == torch.int32
    assert out["n", "c"].device == CUDA and out["n", "c"].dtype == torch.float64
    torch.testing.assert_close(out["n", "c"].cpu(), torch.arange(3.0, dtype=torch.float64))
    assert torch.equal(out["b"], torch.arange(3, dtype=torch.int32))


# -- pinning --------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs", [{}, {"num_threads": 4}])
def test_pin_memory(kwargs):
    td = _td()
    out = td.pin_memory(**kwargs)
    assert out is not td
    for leaf in _leaves(out):
        assert leaf.is_pinned()
    for leaf in _leaves(td):
        assert not leaf.is_pinned()
    _assert_values(out, td)
    g = out.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    _assert_on(g, CUDA)
    _assert_values(g, td)


def test_pin_memory_inplace():
    td = _td()
    nested, deep = td["n"], td["n", "d"]
    ref = td.clone()
    assert td.pin_memory(inplace=True) is td
    assert td["n"] is nested and td["n", "d"] is deep
    for leaf in _leaves(td):
        assert leaf.is_pinned()
    _assert_values(td, ref)


def test_pin_memory_shared_tensor_pinned_once():
    t = torch.arange(4.0)
    out = TensorDict({"a": t, "b": t}, [4]).pin_memory()
    assert out["a"].is_pinned() and out["a"].data_ptr() == out["b"].data_ptr()


def test_pin_memory_lazy_stack():
    tds = [TensorDict({"a": torch.full((3,), float(i))}, [3]) for i in range(2)]
    lazy = LazyStackedTensorDict.lazy_stack(tds, 0)
    out = lazy.pin_memory()
    for td in out.tensordicts:
        assert td["a"].is_pinned()
    g = out.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    assert g.device == CUDA
    assert torch.equal(g["a"].cpu(), torch.tensor([[0.0] * 3, [1.0] * 3]))


# -- consolidation --------------------------------------------------------------------
def _storages(td):
    return {leaf.untyped_storage().data_ptr() for leaf in _leaves(td)}


@pytest.mark.parametrize("non_blocking", [False, True])
def test_consolidated_to_cuda(non_blocking):
    td = _td()
    g = td.consolidate().to("cuda", non_blocking=non_blocking)
    if non_blocking:
        torch.cuda.synchronize()
    assert g.is_consolidated() and g.device == CUDA
    _assert_on(g, CUDA)
    assert len(_storages(g)) == 1
    _assert_values(g, td)
    assert g.names == ["x"]


def test_consolidate_on_cuda_then_cpu():
    td = _td()
    g = td.consolidate(device="cuda")
    _assert_on(g, CUDA)
    assert len(_storages(g)) == 1
    back = g.to("cpu")
    assert back.device == CPU
    _assert_on(back, CPU)
    _assert_values(back, td)


# -- device casting on write ----------------------------------------------------------
def test_write_casts_to_device():
    td = TensorDict({"n": {}}, [2], device="cuda")
    td["x"] = torch.ones(2)
    td.set("y", torch.arange(2), non_blocking=True)
    td["n", "z"] = torch.full((2, 3), 5.0)
    td.update(TensorDict({"u": torch.zeros(2), "n": {"w": torch.ones(2)}}, [2]))
    torch.cuda.synchronize()
    assert td["n"].device == CUDA
    _assert_on(td, CUDA)
    assert torch.equal(td["y"].cpu(), torch.arange(2))
    assert torch.equal(td["n", "z"].cpu(), torch.full((2, 3), 5.0))
    assert torch.equal(td["n", "w"].cpu(), torch.ones(2))


@pytest.mark.parametrize("kwargs", [{}, {"non_blocking": True}])
def test_constructor_device(kwargs):
    td = TensorDict({"a": torch.arange(2.0), "n": {"b": torch.ones(2, 2)}}, [2],
                    device="cuda", **kwargs)
    torch.cuda.synchronize()
    assert td.device == CUDA and td["n"].device == CUDA
    _assert_on(td, CUDA)
    assert torch.equal(td["a"].cpu(), torch.arange(2.0))
    fd = TensorDict.from_dict({"a": torch.arange(2.0), "n": {"b": torch.ones(2)}}, device="cuda")
    assert fd.device == CUDA
    _assert_on(fd, CUDA)
    assert torch.equal(fd["n", "b"].cpu(), torch.ones(2))


def test_mixed_devices():
    td = TensorDict({"a": torch.ones(2), "b": torch.ones(2, device="cuda")}, [2])
    assert td.device is None
    g = td.to("cuda")
    assert g.device == CUDA
    _assert_on(g, CUDA)
    c = td.cpu()
    assert c.device == CPU
    _assert_on(c, CPU)
    assert torch.equal(c["b"], torch.ones(2))


# -- ops stay on cuda -----------------------------------------------------------------
def _gtd():
    return TensorDict({"a": torch.arange(12.0).reshape(4, 3), "n": {"b": torch.arange(4)}},
                      [4], device="cuda")


def _check(out, ref_cpu):
    assert out.device == CUDA
    _assert_on(out, CUDA)
    _assert_values(out, ref_cpu)


def test_indexing_on_cuda():
    td, ref = _gtd(), _gtd().cpu()
    mask = torch.tensor([True, False, True, True])
    _check(td[mask.cuda()], ref[mask])
    idx = torch.tensor([3, 0, 0])
    _check(td[idx.cuda()], ref[idx])
    _check(td[1:3], ref[1:3])
    _check(td[0], ref[0])


def test_stack_cat_on_cuda():
    td, ref = _gtd(), _gtd().cpu()
    _check(torch.stack([td, td + 1], 0), torch.stack([ref, ref + 1], 0))
    _check(torch.cat([td, td * 2], 0), torch.cat([ref, ref * 2], 0))


def test_where_masked_fill_on_cuda():
    td, ref = _gtd(), _gtd().cpu()
    cond = torch.tensor([True, False, False, True])
    other = td * 0 - 1
    ref_other = ref * 0 - 1
    _check(td.where(cond.cuda(), other), ref.where(cond, ref_other))
    _check(td.masked_fill(cond.cuda(), 7), ref.masked_fill(cond, 7))


def test_math_and_reductions_on_cuda():
    td, ref = _gtd(), _gtd().cpu()
    _check(td.apply(lambda x: x * 3), ref.apply(lambda x: x * 3))
    _check(td + 1, ref + 1)
    s = td.sum()
    assert s.device == CUDA and s["a"].device == CUDA
    torch.testing.assert_close(s["a"].cpu(), ref["a"].sum())
    torch.testing.assert_close(s["n", "b"].cpu(), ref["n", "b"].sum())
    m = td.float().mean(dim=0)
    torch.testing.assert_close(m["a"].cpu(), ref["a"].mean(0))
    assert m["a"].device == CUDA


def test_copy_shape_ops_on_cuda():
    td, ref = _gtd(), _gtd().cpu()
    c = td.clone()
    _check(c, ref)
    assert c["a"].data_ptr() != td["a"].data_ptr()
    _check(td.expand(2, 4), ref.expand(2, 4))
    h = td.to(torch.float16)
    assert h.device == CUDA and h["a"].dtype == torch.float16 and h["n", "b"].dtype == torch.float16
    _check(torch.zeros_like(td), torch.zeros_like(ref))
    z = td.clone().zero_()
    _check(z, ref.clone().zero_())
    for got, want in zip(td.unbind(0), ref.unbind(0)):
        _check(got, want)
    for got, want in zip(td.split(2, 0), ref.split(2, 0)):
        _check(got, want)


# -- lazy stacks ----------------------------------------------------------------------
def test_lazy_stacks():
    tds = [TensorDict({"a": torch.full((3,), float(i))}, [3]) for i in range(2)]
    g = LazyStackedTensorDict.lazy_stack([t.cuda() for t in tds], 0)
    assert g.device == CUDA and g["a"].device == CUDA
    c = g.to("cpu")
    assert c.device == CPU and torch.equal(c["a"], torch.stack([t["a"] for t in tds]))
    lc = LazyStackedTensorDict.lazy_stack(tds, 0).cuda()
    assert lc.device == CUDA
    for t in lc.tensordicts:
        assert t["a"].device == CUDA
    assert torch.equal(lc["a"].cpu(), torch.stack([t["a"] for t in tds]))
    mixed = LazyStackedTensorDict.lazy_stack([tds[0], tds[1].cuda()], 0)
    assert mixed.device is None


def test_non_tensor_rides_along():
    td = TensorDict({"a": torch.ones(2), "s": NonTensorData("hello")}, [2])
    g = td.to("cuda")
    assert g["a"].device == CUDA
    assert g.get("s").__class__.__name__ in {"NonTensorData", "NonTensorStack"}
    assert g["s"] == "hello"


def test_record_stream():
    td = _gtd()
    assert td.record_stream(torch.cuda.Stream()) is td


def test_side_stream():
    s = torch.cuda.Stream()
    td = TensorDict({f"k{i}": torch.full((1_000_000,), float(i)) for i in range(4)}, [])
    with torch.cuda.stream(s):
        out = td.to("cuda", non_blocking=True)
    s.synchronize()
    _assert_on(out, CUDA)
    for i in range(4):
        assert torch.equal(out[f"k{i}"].cpu(), td[f"k{i}"])


def test_torch_save_load():
    td = _gtd()
    buf = io.BytesIO()
    torch.save(td, buf)
    buf.seek(0)
    out = torch.load(buf, map_location="cpu", weights_only=False)
    _assert_on(out, CPU)
    _assert_values(out, td.cpu())
    buf.seek(0)
    again = torch.load(buf, weights_only=False)
    _assert_on(again, CUDA)
    _assert_values(again, td)


def test_data_ptr():
    td = _gtd()
    ptrs = td.data_ptr()
    for key in td.keys(True, True):
        assert int(ptrs[key]) == td[key].data_ptr()


def test_predicates():
    td = _gtd()
    assert td.is_cuda and not td.is_cpu
    c = td.cpu()
    assert c.is_cpu and not c.is_cuda
    mixed = TensorDict({"a": torch.ones(2), "b": torch.ones(2, device="cuda")}, [2])
    assert not mixed.is_cuda and not mixed.is_cpu
