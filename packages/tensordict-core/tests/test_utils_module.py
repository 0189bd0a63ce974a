"""tensordict.utils helpers and the top-level merge_tensordicts, dense_stack_tds and
parse_tensor_dict_string: each checked against the same work done leaf by leaf or element
by element, on nested keys, real timings, real folders and real reprs, with their errors."""

from __future__ import annotations

import importlib
import logging
import sys
import time
import types
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    TensorDict,
    dense_stack_tds,
    lazy_stack,
    merge_tensordicts,
    parse_tensor_dict_string,
    set_printoptions,
    stack,
)
from tensordict.errors import KeyThroughLeafError
from tensordict.utils import (
    TensorDictFuture,
    deprecated_attributes,
    deprecation_message,
    isin,
    print_directory_tree,
    remove_duplicates,
    timeit,
    warn_deprecated,
)


def leaves(td):
    return {key: td.get(key) for key in td.keys(include_nested=True, leaves_only=True)}


def test_names_are_exported():
    old_path = importlib.import_module("tensordict.tensordict")
    utils = importlib.import_module("tensordict.utils")
    for name in ("merge_tensordicts", "dense_stack_tds", "parse_tensor_dict_string"):
        assert name in tensordict.__all__
    for name in ("merge_tensordicts", "dense_stack_tds"):  # upstream's old module path
        assert getattr(old_path, name) is getattr(tensordict, name)
    assert utils.parse_tensor_dict_string is parse_tensor_dict_string
    for name in ("TensorDictFuture", "timeit", "isin", "remove_duplicates",
                 "print_directory_tree", "parse_tensor_dict_string", "deprecated_attributes",
                 "warn_deprecated", "deprecation_message"):
        assert name in utils.__all__
        assert hasattr(utils, name)


# -- merge_tensordicts ---------------------------------------------------------------------
def make_inputs():
    td0 = TensorDict({"a": {"b0": torch.tensor(0), "c": torch.tensor(10)}, "common": 0})
    td1 = TensorDict({"a": {"b1": torch.tensor(1), "c": torch.tensor(11)}, "f": 1,
                      "common": 1})
    td2 = TensorDict({"a": {"b2": torch.tensor(2)}, "common": 2})
    return td0, td1, td2


def test_merge_first_wins_and_shares_values():
    td0, td1, td2 = make_inputs()
    out = merge_tensordicts(td0, td1, td2)
    assert sorted(map(str, out.keys(include_nested=True, leaves_only=True))) == sorted(
        map(str, [("a", "b0"), ("a", "b1"), ("a", "b2"), ("a", "c"), "common", "f"]))
    for key, value in leaves(out).items():
        owner = next(td for td in (td0, td1, td2) if key in td.keys(True, True))
        assert value is owner.get(key), key  # the first holder's tensor, not a copy
    assert out["a"] is not td0["a"]  # a new structure: the inputs are untouched
    assert "b1" not in td0["a"].keys()
    assert type(out) is TensorDict and out.batch_size == td0.batch_size


def test_merge_callback_only_on_leaves_every_input_holds():
    td0, td1, td2 = make_inputs()
    calls = []

    def callback(*values):
        calls.append(values)
        return torch.stack(values).sum(0)

    out = merge_tensordicts(td0, td1, td2, callback_exist=callback)
    assert len(calls) == 1 and [v.item() for v in calls[0]] == [0, 1, 2]
    assert out["common"].item() == 3
    assert out["a", "c"] is td0["a", "c"]  # held by two of the three: first wins
    out = merge_tensordicts(td0, td1, callback_exist=lambda old, new: old - new)
    assert out["a", "c"].item() == -1 and out["common"].item() == -1


def test_merge_callback_dict_per_key_and_none_results():
    td0, td1, _ = make_inputs()
    out = merge_tensordicts(td0, td1, callback_exist={
        ("a", "c"): lambda old, new: new * 100, "common": lambda *v: None, "a": print})
    assert out["a", "c"].item() == 1100
    assert out["common"] is None and isinstance(out.get("common"), NonTensorData)
    # TorchRL's usage (torchrl/data/map/tree.py): every shared leaf becomes None
    out = merge_tensordicts(td0, td1, callback_exist=lambda *x: None)
    assert out["common"] is None and out["a", "c"] is None
    assert out["a", "b1"] is td1["a", "b1"] and out["f"] is td1["f"]
    out = merge_tensordicts(td0, td1, callback_exist={("common",): lambda *v: v[1]})
    assert out["common"] is td1["common"] and out["a", "c"] is td0["a", "c"]


def test_merge_non_tensor_batch_device_lock_and_lazy():
    first = TensorDict(s="x", t=torch.zeros(3), batch_size=[3], device="cpu").lock_()
    second = TensorDict(s="y", u="z", t=torch.ones(3), n={"k": torch.ones(3, 2)},
                        batch_size=[3])
    calls = []
    out = merge_tensordicts(first, second, callback_exist=lambda *v: calls.append(v) or v[1])
    assert out["s"] == "x" and out["u"] == "z" and out.get("u").batch_size == (3,)
    assert len(calls) == 1  # "t" only: non-tensor leaves keep the first value
    assert out["t"] is second["t"] and out["n", "k"] is second["n", "k"]
    assert out.device == torch.device("cpu") and not out.is_locked and first.is_locked
    assert "u" not in first.keys()
    with pytest.raises(RuntimeError, match="batch"):
        merge_tensordicts(TensorDict(x=torch.zeros(3, 2), batch_size=[3, 2]),
                          TensorDict(y=torch.zeros(3), batch_size=[3]))
    lazy = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))])
    out = merge_tensordicts(lazy, TensorDict(b=torch.arange(2), batch_size=[2]))
    assert isinstance(out, LazyStackedTensorDict)
    assert torch.equal(out["b"], torch.arange(2)) and torch.equal(out["a"], lazy["a"])


def test_merge_errors():
    with pytest.raises(RuntimeError, match="at least 2 tensordicts, got 1"):
        merge_tensordicts(TensorDict(a=torch.zeros(())))
    with pytest.raises(KeyThroughLeafError, match="'a'"):
        merge_tensordicts(TensorDict(a=torch.zeros(())),
                          TensorDict(a={"b": torch.ones(())}))
    # a leaf of the first input beats a sub-TensorDict of a later one
    out = merge_tensordicts(TensorDict(a={"b": torch.ones(())}), TensorDict(a=torch.zeros(())))
    assert list(out.keys(True, True)) == [("a", "b")]


# -- dense_stack_tds -----------------------------------------------------------------------
def make_container(seed):
    gen = torch.Generator().manual_seed(seed)
    inner = lazy_stack([TensorDict(a=torch.randn(3, generator=gen)),
                        TensorDict(a=torch.randn(4, generator=gen),
                                   b=torch.randn(2, generator=gen))])
    return TensorDict(lazy=inner, x=torch.randn(2, 5, generator=gen), s="text",
                      batch_size=[2])


def test_dense_stack_of_dense_tds_equals_stack():
    tds = [TensorDict(x=torch.randn(2, 3), n={"y": torch.randn(2, 4)}, batch_size=[2])
           for _ in range(3)]
    for dim in (0, 1, -1, -2):
        out = dense_stack_tds(tds, dim=dim)
        expected = stack(tds, dim)
        assert type(out) is TensorDict and out.batch_size == expected.batch_size
        for key, value in leaves(expected).items():
            assert torch.equal(out[key], value), (dim, key)


def test_dense_stack_nested_lazy_stacks_stay_lazy_inside():
    c0, c1 = make_container(0), make_container(1)
    for out in (dense_stack_tds([c0, c1], dim=0), dense_stack_tds(lazy_stack([c0, c1]))):
        assert type(out) is TensorDict and out.batch_size == (2, 2)
        assert torch.equal(out["x"], torch.stack([c0["x"], c1["x"]]))
        nested = out["lazy"]
        assert isinstance(nested, LazyStackedTensorDict) and nested.stack_dim == 1
        assert nested.batch_size == (2, 2)
        for i in range(2):  # each part is the dense stack of the inputs' parts
            part = nested.tensordicts[i]
            assert type(part) is TensorDict
            for key in part.keys():
                expected = torch.stack([c0["lazy"].tensordicts[i][key],
                                        c1["lazy"].tensordicts[i][key]])
                assert torch.equal(part[key], expected)
        assert out.get("s").batch_size == (2, 2) and out[1, 0]["s"] == "text"


def test_dense_stack_of_lazy_stacks_uses_stack_dim():
    gen = torch.Generator().manual_seed(2)
    parts = [[TensorDict(a=torch.randn(2, n, generator=gen), batch_size=[2]) for n in (3, 4)]
             for _ in range(2)]
    stacks = [lazy_stack(p, dim=1) for p in parts]  # batch [2, 2], stack_dim 1
    for dim, stack_dim in ((0, 2), (1, 2), (2, 1)):
        out = dense_stack_tds(stacks, dim=dim)
        assert isinstance(out, LazyStackedTensorDict) and out.stack_dim == stack_dim
        assert out.batch_size == (2, 2, 2)
        for i, part in enumerate(out.tensordicts):
            part_dim = dim if dim <= 1 else dim - 1
            assert torch.equal(part["a"], torch.stack([p[i]["a"] for p in parts], part_dim))
    outer = lazy_stack(stacks, dim=2)
    assert dense_stack_tds(outer).stack_dim == 1  # the stack_dim of outer, not dim
    assert dense_stack_tds(outer, dim=0).stack_dim == 1


def test_dense_stack_falls_back_to_lazy_where_entries_differ():
    a = TensorDict(n={"a": torch.zeros(2)}, x=torch.zeros(()))
    b = TensorDict(n={"b": torch.ones(2)}, x=torch.ones(()))
    out = dense_stack_tds([a, b], dim=0)
    assert type(out) is TensorDict and torch.equal(out["x"], torch.tensor([0.0, 1.0]))
    assert isinstance(out["n"], LazyStackedTensorDict)
    assert out["n"].tensordicts[1]["b"] is b["n", "b"]
    c = TensorDict(n={"a": torch.zeros(3)}, x=torch.zeros(()))
    assert isinstance(dense_stack_tds([a, c], dim=0)["n"], LazyStackedTensorDict)
    top = dense_stack_tds([TensorDict(a=torch.zeros(2)), TensorDict(b=torch.zeros(2))], dim=0)
    assert isinstance(top, LazyStackedTensorDict) and top.stack_dim == 0
    mixed = dense_stack_tds([TensorDict(n={"a": torch.zeros(())}), TensorDict(n=torch.zeros(()))],
                            dim=0)
    assert isinstance(mixed, LazyStackedTensorDict)


def test_dense_stack_inputs_and_errors():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert dense_stack_tds(td) is td
    assert dense_stack_tds((td, td), dim=0).batch_size == (2, 2)
    named = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3], names=["t", "u"])
    assert dense_stack_tds([named, named], dim=1).names == ["t", None, "u"]
    with pytest.raises(ValueError, match="needs dim"):
        dense_stack_tds([td, td])
    with pytest.raises(IndexError, match="out of range"):
        dense_stack_tds([td, td], dim=2)
    ragged = dense_stack_tds([td, TensorDict(a=torch.zeros(3), batch_size=[3])], dim=0)
    assert ragged.batch_size == torch.Size([2, -1])  # a ragged lazy stack, as upstream
    with pytest.raises(RuntimeError, match="batch dims"):
        dense_stack_tds([td, TensorDict(a=torch.zeros(3, 1), batch_size=[3, 1])], dim=0)


# -- isin / remove_duplicates --------------------------------------------------------------
def brute_isin(values, reference, dim):
    rows = values.movedim(dim, 0)
    refs = reference.movedim(dim, 0)
    return torch.tensor([any(torch.equal(r, s) for s in refs) for r in rows])


@pytest.fixture(params=["pairwise", "ranked"])
def isin_path(request, monkeypatch):
    """Both ways isin compares: every pair of slices (few), or ranks of the slices."""
    if request.param == "ranked":
        monkeypatch.setattr("tensordict._dedup._PAIRWISE_LIMIT", -1)
    return request.param


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_isin_nested_key_matches_brute_force(dim, isin_path):
    gen = torch.Generator().manual_seed(3)
    values = torch.randint(3, (4, 5, 2), generator=gen)
    td = TensorDict(n={"k": values, "other": torch.zeros(4, 5)}, batch_size=[4, 5])
    ref_shape = (3, 5, 2) if dim == 0 else (4, 3, 2)
    reference = torch.randint(3, ref_shape, generator=gen)
    ref_td = TensorDict(n={"k": reference}, batch_size=ref_shape[:2])
    out = isin(td, ref_td, ("n", "k"), dim=dim)
    assert out.dtype == torch.bool
    assert torch.equal(out, brute_isin(values, reference, dim % 2))
    assert torch.equal(isin(td, td, ("n", "k"), dim=dim), torch.ones(td.batch_size[dim]).bool())


def test_isin_promotes_dtypes_lazy_and_empty(isin_path):
    td = TensorDict(x=torch.tensor([[1, 2], [3, 4], [1, 2]]), batch_size=[3])
    ref = TensorDict(x=torch.tensor([[1.0, 2.0]]), batch_size=[1])
    assert isin(td, ref, "x").tolist() == [True, False, True]
    lazy = lazy_stack([TensorDict(x=torch.tensor(1)), TensorDict(x=torch.tensor(5))])
    assert isin(lazy, TensorDict(x=torch.tensor([5]), batch_size=[1]), "x").tolist() == [
        False, True]
    empty = TensorDict(x=torch.zeros(0, 2, dtype=torch.long), batch_size=[0])
    assert isin(empty, ref, "x").shape == (0,)
    assert isin(td, empty, "x").tolist() == [False] * 3


def test_isin_compares_nan_as_torch_eq_on_few_slices():
    # a slice holding NaN equals no slice (NaN != NaN); the others are still found
    # (upstream's sort-based answer is [False, False] here)
    values = torch.tensor([[float("nan"), 1.0], [0.0, 1.0]])
    td = TensorDict(x=values, batch_size=[2])
    assert isin(td, td, "x").tolist() == [False, True]


def test_isin_errors():
    td = TensorDict(x=torch.zeros(4, 2), n={"y": torch.zeros(4)}, s="a", batch_size=[4])
    ref = TensorDict(x=torch.zeros(2, 2), batch_size=[2])
    with pytest.raises(KeyError, match="'zz' is missing in the input"):
        isin(td, ref, "zz")
    with pytest.raises(KeyError, match="'n' is a TensorDict, not a tensor"):
        isin(td, ref, "n")
    with pytest.raises(KeyError, match="'s' is a NonTensorData"):
        isin(td, ref, "s")
    with pytest.raises(KeyError, match=r"\('n', 'y'\) is missing in the reference"):
        isin(td, ref, ("n", "y"))
    with pytest.raises(ValueError, match="same number of batch dims"):
        isin(td, TensorDict(x=torch.zeros(2)), "x")
    with pytest.raises(ValueError, match="dim 1 is not a batch dim"):
        isin(td, ref, "x", dim=1)
    with pytest.raises(RuntimeError, match=r"shapes \(4, 2\) \(input\) and \(2, 3\)"):
        isin(td, TensorDict(x=torch.zeros(2, 3), batch_size=[2]), "x")


def brute_dedup(values, dim):
    rows = list(values.movedim(dim, 0))
    firsts = [i for i, row in enumerate(rows)
              if not any(torch.equal(row, rows[j]) for j in range(i))]
    return firsts


@pytest.mark.parametrize("dim", [0, 1, -2])
def test_remove_duplicates_matches_brute_force(dim):
    gen = torch.Generator().manual_seed(4)
    values = torch.randint(2, (6, 5, 2), generator=gen)
    td = TensorDict(n={"k": values}, other=torch.randn(6, 5, 3, generator=gen), s="tag",
                    batch_size=[6, 5])
    out, indices = remove_duplicates(td, ("n", "k"), dim=dim, return_indices=True)
    d = dim % 2
    firsts = brute_dedup(values, d)
    assert out.batch_size[d] == len(firsts)
    kept = sorted(firsts, key=lambda i: values.movedim(d, 0)[i].flatten().tolist())
    index = torch.tensor(kept)
    for key, value in leaves(td).items():  # every entry indexed with the kept positions
        assert torch.equal(out[key], value.index_select(d, index)), key
    assert out["s"] == "tag" and out.get("s").batch_size == out.batch_size
    # indices map each input element to its value in the result
    assert torch.equal(out["n", "k"].index_select(d, indices), values)
    assert out["other"].data_ptr() != td["other"].data_ptr()
    assert isinstance(remove_duplicates(td, ("n", "k"), dim=dim), TensorDict)


def test_remove_duplicates_sorted_nan_empty_and_metadata():
    td = TensorDict(x=torch.tensor([7, 1, 7, 3]), y=torch.arange(4), batch_size=[4],
                    names=["t"], device="cpu")
    out, indices = remove_duplicates(td, "x", return_indices=True)
    assert out["x"].tolist() == [1, 3, 7] and out["y"].tolist() == [1, 3, 0]
    assert indices.tolist() == [2, 0, 2, 1]
    assert out.names == ["t"] and out.device == torch.device("cpu")
    nan = TensorDict(x=torch.tensor([3.0, 1.0, 3.0, float("nan"), float("nan")]),
                     batch_size=[5])
    assert remove_duplicates(nan, "x", return_indices=True)[1].tolist() == [1, 0, 1, 2, 3]
    empty, idx = remove_duplicates(TensorDict(x=torch.zeros(0), batch_size=[0]), "x",
                                   return_indices=True)
    assert empty.batch_size == (0,) and idx.shape == (0,)
    with pytest.raises(KeyError, match="'zz' is missing"):
        remove_duplicates(td, "zz")
    with pytest.raises(ValueError, match="dim 1 is not a batch dim"):
        remove_duplicates(td, "x", dim=1)


# -- TensorDictFuture ----------------------------------------------------------------------
def test_future_waits_for_every_write():
    td = TensorDict(a=torch.zeros(3), b=torch.zeros(3), batch_size=[3])

    def write(key, delay):
        time.sleep(delay)
        td[key].fill_(1.0)

    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(write, "a", 0.05), pool.submit(write, "b", 0.1)]
        future = TensorDictFuture(futures, td)
        result = future.result()
    assert result is td and future.futures is futures and future.resulting_td is td
    assert td["a"].tolist() == [1.0] * 3 and td["b"].tolist() == [1.0] * 3


def test_future_raises_failures_and_accepts_wait_objects():
    def fail():
        raise OSError("disk full")

    with ThreadPoolExecutor(1) as pool:
        future = TensorDictFuture([pool.submit(fail)], TensorDict())
        with pytest.raises(OSError, match="disk full"):
            future.result()
    waited = []

    class Work:  # torch.distributed's Work: wait(), no result()
        def wait(self):
            waited.append(True)

    td = TensorDict()
    assert TensorDictFuture([Work(), Work()], td).result() is td and len(waited) == 2


# -- timeit ----------------------------------------------------------------------------------
@pytest.fixture
def fresh_timeit():
    saved = dict(timeit._REG)
    timeit._REG.clear()
    yield
    timeit._REG.clear()
    timeit._REG.update(saved)


def test_timeit_aggregates_real_timings(fresh_timeit):
    @timeit("sleepy")
    def sleepy(seconds, *, value):
        time.sleep(seconds)
        return value

    assert sleepy.__name__ == "sleepy"
    assert [sleepy(0.01, value=1), sleepy(0.03, value=2)] == [1, 2]
    mean, total, count = timeit._REG["sleepy"]
    assert count == 2 and total >= 0.04 and mean == pytest.approx(total / 2)
    block = timeit("block")
    with block as entered:
        time.sleep(0.02)
    with block:  # the same object again, and nested under another name
        with timeit("inner"):
            time.sleep(0.01)
    assert entered is None
    mean, total, count = timeit._REG["block"]
    assert count == 2 and total >= 0.03 and total >= timeit._REG["inner"][1]
    with pytest.raises(ValueError), timeit("failing"):
        raise ValueError
    assert timeit._REG["failing"][2] == 1  # timed even when the block raises


def test_timeit_print_and_erase(fresh_timeit, caplog):
    timeit._REG.update(zz=[0.0025, 0.005, 2], aa=[0.010101, 0.010101, 1])
    with caplog.at_level(logging.INFO, logger="tensordict"):
        timeit.print()
        timeit.print(prefix="epoch 3")
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "aa took 10.1 msec (total = 0.010101 sec)",
        "zz took  2.5 msec (total = 0.005 sec)",
        "epoch 3 -- aa took 10.1 msec (total = 0.010101 sec)",
        "epoch 3 -- zz took  2.5 msec (total = 0.005 sec)",
    ]
    timeit.erase()
    assert timeit._REG == {"aa": [0.0, 0.0, 0], "zz": [0.0, 0.0, 0]}


# -- print_directory_tree --------------------------------------------------------------------
def test_print_directory_tree_on_a_real_folder(tmp_path, caplog):
    root = tmp_path / "saved"
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "empty").mkdir()
    (root / "a.bin").write_bytes(bytes(1500))
    (root / "sub" / "b.txt").write_bytes(bytes(10))
    (root / "sub" / "deeper" / "c.dat").write_bytes(bytes(2_000_000))
    with caplog.at_level(logging.INFO, logger="tensordict"):
        tree = print_directory_tree(str(root))
    lines = tree.splitlines()
    assert [record.getMessage() for record in caplog.records] == lines
    assert lines[0] == "Directory size: 1.91 MB"  # 2_001_510 bytes
    assert lines[1] == "saved/"
    expected = {"    a.bin", "    empty/", "    sub/", "        b.txt", "        deeper/",
                "            c.dat"}
    assert set(lines[2:]) == expected and len(lines) == 8
    assert lines.index("    sub/") < lines.index("        deeper/")  # children follow
    plain = print_directory_tree(str(root), indent=">>", display_metadata=False).splitlines()
    assert plain[0] == ">>saved/" and all(line.startswith(">>") for line in plain)
    assert len(plain) == 7
    assert print_directory_tree(str(root / "a.bin")) == "Directory size: 0.00 B\na.bin"
    (tmp_path / "small").mkdir()
    (tmp_path / "small" / "f").write_bytes(bytes(1024))
    assert print_directory_tree(str(tmp_path / "small")).startswith("Directory size: 1.00 KB")


# -- parse_tensor_dict_string ----------------------------------------------------------------
def same_layout(rebuilt, original):
    assert type(rebuilt) is TensorDict
    assert rebuilt.batch_size == original.batch_size and rebuilt.device == original.device
    expected = leaves(original)
    got = leaves(rebuilt)
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape, key
        assert got[key].dtype == value.dtype, key
        assert got[key].device == value.device, key
        assert got[key].device.type == "meta" or not got[key].any(), key
    for key in original.keys(include_nested=True):
        if isinstance(original.get(key), TensorDict):
            assert rebuilt.get(key).batch_size == original.get(key).batch_size, key


def originals():
    return [
        TensorDict(obs=torch.ones(3, 4), i=torch.ones(3, dtype=torch.int64),
                   nxt=TensorDict(done=torch.ones(3, 1, dtype=torch.bool),
                                  deep=TensorDict(x=torch.ones(3, 2, 5), batch_size=[3, 2]),
                                  batch_size=[3]),
                   batch_size=[3]),
        TensorDict(a=torch.ones(2, dtype=torch.float16), b=torch.ones(2, dtype=torch.bfloat16),
                   c=torch.ones(2, dtype=torch.complex64), d=torch.ones(2, dtype=torch.float64),
                   u=torch.ones(2, dtype=torch.uint8), k=torch.ones(2, dtype=torch.int8),
                   batch_size=[2]),
        TensorDict(a=torch.zeros(2, 3, device="meta"), b=torch.ones(2), batch_size=[2]),
        TensorDict(a=torch.zeros(2, device="meta"), n={"c": torch.zeros(2, 3, device="meta")},
                   batch_size=[2], device="meta"),
        TensorDict(a=torch.ones(()), n=TensorDict(), batch_size=[]),
        TensorDict(),
    ]


@pytest.mark.parametrize("index", range(6))
@pytest.mark.parametrize("compact", [True, False])
def test_parse_round_trips_reprs(index, compact):
    original = originals()[index]
    with set_printoptions(compact=compact):
        text = repr(original)
        rebuilt = parse_tensor_dict_string(text)
        same_layout(rebuilt, original)
        assert repr(rebuilt) == text


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_parse_lazy_stack_and_upstream_abbreviations():
    lazy = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))])
    for compact in (True, False):
        with set_printoptions(compact=compact):
            rebuilt = parse_tensor_dict_string(repr(lazy))
        assert type(rebuilt) is TensorDict and rebuilt["a"].shape == (2, 2)
    text = "TensorDict(batch_size=[2], fields={a: u16[], b: f8_e4m3fn[3], c: c32[]})"
    rebuilt = parse_tensor_dict_string(text)
    assert [rebuilt[k].dtype for k in "abc"] == [torch.uint16, torch.float8_e4m3fn,
                                                 torch.complex32]
    assert rebuilt["b"].shape == (2, 3)
    rebuilt = parse_tensor_dict_string("TensorDict(batch_size=[2], fields={n: [3]{c: i64[]}})")
    assert rebuilt["n"].batch_size == (2, 3) and rebuilt["n", "c"].dtype == torch.int64


def test_parse_errors():
    with pytest.raises(ValueError, match="field 's: str'"):
        parse_tensor_dict_string(repr(TensorDict(s="x", a=torch.zeros(2), batch_size=[2])))
    with set_printoptions(compact=False), pytest.raises(ValueError, match="field 's: NonTensor"):
        parse_tensor_dict_string(repr(TensorDict(s="x")))
    nested_lazy = TensorDict(n=lazy_stack([TensorDict(a=torch.zeros(2))] * 2), batch_size=[2])
    with pytest.raises(ValueError, match="field 'n: LazyStackedTensorDict"):
        parse_tensor_dict_string(repr(nested_lazy))
    exclusive = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(b=torch.zeros(2))])
    with pytest.raises(ValueError, match="exclusive keys"):
        parse_tensor_dict_string(repr(exclusive))
    for text in ("garbage", "", "TensorDict(batch_size=[-1], fields={})"):
        with pytest.raises(ValueError, match="no batch size"):
            parse_tensor_dict_string(text)
    with pytest.raises(ValueError, match="unknown dtype 'q32'"):
        parse_tensor_dict_string("TensorDict(batch_size=[2], fields={a: q32[3]})")
    with pytest.raises(RuntimeError, match="'a'.*ragged"):
        parse_tensor_dict_string(repr(lazy_stack([TensorDict(a=torch.zeros(2)),
                                                  TensorDict(a=torch.zeros(3))])))


# -- deprecation helpers --------------------------------------------------------------------
def test_deprecation_message_and_warning_location():
    assert deprecation_message("old()", removal="0.17") == (
        "old() is deprecated and will be removed in TensorDict 0.17.")
    assert deprecation_message("old()", removal="0.17", replacement="new()").endswith(
        "TensorDict 0.17. Use new() instead.")

    def deprecated_function():
        warn_deprecated("deprecated_function()", removal="0.18", replacement="other()")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        deprecated_function()
    (warning,) = caught
    assert warning.category is DeprecationWarning
    assert str(warning.message) == deprecation_message(
        "deprecated_function()", removal="0.18", replacement="other()")
    assert warning.filename == __file__ and warning.lineno == line


def test_deprecated_attributes_on_a_real_module():
    module = types.ModuleType("td_test_deprecated_module")
    module.__getattr__ = deprecated_attributes(
        module.__name__, {"old": (42, "td_test_deprecated_module.new"), "gone": (1, None)},
        removal="0.18")
    sys.modules[module.__name__] = module
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert module.old == 42 and module.gone == 1
            from td_test_deprecated_module import old  # noqa: PLC0415
        assert old == 42
        assert [str(w.message) for w in caught] == [
            "td_test_deprecated_module.old is deprecated and will be removed in TensorDict "
            "0.18. Use td_test_deprecated_module.new instead.",
            "td_test_deprecated_module.gone is deprecated and will be removed in TensorDict "
            "0.18.",
            "td_test_deprecated_module.old is deprecated and will be removed in TensorDict "
            "0.18. Use td_test_deprecated_module.new instead.",
        ]
        assert all(w.filename == __file__ for w in caught)
        with pytest.raises(AttributeError, match="has no attribute 'missing'"):
            module.missing  # noqa: B018
        assert "old" not in vars(module)  # warns on every access, never cached
    finally:
        del sys.modules[module.__name__]
