"""``td.pack()`` and ``PackLayout`` (upstream 0.15.3's API and messages)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, PackLayout, TensorDict


def _td() -> TensorDict:
    return TensorDict(p=torch.arange(5.), v=torch.arange(15.).reshape(5, 3),
                      nested={"stress": torch.ones(5, 3, 3)}, batch_size=[5])


def test_pack_and_unpack():
    td = _td()
    flat, layout = td.pack()
    assert flat.shape == (5, 13) and flat.is_contiguous()
    assert layout.keys == (("nested", "stress"), "p", "v")
    assert layout.shapes == (torch.Size([3, 3]), torch.Size([]), torch.Size([3]))
    assert layout.offsets == (0, 9, 10) and layout.numel == 13
    assert layout.nested == (("nested", torch.Size([]), None),)
    assert layout == td.pack()[1] and hash(layout) == hash(td.pack()[1])
    out = layout.unpack(flat)
    assert (out == td).all() and out["nested"].batch_size == (5,)
    assert out["v"].data_ptr() == flat.data_ptr() + 10 * 4  # a view
    assert layout.unpack(flat.index_select(0, torch.tensor([0, 2]))).batch_size == (2,)
    assert layout.unpack(torch.zeros(7, 5, 13)).batch_size == (7, 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        layout.dim = 0


@pytest.mark.parametrize("dim, shape, stored", [(0, (5, 2, 3), -3), (1, (2, 5, 3), -2),
                                                (2, (2, 3, 5), -1), (-3, (5, 2, 3), -3)])
def test_pack_along_any_dim(dim, shape, stored):
    td = TensorDict(a=torch.randn(2, 3, 4), b=torch.randn(2, 3), batch_size=[2, 3])
    flat, layout = td.pack(dim)
    assert flat.shape == shape and flat.is_contiguous() and layout.dim == stored
    assert (layout.unpack(flat) == td).all()


def test_pack_errors():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    for dim in (3, -4):
        with pytest.raises(IndexError, match=f"dim {dim} is out of range for packing a "
                                             "tensordict with 2 batch dimensions"):
            td.pack(dim)
    with pytest.raises(TypeError, match="different dtypes: torch.float32 and torch.int64 "
                                        "at 'b'"):
        TensorDict(a=torch.zeros(5), b=torch.zeros(5, dtype=torch.int64), batch_size=[5]).pack()
    with pytest.raises(RuntimeError, match="different devices: cpu and meta at 'b'"):
        TensorDict(a=torch.zeros(2), b=torch.zeros(2, device="meta"), batch_size=[2]).pack()
    with pytest.raises(TypeError, match="Cannot pack the non-tensor entry 's'"):
        TensorDict(a=torch.zeros(5), s=NonTensorData("x"), batch_size=[5]).pack()
    with pytest.raises(RuntimeError, match="members have different keys"):
        LazyStackedTensorDict(TensorDict(a=torch.zeros(2)), TensorDict(b=torch.ones(2))).pack()
    _, layout = _td().pack()
    with pytest.raises(ValueError, match="Expected 13 entries along dim -1 of the packed "
                                         "tensor, got 3"):
        layout.unpack(torch.zeros(5, 3))
    with pytest.raises(IndexError, match="dim -1 is out of range for a tensor with 0"):
        layout.unpack(torch.tensor(1.))


def test_pack_into_a_layout():
    td = TensorDict(p=torch.zeros(5), v=torch.ones(5, 3), batch_size=[5])
    layout = PackLayout(keys=("v", "p"), shapes=((3,), ()))
    flat, same = td.pack(layout=layout)
    assert flat[0].tolist() == [1., 1., 1., 0.] and same == layout
    with pytest.raises(KeyError, match=r"differ from the keys of the layout: \['p'\] vs "
                                       r"\['v', 'p'\]"):
        TensorDict(p=torch.zeros(5), batch_size=[5]).pack(layout=layout)
    with pytest.raises(ValueError, match="feature shapes of the leaves differ"):
        TensorDict(p=torch.zeros(5), v=torch.ones(5, 4), batch_size=[5]).pack(layout=layout)
    with pytest.raises(ValueError, match="Cannot pack along dim 0 with a layout packed "
                                         "along dim -1"):
        td.pack(0, layout=layout)


def test_tensorclasses_nested_batch_sizes_and_edge_cases():
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Pair:
        x: torch.Tensor
        y: torch.Tensor

    pair = Pair(x=torch.zeros(4, 2), y=torch.ones(4), batch_size=[4])
    flat, layout = pair.pack()
    assert layout.cls is Pair and isinstance(layout.unpack(flat), Pair)
    td = TensorDict(a=TensorDict(b=torch.ones(5, 2, 3), batch_size=[5, 2]),
                    c={"pair": Pair(x=torch.zeros(5, 1), y=torch.zeros(5), batch_size=[5])},
                    batch_size=[5])
    flat, layout = td.pack()
    assert layout.keys == (("a", "b"), ("c", "pair", "x"), ("c", "pair", "y"))
    assert layout.nested == (("a", torch.Size([2]), None), ("c", torch.Size([]), None),
                             (("c", "pair"), torch.Size([]), Pair))
    out = layout.unpack(flat)
    assert out["a"].batch_size == (5, 2) and isinstance(out["c", "pair"], Pair)
    flat, layout = TensorDict(batch_size=[5]).pack()
    assert flat.shape == (5, 0) and layout.numel == 0
    lazy = LazyStackedTensorDict(TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2)))
    assert lazy.pack()[0].tolist() == [[0., 0.], [1., 1.]]
    on_cpu = TensorDict(a=torch.zeros(3), batch_size=[3], device="cpu")
    flat, layout = on_cpu.pack()
    assert layout.device == torch.device("cpu") and layout.unpack(flat).device.type == "cpu"
    assert TensorDict(a=torch.zeros(3, requires_grad=True), batch_size=[3]).pack()[
        0].requires_grad
