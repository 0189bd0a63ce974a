"""What the Ray tests send: importable by the Ray workers (the tests put this folder on
their PYTHONPATH)."""

import time

import ray
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict
from tensordict.tensorclasses import tensorclass


@tensorclass
class Transition:
    obs: torch.Tensor
    reward: torch.Tensor
    info: str


def payloads() -> dict[str, object]:
    """One of each collection kind, with non-tensor data alongside."""
    nested = TensorDict(obs=torch.randn(4, 3), next={"done": torch.zeros(4, 1, dtype=torch.bool),
                        "h": torch.ones(4, dtype=torch.bfloat16)},
                        note=NonTensorData("episode 7", batch_size=[4]), batch_size=[4])
    stack = LazyStackedTensorDict(TensorDict(x=torch.zeros(3)), TensorDict(x=torch.ones(5)),
                                  stack_dim=0)
    return {"nested": nested, "consolidated": nested.consolidate(), "lazy stack": stack,
            "tensorclass": Transition(obs=torch.randn(2, 3), reward=torch.ones(2, 1),
                                      info="tc", batch_size=[2])}


@ray.remote
class Reader:
    """An actor that echoes what it gets, describes it, and times ``ray.get``."""

    def echo(self, value):
        return value

    def leaf_types(self, td):
        return sorted({type(v).__name__ for v in td.values(True, True)
                       if isinstance(v, torch.Tensor)})

    def memmap_files(self, td):
        return {k: getattr(v, "filename", None) for k, v in td.items()}

    def time_get(self, refs):
        """Seconds to ``ray.get`` the TensorDict of ``refs[0]`` and read one element of
        each leaf (a copy would be made here)."""
        start = time.perf_counter()
        td = ray.get(refs[0])
        float(td["a"][0])
        return time.perf_counter() - start, type(td["a"]).__name__
