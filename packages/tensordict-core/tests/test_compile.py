"""torch.compile of functions that build, index, update and return TensorDicts.

What compiles with ``fullgraph=True`` (checked here, with dynamo's counters): building a
TensorDict (nested, from a dict or filled key by key), ``get``/``set``/``td[key] = v``,
``apply``, arithmetic, indexing (ints, slices, index tensors), ``torch.stack``/``cat``,
``update``, ``clone``, ``to(dtype)``, ``unbind``, ``reshape``, ``select``/``exclude``,
``flatten_keys``, ``lock_``/``unlock_``, pytree ``tree_map``, ``state_dict``,
``with params.to_module(module):`` and ``torch.vmap`` over a plain TensorDict. Writing a
new key does not recompile: dynamo guards on the keys of the TensorDicts passed in, so a
call with other keys compiles once more.

What does not: ``td.all()``/``td.any()`` (and ``==`` followed by them) return Python
bools, a data-dependent value that breaks the graph, as ``bool(tensor)`` does; boolean
mask indexing breaks it as it does for a tensor (unless
``torch._dynamo.config.capture_dynamic_output_shape_ops`` is set). Inside a
compiled function, ``vmap`` rebuilds other collections (with non-tensor data, lazy
stacks) from the leaves' shapes only (dynamo cannot trace functorch's introspection
functions); ``to_module`` there does not wrap plain tensors in ``nn.Parameter``.
"""

import pytest
import torch
import torch._dynamo
from torch import nn
from torch._dynamo.testing import CompileCounter

from tensordict import TensorDict


def _inputs() -> tuple[TensorDict, torch.Tensor]:
    td = TensorDict({"a": torch.randn(3, 2), "n": {"b": torch.randn(3)}}, batch_size=[3])
    return td, torch.randn(3, 2)


def _common_ops(td: TensorDict, y: torch.Tensor):
    td["c"] = td["a"] + y
    td.set(("n", "d"), td.get(("n", "b")) * 2)
    shifted = td.apply(lambda t: t + 1)
    stacked = torch.stack([td, shifted], 0)
    out = (stacked * 2 - 1)[:, 1:]
    out = out.update({"z": torch.ones(2, 2)})
    fresh = TensorDict()
    fresh["x"] = td[torch.tensor([0, 2])]["a"].sum() + td[-1]["c"].sum()
    return out, fresh


def test_common_ops_compile_in_one_graph_without_recompiling():
    torch._dynamo.reset()
    counter = CompileCounter()
    compiled = torch.compile(_common_ops, backend=counter, fullgraph=True)
    for _ in range(3):
        td, y = _inputs()
        out, fresh = compiled(td.clone(), y)
        ref_out, ref_fresh = _common_ops(td.clone(), y)
        assert out.batch_size == ref_out.batch_size == torch.Size([2, 2])
        assert set(out.keys(True, True)) == set(ref_out.keys(True, True))
        for key, value in ref_out.items(True, True):
            assert torch.allclose(out.get(key), value), key
        assert torch.allclose(fresh["x"], ref_fresh["x"])
    assert counter.frame_count == 1  # one graph, reused by every call


def test_explain_reports_no_graph_break():
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(_common_ops)(*_inputs())
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1


def test_writing_keys_in_a_loop_does_not_recompile():
    torch._dynamo.reset()
    counter = CompileCounter()

    @torch.compile(backend=counter, fullgraph=True)
    def fill(td):
        for i in range(4):
            td[f"k{i}"] = td["a"] * i
        td["n", "deep"] = td["a"].sum(-1)
        return td

    for _ in range(3):
        td = TensorDict(a=torch.randn(2, 3), batch_size=[2])
        out = fill(td)
        assert out is td and torch.equal(td["k3"], td["a"] * 3)
        assert torch.allclose(td["n", "deep"], td["a"].sum(-1))
    assert counter.frame_count == 1


def test_to_module_context_compiles_and_restores():
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(2, 3), nn.Tanh(), nn.Linear(3, 1))
    params = TensorDict.from_module(model)
    doubled = params.detach().apply(lambda t: t * 2)

    def call(params, x):
        with params.to_module(model):
            return model(x)

    x = torch.randn(4, 2)
    expected = call(doubled, x)
    out = torch.compile(call, backend="eager", fullgraph=True)(doubled, x)
    assert torch.allclose(out, expected)
    assert model[0].weight is params["0", "weight"]


def _nested_write(td: TensorDict) -> TensorDict:
    td["n", "c"] = td["n", "b"] * 2
    return td


#: One op per function: each compiles into one graph that later calls reuse.
SINGLE_OPS = {
    "construct": lambda td: TensorDict(x=td["a"] * 2, n={"y": td["a"]}, batch_size=[3]),
    "get_nested": lambda td: td.get(("n", "b")) + 1,
    "set_nested": _nested_write,
    "index_int": lambda td: td[0],
    "index_slice": lambda td: td[1:],
    "index_tensor": lambda td: td[torch.tensor([2, 0])],
    "arithmetic": lambda td: (td + 1) * td - 2,
    "apply": lambda td: td.apply(lambda t: t.exp()),
    "named_apply": lambda td: td.named_apply(lambda key, t: t * 2),
    "to_dtype": lambda td: td.to(torch.float64),
    "clone": lambda td: td.clone(),
    "stack": lambda td: torch.stack([td, td], 1),
    "reshape": lambda td: td.reshape(1, 3),
    "unsqueeze": lambda td: td.unsqueeze(0),
    "sum": lambda td: td.sum(),
    "in_place_arithmetic": lambda td: td.mul_(2).add_(td),
    "tree_map": lambda td: torch.utils._pytree.tree_map(lambda t: t - 1, td),
}


def _same(out, ref) -> None:
    if isinstance(ref, torch.Tensor):
        torch.testing.assert_close(out, ref)
        return
    assert type(out) is type(ref) and out.batch_size == ref.batch_size
    assert set(out.keys(True, True)) == set(ref.keys(True, True))
    for key, value in ref.items(True, True):
        torch.testing.assert_close(out.get(key), value)


@pytest.mark.parametrize("name", list(SINGLE_OPS))
def test_single_op_compiles_fullgraph_once(name):
    torch._dynamo.reset()
    counter = CompileCounter()
    fn = SINGLE_OPS[name]
    compiled = torch.compile(fn, backend=counter, fullgraph=True)
    for _ in range(3):
        td, _ = _inputs()
        _same(compiled(td.clone()), fn(td.clone()))
    assert counter.frame_count == 1


def test_inductor_compiles_arithmetic_and_apply():
    torch._dynamo.reset()

    def fn(td):
        return (td * 2 + 1).apply(torch.relu)

    td, _ = _inputs()
    _same(torch.compile(fn, fullgraph=True)(td), fn(td))


def test_vmap_over_a_plain_tensordict_compiles_whole_and_keeps_its_batch_dims():
    td = TensorDict({"a": torch.randn(3, 4), "n": {"b": torch.randn(3, 4, 2)}}, [3, 4])
    module = nn.Linear(2, 1)
    params = torch.stack([TensorDict.from_module(module)] * 3).clone()

    def f(t, p):
        def call(t, p):
            with p.to_module(module):
                return t.set("o", module(t["n", "b"]))
        return torch.vmap(call, (0, 0))(t, p)

    counter = CompileCounter()
    out = torch.compile(f, backend=counter, fullgraph=True)(td, params)
    assert counter.frame_count == 1
    assert out.batch_size == torch.Size([3, 4]) and out["n"].batch_size == torch.Size([3, 4])
    assert torch.allclose(out["o"], f(td, params)["o"])
