"""Devices, dtypes, memory and autograd state of TensorDicts."""

import pytest
import torch

import tensordict
from tensordict import TensorDict


def make():
    return TensorDict(
        a=torch.rand(2, 3),
        i=torch.arange(2),
        nested=TensorDict(c=torch.rand(2, 4, 2), batch_size=[2, 4]),
        s="text",
        batch_size=[2],
        names=["x"],
    )


LEAVES = ["a", "i", ("nested", "c")]


@pytest.mark.parametrize("name,dtype", [
    ("float", torch.float32), ("double", torch.float64), ("half", torch.float16),
    ("bfloat16", torch.bfloat16), ("int", torch.int32), ("bool", torch.bool),
    ("float64", torch.float64), ("int8", torch.int8), ("uint8", torch.uint8),
    ("int64", torch.int64), ("complex64", torch.complex64),
])
def test_dtype_casts(name, dtype):
    td = make()
    out = getattr(td, name)()
    for key in LEAVES:
        torch.testing.assert_close(out[key], td[key].to(dtype))
    assert out["s"] == "text" and out.names == ["x"]
    assert out.dtype == dtype


def test_type_and_cast_filters():
    td = make()
    out = td.double(cast_filter=tensordict.is_floating)
    assert out["a"].dtype == torch.float64 and out["i"].dtype == torch.int64
    out = td.float(cast_filter=tensordict.is_integer)
    assert out["a"].dtype == torch.float32 and out["i"].dtype == torch.float32
    assert td.type(torch.float16)["nested", "c"].dtype == torch.float16
    assert tensordict.is_bool(torch.zeros(1, dtype=torch.bool))
    assert tensordict.is_inexact(torch.zeros(1, dtype=torch.complex64))
    assert not tensordict.is_integer(torch.zeros(1, dtype=torch.bool))
    assert td.dtype is None and not td.is_floating_point()
    assert td.exclude("i").is_floating_point()


def test_to_variants():
    td = make()
    out = td.to(torch.float64)
    for key in LEAVES:
        assert out[key].dtype == torch.float64
    assert td.to("cpu").device == torch.device("cpu")
    assert td.to("cpu", non_blocking=True).device == torch.device("cpu")
    assert td.to(device="cpu", dtype=torch.float16)["a"].dtype == torch.float16
    assert td.to(torch.zeros((), dtype=torch.int32))["a"].dtype == torch.int32
    assert td.to(TensorDict(device="cpu")).device == torch.device("cpu")
    assert td.to(batch_size=[]).batch_size == torch.Size([])
    assert td.cpu().is_cpu and not td.is_cpu and not td.is_cuda and not td.is_meta
    meta = td.to("meta")
    assert meta.is_meta and meta["a"].is_meta


def test_to_rejects_copy():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(RuntimeError, match="copy"):
        td.to("cpu", copy=True)


def test_to_memory_format_applies_to_4d_and_5d_leaves_only():
    td = TensorDict(img=torch.rand(2, 3, 4, 5), flat=torch.rand(2, 7), batch_size=[2])
    out = td.to(memory_format=torch.channels_last)
    assert out is not td
    assert out["img"].is_contiguous(memory_format=torch.channels_last)
    assert out["flat"].stride() == (7, 1)
    volumes = TensorDict(vol=torch.rand(2, 1, 2, 3, 4), flat=torch.rand(2, 7), batch_size=[2])
    out3d = volumes.to(memory_format=torch.channels_last_3d)
    assert out3d["vol"].is_contiguous(memory_format=torch.channels_last_3d)
    tensordict.assert_close(out, td)
    cast = td.to("cpu", torch.float64, memory_format=torch.channels_last)
    assert cast["img"].dtype == torch.float64 and cast.device == torch.device("cpu")
    with pytest.raises(RuntimeError, match="rank 5"):  # as torch: a 4-D leaf cannot take it
        td.to(memory_format=torch.channels_last_3d)


def test_to_other_takes_its_device_and_shared_dtype():
    td = make()
    half = TensorDict(x=torch.zeros(1, dtype=torch.float16), device="meta")
    out = td.to(other=half)
    assert out.device == torch.device("meta") and out["a"].dtype == torch.float16
    mixed = TensorDict(x=torch.zeros(1, dtype=torch.float16), y=torch.zeros(1))
    assert td.to(other=mixed)["a"].dtype == torch.float32  # no shared dtype: kept


def test_to_inplace_keeps_every_node():
    td = make()
    nested = td["nested"]
    assert td.to("meta", inplace=True) is td
    assert td["nested"] is nested and td.device == nested.device == torch.device("meta")
    assert all(td[key].is_meta for key in LEAVES) and td["s"] == "text"
    stack = TensorDict.lazy_stack([make(), make()])
    parts = list(stack.tensordicts)
    assert stack.to(torch.float64, inplace=True) is stack
    assert stack.tensordicts == parts and parts[1]["a"].dtype == torch.float64


def test_to_inplace_of_a_locked_node_changes_nothing():
    td = make()
    td["nested"].lock_()
    before = td["a"]
    with pytest.raises(RuntimeError, match="locked"):
        td.to("meta", inplace=True)
    assert td["a"] is before and td.device is None and not td["nested", "c"].is_meta


def test_to_arguments_errors_and_accepted_options():
    td = make()
    with pytest.raises(TypeError, match="two devices"):
        td.to("cpu", "meta")
    with pytest.raises(TypeError, match="unexpected arguments.*bogus"):
        td.to("cpu", bogus=True)
    # pinning applies to a move off the CPU only; num_threads alone is accepted
    assert td.to("meta", num_threads=2).device == torch.device("meta")
    assert td.to(non_blocking_pin=True) is td
    assert td.to("meta", non_blocking=None)["a"].is_meta


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_round_trip():
    td = make()
    on_gpu = td.cuda()
    assert on_gpu.is_cuda and on_gpu["nested", "c"].is_cuda
    back = on_gpu.to("cpu", non_blocking=True)
    torch.cuda.synchronize()
    tensordict.assert_close(back, td)
    assert td.pin_memory()["a"].is_pinned()


def test_clone_copy_detach():
    td = make()
    deep = td.clone()
    shallow = td.clone(recurse=False)
    assert deep["a"].data_ptr() != td["a"].data_ptr()
    assert shallow["a"] is td["a"] and shallow is not td
    assert deep["s"] == "text" and deep.names == ["x"]
    x = torch.ones(2, requires_grad=True)
    graph = TensorDict(y=x * 2, batch_size=[2])
    assert not graph.detach()["y"].requires_grad
    assert graph.detach_() is graph and not graph["y"].requires_grad


def test_contiguous():
    td = TensorDict(a=torch.zeros(3), batch_size=[3]).expand(2, 3)
    assert not td.is_contiguous()
    out = td.contiguous()
    assert out.is_contiguous() and out["a"].stride() == (3, 1)


def test_share_memory():
    td = make()
    assert not td.is_shared()
    td.share_memory_()
    assert td.is_shared() and td.is_locked
    assert all(td[key].is_shared() for key in LEAVES)


def test_bytes_param_count_data_ptr():
    x = torch.zeros(3)
    td = TensorDict(a=x, b=x, c=torch.zeros(2, dtype=torch.int64))
    assert td.bytes() == 12 + 12 + 16
    assert td.bytes(count_duplicates=False) == 12 + 16
    assert td.param_count() == 8 and td.param_count(count_duplicates=False) == 5
    pointers = td.data_ptr()
    assert pointers["a"].item() == x.data_ptr() and pointers.batch_size == torch.Size([])


def test_autograd_state():
    td = make().exclude("i")
    assert not td.requires_grad
    td.requires_grad_()
    assert td.requires_grad and td["nested", "c"].requires_grad
    (td["a"].sum() + td["nested", "c"].sum() * 2).backward()
    grads = td.grad
    assert (grads["a"] == 1).all() and (grads["nested", "c"] == 2).all()
    assert not td.data["a"].requires_grad
    assert td.data["a"].data_ptr() == td["a"].data_ptr()
    td.zero_grad(set_to_none=False)
    assert (td["a"].grad == 0).all()
    td.zero_grad()
    assert td["a"].grad is None and "a" not in td.grad.keys()


def test_seed_apply_examples():
    td = TensorDict({"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, 2)}}, batch_size=[3])
    td.apply_(lambda x: x.uniform_())
    assert (td["a"] > 0).any() and (td["b", "c"] < 1).all()
    filtered = td.apply(lambda x: x if x.shape[-1] == 4 else None)
    assert list(filtered.keys(True)) == ["a"]
    td += 1
    assert (td["a"] >= 1).all()
    assert td.view(3, 1).batch_size == torch.Size([3, 1])
    assert td.unsqueeze(-1).batch_size == torch.Size([3, 1])
    assert td.reshape(-1).batch_size == torch.Size([3])


def test_to_tensordict_copies_into_plain_unlocked_tensordicts():
    from tensordict import LazyStackedTensorDict, NonTensorData

    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)},
                     "s": NonTensorData("x", batch_size=[2]), "z": None}, [2], names=["t"])
    td.lock_()
    out = td.to_tensordict()
    assert type(out) is TensorDict and not out.is_locked and out.names == ["t"]
    assert out["a"].data_ptr() != td["a"].data_ptr() and (out == td).all()
    assert set(out.keys()) == {"a", "n", "s", "z"} and out["s"] == "x"
    out["a"] += 1
    assert td["a"].sum() == 0  # a copy
    stack = LazyStackedTensorDict.lazy_stack([td[0], td[1]])
    dense = TensorDict({"stack": stack}, [2]).to_tensordict()
    assert type(dense["stack"]) is TensorDict and dense["stack", "n", "b"].shape == (2,)
    assert td.to_tensordict(retain_none=False)["z"] is None
