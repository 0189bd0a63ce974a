"""``LazyStackedTensorDict.get(key, as_list/as_padded_tensor/as_nested_tensor=True)`` on
flat lazy stacks and lazy stacks of lazy stacks (ragged leaves), as upstream 0.15.3 gives
them: nested lists per lazy part, padded along new first dims, one nested level only."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, errors, lazy_stack
from tensordict._collection import NO_DEFAULT


def _arange(shape, base):
    return torch.arange(torch.Size(shape).numel(), dtype=torch.float32).reshape(shape) + base


def _inner(bases, shapes, dim=0, batch=()):
    return lazy_stack([TensorDict(x=_arange(s, b), sub=TensorDict(y=_arange(s, b + 100),
                                                                   batch_size=batch),
                                  batch_size=batch) for b, s in zip(bases, shapes)], dim)


def _lists(value):
    """Nested lists of tensors as nested lists of Python values (types checked on the way)."""
    if value.__class__ is list:
        return [_lists(v) for v in value]
    assert type(value) is torch.Tensor and not value.is_nested
    return value.tolist()


@pytest.fixture
def ragged():  # (c): a lazy stack of lazy stacks whose leaves differ in shape
    return lazy_stack([_inner([0, 10], [(2,), (3,)]), _inner([20, 30], [(1,), (4,)])])


NESTED_MSG = "Cannot build a nested tensor from entries that are nested tensors themselves"


def test_flat_stack():  # (a)
    a, b = TensorDict(x=_arange((2,), 0)), TensorDict(x=_arange((3,), 10))
    stack = lazy_stack([a, b])
    values = stack.get("x", as_list=True)
    assert values.__class__ is list and values[0] is a.get("x") and values[1] is b.get("x")
    padded = stack.get("x", as_padded_tensor=True)
    assert padded.tolist() == [[0.0, 1.0, 0.0], [10.0, 11.0, 12.0]]
    nested = stack.get("x", as_nested_tensor=True)
    assert nested.is_nested and nested.layout == torch.jagged
    assert [t.tolist() for t in nested.unbind(0)] == [[0.0, 1.0], [10.0, 11.0, 12.0]]
    strided = stack.get("x", as_nested_tensor=True, layout=torch.strided)
    assert strided.layout == torch.strided


def test_lazy_of_lazy_equal_shapes():  # (b): lists, not the stacked inner tensors
    stack = lazy_stack([_inner([0, 10], [(2,), (2,)]), _inner([20, 30], [(2,), (2,)])])
    assert _lists(stack.get("x", as_list=True)) == [[[0.0, 1.0], [10.0, 11.0]],
                                                    [[20.0, 21.0], [30.0, 31.0]]]
    padded = stack.get("x", as_padded_tensor=True)
    assert padded.shape == (2, 2, 2) and torch.equal(padded, stack.get("x"))
    with pytest.raises(ValueError, match=NESTED_MSG):
        stack.get("x", as_nested_tensor=True)


def test_lazy_of_lazy_ragged(ragged):  # (c)
    values = ragged.get("x", as_list=True)
    assert _lists(values) == [[[0.0, 1.0], [10.0, 11.0, 12.0]], [[20.0], [30.0, 31.0, 32.0, 33.0]]]
    assert values[1][0] is ragged.tensordicts[1].tensordicts[0].get("x")  # no copy
    padded = ragged.get("x", as_padded_tensor=True)
    assert padded.dtype == torch.float32 and padded.tolist() == [
        [[0.0, 1.0, 0.0, 0.0], [10.0, 11.0, 12.0, 0.0]],
        [[20.0, 0.0, 0.0, 0.0], [30.0, 31.0, 32.0, 33.0]]]
    left = ragged.get("x", as_padded_tensor=True, padding_value=-1.0, padding_side="left")
    assert left.tolist() == [[[-1.0, -1.0, 0.0, 1.0], [-1.0, 10.0, 11.0, 12.0]],
                             [[-1.0, -1.0, -1.0, 20.0], [30.0, 31.0, 32.0, 33.0]]]
    for layout in (torch.jagged, torch.strided):
        with pytest.raises(ValueError, match=NESTED_MSG):
            ragged.get("x", as_nested_tensor=True, layout=layout)


def test_lazy_of_lazy_multi_dim_leaves_and_three_parts():
    stack = lazy_stack([_inner([0, 10], [(2, 2), (3, 2)]), _inner([20, 30], [(1, 2), (4, 2)])])
    assert [[v.shape for v in part] for part in stack.get("x", as_list=True)] == [
        [(2, 2), (3, 2)], [(1, 2), (4, 2)]]
    padded = stack.get("x", as_padded_tensor=True)
    assert padded.shape == (2, 2, 4, 2)
    assert padded[1, 0].tolist() == [[20.0, 21.0]] + [[0.0, 0.0]] * 3
    three = lazy_stack([_inner([0, 10, 40], [(2,), (3,), (1,)]),
                        _inner([20, 30, 50], [(1,), (4,), (2,)])])
    assert three.get("x", as_padded_tensor=True).tolist() == [
        [[0.0, 1.0, 0.0, 0.0], [10.0, 11.0, 12.0, 0.0], [40.0, 0.0, 0.0, 0.0]],
        [[20.0, 0.0, 0.0, 0.0], [30.0, 31.0, 32.0, 33.0], [50.0, 51.0, 0.0, 0.0]]]


def test_outer_parts_of_different_lengths():  # batch size [2, -1]
    stack = lazy_stack([_inner([0, 10], [(2,), (3,)]), _inner([20, 30, 40], [(1,), (4,), (1,)])])
    assert stack.batch_size == (2, -1)
    assert [len(part) for part in stack.get("x", as_list=True)] == [2, 3]
    assert stack.get("x", as_padded_tensor=True).tolist() == [
        [[0.0, 1.0, 0.0, 0.0], [10.0, 11.0, 12.0, 0.0], [0.0] * 4],
        [[20.0, 0.0, 0.0, 0.0], [30.0, 31.0, 32.0, 33.0], [40.0, 0.0, 0.0, 0.0]]]
    left = stack.get("x", as_padded_tensor=True, padding_value=-1.0, padding_side="left")
    assert left[0].tolist() == [[-1.0] * 4, [-1.0, -1.0, 0.0, 1.0], [-1.0, 10.0, 11.0, 12.0]]


def test_three_levels(ragged):
    stack = lazy_stack([ragged, ragged.clone()])
    values = stack.get("x", as_list=True)
    assert _lists(values) == [_lists(ragged.get("x", as_list=True))] * 2
    assert stack.get("x", as_padded_tensor=True).shape == (2, 2, 2, 4)


def test_parts_lazy_and_dense():
    lazy = _inner([0, 10], [(2,), (3,)])
    dense = TensorDict(x=_arange((2, 5), 20), batch_size=[2])
    stack = lazy_stack([lazy, dense])
    values = stack.get("x", as_list=True)
    assert values[0].__class__ is list and values[1] is dense.get("x")
    assert stack.get("x", as_padded_tensor=True).tolist() == [
        [[0.0, 1.0, 0.0, 0.0, 0.0], [10.0, 11.0, 12.0, 0.0, 0.0]],
        [[20.0, 21.0, 22.0, 23.0, 24.0], [25.0, 26.0, 27.0, 28.0, 29.0]]]
    with pytest.raises(ValueError, match=NESTED_MSG):
        stack.get("x", as_nested_tensor=True)


def test_nested_keys(ragged):  # (d)
    assert _lists(ragged.get(("sub", "y"), as_list=True)) == [
        [[100.0, 101.0], [110.0, 111.0, 112.0]], [[120.0], [130.0, 131.0, 132.0, 133.0]]]
    assert ragged.get(("sub", "y"), as_padded_tensor=True)[1].tolist() == [
        [120.0, 0.0, 0.0, 0.0], [130.0, 131.0, 132.0, 133.0]]
    with pytest.raises(ValueError, match=NESTED_MSG):
        ragged.get(("sub", "y"), as_nested_tensor=True)
    sub = ragged.get("sub", as_list=True)  # a sub-TensorDict: stacked lazily, for every flag
    assert type(sub) is LazyStackedTensorDict and sub.batch_size == (2, 2)
    assert type(ragged.get("sub", as_padded_tensor=True)) is LazyStackedTensorDict


def test_nested_key_through_dense_parts_holding_lazy_stacks():
    inner = _inner([0, 10], [(2,), (3,)])
    stack = lazy_stack([TensorDict(s=inner, batch_size=[2]),
                        TensorDict(s=inner.clone(), batch_size=[2])])
    assert _lists(stack.get(("s", "x"), as_list=True)) == [[[0.0, 1.0], [10.0, 11.0, 12.0]]] * 2
    assert stack.get(("s", "x"), as_padded_tensor=True).tolist() == [
        [[0.0, 1.0, 0.0], [10.0, 11.0, 12.0]]] * 2


@pytest.mark.parametrize("outer_dim", [0, 1])
@pytest.mark.parametrize("inner_dim", [0, 1])
def test_stack_dims(outer_dim, inner_dim):  # (e): the parts' values, whatever the dims
    def inner(bases, shapes):
        return lazy_stack([TensorDict(x=_arange(s, b), batch_size=[2])
                           for b, s in zip(bases, shapes)], inner_dim)

    stack = lazy_stack([inner([0, 10], [(2, 2), (2, 3)]), inner([20, 30], [(2, 1), (2, 4)])],
                       outer_dim)
    assert _lists(stack.get("x", as_list=True)) == [
        [[[0.0, 1.0], [2.0, 3.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]],
        [[[20.0], [21.0]], [[30.0, 31.0, 32.0, 33.0], [34.0, 35.0, 36.0, 37.0]]]]
    assert stack.get("x", as_padded_tensor=True).tolist() == [
        [[[0.0, 1.0, 0.0, 0.0], [2.0, 3.0, 0.0, 0.0]],
         [[10.0, 11.0, 12.0, 0.0], [13.0, 14.0, 15.0, 0.0]]],
        [[[20.0, 0.0, 0.0, 0.0], [21.0, 0.0, 0.0, 0.0]],
         [[30.0, 31.0, 32.0, 33.0], [34.0, 35.0, 36.0, 37.0]]]]
    equal = lazy_stack([inner([0, 10], [(2, 2)] * 2), inner([20, 30], [(2, 2)] * 2)], outer_dim)
    assert stack.get("x", as_list=True)[0][0].shape == (2, 2)
    assert equal.get("x", as_padded_tensor=True).tolist() == [
        [[[0.0, 1.0], [2.0, 3.0]], [[10.0, 11.0], [12.0, 13.0]]],
        [[[20.0, 21.0], [22.0, 23.0]], [[30.0, 31.0], [32.0, 33.0]]]]
    with pytest.raises(ValueError, match=NESTED_MSG):
        equal.get("x", as_nested_tensor=True)


def test_flat_stack_along_dim_1_pads_and_nests_along_dim_0():
    stack = lazy_stack([TensorDict(x=_arange((2, 2), 0), batch_size=[2]),
                        TensorDict(x=_arange((2, 3), 10), batch_size=[2])], 1)
    assert stack.get("x", as_padded_tensor=True).tolist() == [
        [[0.0, 1.0, 0.0], [2.0, 3.0, 0.0]], [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]]
    nested = stack.get("x", as_nested_tensor=True)
    assert [t.tolist() for t in nested.unbind(0)] == [[[0.0, 1.0], [2.0, 3.0]],
                                                      [[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]]]


def test_non_tensor_entries():  # (f)
    flat = lazy_stack([TensorDict(s="a"), TensorDict(s="b")])
    for flag in ("as_list", "as_padded_tensor", "as_nested_tensor"):
        out = flat.get("s", **{flag: True})
        assert type(out) is NonTensorStack and out.tolist() == ["a", "b"]
    stack = lazy_stack([lazy_stack([TensorDict(s="a", x=torch.zeros(1)),
                                    TensorDict(s="b", x=torch.zeros(2))]),
                        lazy_stack([TensorDict(s="c", x=torch.zeros(1)),
                                    TensorDict(s="d", x=torch.zeros(3))])])
    for flag in ("as_list", "as_padded_tensor", "as_nested_tensor"):
        out = stack.get("s", **{flag: True})
        assert type(out) is NonTensorStack and out.batch_size == (2, 2)
        assert out.tolist() == [["a", "b"], ["c", "d"]]


def test_missing_keys_give_the_default(ragged):
    flat = lazy_stack([TensorDict(x=torch.zeros(2), z=torch.zeros(1)), TensorDict(x=torch.ones(3))])
    for flag in ("as_list", "as_padded_tensor", "as_nested_tensor"):
        assert flat.get("nope", **{flag: True}) is None
        assert flat.get("z", **{flag: True}) is None  # missing from one part
        assert flat.get(("nope", "x"), 7, **{flag: True}) == 7
        assert ragged.get("nope", **{flag: True}) is None
        assert ragged.get(("nope", "y"), default=3, **{flag: True}) == 3
    with pytest.raises(KeyError, match="nope"):
        flat.get("nope", NO_DEFAULT, as_list=True)  # given explicitly: raises


def test_key_through_a_leaf(ragged):
    with pytest.raises(errors.KeyThroughLeafError, match="'x' is a list, not a tensordict"):
        ragged.get(("x", "y"), as_list=True)
    with pytest.raises(errors.KeyThroughLeafError, match="'x' is a Tensor, not a tensordict"):
        ragged.get(("x", "y"), as_padded_tensor=True)
    flat = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(3))])
    with pytest.raises(errors.KeyThroughLeafError, match="'x' is a NestedTensor"):
        flat.get(("x", "y"), as_nested_tensor=True)


def test_flag_precedence(ragged):
    flat = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(3))])
    assert flat.get("x", as_list=True, as_padded_tensor=True).__class__ is list
    assert flat.get("x", as_list=True, as_nested_tensor=True).__class__ is list
    assert flat.get("x", as_padded_tensor=True, as_nested_tensor=True).is_nested
    assert ragged.get("x", as_list=True, as_padded_tensor=True)[0].__class__ is list


def test_padding_dtype_is_the_first_values():
    ints = lazy_stack([TensorDict(x=torch.tensor([1, 2])), TensorDict(x=torch.tensor([3]))])
    mixed = lazy_stack([TensorDict(x=torch.tensor([3.5])), TensorDict(x=torch.tensor([4, 5, 6]))])
    out = lazy_stack([ints, mixed]).get("x", as_padded_tensor=True)
    assert out.dtype == torch.int64 and out.tolist() == [[[1, 2, 0], [3, 0, 0]],
                                                         [[3, 0, 0], [4, 5, 6]]]
    flat = lazy_stack([TensorDict(x=torch.ones(1, dtype=torch.int64)),
                       TensorDict(x=torch.tensor([1.5, 2.5]))])
    out = flat.get("x", as_padded_tensor=True)
    assert out.dtype == torch.int64 and out.tolist() == [[1, 0], [1, 2]]


def test_padding_errors(ragged):
    with pytest.raises(RuntimeError, match="padding_side to be one of left or right"):
        ragged.get("x", as_padded_tensor=True, padding_side="middle")
    scalars = lazy_stack([lazy_stack([TensorDict(x=torch.tensor(1.0))] * 2)] * 2)
    assert _lists(scalars.get("x", as_list=True)) == [[1.0, 1.0], [1.0, 1.0]]
    with pytest.raises(RuntimeError, match="'x'"):
        scalars.get("x", as_padded_tensor=True)
    with pytest.raises(RuntimeError):
        scalars.get("x", as_nested_tensor=True)
    dims = lazy_stack([_inner([0, 10], [(2,), (3, 2)]), _inner([20, 30], [(1,), (4,)])])
    assert [[v.shape for v in p] for p in dims.get("x", as_list=True)] == [[(2,), (3, 2)],
                                                                          [(1,), (4,)]]
    with pytest.raises(RuntimeError):
        dims.get("x", as_padded_tensor=True)


def test_a_tensordict_passes_the_options_to_a_lazy_stack_on_the_path():
    # as upstream: TensorDict.get reads a ragged entry of a lazy stack it holds
    sub = lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(3))])
    td = TensorDict(mid=TensorDict(sub=sub, batch_size=[2]), batch_size=[2])
    listed = td.get(("mid", "sub", "x"), as_list=True)
    assert [t.tolist() for t in listed] == [[0.0, 0.0], [1.0, 1.0, 1.0]]
    assert listed[1] is sub.tensordicts[1]["x"]
    assert td.get(("mid", "sub", "x"), as_padded_tensor=True).tolist() == [
        [0.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    assert td.get(("mid", "sub", "x"), as_nested_tensor=True).is_nested
    assert td.get(("mid", "sub", "zz"), as_list=True) is None
    assert td.get(("mid", "sub", "zz"), 5, as_list=True) == 5
    with pytest.raises(errors.StackMismatchError):
        td.get(("mid", "sub", "x"))
    # without a lazy stack on the way the options change nothing
    dense = TensorDict(a=torch.zeros(2), n=TensorDict(b=torch.ones(2), batch_size=[2]),
                       batch_size=[2])
    assert dense.get(("n", "b"), as_list=True) is dense["n", "b"]
