"""torch.* on TensorDicts: stack/cat, factories, losses, where, assert_close, plugins."""

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

import tensordict
from tensordict import NonTensorData, NonTensorStack, TensorDict, lazy_stack


def make(i=0.0):
    return TensorDict(
        a=torch.full((2, 3), i),
        nested=TensorDict(c=torch.full((2, 3, 4), i), batch_size=[2, 3, 4]),
        s="text",
        batch_size=[2, 3],
        names=["x", "y"],
    )


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_stack_matches_leafwise(dim):
    tds = [make(i) for i in range(3)]
    out = torch.stack(tds, dim)
    d = dim % 3
    for key in ["a", ("nested", "c")]:
        torch.testing.assert_close(out[key], torch.stack([td[key] for td in tds], d))
    assert out.batch_size == torch.stack([torch.zeros(2, 3)] * 3, d).shape
    assert out["nested"].batch_size == out.batch_size + torch.Size([4])
    names = ["x", "y"]
    names.insert(d, None)
    assert out.names == names
    assert isinstance(out.get("s"), NonTensorStack)
    assert out.get("s").batch_size == out.batch_size
    assert tensordict.stack(tds, dim)["a"].shape == out["a"].shape
    assert TensorDict.stack(tds, dim)["a"].shape == out["a"].shape


def test_stack_non_tensor_values_follow():
    tds = [TensorDict(s=f"v{i}", batch_size=[2]) for i in range(3)]
    out = torch.stack(tds, 1)
    assert out["s"] == [["v0", "v1", "v2"]] * 2
    with tensordict.set_capture_non_tensor_stack(True):
        same = torch.stack([TensorDict(s="v", batch_size=[2])] * 2)
    assert isinstance(same.get("s"), NonTensorData) and same["s"] == "v"


def test_stack_errors_name_key_and_shapes():
    a = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(RuntimeError, match=r"lacks \[\('a',\)\].*\[\('b',\)\]"):
        torch.stack([a, TensorDict(b=torch.zeros(2), batch_size=[2])])
    with pytest.raises(RuntimeError, match=r"\('a',\).*\[\(2,\), \(2, 3\)\]"):
        torch.stack([a, TensorDict(a=torch.zeros(2, 3), batch_size=[2])])
    with pytest.raises(RuntimeError, match="batch sizes"):
        torch.stack([a, TensorDict(a=torch.zeros(3), batch_size=[3])])
    with pytest.raises(RuntimeError, match="non-empty"):
        tensordict.stack([])


def test_stack_of_mixed_collections_matches_a_dense_stack():
    # plain TensorDicts are read straight from their slots; any other collection in the
    # list (a lazy stack, a sub-entry of another class) goes through the general reads
    dense = [TensorDict(a=torch.full((2,), float(i)), n={"b": torch.ones(2, 3)},
                        batch_size=[2]) for i in range(3)]
    mixed = [dense[0], lazy_stack([dense[1][0], dense[1][1]]), dense[2]]
    sub_mixed = [td.clone(recurse=False) for td in dense]
    sub_mixed[1]["n"] = lazy_stack([dense[1]["n"][0], dense[1]["n"][1]])
    expected = torch.stack(dense, 1)
    for tds in (mixed, sub_mixed):
        for fn, dim in ((torch.stack, 1), (torch.cat, 0)):
            out = fn(tds, dim)
            reference = fn(dense, dim)
            assert out.batch_size == reference.batch_size
            torch.testing.assert_close(out["a"], reference["a"])
            torch.testing.assert_close(out["n", "b"], reference["n", "b"])
    assert torch.stack(mixed, 1).batch_size == expected.batch_size
    with pytest.raises(RuntimeError, match="batch sizes"):
        torch.stack([dense[0], dense[1][:1]])
    with pytest.raises(RuntimeError, match=r"entry \('n',\).*batch sizes"):
        bad = dense[2].clone(recurse=False)
        bad["n"] = TensorDict(b=torch.ones(2, 3), batch_size=[2, 3])
        torch.stack([dense[0], bad])


def test_stack_names_the_position_of_what_is_no_tensordict():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(TypeError, match="got a int at position 2"):
        tensordict.stack([td, td, 3])


def test_stack_out_and_cat_out():
    tds = [make(i) for i in range(2)]
    out = torch.stack(tds, 0).zero_()
    a = out["a"]
    result = torch.stack(tds, 0, out=out)
    assert result is out and out["a"] is a
    torch.testing.assert_close(a[1], tds[1]["a"])
    out = torch.cat(tds, 0).zero_()
    assert torch.cat(tds, 0, out=out) is out
    torch.testing.assert_close(out["nested", "c"][2:], tds[1]["nested", "c"])


def test_stack_out_writes_only_the_entries_out_holds():
    # as upstream (TorchRL's collectors stack steps holding more keys than their buffer)
    steps = [TensorDict({"a": torch.full((2,), float(i)), "extra": torch.ones(2),
                         ("n", "x"): torch.ones(2), ("n", "y"): torch.ones(2)}, [2])
             for i in range(3)]
    out = TensorDict(a=torch.zeros(3, 2), n=TensorDict(x=torch.zeros(3, 2), batch_size=[3, 2]),
                     kept=torch.full((3, 2), 7.0), batch_size=[3, 2])
    assert torch.stack(steps, 0, out=out) is out
    assert list(out.keys(True, True)) == ["a", ("n", "x"), "kept"]
    torch.testing.assert_close(out["a"][:, 0], torch.tensor([0.0, 1.0, 2.0]))
    assert (out["n", "x"] == 1).all() and (out["kept"] == 7).all()
    flat = TensorDict(a=torch.zeros(6), batch_size=[6])
    assert sorted(torch.cat(steps, 0, out=flat).keys()) == ["a"]
    lazy = [lazy_stack([TensorDict(a=torch.ones(()), b=torch.ones(()))] * 2) for _ in range(3)]
    into = TensorDict(a=torch.zeros(3, 2), batch_size=[3, 2])
    assert torch.stack(lazy, 0, out=into) is into and (into["a"] == 1).all()
    assert list(into.keys()) == ["a"]


def test_stack_out_writes_non_tensor_entries():
    steps = [TensorDict({"a": torch.full((), float(i)), "nt": f"s{i}", "n": {"nt": f"n{i}"}}, [])
             for i in range(3)]
    out = TensorDict({"a": torch.zeros(3), "nt": NonTensorData("init", batch_size=[3]),
                      "n": {"nt": NonTensorData("init", batch_size=[3])}}, [3])
    assert torch.stack(steps, 0, out=out) is out
    assert out["nt"] == ["s0", "s1", "s2"] and out["n", "nt"] == ["n0", "n1", "n2"]
    out.lock_()  # a non-tensor entry is replaced: refused, before any write
    with pytest.raises(RuntimeError, match="locked"):
        torch.stack([step.clone().set("a", torch.tensor(9.0)) for step in steps], 0, out=out)
    torch.testing.assert_close(out["a"], torch.tensor([0.0, 1.0, 2.0]))


def test_lazy_stack_entry_class_stacks_nothing():
    parts = [TensorDict({"n": {"c": torch.zeros(1, 2)}}, [1]),
             TensorDict({"n": {"c": torch.zeros(1, 3)}}, [1])]
    stacked = lazy_stack(parts)
    assert stacked.entry_class(("n", "c")) is torch.Tensor  # shapes differ: no dense stack
    assert stacked.entry_class("n") is type(stacked["n"])


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cat_matches_leafwise(dim):
    tds = [make(i) for i in range(3)]
    out = torch.cat(tds, dim)
    for key in ["a", ("nested", "c")]:
        torch.testing.assert_close(out[key], torch.cat([td[key] for td in tds], dim % 2))
    assert out.names == ["x", "y"]
    assert isinstance(out.get("s"), NonTensorData) and out["s"] == "text"
    with pytest.raises(RuntimeError, match="batch sizes"):
        torch.cat([make(), make()[:, :2]], 0)
    with pytest.raises(RuntimeError, match="different keys"):
        torch.cat([make(), make().exclude("a")], 0)


def test_maybe_dense_stack_and_lazy_legacy():
    same = [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))]
    assert type(tensordict.maybe_dense_stack(same)) is TensorDict
    different = [TensorDict(a=torch.zeros(2)), TensorDict(b=torch.ones(2))]
    lazy = tensordict.maybe_dense_stack(different)
    assert type(lazy).__name__ == "LazyStackedTensorDict"
    with tensordict.set_lazy_legacy(True):
        assert type(torch.stack(same)).__name__ == "LazyStackedTensorDict"


def test_unbind_split_chunk_through_torch():
    td = make()
    assert [t.batch_size for t in torch.unbind(td, 1)] == [torch.Size([2])] * 3
    assert [t.batch_size[1] for t in torch.split(td, 2, 1)] == [2, 1]
    assert [t.batch_size[0] for t in torch.chunk(td, 2)] == [1, 1]
    assert [t.batch_size[1] for t in torch.tensor_split(td, 3, 1)] == [1, 1, 1]


@pytest.mark.parametrize("factory,check", [
    (torch.zeros_like, lambda x: (x == 0).all()),
    (torch.ones_like, lambda x: (x == 1).all()),
    (lambda td: torch.full_like(td, 3.0), lambda x: (x == 3).all()),
    (torch.empty_like, lambda x: True),
    (torch.rand_like, lambda x: ((x >= 0) & (x < 1)).all()),
    (torch.randn_like, lambda x: x.isfinite().all()),
])
def test_factories(factory, check):
    td = make(5.0)
    out = factory(td)
    assert out.batch_size == td.batch_size and out["s"] == "text"
    for key in ["a", ("nested", "c")]:
        assert out[key].shape == td[key].shape and bool(check(out[key]))
        assert out[key].data_ptr() != td[key].data_ptr()


def test_clone_where_gather_masked_select():
    td = make(1.0)
    clone = torch.clone(td)
    assert clone["a"].data_ptr() != td["a"].data_ptr()
    cond = torch.tensor([[True, False, True]] * 2)
    out = torch.where(cond, td, torch.zeros(()))
    assert out["a"].tolist() == [[1.0, 0.0, 1.0]] * 2
    cond_td = td.apply(lambda x: x > 0) & td.apply(lambda x: torch.rand_like(x) > 2)
    out = torch.where(cond_td, td, 5.0)
    assert (out["nested", "c"] == 5).all()
    out = torch.where(cond_td, td, td * 2)
    assert (out["a"] == 2).all()
    assert torch.gather(td, 1, torch.tensor([[0], [2]])).batch_size == torch.Size([2, 1])
    assert torch.masked_select(td, cond).batch_size == torch.Size([4])


def test_losses():
    td, other = make(1.0), make(3.0)
    out = F.mse_loss(td, other)
    assert out.batch_size == torch.Size([]) and out["a"] == 4.0
    assert out["nested"].batch_size == torch.Size([]) and out["nested", "c"] == 4.0
    out = F.l1_loss(td, other, reduction="none")
    assert out.batch_size == td.batch_size and (out["nested", "c"] == 2).all()
    assert F.smooth_l1_loss(td, other)["a"] == 1.5


def test_autograd_grad():
    x = torch.ones(2, requires_grad=True)
    params = TensorDict(x=x)
    out = TensorDict(y=(x ** 2).sum())
    grads = torch.autograd.grad(out, params)
    assert grads["x"].tolist() == [2.0, 2.0]


def test_unhandled_function_raises_type_error_and_plugin_hook():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(TypeError):
        torch.matmul(td, td)

    class Plugin:
        @tensordict.hookimpl
        def tensordict_torch_functions(self):
            return {torch.matmul: lambda a, b: a.apply(lambda x, y: x @ y, b,
                                                       batch_size=[])}

    plugin = tensordict.plugins.register(Plugin())
    try:
        assert torch.matmul(td + 1, td + 2)["a"] == 4.0
    finally:
        tensordict.plugins.unregister(plugin)


def test_assert_close():
    td = make(1.0)
    assert tensordict.assert_close(td, td.clone())
    assert tensordict.assert_allclose_td(td, td + 1e-9)
    with pytest.raises(AssertionError, match=r"key \('a',\) does not match, got mse = 1.0000"):
        tensordict.assert_close(td, td + 1)
    changed = td.clone()
    changed["s"] = "other"
    with pytest.raises(AssertionError, match=r"\('s',\)"):
        tensordict.assert_close(td, changed)
    with pytest.raises(KeyError, match="only in actual"):
        tensordict.assert_close(td, td.exclude("a"))
    assert tensordict.assert_close(td, td.exclude("a"), intersection=True)
    tensor_only = td.exclude("s")
    torch.testing.assert_close(tensor_only, tensor_only.clone())
    with pytest.raises(AssertionError):
        torch.testing.assert_close(tensor_only, tensor_only + 1)


def test_seed_stack_and_cat_shapes():
    data = TensorDict({"key 1": torch.ones(3, 4, 5), "key 2": torch.zeros(3, 4, 5)},
                      batch_size=[3, 4])
    assert torch.stack([data, data], 0).shape == torch.Size([2, 3, 4])
    assert torch.cat([data, data], 0).shape == torch.Size([6, 4])
    assert data[..., :2].batch_size == torch.Size([3, 2])


def test_cat_different_lengths_nested_and_non_tensor():
    tds = [TensorDict(a=torch.full((n, 2), float(n)), s=f"v{n}",
                      nested=TensorDict(c=torch.zeros(n, 3, 1), batch_size=[n, 3]),
                      batch_size=[n]) for n in (1, 3)]
    out = torch.cat(tds)
    assert out.batch_size == torch.Size([4]) and out["nested"].batch_size == torch.Size([4, 3])
    assert out["a"][:, 0].tolist() == [1.0, 3.0, 3.0, 3.0]
    assert out["s"] == ["v1", "v3", "v3", "v3"]
