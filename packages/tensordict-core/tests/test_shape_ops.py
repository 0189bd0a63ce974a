"""Shape ops over batch dims, each checked against the same op on every leaf by hand."""

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict


def make(names=("x", "y")):
    """batch [2, 3]; a nested TensorDict with a longer batch; non-tensor data and stack."""
    return TensorDict(
        a=torch.arange(6.0).reshape(2, 3),
        f=torch.randn(2, 3, 5),
        nested=TensorDict(c=torch.randn(2, 3, 4, 2), batch_size=[2, 3, 4]),
        s="text",
        tags=NonTensorStack.from_list([["a", "b", "c"], ["d", "e", "f"]]),
        batch_size=[2, 3],
        names=list(names) if names else None,
    )


LEAVES = ["a", "f", ("nested", "c")]


def check(result, td, fn, stacks=False):
    for key in LEAVES:
        torch.testing.assert_close(result[key], fn(td[key]))
    positions = torch.arange(6).reshape(2, 3)
    flat = ["a", "b", "c", "d", "e", "f"]
    expected = fn(positions)
    if stacks:  # unsqueeze / expand to new dims: one element each (as upstream)
        assert type(result.get("s")) is NonTensorStack
        assert _flatten(result["s"], expected.ndim) == ["text"] * expected.numel()
    else:
        assert result["s"] == "text"
    got = result.get("tags")
    assert got.batch_size == expected.shape
    assert _flatten(result["tags"], expected.ndim) == [flat[i] for i in expected.reshape(-1)]


def _flatten(nested, depth):
    if not depth:
        return [nested]
    return [x for part in nested for x in _flatten(part, depth - 1)]


CASES = [
    ("view", lambda td: td.view(6), lambda x: x.reshape(6, *x.shape[2:]), [6], [None]),
    ("view -1", lambda td: td.view(-1, 2), lambda x: x.reshape(3, 2, *x.shape[2:]), [3, 2], None),
    ("reshape", lambda td: td.reshape(3, 2), lambda x: x.reshape(3, 2, *x.shape[2:]), [3, 2],
     None),
    ("unsqueeze", lambda td: td.unsqueeze(1), lambda x: x.unsqueeze(1), [2, 1, 3],
     ["x", None, "y"]),
    ("unsqueeze -1", lambda td: td.unsqueeze(-1), lambda x: x.unsqueeze(2), [2, 3, 1],
     ["x", "y", None]),
    ("permute", lambda td: td.permute(1, 0), lambda x: x.transpose(0, 1), [3, 2], ["y", "x"]),
    ("transpose", lambda td: td.transpose(0, -1), lambda x: x.transpose(0, 1), [3, 2],
     ["y", "x"]),
    ("swapaxes", lambda td: td.swapaxes(0, 1), lambda x: x.transpose(0, 1), [3, 2], ["y", "x"]),
    ("movedim", lambda td: td.movedim(0, 1), lambda x: x.movedim(0, 1), [3, 2], ["y", "x"]),
    ("flatten", lambda td: td.flatten(0, 1), lambda x: x.flatten(0, 1), [6], None),
    ("unflatten", lambda td: td.unflatten(1, (3, 1)), lambda x: x.unflatten(1, (3, 1)),
     [2, 3, 1], ["x", "y", None]),
    ("expand", lambda td: td.expand(4, 2, 3), lambda x: x.expand(4, *x.shape), [4, 2, 3],
     [None, "x", "y"]),
    ("repeat", lambda td: td.repeat(2, 1), lambda x: x.repeat(2, *[1] * (x.ndim - 1)), [4, 3],
     ["x", "y"]),
    ("repeat_interleave", lambda td: td.repeat_interleave(2, dim=1),
     lambda x: x.repeat_interleave(2, dim=1), [2, 6], ["x", "y"]),
    ("tile", lambda td: td.tile((2,)), lambda x: x.repeat(1, 2, *[1] * (x.ndim - 2)), [2, 6],
     None),
    ("flip", lambda td: td.flip(1), lambda x: x.flip(1), [2, 3], ["x", "y"]),
    ("fliplr", lambda td: td.fliplr(), lambda x: x.flip(1), [2, 3], ["x", "y"]),
    ("flipud", lambda td: td.flipud(), lambda x: x.flip(0), [2, 3], ["x", "y"]),
    ("roll", lambda td: td.roll(1, 1), lambda x: x.roll(1, 1), [2, 3], ["x", "y"]),
    ("rot90", lambda td: td.rot90(), lambda x: x.rot90(1, (0, 1)), [3, 2], ["y", "x"]),
    ("narrow", lambda td: td.narrow(1, 1, 2), lambda x: x.narrow(1, 1, 2), [2, 2], ["x", "y"]),
    ("index_select", lambda td: td.index_select(1, torch.tensor([2, 0])),
     lambda x: x.index_select(1, torch.tensor([2, 0])), [2, 2], ["x", "y"]),
    ("gather", lambda td: td.gather(1, torch.tensor([[2], [0]])),
     lambda x: x[torch.tensor([[0], [1]]), torch.tensor([[2], [0]])], [2, 1], ["x", "y"]),
    ("masked_select", lambda td: td.masked_select(torch.tensor([[True, False, True]] * 2)),
     lambda x: x[torch.tensor([[True, False, True]] * 2)], [4], None),
    ("atleast_3d", lambda td: td.atleast_3d(), lambda x: x.unsqueeze(0), [1, 2, 3],
     [None, "x", "y"]),
    ("torch.flatten", lambda td: torch.flatten(td, 0, 1), lambda x: x.flatten(0, 1), [6], None),
    ("torch.permute", lambda td: torch.permute(td, (1, 0)), lambda x: x.transpose(0, 1),
     [3, 2], ["y", "x"]),
    ("torch.squeeze", lambda td: torch.squeeze(td.unsqueeze(0), 0), lambda x: x, [2, 3],
     ["x", "y"]),
    ("torch.unsqueeze", lambda td: torch.unsqueeze(td, 0), lambda x: x.unsqueeze(0), [1, 2, 3],
     [None, "x", "y"]),
    ("torch.reshape", lambda td: torch.reshape(td, (6,)), lambda x: x.reshape(6, *x.shape[2:]),
     [6], None),
    ("torch.roll", lambda td: torch.roll(td, 1, 0), lambda x: x.roll(1, 0), [2, 3], ["x", "y"]),
    ("torch.broadcast_to", lambda td: torch.broadcast_to(td, (2, 2, 3)),
     lambda x: x.expand(2, *x.shape), [2, 2, 3], [None, "x", "y"]),
]


#: The ops whose NonTensorData results are NonTensorStacks upstream (broadcast_to is not).
STACKS = {"unsqueeze", "unsqueeze -1", "atleast_3d", "torch.unsqueeze", "expand"}


@pytest.mark.parametrize("name,op,leaf_op,size,names", CASES, ids=[c[0] for c in CASES])
def test_shape_op_matches_leafwise(name, op, leaf_op, size, names):
    td = make()
    result = op(td)
    assert result.batch_size == torch.Size(size)
    assert result["nested"].batch_size == torch.Size(size) + torch.Size([4])
    check(result, td, leaf_op, name in STACKS)
    if names is not None:
        assert result.names == names
        assert result["nested"].names == names + [None]
    else:
        assert all(n is None for n in result.names)


def test_squeeze_all_and_noop():
    base = make()
    td = base.unsqueeze(0).unsqueeze(-1)
    out = td.squeeze()
    assert out.batch_size == torch.Size([2, 3]) and out.names == ["x", "y"]
    assert td.squeeze(1) is td
    check(out, base, lambda x: x)


def test_views_share_storage():
    td = make()
    assert td.view(6)["a"].data_ptr() == td["a"].data_ptr()
    assert td.permute(1, 0)["f"].data_ptr() == td["f"].data_ptr()
    expanded = td.expand(5, 2, 3)
    assert expanded["a"].stride()[0] == 0
    td.view(6)["a"].zero_()
    assert (td["a"] == 0).all()


def test_view_dtype():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    assert td.view(torch.int32)["a"].dtype == torch.int32


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind_matches_leafwise(dim):
    td = make()
    parts = td.unbind(dim)
    assert len(parts) == td.batch_size[dim]
    for i, part in enumerate(parts):
        check(part, td, lambda x, i=i: x.select(dim % 2, i))
        assert part.names == [n for j, n in enumerate(["x", "y"]) if j != dim % 2]
    assert torch.unbind(td, dim)[0]["a"].shape == parts[0]["a"].shape


def test_split_chunk_tensor_split():
    td = make()
    for parts, sizes in [
        (td.split(2, 1), [2, 1]),
        (td.split([1, 2], 1), [1, 2]),
        (td.chunk(2, 1), [2, 1]),
        (td.tensor_split([1], 1), [1, 2]),
        (torch.split(td, [1, 2], 1), [1, 2]),
        (torch.chunk(td, 2, 1), [2, 1]),
    ]:
        assert [p.batch_size[1] for p in parts] == sizes
        start = 0
        for part, n in zip(parts, sizes):
            check(part, td, lambda x, s=start, n=n: x.narrow(1, s, n))
            assert part.names == ["x", "y"]
            start += n
    with pytest.raises(RuntimeError, match="add up"):
        td.split([1, 1], 1)


def test_zero_dim_td():
    td = TensorDict(a=torch.ones(3), s="x")
    assert td.unsqueeze(0).batch_size == torch.Size([1])
    assert td.expand(2)["a"].shape == torch.Size([2, 3])
    assert td.reshape(1, 1).batch_size == torch.Size([1, 1])
    with pytest.raises(IndexError, match="out of range"):
        td.unbind(0)
    with pytest.raises(IndexError):
        td.squeeze(0)


def test_errors_name_shapes():
    td = make()
    with pytest.raises(RuntimeError, match=r"\[4\].*torch.Size\(\[2, 3\]\)"):
        td.view(4)
    with pytest.raises(RuntimeError, match="cannot expand"):
        td.expand(3, 3)
    with pytest.raises(IndexError, match="out of range"):
        td.unsqueeze(4)
    with pytest.raises(ValueError, match="permutation"):
        td.permute(0, 0)
    with pytest.raises(ValueError, match="one count per batch dim"):
        td.repeat(2, 2, 2)
    with pytest.raises(ValueError, match="out of range"):  # upstream's class
        td.transpose(0, 2)


def test_pad():
    td = make()
    out = tensordict.pad(td, [1, 1, 0, 1], value=-1.0)
    assert out.batch_size == torch.Size([4, 4]) and out.names == ["x", "y"]
    expected = torch.nn.functional.pad(td["a"], [0, 1, 1, 1], value=-1.0)
    torch.testing.assert_close(out["a"], expected)
    assert out["nested", "c"].shape == torch.Size([4, 4, 4, 2])
    assert out["tags"][0] == [None, None, None, None]
    assert out["tags"][1] == ["a", "b", "c", None]
    assert out["s"][0] == [None] * 4 and out["s"][1] == ["text"] * 3 + [None]  # upstream's
    with pytest.raises(RuntimeError, match="pairs"):
        tensordict.pad(td, [1, 1, 1, 1, 1, 1])


def test_pad_sequence():
    tds = [TensorDict(a=torch.ones(n, 3) * n, s="x", batch_size=[n]) for n in (2, 4)]
    out = tensordict.pad_sequence(tds, return_mask=True)
    assert out.batch_size == torch.Size([2, 4])
    torch.testing.assert_close(out["a"][0], torch.tensor([[2.0] * 3] * 2 + [[0.0] * 3] * 2))
    assert out["masks", "a"].tolist() == [[True, True, False, False], [True] * 4]
    left = tensordict.pad_sequence(tds, padding_side="left", padding_value=-1.0)
    torch.testing.assert_close(left["a"][0, :2], -torch.ones(2, 3))
    unbatched = [TensorDict(a=torch.ones(n)) for n in (1, 3)]
    out = tensordict.pad_sequence(unbatched, return_mask=True)
    assert out.batch_size == torch.Size([2]) and out["a"].shape == torch.Size([2, 3])
    assert out["masks", "a"].tolist() == [[True, False, False], [True] * 3]


def test_masked_fill_and_where():
    td = make()
    mask = torch.tensor([True, False])
    out = td.masked_fill(mask, -1.0)
    for key in LEAVES:
        expected = td[key].clone()
        expected[0] = -1.0
        torch.testing.assert_close(out[key], expected)
    assert out["s"] == "text"
    cond = torch.tensor([[True, False, True]] * 2)
    out = td.where(cond, 0.0)
    for key in LEAVES:
        c = cond.reshape(2, 3, *[1] * (td[key].ndim - 2))
        torch.testing.assert_close(out[key], torch.where(c, td[key], 0.0))
    clone = td.clone()
    clone.masked_fill_(mask, 7.0)
    assert (clone["nested", "c"][0] == 7).all() and (clone["a"][1] == td["a"][1]).all()


def test_longer_nested_batch_through_ops():
    td = make()
    out = td.unsqueeze(0).expand(2, 2, 3).reshape(4, 3).permute(1, 0)
    assert out["nested"].batch_size == torch.Size([3, 4, 4])
    torch.testing.assert_close(
        out["nested", "c"], td["nested", "c"].unsqueeze(0).expand(2, 2, 3, 4, 2)
        .reshape(4, 3, 4, 2).transpose(0, 1))


def test_reshape_view_to_an_empty_batch_of_scalar_leaves():
    td = TensorDict(a=torch.zeros(1), b=torch.ones(1, 3), batch_size=[1])
    for op in (td.reshape, td.view):
        out = op(())
        assert out.batch_size == torch.Size([]) and out["a"].shape == torch.Size([])
        assert out["b"].shape == torch.Size([3])
    assert TensorDict(a=torch.zeros(()))._expand((2,), True)["a"].shape == torch.Size([2])


@pytest.mark.parametrize("op", ["view", "reshape", "expand"])
def test_batch_reshapes_of_leaves_with_zero_one_and_more_extra_dims(op):
    td = TensorDict(none=torch.arange(4.0), one=torch.arange(12.0).view(4, 3),
                    empty=torch.zeros(4, 0), more=torch.arange(24.0).view(4, 2, 3),
                    batch_size=[4])
    shape = (3, 4) if op == "expand" else (2, 2)
    out = getattr(td, op)(*shape)
    for key, leaf in td.items():
        want = getattr(leaf, op)(*shape, *leaf.shape[1:])
        assert out[key].shape == want.shape and torch.equal(out[key], want)


def test_view_of_an_empty_batch_and_to_no_batch_dims():
    td = TensorDict(a=torch.zeros(0, 3), b=torch.zeros(0), batch_size=[0])
    out = td.view(0, 5)
    assert out["a"].shape == (0, 5, 3) and out["b"].shape == (0, 5)
    single = TensorDict(a=torch.ones(1, 3), b=torch.ones(1), batch_size=[1]).view(())
    assert single["a"].shape == (3,) and single["b"].shape == () and not single.batch_size


def test_a_view_that_cannot_be_made_names_the_leaf():
    td = TensorDict(a=torch.zeros(3, 4).t(), batch_size=[4])  # dim 0 strided, not viewable
    td = td.expand(2, 4)
    with pytest.raises(RuntimeError, match="'a'"):
        td.view(8)


def test_reorderings_that_change_nothing_return_the_tensordict_itself():
    td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3])
    assert td.permute(0, 1) is td and td.permute(-2, -1) is td
    assert td.transpose(1, -1) is td and td.movedim(0, 0) is td
    assert td.movedim([0, 1], [0, 1]) is td
    moved = td.movedim(0, 1)  # a real move still makes a new one
    assert moved is not td and moved.batch_size == torch.Size([3, 2])
    with pytest.raises(ValueError):
        td.permute(0, 0)  # still checked before the shortcut


@pytest.mark.parametrize("length", [0, 1, 5, 7])
@pytest.mark.parametrize("sections", [1, 2, 3, 8, [1, 3], torch.tensor([2])])
def test_tensor_split_sizes_are_torchs(length, sections):
    td = TensorDict(a=torch.arange(length), batch_size=[length])
    expected = torch.arange(length).tensor_split(sections)
    assert [piece["a"].tolist() for piece in td.tensor_split(sections)] == \
        [part.tolist() for part in expected]


@pytest.mark.parametrize("reps", [[2, 3], [1, 2], [3, 1], [2, 0], [1, 1]])
def test_repeat_gives_torch_repeat_values_and_grads(reps):
    leaf = torch.arange(24.0).view(2, 3, 4).requires_grad_()
    td = TensorDict(a=leaf, n={"b": torch.arange(6).view(2, 3)}, batch_size=[2, 3])
    out = td.repeat(*reps)
    assert torch.equal(out["a"], leaf.repeat(*reps, 1)) and out["a"].is_contiguous()
    assert torch.equal(out["n", "b"], td["n", "b"].repeat(*reps))
    out["a"].sum().backward()
    assert torch.equal(leaf.grad, torch.full_like(leaf, float(reps[0] * reps[1])))


@pytest.mark.parametrize("lazy", [False, True], ids=["dense", "lazy"])
def test_gather_with_an_index_of_fewer_dims_than_the_batch(lazy):
    # as upstream 0.15.3: the index is spread over each leaf's remaining dims, where dim
    # keeps one element; the batch becomes the index's shape, without names
    td = TensorDict(a=torch.arange(24.0).view(2, 3, 4), b=torch.arange(6).view(2, 3),
                    batch_size=[2, 3], names=["x", "y"])
    if lazy:
        td = LazyStackedTensorDict(*td.unbind(0), stack_dim=0)
    rows = td.gather(0, torch.tensor([1, 0, 1]))
    assert rows.batch_size == torch.Size([3]) and rows.names == [None]
    assert rows["b"].tolist() == [[3, 4, 5], [0, 1, 2], [3, 4, 5]]
    assert torch.equal(rows["a"], td["a"][torch.tensor([1, 0, 1])])
    picked = td.gather(1, torch.tensor([2, 0]))
    assert picked.batch_size == torch.Size([2])
    assert picked["b"].tolist() == [[2], [3]]
    assert picked["a"].shape == torch.Size([2, 1, 4])
    assert torch.equal(picked["a"][:, 0], torch.stack([td["a"][0, 2], td["a"][1, 0]]))
