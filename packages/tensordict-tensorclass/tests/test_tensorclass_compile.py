"""torch.compile of functions that build, read, index, transform and return tensorclasses.

Every op below compiles with ``fullgraph=True`` into one graph that later calls with
same-shaped inputs reuse (dynamo's frame count stays at 1), and gives the eager result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch._dynamo
from torch._dynamo.testing import CompileCounter

from tensordict import TensorClass, TensorDict, tensorclass


@tensorclass
class Pair:
    x: torch.Tensor
    y: torch.Tensor


class Outer(TensorClass):
    inner: Pair
    z: torch.Tensor


def _pair() -> Pair:
    return Pair(x=torch.randn(3, 2), y=torch.randn(3), batch_size=[3])


def _outer() -> Outer:
    return Outer(inner=_pair(), z=torch.randn(3), batch_size=[3])


def _set_field(tc: Pair) -> Pair:
    tc.x = tc.x + 1
    return tc


def _set_at_index(tc: Pair) -> Pair:
    tc[0] = tc[1]
    return tc


PAIR_OPS: dict[str, Callable[[Pair], Any]] = {
    "construct": lambda tc: Pair(x=tc.x * 2, y=tc.y, batch_size=[3]),
    "construct_nested": lambda tc: Outer(inner=tc, z=tc.y + 1, batch_size=[3]),
    "field": lambda tc: tc.x + 1,
    "get": lambda tc: tc.get("x") + 1,
    "set": lambda tc: tc.set("x", tc.x * 3),
    "setattr": _set_field,
    "add_scalar": lambda tc: tc + 1,
    "mul_self": lambda tc: tc * tc,
    "neg": lambda tc: -tc,
    "exp": lambda tc: tc.exp(),
    "index_int": lambda tc: tc[0],
    "index_slice": lambda tc: tc[1:],
    "index_tensor": lambda tc: tc[torch.tensor([0, 2])],
    "setitem": _set_at_index,
    "apply": lambda tc: tc.apply(lambda t: t * 2),
    "to_dtype": lambda tc: tc.to(torch.float64),
    "clone": lambda tc: tc.clone(),
    "stack": lambda tc: torch.stack([tc, tc], 0),
    "cat": lambda tc: torch.cat([tc, tc], 0),
    "reshape": lambda tc: tc.reshape(3, 1),
    "unsqueeze": lambda tc: tc.unsqueeze(0),
    "unbind": lambda tc: tc.unbind(0),
    "update": lambda tc: tc.update({"x": tc.x + 1}),
    "sum": lambda tc: tc.sum(),
    "to_tensordict": lambda tc: tc.to_tensordict(),
    "from_tensordict": lambda tc: Pair.from_tensordict(tc.to_tensordict() * 2),
}

OUTER_OPS: dict[str, Callable[[Outer], Any]] = {
    "nested_field": lambda o: o.inner.x + o.z.unsqueeze(-1),
    "nested_key_get": lambda o: o.get(("inner", "x")) + 1,
    "nested_key_set": lambda o: o.set(("inner", "x"), o.inner.x * 2),
    "nested_add": lambda o: o + 1,
    "nested_index": lambda o: o[1:],
    "nested_stack": lambda o: torch.stack([o, o]),
    "nested_clone": lambda o: o.clone(),
}


def _assert_same(out: Any, ref: Any) -> None:
    assert type(out) is type(ref)
    if isinstance(ref, (tuple, list)):
        assert len(out) == len(ref)
        for a, b in zip(out, ref):
            _assert_same(a, b)
    elif isinstance(ref, torch.Tensor):
        torch.testing.assert_close(out, ref)
    else:
        assert out.batch_size == ref.batch_size
        plain_out, plain_ref = out.to_tensordict(), ref.to_tensordict()
        assert set(plain_out.keys(True, True)) == set(plain_ref.keys(True, True))
        for key, value in plain_ref.items(True, True):
            torch.testing.assert_close(plain_out.get(key), value)


def _check_compiles_once(fn: Callable[[Any], Any], make: Callable[[], Any]) -> None:
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(fn, backend=counter, fullgraph=True)
    for seed in range(3):
        torch.manual_seed(seed)
        inputs = make()
        expected = fn(inputs.clone())
        _assert_same(compiled(inputs.clone()), expected)
    assert counter.frame_count == 1  # one graph, reused by the later calls


@pytest.mark.parametrize("name", list(PAIR_OPS))
def test_tensorclass_op_compiles_fullgraph_once(name: str) -> None:
    _check_compiles_once(PAIR_OPS[name], _pair)


@pytest.mark.parametrize("name", list(OUTER_OPS))
def test_nested_tensorclass_op_compiles_fullgraph_once(name: str) -> None:
    _check_compiles_once(OUTER_OPS[name], _outer)


def test_returned_instance_shares_its_storage() -> None:
    torch._dynamo.reset()
    out = torch.compile(lambda tc: tc * 2, backend="eager", fullgraph=True)(_pair())
    assert type(out) is Pair and out.__dict__ is out._tensordict._tensordict
    out.x = torch.zeros(3, 2)  # the field and the storage stay one
    assert out._tensordict["x"] is out.x


def test_new_instances_do_not_recompile() -> None:
    """The identity of the instance (and of its TensorDict) is never guarded on."""
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(lambda a, b: (a + b).apply(torch.relu), backend=counter,
                             fullgraph=True)
    for _ in range(4):
        out = compiled(_pair(), _pair())
        assert type(out) is Pair and bool((out.x >= 0).all())
    assert counter.frame_count == 1


def test_tensorclass_and_tensordict_mixed() -> None:
    torch._dynamo.reset()

    def fn(tc: Pair, td: TensorDict) -> Pair:
        return tc.set("y", tc.y + td["w"]).clone()

    td = TensorDict(w=torch.ones(3), batch_size=[3])
    tc = _pair()
    expected = fn(tc.clone(), td)
    _assert_same(torch.compile(fn, backend="eager", fullgraph=True)(tc.clone(), td), expected)


def test_inductor_compiles_tensorclass_arithmetic() -> None:
    torch._dynamo.reset()

    def fn(tc: Pair) -> Pair:
        return (tc * 2 + 1).apply(torch.relu)

    tc = _pair()
    _assert_same(torch.compile(fn, fullgraph=True)(tc), fn(tc))
