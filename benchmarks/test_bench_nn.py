"""tensordict.nn modules beside calling the wrapped nn.Modules directly on tensors.

The difference of the two means is the per-call overhead of reading and writing keys.
A small MLP (3 -> 64 -> 64 -> 4, batch 32) keeps the raw call cheap, so the overhead shows.
"""

import pytest
import torch
from torch import distributions as D
from torch import nn

from tensordict import TensorDict
from tensordict.nn import (
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
    set_interaction_type,
)
from tensordict.nn.distributions import NormalParamExtractor

torch.manual_seed(0)
MLP = nn.Sequential(nn.Linear(3, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 4))
PARTS = [nn.Linear(3, 64), nn.Linear(64, 64), nn.Linear(64, 4)]
X = torch.randn(32, 3)


def fresh_td():
    return TensorDict(x=X, batch_size=[32])


@pytest.fixture(autouse=True)
def _no_grad_one_thread():
    """Inference mode on one intra-op thread: on a shared machine, idle worker threads
    of these tiny matmuls dominate the timings otherwise."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.no_grad():
            yield
    finally:
        torch.set_num_threads(threads)


# -- one module ----------------------------------------------------------------------
@pytest.mark.benchmark(group="nn-module-forward")
def test_module_forward(benchmark):
    module = TensorDictModule(MLP, in_keys=["x"], out_keys=["y"])
    td = fresh_td()
    benchmark(module, td)


@pytest.mark.benchmark(group="nn-module-forward")
def test_module_forward_baseline(benchmark):
    benchmark(MLP, X)


@pytest.mark.benchmark(group="nn-module-kwargs")
def test_module_kwargs_call(benchmark):
    module = TensorDictModule(MLP, in_keys=["x"], out_keys=["y"])
    benchmark(lambda: module(x=X))


@pytest.mark.benchmark(group="nn-module-kwargs")
def test_module_kwargs_call_baseline(benchmark):
    benchmark(MLP, X)


# -- three modules in a sequence -------------------------------------------------------
@pytest.mark.benchmark(group="nn-sequential-3")
def test_sequential_3(benchmark):
    seq = TensorDictSequential(
        TensorDictModule(PARTS[0], in_keys=["x"], out_keys=["h1"]),
        TensorDictModule(PARTS[1], in_keys=["h1"], out_keys=["h2"]),
        TensorDictModule(PARTS[2], in_keys=["h2"], out_keys=["y"]),
    )
    td = fresh_td()
    benchmark(seq, td)


@pytest.mark.benchmark(group="nn-sequential-3")
def test_sequential_3_baseline(benchmark):
    a, b, c = PARTS
    benchmark(lambda: c(b(a(X))))


# -- probabilistic actor sampling ---------------------------------------------------------
NET = nn.Sequential(nn.Linear(3, 64), nn.Tanh(), nn.Linear(64, 8), NormalParamExtractor())


@pytest.mark.benchmark(group="nn-prob-sample")
def test_prob_sample(benchmark):
    actor = ProbabilisticTensorDictSequential(
        TensorDictModule(NET, in_keys=["x"], out_keys=["loc", "scale"]),
        ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                      distribution_class=D.Normal, return_log_prob=True,
                                      default_interaction_type=InteractionType.RANDOM),
    )
    td = fresh_td()
    with set_interaction_type("random"):
        benchmark(actor, td)


@pytest.mark.benchmark(group="nn-prob-sample")
def test_prob_sample_baseline(benchmark):
    def raw():
        loc, scale = NET(X)
        dist = D.Normal(loc, scale)
        action = dist.rsample()
        return action, dist.log_prob(action)

    benchmark(raw)
