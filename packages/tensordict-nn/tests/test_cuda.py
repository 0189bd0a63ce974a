"""tensordict.nn on a CUDA device: modules, probabilistic modules, parameters, ensembles
and CUDA graph capture. Skipped without a GPU."""

import warnings

import pytest
import torch
from torch import distributions as D
from torch import nn

from tensordict import TensorDict
from tensordict.nn import (
    CudaGraphModule,
    EnsembleModule,
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictParams,
    TensorDictSequential,
)

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")

CUDA = torch.device("cuda", 0)


def _inputs(rows: int = 4) -> TensorDict:
    return TensorDict(x=torch.randn(rows, 3), batch_size=[rows]).to(CUDA)


def test_module_and_sequence_run_on_the_device():
    first = TensorDictModule(nn.Linear(3, 4).to(CUDA), in_keys=["x"], out_keys=["h"])
    second = TensorDictModule(nn.Linear(4, 2).to(CUDA), in_keys=["h"], out_keys=["y"])
    td = TensorDictSequential(first, second)(_inputs())
    assert td["y"].device == CUDA and td["h"].device == CUDA
    torch.testing.assert_close(td["y"], second.module(first.module(td["x"])))


def test_probabilistic_module_samples_and_scores_on_the_device():
    net = TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()).to(CUDA),
                           in_keys=["x"], out_keys=["loc", "scale"])
    policy = ProbabilisticTensorDictSequential(
        net, ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                           distribution_class=D.Normal, return_log_prob=True))
    td = policy(_inputs())
    assert td["action"].device == CUDA and td["action_log_prob"].device == CUDA
    expected = D.Normal(td["loc"], td["scale"]).log_prob(td["action"])
    torch.testing.assert_close(td["action_log_prob"], expected)


def test_params_follow_the_device_and_stay_parameters():
    module = nn.Linear(3, 2)
    params = TensorDictParams(TensorDict.from_module(module))
    on_gpu = params.to(CUDA)
    leaves = list(on_gpu.values(True, True))
    assert leaves and all(isinstance(p, nn.Parameter) and p.device == CUDA for p in leaves)
    gpu_module = nn.Linear(3, 2).to(CUDA)
    with on_gpu.to_module(gpu_module):
        torch.testing.assert_close(gpu_module.weight, module.weight.to(CUDA))
    from_gpu = TensorDict.from_module(gpu_module)
    assert all(leaf.device == CUDA for leaf in from_gpu.values(True, True))


def test_ensemble_runs_on_the_device():
    ens = EnsembleModule(TensorDictModule(nn.Linear(3, 2), in_keys=["x"], out_keys=["y"]), 3)
    ens = ens.to(CUDA)
    out = ens(_inputs())
    assert out.batch_size == torch.Size([3, 4]) and out["y"].device == CUDA


def test_cuda_graph_replays_a_tensordict_module_with_new_inputs():
    linear = nn.Linear(3, 2).to(CUDA)
    graphed = CudaGraphModule(TensorDictModule(linear, in_keys=["x"], out_keys=["y"]), warmup=2)
    for call in range(6):  # 2 eager calls, a capture, then replays
        td = _inputs()
        out = graphed(td)
        assert out is td and td["y"].device == CUDA
        torch.testing.assert_close(td["y"], linear(td["x"]))
        assert (graphed._graph is not None) == (call >= 2)


def test_cuda_graph_replays_a_function_of_tensors():
    graphed = CudaGraphModule(lambda x, y: x * y + 1, warmup=1)
    for _ in range(4):
        x, y = torch.randn(5, device=CUDA), torch.randn(5, device=CUDA)
        torch.testing.assert_close(graphed(x, y), x * y + 1)
    assert graphed._graph is not None


def test_cuda_graph_of_cpu_inputs_runs_eagerly():
    linear = nn.Linear(3, 2)
    graphed = CudaGraphModule(TensorDictModule(linear, in_keys=["x"], out_keys=["y"]), warmup=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            td = TensorDict(x=torch.randn(2, 3), batch_size=[2])
            torch.testing.assert_close(graphed(td)["y"], linear(td["x"]))
    assert graphed._graph is None and any("eagerly" in str(w.message) for w in caught)
