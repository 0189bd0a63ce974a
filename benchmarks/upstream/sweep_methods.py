"""The sweep's method table: one call of each TensorDict method the other sweep files do not
time (pointwise math, dtype casts, shape and reduction methods, small queries), on a
TensorDict of 10 leaves of shape [4, 3] beside a sub-TensorDict of 2, on a lazy stack of 4
of those, and on a tensorclass of the same fields; then the module-level helpers (see
``sweep.py``).

Each row is ``name: call(collection)``; in-place rows keep the values bounded where
repetition would not (``sin_``, ``clamp_``), since both implementations run the same
arithmetic. A row that a collection does not support is reported as an error by both
implementations, and left out of the comparison."""

from collections.abc import Callable
from operator import methodcaller

import torch
from sweep_registry import workload

import tensordict
import tensordict.utils
from tensordict import LazyStackedTensorDict, TensorDict, tensorclass


def sample() -> TensorDict:
    """10 positive float leaves [4, 3] and a sub-TensorDict of 2."""
    entries = {f"k{i}": torch.rand(4, 3) + 0.5 for i in range(10)}
    entries["sub"] = {"a": torch.rand(4, 3) + 0.5, "b": torch.rand(4, 3) + 0.5}
    return TensorDict(entries, batch_size=[4])


def lazy_sample() -> LazyStackedTensorDict:
    """4 samples stacked lazily: batch size [4, 4]."""
    return LazyStackedTensorDict.lazy_stack([sample() for _ in range(4)], 0)


@tensorclass
class Fields:
    """The entries of :func:`sample` as the fields of a tensorclass ("sub" is a method)."""

    k0: torch.Tensor
    k1: torch.Tensor
    k2: torch.Tensor
    k3: torch.Tensor
    k4: torch.Tensor
    k5: torch.Tensor
    k6: torch.Tensor
    k7: torch.Tensor
    k8: torch.Tensor
    k9: torch.Tensor
    nested: TensorDict


def tc_sample() -> Fields:
    td = sample()
    return Fields(**{f"k{i}": td[f"k{i}"] for i in range(10)}, nested=td["sub"],
                  batch_size=[4])


INDEX = torch.tensor([[0], [1], [2], [3]])

CALLS: dict[str, Callable[[TensorDict], object]] = {
    # pointwise math, out of place and in place
    **{f"td.{op}()": methodcaller(op) for op in (
        "abs", "sqrt", "log", "log1p", "log2", "log10", "exp", "expm1", "sin", "cos", "tan",
        "tanh", "sigmoid", "neg", "reciprocal", "sign", "floor", "ceil", "round", "trunc",
        "frac", "erf", "lgamma", "isneginf", "isposinf", "isreal")},
    **{f"td.{op}_()": methodcaller(op + "_") for op in (
        "abs", "sin", "cos", "tanh", "sigmoid", "floor", "ceil", "round", "trunc", "sign")},
    "td.add(td)": lambda td: td.add(td),
    "td.mul(2.0)": lambda td: td.mul(2.0),
    "td.div(td)": lambda td: td.div(td),
    "td.sub_(0.0)": lambda td: td.sub_(0.0),
    "td.div_(1.0)": lambda td: td.div_(1.0),
    "td.pow_(1.0)": lambda td: td.pow_(1.0),
    "td.maximum(td)": lambda td: td.maximum(td),
    "td.minimum_(td)": lambda td: td.minimum_(td),
    "td.clamp_min(0.1)": lambda td: td.clamp_min(0.1),
    "td.clamp_min_(0.1)": lambda td: td.clamp_min_(0.1),
    "td.clamp_max_(10.0)": lambda td: td.clamp_max_(10.0),
    "td.addcmul(td, td)": lambda td: td.addcmul(td, td),
    "td.addcdiv_(td, td, value=0.0)": lambda td: td.addcdiv_(td, td, value=0.0),
    "td.logical_and(td)": lambda td: td.logical_and(td),
    "td.mod(2.0)": lambda td: td.mod(2.0),
    "td.rsub(1.0)": lambda td: td.rsub(1.0),
    # dtype casts
    **{f"td.{cast}()": methodcaller(cast) for cast in (
        "half", "bfloat16", "float16", "int32", "int8", "uint8", "bool", "double")},
    # shapes
    "td.flip(0)": lambda td: td.flip(0),
    "td.roll(1, 0)": lambda td: td.roll(1, 0),
    "td.narrow(0, 1, 2)": lambda td: td.narrow(0, 1, 2),
    "td.tile(2)": lambda td: td.tile(2),
    "td.movedim(0, 0)": lambda td: td.movedim(0, 0),
    "td.expand_as(td)": lambda td: td.expand_as(td),
    "td.broadcast_to([2, 4])": lambda td: td.broadcast_to([2, 4]),
    "td.tensor_split(2)": lambda td: td.tensor_split(2),
    "td.atleast_2d()": lambda td: td.atleast_2d(),
    "td.gather(0, index)": lambda td: td.gather(0, INDEX.view(4)),
    "td.masked_select(mask)": lambda td: td.masked_select(torch.tensor([True, False, True, True])),
    "td.new_zeros(4)": lambda td: td.new_zeros(4),
    "td.new_full([4], 1.0)": lambda td: td.new_full([4], 1.0),
    # reductions
    "td.amax(0)": lambda td: td.amax(0),
    "td.prod()": lambda td: td.prod(),
    "td.var()": lambda td: td.var(),
    "td.nansum()": lambda td: td.nansum(),
    "td.nanmean()": lambda td: td.nanmean(),
    "td.logsumexp(0)": lambda td: td.logsumexp(0),
    "td.cummax(0)": lambda td: td.cummax(0),
    "td.quantile(0.5)": lambda td: td.quantile(0.5),
    # queries and small structure calls
    "td.numel()": lambda td: td.numel(),
    "td.ndim": lambda td: td.ndim,
    "td.batch_dims": lambda td: td.batch_dims,
    "td.size(0)": lambda td: td.size(0),
    "td.is_contiguous()": lambda td: td.is_contiguous(),
    "td.is_floating_point()": lambda td: td.is_floating_point(),
    "td.requires_grad": lambda td: td.requires_grad,
    "td.is_consolidated()": lambda td: td.is_consolidated(),
    "td.param_count()": lambda td: td.param_count(),
    "td.bytes()": lambda td: td.bytes(),
    "td.depth": lambda td: td.depth,
    "td.sorted_keys": lambda td: td.sorted_keys,
    "td.get_item_shape('k0')": lambda td: td.get_item_shape("k0"),
    "td.get_at('k0', 1)": lambda td: td.get_at("k0", 1),
    "td.set_at_('k0', 1.0, 1)": lambda td: td.set_at_("k0", torch.ones(3), 1),
    "td.setdefault('k0', t)": lambda td: td.setdefault("k0", INDEX),
    "td.replace({'k0': t})": lambda td: td.replace({"k0": td["k1"]}),
    "td.rename_key_('k0', 'k0')": lambda td: td.rename_key_("k0", "k0"),
    "td.copy_at_(td[0], 0)": lambda td: td.copy_at_(td[1], 0),
    "td.update_at_(td[0], 0)": lambda td: td.update_at_(td[1], 0),
    "td.to_namedtuple()": lambda td: td.to_namedtuple(),
    "td.to_pytree()": lambda td: td.to_pytree(),
    "td.to_lazystack(0)": lambda td: td.to_lazystack(0),
    "td.filter_empty_()": lambda td: td.filter_empty_(),
    "td.detach_()": lambda td: td.detach_(),
    "td.pin_memory_() (no cuda: unchanged)": lambda td: td if not torch.cuda.is_available()
    else td.pin_memory_(),
    "TensorDict.fromkeys(keys, 0)": lambda td: TensorDict.fromkeys(["a", "b", "c"], 0),
    "TensorDict.from_dict(td.to_dict())": lambda td: TensorDict.from_dict(td.to_dict()),
}


#: the module-level helpers, each called on the sample TensorDict
FUNCTIONS: dict[str, Callable[[TensorDict], object]] = {
    "unravel_key(('a', ('b', 'c')))": lambda td: tensordict.unravel_key(("a", ("b", "c"))),
    "unravel_key_list(3 keys)": lambda td: tensordict.unravel_key_list(["a", ("b",), ("c", "d")]),
    "is_tensorclass(td)": lambda td: tensordict.is_tensorclass(td),
    "is_tensor_collection(td)": lambda td: tensordict.is_tensor_collection(td),
    "make_tensordict(a=t)": lambda td: tensordict.make_tensordict(a=INDEX, batch_size=[4]),
    "merge_tensordicts(td, td)": lambda td: tensordict.merge_tensordicts(td, td),
    "dense_stack_tds([td, td])": lambda td: tensordict.dense_stack_tds([td, td]),
    "pad_sequence([td, td])": lambda td: tensordict.pad_sequence([td, td]),
    "from_any(dict)": lambda td: tensordict.from_any({"a": INDEX, "b": {"c": INDEX}}),
    "from_namedtuple(td.to_namedtuple())": lambda td: tensordict.from_namedtuple(NAMED),
    "assert_allclose_td(td, td)": lambda td: tensordict.assert_allclose_td(td, td),
    "utils.expand_as_right(t, t)": lambda td: tensordict.utils.expand_as_right(
        INDEX.view(4), INDEX.expand(4, 3)),
    "utils.expand_right(t, shape)": lambda td: tensordict.utils.expand_right(INDEX, (4, 1, 2)),
    "utils.isin(td, td, 'k0')": lambda td: tensordict.utils.isin(td, td, "k0"),
    "utils.remove_duplicates(td, 'k0')": lambda td: tensordict.utils.remove_duplicates(td, "k0"),
    "utils.is_integer(torch.int64)": lambda td: tensordict.utils.is_integer(torch.int64),
}
NAMED = sample().to_namedtuple()


def _register(label: str, build: Callable[[], object],
              call: Callable[[object], object]) -> None:
    @workload(label)
    def _build() -> Callable[[], object]:
        collection = build()
        return lambda: call(collection)


for _name, _call in CALLS.items():
    _register(f"method: {_name}", sample, _call)
    _register(f"lazy method: {_name}", lazy_sample, _call)
    _register(f"tc method: {_name}", tc_sample, _call)
for _name, _call in FUNCTIONS.items():
    _register(f"function: {_name}", sample, _call)
