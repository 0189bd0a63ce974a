"""TensorDict as a pytree node: tree_map/tree_flatten round trips and torch.vmap."""

import pytest
import torch
from torch.utils._pytree import tree_flatten, tree_map, tree_unflatten

from tensordict import TensorDict


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(6.0).view(2, 3), "n": {"b": torch.ones(2, 3, 4)}, "s": "text"},
        batch_size=[2, 3], names=["x", "y"],
    )


def test_flatten_sees_tensor_leaves_only_and_round_trips():
    td = _td()
    leaves, spec = tree_flatten(td)
    assert [leaf.shape for leaf in leaves] == [torch.Size([2, 3]), torch.Size([2, 3, 4])]
    assert leaves[0] is td["a"] and leaves[1] is td["n", "b"]
    rebuilt = tree_unflatten(leaves, spec)
    assert isinstance(rebuilt, TensorDict) and isinstance(rebuilt["n"], TensorDict)
    assert rebuilt.batch_size == td.batch_size and rebuilt.names == ["x", "y"]
    assert rebuilt["n"].names == ["x", "y"]
    assert rebuilt["s"] == "text" and rebuilt["n", "b"] is td["n", "b"]


def test_tree_map_matches_leafwise_op():
    td = _td()
    out = tree_map(lambda t: t * 2 + 1, td)
    for key in td.keys(True, True):
        if key != "s":
            assert torch.equal(out.get(key), td.get(key) * 2 + 1)
    assert out.batch_size == td.batch_size and out.names == td.names and out["s"] == "text"


def test_tree_map_shrinking_leaves_follows_them():
    td = _td()
    first = tree_map(lambda t: t[0], td)
    assert first.batch_size == torch.Size([3]) and first["n"].batch_size == torch.Size([3])
    reduced = tree_map(lambda t: t.sum(-1), td)  # "a" loses a batch dim, "b" a feature dim
    assert reduced.batch_size == torch.Size([2]) and reduced["n"].batch_size == torch.Size([2, 3])
    sliced = tree_map(lambda t: t[:1], td)
    assert sliced.batch_size == torch.Size([1, 3]) and sliced.names == ["x", "y"]


def test_zero_dim_and_empty_and_device():
    td = TensorDict({"a": torch.zeros(())}, device="cpu")
    out = tree_map(lambda t: t + 1, td)
    assert out.device == torch.device("cpu") and out["a"] == 1
    empty = TensorDict(batch_size=[4])
    leaves, spec = tree_flatten(empty)  # one zero-size leaf carries the batch size
    assert [leaf.shape for leaf in leaves] == [torch.Size([4, 0])]
    rebuilt = tree_unflatten(leaves, spec)
    assert rebuilt.batch_size == torch.Size([4]) and list(rebuilt.keys()) == []


def test_vmap_over_a_tensordict_without_tensors():
    """TorchRL's value estimators vmap a network over an empty selection of the data."""
    out = torch.vmap(lambda t: t.set("v", torch.ones(*t.shape, 1)), (0,))(
        TensorDict(batch_size=[2, 4]))
    assert out.batch_size == torch.Size([2, 4]) and out["v"].shape == torch.Size([2, 4, 1])
    text = torch.vmap(lambda t: t)(TensorDict(s="x", batch_size=[3]))
    assert text.batch_size == torch.Size([3]) and text["s"] == "x"


def test_vmap_leaves_made_inside_count_as_mapped():
    td = TensorDict(a=torch.arange(6.).reshape(3, 2), batch_size=[3, 2])
    out = torch.vmap(lambda t: t.set("made", torch.zeros(2)))(td)
    assert out.batch_size == torch.Size([3, 2]) and out["made"].shape == torch.Size([3, 2])


def test_vmap_one_element_out_dims_for_one_tensordict():
    td = TensorDict(x=torch.arange(6.).reshape(3, 2), batch_size=[3])
    out = torch.vmap(lambda t: t.set("y", t["x"] * 2), (0,), (0,))(td)
    assert out.batch_size == torch.Size([3]) and torch.equal(out["y"], td["x"] * 2)
    moved = torch.vmap(lambda t: t.set("y", t["x"] * 2), (0,), (1,))(td)
    assert moved["y"].shape == torch.Size([2, 3])


def test_pytree_nested_in_containers():
    td = _td()
    tree = {"td": td, "t": torch.zeros(1), "list": [td["n"]]}
    leaves, spec = tree_flatten(tree)
    assert len(leaves) == 4
    rebuilt = tree_unflatten(leaves, spec)
    assert isinstance(rebuilt["list"][0], TensorDict)
    assert rebuilt["td"]["n", "b"] is td["n", "b"]


def test_vmap_in_dims_zero_and_none():
    td = TensorDict({"a": torch.randn(5, 3), "n": {"b": torch.randn(5, 3)}}, [5])
    seen = []

    def f(td, x):
        seen.append((td.batch_size, td["n"].batch_size, td["a"].shape))
        return td["a"] * x + td["n", "b"]

    x = torch.randn(3)
    out = torch.vmap(f, (0, None))(td, x)
    assert seen[0] == (torch.Size([]), torch.Size([]), torch.Size([3]))
    assert torch.allclose(out, td["a"] * x + td["n", "b"])
    out = torch.vmap(f, (None, 0))(td, torch.randn(7, 3))
    assert out.shape == (7, 5, 3)


def test_vmap_non_leading_dim_names_and_output_restacked():
    td = _td()
    seen = []

    def f(td):
        seen.append((td.batch_size, td.names, td["n"].batch_size))
        out = td.clone()
        out["c"] = td["a"] + 1
        return out

    out = torch.vmap(f, 1)(td)
    assert seen[0] == (torch.Size([2]), ["x"], torch.Size([2]))
    assert out.batch_size == torch.Size([3, 2]) and out.names == [None, "x"]
    assert torch.equal(out["c"], td["a"].T + 1)
    assert out["s"] == "text"
    moved = torch.vmap(f, 0, out_dims=1)(td)
    assert moved.batch_size == torch.Size([3, 2])
    assert torch.equal(moved["n", "b"], td["n", "b"].transpose(0, 1))


def test_vmap_batch_size_changes_inside_and_nested_vmap():
    td = TensorDict({"a": torch.randn(2, 3)}, [2])
    out = torch.vmap(lambda t: TensorDict({"x": t["a"].sum()}, []))(td)
    assert out.batch_size == torch.Size([2]) and torch.allclose(out["x"], td["a"].sum(-1))
    built = torch.vmap(lambda t: TensorDict({"x": t}, batch_size=[3]))(torch.zeros(2, 3))
    assert built.batch_size == torch.Size([2, 3])
    grid = TensorDict({"a": torch.randn(2, 3, 4)}, [2, 3])
    doubled = torch.vmap(torch.vmap(lambda t: TensorDict({"x": t["a"] * 2}, [])))(grid)
    assert doubled.batch_size == torch.Size([2, 3])
    assert torch.equal(doubled["x"], grid["a"] * 2)


def test_vmap_square_shapes_are_not_confused():
    # batch [3] with leaves [3, 3]: inside vmap the leaf [3] must give batch []
    td = TensorDict({"a": torch.randn(3, 3)}, [3])
    sizes = []
    torch.vmap(lambda t: sizes.append(t.batch_size) or t["a"])(td)
    assert sizes == [torch.Size([])]


def test_vmap_out_dims_must_match_the_outputs():
    # a one-element tuple stands for the one TensorDict returned; other mismatches raise
    td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3])
    out = torch.vmap(lambda t: t, 0, out_dims=(1,))(td)
    assert out.batch_size == torch.Size([3, 2]) and out["a"].shape == torch.Size([3, 2, 4])
    with pytest.raises(ValueError, match="out_dims"):
        torch.vmap(lambda t: t, 0, out_dims=(1, 0))(_td())


def test_lazy_stack_flattens_into_its_tensordicts():
    from tensordict import lazy_stack

    parts = [TensorDict(a=torch.zeros(3), batch_size=[3]),
             TensorDict(a=torch.ones(3), b=torch.ones(3, 2), batch_size=[3])]
    stacked = lazy_stack(parts, 1)
    leaves, _ = tree_flatten(stacked)
    assert len(leaves) == 3 and leaves[0] is parts[0]["a"]
    out = tree_map(lambda t: t + 1, stacked)
    assert type(out) is type(stacked) and out.stack_dim == 1
    assert out.batch_size == torch.Size([3, 2])
    assert torch.equal(out.tensordicts[1]["b"], parts[1]["b"] + 1)


def test_vmap_over_the_dims_of_a_lazy_stack_with_hooks_raises_clearly():
    from tensordict import LazyStackedTensorDict

    # (other lazy stacks go through vmap as one unit: see test_vmap_lazy.py)
    stacked = LazyStackedTensorDict(TensorDict(a=torch.zeros(3), batch_size=[3]),
                                    TensorDict(a=torch.ones(3), batch_size=[3]),
                                    hook_out=lambda x: x)
    with pytest.raises(ValueError, match="contiguous"):
        torch.vmap(lambda t: t["a"] + 1)(stacked)
    out = torch.vmap(lambda x, t: t["a"] + x, (0, None))(torch.ones(2), stacked)
    assert out.shape == (2, 2, 3)


def test_vmap_returning_a_lazy_stack_puts_the_mapped_dim_first():
    from tensordict import lazy_stack

    def make(x):
        return lazy_stack([TensorDict(a=x, batch_size=[]), TensorDict(a=2 * x, batch_size=[])])

    out = torch.vmap(make)(torch.arange(4.0))
    assert out.batch_size == (4, 2) and out.stack_dim == 1
    assert torch.equal(out["a"], torch.stack([torch.arange(4.0), 2 * torch.arange(4.0)], 1))


class _Doubler(torch.nn.Module):
    """A module (no ``__name__``) counting how often it is printed."""

    printed = 0

    def forward(self, td):
        return td * 2

    def __repr__(self):
        type(self).printed += 1
        return "_Doubler"


def test_vmap_of_a_module_returning_a_tensordict_does_not_print_it():
    # torch names vmap's function once per output tensor (by repr, for a module): the
    # module is named by its class instead, in the error messages that use the name
    td = TensorDict({f"k{i}": torch.randn(4, 3) for i in range(5)}, batch_size=[4])
    module = _Doubler()
    out = torch.vmap(module)(td)
    assert torch.equal(out["k3"], td["k3"] * 2) and out.batch_size == torch.Size([4])
    assert _Doubler.printed == 0
    with pytest.raises(ValueError, match=r"vmap\(_Doubler\(\), \.\.\.\): `_Doubler\(\)` can "
                                         r"not return a BatchedTensor"):
        torch.vmap(module, out_dims=None)(td)
    assert _Doubler.printed == 0


def test_a_tensordict_tree_is_one_pytree_node_with_nested_key_paths():
    # sub-TensorDicts are flattened into their root's node (torch's pytree costs per
    # node); a leaf's key path is its nested key, which key_get follows
    from torch.utils._pytree import key_get, keystr, tree_flatten_with_path

    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2, 3), "m": {"c": torch.ones(2)}},
                     "s": "text"}, batch_size=[2])
    leaves, spec = tree_flatten(td)
    assert spec.num_children == 3 and all(child.is_leaf() for child in spec.children_specs)
    assert [leaf.shape for leaf in leaves] == [(2,), (2, 3), (2,)]
    paths, _ = tree_flatten_with_path(td)
    assert [keystr(path) for path, _ in paths] == \
        ["['a']", "[('n', 'b')]", "[('n', 'm', 'c')]"]
    assert all(key_get(td, path) is leaf for path, leaf in paths)
    rebuilt = tree_unflatten([leaf + 1 for leaf in leaves], spec)
    assert rebuilt["n"].batch_size == torch.Size([2]) and rebuilt["n", "m", "c"].eq(2).all()
    assert rebuilt["s"] == "text"
    other = td.clone()
    other.rename_key_(("n", "m"), ("n", "x"))
    assert tree_flatten(other)[1] != spec  # the nested keys are part of the structure


@pytest.mark.parametrize("strict", [False, True])
def test_export_names_nested_inputs_by_level(strict):
    class AddNested(torch.nn.Module):
        def forward(self, td):
            return td["a"] + td["n", "m", "c"]

    td = TensorDict({"a": torch.ones(2), "n": {"m": {"c": torch.ones(2)}}}, [2])
    program = torch.export.export(AddNested(), (td,), strict=strict)
    names = [spec.arg.name for spec in program.graph_signature.input_specs]
    assert names == ["td_a", "td_n_m_c"]
    assert torch.equal(program.module()(td), torch.full((2,), 2.0))


@pytest.mark.parametrize("batch_size,shapes,new_shapes,expected", [
    ([3], [(3,)], [(5, 3, 3)], (5, 3)),  # one leading dim gained: the batch gains it
    ([2, 3], [(2, 3)], [(5, 2, 3)], (5, 2, 3)),
    ([3], [(3,), (3, 2)], [(5, 3), (5, 3, 2)], (5, 3)),
    ([3], [(3, 2)], [(5, 3, 3, 2)], (5, 3)),
    ([3], [(3,)], [(5, 4)], (5,)),  # else the leading dims the leaves share
    ([3], [(3,)], [(5, 6, 3)], (5,)),
    ([2, 3], [(2, 3)], [(5, 4, 2, 3)], (5, 4)),
    ([3], [(3,)], [(3, 5)], (3,)),  # still fits: kept
])
def test_unflatten_with_leaves_of_new_shapes(batch_size, shapes, new_shapes, expected):
    # the batch sizes upstream's unflatten gives for these leaves
    td = TensorDict({f"k{i}": torch.zeros(s) for i, s in enumerate(shapes)}, batch_size)
    out = tree_unflatten([torch.zeros(s) for s in new_shapes], tree_flatten(td)[1])
    assert tuple(out.batch_size) == expected
