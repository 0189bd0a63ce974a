"""``torch.*`` functions on TensorDicts, through ``__torch_function__``.

``HANDLED`` maps each supported torch function to a handler taking the same arguments.
Functions outside the table are looked up among the plugins' contributions
(:func:`tensordict.plugins.torch_function`); anything else returns ``NotImplemented``,
so torch raises its usual ``TypeError``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    >>> torch.stack([td, td], 1).batch_size, torch.ones_like(td)["a"].sum().item()
    (torch.Size([2, 2]), 6.0)
    >>> [t.batch_size for t in torch.split(td, 1)]
    [torch.Size([1]), torch.Size([1])]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from tensordict import plugins
from tensordict._pointwise import BINARY, PREDICATES, UNARY
from tensordict._reductions import reduce_fully
from tensordict._shapes import as_device
from tensordict._stack import cat, maybe_dense_stack, stack

HANDLED: dict[Callable[..., Any], Callable[..., Any]] = {}


def _method(name: str) -> Callable[..., Any]:
    """A handler calling ``input.<name>(*args, **kwargs)``."""
    def handler(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        return getattr(input, name)(*args, **kwargs)
    return handler


def _like(factory: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.zeros_like``-style factories applied to every leaf (a ``device`` given is
    the result's device)."""
    def handler(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        device = kwargs.get("device")
        return input._apply_nest(
            lambda x: factory(x, *args, **kwargs), filter_empty=False,
            **({} if device is None else {"device": as_device(device)}))
    return handler


def _binary_handler(name: str, commutative: bool) -> Callable[..., Any]:
    def handler(input: Any, other: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if not hasattr(input, "_apply_nest"):
            if not commutative:
                return NotImplemented
            input, other = other, input
        return getattr(input, name)(other, *args, **kwargs)
    return handler


def _where(condition: Any, input: Any, other: Any, *, out: Any = None) -> Any:  # noqa: A002
    """``torch.where`` with a TensorDict ``input`` and a tensor or TensorDict condition."""
    if not hasattr(input, "_apply_nest"):
        return NotImplemented
    if not hasattr(condition, "_apply_nest"):
        return input.where(condition, other, out=out)
    if hasattr(other, "_apply_nest"):
        result = input._apply_nest(lambda x, c, o: torch.where(c, x, o), condition, other,
                                   filter_empty=False)
    else:
        result = input._apply_nest(lambda x, c: torch.where(c, x, other), condition,
                                   filter_empty=False)
    return result if out is None else out.update_(result)


def _loss(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``torch.nn.functional`` losses: a TensorDict of per-leaf losses."""
    def handler(input: Any, target: Any, *args: Any, reduction: str = "mean",  # noqa: A002
                **kwargs: Any) -> Any:
        def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            return fn(x, y, *args, reduction=reduction, **kwargs)
        if reduction == "none":
            return input._apply_nest(loss, target, filter_empty=False)
        return reduce_fully(input, loss, target)
    return handler


def _leaves_of(values: Any) -> list[Any]:
    values = values if isinstance(values, (tuple, list)) else (values,)
    return [leaf for v in values
            for leaf in (v._tensor_leaves() if hasattr(v, "_apply_nest") else (v,))]


def _grad(outputs: Any, inputs: Any, grad_outputs: Any = None, **kwargs: Any) -> Any:
    """``torch.autograd.grad`` with TensorDicts: gradients as a TensorDict like ``inputs``."""
    if grad_outputs is not None:
        grad_outputs = _leaves_of(grad_outputs)
    grads = torch.autograd.grad(_leaves_of(outputs), _leaves_of(inputs), grad_outputs, **kwargs)
    inputs = inputs[0] if isinstance(inputs, (tuple, list)) and len(inputs) == 1 else inputs
    return inputs._from_leaves(grads) if hasattr(inputs, "_apply_nest") else grads


def _clone(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
    return input.clone()


def _fill_table() -> None:
    HANDLED.update({
        torch.stack: stack, torch.cat: cat, torch.concat: cat, torch.concatenate: cat,
        torch.clone: _clone, torch.where: _where, torch.autograd.grad: _grad,
        torch.zeros_like: _like(torch.zeros_like), torch.ones_like: _like(torch.ones_like),
        torch.empty_like: _like(torch.empty_like), torch.full_like: _like(torch.full_like),
        torch.rand_like: _like(torch.rand_like), torch.randn_like: _like(torch.randn_like),
        F.l1_loss: _loss(F.l1_loss), F.mse_loss: _loss(F.mse_loss),
        F.smooth_l1_loss: _loss(F.smooth_l1_loss),
    })
    methods = (
        "unbind", "split", "chunk", "tensor_split", "squeeze", "unsqueeze", "reshape",
        "flatten", "unflatten", "permute", "transpose", "swapaxes", "swapdims", "movedim",
        "moveaxis", "narrow", "gather", "masked_select", "masked_fill", "index_select",
        "flip", "fliplr", "flipud", "roll", "rot90", "tile", "broadcast_to",
        "repeat_interleave", "atleast_1d", "atleast_2d", "atleast_3d", "sum", "mean", "std",
        "var", "nansum", "nanmean", "prod", "amax", "amin", "logsumexp", "clamp", "lerp",
        "addcmul", "addcdiv", "all", "any", "softmax", *PREDICATES,
    )
    for name in methods:
        HANDLED[getattr(torch, name)] = _method(name)
    for name in UNARY:
        HANDLED[getattr(torch, name)] = _method(name)
        if hasattr(torch, name + "_"):
            HANDLED[getattr(torch, name + "_")] = _method(name + "_")
    commutative = {"add", "mul", "maximum", "minimum", "logical_and", "logical_or",
                   "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"}
    for name in BINARY:
        torch_name = {"mod": "remainder"}.get(name, name)
        HANDLED[getattr(torch, torch_name)] = _binary_handler(name, name in commutative)


_fill_table()


class TorchFunctionMixin:
    """``__torch_function__`` and the stack/cat constructors."""

    __slots__ = ()

    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        handler = HANDLED.get(func) or plugins.torch_function(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **(kwargs or {}))

    stack = staticmethod(stack)
    cat = staticmethod(cat)
    maybe_dense_stack = staticmethod(maybe_dense_stack)
