"""Functional helpers: writing tensors into modules, treating TensorDicts as pytree leaves,
and the functional API of older tensordict releases as thin layers over
``TensorDict.from_module`` / ``TensorDict.to_module``.

``make_functional(module)`` returns the module's parameters and buffers as a nested
TensorDict and lets ``module(*inputs, params=params)`` (or ``params`` as the last
positional argument) run with those tensors swapped in. Unlike the old releases the
module keeps its own parameters.

>>> import torch
>>> from torch import nn
>>> model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 4))
>>> params = make_functional(model)
>>> x = torch.randn(10, 3)
>>> out = model(x, params=params)
>>> torch.testing.assert_close(out, model[1](model[0](x, params["0"]), params["1"]))
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn
from torch.utils._pytree import SUPPORTED_NODES

from tensordict import (
    LazyStackedTensorDict,
    TensorCollection,
    TensorDict,
    TensorDictBase,
    is_tensor_collection,  # noqa: F401 (upstream name of this module)
)
from tensordict.nn.fx import symbolic_trace
from tensordict.nn.params import TensorDictParams
from tensordict.utils import acts_as_tensordict

__all__ = [
    "PYTREE_REGISTERED_LAZY_TDS",
    "PYTREE_REGISTERED_TDS",
    "SUPPORTED_NODES",
    "extract_weights_and_buffers",
    "get_functional",
    "is_functional",
    "make_functional",
    "repopulate_module",
    "set_tensor",
    "set_tensor_dict",
    "symbolic_trace",
]

#: the dense TensorDict classes registered as pytree nodes
PYTREE_REGISTERED_TDS: tuple[type, ...] = (TensorDict, TensorDictParams)
#: the lazy TensorDict classes registered as pytree nodes
PYTREE_REGISTERED_LAZY_TDS: tuple[type, ...] = (LazyStackedTensorDict,)


class _exclude_td_from_pytree:  # noqa: N801 (upstream name)
    """Inside the block pytree functions treat TensorDicts (and tensorclasses) as leaves:
    their pytree registrations are lifted and put back on exit.

    >>> import torch
    >>> from torch.utils._pytree import tree_leaves
    >>> td = TensorDict(a=torch.zeros(2), b=torch.ones(2))
    >>> with _exclude_td_from_pytree():
    ...     tree_leaves([td])[0] is td
    True
    """

    def __enter__(self) -> None:
        self._lifted = {cls: SUPPORTED_NODES.pop(cls) for cls in list(SUPPORTED_NODES)
                        if isinstance(cls, type) and issubclass(cls, TensorCollection)}

    def __exit__(self, *exc: object) -> None:
        SUPPORTED_NODES.update(self._lifted)


def set_tensor_dict(module_dict: dict[str, Any], module: nn.Module, name: str,
                    tensor: torch.Tensor) -> None:
    """:func:`set_tensor` given the module's ``__dict__`` (saves a lookup in loops)."""
    params = module_dict["_parameters"]
    if isinstance(tensor, nn.Parameter):
        module_dict.pop(name, None)
        params[name] = tensor
        return
    if name in params:  # a plain tensor takes the parameter's place as an attribute
        del params[name]
    else:
        buffers = module_dict["_buffers"]
        if name in buffers:
            buffers[name] = tensor
            return
    module_dict[name] = tensor


def set_tensor(module: nn.Module, name: str, tensor: torch.Tensor) -> None:
    """Put ``tensor`` at ``name`` in ``module`` without ``nn.Module``'s checks: a Parameter
    is registered as one, a buffer is replaced, any other tensor becomes a plain attribute
    (replacing a parameter of that name).

    >>> linear = nn.Linear(2, 2)
    >>> set_tensor(linear, "weight", torch.zeros(2, 2))
    >>> type(linear.weight).__name__, "weight" in dict(linear.named_parameters())
    ('Tensor', False)
    """
    set_tensor_dict(module.__dict__, module, name, tensor)


def _functional_forward(module: nn.Module, forward: Any) -> Any:
    @functools.wraps(forward)
    def wrapper(*args: Any, params: TensorDictBase | None = None, **kwargs: Any) -> Any:
        if params is None and len(args) >= 2 and acts_as_tensordict(args[-1]):
            args, params = args[:-1], args[-1]
        if params is None:
            return forward(*args, **kwargs)
        with params.to_module(module):
            return forward(*args, **kwargs)

    return wrapper


def extract_weights_and_buffers(module: nn.Module) -> TensorDict:
    """The parameters and buffers of ``module`` as a nested TensorDict.

    >>> extract_weights_and_buffers(nn.Linear(2, 3))["weight"].shape
    torch.Size([3, 2])
    """
    return TensorDict.from_module(module)


def make_functional(module: nn.Module, funs_to_decorate: list[str] | None = None,
                    keep_params: bool = False, return_params: bool = True) -> TensorDict | None:
    """Let ``module`` and each sub-module take ``params`` (a TensorDict shaped like
    :func:`extract_weights_and_buffers`) as a keyword or last positional argument;
    returns the module's current parameters (if ``return_params``).

    ``funs_to_decorate`` names the methods that accept ``params`` (``["forward"]``).
    ``keep_params`` is accepted for compatibility: the module always keeps its tensors.

    >>> linear = nn.Linear(2, 1)
    >>> params = make_functional(linear)
    >>> zeros = params.apply(lambda p: p.detach() * 0)
    >>> linear(torch.ones(1, 2), params=zeros).abs().sum().item()
    0.0
    """
    params = TensorDict.from_module(module) if return_params else None
    for sub in module.modules():
        if getattr(sub, "_is_functional", False):
            continue
        for name in funs_to_decorate or ["forward"]:
            setattr(sub, name, _functional_forward(sub, getattr(sub, name)))
        sub._is_functional = True
    return params


def get_functional(module: nn.Module, funs_to_decorate: list[str] | None = None) -> nn.Module:
    """Make ``module`` functional (see :func:`make_functional`) and return it: it still
    runs with its own parameters, or with ``params=...``.

    >>> linear = get_functional(nn.Linear(2, 1))
    >>> is_functional(linear)
    True
    """
    make_functional(module, funs_to_decorate, keep_params=True, return_params=False)
    return module


def is_functional(module: nn.Module) -> bool:
    """Whether :func:`make_functional` was called on ``module``.

    >>> is_functional(nn.Linear(1, 1))
    False
    """
    return bool(getattr(module, "_is_functional", False))


def repopulate_module(model: nn.Module, tensordict: TensorDictBase) -> nn.Module:
    """Write the tensors of ``tensordict`` into ``model`` (its parameters and buffers).

    >>> linear = nn.Linear(2, 1)
    >>> params = extract_weights_and_buffers(linear).apply(lambda p: p.detach() * 0)
    >>> repopulate_module(linear, params).weight.abs().sum().item()
    0.0
    """
    tensordict.to_module(model)
    return model
