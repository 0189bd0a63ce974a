"""torch.vmap over lazy stacks (tensordict._vmap_lazy): in and out, over the stack dim and
other dims, nested lazy stacks, and writes made inside the mapped function. The types,
batch sizes and stack dims are those upstream tensordict 0.15.3 returns for the same
calls; the values are those of mapping slice by slice."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack


def _part(i, width=2, extra=None):
    entries = {"a": torch.arange(4.0 * width).view(4, width) + 10 * i,
               "n": TensorDict(b=torch.arange(4.0) + i, batch_size=[4])}
    if extra:
        entries[extra] = torch.full((4,), float(i))
    return TensorDict(entries, batch_size=[4])


def _stack(stack_dim, **kwargs):
    return lazy_stack([_part(i, **kwargs) for i in range(3)], stack_dim)


def _nested(outer, inner):
    return lazy_stack([lazy_stack([_part(i + j) for j in range(2)], inner) for i in range(3)],
                      outer)


def _shape(out):
    kinds = tuple("L" if isinstance(p, LazyStackedTensorDict) else "T" for p in out.tensordicts)
    return type(out).__name__, tuple(out.batch_size), out.stack_dim, kinds


# (stack dim, in_dims, out_dims) -> (batch size, stack dim) of vmap(identity), as upstream
IDENTITY = {
    (0, 0, 0): ((3, 4), 0), (0, 1, 0): ((4, 3), 1), (0, -1, 0): ((4, 3), 1),
    (0, 0, 1): ((4, 3), 1), (0, 1, 1): ((3, 4), 0),
    (1, 0, 0): ((4, 3), 1), (1, 1, 0): ((3, 4), 0), (1, -1, 0): ((3, 4), 0),
    (1, 0, 1): ((3, 4), 0), (1, 1, 1): ((4, 3), 1),
}


@pytest.mark.parametrize("stack_dim,in_dim,out_dim", list(IDENTITY))
def test_identity_gives_back_a_lazy_stack_of_the_values(stack_dim, in_dim, out_dim):
    stack = _stack(stack_dim)
    out = torch.vmap(lambda t: t, in_dim, out_dim)(stack)
    batch_size, out_stack_dim = IDENTITY[stack_dim, in_dim, out_dim]
    assert _shape(out) == ("LazyStackedTensorDict", batch_size, out_stack_dim, ("T",) * 3)
    assert torch.equal(out["a"], stack["a"].movedim(in_dim % 2, out_dim))
    assert torch.equal(out["n", "b"], stack["n", "b"].movedim(in_dim % 2, out_dim))


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("in_dim", [0, 1, -1])
def test_leaves_read_inside_are_the_mapped_slices(stack_dim, in_dim):
    stack = _stack(stack_dim)
    out = torch.vmap(lambda t: t["a"] + 1, in_dim)(stack)
    assert torch.equal(out, stack["a"].movedim(in_dim % 2, 0) + 1)
    out = torch.vmap(lambda t: t["n", "b"] * 2, in_dim)(stack)
    assert torch.equal(out, stack["n", "b"].movedim(in_dim % 2, 0) * 2)


@pytest.mark.parametrize("stack_dim,in_dim", [(0, 1), (0, -1), (1, 0)])
def test_apply_over_another_dim_keeps_the_stack(stack_dim, in_dim):
    stack = _stack(stack_dim)
    seen = []
    out = torch.vmap(lambda t: seen.append(_shape(t)) or t.apply(lambda x: x * 2), in_dim)(stack)
    assert seen == [("LazyStackedTensorDict", (3,), 0, ("T",) * 3)]
    assert _shape(out) == ("LazyStackedTensorDict", (4, 3), 1, ("T",) * 3)
    assert torch.equal(out["a"], stack["a"].movedim(in_dim % 2, 0) * 2)


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_apply_over_the_stack_dim_gives_the_mapped_values(stack_dim):
    # upstream returns a wrong-sized stack here ([3, 3, 4]): ours is each slice's result
    stack = _stack(stack_dim)
    seen = []
    out = torch.vmap(lambda t: seen.append(type(t)) or t.apply(lambda x: x * 2),
                     stack_dim)(stack)
    assert seen == [TensorDict]
    assert out.batch_size == (3, 4)
    assert torch.equal(out["a"], stack["a"].movedim(stack_dim, 0) * 2)


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_a_key_set_over_the_stack_dim_reaches_a_copy_of_the_parts(stack_dim):
    stack = _stack(stack_dim)
    out = torch.vmap(lambda t: t.set("c", t["n", "b"] + 100), stack_dim)(stack)
    assert _shape(out) == ("LazyStackedTensorDict", (3, 4), 0, ("T",) * 3)
    for i, part in enumerate(out.tensordicts):
        assert torch.equal(part["c"], torch.arange(4.0) + i + 100)
        assert torch.equal(part["a"], stack.tensordicts[i]["a"])
    assert all("c" not in part.keys() for part in stack.tensordicts)  # as upstream


@pytest.mark.parametrize("stack_dim,in_dim", [(0, 0), (0, 1), (1, 1), (1, 0)])
def test_set_in_place_reaches_the_callers_parts(stack_dim, in_dim):
    stack = _stack(stack_dim)
    torch.vmap(lambda t: t.set_("a", t["a"] * 0 - 1), in_dim)(stack)
    assert all((part["a"] == -1).all() for part in stack.tensordicts)


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_update_over_the_stack_dim_replaces_in_the_output_only(stack_dim):
    stack = _stack(stack_dim)
    out = torch.vmap(lambda t: t.update({"a": t["a"] + 1000}), stack_dim)(stack)
    assert torch.equal(out["a"], stack["a"].movedim(stack_dim, 0) + 1000)
    assert torch.equal(stack.tensordicts[2]["a"], _part(2)["a"])


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_an_in_place_op_on_a_stacked_leaf_reaches_the_parts(stack_dim):
    # a deliberate difference: upstream drops this write (the leaf is a stacked copy)
    stack = _stack(stack_dim)
    torch.vmap(lambda t: t["a"].add_(1), stack_dim)(stack)
    for i, part in enumerate(stack.tensordicts):
        assert torch.equal(part["a"], _part(i)["a"] + 1)


def test_a_key_deleted_over_the_stack_dim_leaves_the_output():
    stack = _stack(0)
    out = torch.vmap(lambda t: t.del_("a"))(stack)
    assert list(out.keys()) == ["n"] and "a" in stack.tensordicts[0].keys()


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_parts_of_different_keys(stack_dim, in_dim):
    stack = lazy_stack([_part(0), _part(1, extra="c"), _part(2)], stack_dim)
    out = torch.vmap(lambda t: t, in_dim)(stack)
    assert isinstance(out, LazyStackedTensorDict)
    assert torch.equal(out.tensordicts[1]["c"], torch.ones(4))
    assert torch.equal(torch.vmap(lambda t: t["a"].sum(), in_dim)(stack),
                       stack["a"].movedim(in_dim, 0).flatten(1).sum(1))
    out = torch.vmap(lambda t: t.set("d", t["n", "b"] + 1), in_dim)(stack)
    assert torch.equal(out["d"], stack["n", "b"].movedim(in_dim, 0) + 1)


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize("in_dim", [0, 1])
def test_parts_of_different_shapes(stack_dim, in_dim):
    stack = lazy_stack([_part(i, width=i + 1) for i in range(3)], stack_dim)
    out = torch.vmap(lambda t: t, in_dim)(stack)
    assert isinstance(out, LazyStackedTensorDict)
    assert [part["a"].shape[-1] for part in out.tensordicts] == [1, 2, 3]
    with pytest.raises((RuntimeError, KeyError)):
        torch.vmap(lambda t: t["a"] + 1, in_dim)(stack)
    out = torch.vmap(lambda t: t.set("d", t["n", "b"] + 1), in_dim)(stack)
    assert torch.equal(out["d"], stack["n", "b"].movedim(in_dim, 0) + 1)


# (outer stack dim, inner stack dim, in_dims) -> output of vmap(identity), as upstream:
# lazy parts of a stack mapped over another dim come out as TensorDicts
NESTED = {
    (0, 0, 0): ((3, 2, 4), 0, "L"), (0, 0, 1): ((2, 3, 4), 1, "T"),
    (0, 0, 2): ((4, 3, 2), 1, "T"), (0, 1, 0): ((3, 4, 2), 0, "L"),
    (0, 1, 1): ((4, 3, 2), 1, "T"), (0, 1, 2): ((2, 3, 4), 1, "T"),
    (1, 0, 0): ((2, 3, 4), 1, "T"), (1, 0, 1): ((3, 2, 4), 0, "L"),
    (1, 0, 2): ((4, 2, 3), 2, "T"), (1, 1, 0): ((4, 3, 2), 1, "T"),
    (1, 1, 1): ((3, 4, 2), 0, "L"), (1, 1, 2): ((2, 4, 3), 2, "T"),
}


@pytest.mark.parametrize("outer,inner,in_dim", list(NESTED))
def test_nested_lazy_stacks(outer, inner, in_dim):
    stack = _nested(outer, inner)
    batch_size, stack_dim, kind = NESTED[outer, inner, in_dim]
    out = torch.vmap(lambda t: t, in_dim)(stack)
    assert _shape(out) == ("LazyStackedTensorDict", batch_size, stack_dim, (kind,) * 3)
    assert torch.equal(out["a"], stack["a"].movedim(in_dim, 0))
    assert torch.equal(torch.vmap(lambda t: t["a"] + 1, in_dim)(stack),
                       stack["a"].movedim(in_dim, 0) + 1)
    out = torch.vmap(lambda t: t.apply(lambda x: x * 2), in_dim)(stack)
    assert torch.equal(out["n", "b"], stack["n", "b"].movedim(in_dim, 0) * 2)


def test_a_tensordict_holding_a_lazy_stack():
    td = TensorDict(n=lazy_stack([TensorDict(b=torch.arange(3.0) + i, batch_size=[3])
                                  for i in range(2)], 1), batch_size=[3])
    out = torch.vmap(lambda t: t.apply(lambda x: x * 2))(td)
    assert type(out) is TensorDict and out.batch_size == (3,)
    assert _shape(out["n"]) == ("LazyStackedTensorDict", (3, 2), 1, ("T", "T"))
    assert torch.equal(out["n", "b"], td["n", "b"] * 2)
    assert torch.equal(torch.vmap(lambda t: t["n", "b"] * 2)(td), td["n", "b"] * 2)


def test_with_other_arguments():
    stack = _stack(0)
    x = torch.arange(3.0)
    out = torch.vmap(lambda x, t: t["a"] * x, (0, 0))(x, stack)
    assert torch.equal(out, stack["a"] * x[:, None, None])
    out = torch.vmap(lambda x, t: t["a"] * x, (0, 1))(torch.arange(4.0), stack)
    assert torch.equal(out, stack["a"].movedim(1, 0) * torch.arange(4.0)[:, None, None])
    out = torch.vmap(lambda x, t: t.apply(lambda y: y + x), (0, None))(torch.arange(2.0), stack)
    assert _shape(out) == ("LazyStackedTensorDict", (2, 3, 4), 1, ("T",) * 3)
    assert torch.equal(out["a"][1], stack["a"] + 1)
    pair = torch.vmap(lambda t: (t, t["a"].sum()), 1)(stack)
    assert _shape(pair[0]) == ("LazyStackedTensorDict", (4, 3), 1, ("T",) * 3)
    assert torch.equal(pair[1], stack["a"].movedim(1, 0).flatten(1).sum(1))


@pytest.mark.parametrize("stack_dim,out_dim,expected", [
    (0, 0, ((4, 2, 2), 1)), (0, 1, ((2, 4, 2), 0)),
    (1, 0, ((4, 2, 2), 2)), (1, 1, ((2, 4, 2), 2)),
])
def test_a_lazy_stack_made_inside(stack_dim, out_dim, expected):
    x = torch.arange(8.0).view(4, 2)
    out = torch.vmap(lambda x: lazy_stack([TensorDict(a=x, batch_size=[2]),
                                           TensorDict(a=2 * x, batch_size=[2])], stack_dim),
                     0, out_dim)(x)
    assert _shape(out) == ("LazyStackedTensorDict", *expected, ("T", "T"))
    assert torch.equal(out["a"], torch.stack([x, 2 * x], stack_dim + 1).movedim(0, out_dim))


@pytest.mark.parametrize("out_dim,expected", [(0, ((4, 2), 1)), (1, ((2, 4), 0))])
def test_a_lazy_stack_of_different_keys_made_inside(out_dim, expected):
    x = torch.arange(4.0)
    out = torch.vmap(lambda x: lazy_stack([TensorDict(a=x), TensorDict(a=x, c=x * 2)]),
                     0, out_dim)(x)
    assert _shape(out) == ("LazyStackedTensorDict", *expected, ("T", "T"))
    assert torch.equal(out.tensordicts[1]["c"], x * 2) and "c" not in out.tensordicts[0].keys()


def test_a_failed_call_leaves_the_stack_as_it_was():
    stack = _stack(0)

    def fails(t):
        t.set("c", t["a"])
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        torch.vmap(fails)(stack)
    assert all("c" not in part.keys() for part in stack.tensordicts)
    out = torch.vmap(lambda t: t)(stack)  # the next call at that level starts clean
    assert list(out.keys()) == ["a", "n"]


@pytest.mark.parametrize("in_dim", [0, 1])
def test_in_chunks(in_dim):
    # vmap cuts the stack with tensor_split, the last piece empty along the stack dim
    stack = _stack(0)
    out = torch.vmap(lambda t: t["a"] * 2, in_dim, chunk_size=2)(stack)
    assert torch.equal(out, stack["a"].movedim(in_dim, 0) * 2)
    pieces = stack.tensor_split((2, 3), 0)
    assert [tuple(p.batch_size) for p in pieces] == [(2, 4), (1, 4), (0, 4)]


@pytest.mark.parametrize("in_dim,expected", [(0, ((2, 3), 0)), (1, ((3, 2), 1))])
def test_non_tensor_data_and_unbatched_tensors_go_along(in_dim, expected):
    from tensordict import UnbatchedTensor

    stack = lazy_stack([TensorDict(a=torch.arange(3.0) + i, s=f"x{i}",
                                   u=UnbatchedTensor(torch.ones(5)), batch_size=[3])
                        for i in range(2)])
    assert torch.equal(torch.vmap(lambda t: t["a"] + 1, in_dim)(stack),
                       stack["a"].movedim(in_dim, 0) + 1)
    out = torch.vmap(lambda t: t, in_dim)(stack)
    assert (tuple(out.batch_size), out.stack_dim) == expected
    assert [part["s"] for part in out.tensordicts] == ["x0", "x1"]
    assert type(out.tensordicts[0].get("u")) is UnbatchedTensor
    assert out.tensordicts[0]["u"].shape == (5,)


@pytest.mark.parametrize("read", [
    lambda t: t["b"], lambda t: t.get("b"), lambda t: t.get("b", None),
    lambda t: t.get(("b",)), lambda t: t["n", "c"]])
def test_ragged_entry_read_over_stack_dim_raises_runtime_error(read):
    # upstream: reading an entry the parts hold in different shapes raises RuntimeError
    parts = [TensorDict(a=torch.zeros(3), b=torch.zeros(w),
                        n=TensorDict(c=torch.zeros(w + 1))) for w in (1, 2)]
    stack = lazy_stack(parts)
    with pytest.raises(RuntimeError, match="Failed to stack tensors"):
        torch.vmap(lambda t: read(t).sum())(stack)
    # the readable entries still map, and the stack is left as it was
    assert torch.vmap(lambda t: t["a"].sum())(stack).tolist() == [0.0, 0.0]
    assert [tuple(p["b"].shape) for p in stack.tensordicts] == [(1,), (2,)]
    assert sorted(stack.keys()) == ["a", "b", "n"]
