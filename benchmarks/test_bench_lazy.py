"""Lazy stacks beside the same work done by hand on a list of dicts of tensors.

Each group holds our op and a ``*_baseline``: building the stack (keeping the list),
reading one stacked key, taking one element and densifying everything.
"""

import pytest
import torch

from tensordict import TensorDict, lazy_stack

N = 100
DICTS = [{"obs": torch.randn(8, 3), "reward": torch.randn(8),
          "next": {"obs": torch.randn(8, 3), "done": torch.zeros(8, dtype=torch.bool)}}
         for _ in range(N)]
TDS = [TensorDict(d, batch_size=[8]) for d in DICTS]
STACK = lazy_stack(TDS)


def _stack_by_hand(dicts):
    return {key: _stack_by_hand([d[key] for d in dicts]) if isinstance(dicts[0][key], dict)
            else torch.stack([d[key] for d in dicts]) for key in dicts[0]}


@pytest.mark.benchmark(group="lazy_stack-100")
def test_lazy_stack(benchmark):
    benchmark(lazy_stack, TDS)


@pytest.mark.benchmark(group="lazy_stack-100")
def test_lazy_stack_baseline(benchmark):
    benchmark(list, DICTS)


@pytest.mark.benchmark(group="lazy-get-key")
def test_lazy_get(benchmark):
    benchmark(STACK.get, "obs")


@pytest.mark.benchmark(group="lazy-get-key")
def test_lazy_get_baseline(benchmark):
    benchmark(lambda: torch.stack([d["obs"] for d in DICTS]))


@pytest.mark.benchmark(group="lazy-index-one")
def test_lazy_index(benchmark):
    benchmark(STACK.__getitem__, 37)


@pytest.mark.benchmark(group="lazy-index-one")
def test_lazy_index_baseline(benchmark):
    benchmark(DICTS.__getitem__, 37)


@pytest.mark.benchmark(group="lazy-contiguous")
def test_lazy_contiguous(benchmark):
    benchmark(STACK.contiguous)


@pytest.mark.benchmark(group="lazy-contiguous")
def test_lazy_contiguous_baseline(benchmark):
    benchmark(_stack_by_hand, DICTS)
