"""Legacy functional API (make_functional & co), tensordict.nn.prototype, symbolic_trace,
make_tensordict."""

import pytest
import torch
from torch import nn

import tensordict
from tensordict import TensorDict
from tensordict.nn import (
    ProbabilisticTensorDictModule,
    TensorDictModule,
    TensorDictSequential,
    extract_weights_and_buffers,
    get_functional,
    is_functional,
    make_functional,
    make_tensordict,
    repopulate_module,
    symbolic_trace,
)
from tensordict.nn.distributions import NormalParamExtractor


@pytest.fixture
def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4))


def zeros_like_params(params):
    return params.apply(lambda p: torch.zeros_like(p.detach()))


def test_make_functional_params_structure(model):
    params = make_functional(model)
    assert is_functional(model) and is_functional(model[0])
    assert sorted(params.keys(True, True)) == [("0", "bias"), ("0", "weight"),
                                                ("2", "bias"), ("2", "weight")]
    assert params["0", "weight"] is model[0].weight


def test_params_kwarg_and_last_positional(model):
    params = make_functional(model)
    x = torch.randn(5, 3)
    zeros = zeros_like_params(params)
    torch.testing.assert_close(model(x, params=zeros), torch.zeros(5, 4))
    torch.testing.assert_close(model(x, zeros), torch.zeros(5, 4))
    torch.testing.assert_close(model(x), model[2](model[1](model[0](x))))  # own params
    assert model[0].weight.abs().sum() > 0


def test_vmap_over_stacked_params(model):
    params = make_functional(model)
    other = params.apply(lambda p: p.detach() * 2)
    x = torch.randn(5, 3)
    y = torch.vmap(model, (None, 0))(x, torch.stack([params.detach(), other], 0))
    assert y.shape == torch.Size([2, 5, 4])
    torch.testing.assert_close(y[0], model(x))
    torch.testing.assert_close(y[1], model(x, params=other))


def test_td_module_functional_call(model):
    module = TensorDictModule(model, in_keys=["x"], out_keys=["y"])
    params = make_functional(module)
    td = TensorDict(x=torch.randn(2, 3), batch_size=[2])
    out = module(td, params=zeros_like_params(params))
    torch.testing.assert_close(out["y"], torch.zeros(2, 4))


def test_get_functional_and_repopulate(model):
    functional = get_functional(model)
    assert functional is model and is_functional(model)
    params = extract_weights_and_buffers(model)
    x = torch.randn(1, 3)
    torch.testing.assert_close(model(x, params=zeros_like_params(params)), torch.zeros(1, 4))
    assert repopulate_module(model, zeros_like_params(params)) is model
    assert model[0].weight.abs().sum() == 0
    assert not is_functional(nn.Linear(1, 1))


def test_make_functional_twice_does_not_double_wrap(model):
    make_functional(model)
    forward = model.forward
    make_functional(model)
    assert model.forward is forward


def test_prototype_reexports():
    from tensordict.nn import prototype
    from tensordict.nn.probabilistic import ProbabilisticTensorDictSequential

    assert prototype.ProbabilisticTensorDictModule is ProbabilisticTensorDictModule
    assert prototype.ProbabilisticTensorDictSequential is ProbabilisticTensorDictSequential


def test_symbolic_trace_sequence_matches_and_is_one_graph():
    torch.manual_seed(0)
    seq = TensorDictSequential(
        TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
                         in_keys=[("in", "x")], out_keys=["loc", "scale"]),
        TensorDictModule(lambda loc, scale: loc * scale, in_keys=["loc", "scale"],
                         out_keys=[("out", "y")]),
    )
    traced = symbolic_trace(seq)
    assert isinstance(traced.module, torch.fx.GraphModule)
    assert traced.in_keys == seq.in_keys and traced.out_keys == seq.out_keys
    td = TensorDict({"in": {"x": torch.randn(2, 3)}}, batch_size=[2])
    ours, ref = traced(td.clone()), seq(td.clone())
    for key in ["loc", "scale", ("out", "y")]:
        torch.testing.assert_close(ours[key], ref[key])
    compiled = torch.compile(traced, backend="eager")
    torch.testing.assert_close(compiled(td.clone())["out", "y"], ref["out", "y"])


def test_symbolic_trace_errors():
    prob = ProbabilisticTensorDictModule(in_keys=["p"], out_keys=["a"])
    with pytest.raises(NotImplementedError, match="ProbabilisticTensorDictModule"):
        symbolic_trace(TensorDictSequential(prob))


def test_make_tensordict():
    td = make_tensordict(a=torch.zeros(3, 2), b=torch.zeros(3))
    assert td.batch_size == torch.Size([]) and sorted(td.keys()) == ["a", "b"]
    assert make_tensordict({"a": torch.zeros(3, 2)}, batch_size=[3]).batch_size == \
        torch.Size([3])
    assert make_tensordict(a=torch.zeros(3, 2), auto_batch_size=True).batch_size == \
        torch.Size([3, 2])
    assert make_tensordict is tensordict.make_tensordict  # one implementation, core's
