"""The lazy stack's fast paths give what the general paths give: key listing and lookups,
``set``, ``update``, ``select``, ``lazy_stack``, padded and nested reads, ``del``,
``clone``, and an explicit ``NO_DEFAULT``; every write is checked before the first one."""

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, lazy_stack
from tensordict._lazy_ops import common_shape, pad_stack
from tensordict.base import NO_DEFAULT
from tensordict.errors import LockedTensorDictError, MissingKeyError


def parts(n=3, keys=("a", "b")):
    return [TensorDict({k: torch.full((4, 2), float(i)) for k in keys}, [4]) for i in range(n)]


def snapshot(stack):
    return [{k: v.clone() for k, v in td.items(True, True)} for td in stack.tensordicts]


def assert_same(stack, before):
    after = [dict(td.items(True, True)) for td in stack.tensordicts]
    assert [sorted(map(str, d)) for d in after] == [sorted(map(str, d)) for d in before]
    for old, new in zip(before, after):
        for key, value in old.items():
            assert torch.equal(new[key], value)


# -- keys and lookups ------------------------------------------------------------------------
def test_keys_same_keys_any_order_follow_first_part():
    a = TensorDict(x=torch.zeros(()), y=torch.zeros(()))
    b = TensorDict(y=torch.ones(()), x=torch.ones(()))
    stack = lazy_stack([a, b])
    assert list(stack.keys()) == ["x", "y"]
    assert list(stack.keys(True, True)) == ["x", "y"]


def test_keys_exclusive_and_nested():
    a = TensorDict(x=torch.zeros(()), n=TensorDict(p=torch.zeros(()), q=torch.zeros(())))
    b = TensorDict(x=torch.zeros(()), n=TensorDict(p=torch.zeros(())), z=torch.zeros(()))
    stack = lazy_stack([a, b])
    assert sorted(map(str, stack.keys(True, True))) == sorted(map(str, ["x", ("n", "p")]))
    assert "x" in stack and "n" in stack
    assert "z" not in stack and "q" not in stack
    assert ("n", "p") in stack and ("n", "q") not in stack
    assert stack._peek_str("z", None) is None
    with pytest.raises(KeyError):
        stack._peek_str("z")
    assert stack._peek_str("x") is a["x"]


def test_keys_listing_survives_deleting_while_iterating():
    stack = lazy_stack(parts())
    for key in stack._keys_str():
        del stack[key]
    assert list(stack.keys()) == []
    assert all(list(td.keys()) == [] for td in stack.tensordicts)


def test_contains_of_lazy_parts_and_non_tensor_stack():
    inner = lazy_stack([TensorDict(x=torch.zeros(())), TensorDict(x=torch.zeros(()), y=1)])
    outer = lazy_stack([inner, inner.clone()])
    assert "x" in outer and "y" not in outer
    strings = NonTensorStack("a", "b")
    assert "a" not in strings


def test_item_shape_ragged_nested_and_lazy_parts():
    a = TensorDict(x=torch.zeros(3, 2), n=TensorDict(y=torch.zeros(1)))
    b = TensorDict(x=torch.zeros(5, 2), n=TensorDict(y=torch.zeros(1)))
    stack = lazy_stack([a, b])
    assert stack.get_item_shape("x") == torch.Size([2, -1, 2])
    assert stack.get_item_shape(("n", "y")) == torch.Size([2, 1])
    assert stack.get_item_shape("n") == torch.Size([2])
    outer = lazy_stack([stack, stack])
    assert outer.get_item_shape("x") == torch.Size([2, 2, -1, 2])
    assert common_shape([torch.Size([2, 3]), torch.Size([2, 3])]) == torch.Size([2, 3])
    assert common_shape([torch.Size([2]), torch.Size([2, 3])]) == torch.Size([-1])


def test_repr_long_line_breaks_once_per_entry():
    stack = lazy_stack(parts(keys=[f"key_{i}" for i in range(8)]))
    text = repr(stack)
    assert text.count("key_3: f32[2]") == 1
    assert text.startswith("LazyStackedTensorDict(batch_size=[3,4], stack_dim=0, fields={\n")
    assert text.endswith("    key_7: f32[2]})")


# -- set --------------------------------------------------------------------------------------
def test_set_leaf_writes_views_into_each_part():
    stack = lazy_stack(parts())
    value = torch.arange(24.0).reshape(3, 4, 2)
    stack.set("c", value)
    for i, td in enumerate(stack.tensordicts):
        assert torch.equal(td["c"], value[i])
        assert td["c"].data_ptr() == value[i].data_ptr()


def test_set_leaf_with_a_locked_part_writes_nothing():
    stack = lazy_stack(parts())
    stack.tensordicts[2].lock_()
    before = snapshot(stack)
    with pytest.raises(RuntimeError, match="locked"):
        stack.set("c", torch.zeros(3, 4, 2))
    assert_same(stack, before)


# -- update -----------------------------------------------------------------------------------
@pytest.mark.parametrize("stack_dim", [0, 1])
def test_update_from_a_tensordict_unbinds_each_leaf(stack_dim):
    stack = lazy_stack(parts(), stack_dim)
    size = stack.batch_size
    source = TensorDict(a=torch.randn(*size, 2), c=torch.randn(*size, 5), batch_size=size)
    assert stack.update(source) is stack
    for i, td in enumerate(stack.tensordicts):
        assert torch.equal(td["a"], source["a"].select(stack_dim, i))
        assert torch.equal(td["c"], source["c"].select(stack_dim, i))
        assert torch.equal(td["b"], torch.full((4, 2), float(i)))
    assert torch.equal(stack["c"], source["c"])


def test_update_from_a_longer_batch_and_a_nested_source():
    stack = lazy_stack(parts())
    longer = TensorDict(a=torch.randn(3, 4, 2), batch_size=[3, 4, 2])
    stack.update(longer)
    assert torch.equal(stack["a"], longer["a"])
    nested = TensorDict(n=TensorDict(m=torch.randn(3, 4)), batch_size=[3, 4])
    stack.update(nested)
    assert torch.equal(stack["n", "m"], nested["n", "m"])
    assert isinstance(stack.tensordicts[1]["n"], TensorDict)


def test_update_merges_into_sub_tensordicts():
    stack = lazy_stack([TensorDict(n=TensorDict(p=torch.zeros(4)), batch_size=[4])
                        for _ in range(2)])
    stack.update(TensorDict(n=TensorDict(q=torch.ones(2, 4)), batch_size=[2, 4]))
    assert sorted(stack.tensordicts[0]["n"].keys()) == ["p", "q"]


def test_update_shorter_batch_and_keys_to_update_take_the_general_path():
    stack = lazy_stack(parts())
    stack.update(TensorDict(c=torch.ones(3, 4), batch_size=[3]))
    assert torch.equal(stack["c"], torch.ones(3, 4))
    stack.update(TensorDict(a=torch.ones(3, 4, 2), b=torch.ones(3, 4, 2), batch_size=[3, 4]),
                 keys_to_update=["a"])
    assert torch.equal(stack["a"], torch.ones(3, 4, 2))
    assert not torch.equal(stack["b"], torch.ones(3, 4, 2))


def test_update_with_a_locked_part_writes_nothing():
    stack = lazy_stack(parts())
    stack.tensordicts[1].lock_()
    before = snapshot(stack)
    with pytest.raises(RuntimeError, match="locked"):
        stack.update(TensorDict(c=torch.ones(3, 4), batch_size=[3, 4]))
    assert_same(stack, before)


def test_update_of_a_wrong_batch_size_writes_nothing():
    stack = lazy_stack(parts())
    before = snapshot(stack)
    with pytest.raises(RuntimeError):
        stack.update(TensorDict(c=torch.ones(2, 4), batch_size=[2, 4]))
    assert_same(stack, before)


# -- select and lazy_stack --------------------------------------------------------------------
def test_select_keeps_parts_and_checks_keys():
    a = TensorDict(x=torch.zeros(()), n=TensorDict(p=torch.zeros(()), q=torch.zeros(())))
    stack = lazy_stack([a, a.clone()])
    out = stack.select("x", ("n", "p"))
    assert isinstance(out, LazyStackedTensorDict)
    assert sorted(map(str, out.keys(True, True))) == sorted(map(str, ["x", ("n", "p")]))
    assert out.tensordicts[0]["x"] is a["x"]
    with pytest.raises(KeyError):
        stack.select("zz")
    assert list(stack.select("zz", "x", strict=False).keys()) == ["x"]


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_lazy_stack_of_tensordicts(dim):
    tds = parts()
    stack = LazyStackedTensorDict.lazy_stack(tds, dim, stack_dim_name="s")
    assert stack.tensordicts == tds and stack.tensordicts is not tds
    assert stack.stack_dim == dim % 2
    assert stack.names[dim % 2] == "s"
    assert torch.equal(stack["a"], torch.stack([td["a"] for td in tds], dim % 2))


def test_lazy_stack_of_tensordicts_ragged_and_bad_dims():
    stack = lazy_stack([TensorDict(batch_size=[2]), TensorDict(batch_size=[3])])
    assert stack.batch_size == torch.Size([2, -1])
    with pytest.raises(RuntimeError, match="batch dims"):
        lazy_stack([TensorDict(batch_size=[2]), TensorDict(batch_size=[2, 1])])
    with pytest.raises(IndexError):
        lazy_stack([TensorDict(batch_size=[2])] * 2, 2)


# -- padded and nested reads ------------------------------------------------------------------
@pytest.mark.parametrize("side", ["left", "right"])
def test_pad_stack_first_dim_matches_f_pad(side):
    values = [torch.randn(n, 3) for n in (1, 4, 2)]
    expected = torch.stack([F.pad(v, [0, 0] + ([0, 4 - len(v)] if side == "right"
                                                else [4 - len(v), 0]), value=-1.0)
                            for v in values])
    assert torch.equal(pad_stack(values, 0, -1.0, side), expected)


def test_pad_stack_other_dims_and_mixed_dtypes():
    values = [torch.ones(1, 2), torch.ones(2, 1)]
    out = pad_stack(values, 0, 0.0)
    assert out.shape == (2, 2, 2) and out.sum() == 4
    assert pad_stack(values, 1).shape == (2, 2, 2)
    mixed = pad_stack([torch.ones(1, dtype=torch.int64), torch.ones(2)], 0)
    assert mixed.dtype == torch.float32 and mixed.tolist() == [[1.0, 0.0], [1.0, 1.0]]


def test_get_as_padded_tensor_of_a_ragged_stack():
    stack = lazy_stack([TensorDict(r=torch.ones(n, 3)) for n in (1, 3)])
    out = stack.get("r", as_padded_tensor=True, padding_value=-1.0, padding_side="left")
    assert out.shape == (2, 3, 3)
    assert (out[0, :2] == -1).all() and (out[0, 2] == 1).all() and (out[1] == 1).all()


def test_get_nestedtensor_defaults_to_strided_get_to_jagged():
    stack = lazy_stack([TensorDict(r=torch.ones(n, 3), n=TensorDict(q=torch.ones(n)))
                        for n in (1, 3)])
    assert stack.get_nestedtensor("r").layout is torch.strided
    assert stack.get_nestedtensor(("n", "q")).layout is torch.strided
    assert stack.get_nestedtensor("r", layout=torch.jagged).layout is torch.jagged
    assert stack.get("r", as_nested_tensor=True).layout is torch.jagged
    assert stack.get_nestedtensor("zz", default=3) == 3
    assert [t.shape for t in stack.get_nestedtensor("r").unbind()] == [(1, 3), (3, 3)]


# -- del and an explicit NO_DEFAULT -----------------------------------------------------------
def exclusive_stack():
    a = TensorDict(x=torch.zeros(2), y=torch.zeros(1),
                   n=TensorDict(p=torch.zeros(1), q=torch.zeros(1)))
    b = TensorDict(x=torch.zeros(2), n=TensorDict(p=torch.zeros(1)))
    return lazy_stack([a, b])


def test_del_an_exclusive_key_deletes_it_where_held():
    stack = exclusive_stack()
    del stack["y"]
    assert [sorted(td.keys()) for td in stack.tensordicts] == [["n", "x"], ["n", "x"]]
    assert stack.del_(("n", "q")) is stack
    assert [sorted(td["n"].keys()) for td in stack.tensordicts] == [["p"], ["p"]]
    del stack["x"]
    assert [sorted(td.keys()) for td in stack.tensordicts] == [["n"], ["n"]]


def test_del_a_key_no_part_holds_raises():
    stack = exclusive_stack()
    before = snapshot(stack)
    with pytest.raises(MissingKeyError):
        del stack["zz"]
    with pytest.raises(KeyError):
        del stack["n", "zz"]
    outer = lazy_stack([stack, stack.clone()])  # "y" is not a key of either lazy part
    with pytest.raises(KeyError):
        del outer["y"]
    assert_same(stack, before)


def test_del_locked_writes_nothing():
    stack = exclusive_stack()
    before = snapshot(stack)
    stack.lock_()
    with pytest.raises(LockedTensorDictError):
        del stack["y"]
    stack.unlock_()
    stack.tensordicts[1].lock_()
    with pytest.raises(LockedTensorDictError):
        del stack["x"]
    assert_same(stack, before)


def test_explicit_no_default_raises_none_default_gives_none():
    stack = exclusive_stack()
    for key in ("y", "zz", ("zz", "q")):
        with pytest.raises(KeyError):
            stack.get(key, NO_DEFAULT)
        with pytest.raises(KeyError):
            stack.get(key, default=NO_DEFAULT)
        assert stack.get(key) is None
        assert stack.get(key, 0) == 0
    assert torch.equal(stack.get("x", NO_DEFAULT), torch.zeros(2, 2))


def _stack_of_two() -> LazyStackedTensorDict:
    parts = [TensorDict(a=torch.rand(4, 3) + 1, n={"b": torch.rand(4) + 1}, batch_size=[4])
             for _ in range(2)]
    return LazyStackedTensorDict.lazy_stack(parts, 0)


@pytest.mark.parametrize("op", [
    lambda td, other: td.minimum_(other), lambda td, other: td.add_(other),
    lambda td, other: td.addcdiv_(other, other, value=0.5),
    lambda td, other: td.lerp_(other, 0.25), lambda td, other: td.mul_(2.0)])
def test_in_place_ops_of_lazy_stacks_write_each_part_as_the_dense_op_does(op):
    stack, other = _stack_of_two(), _stack_of_two()
    expected = [op(part.clone(), theirs) for part, theirs in zip(stack.tensordicts,
                                                                  other.tensordicts)]
    assert op(stack, other) is stack
    for part, want in zip(stack.tensordicts, expected):
        assert (part == want).all()


def test_an_in_place_op_of_a_lazy_stack_that_cannot_fit_writes_nothing():
    stack = _stack_of_two()
    other = stack.clone()
    other.tensordicts[1]["a"] = torch.ones(4, 3, dtype=torch.complex64)  # no cast to float
    before = stack.clone()
    with pytest.raises(RuntimeError):
        stack.add_(other)
    assert (stack == before).all()  # the first part was not written either
    other.tensordicts[1]["a"] = torch.ones(4, 1)  # broadcasts: the general path writes it
    stack.add_(other)
    torch.testing.assert_close(stack.tensordicts[1]["a"], before.tensordicts[1]["a"] + 1)
    assert not stack.is_contiguous() and stack.contiguous().is_contiguous()


def test_pieces_along_the_stack_dim_are_stacks_of_the_parts_with_the_dim_name():
    parts = [TensorDict(a=torch.full((4,), float(i)), batch_size=[4], names=["x"])
             for i in range(5)]
    stack = LazyStackedTensorDict.lazy_stack(parts, 0, stack_dim_name="s")
    for pieces in (stack.split(2), stack.tensor_split(3), stack.chunk(2)):
        runs = [piece.tensordicts for piece in pieces]
        assert [part for run in runs for part in run] == parts  # the parts themselves, in order
        assert all(piece.names == ["s", "x"] for piece in pieces)
    assert [len(p.tensordicts) for p in stack.tensor_split(3)] == [2, 2, 1]  # as torch
    assert stack[1:3].names == ["s", "x"] and stack[1:3].tensordicts == parts[1:3]
    stack[2] = TensorDict(a=torch.full((4,), 9.0), batch_size=[4])  # one part, written whole
    assert parts[2]["a"].tolist() == [9.0] * 4
    with pytest.raises(RuntimeError):
        stack[2] = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert parts[2]["a"].tolist() == [9.0] * 4


def test_filter_empty_of_a_lazy_stack_drops_the_empty_nodes_only():
    parts = [TensorDict(a=torch.zeros(2), e={}, n={"b": torch.zeros(2)}, batch_size=[2])
             for _ in range(2)]
    stack = LazyStackedTensorDict.lazy_stack(parts, 0)
    assert stack.filter_empty_() is stack
    assert set(stack.keys()) == {"a", "n"} and all(set(p.keys()) == {"a", "n"} for p in parts)


def test_filter_empty_of_a_lazy_stack_keeps_a_node_that_one_part_fills():
    # part by part, as upstream: the sub-TensorDict empty in the second part only keeps
    # its leaf in the first (a stacked check saw no common leaf and dropped it from both)
    first = TensorDict(a=torch.zeros(()), e={}, s={"y": torch.ones(())})
    second = TensorDict(a=torch.zeros(()), e={}, s={})
    LazyStackedTensorDict(first, second).filter_empty_()
    assert set(first.keys(True)) == {"a", "s", ("s", "y")} and first["s", "y"].item() == 1.0
    assert set(second.keys(True)) == {"a"}


# -- writing one whole part ------------------------------------------------------------------------
def nested_parts(n=3):
    return [TensorDict(a=torch.full((4, 2), float(i)), n={"b": torch.full((4,), float(i))},
                       batch_size=[4]) for i in range(n)]


def test_update_at_and_set_at_of_one_part_write_that_part_only():
    stack = lazy_stack(nested_parts())
    source = TensorDict(a=torch.full((4, 2), 7.0), n={"b": torch.full((4,), 8.0)}, batch_size=[4])
    assert stack.update_at_(source, -2) is stack
    assert (stack.tensordicts[1]["a"] == 7).all() and (stack.tensordicts[1]["n", "b"] == 8).all()
    assert (stack.tensordicts[0]["a"] == 0).all() and (stack.tensordicts[2]["a"] == 2).all()
    stack.update_at_(TensorDict(a=torch.full((2,), 5.0)), 0)  # broadcast over the part's rows
    assert (stack.tensordicts[0]["a"] == 5).all() and (stack.tensordicts[0]["n", "b"] == 0).all()
    assert stack.set_at_("a", torch.tensor([1.0, 2.0]), 2) is stack
    assert stack.tensordicts[2]["a"].tolist() == [[1.0, 2.0]] * 4
    assert stack.set_at_(("n", "b"), torch.full((4,), 3.0), 2)["n", "b"][2].tolist() == [3.0] * 4


def test_a_write_of_one_part_that_does_not_fit_writes_nothing():
    stack = lazy_stack(nested_parts())
    before = snapshot(stack)
    with pytest.raises(MissingKeyError, match=r"\('n', 'zz'\)"):
        stack.update_at_(TensorDict(a=torch.ones(4, 2), n={"zz": torch.ones(4)}, batch_size=[4]), 1)
    with pytest.raises(MissingKeyError, match=r"\('m', 'c'\)"):
        stack.update_at_(TensorDict(a=torch.ones(4, 2), m={"c": torch.ones(4)}, batch_size=[4]), 1)
    with pytest.raises(RuntimeError, match=r"shape \[3\] into the entry 'a' of shape \[4, 2\]"):
        stack.set_at_("a", torch.ones(3), 1)
    with pytest.raises(RuntimeError, match=r"\[4, 3\] into the entry 'a' of shape \[4, 2\]"):
        stack.update_at_(TensorDict(a=torch.ones(4, 3), n={"b": torch.ones(4)}, batch_size=[4]), 1)
    with pytest.raises(MissingKeyError, match='"m" not found'):  # even with nothing below
        stack.update_at_(TensorDict(a=torch.ones(4, 2), m={}, batch_size=[4]), 1)
    assert_same(stack, before)


def test_a_part_write_of_a_number_or_a_leaf_requiring_grad():
    stack = lazy_stack(nested_parts())
    stack[1:] = 0  # numbers are written into each part whole
    assert (stack.tensordicts[2]["a"] == 0).all() and (stack.tensordicts[0]["a"] == 0).all()
    weight = torch.ones(4, 2, requires_grad=True)
    stack.update_at_(TensorDict(a=weight * 2, n={"b": torch.ones(4)}, batch_size=[4]), 0)
    stack.tensordicts[0]["a"].sum().backward()  # the copy is recorded by autograd
    assert weight.grad.tolist() == [[2.0, 2.0]] * 4


# -- part by part: repeat, tile, out-of-place binary ops ------------------------------------------
def test_repeat_and_tile_of_a_lazy_stack_repeat_each_part():
    stack = lazy_stack(nested_parts(), 0)
    stack._stack_dim_name = "env"
    dense = stack.contiguous()
    for out, expected in ((stack.repeat(1, 3), dense.repeat(1, 3)),
                          (stack.tile(2), dense.tile(2)),
                          (stack.repeat(2, 1), dense.repeat(2, 1))):  # along the stack dim
        assert isinstance(out, LazyStackedTensorDict) and out.batch_size == expected.batch_size
        assert (out == expected).all()
    out = stack.repeat(1, 3)
    assert out.names == ["env", None] and out.tensordicts[0].batch_size == (12,)
    assert stack.lock_().repeat(1, 2).is_locked and not stack.tile(2).is_locked
    assert stack.repeat(1, 0).batch_size == (3, 0)


def test_out_of_place_pointwise_ops_of_lazy_stacks_are_lazy_stacks_of_the_parts_results():
    stack = lazy_stack(nested_parts(), 0)
    stack._stack_dim_name = "env"
    dense = stack.contiguous()
    for out, expected in ((stack + stack, dense + dense), (stack * 2.0, dense * 2.0),
                          (stack.logical_and(stack), dense.logical_and(dense)),
                          (stack.mod(2), dense.mod(2)),
                          (stack.addcmul(stack, stack, value=2), dense.addcmul(dense, dense,
                                                                               value=2)),
                          (stack.lerp(stack * 3, 0.5), dense.lerp(dense * 3, 0.5))):
        assert isinstance(out, LazyStackedTensorDict) and out.names == ["env", None]
        assert all(a is not b for a, b in zip(out.tensordicts, stack.tensordicts))
        assert (out == expected).all()
    ragged = lazy_stack([TensorDict(a=torch.ones(2)), TensorDict(a=torch.ones(3))])
    assert (ragged + ragged).tensordicts[1]["a"].tolist() == [2.0] * 3
    inner = lazy_stack(nested_parts(), 1)  # stacked along dim 1 both: part by part too
    assert ((stack.transpose(0, 1) + inner) == (dense.transpose(0, 1) * 2)).all()
    mixed = stack + dense  # a dense operand: the general path, the same values
    assert isinstance(mixed, LazyStackedTensorDict) and (mixed == dense * 2).all()


def test_update_of_a_lazy_stack_from_a_dict_gives_each_part_its_slice():
    stack = lazy_stack(nested_parts(), 0)
    full = torch.arange(24.0).view(3, 4, 2)
    out = stack.replace({"a": full, "n": {"b": torch.zeros(3, 4)}})
    assert [torch.equal(td["a"], full[i]) for td, i in zip(out.tensordicts, range(3))] == [True] * 3
    assert out.tensordicts[1]["a"].data_ptr() == full[1].data_ptr()  # views, no copy
    assert (out["n", "b"] == 0).all() and (stack["n", "b"][1] == 1).all()
    with pytest.raises(RuntimeError, match="'a'"):
        stack.update({"a": torch.zeros(2, 4, 2)})


def part_leaves(stack):
    """The leaves the parts of a (nested) lazy stack hold."""
    if isinstance(stack, LazyStackedTensorDict):
        return [x for part in stack.tensordicts for x in part_leaves(part)]
    return list(stack.values(True, True))


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_clone_of_a_stack_of_dense_parts_copies_every_leaf_in_one_call(stack_dim, monkeypatch):
    inner = lazy_stack([TensorDict(x=torch.full((4,), float(i))) for i in range(2)])
    pieces = [TensorDict({"a": torch.full((4, 2), float(i)), "n": {"b": torch.ones(4)}}, [4])
              for i in range(3)]
    stack = LazyStackedTensorDict(*pieces, stack_dim=stack_dim)
    stack.names = ["s", "t"] if stack_dim == 0 else ["t", "s"]
    nested = lazy_stack([stack, stack.clone()])  # a stack of stacks: one call too
    calls = []
    monkeypatch.setattr("tensordict._pointwise._clone_all",
                        lambda xs: calls.append(len(xs)) or [x.clone() for x in xs])
    for source, leaves in ((stack, 6), (nested, 12)):
        out = source.clone()
        assert calls.pop() == leaves
        assert type(out) is type(source) and out.batch_size == source.batch_size
        assert out.stack_dim == source.stack_dim and out.names == source.names
        assert (out == source).all()
        mine, theirs = part_leaves(out), part_leaves(source)
        assert len(mine) == leaves and all(x.data_ptr() != y.data_ptr()
                                           for x, y in zip(mine, theirs))
    # a part that is not dense (a lazy stack entry) takes the general path
    mixed = lazy_stack([TensorDict(a=torch.zeros(2), s=inner[:2]) for _ in range(2)])
    assert (mixed.clone() == mixed).all() and not calls
