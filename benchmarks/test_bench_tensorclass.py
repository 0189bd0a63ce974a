"""Tensorclass speed, each op beside a plain ``@dataclass`` holding the same tensors and
beside the same TensorDict op.

Targets: attribute read within 2x of the dataclass; construction and ``obj[0]`` within
1.3x of the TensorDict equivalents. Each group's ``*_baseline`` is the reference of its
target; the other reference stays in the group for information.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tensordict import TensorClass, TensorDict

N = 16


class Sample(TensorClass):
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor


@dataclasses.dataclass
class PlainSample:
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor


def _tensors() -> dict[str, torch.Tensor]:
    return {"obs": torch.zeros(N, 4), "action": torch.zeros(N, 2), "reward": torch.zeros(N, 1)}


@pytest.fixture
def tensors() -> dict[str, torch.Tensor]:
    return _tensors()


# -- construction -----------------------------------------------------------------------
@pytest.mark.benchmark(group="tc-construct")
def test_construct_tensorclass(benchmark, tensors):
    benchmark(lambda: Sample(**tensors, batch_size=[N]))


@pytest.mark.benchmark(group="tc-construct")
def test_construct_tensordict_baseline(benchmark, tensors):
    benchmark(lambda: TensorDict(tensors, batch_size=[N]))


@pytest.mark.benchmark(group="tc-construct")
def test_construct_dataclass(benchmark, tensors):
    benchmark(lambda: PlainSample(**tensors))


# -- attribute read (the three fields per call) -------------------------------------------
@pytest.mark.benchmark(group="tc-getattr")
def test_getattr_tensorclass(benchmark, tensors):
    obj = Sample(**tensors, batch_size=[N])
    benchmark(lambda: (obj.obs, obj.action, obj.reward))


@pytest.mark.benchmark(group="tc-getattr")
def test_getattr_dataclass_baseline(benchmark, tensors):
    obj = PlainSample(**tensors)
    benchmark(lambda: (obj.obs, obj.action, obj.reward))


@pytest.mark.benchmark(group="tc-getattr")
def test_getitem_key_tensordict(benchmark, tensors):
    td = TensorDict(tensors, batch_size=[N])
    benchmark(lambda: (td["obs"], td["action"], td["reward"]))


# -- attribute write ---------------------------------------------------------------------
@pytest.mark.benchmark(group="tc-setattr")
def test_setattr_tensorclass(benchmark, tensors):
    obj = Sample(**tensors, batch_size=[N])
    value = torch.ones(N, 4)

    def write():
        obj.obs = value

    benchmark(write)


@pytest.mark.benchmark(group="tc-setattr")
def test_setattr_dataclass_baseline(benchmark, tensors):
    obj = PlainSample(**tensors)
    value = torch.ones(N, 4)

    def write():
        obj.obs = value

    benchmark(write)


@pytest.mark.benchmark(group="tc-setattr")
def test_setitem_key_tensordict(benchmark, tensors):
    td = TensorDict(tensors, batch_size=[N])
    value = torch.ones(N, 4)

    def write():
        td["obs"] = value

    benchmark(write)


# -- batch indexing ----------------------------------------------------------------------
@pytest.mark.benchmark(group="tc-index")
def test_index_tensorclass(benchmark, tensors):
    obj = Sample(**tensors, batch_size=[N])
    benchmark(lambda: obj[0])


@pytest.mark.benchmark(group="tc-index")
def test_index_tensordict_baseline(benchmark, tensors):
    td = TensorDict(tensors, batch_size=[N])
    benchmark(lambda: td[0])


@pytest.mark.benchmark(group="tc-index")
def test_index_dataclass(benchmark, tensors):
    obj = PlainSample(**tensors)
    benchmark(lambda: PlainSample(**{k: v[0] for k, v in dataclasses.asdict(obj).items()}))


# -- stack of 100 instances --------------------------------------------------------------
@pytest.mark.benchmark(group="tc-stack")
def test_stack_tensorclass(benchmark, tensors):
    objs = [Sample(**tensors, batch_size=[N]) for _ in range(100)]
    benchmark(lambda: torch.stack(objs))


@pytest.mark.benchmark(group="tc-stack")
def test_stack_tensordict_baseline(benchmark, tensors):
    tds = [TensorDict(tensors, batch_size=[N]) for _ in range(100)]
    benchmark(lambda: torch.stack(tds))


@pytest.mark.benchmark(group="tc-stack")
def test_stack_dataclass(benchmark, tensors):
    objs = [PlainSample(**tensors) for _ in range(100)]
    names = [f.name for f in dataclasses.fields(PlainSample)]
    benchmark(lambda: PlainSample(**{n: torch.stack([getattr(o, n) for o in objs]) for n in names}))
