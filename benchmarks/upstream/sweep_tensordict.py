"""The sweep's TensorDict workloads: keys and entries, copies and conversions, shapes,
math (see ``sweep.py``)."""



import copy
import io
import pickle
from collections.abc import Callable

import torch
from sweep_registry import two_dim, workload
from workloads import flat, three_levels, transition

import tensordict
from tensordict import (
    TensorDict,
)


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


#: what is pickled (as multiprocessing and checkpoints do), each both ways
PICKLED = {
    "50 leaves": three_levels,
    "consolidated 50 leaves": lambda: three_levels().consolidate(),
}


def _register_pickling(label: str, make: Callable[[], TensorDict]) -> None:
    @workload(f"pickle.dumps {label}")
    def _dumps() -> Callable[[], object]:
        td = make()
        return lambda: pickle.dumps(td)

    @workload(f"pickle.loads {label}")
    def _loads() -> Callable[[], object]:
        data = pickle.dumps(make())
        return lambda: pickle.loads(data)


for _label, _make in PICKLED.items():
    _register_pickling(_label, _make)


@workload("torch.save consolidated 50 leaves")
def _w():
    td = three_levels().consolidate()
    return lambda: torch.save(td, io.BytesIO())


@workload("copy.deepcopy nested transition")
def _w():
    td = transition()
    return lambda: copy.deepcopy(td)


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
