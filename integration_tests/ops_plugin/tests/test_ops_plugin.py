"""The example third-party ops plugin (integration_tests/ops_plugin): a method, a torch
function and a leaf-wise op on TensorDicts, lazy stacks and (with tensordict-tensorclass
installed) tensorclasses, each compared with doing the same leaf by leaf."""

from __future__ import annotations

import importlib.metadata

import pytest
import torch
import torch.nn.functional as F  # noqa: N812

from tensordict import TensorDict, is_tensorclass, lazy_stack, plugins
from tensordict.plugins import PLUGIN_API_VERSION

try:  # (without tensordict-tensorclass, importing it names the package to install)
    import tensordict.tensorclasses  # noqa: F401

    HAS_TENSORCLASS = True
except ImportError:
    HAS_TENSORCLASS = False


def dense() -> TensorDict:
    return TensorDict(
        a=torch.tensor([[3.0, float("nan")], [-1.0, float("inf")]]),
        n=TensorDict(b=torch.tensor([4.0, -2.0]), steps=torch.tensor([1, 2]), batch_size=[2]),
        label="x",
        batch_size=[2],
    )


def lazy() -> TensorDict:
    return lazy_stack([dense()[0].clone(), dense()[1].clone()])


def tensorclass_instance():
    from tensordict import tensorclass

    @tensorclass
    class Pair:
        a: torch.Tensor
        n: TensorDict
        label: str

    source = dense()
    return Pair(a=source["a"], n=source["n"], label="x", batch_size=[2])


KINDS = [
    pytest.param(dense, id="tensordict"),
    pytest.param(lazy, id="lazy-stack"),
    pytest.param(tensorclass_instance, id="tensorclass", marks=pytest.mark.skipif(
        not HAS_TENSORCLASS, reason="needs tensordict-tensorclass (the integration env)")),
]


def float_leaves(collection) -> dict:
    """The tensor leaves, by key (a tensorclass read as its TensorDict)."""
    td = collection._tensordict if is_tensorclass(collection) else collection
    return {key: value for key, value in td.items(True, True)
            if isinstance(value, torch.Tensor)}


def test_found_through_its_entry_point():
    dist = importlib.metadata.distribution("tensordict-ops-example")
    (entry_point,) = [ep for ep in dist.entry_points if ep.group == "tensordict"]
    assert entry_point.value == "td_ops" and "td_ops" in plugins.list_plugins()
    assert PLUGIN_API_VERSION in entry_point.load().TENSORDICT_PLUGIN_API


@pytest.mark.parametrize("make", KINDS)
def test_softsign_matches_leaf_by_leaf(make):
    collection = make()
    out = collection.softsign()
    assert type(out) is type(collection) and out.batch_size == collection.batch_size
    results = float_leaves(out)
    for key, value in float_leaves(collection).items():
        torch.testing.assert_close(results[key], F.softsign(value), equal_nan=True)
    assert out.get("label") is not None


@pytest.mark.parametrize("make", KINDS)
def test_softsign_in_place_writes_into_the_leaves(make):
    collection = make().exclude(("n", "steps"))
    before = {key: value.clone() for key, value in float_leaves(collection).items()}
    assert collection.softsign_() is collection
    after = float_leaves(collection)
    for key, value in before.items():
        torch.testing.assert_close(after[key], F.softsign(value), equal_nan=True)


def test_softsign_in_place_into_a_lazy_stack_reaches_its_parts():
    parts = [dense()[0].clone(), dense()[1].clone()]
    lazy_stack(parts).exclude(("n", "steps")).softsign_()
    assert parts[1]["n", "b"].item() == pytest.approx(-2.0 / 3.0)


def test_softsign_in_place_refused_on_one_leaf_writes_none():
    td = dense()  # softsign of the int leaf ('n', 'steps') is a float: it cannot be written
    with pytest.raises(RuntimeError, match="softsign_ cannot write its torch.float32 result"):
        td.softsign_()
    torch.testing.assert_close(td["a"], dense()["a"], equal_nan=True)
    assert td["n", "b"].tolist() == [4.0, -2.0]


@pytest.mark.parametrize("make", KINDS)
@pytest.mark.parametrize("kwargs", [{}, {"nan": -1.0, "posinf": 9.0}], ids=["default", "args"])
def test_torch_nan_to_num_matches_leaf_by_leaf(make, kwargs):
    collection = make()
    out = torch.nan_to_num(collection, **kwargs)
    assert type(out) is type(collection)
    results = float_leaves(out)
    for key, value in float_leaves(collection).items():
        assert torch.equal(results[key], torch.nan_to_num(value, **kwargs))


@pytest.mark.parametrize("make", KINDS)
def test_clip_norm_scales_the_float_leaves_in_place(make):
    collection = torch.nan_to_num(make(), posinf=6.0)
    floats = {k: v.clone() for k, v in float_leaves(collection).items() if v.is_floating_point()}
    expected_norm = torch.cat([v.flatten() for v in floats.values()]).norm()
    norm = collection.clip_norm_(1.0)
    torch.testing.assert_close(norm, expected_norm)
    after = float_leaves(collection)
    for key, value in floats.items():
        torch.testing.assert_close(after[key], value / expected_norm)
    assert after["n", "steps"].tolist() == [1, 2]  # integers are left alone
    torch.testing.assert_close(collection.clip_norm_(2.0), torch.tensor(1.0))  # below: kept
    torch.testing.assert_close(float_leaves(collection)["n", "b"], floats["n", "b"] / expected_norm)


def test_clip_norm_refuses_a_bad_bound_and_changes_nothing():
    td = torch.nan_to_num(dense())
    with pytest.raises(ValueError, match="max_norm must be positive, got 0"):
        td.clip_norm_(0)
    assert td["n", "b"].tolist() == [4.0, -2.0]
