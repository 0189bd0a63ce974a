"""Batch indexing and indexed writes, compared with indexing each leaf by hand."""

import numpy as np
import pytest
import torch

from tensordict import NonTensorStack, TensorDict


def make():
    return TensorDict(
        a=torch.arange(24.0).reshape(2, 3, 4),
        f=torch.randn(2, 3, 4, 5),
        nested=TensorDict(c=torch.randn(2, 3, 4, 6, 2), batch_size=[2, 3, 4, 6]),
        s="text",
        tags=NonTensorStack.from_list([[[f"{i}{j}{k}" for k in range(4)] for j in range(3)]
                                       for i in range(2)]),
        batch_size=[2, 3, 4],
        names=["x", "y", "z"],
    )


LEAVES = ["a", "f", ("nested", "c")]


def on_leaf(index, ndim=3):
    """``index`` for a leaf whose first ``ndim`` dims are the batch: ``...`` expanded."""
    parts = index if isinstance(index, tuple) else (index,)
    if not any(p is Ellipsis for p in parts):
        return index
    used = sum(1 for p in parts if p is not None and p is not Ellipsis)
    at = next(i for i, p in enumerate(parts) if p is Ellipsis)
    return parts[:at] + (slice(None),) * (ndim - used) + parts[at + 1:]
INDICES = [
    0, -1, slice(None), slice(1, None), slice(None, None, 2), (slice(None), 1),
    (..., 2), (..., slice(1, 3)), (0, ..., 1), None, (None, 0), (slice(None), None, 1),
    [1, 0], torch.tensor([1, 0, 1]), np.array([0, 1]), torch.tensor([True, False]),
    torch.tensor([[True, False, True], [False, True, False]]),
    (slice(None), torch.tensor([2, 0])), ([0, 1], [1, 2]), (torch.tensor([0, 1]), ..., 3),
    True, range(0, 2), (slice(None), slice(None), torch.tensor([0, 3])), (),
    (0, [0, 2]), np.int64(1),
]


@pytest.mark.parametrize("index", INDICES, ids=[repr(i)[:40] for i in INDICES])
def test_index_matches_leaf_indexing(index):
    td = make()
    out = td[index]
    expected_batch = torch.zeros(2, 3, 4)[index].shape
    assert out.batch_size == expected_batch
    for key in LEAVES:
        torch.testing.assert_close(out[key], td[key][on_leaf(index)])
    assert out["nested"].batch_size == expected_batch + torch.Size([6])
    assert out["s"] == "text"
    positions = np.arange(24).reshape(2, 3, 4)[index if not isinstance(index, torch.Tensor)
                                              else index.numpy()]
    flat = [f"{i}{j}{k}" for i in range(2) for j in range(3) for k in range(4)]
    got = out.get("tags")
    assert got.batch_size == expected_batch
    expected_tags = np.asarray(flat, dtype=object)[positions]
    assert np.array_equal(np.asarray(got.tolist(), dtype=object).reshape(expected_tags.shape),
                          expected_tags)


@pytest.mark.parametrize("index,names", [
    (0, ["y", "z"]), ((slice(None), 1), ["x", "z"]), (None, [None, "x", "y", "z"]),
    (torch.tensor([1, 0]), ["x", "y", "z"]), (torch.tensor([True, False]), ["x", "y", "z"]),
    (([0, 1], [1, 2]), [None, None]), ((..., None), ["x", "y", "z", None]),
])
def test_index_names(index, names):
    out = make()[index]
    assert out.names == names
    assert out["nested"].names == names + [None]


def test_views_where_torch_gives_views():
    td = make()
    assert td[0]["a"].data_ptr() == td["a"].data_ptr()
    assert td[:, 1:]["a"].untyped_storage().data_ptr() == td["a"].untyped_storage().data_ptr()
    td[1]["a"].fill_(-1)
    assert (td["a"][1] == -1).all()
    assert td[torch.tensor([0])]["a"].data_ptr() != td["a"].data_ptr()


def test_index_errors():
    td = make()
    with pytest.raises(IndexError, match="too many indices"):
        td[0, 0, 0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        td[5]
    with pytest.raises(TypeError, match="cannot mix keys"):
        td["a", 0]
    with pytest.raises(TypeError, match="cannot mix keys"):
        td[0, "a"]
    with pytest.raises(IndexError):
        TensorDict(a=torch.ones(3))[0]


def test_nested_key_and_iteration():
    td = make()
    assert td["nested", "c"].shape == torch.Size([2, 3, 4, 6, 2])
    rows = list(td)
    assert len(rows) == 2 and rows[1].batch_size == torch.Size([3, 4])


# -- writes ------------------------------------------------------------------------------
@pytest.mark.parametrize("index", [0, (slice(None), 1), torch.tensor([1, 0]),
                                   torch.tensor([True, False]), (..., slice(0, 2))])
def test_setitem_with_td_writes_in_place(index):
    td = make()
    sub = td[index].apply(lambda x: torch.full_like(x, 7.0))
    leaves = {key: td[key] for key in LEAVES}
    expected = {key: td[key].clone() for key in LEAVES}
    for key in LEAVES:
        expected[key][on_leaf(index)] = 7.0
    td[index] = sub
    for key in LEAVES:
        assert td[key] is leaves[key]
        torch.testing.assert_close(td[key], expected[key])


def test_setitem_number_tensor_and_dict():
    td = make()
    td[0] = 1.0
    assert (td["a"][0] == 1).all() and (td["nested", "c"][0] == 1).all()
    td[:, 0] = {"a": torch.zeros(2, 4), "f": torch.zeros(2, 4, 5)}
    assert (td["a"][:, 0] == 0).all()
    td[1, 1] = torch.tensor(3.0)
    assert (td["f"][1, 1] == 3).all()


def test_setitem_failure_changes_nothing():
    td = make()
    before = td.clone()
    bad = TensorDict(a=torch.zeros(3, 4), f=torch.zeros(3, 4, 7), batch_size=[3, 4])
    with pytest.raises(RuntimeError, match=r"3, 4, 7\] into the entry 'f' of"):
        td[0] = bad
    for key in LEAVES:
        torch.testing.assert_close(td[key], before[key])


def test_lazy_preallocation_in_any_order():
    td = TensorDict(batch_size=[3])
    for i in (2, 0, 1):
        td[i] = TensorDict(
            obs=torch.full((4,), float(i)),
            nested=TensorDict(x=torch.full((5, 2), float(i)), batch_size=[5]),
            label=f"item{i}",
        )
    assert td["obs"][:, 0].tolist() == [0.0, 1.0, 2.0]
    assert td["nested"].batch_size == torch.Size([3, 5])
    assert td["nested", "x"][:, 0, 0].tolist() == [0.0, 1.0, 2.0]
    assert td["label"] == ["item0", "item1", "item2"]


def test_lazy_preallocation_2d_and_mask():
    td = TensorDict(batch_size=[2, 3])
    td[:, 1] = TensorDict(a=torch.ones(2, 4), batch_size=[2])
    assert td["a"].shape == torch.Size([2, 3, 4])
    assert td["a"].sum() == 8
    td[torch.tensor([True, False])] = TensorDict(b=torch.ones(1, 3), batch_size=[1, 3])
    assert td["b"].tolist() == [[1.0] * 3, [0.0] * 3]


def test_seed_indexing_example():
    data = TensorDict({"key 1": torch.ones(3, 4, 5), "key 2": torch.zeros(3, 4, 5,
                                                                         dtype=torch.bool)},
                      batch_size=[3, 4])
    sub = data[..., :2]
    assert sub.batch_size == torch.Size([3, 2])
    assert sub["key 1"].shape == torch.Size([3, 2, 5])
    data[0] = TensorDict({"key 1": torch.zeros(4, 5), "key 2": torch.ones(4, 5,
                                                                         dtype=torch.bool)},
                         batch_size=[4])
    assert data["key 1"][0].sum() == 0 and data["key 2"][0].all()


# -- rows picked by a 1-d int64 index: one index_select per contiguous CPU leaf ----------
class _Calls(torch.overrides.TorchFunctionMode):
    """Records the torch functions called inside the block."""

    def __init__(self):
        super().__init__()
        self.names = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.names.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def _rows_td():
    return TensorDict(
        a=torch.arange(20.0).view(5, 4),
        img=torch.arange(5 * 3 * 2 * 2, dtype=torch.uint8).view(5, 3, 2, 2),
        flags=torch.tensor([True, False, True, True, False]),
        t=torch.arange(10.0).view(2, 5).T,  # not contiguous: indexed as a tensor is
        nested={"b": torch.arange(15).view(5, 3)},
        text="kept",
        batch_size=[5],
    )


def test_row_index_selects_every_leaf_as_indexing_does():
    td, rows = _rows_td(), torch.tensor([4, 0, 4, 2])
    with _Calls() as calls:
        out = td[rows]
    assert calls.names.count("index_select") == 4  # a, img, flags, nested.b
    for key in ["a", "img", "flags", "t", ("nested", "b")]:
        expected = td[key][rows]
        assert torch.equal(out[key], expected), key
        assert out[key].stride() == expected.stride(), key
    assert out.batch_size == torch.Size([4]) and out["text"] == "kept"


def test_row_index_with_a_negative_row_wraps_it():
    td = _rows_td()
    out = td[torch.tensor([-1, 0])]
    assert torch.equal(out["a"], td["a"][[4, 0]])
    assert torch.equal(out["nested", "b"], td["nested", "b"][[4, 0]])


def test_row_index_out_of_range_names_the_entry():
    td = _rows_td()
    with pytest.raises(IndexError, match="out of bounds.*entry 'a'"):
        td[torch.tensor([0, 5])]


def test_row_index_gradients_and_subclass_leaves():
    weight = torch.nn.Parameter(torch.randn(5, 2))
    x = torch.randn(5, 3, requires_grad=True)
    td = TensorDict(w=weight, x=x, batch_size=[5])
    out = td[torch.tensor([1, 1, 3])]
    assert torch.equal(out["w"], weight[[1, 1, 3]])
    (out["x"].sum() + out["w"].sum()).backward()
    assert x.grad[:, 0].tolist() == [0.0, 2.0, 0.0, 1.0, 0.0]
    assert weight.grad[:, 0].tolist() == [0.0, 2.0, 0.0, 1.0, 0.0]


def test_other_tensor_indices_are_not_rows():
    td, rows = _rows_td(), torch.tensor([3, 1])
    for index in (rows.to(torch.int32), rows.view(2, 1), torch.tensor(3)):
        with _Calls() as calls:
            out = td[index]
        assert "index_select" not in calls.names
        assert torch.equal(out["a"], td["a"][index])


@pytest.mark.parametrize("leaf", ["sparse", "nested"])
def test_row_index_of_leaves_without_strides_or_kernel(leaf):
    # index_select is not tried on a sparse leaf (no strides) and fails on a nested one:
    # both take indexing proper, which torch does not support either
    rows = torch.tensor([2, 0])
    value = torch.eye(3).to_sparse() if leaf == "sparse" else \
        torch.nested.nested_tensor([torch.ones(2), torch.zeros(3), torch.ones(1)])
    with pytest.raises(NotImplementedError, match="aten::index"):
        value[rows]
    with pytest.raises(NotImplementedError, match="aten::index"):
        TensorDict(x=value, batch_size=[3])[rows]
