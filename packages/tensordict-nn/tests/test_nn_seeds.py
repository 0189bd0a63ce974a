"""The tensordict.nn examples of the seed documents, run as written, with their prints
compared under ``set_printoptions(compact=False)``.

Where 0.15.3 changed what a seed shows, the 0.15.3 behaviour is asserted (see the
package README's migration notes): the verbose repr lists ``shape=..., device=...,
is_shared=...`` per tensor, the probabilistic example writes ``sample`` /
``sample_log_prob`` (its out key is ``"sample"``), ``module(input=x)`` returns tensors.
"""

import textwrap

import torch
from torch import nn

from tensordict import TensorDict, set_printoptions
from tensordict.nn import TensorDictModule, TensorDictSequential


def leaf(name, shape, dtype="float32"):
    return (f"{name}: Tensor(shape=torch.Size({list(shape)}), device=cpu, "
            f"dtype=torch.{dtype}, is_shared=False)")


def node(fields, batch, indent=0):
    """The verbose repr of a TensorDict whose fields are already-formatted strings."""
    body = ",\n".join(textwrap.indent(f, "        ") for f in fields)
    text = (f"TensorDict(\n    fields={{\n{body}}},\n    batch_size=torch.Size({list(batch)}),"
            "\n    device=None,\n    is_shared=False)")
    return textwrap.indent(text, " " * indent).lstrip(" ")


def verbose(td):
    with set_printoptions(compact=False):
        return str(td)


class Net(nn.Module):
    def __init__(self, input_size=100, hidden_size=50, output_size=10):
        super().__init__()
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        return self.fc2(x)


class Masker(nn.Module):
    def forward(self, x, mask):
        return torch.softmax(x * mask, dim=1)


def make_input():
    return TensorDict(
        {"input": TensorDict({"x": torch.rand(32, 100), "mask": torch.randint(2, size=(32, 10))},
                             batch_size=[32])},
        batch_size=[32],
    )


def make_sequence():
    net = TensorDictModule(Net(), in_keys=[("input", "x")], out_keys=[("intermediate", "x")])
    masker = TensorDictModule(Masker(), in_keys=[("intermediate", "x"), ("input", "mask")],
                              out_keys=[("output", "probabilities")])
    return TensorDictSequential(net, masker)


INPUT = "input: " + node([leaf("mask", [32, 10], "int64"), leaf("x", [32, 100])], [32])
INTERMEDIATE = "intermediate: " + node([leaf("x", [32, 10])], [32])


def test_seed_transformer_module():
    # the seed's Transformer() at full size takes seconds to build: same call, small dims
    from torch.nn import Transformer

    module = TensorDictModule(
        Transformer(d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1,
                    dim_feedforward=32),
        in_keys=["feature", "target"], out_keys=["prediction"])
    data = TensorDict({"feature": torch.randn(10, 11, 16), "target": torch.randn(10, 11, 16)},
                      [10, 11])
    data = module(data)
    assert verbose(data) == node([leaf("feature", [10, 11, 16]),
                                  leaf("prediction", [10, 11, 16]),
                                  leaf("target", [10, 11, 16])], [10, 11])


def test_seed_sequential_print():
    module = make_sequence()
    td = module(make_input())
    output = "output: " + node([leaf("probabilities", [32, 10])], [32])
    assert verbose(td) == node([INPUT, INTERMEDIATE, output], [32])
    assert torch.allclose(td["output", "probabilities"].sum(-1), torch.ones(32))


def test_seed_select_subsequence_print():
    module = make_sequence()
    sub_module = module.select_subsequence(out_keys=[("intermediate", "x")])
    td = make_input()
    sub_module(td)
    assert verbose(td) == node([INPUT, INTERMEDIATE], [32])  # "output" was not computed
    assert len(sub_module) == 1


def test_seed_legacy_probabilistic_example():
    from torch.distributions import Normal

    from tensordict.nn.distributions import NormalParamWrapper
    from tensordict.nn.functional_modules import make_functional  # noqa: F401 (seed import)
    from tensordict.nn.prototype import (
        ProbabilisticTensorDictModule,
        ProbabilisticTensorDictSequential,
    )

    td = TensorDict({"input": torch.randn(3, 4), "hidden": torch.randn(3, 8)}, [3])
    net = torch.nn.GRUCell(4, 8)
    module = TensorDictModule(
        NormalParamWrapper(net), in_keys=["input", "hidden"], out_keys=["loc", "scale"]
    )
    prob_module = ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"],
        out_keys=["sample"],
        distribution_class=Normal,
        return_log_prob=True,
    )
    td_module = ProbabilisticTensorDictSequential(module, prob_module)
    td_module(td)
    # 0.15.3: the sample goes to its out key "sample" (the seed print says "action")
    assert verbose(td) == node(
        [leaf(k, [3, 8] if k == "hidden" else [3, 4])
         for k in ["hidden", "input", "loc", "sample", "sample_log_prob", "scale"]], [3])
    torch.testing.assert_close(td["sample_log_prob"],
                               Normal(td["loc"], td["scale"]).log_prob(td["sample"]))


def test_seed_make_functional_example():
    from torch import vmap

    from tensordict.nn import make_functional

    layer1 = nn.Linear(3, 4)
    layer2 = nn.Linear(4, 4)
    model = nn.Sequential(layer1, layer2)
    weights1 = TensorDict(layer1.state_dict(), []).unflatten_keys(separator=".")
    weights2 = TensorDict(layer2.state_dict(), []).unflatten_keys(separator=".")
    params = make_functional(model)
    assert (params == TensorDict({"0": weights1, "1": weights2}, [])).all()
    x = torch.randn(10, 3)
    out = model(x, params=params)
    intermediate = model[0](x, params["0"])
    out2 = model[1](intermediate, params["1"])
    torch.testing.assert_close(out, out2)
    params_stack = torch.stack([params, params], 0)
    y = vmap(model, (None, 0))(x, params_stack)
    assert y.shape == torch.Size([2, 10, 4])
    torch.testing.assert_close(y[0], out)


def test_seed_alternative_params_construction():
    model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 4))
    params = TensorDict({name: param for name, param in model.named_parameters()},
                        []).unflatten_keys(".")
    assert params["0", "weight"] is model[0].weight
    params = TensorDict(model.state_dict(), [])
    assert sorted(params.keys()) == ["0.bias", "0.weight", "1.bias", "1.weight"]


def test_seed_ensemble_print():
    from tensordict.nn import EnsembleModule

    net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 2))
    mod = TensorDictModule(net, in_keys=["a"], out_keys=["b"])
    ensemble = EnsembleModule(mod, num_copies=3)
    data = TensorDict({"a": torch.randn(10, 4)}, batch_size=[10])
    assert verbose(ensemble(data)) == node([leaf("a", [3, 10, 4]), leaf("b", [3, 10, 2])],
                                           [3, 10])


def test_seed_overview_module_and_kwargs_call():
    class LazyNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = nn.LazyLinear(1)

        def forward(self, x):
            logits = self.linear(x)
            return logits, torch.sigmoid(logits)

    module = TensorDictModule(
        LazyNet(),
        in_keys=["input"],
        out_keys=[("outputs", "logits"), ("outputs", "probabilities")],
    )
    tensordict = TensorDict({"input": torch.randn(32, 100)}, [32])
    tensordict = module(tensordict)
    logits = tensordict["outputs", "logits"]
    probabilities = tensordict.get(("outputs", "probabilities"))
    torch.testing.assert_close(probabilities, torch.sigmoid(logits))
    # 0.15.3: a kwargs call returns the output tensors (the seed says "a TensorDict")
    out = module(input=torch.randn(32, 100))
    assert isinstance(out, tuple) and [t.shape for t in out] == [torch.Size([32, 1])] * 2


def test_seed_overview_sequence():
    module = make_sequence()
    tensordict = module(make_input())
    intermediate_x = tensordict["intermediate", "x"]
    probabilities = tensordict["output", "probabilities"]
    assert intermediate_x.shape == probabilities.shape == torch.Size([32, 10])
    assert module.in_keys == [("input", "x"), ("input", "mask")]
    assert module.out_keys == [("intermediate", "x"), ("output", "probabilities")]
