"""Bad input to TensorDict modules raises a clear error and leaves the input TensorDict as
it was: outputs that do not match ``out_keys``, missing inputs, and a module of a
sequence (or one out key of a module) that fails half-way."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.nn import (
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
)


def sample(batch: tuple[int, ...] = (2,)) -> TensorDict:
    td = TensorDict(x=torch.randn(*batch, 3), n={"y": torch.randn(*batch, 3)},
                    batch_size=batch)
    td.set_non_tensor("label", "kept")
    return td


def snapshot(td: TensorDict) -> dict:
    """Every entry of ``td`` by key: the very objects, so a replaced tensor shows."""
    return {key: td.get(key) for key in td.keys(True, True)}


def assert_untouched(td: TensorDict, before: dict) -> None:
    after = snapshot(td)
    assert after.keys() == before.keys()
    for key, value in before.items():
        assert after[key] is value, key


# -- outputs that do not match out_keys ---------------------------------------------------
@pytest.mark.parametrize("batch", [(2,), (), (2, 4)])
def test_more_outputs_than_out_keys_raises_naming_shapes(batch):
    td = sample(batch)
    before = snapshot(td)
    module = TensorDictModule(lambda x: (x, x + 1, x.sum(-1)), in_keys=["x"],
                              out_keys=["a", ("n", "b")])
    shape = list(td["x"].shape)
    with pytest.raises(RuntimeError, match=r"more tensors than out_keys: function returned 3") \
            as err:
        module(td)
    assert f"Tensor{shape}" in str(err.value)
    assert "['a', ('n', 'b')]" in str(err.value)
    assert_untouched(td, before)


@pytest.mark.parametrize("output", [None, (), "one"])
def test_fewer_outputs_than_out_keys_raises(output):
    td = sample()
    before = snapshot(td)
    values = {None: None, (): (), "one": (torch.zeros(2),)}[output]
    module = TensorDictModule(lambda x: values, in_keys=["x"], out_keys=["a", "b"])
    with pytest.raises(RuntimeError, match=r"more out_keys than tensors: .* for the 2 out_keys"):
        module(td)
    assert_untouched(td, before)


def test_discarded_output_still_counts():
    module = TensorDictModule(lambda x: (x, x, x), in_keys=["x"], out_keys=["a", "_"])
    with pytest.raises(RuntimeError, match=r"returned 3 value\(s\).*'_' discards one"):
        module(sample())
    module = TensorDictModule(lambda x: (x, x + 1), in_keys=["x"], out_keys=["_", "a"])
    td = module(sample())
    torch.testing.assert_close(td["a"], td["x"] + 1)
    assert "_" not in td.keys()


def test_no_out_keys_take_none_or_nothing_only():
    td = sample()
    assert TensorDictModule(lambda x: None, in_keys=["x"], out_keys=[])(td) is td
    with pytest.raises(RuntimeError, match="more tensors than out_keys"):
        TensorDictModule(lambda x: x, in_keys=["x"], out_keys=[])(td)


def test_tensor_call_with_extra_outputs_raises():
    module = TensorDictModule(lambda x: (x, x, x), in_keys=["x"], out_keys=["a", "b"])
    with pytest.raises(RuntimeError, match="more tensors than out_keys"):
        module(x=torch.zeros(2))
    a, b = TensorDictModule(lambda x: (x, x + 1), in_keys=["x"], out_keys=["a", "b"])(
        x=torch.zeros(2))
    assert torch.equal(b, a + 1)


def test_tensordict_output_is_read_at_the_out_keys_it_holds():
    def make(x):
        return TensorDict(a=x + 1, b=x + 2, extra=x, batch_size=x.shape[:1])

    td = TensorDictModule(make, in_keys=["x"], out_keys=["b", "a"])(sample())
    torch.testing.assert_close(td["a"], td["x"] + 1)
    torch.testing.assert_close(td["b"], td["x"] + 2)
    assert "extra" not in td.keys()
    # holding none of them (one out key): the TensorDict is the value, written whole
    td = TensorDictModule(make, in_keys=["x"], out_keys=["whole"])(sample())
    assert set(td["whole"].keys()) == {"a", "b", "extra"}


def test_tensordict_output_missing_an_out_key_raises_naming_it():
    td = sample()
    before = snapshot(td)
    module = TensorDictModule(lambda x: TensorDict(a=x, batch_size=x.shape[:1]),
                              in_keys=["x"], out_keys=["a", ("n", "z")])
    with pytest.raises(RuntimeError, match=r"has no entry \[\('n', 'z'\)\].*its keys: \['a'\]"):
        module(td)
    assert_untouched(td, before)


def test_dict_output_is_read_like_a_tensordict():
    td = TensorDictModule(lambda x: {"a": x * 2, "b": x}, in_keys=["x"], out_keys=["a"])(
        sample())
    torch.testing.assert_close(td["a"], td["x"] * 2)
    with pytest.raises(RuntimeError, match=r"has no entry \['c'\]"):
        TensorDictModule(lambda x: {"a": x}, in_keys=["x"], out_keys=["a", "c"])(sample())


def test_tensorclass_output_is_one_value():
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Pair:
        a: torch.Tensor
        b: torch.Tensor

    module = TensorDictModule(lambda x: Pair(a=x, b=x + 1, batch_size=x.shape[:1]),
                              in_keys=["x"], out_keys=["a"])
    td = module(sample())
    assert isinstance(td["a"], Pair)
    torch.testing.assert_close(td["a"].b, td["x"] + 1)


# -- missing inputs --------------------------------------------------------------------------
def test_strict_missing_in_key_raises_even_if_the_module_accepts_none():
    td = sample()
    before = snapshot(td)
    module = TensorDictModule(lambda x=None, y=None: torch.zeros(2),
                              in_keys=["x", ("n", "missing")], out_keys=["a"], strict=True)
    with pytest.raises(KeyError, match=r"\[\('n', 'missing'\)\].*strict=True.*'x'"):
        module(td)
    assert_untouched(td, before)


def test_lenient_missing_in_key_passes_none_as_upstream():
    seen = []

    def fn(x, maybe=None):
        seen.append(maybe)
        return x + 1

    td = TensorDictModule(fn, in_keys=["x", "maybe"], out_keys=["a"])(sample())
    assert seen == [None]
    torch.testing.assert_close(td["a"], td["x"] + 1)


def test_missing_in_key_that_breaks_the_module_is_a_key_error():
    td = sample()
    before = snapshot(td)
    module = TensorDictModule(nn.Linear(3, 2), in_keys=["nope"], out_keys=["a"])
    with pytest.raises(KeyError, match=r"\['nope'\] of Linear were not found.*'x'"):
        module(td)
    assert_untouched(td, before)


# -- failures half-way leave the input as it was ----------------------------------------------
def failing(after: str = "x") -> TensorDictModule:
    def boom(x):
        raise ValueError("module failed")

    return TensorDictModule(boom, in_keys=[after], out_keys=["never"])


@pytest.mark.parametrize("batch", [(2,), ()])
def test_sequence_failure_removes_added_keys_and_restores_overwritten_ones(batch):
    td = sample(batch)
    before = snapshot(td)
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["h"]),
        TensorDictModule(lambda h: h * 2, in_keys=["h"], out_keys=[("n", "y")]),  # overwrite
        TensorDictModule(lambda h: h, in_keys=["h"], out_keys=[("new", "deep", "z")]),
        TensorDictModule(lambda h: h - 1, in_keys=["h"], out_keys=["x"]),  # overwrite
        failing("h"),
    )
    with pytest.raises(ValueError, match="module failed"):
        seq(td)
    assert_untouched(td, before)
    assert "new" not in td.keys() and td["label"] == "kept"


def test_sequence_failure_on_a_missing_input_restores():
    td = sample()
    before = snapshot(td)
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["h"]),
        TensorDictModule(lambda q: q + 1, in_keys=["q"], out_keys=["z"]),
    )
    with pytest.raises(KeyError, match=r"\['q'\]"):
        seq(td)
    assert_untouched(td, before)


def test_nested_sequence_failure_restores_the_outer_input():
    td = sample()
    before = snapshot(td)
    inner = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["h"]), failing("h"))
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x * 3, in_keys=["x"], out_keys=["g"]), inner)
    with pytest.raises(ValueError, match="module failed"):
        seq(td)
    assert_untouched(td, before)


def test_sequence_failure_on_a_lazy_stack_restores_every_part():
    parts = [sample(), sample()]
    stack = LazyStackedTensorDict(*parts, stack_dim=0)
    befores = [snapshot(part) for part in parts]
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["h"]),
        TensorDictModule(lambda h: h * 0, in_keys=["h"], out_keys=[("n", "y")]),
        failing("h"),
    )
    with pytest.raises(ValueError, match="module failed"):
        seq(stack)
    for part, before in zip(parts, befores):
        assert_untouched(part, before)


def test_probabilistic_sequence_failure_restores():
    td = TensorDict(obs=torch.randn(4, 3), batch_size=[4])
    before = snapshot(td)
    net = TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
                           in_keys=["obs"], out_keys=["loc", "scale"])

    def bad_scale(loc, scale):
        return torch.distributions.Normal(loc, -scale, validate_args=True)

    policy = ProbabilisticTensorDictSequential(net, ProbabilisticTensorDictModule(
        in_keys={"loc": "loc", "scale": "scale"}, out_keys=["action"],
        distribution_class=bad_scale))
    with pytest.raises(ValueError, match="scale"):
        policy(td)
    assert_untouched(td, before)


def test_module_whose_second_write_fails_undoes_the_first():
    td = sample()
    before = snapshot(td)
    module = TensorDictModule(lambda x: (x + 1, x * 2, torch.zeros(5)), in_keys=["x"],
                              out_keys=["x", ("fresh", "a"), "bad"])
    with pytest.raises(RuntimeError, match=r"torch.Size\(\[5\]\) for key 'bad'"):
        module(td)
    assert_untouched(td, before)
    assert "fresh" not in td.keys()


def test_success_is_unchanged_and_matches_running_by_hand():
    torch.manual_seed(0)
    first, second = nn.Linear(3, 4), nn.Linear(4, 2)
    td = sample((2, 5))
    seq = TensorDictSequential(
        TensorDictModule(first, in_keys=["x"], out_keys=["h"]),
        TensorDictModule(lambda h, y: (second(h), y + 1), in_keys=["h", ("n", "y")],
                         out_keys=["out", ("n", "y")]),
    )
    y = td["n", "y"]
    out = seq(td)
    assert out is td
    torch.testing.assert_close(td["h"], first(td["x"]))
    torch.testing.assert_close(td["out"], second(first(td["x"])))
    torch.testing.assert_close(td["n", "y"], y + 1)


def test_out_of_place_sequence_failure_leaves_input_as_it_was():
    td = sample()
    before = snapshot(td)
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["h"]), failing("h"),
        inplace=False)
    with pytest.raises(ValueError, match="module failed"):
        seq(td)
    assert_untouched(td, before)


def test_failure_restores_entries_under_a_nested_lazy_stack():
    parts = [TensorDict(y=torch.zeros(3), batch_size=[3]) for _ in range(2)]
    td = TensorDict(x=torch.randn(2, 3), batch_size=[2])
    td["n"] = LazyStackedTensorDict(*parts, stack_dim=0)
    befores = [snapshot(part) for part in parts]
    seq = TensorDictSequential(
        TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=[("n", "y")]),
        TensorDictModule(lambda x: x * 2, in_keys=["x"], out_keys=[("n", "fresh")]),
        TensorDictModule(lambda x: x, in_keys=["x"], out_keys=[("n", "m", "deep")]),
        failing("x"),
    )
    with pytest.raises(ValueError, match="module failed"):
        seq(td)
    assert set(td.keys(True, True)) == {"x", ("n", "y")}
    torch.testing.assert_close(td["n", "y"], torch.zeros(2, 3))
    for part, before in zip(parts, befores):
        assert set(part.keys(True, True)) == set(before)
