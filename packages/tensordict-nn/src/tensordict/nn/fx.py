"""symbolic_trace: one ``torch.fx`` graph for a TensorDict module graph.

The traced result is a :class:`TensorDictModule` around an ``fx.GraphModule`` taking
the ``in_keys`` tensors and returning the ``out_keys`` tensors, which ``torch.compile``
handles well.

>>> import torch
>>> from torch import nn
>>> from tensordict import TensorDict
>>> from tensordict.nn import TensorDictModule, TensorDictSequential
>>> seq = TensorDictSequential(
...     TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"]),
...     TensorDictModule(nn.ReLU(), in_keys=["h"], out_keys=["y"]))
>>> traced = symbolic_trace(seq)
>>> td = TensorDict(x=torch.randn(2, 3), batch_size=[2])
>>> torch.testing.assert_close(traced(td.clone())["y"], seq(td.clone())["y"])
"""

from __future__ import annotations

from typing import Any

import torch.fx as fx
from torch import nn

from tensordict import NestedKey

__all__ = ["symbolic_trace"]


def _run_on_env(module: nn.Module, env: dict[NestedKey, Any]) -> None:
    """Run ``module`` on proxies: read its inputs from ``env`` and store its outputs."""
    from tensordict.nn.common import TensorDictModule
    from tensordict.nn.sequence import TensorDictSequential

    if isinstance(module, TensorDictSequential):
        for sub in module._module_iter():
            _run_on_env(sub, env)
        return
    if not isinstance(module, TensorDictModule):
        raise NotImplementedError(
            f"symbolic_trace supports TensorDictModule and TensorDictSequential, got "
            f"{type(module).__name__}"
        )
    missing = [key for key in module.in_keys if key not in env]
    if missing:
        raise KeyError(f"symbolic_trace: the inputs {missing} of {module!r} are not "
                       "produced by an earlier module nor inputs of the graph")
    inputs = [env[key] for key in module.in_keys]
    func = module.module if module.method is None else getattr(module.module, module.method)
    if module._kwargs is None:
        out = func(*inputs, **module.method_kwargs)
    else:
        out = func(**dict(zip(module._kwargs, inputs)), **module.method_kwargs)
    outs = out if isinstance(out, tuple) else (out,)
    for key, value in zip(module.out_keys_source, outs):
        if key != "_":
            env[key] = value


class _Flat(nn.Module):
    """``td_module`` as a function of its input tensors returning its output tensors."""

    def __init__(self, td_module: nn.Module) -> None:
        super().__init__()
        self.td_module = td_module

    def forward(self, tensors: Any) -> tuple[Any, ...]:
        env = {key: tensors[i] for i, key in enumerate(self.td_module.in_keys)}
        _run_on_env(self.td_module, env)
        return tuple(env[key] for key in self.td_module.out_keys)


def symbolic_trace(td_module: nn.Module) -> nn.Module:
    """Trace a TensorDictModule / TensorDictSequential into one ``fx`` graph (see the
    module doc); the result reads and writes the same keys.

    >>> import torch
    >>> from tensordict.nn import TensorDictModule
    >>> traced = symbolic_trace(TensorDictModule(torch.nn.Linear(2, 2), ["x"], ["y"]))
    >>> type(traced.module).__name__
    'GraphModule'
    """
    from tensordict.nn.common import TensorDictModule

    flat = _Flat(td_module)
    in_keys = list(td_module.in_keys)
    graph = fx.Tracer().trace(flat)
    graph_module = fx.GraphModule(flat, _with_named_inputs(graph, len(in_keys)))
    return TensorDictModule(graph_module, in_keys=in_keys, out_keys=list(td_module.out_keys))


def _with_named_inputs(graph: fx.Graph, n_inputs: int) -> fx.Graph:
    """Replace the ``tensors`` placeholder (a sequence indexed in the graph) by
    ``n_inputs`` positional placeholders."""
    star = next(node for node in graph.nodes if node.op == "placeholder")
    with graph.inserting_before(star):
        inputs = [graph.placeholder(f"input_{i}") for i in range(n_inputs)]
    for user in list(star.users):
        if user.op == "call_function" and len(user.args) == 2 and isinstance(user.args[1], int):
            user.replace_all_uses_with(inputs[user.args[1]])
            graph.erase_node(user)
        else:
            raise NotImplementedError(f"symbolic_trace: unexpected use of the inputs: {user}")
    graph.erase_node(star)
    graph.lint()
    return graph
