"""The pure parts of tensordict-distributed: structures, fingerprints, wire helpers, and
the collectives on a one-rank gloo group (no second process needed)."""

from __future__ import annotations

import datetime
import subprocess
import sys

import pytest
import torch
import torch.distributed as dist

from tensordict import TensorDict
from tensordict.distributed import Structure
from tensordict.distributed._wire import (
    Incoming,
    byte_view,
    decode_objects,
    encode_objects,
    outgoing,
    tags,
)


def sample() -> TensorDict:
    return TensorDict({
        "z": torch.zeros(2, 3),
        "n": {"b": torch.ones(2, dtype=torch.int64), "deep": {"c": torch.zeros(2, 1, 4)}},
        "s": "text",
    }, batch_size=[2], names=["time"])


def test_structure_lists_leaves_sorted_with_shapes_and_dtypes():
    s = Structure.of(sample())
    assert s.leaves == [
        (("n", "b"), (2,), "int64"),
        (("n", "deep", "c"), (2, 1, 4), "float32"),
        (("z",), (2, 3), "float32"),
    ]
    assert s.non_tensor == [("s",)]
    assert s.batch_size == (2,) and s.names == ["time"] and s.device is None


def test_structure_zero_dim_and_empty():
    s = Structure.of(TensorDict({"a": torch.tensor(1.5), "e": {}}))
    assert s.leaves == [(("a",), (), "float32")] and s.batch_size == ()
    assert Structure.of(TensorDict()).leaves == []


def test_fingerprint_ignores_values_and_key_order():
    a = TensorDict({"x": torch.zeros(3), "y": torch.ones(3, dtype=torch.bool)}, [3])
    b = TensorDict({"y": torch.zeros(3, dtype=torch.bool), "x": torch.randn(3)}, [3])
    assert Structure.of(a).fingerprint() == Structure.of(b).fingerprint()
    assert 0 <= Structure.of(a).fingerprint() < 2**63


@pytest.mark.parametrize("change", ["shape", "dtype", "key", "nested", "non_tensor"])
def test_fingerprint_changes_with_structure(change):
    td = sample()
    base = Structure.of(td).fingerprint()
    if change == "shape":
        td["z"] = torch.zeros(2, 4)
    elif change == "dtype":
        td["z"] = torch.zeros(2, 3, dtype=torch.float64)
    elif change == "key":
        td["w"] = torch.zeros(2)
    elif change == "nested":
        td["n", "deep", "d"] = torch.zeros(2)
    else:
        td["s2"] = "more"
    assert Structure.of(td).fingerprint() != base


def test_structure_bytes_round_trip_is_json():
    s = Structure.of(sample())
    data = s.to_bytes()
    assert data.startswith(b"{")  # JSON, never a pickle
    assert Structure.from_bytes(data) == s


def test_structure_empty_builds_a_matching_tensordict():
    s = Structure.of(sample())
    twin = s.empty()
    assert Structure.of(twin) == Structure(s.batch_size, s.leaves, s.non_tensor, None, s.names)
    assert twin["n", "deep", "c"].shape == (2, 1, 4) and twin["n", "b"].dtype == torch.int64
    assert s.empty("cpu").device == torch.device("cpu")


def test_structure_stacked_adds_a_leading_dim():
    stacked = Structure.of(sample()).stacked(3)
    assert stacked.batch_size == (3, 2) and stacked.names == [None, "time"]
    assert stacked.leaves[0] == (("n", "b"), (3, 2), "int64")
    assert stacked.empty().batch_size == (3, 2)


def test_structure_differences_name_keys_shapes_and_dtypes():
    mine = Structure.of(sample())
    other = sample()
    other["z"] = torch.zeros(2, 5, dtype=torch.float16)
    del other["n", "b"]
    other["new"] = torch.zeros(2)
    del other["s"]
    lines = mine.differences(Structure.of(other))
    assert lines == [
        "key ('n', 'b') only on the receiver",
        "key 'new' only on the sender",
        "key 'z': receiver float32[2, 3], sender float16[2, 5]",
        "non-tensor key 's' only on the receiver",
    ]
    assert mine.differences(mine) == []


def test_structure_differences_are_capped():
    many = TensorDict({f"k{i}": torch.zeros(1) for i in range(20)}, [1])
    lines = Structure.of(many).differences(Structure.of(TensorDict()), limit=3)
    assert len(lines) == 4 and lines[-1] == "... and 17 more"


def test_unknown_dtype_in_structure_is_refused():
    s = Structure((), [(("a",), (1,), "not_a_dtype")])
    with pytest.raises(ValueError, match="unknown dtype 'not_a_dtype'"):
        s.empty()


def test_tags_consecutive_and_pseudo_random():
    assert tags(5, 3, False) == [5, 6, 7]
    drawn = tags(5, 50, True)
    assert drawn == tags(5, 50, True) and len(set(drawn)) == 50 and drawn != list(range(5, 55))
    assert tags(6, 50, True) != drawn


def test_byte_views_cover_every_dtype():
    for dtype in (torch.bool, torch.float16, torch.bfloat16, torch.int64, torch.complex64):
        x = torch.ones(2, 3, dtype=dtype)
        assert byte_view(x).numel() == x.numel() * x.element_size()
    assert byte_view(torch.tensor(3.0)).numel() == 4


def test_outgoing_stages_non_contiguous_tensors():
    x = torch.arange(6.0).view(2, 3).T
    wire = outgoing(x, torch.device("cpu"))
    assert torch.equal(wire.view(torch.float32).view(3, 2), x)
    with pytest.raises(ValueError, match="meta"):
        outgoing(torch.empty(2, device="meta"), torch.device("cpu"))


def test_incoming_writes_through_a_staging_buffer():
    base = torch.zeros(2, 3)
    target = base.T
    landing = Incoming(target, torch.device("cpu"))
    assert landing.buffer is not target
    landing.bytes.copy_(byte_view(torch.arange(6.0).view(3, 2)))
    landing.finish()
    assert torch.equal(base.T, torch.arange(6.0).view(3, 2))
    contiguous = torch.zeros(3)
    assert Incoming(contiguous, torch.device("cpu")).buffer is contiguous
    loaded = Incoming(target, torch.device("cpu"), load=True)
    assert torch.equal(loaded.buffer, target)


def test_object_payload_round_trip():
    payload, pickled = encode_objects(["text", {"k": 1}])
    assert not pickled and decode_objects(payload) == ["text", {"k": 1}]


def test_plugin_entry_imports_nothing_heavy():
    code = (
        "import sys, tensordict.distributed._plugin as p; "
        "assert 'tensordict.distributed._p2p' not in sys.modules; "
        "from tensordict import TensorDict; TensorDict().send; "
        "assert 'tensordict.distributed._p2p' in sys.modules; print('ok')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_methods_appear_on_tensordict():
    td = TensorDict()
    for name in ("send", "recv", "isend", "irecv", "init_remote", "broadcast", "all_reduce",
                 "reduce", "all_gather", "gather_and_stack", "scatter"):
        assert callable(getattr(td, name))
    assert TensorDict.from_remote_init.__self__ is TensorDict


def test_send_without_a_process_group_says_so():
    with pytest.raises((RuntimeError, ValueError), match="process group"):
        TensorDict(a=torch.zeros(1)).send(1)


@pytest.fixture(scope="module")
def one_rank_group(tmp_path_factory):
    store = tmp_path_factory.mktemp("store") / "file"
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=0, world_size=1,
                            timeout=datetime.timedelta(seconds=10))
    yield
    dist.destroy_process_group()


def test_collectives_on_one_rank(one_rank_group):
    td = sample()
    td["t"] = torch.arange(6.0).view(3, 2).T  # a non-contiguous leaf goes through staging
    expected = td.clone()
    td.all_reduce()
    assert torch.equal(td["t"], expected["t"]) and torch.equal(td["z"], expected["z"])
    for item in td.all_reduce(async_op=True, bucket_bytes=1 << 20):
        item.wait()
    assert torch.equal(td["n", "deep", "c"], expected["n", "deep", "c"])
    assert td.broadcast(0) is td
    (gathered,) = td.all_gather()
    assert torch.equal(gathered["t"], expected["t"]) and gathered["s"] == "text"
    stacked = td.gather_and_stack(0)
    assert stacked.batch_size == (1, 2) and torch.equal(stacked["z"][0], expected["z"])
    assert stacked["s"] == "text"
    part = TensorDict().scatter(0, [td])
    assert torch.equal(part["n", "b"], expected["n", "b"]) and part["s"] == "text"
    with pytest.raises(ValueError, match="needs 1 TensorDicts"):
        td.scatter(0, [td, td])


def test_files_id_identifies_mapped_file_regions(tmp_path):
    pytest.importorskip("tensordict.memmap")
    from tensordict.distributed._p2p import _files_id
    from tensordict.distributed._structure import tensor_leaves

    mm = sample().memmap(tmp_path / "a")
    again = TensorDict.load_memmap(tmp_path / "a")
    other = sample().memmap(tmp_path / "b")
    ids = [_files_id(tensor_leaves(td)) for td in (mm, again, other, mm[1:], sample())]
    assert ids[0] == ids[1] != 0
    assert ids[2] not in (0, ids[0]) and ids[3] not in (0, ids[0])
    assert ids[4] == 0 and _files_id([]) == 0


def test_lazy_stacks_reduce_in_place_and_gather_dense(one_rank_group):
    from tensordict import LazyStackedTensorDict

    a = TensorDict(x=torch.ones(3), n={"y": torch.zeros(3, 2)}, batch_size=[3])
    b = TensorDict(x=torch.full((3,), 2.0), n={"y": torch.ones(3, 2)}, batch_size=[3])
    stack = LazyStackedTensorDict.lazy_stack([a, b])
    stack.all_reduce(op=dist.ReduceOp.MAX)  # writes reach the stacked TensorDicts
    assert torch.equal(a["x"], torch.ones(3)) and torch.equal(b["n", "y"], torch.ones(3, 2))
    (gathered,) = stack.all_gather()
    assert type(gathered) is TensorDict and gathered.batch_size == (2, 3)
    assert torch.equal(gathered["x"], torch.stack([a["x"], b["x"]]))
    assert stack.gather_and_stack(0).batch_size == (1, 2, 3)


def test_tensorclass_instances_come_back_as_their_class(one_rank_group):
    pytest.importorskip("tensordict.tensorclasses")
    from tensordict import tensorclass

    @tensorclass
    class Sample:
        x: torch.Tensor
        label: str

    sample = Sample(x=torch.arange(2.0), label="cat", batch_size=[2])
    sample.all_reduce()
    (gathered,) = sample.all_gather()
    assert type(gathered) is Sample and gathered.label == "cat"
    assert torch.equal(gathered.x, torch.arange(2.0))
    assert type(sample.gather_and_stack(0)) is Sample
    part = TensorDict().scatter(0, [sample])  # the receiving side decides the class
    assert type(part) is TensorDict and torch.equal(part["x"], torch.arange(2.0))


def test_zero_dim_tensordicts_in_collectives(one_rank_group):
    td = TensorDict({"a": torch.tensor(3.0), "n": {"b": torch.tensor(True)}, "s": "zero"})
    assert td.gather_and_stack(0)["a"].tolist() == [3.0]
    (gathered,) = td.all_gather()
    assert gathered["n", "b"].item() is True and gathered["s"] == "zero"
    part = TensorDict().scatter(0, [td])
    assert part.batch_size == () and part["a"].item() == 3.0
    td.all_reduce(op=dist.ReduceOp.PRODUCT)
    assert td["a"].item() == 3.0
