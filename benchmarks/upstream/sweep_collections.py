"""The sweep's workloads of the other collections and plugins: lazy and ragged stacks,
tensorclasses, nn modules, memmap (see ``sweep.py``)."""


import os
import shutil

import torch
from sweep_registry import SCRATCH, lazy, ragged, workload
from torch import nn
from workloads import flat, transition

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    TensorDict,
    tensorclass,
)
from tensordict.nn import (
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictParams,
    TensorDictSequential,
)


# -- LazyStackedTensorDict ------------------------------------------------------------------------
@workload("lazy get leaf")
def _w():
    s = lazy()
    return lambda: s.get("k3")


@workload("lazy set leaf")
def _w():
    s, v = lazy(), torch.randn(8, 4, 3)
    return lambda: s.set("k3", v)


@workload("lazy [slice]")
def _w():
    s = lazy()
    return lambda: s[2:5]


@workload("lazy [int, int]")
def _w():
    s = lazy()
    return lambda: s[2, 1]


@workload("lazy [:, int]")
def _w():
    s = lazy()
    return lambda: s[:, 1]


@workload("lazy clone")
def _w():
    s = lazy()
    return lambda: s.clone()


@workload("lazy contiguous")
def _w():
    s = lazy()
    return lambda: s.contiguous()


@workload("lazy to_tensordict")
def _w():
    s = lazy()
    return lambda: s.to_tensordict()


@workload("lazy apply(x+1)")
def _w():
    s = lazy()
    return lambda: s.apply(lambda x: x + 1)


@workload("lazy reshape(-1)")
def _w():
    s = lazy()
    return lambda: s.reshape(-1)


@workload("lazy flatten(0,1)")
def _w():
    s = lazy()
    return lambda: s.flatten(0, 1)


@workload("lazy unbind(0)")
def _w():
    s = lazy()
    return lambda: s.unbind(0)


@workload("lazy iteration")
def _w():
    s = lazy()
    return lambda: list(s)


@workload("lazy update")
def _w():
    s = lazy()
    other = TensorDict({"k1": torch.randn(8, 4, 3), "k2": torch.randn(8, 4, 3)}, [8, 4])
    return lambda: s.update(other)


@workload("lazy_stack of lazy stacks")
def _w():
    ss = [lazy(4) for _ in range(4)]
    return lambda: LazyStackedTensorDict.lazy_stack(ss, 0)


@workload("lazy_stack 8 tds 10 leaves")
def _w():
    tds = [flat(10) for _ in range(8)]
    return lambda: LazyStackedTensorDict.lazy_stack(tds, 0)


@workload("tensordict.lazy_stack func")
def _w():
    tds = [flat(10) for _ in range(8)]
    return lambda: tensordict.lazy_stack(tds)


@workload("lazy densify/maybe_dense_stack")
def _w():
    s = lazy()
    return lambda: tensordict.maybe_dense_stack(list(s.tensordicts))


@workload("ragged get_nestedtensor")
def _w():
    s = ragged()
    return lambda: s.get_nestedtensor("r")


@workload("ragged get as_padded_tensor")
def _w():
    s = ragged()
    return lambda: s.get("r", as_padded_tensor=True)


@workload("ragged get dense leaf")
def _w():
    s = ragged()
    return lambda: s.get("d")


@workload("lazy exclude")
def _w():
    s = lazy()
    return lambda: s.exclude("k1", "k2")


@workload("lazy select")
def _w():
    s = lazy()
    return lambda: s.select("k1", "k2")


@workload("lazy rename_key_ there and back")
def _w():
    s = lazy()

    def run():
        s.rename_key_("k1", "z")
        s.rename_key_("z", "k1")
    return run


@workload("lazy [int] = td")
def _w():
    s = lazy()
    step = flat(10)

    def run():
        s[2] = step
    return run


@workload("lazy [slice] = td")
def _w():
    s = lazy()
    step = torch.stack([flat(10) for _ in range(2)], 0)

    def run():
        s[2:4] = step
    return run


@workload("lazy keys(nested) list")
def _w():
    s = lazy()
    return lambda: list(s.keys(True, True))


@workload("lazy repr")
def _w():
    s = lazy()
    return lambda: repr(s)


@workload("lazy torch.stack dense")
def _w():
    s = lazy()
    return lambda: torch.stack(list(s.tensordicts), 0).contiguous()


@workload("lazy to_dict")
def _w():
    s = lazy()
    return lambda: s.to_dict()


@workload("lazy sum()")
def _w():
    s = lazy()
    return lambda: s.sum()


@workload("lazy nested get")
def _w():
    s = LazyStackedTensorDict.lazy_stack([transition()[0] for _ in range(8)], 0)
    return lambda: s.get(("next", "info", "pos"))


# -- tensorclass ----------------------------------------------------------------------------------
@tensorclass
class Obs:
    obs: torch.Tensor
    reward: torch.Tensor


@tensorclass
class Outer:
    inner: Obs
    action: torch.Tensor


@tensorclass
class WithMeta:
    x: torch.Tensor
    label: str


def pair(n: int = 8) -> Obs:
    return Obs(obs=torch.randn(n, 3), reward=torch.randn(n, 1), batch_size=[n])


@workload("tc stack 8")
def _w():
    ps = [pair() for _ in range(8)]
    return lambda: torch.stack(ps, 0)


@workload("tc cat 8")
def _w():
    ps = [pair() for _ in range(8)]
    return lambda: torch.cat(ps, 0)


@workload("tc [mask]")
def _w():
    p = pair()
    mask = torch.tensor([True, False] * 4)
    return lambda: p[mask]


@workload("tc [int]")
def _w():
    p = pair()
    return lambda: p[3]


@workload("tc to_tensordict")
def _w():
    p = pair()
    return lambda: p.to_tensordict()


@workload("tc clone")
def _w():
    p = pair()
    return lambda: p.clone()


@workload("tc apply(x+1)")
def _w():
    p = pair()
    return lambda: p.apply(lambda x: x + 1)


@workload("tc setattr tensor")
def _w():
    p, v = pair(), torch.randn(8, 3)

    def run():
        p.obs = v
    return run


@workload("tc from_dict")
def _w():
    d = {"obs": torch.randn(8, 3), "reward": torch.randn(8, 1)}
    return lambda: Obs.from_dict(d, batch_size=[8])


@workload("tc == tc")
def _w():
    p = pair()
    q = p.clone()
    return lambda: p == q


@workload("tc nested getattr")
def _w():
    o = Outer(inner=pair(), action=torch.randn(8, 2), batch_size=[8])
    return lambda: o.inner.obs


@workload("tc nested construct")
def _w():
    p, a = pair(), torch.randn(8, 2)
    return lambda: Outer(inner=p, action=a, batch_size=[8])


@workload("tc non-tensor get")
def _w():
    w = WithMeta(x=torch.randn(8, 3), label="hi", batch_size=[8])
    return lambda: w.label


@workload("tc non-tensor set")
def _w():
    w = WithMeta(x=torch.randn(8, 3), label="hi", batch_size=[8])

    def run():
        w.label = "yo"
    return run


@workload("tc construct with non-tensor")
def _w():
    x = torch.randn(8, 3)
    return lambda: WithMeta(x=x, label="hi", batch_size=[8])


@workload("tc to(float64)")
def _w():
    p = pair()
    return lambda: p.to(torch.float64)


@workload("tc reshape")
def _w():
    p = pair()
    return lambda: p.reshape(2, 4)


@workload("tc unbind")
def _w():
    p = pair()
    return lambda: p.unbind(0)


@workload("tc repr")
def _w():
    p = pair()
    return lambda: repr(p)


@workload("tc [slice] = tc")
def _w():
    p, q = pair(), pair(2)

    def run():
        p[2:4] = q
    return run


# -- nn -------------------------------------------------------------------------------------------
@workload("nn TDModule nested in/out keys")
def _w():
    m = TensorDictModule(nn.Linear(11, 4), in_keys=[("next", "observation")],
                         out_keys=[("next", "h", "y")])
    td = transition()
    return lambda: m(td)


@workload("nn TDModule 2 in 2 out")
def _w():
    class Two(nn.Module):
        def forward(self, a, b):
            return a + b, a - b
    m = TensorDictModule(Two(), in_keys=["a", "b"], out_keys=["c", "d"])
    td = TensorDict(a=torch.randn(8, 3), b=torch.randn(8, 3), batch_size=[8])
    return lambda: m(td)


def _prob_seq():
    net = TensorDictModule(nn.Sequential(nn.Linear(3, 8), NormalParamExtractor()),
                           in_keys=["obs"], out_keys=["loc", "scale"])
    prob = ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                         distribution_class=torch.distributions.Normal,
                                         return_log_prob=True)
    return ProbabilisticTensorDictSequential(net, prob)


@workload("nn ProbSeq Normal call")
def _w():
    seq = _prob_seq()
    td = TensorDict(obs=torch.randn(8, 3), batch_size=[8])
    return lambda: seq(td)


@workload("nn ProbSeq log_prob")
def _w():
    seq = _prob_seq()
    td = seq(TensorDict(obs=torch.randn(8, 3), batch_size=[8]))
    return lambda: seq.log_prob(td)


@workload("nn ProbSeq get_dist")
def _w():
    seq = _prob_seq()
    td = TensorDict(obs=torch.randn(8, 3), batch_size=[8])
    return lambda: seq.get_dist(td)


@workload("nn ProbSeq TruncatedNormal call")
def _w():
    from tensordict.nn import TruncatedNormal
    net = TensorDictModule(nn.Sequential(nn.Linear(3, 8), NormalParamExtractor()),
                           in_keys=["obs"], out_keys=["loc", "scale"])
    prob = ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                         distribution_class=TruncatedNormal, return_log_prob=True,
                                         distribution_kwargs={"a": -1.0, "b": 1.0})
    seq = ProbabilisticTensorDictSequential(net, prob)
    td = TensorDict(obs=torch.randn(8, 3), batch_size=[8])
    return lambda: seq(td)


@workload("nn TensorDictParams construct")
def _w():
    module = nn.Sequential(*(nn.Linear(16, 16) for _ in range(5)))
    params = TensorDict.from_module(module)
    return lambda: TensorDictParams(params)


@workload("nn from_module + to_module functional call")
def _w():
    module = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    params = TensorDict.from_module(module).clone()
    x = torch.randn(8, 3)

    def run():
        with params.to_module(module):
            return module(x)
    return run


@workload("nn to_module (no context) 5 layers")
def _w():
    module = nn.Sequential(*(nn.Linear(16, 16) for _ in range(5)))
    params = TensorDict.from_module(module).clone()
    return lambda: params.to_module(module)


@workload("nn from_modules 4 MLPs")
def _w():
    mods = [nn.Sequential(nn.Linear(3, 8), nn.Linear(8, 2)) for _ in range(4)]
    return lambda: TensorDict.from_modules(*mods)


@workload("nn EnsembleModule call")
def _w():
    from tensordict.nn import EnsembleModule
    m = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["y"])
    ens = EnsembleModule(m, num_copies=3)
    td = TensorDict(x=torch.randn(8, 3), batch_size=[8])
    return lambda: ens(td)


@workload("nn Sequential select_subsequence")
def _w():
    seq = TensorDictSequential(
        TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"]),
        TensorDictModule(nn.Tanh(), in_keys=["h"], out_keys=["h2"]),
        TensorDictModule(nn.Linear(4, 1), in_keys=["h2"], out_keys=["y"]))
    return lambda: seq.select_subsequence(in_keys=["h"])


@workload("nn Sequential construct 3")
def _w():
    mods = [TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"]),
            TensorDictModule(nn.Tanh(), in_keys=["h"], out_keys=["h2"]),
            TensorDictModule(nn.Linear(4, 1), in_keys=["h2"], out_keys=["y"])]
    return lambda: TensorDictSequential(*mods)


@workload("nn TDModule construct")
def _w():
    lin = nn.Linear(3, 4)
    return lambda: TensorDictModule(lin, in_keys=["x"], out_keys=["y"])


@workload("nn TDModule kwargs call")
def _w():
    m = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["y"])
    x = torch.randn(8, 3)
    return lambda: m(x=x)


# -- memmap ---------------------------------------------------------------------------------------
@workload("mm memmap_like 10 leaves")
def _w():
    td = flat(10, 64)
    prefix = os.path.join(SCRATCH, "like")

    def run():
        return td.memmap_like(prefix)
    run.after = lambda: shutil.rmtree(prefix)
    return run


@workload("mm memmap_() no prefix 10 leaves")
def _w():
    td = flat(10, 64)
    return lambda: td.clone().memmap_()


@workload("mm load_memmap 10 leaves")
def _w():
    prefix = os.path.join(SCRATCH, "load")
    flat(10, 64).memmap(prefix)
    return lambda: TensorDict.load_memmap(prefix)


@workload("mm save + load 10 leaves")
def _w():
    td = flat(10, 64)
    prefix = os.path.join(SCRATCH, "saveload")

    def run():
        td.save(prefix)
        return TensorDict.load(prefix)
    run.after = lambda: shutil.rmtree(prefix)
    return run


@workload("mm mm[i] = step x 50")
def _w():
    mm = flat(10, 64).zero_().memmap(os.path.join(SCRATCH, "write"))
    step = flat(10, 1)[0]

    def run():
        for i in range(50):
            mm[i] = step
    return run


@workload("mm MemoryMappedTensor.from_tensor 64kB")
def _w():
    t = torch.randn(128, 128)
    return lambda: MemoryMappedTensor.from_tensor(t)


@workload("mm MemoryMappedTensor.empty")
def _w():
    return lambda: MemoryMappedTensor.empty((128, 128))


@workload("mm memmapped td [int]")
def _w():
    mm = flat(10, 64).memmap(os.path.join(SCRATCH, "idx"))
    return lambda: mm[3]


@workload("mm memmapped td clone")
def _w():
    mm = flat(10, 64).memmap(os.path.join(SCRATCH, "clone"))
    return lambda: mm.clone()


@workload("mm memmapped get leaf")
def _w():
    mm = flat(10, 64).memmap(os.path.join(SCRATCH, "get"))
    return lambda: mm.get("k3")
