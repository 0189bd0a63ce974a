"""TensorDictSequential: graph keys, sub-sequences, indexing, inplace modes."""

from collections import OrderedDict

import pytest
import torch
from torch import nn

from tensordict import TensorDict
from tensordict.nn import TensorDictModule, TensorDictSequential, WrapModule


@pytest.fixture
def parts():
    torch.manual_seed(0)
    a = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"])
    b = TensorDictModule(nn.Linear(4, 2), in_keys=["h"], out_keys=["y"])
    c = TensorDictModule(lambda x, y: x.sum(-1, keepdim=True) + y, in_keys=["x", "y"],
                         out_keys=["z"])
    return a, b, c


def reference(a, b, x):
    h = a.module(x)
    y = b.module(h)
    return h, y, x.sum(-1, keepdim=True) + y


def test_keys_from_graph(parts):
    seq = TensorDictSequential(*parts)
    assert seq.in_keys == ["x"] and seq.out_keys == ["h", "y", "z"]
    assert TensorDictSequential(*parts[1:]).in_keys == ["h", "x"]


def test_forward_matches_module_by_module(parts):
    seq = TensorDictSequential(*parts)
    td = TensorDict(x=torch.randn(5, 3), batch_size=[5])
    out = seq(td)
    assert out is td
    for key, expected in zip(["h", "y", "z"], reference(parts[0], parts[1], td["x"])):
        torch.testing.assert_close(td[key], expected)


def test_kwargs_call_returns_all_outputs(parts):
    seq = TensorDictSequential(*parts)
    x = torch.randn(2, 3)
    out = seq(x=x)
    assert isinstance(out, tuple) and len(out) == 3
    torch.testing.assert_close(out[2], reference(parts[0], parts[1], x)[2])


def test_ordered_dict_names(parts):
    seq = TensorDictSequential(OrderedDict(first=parts[0], second=parts[1]))
    assert seq.first is parts[0] and seq[1] is parts[1] and seq["second"] is parts[1]
    assert seq.out_keys == ["h", "y"]
    sub = seq.select_subsequence(out_keys=["h"])
    assert list(sub.module.keys()) == ["first"]


def test_indexing_and_slicing(parts):
    seq = TensorDictSequential(*parts)
    assert len(seq) == 3 and seq[0] is parts[0] and seq[-1] is parts[2]
    tail = seq[1:]
    assert isinstance(tail, TensorDictSequential) and len(tail) == 2
    assert tail.in_keys == ["h", "x"]


def test_select_subsequence_out_keys(parts):
    seq = TensorDictSequential(*parts)
    sub = seq.select_subsequence(out_keys=["h"])
    assert len(sub) == 1 and sub[0] is parts[0]
    sub = seq.select_subsequence(out_keys=["z"])
    assert len(sub) == 3


def test_select_subsequence_in_keys(parts):
    seq = TensorDictSequential(*parts)
    assert len(seq.select_subsequence(in_keys=["x"])) == 3
    sub = seq.select_subsequence(in_keys=["h"])
    assert len(sub) == 1 and sub[0] is parts[1]
    with pytest.raises(ValueError, match="No modules left"):
        seq.select_subsequence(in_keys=["y"])
    with pytest.raises(ValueError, match="No modules left"):
        seq.select_subsequence(out_keys=["zzz"])


def test_selected_out_keys(parts):
    seq = TensorDictSequential(*parts, selected_out_keys=["z"])
    assert seq.out_keys == ["z"]
    td = seq(TensorDict(x=torch.randn(2, 3), batch_size=[2]))
    assert sorted(td.keys()) == ["x", "z"]
    seq.reset_out_keys()
    assert sorted(seq(TensorDict(x=torch.randn(2, 3), batch_size=[2])).keys()) == \
        ["h", "x", "y", "z"]


@pytest.mark.parametrize("inplace", [False, "empty"])
def test_not_inplace_leaves_input_untouched(parts, inplace):
    seq = TensorDictSequential(*parts, inplace=inplace)
    td = TensorDict(x=torch.randn(2, 3), n={"a": torch.zeros(2)}, batch_size=[2])
    out = seq(td)
    assert out is not td
    assert sorted(out.keys()) == ["h", "y", "z"]
    assert sorted(td.keys()) == ["n", "x"]


def test_nested_outputs_not_inplace_do_not_leak():
    writer = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=[("n", "b")])
    seq = TensorDictSequential(writer, inplace=False)
    td = TensorDict(x=torch.zeros(2), n={"a": torch.zeros(2)}, batch_size=[2])
    out = seq(td)
    assert ("n", "b") in out.keys(True) and ("n", "b") not in td.keys(True)


def test_partial_tolerant_skips_modules_missing_inputs(parts):
    seq = TensorDictSequential(*parts, partial_tolerant=True)
    td = seq(TensorDict(h=torch.randn(2, 4), batch_size=[2]))
    assert sorted(td.keys()) == ["h", "y"]
    strict = TensorDictSequential(*parts)
    with pytest.raises(KeyError, match="'x'"):
        strict(TensorDict(h=torch.randn(2, 4), batch_size=[2]))


def test_plain_module_with_keys_and_callable(parts):
    class Plain(nn.Module):
        in_keys = ["x"]
        out_keys = ["w"]

        def forward(self, td):
            return td.set("w", td["x"] * 2)

    seq = TensorDictSequential(Plain(), lambda td: td.set("k", td["w"] + 1))
    assert isinstance(seq[1], WrapModule)
    assert seq.in_keys == ["x"] and seq.out_keys == ["w"]
    td = seq(TensorDict(x=torch.ones(2), batch_size=[2]))
    torch.testing.assert_close(td["k"], torch.full((2,), 3.0))
    with pytest.raises(TypeError):
        TensorDictSequential(3)


def test_nested_sequences(parts):
    inner = TensorDictSequential(parts[0], parts[1])
    outer = TensorDictSequential(inner, parts[2])
    assert outer.in_keys == ["x"] and outer.out_keys == ["h", "y", "z"]
    td = outer(TensorDict(x=torch.randn(2, 3), batch_size=[2]))
    torch.testing.assert_close(td["z"], reference(parts[0], parts[1], td["x"])[2])


def test_repr(parts):
    seq = TensorDictSequential(parts[0])
    assert repr(seq) == (
        "TensorDictSequential(\n"
        "    module=ModuleList(\n"
        "      (0): TensorDictModule(\n"
        "          module=Linear(in_features=3, out_features=4, bias=True),\n"
        "          in_keys=['x'],\n"
        "          out_keys=['h'])\n"
        "    ),\n"
        "    in_keys=['x'],\n"
        "    out_keys=['h'])"
    )


def test_parameters_and_grad(parts):
    seq = TensorDictSequential(*parts)
    assert len(list(seq.parameters())) == 4
    seq(TensorDict(x=torch.randn(2, 3), batch_size=[2]))["z"].sum().backward()
    assert all(p.grad is not None for p in seq.parameters())


def test_vmap(parts):
    seq = TensorDictSequential(*parts)
    td = TensorDict(x=torch.randn(4, 2, 3), batch_size=[4, 2])
    out = torch.vmap(seq)(td.clone())
    torch.testing.assert_close(out["z"], reference(parts[0], parts[1], td["x"])[2])


def test_compile(parts):
    seq = TensorDictSequential(*parts)
    compiled = torch.compile(seq, backend="eager")
    td = TensorDict(x=torch.randn(2, 3), batch_size=[2])
    torch.testing.assert_close(compiled(td.clone())["z"],
                               reference(parts[0], parts[1], td["x"])[2])
