"""Tensor-like constructors, leaf combining, quantile / key_transform / out= on the
reductions, apply(out=) and keys(is_leaf=<custom>): the results upstream 0.15.3 gives."""

from __future__ import annotations

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict


def _td() -> TensorDict:
    return TensorDict(a=torch.ones(2, 3, 4), b={"c": torch.arange(6).reshape(2, 3)},
                      batch_size=[2, 3])


def _shapes(td) -> dict:
    return {key: (tuple(v.shape), v.dtype) for key, v in td.items(True, True)}


# -- new_* ---------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(5,), ((5,),), (torch.Size([5]),)])
def test_new_zeros_takes_the_batch_size_and_keeps_feature_dims(size):
    out = _td().new_zeros(*size)
    assert out.batch_size == (5,)
    assert _shapes(out) == {"a": ((5, 4), torch.float32), ("b", "c"): ((5,), torch.int64)}
    assert out["a"].sum() == 0


def test_new_empty_without_size_and_with_two_dims():
    assert _td().new_empty().batch_size == ()
    assert _td().new_empty()["a"].shape == (4,)
    assert _td().new_empty(5, 6)["a"].shape == (5, 6, 4)


def test_new_ones_full_dtype_and_fill_cast():
    td = _td()
    assert td.new_ones(5, dtype=torch.float64)["b", "c"].dtype == torch.float64
    assert td.new_full((5,), 3.5)["b", "c"].tolist() == [3] * 5
    assert td.new_full(5, 3)["a"].shape == (5, 4)


def test_new_zeros_requires_grad_refuses_int_leaves_and_keeps_device():
    with pytest.raises(RuntimeError, match="floating point"):
        _td().new_zeros(5, requires_grad=True)
    assert TensorDict(a=torch.ones(2)).new_zeros(3, requires_grad=True)["a"].requires_grad
    assert _td().new_zeros(5).device is None
    assert _td().new_zeros(5, device="cpu").device == torch.device("cpu")
    assert not _td().lock_().new_zeros(5).is_locked


def test_new_zeros_names_align_right_and_sub_batch_dims_are_kept():
    named = TensorDict(a=torch.ones(2, 3), batch_size=[2, 3], names=["x", "y"])
    assert named.new_zeros(5).names == ["y"]
    assert TensorDict(a=torch.ones(2, 3), batch_size=[2], names=["x"]).new_zeros(5, 6).names \
        == [None, "x"]
    nested = TensorDict(a=torch.ones(2, 3),
                        b=TensorDict(c=torch.ones(2, 3, 4), batch_size=[2, 3]), batch_size=[2])
    out = nested.new_zeros(5)
    assert out["b"].batch_size == (5, 3) and out["b", "c"].shape == (5, 3, 4)


def test_new_zeros_keeps_non_tensor_data():
    td = TensorDict(a=torch.ones(2, 3), n="hello", batch_size=[2])
    out = td.new_zeros(5)
    assert out["n"] == "hello" and out.get("n").batch_size == (5,)


def test_new_zeros_on_lazy_stacks():
    lazy = LazyStackedTensorDict(TensorDict(a=torch.ones(3)), TensorDict(a=torch.ones(3)),
                                 stack_dim=0)
    dense = lazy.new_zeros(4)
    assert type(dense) is TensorDict and dense["a"].shape == (4, 3)
    empty = lazy.new_zeros(4, empty_lazy=True)
    assert isinstance(empty, LazyStackedTensorDict) and empty.batch_size == (4,)
    assert all(part.is_empty() for part in empty.tensordicts)


def test_new_tensor_copies_data_with_each_leaf_dtype():
    td = _td()
    with pytest.warns(UserWarning):
        out = td.new_tensor(torch.zeros(3, 4))
    assert out.batch_size == (3, 4)
    assert _shapes(out) == {"a": ((3, 4), torch.float32), ("b", "c"): ((3, 4), torch.int64)}
    assert td.new_tensor(3.0).batch_size == ()
    source = TensorDict(a=torch.zeros(3, dtype=torch.int64) + 7,
                        b={"c": torch.zeros(3) + 1.5}, z=torch.zeros(3), batch_size=[3])
    with pytest.warns(UserWarning):  # torch's, for a tensor given to new_tensor
        out = td.new_tensor(source)
    assert out["b", "c"].tolist() == [1, 1, 1] and out["a"].dtype == torch.float32
    assert "z" not in out.keys()
    assert "n" not in TensorDict(a=torch.ones(2), n="x", batch_size=[2]).new_tensor([1.0]).keys()
    with pytest.raises(KeyError):
        td.new_tensor(TensorDict(x=torch.zeros(3), batch_size=[3]))


# -- copy_at_, get_at, _get_sub_tensordict ---------------------------------------------------
def _indexed() -> TensorDict:
    return TensorDict(a=torch.arange(12.).reshape(3, 4), b={"c": torch.arange(3)},
                      batch_size=[3])


def test_copy_at_writes_the_index_and_returns_self():
    td = _indexed()
    assert td.copy_at_(TensorDict(a=torch.zeros(4), b={"c": torch.tensor(9)}), 1) is td
    assert td["a"][1].tolist() == [0.0] * 4 and td["b", "c"].tolist() == [0, 9, 2]
    td.copy_at_(TensorDict(a=torch.ones(2, 4), batch_size=[2]), slice(0, 3, 2))
    assert td["a"][:, 0].tolist() == [1.0, 0.0, 1.0]


@pytest.mark.parametrize("source", [
    TensorDict(z=torch.zeros(4)),                       # a key missing here
    TensorDict(a=torch.zeros(5)),                       # another shape
    TensorDict(a=torch.zeros(4), b={"c": torch.tensor(1), "d": torch.tensor(2)}),  # late key
    {"a": torch.zeros(4)},                              # not a TensorDict
])
def test_copy_at_fast_refuses_before_any_write(source):
    td = _indexed()
    before = td.clone()
    with pytest.raises(RuntimeError, match="fast=True"):
        td.copy_at_(source, 1)
    assert (td == before).all()


def test_copy_at_slow_path_and_lazy_stacks():
    td = _indexed()
    td.copy_at_({"a": torch.zeros(4)}, 1, fast=False)
    assert td["a"][1].sum() == 0
    lazy = LazyStackedTensorDict(TensorDict(a=torch.ones(3)), TensorDict(a=torch.ones(3)),
                                 stack_dim=0)
    with pytest.raises(RuntimeError, match="fast=True"):  # as upstream: no fast path
        lazy.copy_at_(TensorDict(a=torch.zeros(3) + 7), 1)
    lazy.copy_at_(TensorDict(a=torch.zeros(3) + 7), 1, fast=False)
    assert lazy.tensordicts[1]["a"].tolist() == [7.0] * 3


def test_get_at_and_sub_tensordict_views():
    td = _indexed()
    assert td.get_at("a", 1).tolist() == [4.0, 5.0, 6.0, 7.0]
    assert td.get_at("z", 1) is None and td.get_at("z", 1, default=0) == 0
    td._get_sub_tensordict(0).set_("a", torch.ones(4) + 5)
    assert td["a"][0].tolist() == [6.0] * 4
    assert not td._has_names()


# -- as_tensor, backward, pad, quantized casts ----------------------------------------------
def test_as_tensor_keeps_leaves_and_non_tensor_data():
    td = TensorDict(a=torch.ones(2), n="x", batch_size=[2])
    out = td.as_tensor()
    assert out is not td and out["a"] is td["a"] and out["n"] == "x"


def test_backward_sums_scalar_leaves_requiring_grad():
    x = torch.ones(3, requires_grad=True)
    TensorDict(a=(2 * x).sum(), b=(3 * x).sum(), c=torch.zeros(3)).backward()
    assert x.grad.tolist() == [5.0] * 3
    x.grad = None
    TensorDict(a=2 * x).backward(TensorDict(a=torch.ones(3)), inputs=TensorDict(x=x))
    assert x.grad.tolist() == [2.0] * 3


def test_backward_errors():
    x = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"key 'b' has shape \(3,\)"):
        TensorDict(a=(2 * x).sum(), b=3 * x).backward()
    with pytest.raises(RuntimeError, match="no leaf tensor requiring gradients"):
        TensorDict(a=torch.ones(())).backward()


def test_pad_method():
    td = _indexed()
    out = td.pad([1, 2], value=-1)
    assert out.batch_size == (6,) and out["b", "c"].tolist() == [-1, 0, 1, 2, -1, -1]
    assert td.pad([-1, 0]).batch_size == (2,)
    two = TensorDict(a=torch.ones(2, 3), batch_size=[2, 3], names=["x", "y"])
    assert two.pad([1, 1, 2, 2]).batch_size == (4, 7)
    assert two.pad([1, 1]).names == ["x", "y"]
    for bad in ([1], [1, 2, 0, 0]):
        with pytest.raises(RuntimeError):
            td.pad(bad)
    same = td.clone()
    assert same.pad([1, 1], inplace=True) is same and same.batch_size == (5,)
    assert same["a"].shape == (5, 4)
    locked = td.clone().lock_()
    with pytest.raises(RuntimeError):
        locked.pad([1, 1], inplace=True)
    assert locked.batch_size == (3,)


@pytest.mark.parametrize("name", ["qint8", "quint8", "qint32", "quint4x2"])
def test_quantized_casts_filter_by_key_tuple(name):
    td = TensorDict(a=torch.randn(3, 2), n={"i": torch.arange(3)}, batch_size=[3])
    seen = []
    out = getattr(td, name)(cast_filter=lambda key, x: seen.append(key) or False)
    assert seen == [("a",), ("n", "i")] and out["a"].dtype == torch.float32
    with pytest.raises(RuntimeError):  # torch cannot build quantized tensors this way
        getattr(td, name)()


def test_clear_refs_for_compile_returns_self():
    td = _td()
    assert td.clear_refs_for_compile_() is td


# -- from_list, from_dict_instance ---------------------------------------------------------
def test_from_list():
    items = [{"a": torch.zeros(3)}, {"a": torch.ones(3)}]
    td = TensorDict.from_list(items)
    assert type(td) is TensorDict and td.batch_size == (2,) and td["a"].shape == (2, 3)
    assert TensorDict.from_list(items, auto_batch_size=True).batch_size == (2, 3)
    assert TensorDict.from_list(items, batch_dims=2).batch_size == (2, 3)
    assert TensorDict.from_list(items, names=["x"]).names == ["x"]
    assert TensorDict.from_list(items, device="cpu").device == torch.device("cpu")
    assert isinstance(TensorDict.from_list(items, lazy=True), LazyStackedTensorDict)
    assert TensorDict.from_list([{"a": 1}, {"a": 2}])["a"].tolist() == [1, 2]
    assert isinstance(TensorDict.from_list([{"a": torch.zeros(3)}, {"b": torch.ones(3)}]),
                      LazyStackedTensorDict)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        TensorDict.from_list([])
    with pytest.raises(ValueError):
        TensorDict.from_list([[{"a": torch.zeros(3)}]])


def test_from_dict_instance_builds_a_tensordict():
    lazy = LazyStackedTensorDict(TensorDict(a=torch.ones(3)), TensorDict(a=torch.ones(3)),
                                 stack_dim=0)
    out = lazy.from_dict_instance({"a": torch.zeros(3, 2), "n": {"c": torch.zeros(3)}},
                                  batch_size=[3], names=["x"])
    assert type(out) is TensorDict and out.batch_size == (3,) and out.names == ["x"]
    assert out["n"].batch_size == (3,)
    assert _td().from_dict_instance({"a": torch.zeros(3, 2)}).batch_size == ()
    assert _td().from_dict_instance({"a": torch.zeros(3, 2)}, batch_dims=1).batch_size == (3,)


# -- combining leaves ----------------------------------------------------------------------
def _three() -> TensorDict:
    return TensorDict(a=torch.zeros(3, 2), b=torch.ones(3, 2), n={"c": torch.ones(3, 2) + 1},
                      batch_size=[3])


def test_cat_and_stack_tensors():
    td = _three()
    assert td.cat_tensors("a", "b", out_key="ab", dim=-1) is td
    assert list(td.keys(True, True)) == [("n", "c"), "ab"] and td["ab"].shape == (3, 4)
    kept = _three().cat_tensors("a", ("n", "c"), out_key=("z", "ab"), dim=1, keep_entries=True)
    assert kept["z", "ab"].shape == (3, 4) and "a" in kept.keys()
    same = _three().cat_tensors("a", "b", out_key="a", dim=-1)
    assert list(same.keys()) == ["n", "a"]
    stacked = _three().stack_tensors("a", "b", out_key="ab", dim=1)
    assert stacked["ab"].shape == (3, 2, 2) and "a" not in stacked.keys()
    twice = _three().stack_tensors("b", "b", out_key="bb", dim=-1)
    assert twice["bb"].shape == (3, 2, 2) and "b" not in twice.keys()


@pytest.mark.parametrize("call, error", [
    (lambda td: td.cat_tensors("a", "b", out_key="ab"), RuntimeError),  # batch mismatch
    (lambda td: td.cat_tensors("a", "zz", out_key="ab", dim=-1), KeyError),
    (lambda td: td.lock_().cat_tensors("a", "b", out_key="ab", dim=-1), RuntimeError),
    (lambda td: td.stack_tensors("a", "b", out_key="ab"), RuntimeError),
])
def test_cat_tensors_errors_leave_the_tensordict_unchanged(call, error):
    td = _three()
    before = td.clone()
    with pytest.raises(error):
        call(td)
    assert list(td.keys(True, True)) == list(before.keys(True, True))
    assert (td == before).all()


def test_cat_and_stack_from_tensordict():
    td = _three()
    assert td.cat_from_tensordict().shape == (9, 2)
    assert td.cat_from_tensordict(-1)[0].tolist() == [0, 0, 1, 1, 2, 2]
    assert td.stack_from_tensordict(-1).shape == (3, 2, 3)
    unsorted = TensorDict(b=torch.ones(2), a=torch.zeros(2), c=torch.ones(2) + 1)
    assert unsorted.cat_from_tensordict().tolist() == [1, 1, 0, 0, 2, 2]
    assert unsorted.cat_from_tensordict(sorted=True).tolist() == [0, 0, 1, 1, 2, 2]
    assert unsorted.cat_from_tensordict(sorted=["c", "a", "b"]).tolist() == [2, 2, 0, 0, 1, 1]
    with pytest.raises(RuntimeError, match="differs"):
        unsorted.cat_from_tensordict(sorted=["c", "a"])
    nested = TensorDict(z=torch.zeros(1), n={"c": torch.ones(1)}, a={"b": torch.ones(1) + 1},
                        m=torch.ones(1) + 2)
    assert nested.cat_from_tensordict(sorted=True).tolist() == [2, 3, 1, 0]
    out = torch.empty(9, 2)
    assert td.cat_from_tensordict(out=out) is out
    assert TensorDict(a=torch.ones(2), n="x", batch_size=[2]).stack_from_tensordict().shape \
        == (1, 2)


# -- reductions ----------------------------------------------------------------------------
def _q() -> TensorDict:
    return TensorDict(a=torch.arange(12.).reshape(3, 4), b={"c": torch.arange(3.)},
                      batch_size=[3])


def test_quantile():
    td = _q()
    assert td.quantile(0.5)["a"].item() == 5.5
    assert _shapes(td.quantile(0.5, dim=0)) == {"a": ((4,), torch.float32),
                                                ("b", "c"): ((), torch.float32)}
    assert td.quantile(0.5, dim=0, keepdim=True).batch_size == (1,)
    assert td.quantile(torch.tensor([0.25, 0.5]), dim=0).batch_size == (2,)
    assert td.quantile(torch.tensor([0.25, 0.5]))["a"].shape == (2,)
    assert td.quantile(0.5, dim="feature")["a"].shape == (3,)
    assert td.quantile(0.5, reduce=True).item() == 4.0
    assert td.quantile(0.5, interpolation="lower")["a"].item() == 5.0
    with pytest.raises(RuntimeError, match="float"):
        TensorDict(a=torch.arange(3)).quantile(0.5)


def test_quantile_over_several_batch_dims():
    td = TensorDict(a=torch.arange(24.).reshape(2, 3, 4), batch_size=[2, 3])
    out = td.quantile(0.5, dim=(0, 1))
    assert out.batch_size == ()
    assert torch.equal(out["a"], torch.quantile(td["a"].reshape(6, 4), 0.5, dim=0))
    assert td.quantile(torch.tensor([0.1, 0.5]), dim=(0, 1), keepdim=True).batch_size \
        == (2, 1, 1)


def test_key_transform_renames_every_level():
    td = _q()
    def suffix(key):
        return key + "_s"
    expected = ["a_s", ("b_s", "c_s")]
    for out in (td.sum(key_transform=suffix), td.mean(dim=0, key_transform=suffix),
                td.std(key_transform=suffix), td.var(key_transform=suffix),
                td.norm(key_transform=suffix), td.quantile(0.5, key_transform=suffix)):
        assert list(out.keys(True, True)) == expected
    assert list(td.sum(key_transform=lambda k: ("x", k)).keys(True, True)) == [
        ("x", "a"), ("x", "b", "x", "c")]
    assert td.sum(reduce=True, key_transform=suffix).item() == 69.0


def test_feature_reduction_refuses_keepdim():
    with pytest.raises(TypeError, match="keepdim=True"):
        _q().mean(dim="feature", keepdim=True)
    assert _q().sum(dim="feature", keepdim=False).batch_size == (3,)


def test_logsumexp_and_norm_write_into_out():
    td = _q()
    out = td.logsumexp(0) * 0
    pointer = out["a"].data_ptr()
    assert td.logsumexp(0, out=out) is out
    assert out["a"].data_ptr() == pointer and torch.allclose(out["a"], td["a"].logsumexp(0))
    norms = td.norm() * 0
    assert td.norm(out=norms) is norms and norms["b", "c"].item() == pytest.approx(5 ** 0.5)


# -- apply(out=) and keys(is_leaf=<custom>) --------------------------------------------------
def test_apply_out_replaces_entries_like_update():
    td = TensorDict(a=torch.zeros(3, 2), n={"c": torch.ones(3)}, batch_size=[3])
    out = TensorDict(a=torch.zeros(3, 2), z=torch.zeros(1))
    assert td.apply(lambda x: x + 1, out=out) is out
    assert list(out.keys(True)) == ["a", "z", ("n", "c"), "n"]
    assert out["n", "c"].tolist() == [2.0] * 3
    assert td.apply(lambda x: None, out=td.clone()) is None
    with pytest.raises(RuntimeError):
        td.apply(lambda x: x, out=td.clone().lock_())


def _nested() -> TensorDict:
    return TensorDict(a=torch.zeros(3, 2), b=torch.ones(3, 2),
                      n={"c": torch.ones(3, 2), "d": torch.ones(3), "m": {"e": torch.zeros(3)}},
                      batch_size=[3])


def test_keys_with_a_custom_is_leaf_walk_every_sub_tensordict():
    td = _nested()
    def is_td(cls):
        return issubclass(cls, TensorDict)
    assert list(td.keys(True, True, is_leaf=is_td)) == [("n", "m"), "n"]
    assert len(td.keys(True, True, is_leaf=is_td)) == 2
    assert list(td.keys(True, True, is_leaf=lambda cls: False)) == []
    assert list(td.keys(True, False, is_leaf=is_td)) == [
        "a", "b", ("n", "c"), ("n", "d"), ("n", "m", "e"), ("n", "m"), "n"]
    tensors = list(td.keys(True, True, is_leaf=lambda cls: issubclass(cls, torch.Tensor)))
    assert tensors == ["a", "b", ("n", "c"), ("n", "d"), ("n", "m", "e")]
    assert len(list(td.values(True, True, is_leaf=is_td))) == 2


def test_keys_with_a_custom_is_leaf_and_non_tensor_data():
    td = TensorDict(a=torch.zeros(3), s="x", n={"t": "y", "u": torch.ones(3)}, batch_size=[3])
    def is_tensor(cls):
        return issubclass(cls, torch.Tensor)
    assert list(td.keys(True, True, is_leaf=is_tensor)) == ["a", ("n", "u")]
    assert list(td.keys(True, False, is_leaf=is_tensor)) == [
        "a", "s", ("n", "t"), ("n", "u"), "n"]


def test_named_apply_filters_with_nested_keys():
    td = _nested()
    keep = ("a", ("n", "c"), ("n", "m", "e"))
    out = td.named_apply(lambda k, x: x if k in keep else None, nested_keys=True)
    assert list(out.keys(True, True)) == list(keep)
    out = td.named_apply(lambda k, x: x if k in ("a", "c") else None)
    assert list(out.keys(True, True)) == ["a", ("n", "c")]


# -- tensorclasses -------------------------------------------------------------------------
def test_tensorclasses_forward_the_new_methods():
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class _Pair:
        x: torch.Tensor
        y: torch.Tensor = None

    pair = _Pair(x=torch.ones(3, 2), y=torch.zeros(3), batch_size=[3])
    assert type(pair.new_zeros(5)) is _Pair and pair.new_zeros(5).x.shape == (5, 2)
    assert type(pair.quantile(0.5)) is _Pair
    assert pair.pad([0, 1]).x.shape == (4, 2)
    pair.copy_at_(_Pair(x=torch.zeros(2), y=torch.ones(()), batch_size=[]), 0, fast=False)
    assert pair.y.tolist() == [1.0, 0.0, 0.0]
    assert type(_Pair.from_list([{"x": torch.zeros(2)}, {"x": torch.ones(2)}])) is _Pair


def _featured() -> TensorDict:
    return TensorDict(a=torch.arange(24.).reshape(2, 3, 4),
                      b={"c": torch.arange(6.).reshape(2, 3) + 1,
                         "d": TensorDict(e=torch.ones(2, 3, 5), batch_size=[2, 3, 5])},
                      s="x", batch_size=[2, 3])


def test_feature_reductions_flatten_the_feature_dims():
    td = _featured()
    prod = td.prod(dim="feature")
    assert prod["a"][0].tolist() == [0.0, 840.0, 7920.0]
    assert prod["b", "c"].tolist() == td["b", "c"].tolist()  # no feature dim: itself
    assert prod["b", "d"].batch_size == (2, 3, 5) and prod["s"] == "x"
    std = td.std(dim="feature")
    assert std["a"].shape == (2, 3) and std["b", "c"].isnan().all()  # one element each
    quantile = td.quantile(0.5, dim="feature")
    assert quantile["a"][0].tolist() == [1.5, 5.5, 9.5]
    assert quantile["b", "d", "e"].shape == (2, 3, 5)
    assert td.quantile(torch.tensor([0.2, 0.5]), dim="feature").batch_size == (2, 2, 3)


def test_max_min_over_features_need_reduce():
    td = _featured()
    values, indices = td.max(dim="feature", reduce=True)
    assert values.shape == indices.shape == (2, 3)
    assert values[0].tolist() == [3.0, 7.0, 11.0]
    assert td.min(dim="feature", reduce=True, return_indices=False)[0].tolist() == [0.0, 1.0, 1.0]
    with pytest.raises(RuntimeError, match="reduce=True"):
        td.max(dim="feature")
