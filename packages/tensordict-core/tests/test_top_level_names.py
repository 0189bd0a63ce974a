"""Top-level constructors and helpers: ``from_*`` aliases, ``to_struct_array``,
``group_by``, ``unpad_sequence``, ``collate`` and the ``tensordict.base`` names."""

import collections
import dataclasses
import functools
import importlib
import warnings

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import tensordict
import tensordict.base
from tensordict import (
    NonTensorStack,
    TensorDict,
    collate,
    group_by,
    lazy_stack,
    pad_sequence,
    unpad_sequence,
)


def _tensorclass():
    """The decorator, when tensordict-tensorclass is installed (else the test skips)."""
    return pytest.importorskip("tensordict.tensorclasses").tensorclass


Pair = collections.namedtuple("Pair", ["x", "y"])


# -- from_* ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["from_any", "from_namedtuple", "from_tuple",
                                  "from_pytree", "from_struct_array"])
def test_from_aliases_exported(name):
    function = getattr(tensordict, name)
    assert name in tensordict.__all__
    assert callable(function) and function.__doc__
    if name != "from_pytree":
        assert getattr(tensordict.base, name) is function


def test_from_any_returns_non_containers_as_they_are():
    t = torch.zeros(3)
    assert tensordict.from_any(t) is t
    assert tensordict.from_any(5) == 5 and tensordict.from_any(None) is None
    td = TensorDict()
    assert tensordict.from_any(td, batch_size=[3]) is td


def test_from_any_lists():
    assert torch.equal(tensordict.from_any([1, 2]), torch.tensor([1, 2]))
    assert tensordict.from_any([[1, 2], [3, 4]]).shape == (2, 2)
    assert tensordict.from_any([]).shape == (0,)
    for mixed in (["a", 1], [1.0, 2], [torch.zeros(2), torch.ones(2)], [[1, 2], [3]]):
        out = tensordict.from_any(mixed)
        assert isinstance(out, NonTensorStack) and out.batch_size == (len(mixed),)


def test_from_any_nested_containers():
    td = tensordict.from_any({"obs": torch.zeros(3, 4), "pair": (torch.zeros(3), 1),
                              "nt": Pair(1, [1, 2]), "l": ["a", "b"]})
    assert {"obs", ("pair", "0"), ("pair", "1"), ("nt", "x"), ("nt", "y"), "l"} <= set(
        td.keys(True))
    assert td["nt", "y"].shape == (2,)
    assert td.get("l").tolist() == ["a", "b"]


def test_from_any_batch_options():
    with pytest.warns(FutureWarning, match="from_any ignores batch_dims=1"):
        td = tensordict.from_any({"a": torch.zeros(3, 2)}, batch_dims=1)
    assert td.batch_size == ()
    td = tensordict.from_any({"a": torch.zeros(3, 2)}, batch_size=[3], auto_batch_size=True)
    assert td.batch_size == (3,)  # batch_size wins for a dict
    td = tensordict.from_any({"a": torch.zeros(3, 2)}, batch_dims=1, auto_batch_size=True)
    assert td.batch_size == (3,)
    with pytest.warns(FutureWarning, match="from_tuple ignores.*Drop batch_dims"):
        td = tensordict.from_tuple((torch.zeros(3, 2),), batch_dims=1, batch_size=[3])
    assert td.batch_size == (3,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TensorDict.from_dict({"a": torch.zeros(3, 2)}, batch_dims=1).batch_size == (3,)
        assert tensordict.from_namedtuple(Pair(torch.zeros(3), 1), batch_dims=1).batch_size == ()


def test_from_namedtuple_and_tuple_convert_their_values():
    @dataclasses.dataclass
    class D:
        a: torch.Tensor
        b: int

    td = tensordict.from_namedtuple(Pair(torch.zeros(3), (1, 2)))
    assert set(td["y"].keys()) == {"0", "1"}
    td = tensordict.from_tuple((torch.zeros(3), Pair(1, 2), [1, 2], D(torch.zeros(3), 1)))
    assert set(td["1"].keys()) == {"x", "y"} and td["2"].shape == (2,)
    assert set(td["3"].keys()) == {"a", "b"}


def test_from_pytree_leaf_and_round_trip():
    leaf = torch.zeros(2)
    assert tensordict.from_pytree(leaf) is leaf
    tree = {"a": [torch.zeros(2), (torch.ones(1),)]}
    back = tensordict.from_pytree(tree).to_pytree()
    assert isinstance(back["a"], list) and isinstance(back["a"][1], tuple)


def test_from_struct_array_nested_shares_memory():
    arr = np.zeros(3, dtype=[("a", "f4"), ("b", [("c", "i8", (2,))]), ("s", "U4")])
    td = tensordict.from_struct_array(arr)
    assert td.batch_size == (3,) and td["b"].batch_size == (3,)
    assert td["b", "c"].shape == (3, 2)
    td["a"][0] = 5
    assert arr["a"][0] == 5
    assert isinstance(td["s"], np.ndarray)
    assert tensordict.from_struct_array(arr, batch_size=[]).batch_size == ()
    with pytest.raises(TypeError, match="Conflicting batch sizes"):
        tensordict.from_struct_array(arr, batch_size=[3], auto_batch_size=True)
    with pytest.raises(TypeError, match="structured array"):
        tensordict.from_struct_array(np.zeros(3))
    grid = np.zeros((3, 2), dtype=[("a", "f4", (4,))])
    assert tensordict.from_struct_array(grid, auto_batch_size=True).batch_size == (3, 2, 4)
    with pytest.warns(FutureWarning, match="from_struct_array ignores"):
        assert tensordict.from_struct_array(grid, batch_dims=1).batch_size == (3, 2)


def test_to_struct_array_round_trip():
    td = TensorDict(a=torch.arange(3), b=torch.ones(3, 2),
                    n=TensorDict(c=torch.zeros(3), batch_size=[3]), batch_size=[3])
    arr = td.to_struct_array()
    assert arr.dtype == np.dtype([("a", "<i8"), ("b", "<f4", (2,)), ("n", [("c", "<f4")])])
    arr["a"][0] = 7  # a copy
    assert td["a"][0] == 0
    back = TensorDict.from_struct_array(td.to_struct_array())
    assert (back == td).all()


def test_to_struct_array_text_scalar_batch_and_errors():
    td = TensorDict(a=torch.arange(3), s=NonTensorStack("a", "bb", "c"), batch_size=[3])
    arr = td.to_struct_array()
    assert arr.dtype["s"] == np.dtype("<U10") and arr["s"].tolist() == ["a", "bb", "c"]
    long = TensorDict(s="hello world long string", batch_size=[2]).to_struct_array()
    assert long.dtype["s"] == np.dtype("<U23")
    scalar = TensorDict(a=torch.arange(3)).to_struct_array()
    assert scalar.shape == () and scalar.dtype["a"].shape == (3,)
    grad = TensorDict(a=torch.ones(2, requires_grad=True), batch_size=[2]).to_struct_array()
    assert grad["a"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError):
        TensorDict(batch_size=[3]).to_struct_array()
    with pytest.raises(TypeError):
        TensorDict(a=torch.zeros(2, dtype=torch.bfloat16), batch_size=[2]).to_struct_array()
    lazy = lazy_stack([TensorDict(a=torch.zeros(())), TensorDict(a=torch.ones(()))])
    assert lazy.to_struct_array()["a"].tolist() == [0.0, 1.0]


# -- tensordict.base ---------------------------------------------------------------------
def test_base_module_names():
    base = tensordict.base
    assert base.expand_as_right(torch.ones(2), torch.zeros(2, 3)).shape == (2, 3)
    assert base.from_any is tensordict.from_any
    with pytest.raises(NotImplementedError):
        bool(base.BEST_ATTEMPT_INPLACE)
    assert base.BEST_ATTEMPT_INPLACE is tensordict.base.BEST_ATTEMPT_INPLACE


def test_deprecated_decorator_and_env_var_warning():
    @tensordict.base.deprecated("f()", removal="0.17", replacement="g()")
    def f(a):
        """Doc."""
        return a + 1

    with pytest.warns(DeprecationWarning, match=r"f\(\) is deprecated .* Use g\(\) instead"):
        assert f(1) == 2
    assert f.__name__ == "f" and f.__doc__ == "Doc."
    with pytest.warns(FutureWarning, match="FOO=1 is deprecated and will be removed in "
                                           "TensorDict 0.17. Use BAR instead."):
        tensordict.base.warn_deprecated_env_var("FOO", "1", removal="0.17", replacement="BAR")


# -- group_by ----------------------------------------------------------------------------
def test_group_by_tensor_entry():
    td = TensorDict(uid=torch.tensor([2, 0, 2, 1, 0]), reward=torch.arange(5.0),
                    n=TensorDict(x=torch.arange(10).view(5, 2), batch_size=[5, 2]),
                    batch_size=[5])
    values, groups = group_by(td, "uid")
    assert values.tolist() == [0, 1, 2]
    assert [g["reward"].tolist() for g in groups] == [[1.0, 4.0], [3.0], [0.0, 2.0]]
    assert groups[0]["n"].batch_size == (2, 2)
    rows, groups = group_by(TensorDict(uid=torch.tensor([[1, 2], [0, 1], [1, 2]]),
                                       batch_size=[3]), "uid")
    assert rows.tolist() == [[0, 1], [1, 2]] and [len(g) for g in groups] == [1, 2]
    nan = TensorDict(uid=torch.tensor([1.0, float("nan"), 1.0]), batch_size=[3])
    assert [len(g) for g in group_by(nan, "uid")[1]] == [2, 1]
    values, groups = group_by(TensorDict(uid=torch.tensor([]), batch_size=[0]), "uid")
    assert groups == ()


def test_group_by_non_tensor_entry():
    td = TensorDict(uid=NonTensorStack("b", "a", "b"), r=torch.arange(3), batch_size=[3])
    values, groups = group_by(td, "uid")
    assert values == ["a", "b"] and [g["r"].tolist() for g in groups] == [[1], [0, 2]]
    lists = TensorDict(uid=NonTensorStack([1], [2]), batch_size=[2])
    assert group_by(lists, "uid")[0] == [(1,), (2,)]
    shared = TensorDict(uid="a", batch_size=[3])
    values, groups = group_by(shared, "uid")
    assert values == ["a"] and groups[0].batch_size == (3,)


def test_group_by_tensorclass_and_lazy_stack():
    tensorclass = _tensorclass()

    @tensorclass
    class Row:
        uid: torch.Tensor

    values, groups = group_by(Row(uid=torch.tensor([1, 0, 1]), batch_size=[3]), "uid")
    assert all(type(g) is Row for g in groups) and [len(g) for g in groups] == [1, 2]
    lazy = lazy_stack([TensorDict(uid=torch.tensor(i % 2), r=torch.zeros(i + 1))
                       for i in range(4)])
    assert [len(g) for g in group_by(lazy, "uid")[1]] == [2, 2]


def test_group_by_errors():
    td = TensorDict(uid=torch.tensor([0, 1]), n=TensorDict(batch_size=[2]), batch_size=[2])
    with pytest.raises(ValueError, match="has none"):
        group_by(TensorDict(a=torch.zeros(3)), "a")
    with pytest.raises(KeyError, match="no entry 'zz'"):
        group_by(td, "zz")
    with pytest.raises(TypeError, match="holds a TensorDict"):
        group_by(td, "n")
    with pytest.raises(TypeError, match="hashable and sortable"):
        group_by(TensorDict(uid=NonTensorStack(1, "a"), batch_size=[2]), "uid")


# -- unpad_sequence ----------------------------------------------------------------------
def _samples():
    return [TensorDict(a=torch.arange(n), b=torch.full((n, 2), float(n)), batch_size=[n])
            for n in (3, 5)]


@pytest.mark.parametrize("side", ["left", "right"])
def test_unpad_sequence_batch_pad_dim(side):
    padded = pad_sequence(_samples(), return_mask=True, padding_side=side)
    samples = unpad_sequence(padded)
    assert [s.batch_size for s in samples.tensordicts] == [(3,), (5,)]
    assert samples.tensordicts[0]["a"].tolist() == [0, 1, 2]
    assert "masks" not in samples.keys()
    assert samples.tensordicts[1]["b"]._base is not None  # a view of padded
    with_masks = unpad_sequence(padded, padded["masks"])
    assert "masks" in with_masks.keys()
    by_tensor = unpad_sequence(padded.exclude("masks"), padded["masks", "a"])
    assert by_tensor.tensordicts[0]["a"].tolist() == [0, 1, 2]


def test_unpad_sequence_feature_pad_dim():
    tds = [TensorDict(a=torch.zeros(2, n), b=torch.zeros(2, 4)) for n in (3, 5)]
    padded = pad_sequence(tds, pad_dim=1, return_mask=True)
    samples = unpad_sequence(padded, pad_dim=1)
    assert [s["a"].shape for s in samples.tensordicts] == [(2, 3), (2, 5)]
    assert [s["b"].shape for s in samples.tensordicts] == [(2, 4), (2, 4)]


def test_unpad_sequence_errors():
    padded = pad_sequence(_samples(), return_mask=True)
    bare = padded.exclude("masks")
    with pytest.raises(ValueError, match="needs a mask"):
        unpad_sequence(bare)
    with pytest.raises(ValueError, match="has none"):
        unpad_sequence(TensorDict(a=torch.zeros(3)), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"\[2, 5\], got \(2, 4\)"):
        unpad_sequence(bare, torch.ones(2, 4, dtype=torch.bool))
    gap = torch.tensor([[True, False, True, False, False], [True] * 5])
    with pytest.raises(ValueError, match="not contiguous"):
        unpad_sequence(bare, gap)
    feature = pad_sequence([TensorDict(a=torch.zeros(n), b=torch.zeros(n)) for n in (1, 2)],
                           return_mask=True)
    with pytest.raises(KeyError, match="'b'"):
        unpad_sequence(feature.exclude("masks"), feature["masks"].exclude("b"))


# -- collate -----------------------------------------------------------------------------
def test_collate_plain_batches():
    stacked = collate([TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(3))])
    assert type(stacked) is TensorDict and stacked.batch_size == (2,)
    ragged = collate([TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(2))])
    assert isinstance(ragged, tensordict.LazyStackedTensorDict)
    td, label = collate([(TensorDict(x=torch.zeros(3)), i) for i in range(2)])
    assert td.batch_size == (2,) and label.tolist() == [0, 1]
    out = collate([{"td": TensorDict(x=torch.zeros(3)), "l": 1.0}] * 2)
    assert out["td"].batch_size == (2,) and out["l"].tolist() == [1.0, 1.0]
    nt = collate([Pair(TensorDict(x=torch.zeros(3)), torch.zeros(2))] * 2)
    assert type(nt) is Pair and nt.y.shape == (2, 2)
    assert collate(["a", "b"]) == ["a", "b"] and collate([]) == []
    td = TensorDict(x=torch.zeros(3))
    assert collate(td) is td


def test_default_collate_stacks_tensordicts():
    samples = [(TensorDict(x=torch.randn(3)), i) for i in range(4)]
    td, label = next(iter(DataLoader(samples, batch_size=4)))
    assert type(td) is TensorDict and td.batch_size == (4,) and label.tolist() == [0, 1, 2, 3]
    ragged = [TensorDict(x=torch.zeros(n)) for n in (1, 2)]
    batch = next(iter(DataLoader(ragged, batch_size=2)))
    assert isinstance(batch, tensordict.LazyStackedTensorDict)


def test_collate_tensorclass_keeps_type():
    tensorclass = _tensorclass()

    @tensorclass
    class TC:
        x: torch.Tensor
        mask: TensorDict = None

    out = collate([TC(x=torch.zeros(3)), TC(x=torch.ones(3))])
    assert type(out) is TC and out.batch_size == (2,)
    padded = collate([TC(x=torch.ones(2)), TC(x=torch.ones(3))], pad_keys={"x": 0},
                     mask_key="mask")
    assert type(padded) is TC and padded.x.tolist() == [[1, 1, 0], [1, 1, 1]]
    assert padded.mask["x"].tolist() == [[True, True, False], [True, True, True]]


def test_collate_pad_and_nested_keys():
    samples = [TensorDict(ids=torch.ones(n, dtype=torch.long), pts=torch.randn(n + 1, 3),
                          score=torch.tensor(float(n))) for n in (2, 3)]
    fn = functools.partial(collate, pad_keys={"ids": 7}, nested_keys=["pts"],
                           mask_key="mask")
    batch = next(iter(DataLoader(samples, batch_size=2, collate_fn=fn)))
    assert batch["ids"].tolist() == [[1, 1, 7], [1, 1, 1]]
    assert batch["mask", "ids"].tolist() == [[True, True, False], [True, True, True]]
    assert batch["pts"].is_nested and batch["score"].tolist() == [2.0, 3.0]
    both = collate(samples, pad_keys={"ids": 7, "pts": 0})
    assert both["pts"].shape == (2, 4, 3) and "mask" not in both.keys()
    nested = collate([TensorDict(n=TensorDict(x=torch.ones(n))) for n in (2, 3)],
                     pad_keys={("n", "x"): 0}, mask_key=("m", "k"))
    assert nested["m", "k", "n", "x"].shape == (2, 3)


def test_collate_errors():
    samples = [TensorDict(ids=torch.ones(n), pts=torch.randn(n + 1, 3)) for n in (2, 3)]
    with pytest.raises(ValueError, match="no pad_keys"):
        collate(samples, mask_key="mask")
    with pytest.raises(ValueError, match="which is an entry of a sample"):
        collate(samples, pad_keys={"ids": 0}, mask_key="ids")
    with pytest.raises(ValueError, match="in both pad_keys and nested_keys"):
        collate(samples, pad_keys={"ids": 0}, nested_keys=["ids"])
    with pytest.raises(KeyError, match="'zz'"):
        collate(samples, pad_keys={"zz": 0})
    with pytest.raises(ValueError, match="stack lazily"):
        collate(samples, nested_keys=["pts"])
    with pytest.raises(ValueError, match="batch dim"):
        collate([TensorDict(x=torch.zeros(2, 3), batch_size=[2])] * 2, pad_keys={"x": 0})


# -- LAST_OP_MAPS ------------------------------------------------------------------------
def _grid():
    return TensorDict(a=torch.arange(6.0).view(2, 3), batch_size=[2, 3])


@pytest.mark.parametrize(("name", "args"), [
    ("transpose", (0, 1)), ("swapdims", (0, 1)), ("permute", (1, 0)), ("movedim", (0, 1)),
    ("view", (-1,)), ("flatten", (0, 1)), ("unflatten", (1, (3, 1))), ("unsqueeze", (0,)),
    ("squeeze", (0,)), ("atleast_3d", ()), ("flip", ([0],)), ("fliplr", ()),
    ("flipud", ()), ("roll", (1, 0)), ("rot90", (1, (0, 1))),
])
def test_last_op_maps_write_the_inverse_back(name, args):
    td = _grid()
    if name == "squeeze":
        td = td.unsqueeze(0)
    expected = td["a"] + 1
    result = getattr(td, name)(*args).clone()
    result["a"] += 1
    result["new"] = torch.zeros(result.batch_size)
    out = tensordict.base.LAST_OP_MAPS[name](result, args, {}, td)
    assert out is td and torch.equal(td["a"], expected)
    assert td["new"].shape == td.batch_size


def test_last_op_maps_lock_to_keys_and_errors():
    maps = tensordict.base.LAST_OP_MAPS
    td = _grid().lock_()
    before = td["a"]
    result = td.transpose(0, 1).clone()
    result["a"] += 1
    maps["transpose"](result, (0, 1), {}, td)
    assert td["a"] is before and before.sum() == 21  # locked: written in place
    assert not maps["lock_"](td, (), {}, td).is_locked
    assert maps["unlock_"](td, (), {}, td).is_locked
    nested = TensorDict({"x": {"y": torch.zeros(2)}}, batch_size=[2])
    flat = nested.flatten_keys().clone()
    flat["x.y"] += 1
    assert maps["flatten_keys"](flat, (), {}, nested)["x", "y"].tolist() == [1.0, 1.0]
    moved = _grid().to(torch.float64)
    moved["a"] += 1
    back = maps["to"](moved, (torch.float64,), {}, _grid())
    assert back["a"].dtype == torch.float32 and back["a"][0, 0] == 1
    with pytest.raises(RuntimeError, match="implicit"):
        maps["squeeze"](_grid(), (), {}, _grid())


def test_facade_modules_are_attributes_of_the_package_as_upstream():
    # a fresh interpreter: ``import tensordict`` alone, as a user script starts
    import subprocess
    import sys

    code = ("import tensordict, torch\n"
            "assert tensordict.utils.expand_right(torch.ones(2), (2, 3)).shape == (2, 3)\n"
            "assert tensordict.functional.pad_sequence is tensordict.pad_sequence\n"
            "assert tensordict.typedtensordict.TypedTensorDict is tensordict.TypedTensorDict\n"
            "assert tensordict.tensordict.TensorDict is tensordict.TensorDict\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_plugin_module_not_installed_is_no_attribute():
    try:
        importlib.import_module("tensordict.persistent")
    except ImportError:
        assert not hasattr(tensordict, "persistent")
        with pytest.raises(AttributeError, match="install tensordict-persistent"):
            tensordict.persistent  # noqa: B018
    else:
        assert tensordict.persistent.PersistentTensorDict.__name__ == "PersistentTensorDict"


def test_functional_module_re_exports():
    import tensordict.functional as functional

    for name in functional.__all__:
        assert callable(getattr(functional, name)), name
    tds = [TensorDict(a=torch.ones(n), batch_size=[n]) for n in (1, 3)]
    padded = functional.pad_sequence(tds)
    assert padded["a"].tolist() == [[1.0, 0.0, 0.0], [1.0, 1.0, 1.0]]
    assert functional.dense_stack_tds(tds[:1] * 2, dim=0).batch_size == torch.Size([2, 1])
    with pytest.raises(AttributeError, match="no attribute 'nosuchmodule'"):
        tensordict.nosuchmodule  # noqa: B018
