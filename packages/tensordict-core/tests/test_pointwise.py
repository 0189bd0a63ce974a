"""Pointwise math: every op compared with the same op on each leaf."""

import operator

import pytest
import torch

from tensordict import NonTensorStack, TensorDict
from tensordict._pointwise import BINARY, PREDICATES, UNARY


def make():
    return TensorDict(
        a=torch.rand(2, 3) + 0.5,
        nested=TensorDict(c=torch.rand(2, 3, 4, 2) + 0.5, batch_size=[2, 3, 4]),
        s="text",
        tags=NonTensorStack.from_list([["a", "b", "c"], ["d", "e", "f"]]),
        batch_size=[2, 3],
        names=["x", "y"],
    )


LEAVES = ["a", ("nested", "c")]


def check(result, td, fn):
    for key in LEAVES:
        torch.testing.assert_close(result[key], fn(td[key]), equal_nan=True)
    assert result["s"] == "text"
    assert result["tags"] == td["tags"]
    assert result.batch_size == td.batch_size and result.names == td.names


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    td = make()
    check(getattr(td, name)(), td, getattr(torch, name))
    check(getattr(torch, name)(td), td, getattr(torch, name))
    expected = {key: getattr(torch, name)(td[key]) for key in LEAVES}
    leaf = td["a"]
    assert getattr(td, name + "_")() is td
    assert td["a"] is leaf
    for key in LEAVES:
        torch.testing.assert_close(td[key], expected[key], equal_nan=True)


@pytest.mark.parametrize("name", PREDICATES)
def test_predicates(name):
    td = make()
    td["a"][0, 0] = float("nan")
    out = getattr(td, name)()
    check(out, td, getattr(torch, name))


FLOAT_BINARY = [n for n in BINARY if not n.startswith(("bitwise", "logical"))]


@pytest.mark.parametrize("name", FLOAT_BINARY)
@pytest.mark.parametrize("operand", ["number", "tensor", "td"])
def test_binary(name, operand):
    td = make()
    fn = BINARY[name][0]
    other = {"number": 2.0, "tensor": torch.rand(1) + 0.5, "td": td.apply(lambda x: x * 0 + 2)}
    other = other[operand]
    out = getattr(td, name)(other)
    for key in LEAVES:
        theirs = other[key] if operand == "td" else torch.as_tensor(other)
        torch.testing.assert_close(out[key], fn(td[key], theirs))
    assert out["s"] == "text"
    if name in ("rsub",):
        return
    clone = td.clone()
    leaf = clone["a"]
    assert getattr(clone, name + "_")(other) is clone
    assert clone["a"] is leaf
    torch.testing.assert_close(clone["a"], out["a"])


@pytest.mark.parametrize("name", ["bitwise_and", "bitwise_or", "bitwise_xor", "logical_and",
                                  "logical_or", "logical_xor"])
def test_bitwise_logical(name):
    td = TensorDict(a=torch.tensor([1, 2, 3]), n={"b": torch.tensor([0, 5, 6])}, batch_size=[3])
    out = getattr(td, name)(td + 1)
    for key in ["a", ("n", "b")]:
        torch.testing.assert_close(out[key], getattr(torch, name)(td[key], td[key] + 1))


DUNDERS = [
    (operator.add, 2), (operator.sub, 2), (operator.mul, 3), (operator.truediv, 2),
    (operator.floordiv, 2), (operator.mod, 2), (operator.pow, 2),
]


@pytest.mark.parametrize("op,value", DUNDERS)
def test_operators_and_reflected(op, value):
    td = make()
    check(op(td, value), td, lambda x: op(x, value))
    check(op(value, td), td, lambda x: op(value, x))
    other = td.apply(lambda x: x + 1)
    out = op(td, other)
    for key in LEAVES:
        torch.testing.assert_close(out[key], op(td[key], other[key]))


def test_inplace_operators_write_into_leaves():
    td = make()
    a = td["a"]
    expected = a * 2 + 1
    td *= 2
    td += 1
    assert td["a"] is a
    torch.testing.assert_close(a, expected)
    td -= td.clone()
    assert (a == 0).all()
    td /= 2
    td **= 1


def test_unary_dunders():
    td = make()
    check(-td, td, torch.neg)
    check(abs(-td), td, lambda x: x)
    bools = TensorDict(a=torch.tensor([True, False]), batch_size=[2])
    assert (~bools)["a"].tolist() == [False, True]
    assert (bools & bools)["a"].tolist() == [True, False]
    assert (bools | ~bools)["a"].tolist() == [True, True]
    assert (bools ^ bools)["a"].tolist() == [False, False]


def test_tensor_operand_broadcasts_against_leaves_without_batch_check():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    out = td + torch.arange(3)
    assert out["a"].tolist() == [[0, 1, 2], [0, 1, 2]]


def test_mismatched_keys_and_default():
    td = TensorDict(a=torch.ones(2), b=torch.ones(2))
    other = TensorDict(a=torch.ones(2))
    with pytest.raises(KeyError, match="only in the first"):
        td + other
    out = td.add(other, default=torch.zeros(()))
    assert out["b"].tolist() == [1.0, 1.0] and out["a"].tolist() == [2.0, 2.0]


def test_failed_op_names_the_key():
    td = TensorDict(a=torch.ones(2), n={"b": torch.ones(2, 3)})
    with pytest.raises(RuntimeError, match=r"'n', 'b'"):
        td + torch.ones(2)


def test_fill_zero_copy():
    td = make()
    td.fill_("a", 3.0)
    assert (td["a"] == 3).all()
    td.fill_("nested", 1.0)
    assert (td["nested", "c"] == 1).all()
    with pytest.raises(KeyError):
        td.fill_("missing", 1.0)
    leaf = td["a"]
    td.zero_()
    assert td["a"] is leaf and (leaf == 0).all() and (td["nested", "c"] == 0).all()
    source = make()
    td.copy_(source)
    assert td["a"] is leaf
    torch.testing.assert_close(td["nested", "c"], source["nested", "c"])


def test_clamp_lerp_addcmul_addcdiv():
    td = make()
    other = td.apply(lambda x: x * 3)
    check(td.clamp(0.7, 1.0), td, lambda x: x.clamp(0.7, 1.0))
    check(td.clamp(max=1.0), td, lambda x: x.clamp(max=1.0))
    check(torch.clamp(td, min=0.7), td, lambda x: x.clamp(min=0.7))
    check(td.clamp_min(0.7), td, lambda x: x.clamp_min(0.7))
    check(td.maximum(other), td, lambda x: x * 3)
    check(td.minimum(other), td, lambda x: x)
    check(td.lerp(other, 0.5), td, lambda x: x * 2)
    check(torch.lerp(td, other, 0.5), td, lambda x: x * 2)
    check(td.addcmul(other, other, value=2), td, lambda x: x + 2 * 9 * x * x)
    check(td.addcdiv(other, other, value=2), td, lambda x: x + 2)
    check(td.lerp(torch.ones(1), 0.5), td, lambda x: torch.lerp(x, torch.ones(1), 0.5))
    clone = td.clone()
    clone.lerp_(other, 1.0)
    check(clone, td, lambda x: x * 3)
    clone.addcmul_(other, td, value=0)
    check(clone, td, lambda x: x * 3)


def test_zero_dim_and_empty():
    td = TensorDict(a=torch.ones(3))
    assert (td + 1)["a"].tolist() == [2.0] * 3
    empty = TensorDict(batch_size=[2])
    assert (empty + 1).batch_size == torch.Size([2])
    assert empty.exp().is_empty()


def test_torch_functions_pointwise():
    td = make()
    check(torch.add(td, 1), td, lambda x: x + 1)
    check(torch.add(1, td), td, lambda x: x + 1)
    check(torch.mul(td, td), td, lambda x: x * x)
    check(torch.sub(td, td, alpha=2), td, lambda x: -x)
    check(torch.pow(td, 2), td, lambda x: x ** 2)


@pytest.mark.parametrize("op", [
    lambda td: td.div_(2),
    lambda td: td.add_(TensorDict(a=torch.ones(2), n={"b": torch.ones(3)})),
    lambda td: td.exp_(),
    lambda td: td.mul_(torch.ones(5)),
])
def test_failed_inplace_op_changes_nothing(op):
    td = TensorDict(a=torch.ones(2), n={"b": torch.ones(2, dtype=torch.int64)})
    before = td.clone()
    with pytest.raises(RuntimeError, match=r"'a'|'b'"):
        op(td)
    assert (td == before).all()


@pytest.mark.parametrize("name, reference", [
    ("mod", torch.remainder), ("rsub", lambda x, y: y - x), ("floor_divide", torch.floor_divide),
    ("logical_xor", torch.logical_xor)])
def test_ops_without_a_foreach_kernel_match_leafwise_and_name_a_failing_key(name, reference):
    td = TensorDict(a=torch.tensor([1.0, 2.0]), n={"b": torch.tensor([3.0, 4.0])}, batch_size=[2])
    operands = [td + 1] if name == "logical_xor" else [2.0, td + 1]  # (torch takes no number)
    for other in operands:
        out = getattr(td, name)(other)
        for key in ["a", ("n", "b")]:
            operand = other if isinstance(other, float) else other[key]
            torch.testing.assert_close(out[key], reference(td[key], operand))
    bad = TensorDict(a=torch.ones(2), n={"b": torch.ones(2, 3)}, batch_size=[2])
    with pytest.raises(RuntimeError, match=r"\('n', 'b'\)|'b'"):
        getattr(td, name)(bad)
