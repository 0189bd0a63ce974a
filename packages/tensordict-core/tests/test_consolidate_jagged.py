"""consolidate() of collections holding jagged nested tensors (upstream 0.15.3 behaviour):
a jagged leaf is laid out as its values, lengths and offsets, named in the metadata
``<NJT_VALUES>key``, ``<NJT_LENGTHS>key`` and ``<NJT_OFFSETS>key`` (the last with the
ragged dim)."""

import pickle

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, from_consolidated


def _jagged(*sizes, width=None):
    rows = [torch.arange(float(n * (width or 1))).view(n, width) if width else
            torch.arange(float(n)) for n in sizes]
    return torch.nested.nested_tensor(rows, layout=torch.jagged)


def _rows(nt):
    return [row.tolist() for row in nt.unbind()]


def _one_storage(c):
    storage = c._consolidated["storage"].untyped_storage()
    for leaf in c._tensor_leaves():
        parts = [leaf._values, leaf._offsets] if leaf.is_nested else [leaf]
        assert all(p.untyped_storage().data_ptr() == storage.data_ptr() for p in parts)


def test_jagged_leaf_laid_out_as_upstream():
    td = TensorDict(a=torch.zeros(2, 3), n=_jagged(3, 5), s={"b": torch.ones(2)},
                    batch_size=[2])
    c = td.consolidate()
    assert c.is_consolidated() and c.is_locked
    assert c["n"].layout is torch.jagged
    assert _rows(c["n"]) == _rows(td["n"])
    assert c["n"].values().tolist() == [0, 1, 2, 0, 1, 2, 3, 4]
    assert c["n"].offsets().tolist() == [0, 3, 8]
    _one_storage(c)
    assert c._consolidated["storage"].numel() == 88
    assert c._consolidated["metadata"]["leaves"] == {
        "a": ("torch.float32", [2, 3], 0, 24, 0),
        "<NJT_VALUES>n": ("torch.float32", [8], 24, 56, 0),
        "<NJT_OFFSETS>n": ("torch.int64", [3], 56, 80, 0, 1)}


def test_jagged_lengths_and_ragged_dim_kept():
    with_lengths = torch.nested.nested_tensor_from_jagged(
        torch.arange(10.), torch.tensor([0, 4, 8]), lengths=torch.tensor([2, 3]))
    transposed = _jagged(3, 5, width=2).transpose(1, 2)
    c = TensorDict(l=with_lengths, t=transposed, batch_size=[2]).consolidate()
    assert _rows(c["l"]) == [[0, 1], [4, 5, 6]] and c["l"]._lengths.tolist() == [2, 3]
    assert c["t"]._ragged_idx == 2 and _rows(c["t"]) == _rows(transposed)
    leaves = c._consolidated["metadata"]["leaves"]
    assert list(leaves) == ["<NJT_VALUES>l", "<NJT_LENGTHS>l", "<NJT_OFFSETS>l",
                            "<NJT_VALUES>t", "<NJT_OFFSETS>t"]
    assert leaves["<NJT_VALUES>t"][1] == [2, 8] and leaves["<NJT_OFFSETS>t"][-1] == 2
    back = pickle.loads(pickle.dumps(c))
    assert back.is_consolidated()
    assert _rows(back["l"]) == [[0, 1], [4, 5, 6]] and _rows(back["t"]) == _rows(transposed)


def test_jagged_writes_go_to_the_buffer():
    c = TensorDict(n=_jagged(1, 2), batch_size=[2]).consolidate()
    c["n"].values()[0] = 100
    assert c._consolidated["storage"][:4].view(torch.float32).item() == 100


def test_jagged_pickle_file_and_move(tmp_path):
    td = TensorDict(a=torch.ones(2), n=_jagged(2, 4, width=3), batch_size=[2])
    back = pickle.loads(pickle.dumps(td.consolidate()))
    assert back.is_consolidated() and _rows(back["n"]) == _rows(td["n"])
    path = tmp_path / "td.bin"
    mapped = td.consolidate(filename=path)
    assert mapped.is_consolidated() and _rows(mapped["n"]) == _rows(td["n"])
    read = from_consolidated(path)
    assert read.is_consolidated() and read["n"].layout is torch.jagged
    assert _rows(read["n"]) == _rows(td["n"]) and read["a"].tolist() == [1, 1]
    with_metadata = td.consolidate(metadata=True)
    assert _rows(from_consolidated(with_metadata._consolidated["storage"])["n"]) == \
        _rows(td["n"])
    c = td.consolidate()
    on_cpu = c.to("cpu", non_blocking=True)
    assert on_cpu is not c and on_cpu.is_consolidated() and on_cpu.device.type == "cpu"
    assert _rows(on_cpu["n"]) == _rows(td["n"])
    moved = c.to("meta")
    assert moved.is_consolidated() and moved["n"].device.type == "meta"
    assert moved["n"].layout is torch.jagged and moved["n"].shape[2] == 3
    assert not c.to(torch.float64).is_consolidated()


def test_jagged_inplace_nested_and_lazy_stack():
    td = TensorDict(n=_jagged(1, 2), batch_size=[2])
    assert td.consolidate(inplace=True) is td and td.is_consolidated()
    assert td["n"].layout is torch.jagged and _rows(td["n"]) == [[0], [0, 1]]
    outer = TensorDict(sub=TensorDict(n=_jagged(1, 2), batch_size=[2]), batch_size=[2])
    c = outer.consolidate()
    assert list(c._consolidated["metadata"]["sub"]["leaves"]) == ["<NJT_VALUES>n",
                                                                   "<NJT_OFFSETS>n"]
    _one_storage(c)
    stack = LazyStackedTensorDict(TensorDict(n=_jagged(1, 2)), TensorDict(n=_jagged(3, 1)))
    cs = stack.consolidate()
    assert type(cs) is LazyStackedTensorDict and cs.is_consolidated()
    assert _rows(cs[1]["n"]) == [[0, 1, 2], [0]]
    assert cs._consolidated["metadata"]["1"]["leaves"]["<NJT_VALUES>n"][2] == 40
    _one_storage(cs)


def test_replacing_a_jagged_leaf_ends_the_consolidation():
    c = TensorDict(n=_jagged(1, 2), batch_size=[2]).consolidate().unlock_()
    c["n"] = _jagged(2, 2)
    assert not c.is_consolidated()


def test_strided_nested_refused_with_upstream_class():
    with pytest.raises(NotImplementedError, match="NST is not supported"):
        TensorDict(n=torch.nested.nested_tensor([torch.zeros(1), torch.zeros(2)]),
                   batch_size=[2]).consolidate()
