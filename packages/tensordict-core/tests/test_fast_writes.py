"""The fast paths of indexed writes (``td[i] = value``), leaf-wise arithmetic and write
plans: each gives what the general path gives, and falls back to it (or raises with
the TensorDict unchanged) on the cases it does not take."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict._plan import WritePlan


def buffer(n: int = 5) -> TensorDict:
    return TensorDict(a=torch.zeros(n, 3), b=torch.zeros(n, dtype=torch.int64),
                      n=TensorDict(c=torch.zeros(n, 2, 2), batch_size=[n, 2]), batch_size=[n])


def step(scale: float = 1.0) -> TensorDict:
    return TensorDict(a=torch.full((3,), scale), b=torch.tensor(7),
                      n=TensorDict(c=torch.full((2, 2), scale), batch_size=[2]), batch_size=[])


def by_hand(td: TensorDict, index, value: TensorDict) -> TensorDict:
    """``td`` with ``value`` written at ``index`` leaf by leaf."""
    out = td.clone()
    for key in value.keys(True, True):
        out.get(key)[index] = value.get(key)
    return out


def assert_same(actual: TensorDict, expected: TensorDict) -> None:
    assert set(actual.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        assert actual.get(key).dtype == expected.get(key).dtype, key
        assert torch.equal(actual.get(key), expected.get(key)), key


# -- td[int or slice] = TensorDict ---------------------------------------------------------
@pytest.mark.parametrize("index", [0, 3, -1, -5])
def test_int_write_matches_leaf_by_leaf(index):
    td, value = buffer(), step(2.0)
    expected = by_hand(td, index, value)
    td[index] = value
    assert_same(td, expected)


@pytest.mark.parametrize("index", [slice(1, 3), slice(None), slice(-2, None), slice(4, 1)])
def test_slice_write_matches_leaf_by_leaf(index):
    td = buffer()
    value = buffer()[index].apply(lambda x: x + 1)
    expected = by_hand(td, index, value)
    td[index] = value
    assert_same(td, expected)


def test_strided_slice_and_tuple_index_take_the_general_path():
    td = buffer()
    value = buffer()[::2].apply(lambda x: x + 1)
    expected = by_hand(td, slice(None, None, 2), value)
    td[::2] = value
    assert_same(td, expected)


def test_write_casts_to_the_target_dtype():
    td = buffer()
    td[1] = TensorDict(a=torch.ones(3, dtype=torch.float64), b=torch.tensor(2.9),
                       n=TensorDict(c=torch.ones(2, 2, dtype=torch.int32), batch_size=[2]))
    assert td["a"].dtype == torch.float32 and td["a"][1].tolist() == [1.0, 1.0, 1.0]
    assert td["b"].dtype == torch.int64 and td["b"][1].item() == 2
    assert td["n", "c"][1].sum().item() == 4.0


def test_out_of_range_int_raises_index_error_unchanged():
    td = buffer()
    before = td.clone()
    with pytest.raises(IndexError):
        td[5] = step()
    with pytest.raises(IndexError):
        td[-6] = step()
    assert_same(td, before)


def test_a_wrong_shape_anywhere_raises_before_any_write():
    td = buffer()
    before = td.clone()
    value = step()
    value["n"] = TensorDict(c=torch.ones(2, 3), batch_size=[2])  # the last leaf is wrong
    with pytest.raises(RuntimeError, match=r"\('n', 'c'\)"):
        td[0] = value
    assert_same(td, before)


def test_value_with_other_keys_takes_the_general_path():
    td = buffer()
    fewer = step().exclude("b")
    td[2] = fewer
    assert td["b"].sum().item() == 0 and td["a"][2].tolist() == [1.0, 1.0, 1.0]
    more = step().set("extra", torch.ones(4))
    td[3] = more
    assert td["extra"].shape == (5, 4) and td["extra"][3].sum().item() == 4
    assert td["extra"][:3].sum().item() == 0


def test_same_keys_at_the_top_but_not_below():
    td = buffer()
    value = step()
    value["n"] = TensorDict(d=torch.ones(2, 2), batch_size=[2])
    td[0] = value
    assert td["n", "d"][0].sum().item() == 4 and td["n", "c"][0].sum().item() == 0


def test_broadcast_values_take_the_general_path():
    td = buffer()
    td[1] = TensorDict(a=torch.ones(1), b=torch.tensor(1),
                       n=TensorDict(c=torch.ones(2, 1), batch_size=[2]))
    assert td["a"][1].tolist() == [1.0, 1.0, 1.0] and td["n", "c"][1].sum().item() == 4
    td[0:2] = step(3.0)  # batch [] written to a slice of batch [2]
    assert td["a"][:2].eq(3.0).all() and td["b"][:2].tolist() == [7, 7]


def test_non_tensor_leaves_take_the_general_path():
    td = buffer()
    td["s"] = "x"
    value = step().set("s", "y")
    td[0] = value
    assert td["a"][0].tolist() == [1.0, 1.0, 1.0]
    assert td[0]["s"] == "y" and td[1]["s"] == "x"


def test_lazy_stacks_as_target_or_value():
    value = torch.stack([step(1.0), step(2.0)], 0)
    assert isinstance(value, TensorDict)
    lazy_value = LazyStackedTensorDict.lazy_stack([step(1.0), step(2.0)], 0)
    td = buffer()
    td[1:3] = lazy_value
    assert_same(td, by_hand(buffer(), slice(1, 3), value))
    lazy = LazyStackedTensorDict.lazy_stack([step() for _ in range(3)], 0)
    lazy[1] = step(5.0)
    assert lazy[1]["a"].eq(5.0).all() and lazy[0]["a"].eq(1.0).all()


def test_source_that_requires_grad_is_recorded_by_autograd():
    td = buffer()
    source = torch.ones(3, requires_grad=True)
    value = step()
    value["a"] = source * 2
    td[1] = value
    td["a"].sum().backward()
    assert source.grad.tolist() == [2.0, 2.0, 2.0]


def test_leaf_target_that_requires_grad_raises_unchanged():
    td = buffer()
    td["a"] = torch.zeros(5, 3, requires_grad=True)
    before = td.detach().clone()
    with pytest.raises(RuntimeError, match="grad"):
        td[0] = step()
    assert_same(td.detach(), before)
    with torch.no_grad():
        td[0] = step()
    assert td["a"][0].tolist() == [1.0, 1.0, 1.0]


def test_expanded_target_raises_unchanged():
    td = buffer()
    td["a"] = torch.zeros(1, 3).expand(5, 3)
    before = td.clone()
    with pytest.raises(RuntimeError, match="share memory"):
        td[0] = step()
    assert_same(td, before)


def test_non_contiguous_target_is_written():
    td = buffer()
    td["a"] = torch.zeros(3, 5).t()
    td[2] = step(4.0)
    assert td["a"][2].tolist() == [4.0, 4.0, 4.0] and td["a"].sum().item() == 12


def test_writing_an_overlapping_slice_of_itself():
    td = buffer()
    td["a"] = torch.arange(15.0).reshape(5, 3)
    expected = td["a"].clone()
    expected[0] = expected[4]
    td[0] = td[4]
    assert torch.equal(td["a"], expected)


# -- td[tensor or mask] = TensorDict -------------------------------------------------------
@pytest.mark.parametrize("index", [torch.tensor([0, 2]), torch.tensor([-1, 1]),
                                   torch.tensor([True, False, False, True, False]),
                                   torch.tensor([], dtype=torch.int64),
                                   torch.zeros(5, dtype=torch.bool)])
def test_tensor_index_write_matches_leaf_by_leaf(index):
    td = buffer()
    rows = int(index.sum()) if index.dtype is torch.bool else len(index)
    value = buffer(rows).apply(lambda x: x + 3)
    expected = by_hand(td, index, value)
    td[index] = value
    assert_same(td, expected)


def test_tensor_index_errors_leave_td_unchanged():
    td = buffer()
    before = td.clone()
    with pytest.raises(IndexError):
        td[torch.tensor([0, 5])] = buffer(2)
    with pytest.raises(IndexError):
        td[torch.tensor([True, False])] = buffer(1)
    with pytest.raises(RuntimeError, match="dtype"):  # index_put_ needs equal dtypes
        td[torch.tensor([0, 1])] = buffer(2).apply(lambda x: x.double())
    bad = buffer(2)
    bad["n"] = TensorDict(c=torch.ones(2, 2, 3), batch_size=[2, 2])
    with pytest.raises(RuntimeError):
        td[torch.tensor([0, 1])] = bad
    assert_same(td, before)


def test_tensor_index_into_a_two_dim_batch():
    td = TensorDict(a=torch.zeros(4, 3, 2), batch_size=[4, 3])
    value = TensorDict(a=torch.ones(2, 3, 2), batch_size=[2, 3])
    td[torch.tensor([3, 0])] = value
    assert td["a"][[0, 3]].eq(1).all() and td["a"][1:3].eq(0).all()


# -- arithmetic ----------------------------------------------------------------------------
def nested(dtype: torch.dtype = torch.float32) -> TensorDict:
    return TensorDict(a=torch.arange(6, dtype=dtype).reshape(2, 3),
                      n=TensorDict(b=torch.ones(2, dtype=dtype), m={"c": torch.ones(2, 4)},
                                   batch_size=[2]),
                      batch_size=[2], names=["x"])


@pytest.mark.parametrize("op", [lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x - 2,
                                lambda x, y: x / 2.0, lambda x, y: x.maximum(y)])
def test_binary_matches_leaf_by_leaf(op):
    td, other = nested(), nested() + 1
    out = op(td, other)
    assert out.batch_size == td.batch_size and out.names == ["x"] and out["n"].names == ["x"]
    for key in td.keys(True, True):
        assert torch.equal(out.get(key), op(td.get(key), other.get(key))), key
    assert not out.is_locked and out.device is None


def test_binary_keys_mismatch_raises_key_error():
    td = nested()
    with pytest.raises(KeyError):
        td + td.exclude(("n", "m", "c"))
    other = td.clone()
    other["n", "extra"] = torch.ones(2)
    with pytest.raises(KeyError):
        td.add_(other)
    assert td.add(td.exclude("a"), default=0)["a"].equal(td["a"])


def test_binary_with_non_tensor_leaves_and_lazy_stacks():
    td = nested().set("s", "text")
    out = td + td
    assert out["s"] == "text" and torch.equal(out["a"], td["a"] * 2)
    lazy = LazyStackedTensorDict.lazy_stack([nested()[0], nested()[1]], 0)
    assert torch.equal((lazy + lazy)["n", "m", "c"], torch.full((2, 4), 2.0))
    assert torch.equal((nested() + lazy)["a"], td["a"] * 2)


def test_binary_with_options_takes_the_general_path():
    td = TensorDict(a=torch.tensor([5.0, 7.0]))
    two = TensorDict(a=torch.tensor([2.0, 2.0]))
    assert td.add(two, alpha=0)["a"].tolist() == [5.0, 7.0]
    assert td.add(two, alpha=2)["a"].tolist() == [9.0, 11.0]
    assert td.div(two, rounding_mode="floor")["a"].tolist() == [2.0, 3.0]


def test_in_place_that_does_not_fit_raises_unchanged():
    ints = nested(torch.int64).exclude(("n", "m"))
    before = ints.clone()
    with pytest.raises(RuntimeError, match="mul"):
        ints.mul_(2.5)
    with pytest.raises(RuntimeError, match="add"):
        ints.add_(ints.float())
    with pytest.raises(RuntimeError, match="exp"):
        ints.exp_()
    assert_same(ints, before)
    ints.mul_(2).add_(ints)
    assert ints["a"].tolist() == [[0, 4, 8], [12, 16, 20]]


def test_in_place_broadcast_operand():
    td = TensorDict(a=torch.ones(2, 3), batch_size=[2])
    td.add_(TensorDict(a=torch.ones(1, 3), batch_size=[1]).expand(2))
    td.mul_(TensorDict(a=torch.tensor([2.0, 1.0, 1.0]).expand(2, 3), batch_size=[2]))
    assert td["a"].tolist() == [[4.0, 2.0, 2.0]] * 2


@pytest.mark.parametrize("lazy", [False, True])
def test_add_and_sub_with_alpha_match_leaf_by_leaf(lazy):
    def make(scale):
        td = TensorDict(x=torch.full((2, 3), scale), n={"i": torch.arange(2) * int(scale)},
                        batch_size=[2])
        return LazyStackedTensorDict(*td.unbind(0)) if lazy else td
    td, other = make(1.0), make(2.0)
    for name in ("add", "sub"):
        for alpha in (2, 3):
            expected = {key: getattr(torch, name)(td[key], other[key], alpha=alpha)
                        for key in td.keys(True, True)}
            out = getattr(td, name)(other, alpha=alpha)
            inplace = getattr(td.clone(), f"{name}_")(other, alpha=alpha)
            for key, value in expected.items():
                assert torch.equal(out[key], value) and torch.equal(inplace[key], value), key
    floats = TensorDict(x=torch.ones(2), y=torch.zeros(2), batch_size=[2])
    floats.add_(floats.clone(), alpha=0.5)  # a float alpha: floating leaves
    assert floats["x"].tolist() == [1.5, 1.5] and floats["y"].tolist() == [0.0, 0.0]


def test_float_alpha_for_an_integral_leaf_raises_unchanged():
    td = TensorDict(x=torch.ones(2), n={"i": torch.arange(2)}, batch_size=[2])
    before = td.clone()
    with pytest.raises(RuntimeError, match="float alpha 0.5 for the integral leaf \\('n', 'i'\\)"):
        td.add_(td.clone(), alpha=0.5)
    assert_same(td, before)


def test_unary_keeps_the_structure():
    td = nested().set("s", "text")
    out = td.exp()
    assert out["s"] == "text" and torch.allclose(out["n", "m", "c"], torch.full((2, 4), 2.7183),
                                                 atol=1e-4)
    dense = nested().abs()
    assert dense.names == ["x"] and torch.equal(dense["a"], nested()["a"])


# -- write plans ---------------------------------------------------------------------------
def test_plan_copies_in_order_with_autograd_and_non_blocking():
    a, b = torch.zeros(2), torch.zeros(3)
    plan = WritePlan()
    plan.copy(a, torch.ones(2), "a")
    plan.copy(b, torch.full((3,), 2.0), "b", non_blocking=True)
    other = WritePlan()
    source = torch.ones(2, requires_grad=True)
    target = torch.zeros(2).clone()
    other.copy(target, source * 3, "c")
    plan.extend(other)
    plan.run()
    assert a.tolist() == [1.0, 1.0] and b.tolist() == [2.0] * 3
    target.sum().backward()
    assert source.grad.tolist() == [3.0, 3.0]


def test_update_in_place_copies_every_leaf_or_none():
    td = nested()
    other = nested() + 1
    td.update_(other)
    assert_same(td, other)
    bad = other.clone()
    bad["n", "m", "c"] = torch.ones(2, 5)
    before = td.clone()
    with pytest.raises(RuntimeError):
        td.update_(bad)
    assert_same(td, before)


def test_copy_checks_every_leaf_before_the_first_copy():
    td = nested()
    td.copy_(nested() * 3)
    assert td["n", "m", "c"].eq(3).all()
    bad = nested()
    bad["n", "m", "c"] = torch.ones(2, 5)
    before = td.clone()
    with pytest.raises(RuntimeError, match="c"):
        td.copy_(bad)
    assert_same(td, before)
    # as upstream, copy_ is update_: entries the source lacks are left as they are
    td.copy_(nested().exclude("a") * 5)
    assert td["a"].eq(before["a"]).all() and td["n", "m", "c"].eq(5).all()


def test_copy_from_leaves_that_require_grad():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    source = torch.ones(2, requires_grad=True)
    td.copy_(TensorDict(a=source * 2, batch_size=[2]))
    td["a"].sum().backward()
    assert source.grad.tolist() == [2.0, 2.0]


def test_fast_copies_bump_version_counters():
    # the one-call copy skips autograd's layer, not the version counter it checks
    weight = torch.ones(2, requires_grad=True)
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    product = weight * td["a"]  # saves td["a"] for backward
    td.copy_(TensorDict(a=torch.ones(2), batch_size=[2]))
    assert td["a"]._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        product.sum().backward()


def _pair(batch: list[int]) -> TensorDict:
    return TensorDict(a=torch.ones(batch), b=torch.ones(batch), batch_size=batch)


IN_PLACE_OPS = {
    "copy_": lambda td: td.copy_(_pair([2])),
    "update_": lambda td: td.update_({"a": torch.ones(2), "b": torch.ones(2)}),
    "td[0] = value": lambda td: td.__setitem__(0, _pair([])),
    "td[rows] = value": lambda td: td.__setitem__(torch.tensor([0]), _pair([1])),
    "copy_at_": lambda td: td.copy_at_(_pair([]), 0),
    "copy_at_(fast=False)": lambda td: td.copy_at_(_pair([]), 0, fast=False),
    "update_at_": lambda td: td.update_at_({"a": torch.tensor(1.0), "b": torch.tensor(1.0)}, 0),
    "load_state_dict": lambda td: td.load_state_dict({"a": torch.ones(2), "b": torch.ones(2)}),
    "apply_": lambda td: td.apply_(lambda x: x + 1),
    "add_(number)": lambda td: td.add_(1),
    "add_(td)": lambda td: td.add_(_pair([2])),
    "exp_": lambda td: td.exp_(),
    "lerp_": lambda td: td.lerp_(_pair([2]), 0.5),
    "addcmul_": lambda td: td.addcmul_(_pair([2]), _pair([2])),
}


def _inference_pair() -> TensorDict:
    with torch.inference_mode():
        return TensorDict(a=torch.zeros(2), b=torch.zeros(2), batch_size=[2])


def _inference_stack() -> LazyStackedTensorDict:
    with torch.inference_mode():
        parts = [TensorDict(a=torch.zeros(()), b=torch.zeros(())) for _ in range(2)]
    return LazyStackedTensorDict(*parts)


@pytest.mark.parametrize("op, make", [
    (op, make) for op in sorted(IN_PLACE_OPS) for make in (_inference_pair, _inference_stack)
    if not (op == "copy_at_" and make is _inference_stack)  # no fast path: test_copy_at_fast
])
def test_in_place_writes_refuse_inference_tensors_unchanged(op, make):
    # torch writes an inference tensor outside inference mode, then raises: checked first
    td = make()
    with pytest.raises(RuntimeError, match="entry 'a': it is an inference tensor"):
        IN_PLACE_OPS[op](td)
    assert td["a"].eq(0).all() and td["b"].eq(0).all()
    with torch.inference_mode():
        IN_PLACE_OPS[op](td)
    assert not td["a"].eq(0).all()


@pytest.mark.parametrize("op", sorted(IN_PLACE_OPS))
def test_in_place_writes_refuse_an_expanded_leaf_unchanged(op):
    td = TensorDict(a=torch.zeros(2), b=torch.zeros(1).expand(2), batch_size=[2])
    with pytest.raises(RuntimeError, match="entry 'b' of shape \\[2\\]: its elements share memory"):
        IN_PLACE_OPS[op](td)
    assert td["a"].eq(0).all() and td["b"].eq(0).all()


def test_fills_write_expanded_leaves_and_lazy_parts():
    td = TensorDict(a=torch.zeros(1).expand(2), n={"b": torch.zeros(2)}, batch_size=[2])
    assert td.fill_("a", 2.0)["a"].eq(2).all() and td.zero_()["a"].eq(0).all()
    stack = LazyStackedTensorDict(*[TensorDict(a=torch.zeros(()), n={"b": torch.zeros(())})
                                    for _ in range(2)])
    stack.fill_("a", 3.0).fill_(("n", "b"), 4.0)
    assert [part["a"].item() for part in stack.tensordicts] == [3.0, 3.0]
    assert stack["n", "b"].tolist() == [4.0, 4.0]
    with torch.inference_mode():
        frozen = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(RuntimeError, match="inference tensor"):
        frozen.fill_("a", 1.0)
    with pytest.raises(RuntimeError, match="inference tensor"):
        frozen.set_("a", torch.ones(2))
    assert frozen["a"].eq(0).all()


def test_fills_of_a_leaf_that_requires_grad_write_nothing():
    # torch refuses the leaf in place with grad enabled: the others are not written first
    td = TensorDict(a=torch.zeros(2), n={"b": torch.zeros(2),
                                         "c": torch.zeros(2, requires_grad=True)},
                    batch_size=[2])
    with pytest.raises(RuntimeError, match="requires grad"):
        td.fill_("n", 1.0)
    with pytest.raises(RuntimeError, match="requires grad"):
        td.fill_(("n", "c"), 1.0)
    td["a"].fill_(2.0)
    with pytest.raises(RuntimeError, match="requires grad"):
        td.zero_()
    assert td["a"].tolist() == [2.0, 2.0] and td["n", "b"].tolist() == [0.0, 0.0]
    with torch.no_grad():
        td.fill_("n", 3.0)
    assert td["n", "c"].tolist() == [3.0, 3.0]


def test_fast_copies_carry_forward_ad_tangents():
    import torch.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        source = fwAD.make_dual(torch.ones(2), torch.full((2,), 3.0))
        td = TensorDict(a=torch.zeros(2), batch_size=[2])
        td.copy_(TensorDict(a=source, batch_size=[2]))
        assert fwAD.unpack_dual(td["a"]).tangent.tolist() == [3.0, 3.0]
        buf = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
        buf[1] = TensorDict(a=source)
        assert fwAD.unpack_dual(buf["a"]).tangent[1].tolist() == [3.0, 3.0]


def test_fast_paths_step_aside_under_torch_compile():
    from torch._dynamo.testing import CompileCounter

    def run(buf, value, td, other):
        buf[1] = value
        buf[0:2] = buf[2:4]
        out = td * 2 + td
        td.copy_(other)
        return out.exp()

    def inputs():
        return (buffer(4), step(3.0), nested(), nested() + 5)

    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(run, backend=counter, fullgraph=True)
    (buf, value, td, other), expected = inputs(), inputs()
    assert_same(compiled(buf, value, td, other), run(*expected))
    assert_same(buf, expected[0])
    assert_same(td, expected[2])
    assert counter.frame_count == 1


def test_copies_under_vmap_write_each_leaf():
    # vmap has no batching rule for _foreach_copy_: the copies go leaf by leaf
    def run(x):
        td = TensorDict(a=torch.zeros_like(x), n={"b": torch.zeros_like(x)})
        for _ in range(3):  # (past the remembered layouts too)
            td.copy_(TensorDict(a=x + 1, n={"b": x + 2}))
        td.update_({"a": td["a"] * 2})
        rows = TensorDict(a=torch.stack([torch.zeros_like(x)] * 2), batch_size=[2])
        rows[1] = TensorDict(a=x + 3)
        return td["a"] + td["n", "b"] + rows["a"].sum(0)

    x = torch.arange(6.0).reshape(3, 2)
    expected = torch.stack([run(row) for row in x])
    assert torch.equal(torch.vmap(run)(x), expected)


def test_set_at_a_number():
    td = TensorDict(a=torch.zeros(3, 2), i=torch.zeros(3, dtype=torch.int64),
                    n={"b": torch.zeros(3)}, batch_size=[3])
    td.set_at_("a", 1.0, 1).set_at_("i", 2, -1).set_at_(("n", "b"), True, 0)
    td.set_at_("a", 5, slice(0, 1))  # (not an int index: the general path)
    assert td["a"][:, 0].tolist() == [5.0, 1.0, 0.0]
    assert td["i"].tolist() == [0, 0, 2] and td["n", "b"].tolist() == [1.0, 0.0, 0.0]
    before = td.clone()
    with pytest.raises(IndexError, match="batch size"):
        td.set_at_("a", 1.0, 3)
    with pytest.raises(TypeError, match="complex number"):
        td.set_at_("a", 1j, 0)
    assert (td == before).all()


def test_set_at_one_row_of_one_leaf_is_checked_before_writing():
    td = TensorDict(a=torch.zeros(3, 2), n={"b": torch.zeros(3, 2)}, batch_size=[3])
    td.set_at_("a", torch.ones(2), 1)
    td.set_at_(("n", "b"), torch.ones(2), -1)
    assert td["a"][:, 0].tolist() == [0.0, 1.0, 0.0] and td["n", "b"][:, 0].tolist() == [0, 0, 1]
    before = td.clone()
    with pytest.raises(RuntimeError, match=r"shape \[3\].*'a'.*\[2\]"):
        td.set_at_("a", torch.ones(3), 0)
    with pytest.raises(IndexError, match="batch size"):
        td.set_at_("a", torch.ones(2), 3)
    with pytest.raises(RuntimeError, match="share memory"):
        td.expand(2, 3).set_at_("a", torch.ones(2), 0)
    assert (td == before).all()
