"""Bad input never gives a silent wrong result, and never a partial write.

One table of cases: (name, build the collection, the bad operation, the exception class
upstream tensordict 0.15.3 raises, substrings the message must contain). Each case checks
the exception class, that the message names the key or the shapes involved, and that a
deep snapshot of the collection (keys, batch sizes, names, lock states, every leaf's
values, non-tensor data) is the same afterwards.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorStack,
    TensorDict,
    is_tensor_collection,
    is_tensorclass,
    lazy_stack,
)

try:
    from tensordict import tensorclass
except ImportError:  # core alone (tox env core): the tensorclass cases skip
    tensorclass = None

if tensorclass is not None:
    @tensorclass
    class Pair:
        x: torch.Tensor
        y: torch.Tensor


sys.path.insert(0, str(Path(__file__).parent))  # the collections are shared with test_good_input
from bad_input_collections import dense, lazy, lazy1, locked, named, scalar  # noqa: E402


def pair() -> Any:
    if tensorclass is None:
        pytest.skip("needs tensordict-tensorclass")
    return Pair(x=torch.arange(3.0), y=torch.arange(6.0).view(3, 2), batch_size=[3])


# -- the deep snapshot -------------------------------------------------------------------------
def snapshot(obj: Any) -> Any:
    """Everything observable about ``obj``, with leaves cloned."""
    if isinstance(obj, torch.Tensor):
        return ("tensor", obj.dtype, obj.shape, obj.detach().clone())
    if is_tensorclass(obj):
        return ("tensorclass", type(obj).__name__, snapshot(obj._tensordict))
    if not is_tensor_collection(obj):
        return ("object", repr(obj))
    if getattr(obj, "_is_non_tensor", False):
        return ("non-tensor", obj.batch_size, repr(obj.tolist()))
    meta = (type(obj).__name__, obj.batch_size, tuple(obj.names), obj.is_locked, obj.device)
    if isinstance(obj, LazyStackedTensorDict):
        return meta + (obj.stack_dim, tuple(snapshot(part) for part in obj.tensordicts))
    return meta + tuple((key, snapshot(obj.get(key))) for key in sorted(obj.keys()))


def same(a: Any, b: Any) -> bool:
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
                and a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return a == b


# -- the table -----------------------------------------------------------------------------------
Case = tuple[str, Callable[[], Any], Callable[[Any], Any], type, tuple[str, ...]]
CASES: list[Case] = []


def case(name: str, build: Callable[[], Any], op: Callable[[Any], Any], exc: type,
         *contains: str) -> None:
    CASES.append((name, build, op, exc, contains))


def _setitem(key: Any, value: Any) -> Callable[[Any], None]:
    def op(td: Any) -> None:
        td[key] = value
    return op


def _attr(name: str, value: Any) -> Callable[[Any], None]:
    def op(td: Any) -> None:
        setattr(td, name, value)
    return op


def _z(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype)


# construction
case("ctor: leaf shorter than the batch", dense,
     lambda _: TensorDict(a=_z(2), batch_size=[3]), RuntimeError, "'a'", "[3]", "[2]")
case("ctor: second leaf does not fit", dense,
     lambda _: TensorDict(a=_z(3), b=_z(4), batch_size=[3]), RuntimeError, "'b'", "[4]")
case("ctor: nested leaf does not fit", dense,
     lambda _: TensorDict({"n": {"c": _z(2)}}, batch_size=[3]), RuntimeError, "'c'", "[2]")
case("ctor: 0-dim leaf with a batch", dense,
     lambda _: TensorDict(a=torch.tensor(1.0), batch_size=[1]), RuntimeError, "'a'", "[1]")
case("ctor: batch size -1", dense,
     lambda _: TensorDict(a=_z(3), batch_size=[-1]), RuntimeError, "-1")
case("ctor: negative batch size, no entries", dense,
     lambda _: TensorDict(batch_size=[-2]), RuntimeError, "-2")
case("ctor: batch size is a string", dense,
     lambda _: TensorDict(batch_size="three"), ValueError, "three")
case("ctor: batch size of floats", dense,
     lambda _: TensorDict(batch_size=[1.5]), ValueError, "1.5")
case("ctor: names of the wrong length", dense,
     lambda _: TensorDict(a=_z(3, 4), batch_size=[3, 4], names=["x"]), ValueError, "['x']")
case("ctor: duplicated names", dense,
     lambda _: TensorDict(a=_z(3, 4), batch_size=[3, 4], names=["x", "x"]), ValueError, "x")
case("ctor: source is a list", dense,
     lambda _: TensorDict([("a", _z(3))], batch_size=[3]), ValueError, "list")
case("ctor: source and keyword entries", dense,
     lambda _: TensorDict({"a": _z(3)}, b=_z(3)), ValueError, "keyword")
case("ctor: bad device", dense,
     lambda _: TensorDict(a=_z(3), device="nodevice"), RuntimeError, "nodevice")
case("ctor: sub-TensorDict of another batch", dense,
     lambda _: TensorDict(n=TensorDict(c=_z(2), batch_size=[2]), batch_size=[3]),
     RuntimeError, "'n'", "[2]", "[3]")
case("ctor: lazy stack of different numbers of batch dims", dense,
     lambda _: LazyStackedTensorDict(TensorDict(batch_size=[2]), TensorDict(batch_size=[2, 3])),
     RuntimeError, "[2]", "[2, 3]")
case("ctor: from_dict with a bad batch size", dense,
     lambda _: TensorDict.from_dict({"a": _z(3)}, batch_size=[4]), RuntimeError, "'a'", "[4]")
case("ctor: tensorclass field of another batch", pair,
     lambda _: Pair(x=_z(3), y=_z(2), batch_size=[3]), RuntimeError, "'y'", "[2]")
case("ctor: tensorclass without a required field", pair,
     lambda _: Pair(x=_z(3), batch_size=[3]), TypeError, "y")

# set / __setitem__ with a key
for build in (dense, locked, lazy, lazy1, named):
    label = build.__name__
    case(f"{label}: set a leaf too short", build, lambda td: td.set("z", _z(1)),
         RuntimeError, "'z'")
    case(f"{label}: set over an entry, wrong shape", build, lambda td: td.set("a", _z(7)),
         RuntimeError, "'a'", "[7]")
    case(f"{label}: set inplace, wrong shape", build,
         lambda td: td.set("a", _z(*td.batch_size, 9), inplace=True), RuntimeError, "'a'")
    case(f"{label}: setitem of a nested key, wrong shape", build,
         _setitem(("n", "c"), _z(7)), RuntimeError, "'c'", "[7]")
    case(f"{label}: set a new nested key, wrong shape", build,
         lambda td: td.set(("x", "y"), _z(7)), RuntimeError, "'y'", "[7]")
    case(f"{label}: set a deep new nested key, wrong shape", build,
         lambda td: td.set(("n", "x", "y", "z"), _z(7)), RuntimeError, "'z'", "[7]")
    case(f"{label}: set through a leaf", build,
         lambda td: td.set(("a", "y"), _z(*td.batch_size)), KeyError, "'a'")
    case(f"{label}: set through a deep leaf", build,
         lambda td: td.set(("n", "c", "y"), _z(*td.batch_size)), KeyError, "'c'")
    case(f"{label}: set an int key", build, lambda td: td.set(1, _z(*td.batch_size)),
         KeyError, "1")
    case(f"{label}: set an empty tuple key", build,
         lambda td: td.set((), _z(*td.batch_size)), KeyError, "()")
    case(f"{label}: set a tuple key holding an int", build,
         lambda td: td.set(("n", 1), _z(*td.batch_size)), KeyError, "('n', 1)")
    case(f"{label}: set a None key", build, lambda td: td.set(None, _z(*td.batch_size)),
         KeyError, "None")
    case(f"{label}: set a sub-TensorDict of another batch", build,
         lambda td: td.set("x", TensorDict(c=_z(7), batch_size=[7])), RuntimeError, "'x'", "[7]")
    case(f"{label}: set a dict whose leaf does not fit", build,
         lambda td: td.set("x", {"c": _z(7)}), RuntimeError, "'c'", "[7]")
    case(f"{label}: set_ a missing key", build, lambda td: td.set_("zz", _z(*td.batch_size)),
         KeyError, "zz")
    case(f"{label}: set_ a missing nested key", build,
         lambda td: td.set_(("n", "zz"), _z(*td.batch_size)), KeyError, "zz")
    case(f"{label}: set_ below a missing level", build,
         lambda td: td.set_(("q", "zz"), _z(*td.batch_size)), KeyError, "q")
    case(f"{label}: set_ wrong shape", build, lambda td: td.set_("a", _z(7)),
         RuntimeError, "'a'", "[7]")
    case(f"{label}: set_ nested wrong shape", build, lambda td: td.set_(("n", "c"), _z(7, 7)),
         RuntimeError, "'c'", "[7, 7]")
    case(f"{label}: set_ trailing dims do not broadcast", build,
         lambda td: td.set_(("n", "c"), _z(*td.batch_size, 9)), RuntimeError, "'c'")

case("locked: set a new key", locked, lambda td: td.set("z", _z(3)), RuntimeError, "locked")
case("locked: setitem a new key", locked, _setitem("z", _z(3)), RuntimeError, "locked")
case("locked: replace a key (not in place)", locked, _setitem("a", _z(3)), RuntimeError,
     "locked")
case("locked: set a new nested key", locked, lambda td: td.set(("n", "z"), _z(3)),
     RuntimeError, "locked")
case("locked: set a new nested level", locked, lambda td: td.set(("x", "y"), _z(3)),
     RuntimeError, "locked")
case("locked: set_non_tensor", locked, lambda td: td.set_non_tensor("t", "x"), RuntimeError,
     "locked")
case("locked: set non-tensor over non-tensor", locked, lambda td: td.set("s", "other"),
     RuntimeError, "locked")

# update / update_ / update_at_: a bad entry after good ones writes nothing
def _bad_second(td: Any, *, nested: bool = False) -> dict[str, Any]:
    """A good value for "a" first, then one that cannot be written: at ("n", "c") if
    ``nested``, else under a new key "z"."""
    bad = {"n": {"c": _z(7)}} if nested else {"z": _z(7)}
    return {"a": torch.ones(td.batch_size), **bad}


for build in (dense, lazy, lazy1, named):
    label = build.__name__
    case(f"{label}: update, second value too short", build,
         lambda td: td.update(_bad_second(td)), RuntimeError, "[7]")
    case(f"{label}: update, nested value too short", build,
         lambda td: td.update(_bad_second(td, nested=True)), RuntimeError, "'c'", "[7]")
    case(f"{label}: update with a TensorDict of another batch", build,
         lambda td: td.update(TensorDict(a=_z(7), batch_size=[7])), RuntimeError, "[7]")
    case(f"{label}: update through a leaf", build,
         lambda td: td.update({"a": torch.ones(td.batch_size), ("a", "x"): _z(*td.batch_size)}),
         KeyError, "'a'")
    case(f"{label}: update_, every key missing", build,
         lambda td: td.update_({"zz": _z(*td.batch_size)}), KeyError, "zz")
    case(f"{label}: update_, nested value too short", build,
         lambda td: td.update_(_bad_second(td, nested=True)), RuntimeError, "'c'", "[7]")
    case(f"{label}: update_, trailing dims do not broadcast", build,
         lambda td: td.update_({"a": torch.ones(td.batch_size),
                                "n": {"c": _z(*td.get("n").batch_size, 9)}}),
         RuntimeError, "'c'")
    case(f"{label}: update_ from a TensorDict, second leaf too short", build,
         lambda td: td.update_(TensorDict(a=torch.ones(td.batch_size), n={"c": _z(7)})),
         RuntimeError, "'c'", "[7]")
    case(f"{label}: update_at_, second value of the wrong shape", build,
         lambda td: td.update_at_({"a": torch.tensor(1.0), "n": {"c": _z(9, 9)}},
                                  (0,) * len(td.batch_size)),
         RuntimeError, "'c'")
    case(f"{label}: update_at_, index out of range", build,
         lambda td: td.update_at_({"a": torch.tensor(1.0)}, 10), IndexError, "10")
    case(f"{label}: update_at_, a missing key", build,
         lambda td: td.update_at_({"a": torch.tensor(1.0), "zz": torch.tensor(1.0)},
                                  (0,) * len(td.batch_size)),
         KeyError, "zz")

case("dense: update_, leaf that requires grad", lambda: dense().apply(
         lambda x: x.requires_grad_() if x.is_floating_point() else x),
     lambda td: td.update_({"a": torch.ones(3), "n": {"c": torch.ones(3, 4)}}),
     RuntimeError, "'a'", "grad")
case("dense: update_, expanded (overlapping) leaf", lambda: dense().expand(2, 3),
     lambda td: td.update_({"b": torch.ones(2, 3, 2), "a": torch.ones(2, 3)}),
     RuntimeError, "'b'")
case("dense: update_, sub-TensorDict into a leaf", dense,
     lambda td: td.update_({"a": TensorDict(x=_z(3), batch_size=[3])}), KeyError, "'a'")
case("dense: update_ with keys_to_update, the bad key selected", dense,
     lambda td: td.update_(_bad_second(td, nested=True), keys_to_update=["a", ("n", "c")]),
     RuntimeError, "[7]")
case("dense: update_ with clone, second value too short", dense,
     lambda td: td.update_(_bad_second(td, nested=True), clone=True), RuntimeError, "[7]")
case("dense: update_at_ with a bad TensorDict", dense,
     lambda td: td.update_at_(TensorDict(a=torch.ones(2), n={"c": _z(2, 9)}, batch_size=[2]),
                              slice(0, 2)), RuntimeError, "'c'")
case("dense: update_at_ with a mask of the wrong length", dense,
     lambda td: td.update_at_({"a": torch.tensor(1.0)}, torch.tensor([True, False])),
     IndexError, "[2]", "[3]")
case("locked: update adds a key", locked,
     lambda td: td.update({"a": torch.ones(3), "z": _z(3)}), RuntimeError, "locked")
case("locked: update adds a nested key", locked,
     lambda td: td.update({"a": torch.ones(3), "n": {"z": _z(3)}}), RuntimeError, "locked")
case("locked: update_, second value too short", locked,
     lambda td: td.update_(_bad_second(td, nested=True)), RuntimeError, "[7]")
case("lazy: update_ with a part-sized second value", lazy,
     lambda td: td.update_({"a": torch.ones(2, 3), "b": _z(2, 3, 5)}), RuntimeError, "'b'")
case("lazy: update_ ragged parts, second part does not fit", lambda: lazy_stack(
         [TensorDict(a=_z(2)), TensorDict(a=_z(3))]),
     lambda td: td.update_(lazy_stack([TensorDict(a=torch.ones(2)), TensorDict(a=_z(4))])),
     RuntimeError, "'a'")

# td[index] and td[index] = value
_MASK2 = torch.tensor([True, False])


def _mask(build: Callable[[], Any], extra: int) -> torch.Tensor:
    """A mask ``extra`` elements longer than the first batch dim of ``build()``."""
    first = 3 if build is pair else build().batch_size[0]  # pair needs the plugin to build
    return torch.ones(first + extra, dtype=torch.bool)


for build in (dense, locked, lazy, lazy1, named, pair):
    label = build.__name__
    case(f"{label}: get an int out of range", build, lambda td: td[5], IndexError, "5")
    case(f"{label}: get a negative int out of range", build, lambda td: td[-7], IndexError, "-7")
    short, long = _mask(build, -1), _mask(build, 1)
    case(f"{label}: get a mask too short", build, lambda td, m=short: td[m], IndexError,
         str(list(short.shape)))
    case(f"{label}: get a mask too long", build, lambda td, m=long: td[m], IndexError,
         str(list(long.shape)))
    case(f"{label}: get two ellipses", build, lambda td: td[..., 0, ...], RuntimeError,
         "ellipsis")
    case(f"{label}: get too many indices", build, lambda td: td[0, 0, 0, 0], IndexError,
         "too many")
    case(f"{label}: get a float index", build, lambda td: td[1.5], IndexError, "1.5")
    case(f"{label}: get a key inside a batch index", build, lambda td: td[0, "a"], TypeError,
         "'a'")
    case(f"{label}: set an int out of range", build, _setitem(5, 0.0), IndexError, "5")
    case(f"{label}: set a tensor index out of range", build,
         _setitem(torch.tensor([0, 5]), 0.0), IndexError, "5")
    case(f"{label}: set a negative tensor index out of range", build,
         _setitem(torch.tensor([0, -9]), 0.0), IndexError, "-9")
    case(f"{label}: set a list index out of range", build, _setitem([0, 1, 9], 0.0),
         IndexError, "9")
    case(f"{label}: set a mask too short", build, _setitem(short, 0.0), IndexError,
         str(list(short.shape)))
    case(f"{label}: set a mask too long", build, _setitem(long, 0.0), IndexError,
         str(list(long.shape)))
    case(f"{label}: set two ellipses", build, _setitem((..., 0, ...), 0.0), RuntimeError,
         "ellipsis")
    case(f"{label}: set too many indices", build, _setitem((0, 0, 0, 0), 0.0), IndexError,
         "too many")
    case(f"{label}: set a tensor of the wrong shape", build, _setitem(0, _z(7, 7, 7)),
         RuntimeError, "[7, 7, 7]")
    case(f"{label}: set a string", build, _setitem(0, "text"), TypeError, "str")

for build in (dense, locked, named):
    label = build.__name__
    case(f"{label}: set a tensor index out of range, TensorDict value", build,
         lambda td: td.__setitem__(torch.tensor([0, 5]), td[:2].clone()), IndexError, "5")
    case(f"{label}: set a TensorDict of the wrong batch", build,
         lambda td: td.__setitem__(0, td[:2].clone()), RuntimeError, "[2")
    case(f"{label}: set a TensorDict whose second leaf does not fit", build,
         lambda td: td.__setitem__(0, td[0].clone().set_("a", torch.full(td[0].shape, 2.0)).set(
             ("n", "c"), _z(*td.get("n")[0].batch_size, 9))), RuntimeError, "'c'", "9")
    case(f"{label}: set a TensorDict of another dtype at a tensor index", build,
         lambda td: td.__setitem__(torch.tensor([0, 1]), td[:2].clone().apply(
             lambda x: x.double() if x.dtype is torch.float32 else x)),
         RuntimeError, "'a'", "float64")
    case(f"{label}: setitem a dict whose leaf does not fit", build,
         _setitem(0, {"a": torch.tensor(1.0), "n": {"c": _z(9, 9, 9)}}), RuntimeError, "'c'")
    case(f"{label}: set a mask too short, TensorDict value", build,
         lambda td: td.__setitem__(_MASK2, td[:1].clone()), IndexError, "[2]")

case("dense: get a bool mask with too many dims", dense,
     lambda td: td[torch.ones(3, 2, dtype=torch.bool)], IndexError, "[3, 2]")
case("dense: get a tensor index out of range", dense,
     lambda td: td[torch.tensor([0, 3])], IndexError, "3")
case("named: get a mask of the wrong second dim", named,
     lambda td: td[torch.ones(3, 5, dtype=torch.bool)], IndexError, "[3, 5]")
case("named: get a tensor index out of range on the second dim", named,
     lambda td: td[:, torch.tensor([4])], IndexError, "4")
case("named: set a tensor index out of range on the second dim", named,
     _setitem((slice(None), torch.tensor([1, 4])), 0.0), IndexError, "4")
case("named: set a mask of the wrong second dim", named,
     _setitem(torch.ones(3, 5, dtype=torch.bool), 0.0), IndexError, "[3, 5]")
case("scalar: get any batch index", scalar, lambda td: td[0], RuntimeError, "0")
case("scalar: set any batch index", scalar, _setitem(0, 0.0), IndexError, "0")
case("scalar: set a mask", scalar, _setitem(torch.tensor([True]), 0.0), IndexError, "[1]")
case("dense: set a complex number", dense, _setitem(0, 1j), TypeError, "'a'", "complex")
case("dense: set a tensor of another dtype at a tensor index", dense,
     _setitem(torch.tensor([0, 1]), torch.tensor(2.5)), RuntimeError, "'b'", "int64")
case("dense: set index tensor of floats", dense,
     _setitem(torch.tensor([0.0, 1.0]), 0.0), IndexError, "float32")

# shape ops
for build in (dense, named, lazy, lazy1, pair, locked):
    label = build.__name__
    case(f"{label}: reshape to another number of elements", build,
         lambda td: td.reshape(td.numel() + 1), RuntimeError, "[")
    case(f"{label}: reshape with two -1", build, lambda td: td.reshape(-1, -1), RuntimeError,
         "-1")
    case(f"{label}: view to another number of elements", build, lambda td: td.view(7, 7),
         RuntimeError, "[7, 7]")
    case(f"{label}: permute with a repeated dim", build,
         lambda td: td.permute(*([0] * len(td.batch_size))) if len(td.batch_size) > 1
         else td.permute(0, 0), ValueError, "[0, 0")
    case(f"{label}: permute with a dim out of range", build,
         lambda td: td.permute(*range(1, len(td.batch_size) + 1)), ValueError, "out of range")
    case(f"{label}: squeeze a dim out of range", build, lambda td: td.squeeze(5), IndexError,
         "5")
    case(f"{label}: unsqueeze a dim out of range", build, lambda td: td.unsqueeze(9),
         RuntimeError, "9")
    case(f"{label}: expand to a smaller size", build, lambda td: td.expand(1), RuntimeError,
         "[1]")
    case(f"{label}: expand a dim of size > 1", build,
         lambda td: td.expand(*[s + 1 for s in td.batch_size]), RuntimeError, "expand")
    case(f"{label}: flatten a dim out of range", build, lambda td: td.flatten(0, 7),
         IndexError, "7")
    case(f"{label}: unflatten to a wrong number of elements", build,
         lambda td: td.unflatten(0, (5, 5)), RuntimeError, "[5, 5]")
    case(f"{label}: transpose a dim out of range", build, lambda td: td.transpose(0, 6),
         ValueError, "6")
    case(f"{label}: split sizes that do not add up", build, lambda td: td.split([1, 1, 5], 0),
         RuntimeError, "[1, 1, 5]")
    case(f"{label}: split along a dim out of range", build, lambda td: td.split(1, 8),
         IndexError, "8")
    case(f"{label}: unbind a dim out of range", build, lambda td: td.unbind(4), IndexError, "4")
    case(f"{label}: chunk into 0 pieces", build, lambda td: td.chunk(0), ValueError, "0")
    case(f"{label}: narrow past the end", build, lambda td: td.narrow(0, 1, 9), RuntimeError,
         "9")
    case(f"{label}: repeat with a count per batch dim missing", build,
         lambda td: td.repeat(*([2] * (len(td.batch_size) + 1))), ValueError, "repeat")

case("dense: unflatten a dim out of range", dense, lambda td: td.unflatten(3, (1, 3)),
     IndexError, "3")
case("named: flatten with start after end", named, lambda td: td.flatten(1, 0), ValueError,
     "start_dim")
case("named: permute with too few dims", named, lambda td: td.permute(0), ValueError, "[0]")
case("named: gather with an index of more dims than the batch", named,
     lambda td: td.gather(1, torch.zeros(3, 1, 1, dtype=torch.long)), RuntimeError,
     "[3, 1, 1]")
case("named: gather with an index wider than the batch", named,
     lambda td: td.gather(1, torch.zeros(5, dtype=torch.long)), RuntimeError, "[5]")
case("named: gather with an index out of range", named,
     lambda td: td.gather(1, torch.full((3, 1), 9)), RuntimeError, "9")
case("dense: masked_select with a mask too short", dense,
     lambda td: td.masked_select(_MASK2), IndexError, "[2]")
case("scalar: squeeze a dim", scalar, lambda td: td.squeeze(0), IndexError, "0")
case("scalar: unbind", scalar, lambda td: td.unbind(0), IndexError, "0")
case("scalar: flatten then reshape wrongly", scalar, lambda td: td.reshape(2), RuntimeError,
     "[2]")

# stack / cat / split / unbind across TensorDicts
def _stack_into(out_build: Callable[[], Any], parts: Callable[[], list[Any]], dim: int = 0,
                fn: Any = torch.stack) -> tuple[Callable[[], Any], Callable[[Any], Any]]:
    return out_build, lambda out: fn(parts(), dim, out=out)


def _two_dense() -> list[Any]:
    return [dense(), dense()]


case("stack: different batch sizes", dense, lambda td: torch.stack([td, td[:2]]),
     RuntimeError, "[3]", "[2]")
case("stack: different keys", dense, lambda td: torch.stack([td, td.exclude("a")]),
     RuntimeError, "'a'")
case("stack: different nested keys", dense,
     lambda td: torch.stack([td, td.exclude(("n", "c"))]), RuntimeError, "'c'")
case("stack: different leaf shapes", dense,
     lambda td: torch.stack([td, td.clone().set("b", _z(3, 5))]), RuntimeError, "'b'", "(3, 5)")
case("stack: dim out of range", dense, lambda td: torch.stack([td, td], 3), IndexError, "3")
case("stack: no TensorDict", dense, lambda td: torch.stack([td, torch.zeros(3)]),
     TypeError, "Tensor")
case("stack into out of the wrong batch size", *_stack_into(
    lambda: TensorDict(a=_z(3, 3), n={"c": _z(3, 3, 4)}, batch_size=[3, 3]),
    lambda: [TensorDict(a=_z(3), n={"c": _z(3, 4)}, batch_size=[3])] * 2),
     RuntimeError, "[3, 3]", "[2, 3]")
case("stack into out with a leaf of the wrong shape", *_stack_into(
    lambda: TensorDict(a=_z(2, 3), n={"c": _z(2, 3, 5)}, batch_size=[2, 3]),
    lambda: [TensorDict(a=_z(3), n={"c": _z(3, 4)}, batch_size=[3])] * 2),
     RuntimeError, "'c'", "[2, 3, 4]")
case("stack into out along dim 1, wrong batch", *_stack_into(
    lambda: TensorDict(a=_z(2, 3), batch_size=[2, 3]),
    lambda: [TensorDict(a=_z(3), batch_size=[3])] * 2, 1), RuntimeError, "[3, 2]")
case("cat: different batch sizes on another dim", named,
     lambda td: torch.cat([td, td[:, :2]], 0), RuntimeError, "[3, 4]", "[3, 2]")
case("cat: different keys", dense, lambda td: torch.cat([td, td.exclude("b")]), KeyError,
     "'b'")
case("cat: dim out of range", dense, lambda td: torch.cat([td, td], 1), RuntimeError, "1")
case("cat: 0-dim TensorDicts", scalar, lambda td: torch.cat([td, td]), RuntimeError, "[]")
case("cat into out of the wrong batch size", *_stack_into(
    lambda: TensorDict(a=_z(5), batch_size=[5]), lambda: [TensorDict(a=_z(3), batch_size=[3])] * 2,
    fn=torch.cat), RuntimeError, "[5]", "[6]")
case("cat into out with a leaf of the wrong shape", *_stack_into(
    lambda: TensorDict(a=_z(6, 2), batch_size=[6]),
    lambda: [TensorDict(a=_z(3), batch_size=[3])] * 2, fn=torch.cat), RuntimeError, "'a'", "[6]")
case("lazy_stack: different numbers of batch dims", dense,
     lambda td: lazy_stack([td, td[:2, None]]), RuntimeError, "[3]", "[2, 1]")
case("lazy_stack: dim out of range", dense, lambda td: lazy_stack([td, td], 4), RuntimeError,
     "4")
case("lazy_stack into out of the wrong batch size", *_stack_into(
    lambda: TensorDict(a=_z(3, 3), batch_size=[3, 3]),
    lambda: [TensorDict(a=_z(3), batch_size=[3])] * 2, fn=lazy_stack), RuntimeError, "[3, 3]")
case("lazy_stack into out with a bad second leaf", *_stack_into(
    lambda: TensorDict(a=_z(2, 3), n={"c": _z(2, 3, 5)}, batch_size=[2, 3]),
    lambda: [TensorDict(a=torch.ones(3), n={"c": _z(3, 4)}, batch_size=[3])] * 2, fn=lazy_stack),
     RuntimeError, "'c'")
case("split: sizes that do not add up (torch.split)", dense,
     lambda td: torch.split(td, [1, 5]), RuntimeError, "[1, 5]")
case("unbind: dim out of range (torch.unbind)", dense, lambda td: torch.unbind(td, 2),
     IndexError, "2")

# apply
def _first_key(td: Any) -> str:
    return repr(next(iter(td.keys())))


def _bad_int_leaf(x: torch.Tensor) -> torch.Tensor:
    """Float leaves + 1 (written), the int64 leaf cut to an empty last dim (not writable)."""
    if x.is_floating_point():
        return x + 1
    return x[..., :0] if x.dtype is torch.int64 else x


for build in (dense, named, lazy, lazy1, pair, locked):
    label = build.__name__
    first = "'x'" if build is pair else "'a'"
    case(f"{label}: apply drops a batch element", build, lambda td: td.apply(lambda x: x[:1]),
         RuntimeError, first, "[1")
    case(f"{label}: apply to 0-dim leaves", build, lambda td: td.apply(lambda x: x.sum()),
         RuntimeError, first, "[]")
    case(f"{label}: apply with a batch size that does not fit", build,
         lambda td: td.apply(lambda x: x, batch_size=[7]), RuntimeError, "[7]")
    case(f"{label}: apply with a longer batch size that does not fit", build,
         lambda td: td.apply(lambda x: x, batch_size=[*td.batch_size, 7]), RuntimeError, "7")
    case(f"{label}: apply whose fn raises", build,
         lambda td: td.apply(lambda x: x.view(-1, 7)), RuntimeError, first)
    case(f"{label}: named_apply drops a batch element", build,
         lambda td: td.named_apply(lambda k, x: x[:1]), RuntimeError, first, "[1")

for build in (dense, lazy, locked):
    label = build.__name__
    case(f"{label}: apply_ whose second result does not fit", build,
         lambda td: td.apply_(_bad_int_leaf), RuntimeError, "'b'")
    case(f"{label}: apply with another of a missing key", build,
         lambda td: td.apply(lambda x, y: x, td.exclude(("n", "c"))), KeyError, "'c'")

case("dense: apply out= of another batch", dense,
     lambda td: td.apply(lambda x: x, out=TensorDict(a=_z(5), batch_size=[5])), RuntimeError,
     "[5]", "[3]")
case("dense: apply drops a batch element in a nested leaf only", dense,
     lambda td: td.apply(lambda x: x[:1] if x.ndim == 2 and x.dtype is torch.float32 else x),
     RuntimeError, "'c'", "[1, 4]")
case("dense: apply with a batch size for sub-TensorDicts too long", dense,
     lambda td: td.apply(lambda x: x.reshape(-1), batch_size=[3]), RuntimeError, "'b'")
case("named: apply keeps the first dim only", named,
     lambda td: td.apply(lambda x: x[:, 0]), RuntimeError, "[3, 4]")
case("dense: apply_ with fn raising on a later leaf", dense,
     lambda td: td.apply_(lambda x: x + 1 if x.dtype is not torch.bool else x.view(-1, 7)),
     RuntimeError, "'d'")
case("dense: _fast_apply with a batch size that does not fit", dense,
     lambda td: td._fast_apply(lambda x: x, batch_size=[7], checked=False), RuntimeError, "[7]")

# batch size, names
for build in (dense, named, lazy, lazy1, pair):
    label = build.__name__
    case(f"{label}: batch size that does not fit", build, _attr("batch_size", [7]),
         RuntimeError, "[7]")
    case(f"{label}: batch size -1", build, _attr("batch_size", [-1]), RuntimeError, "-1")
    case(f"{label}: batch size longer than the leaves", build,
         lambda td: setattr(td, "batch_size", [*td.batch_size, 9, 9, 9]), RuntimeError, "9")
    case(f"{label}: names of the wrong length", build,
         _attr("names", ["p", "q", "r", "s"]), ValueError, "'p'")
    case(f"{label}: refine_names with too many names", build,
         lambda td: td.refine_names(*td.names, "extra"), IndexError, "'extra'")
    case(f"{label}: rename_ with too many names", build,
         lambda td: td.rename_(*"pqrst"[: len(td.batch_size) + 1]), ValueError, "'p'")
    case(f"{label}: rename with too many names", build,
         lambda td: td.rename(*"pqrst"[: len(td.batch_size) + 1]), ValueError, "'p'")

case("dense: batch size set to a string", dense, _attr("batch_size", "x"), TypeError, "'x'")
case("named: duplicated names", named, _attr("names", ["x", "x"]), ValueError, "'x'")
case("named: refine_names changes a name", named, lambda td: td.refine_names("x", "z"),
     RuntimeError, "'y'", "'z'")
case("named: rename_ a name that does not exist", named, lambda td: td.rename_(q="p"),
     ValueError, "q")
case("named: rename_ with positional and keyword names", named,
     lambda td: td.rename_("p", "q", x="r"), ValueError, "both")
case("named: rename a name that does not exist", named, lambda td: td.rename(q="p"),
     ValueError, "q")
case("scalar: batch size longer than the leaves", scalar, _attr("batch_size", [2]),
     RuntimeError, "'a'")

# locks
def _unlock_nested(td: Any) -> None:
    td.get("n").unlock_()


def _unlock_nested_then_write(td: Any) -> None:
    child = td.get("n")
    try:
        child.unlock_()
    finally:
        child.set("z", torch.zeros(child.batch_size))


def _locked_lazy() -> Any:
    return lazy().lock_()


def _locked_named() -> Any:
    return named().lock_()


for build in (locked, _locked_lazy, _locked_named):
    label = {locked: "locked dense", _locked_lazy: "locked lazy"}.get(build, "locked named")
    case(f"{label}: del a key", build, lambda td: td.del_("a"), RuntimeError, "locked")
    case(f"{label}: del a nested key", build, lambda td: td.del_(("n", "c")), RuntimeError,
         "locked")
    case(f"{label}: pop a key", build, lambda td: td.pop("a"), RuntimeError, "locked")
    case(f"{label}: rename_key_", build, lambda td: td.rename_key_("a", "z"), RuntimeError,
         "locked")
    case(f"{label}: rename_key_ of a nested key", build,
         lambda td: td.rename_key_(("n", "c"), ("n", "z")), RuntimeError, "locked")
    case(f"{label}: setdefault of a new key", build,
         lambda td: td.setdefault("z", torch.zeros(td.batch_size)), RuntimeError, "locked")
    case(f"{label}: set a new key", build, lambda td: td.set("z", torch.zeros(td.batch_size)),
         RuntimeError, "locked")
    case(f"{label}: unlock a nested TensorDict", build, _unlock_nested, RuntimeError,
         "locked")
    case(f"{label}: unlock a nested TensorDict, then write to it", build,
         _unlock_nested_then_write, RuntimeError, "locked")
    case(f"{label}: select inplace", build, lambda td: td.select("a", inplace=True),
         RuntimeError, "locked")
    case(f"{label}: exclude inplace", build, lambda td: td.exclude("a", inplace=True),
         RuntimeError, "locked")
    case(f"{label}: update with a new nested key", build,
         lambda td: td.update({"n": {"z": torch.zeros(td.batch_size)}}), RuntimeError, "locked")

case("locked dense: popitem", locked, lambda td: td.popitem(), RuntimeError, "locked")
case("locked dense: clear", locked, lambda td: td.clear(), RuntimeError, "locked")
case("locked dense: unlock a doubly nested TensorDict", locked,
     lambda td: td.get(("n", "m")).unlock_(), RuntimeError, "locked")
case("locked dense: unlock_ as a context manager on a nested TensorDict", locked,
     lambda td: td.get("n").unlock_().__enter__(), RuntimeError, "locked")
case("locked dense: is_locked = False on a nested TensorDict", locked,
     lambda td: setattr(td.get("n"), "is_locked", False), RuntimeError, "locked")
case("locked dense: unlock a part of a locked lazy stack", _locked_lazy,
     lambda td: td.tensordicts[0].unlock_(), RuntimeError, "locked")
case("locked dense: flatten_keys inplace", locked, lambda td: td.flatten_keys(inplace=True),
     RuntimeError, "locked")
case("locked dense: unflatten_keys inplace", lambda: TensorDict({"a.b": _z(3)}, [3]).lock_(),
     lambda td: td.unflatten_keys(inplace=True), RuntimeError, "locked")
case("locked dense: a nested batch size its leaves cannot take", locked,
     lambda td: setattr(td.get("n"), "batch_size", [3, 4]), RuntimeError, "shape")
case("locked lazy: batch size change", _locked_lazy, _attr("batch_size", []), RuntimeError,
     "in a lazy TD")

# devices and dtypes
for build in (dense, lazy, pair):
    label = build.__name__
    case(f"{label}: to an unknown device", build, lambda td: td.to("nodevice"), RuntimeError,
         "nodevice")
    case(f"{label}: to a number that is not a device", build, lambda td: td.to(1.5), TypeError,
         "float")
    case(f"{label}: to with two dtypes", build,
         lambda td: td.to(torch.float16, dtype=torch.float32), TypeError, "dtype")
    case(f"{label}: view as a dtype of another size", build,
         lambda td: td.view(torch.float16), RuntimeError, "'x'" if build is pair else "'a'")
    case(f"{label}: masked_fill with a mask too long", build,
         lambda td: td.masked_fill(torch.ones(*td.batch_size, 5, dtype=torch.bool), 1.0),
         RuntimeError, "5]")
    case(f"{label}: masked_fill_ with a mask too long", build,
         lambda td: td.masked_fill_(torch.ones(*td.batch_size, 5, dtype=torch.bool), 1.0),
         RuntimeError, "5]")
    case(f"{label}: masked_fill_ with a mask of the wrong batch", build,
         lambda td: td.masked_fill_(torch.ones(9, dtype=torch.bool), 1.0), RuntimeError, "[9]")
    case(f"{label}: masked_fill with a mask of the wrong batch", build,
         lambda td: td.masked_fill(torch.ones(9, dtype=torch.bool), 1.0), RuntimeError, "[9]")
    case(f"{label}: where with a condition of the wrong batch", build,
         lambda td: td.where(torch.ones(9, dtype=torch.bool), 0.0), RuntimeError, "[9]")
    first = "'x'" if build is pair else "'a'"
    case(f"{label}: where with another of a missing key", build,
         lambda td: td.where(torch.ones(td.batch_size, dtype=torch.bool),
                             td.exclude(next(iter(td.keys())))), KeyError, first)
    case(f"{label}: where with out of another batch", build,
         lambda td: td.where(torch.ones(td.batch_size, dtype=torch.bool), 0.0,
                             out=TensorDict(a=_z(9), batch_size=[9])), RuntimeError, "[9]")

case("dense: masked_fill_ with a float mask", dense,
     lambda td: td.masked_fill_(torch.ones(3), 1.0), RuntimeError, "float")
case("dense: masked_fill_ with a complex value on an int leaf", dense,
     lambda td: td.masked_fill_(torch.ones(3, dtype=torch.bool), 1j), RuntimeError, "'a'")
case("dense: where_ ... in place with a bad condition", dense,
     lambda td: torch.where(torch.ones(9, dtype=torch.bool), td, 0.0), RuntimeError, "[9]")
case("dense: type of an unknown dtype", dense, lambda td: td.to(dtype="float"), TypeError,
     "float")

# nested keys: reading and deleting
for build in (dense, lazy, named):
    label = build.__name__
    case(f"{label}: get through a leaf", build, lambda td: td.get(("a", "x")), KeyError, "'a'")
    case(f"{label}: getitem through a leaf", build, lambda td: td["a", "x"], KeyError, "'a'")
    case(f"{label}: getitem a missing key", build, lambda td: td["zz"], KeyError, "zz")
    case(f"{label}: getitem a missing nested key", build, lambda td: td["n", "zz"], KeyError,
         "zz")
    case(f"{label}: get an int key", build, lambda td: td.get(1), KeyError, "1")
    case(f"{label}: get a tuple holding an int", build, lambda td: td.get(("n", 1)), KeyError,
         "1")
    case(f"{label}: get a list key", build, lambda td: td.get(["a"]), KeyError, "['a']")
    case(f"{label}: del a missing key", build, lambda td: td.del_("zz"), KeyError, "zz")
    case(f"{label}: del through a leaf", build, lambda td: td.del_(("a", "x")), KeyError, "'a'")
    case(f"{label}: del below a missing level", build, lambda td: td.del_(("q", "x")), KeyError,
         "q")
    case(f"{label}: pop a missing key", build, lambda td: td.pop("zz"), KeyError, "zz")
    case(f"{label}: rename_key_ of a missing key", build, lambda td: td.rename_key_("zz", "y"),
         KeyError, "zz")
    case(f"{label}: rename_key_ onto an existing key with safe", build,
         lambda td: td.rename_key_("a", ("n", "c"), safe=True), KeyError, "'c'")
    case(f"{label}: select a missing key", build, lambda td: td.select("zz"), KeyError, "zz")
    case(f"{label}: in with a list", build, lambda td: ["a"] in td, RuntimeError, "['a']")
    case(f"{label}: set_at_ a missing key", build,
         lambda td: td.set_at_("zz", torch.tensor(1.0), 0), KeyError, "zz")
    case(f"{label}: get_item_shape of a missing key", build, lambda td: td.get_item_shape("zz"),
         KeyError, "zz")

# tensorclasses
case("tensorclass: set a field too short", pair, _attr("x", _z(2)), RuntimeError, "'x'", "[2]")
case("tensorclass: set a field through set", pair, lambda tc: tc.set("y", _z(5)), RuntimeError,
     "'y'", "[5]")
case("tensorclass: set_ a field of the wrong shape", pair, lambda tc: tc.set_("y", _z(3, 9)),
     RuntimeError, "'y'")
case("tensorclass: update_, second field of the wrong shape", pair,
     lambda tc: tc.update_({"x": torch.ones(3), "y": _z(3, 9)}), RuntimeError, "'y'")
case("tensorclass: setitem a tensor index out of range", pair,
     lambda tc: tc.__setitem__(torch.tensor([0, 4]), Pair(x=_z(2), y=_z(2, 2), batch_size=[2])),
     IndexError, "4")
case("tensorclass: setitem a value whose second field does not fit", pair,
     lambda tc: tc.__setitem__(0, Pair(x=torch.tensor(1.0), y=_z(7), batch_size=[])),
     RuntimeError, "'y'")
case("tensorclass: batch size that does not fit", pair, _attr("batch_size", [4]), RuntimeError,
     "[4]")
case("tensorclass: stack with a different batch size", pair,
     lambda tc: torch.stack([tc, tc[:2]]), RuntimeError, "[3]", "[2]")
case("tensorclass: cat along a dim out of range", pair, lambda tc: torch.cat([tc, tc], 1),
     RuntimeError, "1")
case("tensorclass: locked, del a field", lambda: pair().lock_(), lambda tc: tc.del_("x"),
     RuntimeError, "locked")
case("tensorclass: get through a leaf", pair, lambda tc: tc.get(("x", "q")), KeyError, "'x'")
case("tensorclass: apply drops a batch element", pair, lambda tc: tc.apply(lambda x: x[:1]),
     RuntimeError, "[1]")
case("tensorclass: in a locked TensorDict, unlock it", lambda: TensorDict(
         p=pair(), batch_size=[3]).lock_(), lambda td: td["p"].unlock_(), RuntimeError, "locked")

# lazy stacks: writes reach every part or none
def _ragged() -> Any:
    return lazy_stack([TensorDict(a=_z(2), n={"c": _z(4)}), TensorDict(a=_z(3), n={"c": _z(4)})])


case("lazy: set a value for the stack of the wrong part count", lazy,
     lambda td: td.set("a", _z(3, 3)), RuntimeError, "'a'", "[3, 3]")
case("lazy: set_ a value whose second part does not fit", _ragged,
     lambda td: td.set_("a", torch.nested.nested_tensor([torch.ones(2), _z(4)])),
     RuntimeError, "'a'")
case("lazy: set a list of the wrong part count", _ragged,
     lambda td: td.set("a", [torch.ones(2), _z(3), _z(3)]), ValueError, "'a'")
case("lazy: setitem at a part index, second leaf does not fit", lazy,
     _setitem(0, TensorDict(a=torch.ones(3), n={"c": _z(3, 9)}, batch_size=[3])),
     RuntimeError, "'c'")
case("lazy: setitem a slice of parts, second part does not fit", _ragged,
     _setitem(slice(0, 2), lazy_stack([TensorDict(a=torch.ones(2), n={"c": torch.ones(4)}),
                                        TensorDict(a=_z(3), n={"c": _z(5)})])),
     RuntimeError, "'c'")
case("lazy: setitem a tensor index into ragged parts, out of range", _ragged,
     _setitem(torch.tensor([0, 2]), 0.0), IndexError, "2")
case("lazy: update_ ragged, second part does not fit", _ragged,
     lambda td: td.update_(lazy_stack([TensorDict(a=torch.ones(2), n={"c": torch.ones(4)}),
                                       TensorDict(a=torch.ones(3), n={"c": _z(5)})])),
     RuntimeError, "'c'")
case("lazy: batch size dropping the stack dim", lazy, _attr("batch_size", [3]), RuntimeError,
     "[3]")
case("lazy: names too short", lazy, _attr("names", ["x"]), ValueError, "['x']")
case("lazy: append a part of another batch", lazy,
     lambda td: td.append(TensorDict(a=_z(4), batch_size=[4])), ValueError, "[4]")
case("lazy: insert into a locked stack", _locked_lazy,
     lambda td: td.insert(0, dense()), RuntimeError, "locked")
case("lazy: get a ragged entry stacked", _ragged, lambda td: td["a"], RuntimeError, "'a'")
case("lazy: masked_fill_ with a mask of the wrong stack size", lazy,
     lambda td: td.masked_fill_(torch.ones(5, 3, dtype=torch.bool), 1.0), RuntimeError, "[5, 3]")
case("lazy: update_at_ at a tensor index, second leaf does not fit", lazy,
     lambda td: td.update_at_({"a": torch.ones(2), "n": {"c": _z(2, 9)}},
                              (slice(None), torch.tensor([0, 1]))), RuntimeError, "'c'")


# -- the tests -------------------------------------------------------------------------------------
def test_the_table_is_large_and_its_names_unique():
    names = [name for name, *_ in CASES]
    assert len(names) >= 300
    assert len(set(names)) == len(names)


@pytest.mark.parametrize(("name", "build", "op", "exc", "contains"), CASES,
                         ids=[re.sub(r"\W+", "-", name) for name, *_ in CASES])
def test_bad_input_raises_and_changes_nothing(name: str, build: Callable[[], Any],
                                              op: Callable[[Any], Any], exc: type,
                                              contains: tuple[str, ...]) -> None:
    obj = build()
    before = snapshot(obj)
    with pytest.raises(exc) as info:
        op(obj)
    message = str(info.value)
    for part in contains:
        assert part in message, f"{part!r} is not in the message {message!r}"
    assert same(before, snapshot(obj)), "the collection changed"


def test_key_through_a_leaf_is_a_key_error_and_a_value_error():
    # upstream raises a ValueError for reads through a leaf; ours is a KeyError too
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    for read in (lambda: td["a", "b"], lambda: td.get(("a", "b"))):
        with pytest.raises(ValueError, match="'a' is a Tensor"):
            read()
        with pytest.raises(KeyError):
            read()


@pytest.mark.parametrize("with_tensor", [False, True])
def test_bad_index_of_a_non_tensor_stack_raises_the_index_error(with_tensor):
    # the index's own error, whichever entry is reached first (not "cannot reduce")
    entries = {"t": NonTensorStack("a", "b", "c")}
    if with_tensor:
        entries["x"] = torch.zeros(3)
    td = TensorDict(entries, batch_size=[3])
    with pytest.raises(ValueError, match="step"):
        td[::-1]
    with pytest.raises(IndexError, match="7"):
        td[[0, 7]]
