"""CudaGraphModule: replay a TensorDict module (or a function of tensors) as a CUDA graph.

Without CUDA the module runs eagerly, with a warning at construction. The CUDA path
follows the ``torch.cuda.graph`` recipe (warm-up calls on a side stream, one capture on
static copies of the inputs, then copy-in / replay / copy-out); ``tests/test_cuda.py``
checks it on a GPU machine.

>>> import warnings
>>> import torch
>>> from tensordict import TensorDict
>>> from tensordict.nn import TensorDictModule
>>> module = TensorDictModule(torch.nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
>>> with warnings.catch_warnings():
...     warnings.simplefilter("ignore")
...     graphed = CudaGraphModule(module)
>>> graphed(TensorDict(x=torch.zeros(3, 2), batch_size=[3]))["y"].shape
torch.Size([3, 2])
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import torch
import torch.utils._pytree as pytree

from tensordict import NestedKey, TensorDictBase, is_tensor_collection

__all__ = ["CudaGraphModule"]


def _clone_tree(value: Any) -> Any:
    return pytree.tree_map(lambda x: x.clone() if isinstance(x, torch.Tensor) else x, value)


def _on_cuda(args: tuple[Any, ...]) -> bool:
    """Whether every tensor of ``args`` (in TensorDicts too) is on a CUDA device."""
    tensors = [leaf for arg in args for leaf in
               (arg.values(True, True) if is_tensor_collection(arg) else pytree.tree_leaves(arg))
               if isinstance(leaf, torch.Tensor)]
    return all(tensor.is_cuda for tensor in tensors)


class CudaGraphModule:
    """Run ``module`` eagerly ``warmup`` times, then capture it once as a CUDA graph and
    replay that graph on later calls (inputs are copied into the captured buffers, the
    outputs are cloned out).

    Args:
        module: a TensorDict module (called with one TensorDict) or a function of tensors.
        warmup: eager calls before the capture.
        in_keys / out_keys: the entries copied in and out (default: the module's).
        device: where the graph runs (default: the current CUDA device).

    Shapes, dtypes and the set of keys must stay the same from call to call. On a machine
    without CUDA every call is eager (a ``UserWarning`` says so once, at construction), and
    so is every call of a module whose first inputs are not all on a CUDA device (a graph
    would replay the GPU work only, and return stale results of the CPU work).

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     doubled = CudaGraphModule(lambda x: x * 2)
    >>> doubled(torch.ones(2)), torch.cuda.is_available() or "eagerly" in str(caught[0].message)
    (tensor([2., 2.]), True)
    """

    def __init__(self, module: Callable[..., Any], warmup: int = 2,
                 in_keys: list[NestedKey] | None = None,
                 out_keys: list[NestedKey] | None = None,
                 device: torch.device | str | None = None) -> None:
        self.module = module
        self.warmup = warmup
        self.in_keys = in_keys if in_keys is not None else getattr(module, "in_keys", None)
        self.out_keys = out_keys if out_keys is not None else getattr(module, "out_keys", None)
        self.device = torch.device(device) if device is not None else None
        self._calls = 0
        self._graph: Any = None
        self._static_in: Any = None
        self._static_out: Any = None
        self.eager = not torch.cuda.is_available()
        if self.eager:
            warnings.warn(
                "CudaGraphModule: CUDA is not available, the module runs eagerly "
                "(no graph is captured)", UserWarning, stacklevel=2)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.eager:
            return self.module(*args, **kwargs)
        if kwargs:
            raise TypeError("CudaGraphModule takes positional inputs only")
        if self._calls == 0 and not _on_cuda(args):
            warnings.warn("CudaGraphModule: the inputs are not all on a CUDA device, the module "
                          "runs eagerly (no graph is captured)", UserWarning, stacklevel=2)
            self.eager = True
            return self.module(*args)
        if self._calls < self.warmup:
            self._calls += 1
            stream = torch.cuda.Stream(device=self.device)
            stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(stream):
                out = self.module(*args)
            torch.cuda.current_stream(self.device).wait_stream(stream)
            return out
        if self._graph is None:
            self._capture(args)
        return self._replay(args)

    def _is_td_call(self, args: tuple[Any, ...]) -> bool:
        return len(args) == 1 and is_tensor_collection(args[0])

    def _inputs_of(self, td: TensorDictBase) -> TensorDictBase:
        return td.select(*self.in_keys) if self.in_keys is not None else td

    def _capture(self, args: tuple[Any, ...]) -> None:
        if self._is_td_call(args):
            self._static_in = (self._inputs_of(args[0]).clone(),)
        else:
            self._static_in = _clone_tree(args)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._static_out = self.module(*self._static_in)
        self._graph = graph

    def _replay(self, args: tuple[Any, ...]) -> Any:
        if self._is_td_call(args):
            td = args[0]
            self._static_in[0].update_(self._inputs_of(td))
            self._graph.replay()
            out = self._static_out
            if self.out_keys is not None:
                out = out.select(*self.out_keys)
            return td.update(out.clone())
        flat_static, _ = pytree.tree_flatten(self._static_in)
        flat_args, _ = pytree.tree_flatten(args)
        if len(flat_static) != len(flat_args):
            raise ValueError(f"CudaGraphModule was captured with {len(flat_static)} inputs, "
                             f"got {len(flat_args)}")
        for static, value in zip(flat_static, flat_args):
            if isinstance(static, torch.Tensor):
                if static.shape != value.shape:
                    raise ValueError(f"CudaGraphModule: input shape {tuple(value.shape)} differs "
                                     f"from the captured {tuple(static.shape)}")
                static.copy_(value)
        self._graph.replay()
        return _clone_tree(self._static_out)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(module={self.module!r}, warmup={self.warmup})"
