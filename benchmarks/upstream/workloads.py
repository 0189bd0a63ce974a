"""The workloads timed against upstream tensordict: one script, run under each
implementation by ``compare.py`` (never both in one interpreter).

Each workload is a function that builds its data and returns the callable to time; only
API that both implementations share is used. Prints one JSON object, seconds per call:

    python benchmarks/upstream/workloads.py [--only SUBSTRING|OTHER] > times.json
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import time
import timeit
import warnings
from collections.abc import Callable
from functools import partial

import torch
from torch import nn

from tensordict import LazyStackedTensorDict, TensorDict, tensorclass
from tensordict.nn import (
    NormalParamExtractor,
    TensorDictModule,
    TensorDictParams,
    TensorDictSequential,
)

Workload = Callable[[], Callable[[], object]]
WORKLOADS: dict[str, Workload] = {}
SCRATCH = tempfile.mkdtemp(prefix="td-bench-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


def workload(name: str) -> Callable[[Workload], Workload]:
    def register(build: Workload) -> Workload:
        WORKLOADS[name] = build
        return build
    return register


def three_levels() -> TensorDict:
    """50 leaves over 3 levels: 5 groups g0..g4 of 8 leaves, each with a sub of 2."""
    data = {}
    for g in range(5):
        group = {f"x{i}": torch.randn(4, 3) for i in range(8)}
        group["sub"] = {"y0": torch.randn(4, 3), "y1": torch.randn(4, 3)}
        data[f"g{g}"] = group
    return TensorDict(data, batch_size=[4])


def flat(leaves: int = 50, batch: int = 4) -> TensorDict:
    return TensorDict({f"k{i}": torch.randn(batch, 3) for i in range(leaves)}, batch_size=[batch])


def transition() -> TensorDict:
    """A TorchRL-shaped nested transition (root, "next", "info")."""
    def step() -> dict:
        return {"observation": torch.randn(8, 11), "done": torch.zeros(8, 1, dtype=torch.bool),
                "terminated": torch.zeros(8, 1, dtype=torch.bool),
                "info": {"energy": torch.randn(8, 1), "pos": torch.randn(8, 3)}}
    root = step()
    root["action"] = torch.randn(8, 3)
    root["next"] = {**step(), "reward": torch.randn(8, 1)}
    return TensorDict(root, batch_size=[8])


# -- keys ------------------------------------------------------------------------------------
@workload("keys(nested, leaves_only) 50 leaves")
def _keys():
    td = three_levels()
    return lambda: list(td.keys(include_nested=True, leaves_only=True))


@workload("exclude 3 nested keys of 50")
def _exclude():
    td = three_levels()
    return lambda: td.exclude(("g1", "sub"), "g3", ("g4", "x0"))


@workload("select 4 nested keys of 50")
def _select():
    td = three_levels()
    return lambda: td.select(("g0", "x0"), ("g1", "sub", "y0"), ("g2", "x3"), ("g4", "sub"))


@workload("flatten_keys 50 leaves")
def _flatten_keys():
    td = three_levels()
    return lambda: td.flatten_keys(".")


@workload("unflatten_keys 50 leaves")
def _unflatten_keys():
    td = three_levels().flatten_keys(".")
    return lambda: td.unflatten_keys(".")


@workload("update 4 leaves (2 nested)")
def _update():
    td, other = transition(), TensorDict(
        {"action": torch.randn(8, 3), "observation": torch.randn(8, 11),
         "next": {"reward": torch.randn(8, 1), "observation": torch.randn(8, 11)}}, [8])
    return lambda: td.update(other)


@workload("update_ 50 leaves in place")
def _update_inplace():
    td, other = three_levels(), three_levels()
    return lambda: td.update_(other)


@workload("copy_ 50 leaves")
def _copy_inplace():
    td, other = three_levels(), three_levels()
    return lambda: td.copy_(other)


@workload("set existing nested key")
def _set_nested():
    td, value = transition(), torch.randn(8, 1)

    def run() -> None:
        td["next", "info", "energy"] = value
    return run


@workload("get nested key")
def _get_nested():
    td = transition()
    return lambda: td["next", "info", "energy"]


# -- construction and copies --------------------------------------------------------------------
@workload("construct 10 flat keys")
def _construct():
    values = {f"k{i}": torch.randn(4, 3) for i in range(10)}
    return lambda: TensorDict(values, batch_size=[4])


@workload("construct nested transition")
def _construct_nested():
    values = transition().to_dict()
    return lambda: TensorDict(values, batch_size=[8])


@workload("clone 50 leaves")
def _clone():
    td = three_levels()
    return td.clone


@workload("to(float64) 50 leaves")
def _to_dtype():
    td = three_levels()
    return lambda: td.to(torch.float64)


@workload("from_module 10-layer MLP")
def _from_module():
    module = nn.Sequential(*(nn.Linear(16, 16) for _ in range(10)))
    return lambda: TensorDict.from_module(module)


def _target_update(step: Callable[[TensorDict, TensorDict], object]) -> Callable[[], None]:
    """``step(target.data, source.data)`` under no_grad: TorchRL's target-network updaters,
    the target a ``TensorDictParams`` of a 10-layer MLP's parameters."""
    source = TensorDict.from_module(nn.Sequential(*(nn.Linear(16, 16) for _ in range(10))))
    target = TensorDictParams(source.clone())

    def update() -> None:
        with torch.no_grad():
            step(target.data, source.data)
    return update


for _name, _step in {
    "hard target update: copy_ of a 10-layer MLP's params": lambda t, s: t.copy_(s),
    "soft target update: lerp_ of a 10-layer MLP's params": lambda t, s: t.lerp_(s, 0.005),
    "soft target update: mul_ then add_ with alpha":
        lambda t, s: t.mul_(0.995).add_(s, alpha=0.005),
}.items():
    workload(_name)(partial(_target_update, _step))


# -- fixed cost per call: one leaf -------------------------------------------------------------
@workload("construct 1 key")
def _construct_one():
    value = torch.randn(4, 3)
    return lambda: TensorDict({"a": value}, batch_size=[4])


@workload("set new flat key")
def _set_flat():
    td, value = flat(1), torch.randn(4, 3)

    def run() -> None:
        td["new"] = value
    return run


@workload("td[0] 1 leaf")
def _index_one():
    td = flat(1)
    return lambda: td[0]


@workload("clone 1 leaf")
def _clone_one():
    td = flat(1)
    return td.clone


@workload("to(float64) 1 leaf")
def _to_one():
    td = flat(1)
    return lambda: td.to(torch.float64)


@workload("apply(x * 2) 1 leaf")
def _apply_one():
    td = flat(1)
    return lambda: td.apply(lambda x: x * 2)


# -- indexing --------------------------------------------------------------------------------
@workload("td[int] 50 leaves")
def _index_int():
    td = three_levels()
    return lambda: td[1]


@workload("td[slice] 50 leaves")
def _index_slice():
    td = three_levels()
    return lambda: td[1:3]


@workload("td[tensor] 50 leaves")
def _index_tensor():
    td, index = three_levels(), torch.tensor([0, 2, 3])
    return lambda: td[index]


@workload("td[rows]: 256 of 10,000 transitions, 8 leaves")
def _index_rows():
    # a replay buffer's sample: rows of a TorchRL-shaped storage picked by an index
    n = 10_000
    td = TensorDict({"observation": torch.randn(n, 11), "action": torch.randn(n, 3),
                     "done": torch.zeros(n, 1, dtype=torch.bool),
                     "next": {"observation": torch.randn(n, 11), "reward": torch.randn(n, 1),
                              "done": torch.zeros(n, 1, dtype=torch.bool)}}, batch_size=[n])
    rows = torch.randint(n, (256,), generator=torch.Generator().manual_seed(0))
    return lambda: td[rows]


@workload("td[rows]: 32 of 2,000 frames of 3x84x84 uint8 pixels")
def _index_pixel_rows():
    n = 2_000
    td = TensorDict({"pixels": torch.zeros(n, 3, 84, 84, dtype=torch.uint8),
                     "next": {"pixels": torch.zeros(n, 3, 84, 84, dtype=torch.uint8)},
                     "action": torch.zeros(n, 6)}, batch_size=[n])
    rows = torch.randint(n, (32,), generator=torch.Generator().manual_seed(0))
    return lambda: td[rows]


@workload("td[mask] 50 leaves")
def _index_mask():
    td, mask = three_levels(), torch.tensor([True, False, True, True])
    return lambda: td[mask]


@workload("buf[i] = step, 10 leaves x 100")
def _prealloc():
    buf = flat(10, 100).zero_()
    step = flat(10, 1)[0]

    def run() -> None:
        for i in range(100):
            buf[i] = step
    return run


# -- shapes and stacking ------------------------------------------------------------------------
@workload("stack 10 tds of 10 leaves")
def _stack():
    tds = [flat(10) for _ in range(10)]
    return lambda: torch.stack(tds, 0)


@workload("cat 10 tds of 10 leaves")
def _cat():
    tds = [flat(10) for _ in range(10)]
    return lambda: torch.cat(tds, 0)


@workload("unbind 10 leaves")
def _unbind():
    td = flat(10, 8)
    return lambda: td.unbind(0)


@workload("split 10 leaves")
def _split():
    td = flat(10, 8)
    return lambda: td.split(2, 0)


@workload("reshape 50 leaves")
def _reshape():
    td = three_levels()
    return lambda: td.reshape(2, 2)


@workload("view 50 leaves")
def _view():
    td = three_levels()
    return lambda: td.view(2, 2)


@workload("permute 2-dim batch, 10 leaves")
def _permute():
    td = TensorDict({f"k{i}": torch.randn(4, 5, 3) for i in range(10)}, batch_size=[4, 5])
    return lambda: td.permute(1, 0)


@workload("unsqueeze 50 leaves")
def _unsqueeze():
    td = three_levels()
    return lambda: td.unsqueeze(0)


# -- leaf-wise math --------------------------------------------------------------------------
@workload("apply(x + 1) 50 leaves")
def _apply():
    td = three_levels()
    return lambda: td.apply(lambda x: x + 1)


@workload("apply_(x.mul_(1)) 50 leaves")
def _apply_():
    td = three_levels()
    return lambda: td.apply_(lambda x: x.mul_(1))


@workload("td + td 50 leaves")
def _add():
    td = three_levels()
    return lambda: td + td


@workload("masked_fill 50 leaves")
def _masked_fill():
    td, mask = three_levels(), torch.tensor([True, False, True, False])
    return lambda: td.masked_fill(mask, 0.0)


@workload("where 50 leaves")
def _where():
    td, mask = three_levels(), torch.tensor([True, False, True, False])
    other = td.clone().zero_()
    return lambda: td.where(mask, other)


# -- lazy stacks --------------------------------------------------------------------------------
@workload("lazy_stack 10 tds + read key")
def _lazy():
    tds = [flat(10) for _ in range(10)]

    def run() -> object:
        return LazyStackedTensorDict.lazy_stack(tds, 0)["k3"]
    return run


@workload("lazy stack [int]")
def _lazy_index():
    stack = LazyStackedTensorDict.lazy_stack([flat(10) for _ in range(10)], 0)
    return lambda: stack[3]


@workload("lazy stack reshape(-1), 10 tds x [4]")
def _lazy_flatten():
    stack = LazyStackedTensorDict.lazy_stack([flat(10) for _ in range(10)], 0)
    return lambda: stack.reshape(-1)


@workload("lazy stack unsqueeze(0)")
def _lazy_unsqueeze():
    stack = LazyStackedTensorDict.lazy_stack([flat(10) for _ in range(10)], 0)
    return lambda: stack.unsqueeze(0)


@workload("lazy stack unbind(1)")
def _lazy_unbind():
    stack = LazyStackedTensorDict.lazy_stack([flat(10) for _ in range(10)], 0)
    return lambda: stack.unbind(1)


# -- nn ------------------------------------------------------------------------------------------
@workload("TensorDictModule call")
def _module():
    module = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["y"])
    td = TensorDict(x=torch.randn(8, 3), batch_size=[8])
    return lambda: module(td)


@workload("TensorDictSequential of 3 call")
def _sequential():
    seq = TensorDictSequential(
        TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"]),
        TensorDictModule(nn.Tanh(), in_keys=["h"], out_keys=["h"]),
        TensorDictModule(nn.Linear(4, 1), in_keys=["h"], out_keys=["y"]))
    td = TensorDict(x=torch.randn(8, 3), batch_size=[8])
    return lambda: seq(td)


@workload("vmap a module over 2 stacked copies of its params (an ensemble)")
def _vmap_params():
    module = TensorDictModule(
        nn.Sequential(nn.Linear(14, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(),
                      nn.Linear(64, 1)), in_keys=["x"], out_keys=["q"])
    params = torch.stack([TensorDict.from_module(module)] * 2).clone()
    td = TensorDict(x=torch.randn(256, 14), batch_size=[256])

    def call(data: TensorDict, p: TensorDict) -> TensorDict:
        with p.to_module(module):
            return module(data)
    return partial(torch.vmap(call, (None, 0)), td, params)


@workload("vmap a module over a TensorDict's first batch dim")
def _vmap_data():
    module = TensorDictModule(nn.Linear(11, 1), in_keys=["x"], out_keys=["v"])
    td = TensorDict(x=torch.randn(2, 100, 11), batch_size=[2, 100])
    return partial(torch.vmap(module, (0,)), td)


# -- tensorclass ---------------------------------------------------------------------------------
@tensorclass
class Pair:
    obs: torch.Tensor
    reward: torch.Tensor


@workload("tensorclass construct")
def _tc_construct():
    obs, reward = torch.randn(8, 3), torch.randn(8, 1)
    return lambda: Pair(obs=obs, reward=reward, batch_size=[8])


@workload("tensorclass getattr")
def _tc_getattr():
    pair = Pair(obs=torch.randn(8, 3), reward=torch.randn(8, 1), batch_size=[8])
    return lambda: pair.obs


@workload("tensorclass [slice]")
def _tc_index():
    pair = Pair(obs=torch.randn(8, 3), reward=torch.randn(8, 1), batch_size=[8])
    return lambda: pair[2:5]


# -- memmap --------------------------------------------------------------------------------------
@workload("memmap save 10 leaves x 256 kB")
def _memmap_save():
    td = TensorDict({f"k{i}": torch.randn(256, 256) for i in range(10)}, batch_size=[256])
    prefix = os.path.join(SCRATCH, "save")

    def run() -> object:
        return td.memmap(prefix)
    run.after = lambda: shutil.rmtree(prefix)  # untimed, after each call
    return run


@workload("memmap random rows load")
def _memmap_rows():
    saved = TensorDict({f"k{i}": torch.randn(4096, 64) for i in range(10)},
                       batch_size=[4096]).memmap(os.path.join(SCRATCH, "rows"))
    loaded = TensorDict.load_memmap(os.path.join(SCRATCH, "rows"))
    del saved
    index = torch.randint(4096, (256,))
    return lambda: loaded[index]


# -- devices (with CUDA only) -------------------------------------------------------------------
def _synced(fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` followed by a CUDA synchronization, so that the time covers the copies."""
    def call() -> object:
        out = fn()
        torch.cuda.synchronize()
        return out
    return call


def big(leaves: int = 10, floats: int = 1 << 20) -> TensorDict:
    """``leaves`` leaves of 4 MB each."""
    return TensorDict({f"k{i}": torch.randn(4, floats // 4) for i in range(leaves)},
                      batch_size=[4])


if torch.cuda.is_available():
    @workload("cuda: td.to('cuda') 50 small leaves")
    def _to_cuda():
        td = flat()
        return _synced(lambda: td.to("cuda"))

    @workload("cuda: td.to('cuda', non_blocking=True) 50 small leaves")
    def _to_cuda_async():
        td = flat()
        return _synced(lambda: td.to("cuda", non_blocking=True))

    @workload("cuda: td.to('cuda', non_blocking=False) 50 small leaves")
    def _to_cuda_blocking():
        td = flat()
        return _synced(lambda: td.to("cuda", non_blocking=False))

    @workload("cuda: pinned td.to('cuda', non_blocking=True) 50 small leaves")
    def _pinned_to_cuda():
        td = flat().pin_memory()
        return _synced(lambda: td.to("cuda", non_blocking=True))

    @workload("cuda: td.pin_memory() 50 small leaves")
    def _pin():
        td = flat()
        return td.pin_memory

    @workload("cuda: consolidated td.to('cuda') 50 small leaves")
    def _consolidated_to_cuda():
        td = flat().consolidate()
        return _synced(lambda: td.to("cuda"))

    @workload("cuda: TensorDict(50 cpu leaves, device='cuda')")
    def _construct_cuda():
        data = {f"k{i}": torch.randn(4, 3) for i in range(50)}
        return _synced(lambda: TensorDict(data, batch_size=[4], device="cuda"))

    @workload("cuda: td.to('cpu') 50 small leaves")
    def _to_cpu():
        td = flat().to("cuda")
        return lambda: td.to("cpu")

    @workload("cuda: td.to('cpu', non_blocking=True) + sync 50 small leaves")
    def _to_cpu_async():
        td = flat().to("cuda")
        return _synced(lambda: td.to("cpu", non_blocking=True))

    @workload("cuda: td.to('cuda') 10 leaves of 4 MB")
    def _to_cuda_big():
        td = big()
        return _synced(lambda: td.to("cuda"))

    @workload("cuda: pinned td.to('cuda', non_blocking=True) 10 leaves of 4 MB")
    def _pinned_to_cuda_big():
        td = big().pin_memory()
        return _synced(lambda: td.to("cuda", non_blocking=True))

    @workload("cuda: td.to('cpu') 10 leaves of 4 MB")
    def _to_cpu_big():
        td = big().to("cuda")
        return lambda: td.to("cpu")

    @workload("cuda: td + 1 on cuda, 50 leaves")
    def _add_cuda():
        td = flat().to("cuda")
        return _synced(lambda: td + 1)

    @workload("cuda: td[index] on cuda, 50 leaves")
    def _index_cuda():
        td, index = flat().to("cuda"), torch.tensor([0, 2], device="cuda")
        return _synced(lambda: td[index])

    @workload("cuda: torch.stack 8 cuda tds of 50 leaves")
    def _stack_cuda():
        tds = [flat().to("cuda") for _ in range(8)]
        return _synced(lambda: torch.stack(tds))

    @workload("cuda: TensorDictModule Linear on cuda")
    def _module_cuda():
        module = TensorDictModule(nn.Linear(3, 4).cuda(), in_keys=["k0"], out_keys=["out"])
        td = flat().to("cuda")
        return _synced(lambda: module(td))


# -- TorchRL --------------------------------------------------------------------------------------
def _torchrl_available() -> bool:
    try:
        import torchrl  # noqa: F401
    except ImportError:
        return False
    return True


if _torchrl_available():
    @workload("torchrl step_mdp nested transition")
    def _step_mdp():
        from torchrl.envs.utils import step_mdp

        td = transition()
        return lambda: step_mdp(td)

    def _quiet_torchrl() -> None:
        # TorchRL logs each storage it initializes to stdout, where the JSON goes
        import logging

        logging.getLogger("torchrl").setLevel(logging.WARNING)

    @workload("torchrl ReplayBuffer(LazyTensorStorage) sample 256 of 5,000")
    def _rb_sample():
        from torchrl.data import LazyTensorStorage, ReplayBuffer

        _quiet_torchrl()
        rb = ReplayBuffer(storage=LazyTensorStorage(10_000), batch_size=256)
        rb.extend(transition().expand(625, 8).reshape(-1).clone())
        return rb.sample

    @workload("torchrl ReplayBuffer(LazyTensorStorage) extend 1,000")
    def _rb_extend():
        from torchrl.data import LazyTensorStorage, ReplayBuffer

        _quiet_torchrl()
        rb = ReplayBuffer(storage=LazyTensorStorage(100_000))
        steps = transition().expand(125, 8).reshape(-1).clone()
        return lambda: rb.extend(steps)

    def _transitions(n: int, action_dim: int = 3) -> TensorDict:
        """``n`` TorchRL transitions (a multiple of 8), actions in (-0.9, 0.9)."""
        torch.manual_seed(0)
        batch = transition().expand(n // 8, 8).reshape(-1).clone()
        batch["action"] = torch.rand(n, action_dim) * 1.8 - 0.9
        return batch

    def _mlp(n_in: int, n_out: int) -> nn.Module:
        from torchrl.modules import MLP

        return MLP(in_features=n_in, out_features=n_out, num_cells=[64, 64])

    def _tanh_normal_actor() -> nn.Module:
        from torchrl.modules import ProbabilisticActor, TanhNormal

        net = TensorDictModule(nn.Sequential(_mlp(11, 6), NormalParamExtractor()),
                               in_keys=["observation"], out_keys=["loc", "scale"])
        return ProbabilisticActor(net, in_keys=["loc", "scale"], distribution_class=TanhNormal,
                                  return_log_prob=True)

    @workload("torchrl DQNLoss on 256 transitions")
    def _dqn_loss():
        from torchrl.data import OneHot
        from torchrl.modules import QValueActor
        from torchrl.objectives import DQNLoss

        batch = _transitions(256)
        actor = QValueActor(_mlp(11, 4), in_keys=["observation"], spec=OneHot(4))
        loss = DQNLoss(actor, action_space="one-hot", delay_value=True)
        batch["action"] = nn.functional.one_hot(torch.randint(4, (256,)), 4)
        return lambda: loss(batch)

    @workload("torchrl ClipPPOLoss on 256 transitions")
    def _ppo_loss():
        from torchrl.modules import ValueOperator
        from torchrl.objectives import ClipPPOLoss

        batch = _transitions(256)
        loss = ClipPPOLoss(_tanh_normal_actor(),
                           ValueOperator(_mlp(11, 1), in_keys=["observation"]))
        for key in ("action_log_prob", "sample_log_prob"):
            batch[key] = torch.randn(256)
        batch["advantage"], batch["value_target"] = torch.randn(256, 1), torch.randn(256, 1)
        return lambda: loss(batch)

    @workload("torchrl SACLoss (2 Q-networks, vmapped) on 256 transitions")
    def _sac_loss():
        from torchrl.modules import ValueOperator
        from torchrl.objectives import SACLoss

        class QValue(nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.mlp = _mlp(14, 1)

            def forward(self, observation: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
                return self.mlp(torch.cat([observation, action], -1))

        batch = _transitions(256)
        loss = SACLoss(_tanh_normal_actor(),
                       ValueOperator(QValue(), in_keys=["observation", "action"]),
                       target_entropy=-3.0)
        return lambda: loss(batch)

    @workload("torchrl GAE over 1,000 transitions")
    def _gae():
        from torchrl.modules import ValueOperator
        from torchrl.objectives.value import GAE

        batch = _transitions(1000)
        gae = GAE(gamma=0.99, lmbda=0.95,
                  value_network=ValueOperator(_mlp(11, 1), in_keys=["observation"]))
        return lambda: gae(batch)

    @workload("torchrl 1000-step rollout (Pendulum, StepCounter, RewardSum)")
    def _rollout():
        from torchrl.envs import RewardSum, StepCounter, TransformedEnv
        from torchrl.envs.libs.gym import GymEnv

        env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter())
        env.append_transform(RewardSum())
        env.set_seed(0)
        return lambda: env.rollout(1000, break_when_any_done=False)

    @workload("torchrl 1000-step rollout (TorchRL's PendulumEnv, StepCounter, RewardSum)")
    def _rollout_native():
        # the same loop over TorchRL's own Pendulum, whose dynamics are tensordict reads
        # and writes: no gym or numpy in the step
        from torchrl.envs import PendulumEnv, RewardSum, StepCounter, TransformedEnv

        env = TransformedEnv(PendulumEnv(seed=0), StepCounter())
        env.append_transform(RewardSum())
        return lambda: env.rollout(1000, break_when_any_done=False)


def time_one(build: Workload, budget: float) -> float:
    """Seconds per call: the best of 3 repeats of as many calls as fit in ``budget``
    (a callable with an ``after`` step, e.g. deleting what it saved, is timed call by call
    without it)."""
    fn = build()
    after = getattr(fn, "after", None)
    if after is not None:
        fn(), after()
        best = float("inf")
        for _ in range(3):
            start, calls, spent = time.perf_counter(), 0, 0.0
            while time.perf_counter() - start < budget or calls < 3:
                began = time.perf_counter()
                fn()
                spent += time.perf_counter() - began
                calls += 1
                after()
            best = min(best, spent / calls)
        return best
    fn()  # warm-up (lazy imports, caches)
    timer = timeit.Timer(fn)
    number, elapsed = 1, timer.timeit(1)
    while elapsed < budget / 5 and number < 10**6:
        number *= 4
        elapsed = timer.timeit(number)
    return min(timer.repeat(repeat=3, number=number)) / number


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="",
                        help="run the workloads whose name holds this (or one of A|B)")
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per repeat")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    only = args.only.split("|")
    times: dict[str, object] = {}
    for name, build in WORKLOADS.items():
        if any(o in name for o in only):
            try:
                times[name] = time_one(build, args.budget)
            except Exception as err:  # noqa: BLE001 - compare.py lists it, the rest runs
                times[name] = f"ERROR: {type(err).__name__}: {str(err)[:300]}"
    json.dump(times, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
