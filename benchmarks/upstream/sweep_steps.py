"""The sweep's per-step workloads: the small calls a TorchRL environment step makes on an
unbatched transition (a Pendulum-sized step of 8 leaves and its "next" of 7), each
timed alone (see ``sweep.py``)."""

from collections.abc import Callable, Iterable

import torch
from sweep_registry import workload

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict.base import _is_leaf_nontensor, is_non_tensor, is_tensor_collection


def step_entries() -> dict[str, torch.Tensor]:
    """What a gym-like env reads off one step of Pendulum, as TorchRL names it."""
    return {"observation": torch.randn(3), "reward": torch.randn(1),
            "done": torch.zeros(1, dtype=torch.bool),
            "terminated": torch.zeros(1, dtype=torch.bool),
            "truncated": torch.zeros(1, dtype=torch.bool),
            "step_count": torch.zeros(1, dtype=torch.int64), "episode_reward": torch.zeros(1)}


def step() -> TensorDict:
    """One transition: the step's entries, its action and its "next"."""
    return TensorDict({**step_entries(), "action": torch.randn(1), "next": step_entries()}, [])


#: the step's listings (as TorchRL lists a transition's entries), each through list()
LISTINGS = {
    "td.items()": lambda td: td.items(),
    "td.items(is_leaf=_is_leaf_nontensor)": lambda td: td.items(is_leaf=_is_leaf_nontensor),
    "td.items(True, True)": lambda td: td.items(True, True),
    "td.values(True, True)": lambda td: td.values(True, True),
    "td.values()": lambda td: td.values(),
    "td.keys()": lambda td: td.keys(),
}


def _register_listing(name: str, listing: Callable[[TensorDict], Iterable[object]]) -> None:
    @workload(f"step: list({name})")
    def _build() -> Callable[[], object]:
        td = step()
        return lambda: list(listing(td))


for _name, _listing in LISTINGS.items():
    _register_listing(_name, _listing)


@workload("step: key in td.keys(include_nested=True)")
def _w():
    td = step()["next"]
    return lambda: "reward" in td.keys(include_nested=True)


@workload("step: td.update(td) (a policy writing in place)")
def _w():
    td = step()
    return lambda: td.update(td)


@workload("step: td.set('next', next_td)")
def _w():
    td, next_td = step(), step()["next"]
    return lambda: td.set("next", next_td)


@workload("step: td.get(key, 0.0)")
def _w():
    td = step()
    return lambda: td.get("episode_reward", 0.0)


@workload("step: td.get(missing_key, default=None)")
def _w():
    td = step()  # (TorchRL's transforms mostly spell the default as a keyword)
    return lambda: td.get("_reset", default=None)


@workload("step: td.pop(missing, None)")
def _w():
    td = step()
    return lambda: td.pop("_step", None)


@workload("step: TensorDict._new_unsafe(obs dict)")
def _w():
    entries = step_entries()
    return lambda: TensorDict._new_unsafe(entries, batch_size=torch.Size([]))


@workload("step: TensorDict.from_dict(spec sample)")
def _w():
    entries = step_entries()
    return lambda: TensorDict.from_dict(entries, batch_size=torch.Size([]), device=None,
                                        names=None)


@workload("step: td.empty()")
def _w():
    td = step()
    return lambda: td.empty()


@workload("step: td.copy()")
def _w():
    td = step()
    return lambda: td.copy()


@workload("step: td.clone()")
def _w():
    td = step()
    return lambda: td.clone()


@workload("step: td.exclude('next', 'action')")
def _w():
    td = step()
    return lambda: td.exclude("next", "action")


@workload("step: is_non_tensor / is_tensor_collection")
def _w():
    td = step()
    return lambda: (is_non_tensor(td), is_tensor_collection(td))


@workload("step: torch.stack 1000 transitions")
def _w():
    steps = [step() for _ in range(1000)]
    return lambda: torch.stack(steps)


@workload("step: maybe_dense_stack 1000 transitions")
def _w():
    steps = [step() for _ in range(1000)]
    return lambda: LazyStackedTensorDict.maybe_dense_stack(steps)
