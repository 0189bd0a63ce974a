"""Pickle protocol 5: CPU leaves leave the stream as out-of-band PickleBuffers, and the
loaded collection's leaves view the buffers given back (no copy). Read-only buffers
(Ray's object store) give leaves that refuse every in-place write."""

import pickle

import pytest
import torch
import torch.multiprocessing as mp

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict
from tensordict._out_of_band import ReadOnlyTensor


def _collections():
    nested = TensorDict(a=torch.arange(6.0).view(2, 3), n={"b": torch.ones(2, dtype=torch.int64),
                        "h": torch.zeros(2, 2, dtype=torch.bfloat16)},
                        flag=torch.tensor([True, False]), text="hello", batch_size=[2])
    stack = LazyStackedTensorDict(TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(3)),
                                  stack_dim=0)
    return {"nested": nested, "lazy stack": stack, "consolidated": nested.consolidate(),
            "strided": TensorDict(a=torch.arange(12.0).view(3, 4).t())}


def _dumps(obj):
    buffers = []
    return pickle.dumps(obj, protocol=5, buffer_callback=buffers.append), buffers


@pytest.mark.parametrize("kind", list(_collections()))
def test_round_trip_out_of_band(kind):
    td = _collections()[kind]
    data, buffers = _dumps(td)
    out = pickle.loads(data, buffers=buffers)
    assert type(out) is type(td) and out.batch_size == td.batch_size
    assert (out == td).all()
    assert sorted(map(str, out.keys(True, True))) == sorted(map(str, td.keys(True, True)))
    assert len(buffers) == {"nested": 4, "lazy stack": 2, "consolidated": 1, "strided": 1}[kind]
    assert len(data) < 1000  # no leaf bytes in the stream
    if kind == "nested":
        assert out["text"] == "hello"


def test_leaves_view_the_buffers():
    td = _collections()["nested"]
    data, buffers = _dumps(td)
    copies = [bytearray(memoryview(b).cast("B")) for b in buffers]  # as another process has
    out = pickle.loads(data, buffers=copies)
    pointers = {torch.frombuffer(c, dtype=torch.uint8).data_ptr() for c in copies}
    assert {v.data_ptr() for v in out.values(True, True) if isinstance(v, torch.Tensor)} == pointers
    out["a"].add_(1)  # a writable buffer: writes go to it
    assert torch.frombuffer(copies[0], dtype=torch.float32)[0] == 1


def test_consolidated_one_buffer_viewed():
    c = _collections()["consolidated"]
    data, buffers = _dumps(c)
    copy = bytearray(memoryview(buffers[0]).cast("B"))
    out = pickle.loads(data, buffers=[copy])
    start = torch.frombuffer(copy, dtype=torch.uint8).data_ptr()
    assert all(start <= v.data_ptr() < start + len(copy)
               for v in out.values(True, True) if isinstance(v, torch.Tensor))
    assert out.is_consolidated()


def test_tensorclass_and_non_tensor_data():
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Batch:
        obs: torch.Tensor
        note: str

    global _Batch
    _Batch = Batch
    Batch.__qualname__ = "_Batch"
    batch = Batch(obs=torch.randn(3, 2), note="n", batch_size=[3])
    data, buffers = _dumps(batch)
    out = pickle.loads(data, buffers=buffers)
    assert len(buffers) == 1 and torch.equal(out.obs, batch.obs) and out.note == "n"
    nt = NonTensorData("x", batch_size=[])
    assert pickle.loads(*_dumps(nt)[:1], buffers=[]).data == "x"


@pytest.mark.parametrize("protocol", [2, 4, 5])
def test_in_band_unchanged(protocol):
    td = _collections()["nested"]
    out = pickle.loads(pickle.dumps(td, protocol=protocol))
    assert (out == td).all() and out["text"] == "hello"
    assert all(v.__class__ is torch.Tensor for v in out.values(True, True)
               if isinstance(v, torch.Tensor))
    out["a"].add_(1)  # in band: a writable copy
    assert td["a"][0, 0] == 0


def test_not_sent_out_of_band():
    grad = torch.ones(2, requires_grad=True)
    td = TensorDict(g=grad, e=torch.zeros(1).expand(1000), p=torch.zeros(2))
    data, buffers = _dumps(td)
    out = pickle.loads(data, buffers=buffers)
    assert len(buffers) == 1  # only "p": autograd and expanded leaves keep torch's path
    assert out["g"].requires_grad and out["e"].stride() == (0,)


def test_read_only_buffers_refuse_writes():
    td = _collections()["nested"]
    data, buffers = _dumps(td)
    shared = [bytes(memoryview(b).cast("B")) for b in buffers]  # read-only memory
    out = pickle.loads(data, buffers=shared)
    assert type(out["a"]) is ReadOnlyTensor
    writes = [lambda: out["a"].add_(1), lambda: out.zero_(), lambda: out["a"][0].fill_(2),
              lambda: out.set_("a", torch.ones(2, 3)), lambda: out.update_({"a": out["a"] + 1}),
              lambda: out.__setitem__(0, out[0].clone()), lambda: out.apply_(lambda x: x.mul_(2)),
              lambda: torch.add(out["a"], 1, out=out["a"]), lambda: out["a"].copy_(out["a"] * 2)]
    for write in writes:
        with pytest.raises(RuntimeError, match="read-only buffer.*clone"):
            write()
    assert all(bytes(memoryview(b).cast("B")) == s for b, s in zip(buffers, shared))
    assert (out == td).all()
    assert type(out["a"] + 1) is torch.Tensor  # new tensors are plain
    with pytest.raises(ValueError):
        out["a"].numpy()[0, 0] = 3  # a read-only array
    writable = out.clone()
    writable["a"].add_(1)
    assert type(writable["a"]) is torch.Tensor and writable["a"][0, 0] == 1
    # sent on, it travels out of band again; in band it arrives writable
    data, again = _dumps(out)
    assert len(again) == len(buffers)
    assert type(pickle.loads(pickle.dumps(out, protocol=4))["a"]) is torch.Tensor


def _child_fill(queue, done):
    td = queue.get()
    td["a"].fill_(7)
    done.put(True)


def test_torch_multiprocessing_shares_memory_at_protocol_5(monkeypatch):
    """torch.multiprocessing's pickler keeps its shared-memory reductions, whatever its
    protocol: a child's write is seen by the parent."""
    from multiprocessing.reduction import ForkingPickler
    monkeypatch.setattr(ForkingPickler, "dumps", classmethod(
        lambda cls, obj, protocol=5: _forking_dumps(cls, obj, protocol)))
    ctx = mp.get_context("fork")
    queue, done = ctx.Queue(), ctx.Queue()
    td = TensorDict(a=torch.zeros(4))
    child = ctx.Process(target=_child_fill, args=(queue, done))
    child.start()
    queue.put(td)
    assert done.get(timeout=60)
    child.join(60)
    assert (td["a"] == 7).all()


def _forking_dumps(cls, obj, protocol):
    import io
    buf = io.BytesIO()
    cls(buf, protocol).dump(obj)
    return buf.getbuffer()
