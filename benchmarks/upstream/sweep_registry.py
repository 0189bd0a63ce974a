"""The registry of ``sweep.py``'s workloads (``SWEEP``, filled by :func:`workload` in
``sweep_tensordict.py``, ``sweep_collections.py``, ``sweep_methods.py`` and
``sweep_steps.py``), their scratch folder and the data builders they share."""


import atexit
import shutil
import tempfile
from collections.abc import Callable

import torch
from workloads import flat

from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
)

Workload = Callable[[], Callable[[], object]]
SWEEP: dict[str, Workload] = {}
SCRATCH = tempfile.mkdtemp(prefix="td-sweep-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)  # a failed run leaves nothing


def workload(name: str) -> Callable[[Workload], Workload]:
    def register(build: Workload) -> Workload:
        SWEEP[name] = build
        return build
    return register


def two_dim(leaves: int = 10) -> TensorDict:
    return TensorDict({f"k{i}": torch.randn(4, 5, 3) for i in range(leaves)}, batch_size=[4, 5])


def lazy(n: int = 8, leaves: int = 10) -> LazyStackedTensorDict:
    return LazyStackedTensorDict.lazy_stack([flat(leaves) for _ in range(n)], 0)


def ragged(n: int = 8) -> LazyStackedTensorDict:
    return LazyStackedTensorDict.lazy_stack(
        [TensorDict({"r": torch.randn(i + 1, 3), "d": torch.randn(3)}, []) for i in range(n)], 0)
