"""Parameters as TensorDicts beside ``torch.func.functional_call`` with a dict.

Each group holds our op and a ``*_baseline`` doing the same with plain dicts.
"""

import pytest
import torch
from torch import nn
from torch.func import functional_call

from tensordict import TensorDict

N_ENSEMBLE = 8


def _mlp() -> nn.Module:
    layers: list[nn.Module] = []
    for _ in range(10):
        layers += [nn.Linear(16, 16), nn.ReLU()]
    return nn.Sequential(*layers)


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # batched matmuls under vmap stall for 100+ ms when torch's thread pool competes
    # for the cores of a busy machine; one thread keeps the timings comparable
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def model():
    return _mlp()


@pytest.fixture(scope="module")
def x():
    return torch.randn(4, 16)


@pytest.mark.benchmark(group="from_module-mlp10")
def test_from_module(benchmark, model):
    benchmark(TensorDict.from_module, model)


@pytest.mark.benchmark(group="from_module-mlp10")
def test_from_module_baseline(benchmark, model):
    benchmark(lambda: {**dict(model.named_parameters()), **dict(model.named_buffers())})


@pytest.mark.benchmark(group="call-with-params-mlp10")
def test_to_module_call(benchmark, model, x):
    params = TensorDict.from_module(_mlp())  # another set of parameters

    def call():
        with params.to_module(model):
            return model(x)

    benchmark(call)


@pytest.mark.benchmark(group="call-with-params-mlp10")
def test_to_module_call_baseline(benchmark, model, x):
    params = dict(_mlp().named_parameters())
    benchmark(functional_call, model, params, (x,))


@pytest.mark.benchmark(group="call-with-plain-tensors-mlp10")
def test_to_module_call_plain_tensors(benchmark, model, x):
    params = TensorDict.from_module(_mlp()).detach()  # wrapped in nn.Parameter on the way in

    def call():
        with params.to_module(model):
            return model(x)

    benchmark(call)


@pytest.mark.benchmark(group="call-with-plain-tensors-mlp10")
def test_to_module_call_plain_tensors_baseline(benchmark, model, x):
    params = {k: v.detach() for k, v in _mlp().named_parameters()}
    benchmark(functional_call, model, params, (x,))


@pytest.mark.benchmark(group="vmap-ensemble-8")
def test_vmap_ensemble(benchmark, model, x):
    stacked = TensorDict.from_modules(*[_mlp() for _ in range(N_ENSEMBLE)]).detach()

    def call(params, x):
        with params.to_module(model):
            return model(x)

    ensemble = torch.vmap(call, (0, None))
    benchmark(ensemble, stacked, x)


@pytest.mark.benchmark(group="vmap-ensemble-8")
def test_vmap_ensemble_baseline(benchmark, model, x):
    members = [_mlp() for _ in range(N_ENSEMBLE)]
    stacked = {name: torch.stack([dict(m.named_parameters())[name].detach() for m in members])
               for name, _ in model.named_parameters()}
    ensemble = torch.vmap(lambda params, x: functional_call(model, params, (x,)), (0, None))
    benchmark(ensemble, stacked, x)
