"""Ragged lazy stacks (parts of different batch sizes), stacks of lazy stacks, and the
lazy-stack methods ``to_lazystack``, ``map``, ``hook_in``/``hook_out``."""

import pickle

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
    dense_stack_tds,
    lazy_stack,
    maybe_dense_stack,
)


def ragged(stack_dim=0):
    a = TensorDict(x=torch.zeros(3, 2), y=torch.arange(3.0), batch_size=[3])
    b = TensorDict(x=torch.ones(4, 2), y=torch.arange(4.0), batch_size=[4])
    return a, b, lazy_stack([a, b], stack_dim)


def hetero():
    """Parts of the same batch size whose entry ``x`` differs in shape (TorchRL's agents)."""
    return lazy_stack([TensorDict(x=torch.zeros(3), r=torch.zeros(())),
                       TensorDict(x=torch.ones(4), r=torch.ones(()))])


# -- building ---------------------------------------------------------------------------------
def test_batch_size_has_minus_one_at_ragged_dims():
    a, b, stack = ragged()
    assert stack.batch_size == stack.shape == torch.Size([2, -1])
    assert stack.ndim == stack.batch_dims == 2 and len(stack) == 2
    assert ragged(1)[2].batch_size == torch.Size([-1, 2])
    assert LazyStackedTensorDict(a, b, batch_size=[2, -1]).batch_size == torch.Size([2, -1])
    assert maybe_dense_stack([a, b]).batch_size == torch.Size([2, -1])
    assert LazyStackedTensorDict.maybe_dense_stack([a, b]).tensordicts[1] is b


def test_construction_errors():
    with pytest.raises(RuntimeError, match="same number of batch dims"):
        lazy_stack([TensorDict(batch_size=[3]), TensorDict(batch_size=[3, 1])])
    with pytest.raises(RuntimeError, match="does not match"):
        LazyStackedTensorDict(*ragged()[:2], batch_size=[2, 3])
    _, _, stack = ragged()
    with pytest.raises(RuntimeError, match="in a lazy TD"):
        stack.batch_size = [2]


def test_repr_and_pickle():
    _, _, stack = ragged()
    assert "batch_size=[2,-1]" in repr(stack) and "x: f32[2]" in repr(stack)
    copy = pickle.loads(pickle.dumps(stack))
    assert copy.batch_size == stack.batch_size
    assert torch.equal(copy.tensordicts[1]["x"], stack.tensordicts[1]["x"])


# -- reading ----------------------------------------------------------------------------------
def test_indexing():
    a, b, stack = ragged()
    assert stack[0] is a and stack[1] is b and list(stack) == [a, b]
    assert stack.unbind(0) == (a, b)
    column = stack[:, 0]
    assert column.batch_size == torch.Size([2]) and column["x"].shape == torch.Size([2, 2])
    assert stack[:, -1]["y"].tolist() == [2.0, 3.0]
    assert stack[..., 0].batch_size == torch.Size([2])
    assert stack[:, :2].batch_size == torch.Size([2, 2])
    assert stack[0:1].batch_size == torch.Size([1, 3])
    assert stack[1, :2].batch_size == torch.Size([2])
    assert stack[:, None].batch_size == torch.Size([2, 1, -1])
    assert stack[None].batch_size == torch.Size([1, 2, -1])
    assert stack[:, [0, 1]].batch_size == torch.Size([2, 2])
    picked = stack[torch.tensor([1, 1])]
    assert picked.batch_size == torch.Size([2, 4]) and picked.tensordicts[0] is b
    assert stack[torch.tensor([True, False])].batch_size == torch.Size([1, 3])
    assert stack[torch.tensor([1, 0])].batch_size == torch.Size([2, -1])


def test_index_errors():
    _, _, stack = ragged()
    with pytest.raises(IndexError, match="out of bounds"):
        stack[:, 3]
    with pytest.raises(IndexError):
        stack[2]
    with pytest.raises(IndexError, match="selects no part"):
        stack[torch.tensor([], dtype=torch.long)]
    with pytest.raises(IndexError, match="1-D tensor"):
        stack[torch.tensor([[0, 1]])]


def test_ragged_get_raises_and_reads_on_request():
    _, _, stack = ragged()
    with pytest.raises(RuntimeError, match="Failed to stack tensors .* 'x'"):
        stack["x"]
    assert stack.get_item_shape("x") == torch.Size([2, -1, 2])
    assert [t.shape[0] for t in stack.get("x", as_list=True)] == [3, 4]
    padded = stack.get("y", as_padded_tensor=True, padding_value=-1.0)
    assert padded.tolist() == [[0.0, 1.0, 2.0, -1.0], [0.0, 1.0, 2.0, 3.0]]
    nested = stack.get("x", as_nested_tensor=True)
    assert nested.is_nested and nested.layout == torch.jagged
    assert stack.get("x", as_nested_tensor=True, layout=torch.strided).layout == torch.strided
    assert list(stack.keys()) == ["x", "y"] and "x" in stack


def test_dim1_stack():
    a, b, stack = ragged(1)
    assert stack[0].batch_size == torch.Size([2]) and stack[:, 0] is a
    # one padded value per part, along a new first dim whatever the stack dim (as upstream)
    assert stack.get("x", as_padded_tensor=True).shape == torch.Size([2, 4, 2])


# -- transforming part by part ------------------------------------------------------------------
def test_apply_to_clone_keep_the_parts_sizes():
    _, b, stack = ragged()
    for out in (stack.apply(lambda t: t + 1), stack.to(torch.float64), stack.clone(),
                stack + 1, stack.detach(), stack.select("x"), stack.exclude("y"), stack.empty()):
        assert type(out) is LazyStackedTensorDict and out.batch_size == torch.Size([2, -1])
    assert stack.to(torch.float64).tensordicts[1]["x"].dtype == torch.float64
    clone = stack.clone()
    assert clone.tensordicts[1] is not b and torch.equal(clone.tensordicts[1]["x"], b["x"])
    assert (stack == stack.clone()).batch_size == torch.Size([2, -1])
    assert (stack == stack.clone()).all() and not (stack != stack.clone()).any()
    assert not (stack == 0).all()


def test_update_and_writes():
    a, _, stack = ragged()
    stack.update(ragged()[2].apply(lambda t: t + 5))
    assert a["x"][0, 0] == 5
    stack.update_(ragged()[2])
    assert a["x"][0, 0] == 0
    stack.set("z", [torch.zeros(3), torch.ones(4)])
    assert a["z"].shape == torch.Size([3])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        stack.update({"w": torch.zeros(2)})
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        stack.set("w", torch.zeros(2, 3))
    assert "w" not in a.keys()


def test_unbind_and_split():
    _, _, stack = ragged()
    with pytest.raises(ValueError, match="differ in size"):
        stack.unbind(1)
    assert [p.batch_size for p in stack.split(1)] == [torch.Size([1, 3]), torch.Size([1, 4])]
    assert [p.batch_size for p in stack.chunk(2)] == [torch.Size([1, 3]), torch.Size([1, 4])]
    with pytest.raises(ValueError, match="differ in size"):
        stack.split(2, 1)


def test_shape_ops_move_the_stack_dim():
    _, b, stack = ragged()
    assert stack.unsqueeze(0).batch_size == torch.Size([1, 2, -1])
    assert stack.unsqueeze(0).stack_dim == 1
    assert stack.unsqueeze(-1).batch_size == torch.Size([2, -1, 1])
    assert stack.unsqueeze(-1).squeeze().batch_size == torch.Size([2, -1])
    assert stack.squeeze(0) is stack
    moved = stack.permute(1, 0)
    assert moved.batch_size == torch.Size([-1, 2]) and moved.stack_dim == 1
    assert stack.transpose(0, 1).batch_size == torch.Size([-1, 2])
    grown = stack.expand(3, 2, -1)
    assert grown.batch_size == torch.Size([3, 2, -1]) and grown.stack_dim == 1
    assert grown.tensordicts[1]["x"].shape == torch.Size([3, 4, 2])
    with pytest.raises(RuntimeError, match="ragged dims"):
        stack.expand(2, 5)
    flat = stack.reshape(-1)  # upstream: a lazy stack of every element of the parts
    assert flat.batch_size == torch.Size([7]) and len(flat.tensordicts) == 7


def test_stack_and_cat_of_stacks():
    _, _, stack = ragged()
    twice = lazy_stack([stack, stack.clone()])
    assert twice.batch_size == torch.Size([2, 2, -1])
    dense = torch.stack([stack, stack.clone()])
    assert type(dense) is LazyStackedTensorDict and dense.batch_size == torch.Size([2, 2, -1])
    assert dense.stack_dim == 1 and dense.tensordicts[1].batch_size == torch.Size([2, 4])
    assert torch.cat([stack, stack], 0).batch_size == torch.Size([4, -1])
    assert torch.cat([stack, stack], 1).batch_size == torch.Size([2, -1])
    assert torch.cat([stack, stack], 1).tensordicts[0].batch_size == torch.Size([6])


def test_densify_and_padding():
    _, _, stack = ragged()
    jagged = stack.densify(layout=torch.jagged)
    assert type(jagged) is TensorDict and jagged.batch_size == torch.Size([2, -1])
    assert jagged["x"].is_nested and jagged["x"].layout == torch.jagged
    padded = stack.to_padded_tensor(padding=-1.0, mask_key="mask")
    assert padded.batch_size == torch.Size([2, 4])
    assert padded["x"].shape == torch.Size([2, 4, 2]) and padded["x"][0, 3].tolist() == [-1, -1]
    assert padded["mask"].tolist() == [[True, True, True, False], [True] * 4]
    assert "mask" not in stack.to_padded_tensor().keys()
    with pytest.raises(RuntimeError, match="Failed to stack"):
        stack.contiguous()


def test_non_tensor_stacks_may_be_ragged():
    from tensordict import NonTensorStack
    stack = NonTensorStack.from_list([["a"], ["b", "c"]])
    assert stack.batch_size == torch.Size([2, -1]) and stack.tolist() == [["a"], ["b", "c"]]


# -- collections holding stacks whose entries differ in shape ------------------------------------
def test_dense_stack_of_collections_holding_lazy_stacks():
    outer = TensorDict(agents=hetero(), r=torch.zeros(2), batch_size=[2])
    for dim in (0, 1):
        out = torch.stack([outer, outer.clone()], dim)
        assert type(out) is TensorDict and out.batch_size == torch.Size([2, 2])
        agents = out["agents"]
        assert type(agents) is LazyStackedTensorDict and agents.stack_dim == 1 - dim
        assert agents.tensordicts[1]["x"].shape == torch.Size([2, 4])
    joined = torch.cat([outer, outer], 0)
    assert joined["agents"].batch_size == torch.Size([4])
    assert joined.get(("agents", "r")).tolist() == [0.0, 1.0, 0.0, 1.0]
    assert joined["agents"].get("x", as_list=True)[3].shape == torch.Size([4])


def test_stack_of_lazy_stacks_of_different_layout_stays_lazy():
    one = hetero()
    other = lazy_stack([TensorDict(x=torch.zeros(3), r=torch.zeros(())),
                        TensorDict(x=torch.ones(4), r=torch.ones(()))], 0)
    assert torch.stack([one, other]).tensordicts[0].batch_size == torch.Size([2])
    dense = dense_stack_tds([TensorDict(a=one), TensorDict(a=other)], 0)
    assert dense["a"].stack_dim == 1


def test_shape_ops_on_empty_leaves():
    stack = lazy_stack([TensorDict(e=torch.zeros(2, 0), batch_size=[2]),
                        TensorDict(e=torch.zeros(2, 0), batch_size=[2])])
    assert stack[..., -1]["e"].shape == torch.Size([2, 0])
    assert stack[torch.tensor([1, 0]), 1]["e"].shape == torch.Size([2, 0])


# -- to_lazystack, map, hooks ---------------------------------------------------------------
def test_to_lazystack():
    td = TensorDict(x=torch.zeros(3, 2), batch_size=[3, 2])
    lazy = td.to_lazystack(1)
    assert lazy.stack_dim == 1 and lazy.batch_size == td.batch_size
    assert lazy.tensordicts[0]["x"].data_ptr() == td["x"].data_ptr()
    assert lazy.to_lazystack(1) is lazy and lazy.to_lazystack(-1) is lazy
    assert lazy.to_lazystack(0).stack_dim == 0
    assert lazy.to_lazystack(0).batch_size == td.batch_size
    with pytest.raises(IndexError, match="Incompatible dim 2"):
        td.to_lazystack(2)
    with pytest.raises(IndexError, match="Incompatible dim 0"):
        TensorDict(x=1).to_lazystack(0)
    with pytest.raises(ValueError, match="differ in size"):
        ragged()[2].to_lazystack(1)


def _double(td):
    return td * 2


def test_map_over_a_lazy_stack():
    stack = lazy_stack([TensorDict(a=torch.arange(3.0)), TensorDict(a=torch.arange(4.0))])
    out = stack.map(_double, num_workers=1, chunksize=1)
    assert type(out) is LazyStackedTensorDict
    assert out.get("a", as_list=True)[1].tolist() == [0.0, 2.0, 4.0, 6.0]
    chunks = list(stack.map_iter(_double, num_workers=1, chunksize=1))
    assert [c.batch_size for c in chunks] == [torch.Size([1])] * 2


def test_hooks():
    stack = LazyStackedTensorDict(TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2)),
                                  hook_out=lambda v: v * 10, hook_in=lambda v: v + 100)
    assert stack["a"].tolist() == [[0.0, 0.0], [10.0, 10.0]]
    assert stack.get("a").tolist() == [[0.0, 0.0], [10.0, 10.0]]
    stack.set("a", torch.ones(2, 2))
    assert stack.tensordicts[0]["a"].tolist() == [101.0, 101.0]
    assert stack.get("a", as_list=True)[0].tolist() == [101.0, 101.0]  # parts as stored
    assert stack.clone().hook_out is None and stack[:1].hook_in is None


# -- TensorDicts of nested tensors with a ragged batch dim (TorchRL's split_trajectories) --------
def _nested_td():
    flat = TensorDict(a=torch.arange(7.0), b=torch.zeros(7, 2), batch_size=[7])
    return flat._fast_apply(lambda x: torch.nested.as_nested_tensor(
        list(x.split([3, 4])), layout=torch.jagged), batch_size=[2, -1])


def test_ragged_batch_size_of_a_tensordict():
    assert TensorDict(batch_size=[2, -1]).batch_size == torch.Size([2, -1])
    with pytest.raises(RuntimeError, match="no negative dims other than -1"):
        TensorDict(batch_size=[2, -2])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        TensorDict(a=torch.zeros(2, 3), batch_size=[2, -1])
    nested = _nested_td()
    assert nested.batch_size == torch.Size([2, -1]) and nested["a"].is_nested


def test_to_padded_tensor_of_nested_leaves():
    padded = _nested_td().to_padded_tensor(padding=-1.0, mask_key=("m", "n"))
    assert padded.batch_size == torch.Size([2, 4])
    assert padded["a"].tolist() == [[0.0, 1.0, 2.0, -1.0], [3.0, 4.0, 5.0, 6.0]]
    assert padded["b"].shape == torch.Size([2, 4, 2])
    assert padded["m", "n"].tolist() == [[True, True, True, False], [True] * 4]
    dense = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    assert torch.equal(dense.to_padded_tensor()["a"], dense["a"])
    with pytest.raises(RuntimeError, match="heterogenous dimension"):
        dense.to_padded_tensor(mask_key="m")


# -- writing stacks into preallocated collections holding lazy stacks (TorchRL's rollouts) -------
def _step(value, ragged=True):
    other = 2 if ragged else 3
    agents = lazy_stack([TensorDict(a=torch.full((2, 3), float(value)), batch_size=[2]),
                         TensorDict(a=torch.full((2, other), float(value)), batch_size=[2])], 1)
    return TensorDict(agents=agents, r=torch.full((2,), float(value)), batch_size=[2])


def test_stack_and_cat_into_out_holding_lazy_stacks():
    out = torch.stack([_step(i) for i in range(3)], 1).clone()
    assert out["agents"].stack_dim == 2
    result = torch.stack([_step(10 + i) for i in range(3)], 1, out=out)
    assert result is out and out["r"][0].tolist() == [10.0, 11.0, 12.0]
    assert out["agents"].tensordicts[1]["a"][0, :, 0].tolist() == [10.0, 11.0, 12.0]
    joined = torch.cat([_step(20 + i).unsqueeze(1) for i in range(3)], 1, out=out)
    assert joined is out and out["agents"].tensordicts[0]["a"][1, :, 0].tolist() == [20, 21, 22]


def test_stack_into_out_checks_before_writing():
    out = torch.stack([_step(i) for i in range(3)], 1).clone()
    before = out.clone()
    with pytest.raises(RuntimeError, match=r"out has the batch size \[2, 3\]"):
        torch.stack([_step(9) for _ in range(2)], 1, out=out)
    wrong = [_step(9) for _ in range(2)] + [_step(9, ragged=False)]
    with pytest.raises(RuntimeError):
        torch.stack(wrong, 1, out=out)
    assert (out["r"] == before["r"]).all()
    assert out["agents"].get("a", as_list=True)[1].eq(before["agents"].tensordicts[1]["a"]).all()


def test_empty_and_where_keep_the_stack():
    stack = hetero()
    empty = stack.empty(batch_size=[2])
    assert type(empty) is LazyStackedTensorDict and empty.tensordicts[0].is_empty()
    assert type(stack.empty(batch_size=[1, 2])) is TensorDict
    reset = stack.clone().zero_()
    stack.where(torch.tensor([True, False]), reset, out=stack, update_batch_size=True)
    assert stack.tensordicts[1]["x"].tolist() == [0.0] * 4
    assert stack.tensordicts[0]["x"].tolist() == [0.0] * 3


def test_stack_into_dense_out_checks_every_leaf_first():
    tds = [TensorDict(a=torch.ones(3), b={"c": torch.ones(3, 2)}, batch_size=[3])] * 2
    out = TensorDict(a=torch.zeros(2, 3), b={"c": torch.zeros(2, 3, 2)}, z=torch.zeros(2, 3),
                     batch_size=[2, 3])
    assert torch.stack(tds, 0, out=out) is out
    assert out["b", "c"].sum() == 12 and out["z"].sum() == 0  # entries tds lack: untouched
    assert torch.cat([td.unsqueeze(0) for td in tds], 0, out=out.zero_()) is out
    assert out["a"].sum() == 6
    bad_dtype = TensorDict(a=torch.zeros(2, 3), b={"c": torch.zeros(2, 3, 2, dtype=torch.long)},
                           batch_size=[2, 3])
    with pytest.raises(TypeError, match=r"\('b', 'c'\)"):
        torch.stack(tds, 0, out=bad_dtype)
    assert bad_dtype["a"].sum() == 0  # nothing written
    uneven = [tds[0], TensorDict(a=torch.ones(3), b={"c": torch.ones(3, 5)}, batch_size=[3])]
    with pytest.raises(RuntimeError, match="incompatible shapes"):
        torch.stack(uneven, 0, out=out.zero_())
    lacking = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])  # as upstream: only a
    assert torch.stack(tds, 0, out=lacking) is lacking and list(lacking.keys()) == ["a"]
    assert out["a"].sum() == 0


# -- a ragged lazy stack inside a TensorDict (TorchRL's heterogeneous envs) ---------------
def _outer(value: float = 0.0) -> TensorDict:
    parts = [TensorDict({"t": torch.full((2, 4), value), "c": torch.full((2, i + 1), value),
                         "s": f"agent{i}"}, [2]) for i in range(3)]
    return TensorDict({"lazy": lazy_stack(parts, dim=1), "state": torch.zeros(2, 3)}, [2])


def test_indexing_the_holder_keeps_views_of_the_parts():
    outer = _outer()
    row = outer[0]
    row["lazy"].tensordicts[2]["c"] += 1  # a view: reaches the stored part
    assert outer["lazy"].tensordicts[2]["c"][0].tolist() == [1.0, 1.0, 1.0]


def test_update_in_place_through_the_holder():
    target, source = _outer(), _outer(5.0)
    target[1].update_(source[1], keys_to_update=[("lazy", "c"), "state"])
    assert target["lazy"].tensordicts[1]["c"].tolist() == [[0.0, 0.0], [5.0, 5.0]]
    assert target["lazy"].tensordicts[1]["t"].sum() == 0  # not asked for


def test_items_yield_a_node_before_its_entries_lazily():
    outer = _outer()
    items = outer.items(True)
    first_key, first_value = next(iter(items))
    assert first_key == "lazy" and isinstance(first_value, LazyStackedTensorDict)
    # a search stops at the node, before the ragged ("lazy", "c") is read (that would raise)
    assert any(isinstance(value, LazyStackedTensorDict) for value in outer.values(True))
    with pytest.raises(RuntimeError, match="'c'"):
        list(outer.values(True))


def test_filter_non_tensor_data_and_comparison_part_by_part():
    outer = _outer()
    filtered = outer.filter_non_tensor_data()
    assert "s" not in filtered["lazy"].tensordicts[0].keys()
    assert (outer == outer.clone()).all()
    assert not (outer != outer.clone()).any()


def test_densify_a_holder():
    stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(3))])
    outer = TensorDict(lazy=stack, state=torch.arange(2.0), batch_size=[2])
    dense = outer.densify()
    assert type(dense) is TensorDict and dense["lazy", "a"].is_nested
    assert "a: f32[-1]" in repr(dense)
    assert torch.equal(dense["state"], outer["state"])
