"""LazyStackedTensorDict: every op compared with the same op on the dense stack, ragged
entries, exclusive keys, writes reaching the parts, nesting, reprs and errors."""

import pickle

import pytest
import torch

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    NonTensorStack,
    TensorDict,
    TensorDictBase,
    is_non_tensor,
    lazy_stack,
    set_lazy_legacy,
    set_printoptions,
)


def make_parts(n=3, batch=(2,), seed=0):
    gen = torch.Generator().manual_seed(seed)
    return [
        TensorDict(
            x=torch.randn(*batch, 3, generator=gen),
            i=torch.randint(10, batch, generator=gen),
            nested=TensorDict(y=torch.randn(*batch, 4, 2, generator=gen),
                              batch_size=[*batch, 4]),
            batch_size=batch,
        )
        for _ in range(n)
    ]


def dense_of(parts, dim=0):
    """The dense stack, built leaf by leaf with torch.stack."""
    def build(tds):
        out = {}
        for key in tds[0].keys():
            values = [td.get(key) for td in tds]
            if isinstance(values[0], torch.Tensor) or is_non_tensor(values[0]):
                out[key] = torch.stack(values, dim)
            else:
                out[key] = build(values)
        batch = tds[0].batch_size
        return TensorDict(out, batch_size=batch[:dim] + (len(tds),) + batch[dim:])

    return build(parts)


def assert_same(result, expected):
    assert result.batch_size == expected.batch_size
    assert sorted(map(str, result.keys(True, True))) == sorted(map(str, expected.keys(True, True)))
    for key in expected.keys(True, True):
        torch.testing.assert_close(result.get(key), expected.get(key))


@pytest.fixture(params=[0, 1], ids=["dim0", "dim1"])
def pair(request):
    parts = make_parts()
    return lazy_stack(parts, request.param), dense_of(parts, request.param), parts


# -- construction ---------------------------------------------------------------------------
def test_construction_keeps_parts_and_shapes(pair):
    stack, dense, parts = pair
    assert isinstance(stack, LazyStackedTensorDict) and isinstance(stack, TensorDictBase)
    assert stack.batch_size == dense.batch_size and stack.tensordicts == parts
    assert all(a is b for a, b in zip(stack.tensordicts, parts))
    assert_same(stack, dense)


def test_entry_points_agree():
    parts = make_parts(2)
    for stack in (LazyStackedTensorDict(*parts, stack_dim=1), lazy_stack(parts, 1),
                  tensordict.lazy_stack(parts, dim=-1), TensorDict.lazy_stack(parts, 1),
                  LazyStackedTensorDict.lazy_stack(parts, 1)):
        assert type(stack) is LazyStackedTensorDict and stack.stack_dim == 1
        assert_same(stack, dense_of(parts, 1))


def test_lazy_stack_of_100_copies_nothing():
    parts = [TensorDict(x=torch.randn(4)) for _ in range(100)]
    stack = lazy_stack(parts)
    assert stack.batch_size == torch.Size([100])
    assert all(stack[i]["x"].data_ptr() == parts[i]["x"].data_ptr() for i in range(100))
    assert stack.unbind(0)[7] is parts[7]


def test_construction_errors():
    with pytest.raises(RuntimeError, match="same number of batch dims"):
        lazy_stack([TensorDict(batch_size=[2]), TensorDict(batch_size=[2, 1])])
    with pytest.raises(IndexError, match="(?i)stack dim 3"):
        lazy_stack([TensorDict(batch_size=[2])], 3)
    with pytest.raises(RuntimeError, match="at least one"):
        lazy_stack([])
    with pytest.raises(TypeError, match="tensor collections"):
        lazy_stack([TensorDict(), 1])
    with pytest.raises(ValueError, match="needs a batch_size"):
        LazyStackedTensorDict()
    empty = LazyStackedTensorDict(batch_size=[0, 2])
    assert empty.batch_size == torch.Size([0, 2]) and list(empty.keys()) == []


def test_lazy_stack_of_tensors_and_names():
    tensors = [torch.zeros(2), torch.ones(2)]
    torch.testing.assert_close(lazy_stack(tensors), torch.stack(tensors))
    parts = [TensorDict(batch_size=[2], names=["t"]) for _ in range(2)]
    stack = LazyStackedTensorDict(*parts, stack_dim_name="env")
    assert stack.names == ["env", "t"]
    assert stack.contiguous().names == ["env", "t"]


# -- reading ----------------------------------------------------------------------------------
def test_get_stacks_on_demand(pair):
    stack, dense, _ = pair
    for key in [("x",), ("nested", "y"), "i"]:
        torch.testing.assert_close(stack.get(key), dense.get(key))
        torch.testing.assert_close(stack[key], dense[key])
    assert isinstance(stack.get("nested"), LazyStackedTensorDict)
    assert stack.get("missing") is None and stack.get("missing", 3) == 3
    with pytest.raises(KeyError, match="missing"):
        stack["missing"]


def test_keys_values_items(pair):
    stack, dense, _ = pair
    assert list(stack.keys()) == list(dense.keys())
    assert list(stack.keys(True, True)) == list(dense.keys(True, True))
    assert ("nested", "y") in stack.keys(include_nested=True) and ("nested", "y") in stack
    assert "x" in stack and "zz" not in stack
    for (k1, v1), (k2, v2) in zip(stack.items(True, True), dense.items(True, True)):
        assert k1 == k2
        torch.testing.assert_close(v1, v2)


# -- ragged entries and exclusive keys --------------------------------------------------------
def ragged():
    a = TensorDict(obs=torch.arange(3.0), n=TensorDict(z=torch.zeros(2, 5)), s="a")
    b = TensorDict(obs=torch.arange(5.0), n=TensorDict(z=torch.zeros(4, 5)), s="b",
                   extra=torch.ones(()))
    return a, b, lazy_stack([a, b])


def test_ragged_shapes_and_clear_errors():
    a, b, stack = ragged()
    assert stack.get_item_shape("obs") == torch.Size([2, -1])
    assert stack.get_item_shape(("n", "z")) == torch.Size([2, -1, 5])
    with pytest.raises(RuntimeError, match=r"key 'obs'.*\[3\].*\[5\].*as_padded_tensor"):
        stack["obs"]
    with pytest.raises(RuntimeError, match="key 'obs'"):
        stack.contiguous()
    assert list(stack.keys(True, True)) == ["obs", ("n", "z")]  # no stacking needed


def test_ragged_reads_on_request():
    a, b, stack = ragged()
    as_list = stack.get("obs", as_list=True)
    assert as_list[0] is a["obs"] and as_list[1] is b["obs"]
    padded = stack.get("obs", as_padded_tensor=True, padding_value=-1.0)
    torch.testing.assert_close(padded, torch.tensor([[0., 1., 2., -1., -1.], [0., 1., 2., 3., 4.]]))
    left = stack.get("obs", as_padded_tensor=True, padding_side="left")
    torch.testing.assert_close(left[0], torch.tensor([0., 0., 0., 1., 2.]))
    assert stack.get(("n", "z"), as_padded_tensor=True).shape == torch.Size([2, 4, 5])
    assert stack.get_nestedtensor("obs").is_nested and stack.get_nestedtensor("zz", 0) == 0
    for layout in (torch.strided, torch.jagged):
        nested = stack.get("obs", as_nested_tensor=True, layout=layout)
        assert nested.is_nested and nested.layout == layout
        torch.testing.assert_close(nested.unbind()[1], b["obs"])


def test_densify_and_padding():
    _, _, stack = ragged()
    jagged = stack.densify(layout=torch.jagged)
    assert type(jagged) is TensorDict and jagged["obs"].layout == torch.jagged
    assert jagged["s"] == ["a", "b"] and "extra" not in jagged.keys()
    padded = stack.to_padded_tensor(padding=-1.0)
    assert padded["obs"].shape == torch.Size([2, 5]) and padded["obs"][0, -1] == -1
    assert padded["n", "z"].shape == torch.Size([2, 4, 5])
    with pytest.raises(RuntimeError, match="heterogenous dimension is part of the batch"):
        stack.to_padded_tensor(mask_key="mask")


def test_exclusive_keys_are_queryable():
    a, b, stack = ragged()
    assert "extra" not in stack.keys()
    assert stack.get("extra") is None
    assert stack[1]["extra"] is b["extra"]
    assert [("extra" in td.keys()) for td in stack.tensordicts] == [False, True]
    assert "exclusive_fields={1: {extra: f32[]}}" in repr(stack)


def test_ragged_indexing_keeps_parts():
    a, b, stack = ragged()
    assert stack[0] is a and stack[-1] is b
    flipped = stack[torch.tensor([1, 0])]
    assert flipped.tensordicts[0] is b and flipped.tensordicts[1] is a
    masked = stack[torch.tensor([False, True])]
    assert masked.batch_size == torch.Size([1]) and masked.tensordicts[0] is b
    assert stack.unsqueeze(0).get_item_shape("obs") == torch.Size([1, 2, -1])
    holder = TensorDict(obs_stack=stack, batch_size=[2])
    assert holder[1]["obs_stack"] is b  # a parent's index reaches through the lazy child
    assert holder.unsqueeze(-1)["obs_stack"].batch_size == torch.Size([2, 1])
    with pytest.raises(RuntimeError, match="key 'obs'"):
        stack.sum(0)  # a reduction over the stack dim needs the values stacked


def test_parent_indexing_reaches_into_a_ragged_child():
    parts = [TensorDict(x=torch.randn(3, n), batch_size=[3]) for n in (2, 4)]
    holder = TensorDict(child=lazy_stack(parts), batch_size=[2, 3])
    element = holder[1, 2]["child"]
    assert type(element) is TensorDict and element["x"].data_ptr() == parts[1]["x"][2].data_ptr()
    assert holder[0, 1:]["child"]["x"].shape == torch.Size([2, 2])
    assert holder[:, 1]["child"].get("x", as_list=True)[1].shape == torch.Size([4])
    picked = holder[torch.tensor([False, True])]["child"]
    assert type(picked) is LazyStackedTensorDict and picked.tensordicts[0] is parts[1]


# -- ops compared to the dense stack -------------------------------------------------------------
OPS = {
    "index_int": lambda t: t[1],
    "index_slice": lambda t: t[1:],
    "index_inner": lambda t: t[:, 0],
    "index_ellipsis": lambda t: t[..., 1],
    "index_none": lambda t: t[None],
    "index_tensor": lambda t: t[torch.tensor([1, 0, 1])] if t.batch_size[0] == 3 else t[[1, 0]],
    "index_mask": lambda t: t[torch.ones(t.batch_size, dtype=torch.bool)],
    "unsqueeze": lambda t: t.unsqueeze(0),
    "unsqueeze_last": lambda t: t.unsqueeze(-1),
    "squeeze": lambda t: t.unsqueeze(1).squeeze(1),
    "permute": lambda t: t.permute(1, 0),
    "transpose": lambda t: t.transpose(0, 1),
    "reshape": lambda t: t.reshape(-1),
    "flatten": lambda t: t.flatten(),
    "unflatten": lambda t: t.unflatten(1, (1, t.batch_size[1])),
    "expand": lambda t: t.expand(2, *t.batch_size),
    "flip": lambda t: t.flip(0),
    "roll": lambda t: t.roll(1, 1),
    "split": lambda t: t.split(1, 1)[-1],
    "unbind0": lambda t: t.unbind(0)[1],
    "unbind1": lambda t: t.unbind(1)[1],
    "clone": lambda t: t.clone(),
    "copy": lambda t: t.copy(),
    "to_dtype": lambda t: t.to(torch.float64),
    "apply": lambda t: t.apply(lambda x: x * 2),
    "named_apply": lambda t: t.named_apply(lambda k, x: x if k == "x" else None),
    "add": lambda t: t + 1,
    "mul_self": lambda t: t * t,
    "neg": lambda t: -t,
    "eq": lambda t: t == t.clone(),
    "zeros_like": lambda t: torch.zeros_like(t),
    "sum0": lambda t: t.sum(0),
    "mean1": lambda t: t.float().mean(1),
    "amax0": lambda t: t.amax(0),
    "select": lambda t: t.select("x", ("nested", "y")),
    "exclude": lambda t: t.exclude("i"),
    "flatten_keys": lambda t: t.flatten_keys(),
    "masked_fill": lambda t: t.masked_fill(torch.eye(*t.batch_size, dtype=torch.bool), 0),
    "where": lambda t: torch.where(torch.eye(*t.batch_size, dtype=torch.bool), t, t * 0),
    "contiguous": lambda t: t.contiguous(),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_op_matches_dense(pair, name):
    stack, dense, _ = pair
    assert_same(OPS[name](stack), OPS[name](dense))


def test_to_tensordict_is_a_dense_copy(pair):
    stack, dense, parts = pair
    result = stack.to_tensordict()
    assert type(result) is TensorDict
    assert_same(result, dense)
    result["x"].zero_()
    assert not (parts[0]["x"] == 0).all()


def test_all_any_and_tolist(pair):
    stack, dense, _ = pair
    assert (stack == dense).all() and not (stack != dense).any()
    assert stack.to_dict().keys() == dense.to_dict().keys()
    assert len(stack.tolist()) == len(dense.tolist())


def test_shape_ops_stay_lazy_and_share_storage():
    parts = make_parts(2)
    stack = lazy_stack(parts)
    unsqueezed = stack.unsqueeze(0)
    assert type(unsqueezed) is LazyStackedTensorDict and unsqueezed.stack_dim == 1
    assert unsqueezed["x"].shape == torch.Size([1, 2, 2, 3])
    permuted = stack.permute(1, 0)
    assert permuted.stack_dim == 1 and permuted.tensordicts[0] is parts[0]
    assert stack[:, 0].tensordicts[1]["x"].data_ptr() == parts[1]["x"].data_ptr()
    assert stack[1:].tensordicts[0] is parts[1]


def test_nested_lazy_stacks():
    inner = [lazy_stack(make_parts(2, seed=s)) for s in range(3)]
    outer = lazy_stack(inner, 1)
    expected = dense_of([dense_of(i.tensordicts) for i in inner], 1)
    assert outer.batch_size == torch.Size([2, 3, 2])
    assert_same(outer, expected)
    assert_same(outer[:, 1], expected[:, 1])
    assert_same(outer.permute(2, 0, 1), expected.permute(2, 0, 1))
    assert outer[1, 2] is inner[2].tensordicts[1]
    outer[1, 2]["x"] = torch.full((2, 3), 9.0)
    assert (inner[2].tensordicts[1]["x"] == 9).all()


def test_zero_dim_parts():
    parts = [TensorDict(a=torch.tensor(float(i)), s=str(i)) for i in range(4)]
    stack = lazy_stack(parts)
    torch.testing.assert_close(stack["a"], torch.arange(4.0))
    assert stack["s"] == ["0", "1", "2", "3"]
    assert stack[2] is parts[2]
    assert_same(stack[1:3], dense_of(parts[1:3]))


# -- writes reach the parts ----------------------------------------------------------------------
def test_setting_a_key_writes_into_every_part(pair):
    stack, dense, parts = pair
    sd = stack.stack_dim
    value = torch.randn(stack.batch_size + (3,))
    stack["x"] = value
    for k, td in enumerate(parts):
        torch.testing.assert_close(td["x"], value.select(sd, k))
    stack["new", "leaf"] = torch.zeros(stack.batch_size)
    assert all(("new", "leaf") in td.keys(True) for td in parts)
    stack.set_("i", torch.zeros(stack.batch_size, dtype=torch.long))
    assert all((td["i"] == 0).all() for td in parts)


def test_setitem_by_index_writes_through():
    parts = make_parts(3)
    stack = lazy_stack(parts)
    stack[1] = parts[0].clone().apply(lambda x: x * 0 + 5)
    assert (parts[1]["x"] == 5).all() and (parts[1]["nested", "y"] == 5).all()
    stack[0]["x"] = torch.zeros(2, 3)
    assert (parts[0]["x"] == 0).all()
    stack[:, 1] = TensorDict(x=torch.ones(3, 3), batch_size=[3])
    assert all((td["x"][1] == 1).all() for td in parts)
    stack[1:] = 0
    assert (parts[2]["i"] == 0).all() and not (parts[0]["x"] == 0).all()
    stack[torch.tensor([0, 2])] = TensorDict(i=torch.full((2, 2), 7), batch_size=[2, 2])
    assert (parts[0]["i"] == 7).all() and (parts[2]["i"] == 7).all()
    stack[torch.tensor([False, True, False]), 0] = TensorDict(i=torch.full((1,), 8),
                                                              batch_size=[1])
    assert parts[1]["i"].tolist()[0] == 8 and parts[0]["i"].tolist() == [7, 7]
    inner_first = lazy_stack(parts, 1)
    inner_first[1, 1:] = TensorDict(i=torch.full((2,), 3), batch_size=[2])
    assert [td["i"][1].item() for td in parts] == [7, 3, 3]


def test_ragged_stack_written_at_a_tensor_index_of_another_dim():
    """A replay buffer's write: a ragged lazy stack (stack_dim=1) into a preallocated one,
    at rows picked by a tensor; each part takes its own piece, nothing is densified."""
    source = lazy_stack([TensorDict(a=torch.rand(5, 4, 8), batch_size=[5]),
                         TensorDict(a=torch.rand(5, 3, 8), batch_size=[5])], 1)
    storage = torch.empty_like(source[0].expand(6, 2))
    rows = torch.tensor([5, 0, 1, 2, 3])
    storage.update_at_(source, rows)
    for part, src in zip(storage.tensordicts, source.tensordicts):
        assert torch.equal(part["a"][rows], src["a"])
    storage[torch.tensor([1, 2])] = source[3:]
    assert torch.equal(storage.tensordicts[1]["a"][1:3], source.tensordicts[1]["a"][3:])
    with pytest.raises(KeyError, match="missing"):
        storage.update_at_(TensorDict(missing=torch.zeros(2, 2), batch_size=[2, 2]), rows[:2])


def test_updates_write_through():
    parts = make_parts(2)
    stack = lazy_stack(parts)
    stack.update({"x": torch.zeros(2, 2, 3), "k": {"v": torch.ones(2, 2)}})
    assert (parts[1]["x"] == 0).all() and (parts[0]["k", "v"] == 1).all()
    stack.update_(TensorDict(i=torch.full((2, 2), 4), batch_size=[2, 2]))
    assert (parts[0]["i"] == 4).all()
    stack.apply_(lambda x: x + 1)
    assert (parts[1]["i"] == 5).all()
    stack += 1
    assert (parts[1]["i"] == 6).all()
    stack.zero_()
    assert (parts[0]["x"] == 0).all()
    stack.rename_key_("i", "j")
    assert "j" in parts[0].keys() and "i" not in parts[1].keys()
    del stack["j"]
    assert "j" not in parts[0].keys()
    with pytest.raises(KeyError, match="nope"):
        del stack["nope"]


def test_failed_write_changes_nothing():
    parts = make_parts(2)
    stack = lazy_stack(parts)
    before = [td.clone() for td in parts]
    with pytest.raises(RuntimeError, match=r"batch dimension mismatch.*'x'"):
        stack["x"] = torch.zeros(3, 2, 3)
    for td, old in zip(parts, before):
        assert (td == old).all()


def test_lock():
    parts = make_parts(2)
    stack = lazy_stack(parts)
    stack.lock_()
    assert stack.is_locked and all(td.is_locked for td in parts)
    with pytest.raises(RuntimeError, match="locked"):
        stack["new"] = torch.zeros(2, 2)
    stack.set_("x", torch.zeros(2, 2, 3))  # in place is fine
    with pytest.raises(RuntimeError, match="locked"):
        stack.append(parts[0])
    stack.unlock_()
    assert not stack.is_locked and not parts[0].is_locked


# -- list-like growth ------------------------------------------------------------------------
def test_insert_append_extend():
    parts = make_parts(4)
    stack = lazy_stack(parts[:1])
    stack.append(parts[2])
    stack.insert(1, parts[1])
    stack.extend([parts[3]])
    assert stack.batch_size == torch.Size([4, 2]) and stack.tensordicts == parts
    assert_same(stack, dense_of(parts))
    with pytest.raises(ValueError, match="Batch sizes"):
        stack.append(TensorDict(batch_size=[5]))


# -- legacy torch.stack, maybe_dense_stack, pickling ----------------------------------------
def test_lazy_legacy_seed_example():
    with set_lazy_legacy(True):
        tensordicts = [TensorDict({"a": torch.rand(10), "b": torch.rand(10, 50)}, [10])
                       for _ in range(3)]
        stacked = torch.stack(tensordicts, 0)
        assert isinstance(stacked, LazyStackedTensorDict)
        stacked["a"] = torch.zeros_like(stacked["a"])
        assert (tensordicts[0]["a"] == 0).all()
    dense = torch.stack(tensordicts, 0)
    assert type(dense) is TensorDict


def test_maybe_dense_stack():
    a = TensorDict(x=torch.zeros(2))
    c = TensorDict(x=torch.ones(2), y=torch.ones(()))
    lazy = LazyStackedTensorDict.maybe_dense_stack([a, c])
    assert type(lazy) is LazyStackedTensorDict and list(lazy.keys()) == ["x"]
    assert type(LazyStackedTensorDict.maybe_dense_stack([a, a])) is TensorDict


def test_pickle_roundtrip():
    a, b, stack = ragged()
    back = pickle.loads(pickle.dumps(stack))
    assert type(back) is LazyStackedTensorDict
    torch.testing.assert_close(back.get("obs", as_list=True)[1], b["obs"])


# -- reprs -------------------------------------------------------------------------------
def test_compact_and_verbose_repr():
    a, b, stack = ragged()
    assert repr(lazy_stack([TensorDict(x=torch.zeros(3))] * 2)) == (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={x: f32[3]})")
    assert repr(stack) == (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    n: {z: f32[-1,5]},\n    obs: f32[-1],\n    s: str}, "
        "exclusive_fields={1: {extra: f32[]}})")
    assert repr(TensorDict(l=stack, batch_size=[2])).endswith(
        "l: LazyStackedTensorDict{n: {z: f32[-1,5]}, obs: f32[-1], s: str}})")
    with set_printoptions(compact=False):
        text = repr(stack)
    assert "obs: Tensor(shape=torch.Size([2, -1])" in text
    assert "exclusive_fields={\n        1 ->\n            extra: Tensor(shape=torch.Size([])" \
        in text
    assert text.endswith("stack_dim=0)")


def test_non_tensor_entries_of_a_stack():
    a, b, stack = ragged()
    strings = stack.get("s")
    assert isinstance(strings, NonTensorStack) and strings.tolist() == ["a", "b"]
    strings[1] = "changed"
    assert b["s"] == "changed"


def test_rename_key_in_a_stack_holding_one_part_twice():
    part = TensorDict(a=torch.ones(2))
    stack = LazyStackedTensorDict.lazy_stack([part, part])
    stack.rename_key_("a", "z")
    assert list(part.keys()) == ["z"] and stack["z"].shape == torch.Size([2, 2])


def test_rename_key_that_a_part_cannot_rename_renames_nothing():
    has, lacks = TensorDict(a=torch.ones(2)), TensorDict(b=torch.ones(2))
    with pytest.raises(KeyError, match="a"):
        LazyStackedTensorDict.lazy_stack([has, lacks]).rename_key_("a", "z")
    assert list(has.keys()) == ["a"] and list(lacks.keys()) == ["b"]
    free, taken = TensorDict(a=torch.ones(2)), TensorDict(a=torch.ones(2), z=torch.ones(2))
    with pytest.raises(KeyError, match="z"):
        LazyStackedTensorDict.lazy_stack([free, taken]).rename_key_("a", "z", safe=True)
    assert list(free.keys()) == ["a"] and list(taken.keys()) == ["a", "z"]
