"""A broad sweep of public operations (about 200), timed under ours and upstream.

Same protocol as ``workloads.py`` (its helpers are imported); the workloads here are the
ones it does not cover: key lookups, casts, conversions, math, lazy and ragged stacks,
tensorclasses, nn modules, memmap. Prints one JSON object: seconds per call, or the
string "ERROR: ..." when a workload fails under this implementation. ``compare.py
--script sweep`` runs it under both implementations:

    python benchmarks/upstream/sweep.py [--only SUBSTRING|OTHER] [--budget 0.15]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections.abc import Callable

import torch
from torch import nn
from workloads import flat, three_levels, time_one, transition

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


# -- TensorDict: keys and entries ------------------------------------------------------------
@workload("td.get existing with default")
def _w():
    td = three_levels()
    return lambda: td.get(("g1", "x3"), None)


@workload("td.get missing with default")
def _w():
    td = three_levels()
    return lambda: td.get(("g1", "nope"), None)


@workload("td.get flat key")
def _w():
    td = flat(10)
    return lambda: td.get("k3")


@workload("td.set flat existing")
def _w():
    td, v = flat(10), torch.randn(4, 3)
    return lambda: td.set("k3", v)


@workload("td.set nested new tuple key")
def _w():
    td, v = three_levels(), torch.randn(4, 3)
    return lambda: td.set(("g2", "sub", "new"), v)


@workload("td.set_ existing in place")
def _w():
    td, v = flat(10), torch.randn(4, 3)
    return lambda: td.set_("k3", v)


@workload("nested key in td")
def _w():
    td = three_levels()
    return lambda: ("g2", "sub", "y1") in td


@workload("nested key in td.keys(True)")
def _w():
    td = three_levels()
    return lambda: ("g2", "sub", "y1") in td.keys(True)


@workload("pop + set back")
def _w():
    td = flat(10)

    def run():
        v = td.pop("k3")
        td["k3"] = v
    return run


@workload("del + set back")
def _w():
    td, v = flat(10), torch.randn(4, 3)

    def run():
        del td["k3"]
        td["k3"] = v
    return run


@workload("rename_key_ there and back")
def _w():
    td = flat(10)

    def run():
        td.rename_key_("k3", "z")
        td.rename_key_("z", "k3")
    return run


@workload("items(nested) list 50 leaves")
def _w():
    td = three_levels()
    return lambda: list(td.items(True, True))


@workload("values(nested) list 50 leaves")
def _w():
    td = three_levels()
    return lambda: list(td.values(True, True))


@workload("keys() flat list 50")
def _w():
    td = flat(50)
    return lambda: list(td.keys())


@workload("len(td)")
def _w():
    td = flat(10)
    return lambda: len(td)


@workload("td.shape / batch_size read")
def _w():
    td = flat(10)
    return lambda: td.batch_size


@workload("batch_size setter 50 leaves")
def _w():
    td = three_levels()

    def run():
        td.batch_size = []
        td.batch_size = [4]
    return run


@workload("empty() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.empty()


@workload("empty(recurse=True) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.empty(recurse=True)


@workload("is_empty() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.is_empty()


@workload("exclude flat 5 of 50")
def _w():
    td = flat(50)
    return lambda: td.exclude("k1", "k5", "k9", "k20", "k40")


@workload("select flat 5 of 50")
def _w():
    td = flat(50)
    return lambda: td.select("k1", "k5", "k9", "k20", "k40")


@workload("split_keys 2 groups")
def _w():
    td = flat(20)
    return lambda: td.split_keys(["k1", "k2", "k3"], ["k4", "k5"])


@workload("separates 3 keys")
def _w():
    td = flat(20)

    def run():
        out = td.separates("k1", "k2", "k3")
        td.update(out)
    return run


@workload("set_non_tensor + get_non_tensor")
def _w():
    td = flat(10)

    def run():
        td.set_non_tensor("meta", "hello")
        return td.get_non_tensor("meta")
    return run


@workload("get_non_tensor")
def _w():
    td = flat(10)
    td.set_non_tensor("meta", "hello")
    return lambda: td.get_non_tensor("meta")


@workload("update with non-tensor")
def _w():
    td = flat(10)
    other = TensorDict({"a": torch.randn(4, 3)}, [4])
    other.set_non_tensor("meta", "x")
    return lambda: td.update(other)


@workload("filter_non_tensor_data")
def _w():
    td = flat(10)
    td.set_non_tensor("meta", "hello")
    td.set_non_tensor(("n", "m"), 3)
    return lambda: td.filter_non_tensor_data()


@workload("lock_ + unlock_ 50 leaves")
def _w():
    td = three_levels()

    def run():
        td.lock_()
        td.unlock_()
    return run


@workload("is_locked read")
def _w():
    td = three_levels()
    return lambda: td.is_locked


@workload("names / refine_names")
def _w():
    td = flat(10)

    def run():
        t = td.clone(False)
        t.refine_names("b")
        return t.names
    return run


@workload("auto_batch_size_")
def _w():
    td = TensorDict({f"k{i}": torch.randn(4, 5, 3) for i in range(10)}, [])
    return lambda: td.clone(False).auto_batch_size_()


# -- TensorDict: copies and conversions ----------------------------------------------------------
@workload("clone(False) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.clone(False)


@workload("copy() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.copy()


@workload("detach 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.detach()


@workload("zero_ 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.zero_()


@workload("fill_ flat key")
def _w():
    td = flat(10)
    return lambda: td.fill_("k3", 1.0)


@workload("requires_grad_ 10 leaves")
def _w():
    td = flat(10)

    def run():
        td.requires_grad_(True)
        td.requires_grad_(False)
    return run


@workload("to('cpu') 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.to("cpu")


@workload("to(torch.device cpu) 50 leaves")
def _w():
    td = three_levels()
    dev = torch.device("cpu")
    return lambda: td.to(dev)


@workload("cpu() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.cpu()


@workload("contiguous 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.contiguous()


@workload("float() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.float()


@workload("double() 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.double()


@workload("numpy() 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.numpy()


@workload("to_dict 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.to_dict()


@workload("from_dict nested transition")
def _w():
    d = transition().to_dict()
    return lambda: TensorDict.from_dict(d)


@workload("from_dict with batch_size")
def _w():
    d = transition().to_dict()
    return lambda: TensorDict.from_dict(d, batch_size=[8])


@workload("tolist 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.tolist()


@workload("state_dict 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.state_dict()


@workload("load_state_dict 50 leaves")
def _w():
    td = three_levels()
    sd = three_levels().state_dict()
    return lambda: td.load_state_dict(sd)


@workload("consolidate 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.consolidate()


@workload("share_memory_ 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.clone().share_memory_()


@workload("repr 10 leaves")
def _w():
    td = flat(10)
    return lambda: repr(td)


@workload("repr nested transition")
def _w():
    td = transition()
    return lambda: repr(td)


@workload("to_tensordict 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.to_tensordict()


@workload("tensordict.from_dict func")
def _w():
    d = transition().to_dict()
    return lambda: tensordict.from_dict(d)


# -- TensorDict: shapes ---------------------------------------------------------------------------
@workload("squeeze(-1) after unsqueeze 50 leaves")
def _w():
    td = three_levels().unsqueeze(-1)
    return lambda: td.squeeze(-1)


@workload("unsqueeze(-1) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.unsqueeze(-1)


@workload("squeeze() 10 leaves")
def _w():
    td = flat(10, 1)
    return lambda: td.squeeze()


@workload("expand 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.expand(3, 4)


@workload("repeat 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.repeat(2)


@workload("repeat_interleave 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.repeat_interleave(2, dim=0)


@workload("chunk 10 leaves")
def _w():
    td = flat(10, 8)
    return lambda: td.chunk(4, 0)


@workload("split sizes list 10 leaves")
def _w():
    td = flat(10, 8)
    return lambda: td.split([2, 6], 0)


@workload("transpose 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td.transpose(0, 1)


@workload("unbind(1) 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td.unbind(1)


@workload("unflatten(0,(2,2)) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.unflatten(0, (2, 2))


@workload("flatten(0,1) 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td.flatten(0, 1)


@workload("reshape(-1) 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td.reshape(-1)


@workload("view(-1) 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td.view(-1)


@workload("gather 10 leaves")
def _w():
    td = two_dim()
    idx = torch.zeros(4, 2, dtype=torch.long)
    return lambda: td.gather(1, idx)


@workload("td[..., None] 50 leaves")
def _w():
    td = three_levels()
    return lambda: td[..., None]


@workload("td[:, None] 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td[:, None]


@workload("td[int, int] 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td[1, 2]


@workload("td[:, slice] 2-dim 10 leaves")
def _w():
    td = two_dim()
    return lambda: td[:, 1:3]


@workload("td[mask 2-dim] 10 leaves")
def _w():
    td = two_dim()
    mask = torch.rand(4, 5) > 0.5
    return lambda: td[mask]


@workload("td[str] getitem flat")
def _w():
    td = flat(10)
    return lambda: td["k3"]


@workload("td[slice] = td 10 leaves")
def _w():
    td = flat(10, 8)
    other = flat(10, 2)

    def run():
        td[2:4] = other
    return run


@workload("td[mask] = 0 10 leaves")
def _w():
    td = flat(10, 8)
    mask = torch.tensor([True, False] * 4)

    def run():
        td[mask] = 0.0
    return run


@workload("pad 10 leaves")
def _w():
    td = flat(10)
    return lambda: tensordict.pad(td, [0, 2])


@workload("pad_sequence 4 tds")
def _w():
    tds = [TensorDict({"a": torch.randn(i + 1, 3), "b": torch.randn(i + 1)}, [i + 1])
           for i in range(4)]
    return lambda: tensordict.pad_sequence(tds)


@workload("maybe_dense_stack 8 tds same shape")
def _w():
    tds = [flat(10) for _ in range(8)]
    return lambda: tensordict.maybe_dense_stack(tds)


@workload("torch.stack(out=) 8 tds 10 leaves")
def _w():
    tds = [flat(10) for _ in range(8)]
    out = torch.stack(tds, 0).clone()
    return lambda: torch.stack(tds, 0, out=out)


@workload("torch.cat nested 4 transitions")
def _w():
    tds = [transition() for _ in range(4)]
    return lambda: torch.cat(tds, 0)


@workload("torch.stack nested 4 transitions")
def _w():
    tds = [transition() for _ in range(4)]
    return lambda: torch.stack(tds, 0)


@workload("torch.stack 2 tds 1 leaf")
def _w():
    tds = [flat(1) for _ in range(2)]
    return lambda: torch.stack(tds, 0)


@workload("iterate td rows 8")
def _w():
    td = flat(10, 8)
    return lambda: list(td)


# -- TensorDict: math -----------------------------------------------------------------------------
@workload("sum() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.sum()


@workload("sum(dim=0) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.sum(dim=0)


@workload("mean() 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.mean()


@workload("std() 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.std()


@workload("max(dim=0) 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.max(dim=0)


@workload("norm() 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.norm()


@workload("any() 50 leaves")
def _w():
    td = three_levels() > 0
    return lambda: td.any()


@workload("all() 50 leaves")
def _w():
    td = three_levels() > 0
    return lambda: td.all()


@workload("td == td 50 leaves")
def _w():
    td = three_levels()
    other = td.clone()
    return lambda: td == other


@workload("(td == td).all() 50 leaves")
def _w():
    td = three_levels()
    other = td.clone()
    return lambda: (td == other).all()


@workload("td != td 50 leaves")
def _w():
    td = three_levels()
    other = td.clone()
    return lambda: td != other


@workload("td > 0 50 leaves")
def _w():
    td = three_levels()
    return lambda: td > 0


@workload("isfinite 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.isfinite()


@workload("isnan 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.isnan()


@workload("abs 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.abs()


@workload("exp 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.exp()


@workload("clamp(min,max) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.clamp(-1.0, 1.0)


@workload("clamp_max 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.clamp_max(1.0)


@workload("lerp td 50 leaves")
def _w():
    td = three_levels()
    other = td.clone()
    return lambda: td.lerp(other, 0.5)


@workload("lerp_ td 50 leaves")
def _w():
    td = three_levels()
    other = td.clone()
    return lambda: td.lerp_(other, 0.5)


@workload("pow 2 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.pow(2)


@workload("td * 2.0 50 leaves")
def _w():
    td = three_levels()
    return lambda: td * 2.0


@workload("td.mul_(2) 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.mul_(1.0)


@workload("td.add_(td) 50 leaves")
def _w():
    td = three_levels()
    other = td.clone().zero_()
    return lambda: td.add_(other)


@workload("td - td 10 leaves")
def _w():
    td = flat(10)
    return lambda: td - td


@workload("-td 50 leaves")
def _w():
    td = three_levels()
    return lambda: -td


@workload("masked_fill_ 50 leaves")
def _w():
    td, mask = three_levels(), torch.tensor([True, False, True, False])
    return lambda: td.masked_fill_(mask, 0.0)


@workload("where td other 10 leaves")
def _w():
    td = flat(10)
    other = flat(10)
    cond = torch.tensor([True, False, True, False])
    return lambda: torch.where(cond, td, other)


@workload("named_apply 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.named_apply(lambda name, x: x + 1)


@workload("named_apply nested_keys 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.named_apply(lambda name, x: x + 1, nested_keys=True)


@workload("apply two tds 50 leaves")
def _w():
    td = three_levels()
    other = td.clone()
    return lambda: td.apply(lambda x, y: x + y, other)


@workload("apply batch_size=[] 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.apply(lambda x: x.sum(0), batch_size=[])


@workload("apply returning None 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.apply(lambda x: None)


@workload("apply filter_empty=False 50 leaves")
def _w():
    td = three_levels()
    return lambda: td.apply(lambda x: x, filter_empty=False)


@workload("data_ptr / is_shared etc: is_memmap")
def _w():
    td = flat(10)
    return lambda: td.is_memmap()


@workload("softmax(0) 10 leaves")
def _w():
    td = flat(10)
    return lambda: td.softmax(0)


@workload("allclose via assert_close 10 leaves")
def _w():
    td = flat(10)
    other = td.clone()
    return lambda: tensordict.assert_close(td, other)


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="run the workloads whose name holds this")
    parser.add_argument("--budget", type=float, default=0.15, help="seconds per repeat")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    only = args.only.split("|")
    times: dict[str, object] = {}
    for name, build in SWEEP.items():
        if not any(o in name for o in only):
            continue
        try:
            times[name] = time_one(build, args.budget)
        except Exception as err:  # noqa: BLE001 - report, keep sweeping
            times[name] = f"ERROR: {type(err).__name__}: {str(err)[:300]}"
    json.dump(times, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
