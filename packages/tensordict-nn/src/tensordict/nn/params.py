"""TensorDictParams: a TensorDict of parameters that is also an ``nn.Module``.

>>> import torch
>>> from tensordict import TensorDict
>>> from tensordict.nn import TensorDictParams
>>> params = TensorDictParams(TensorDict(w=torch.zeros(3), n={"b": torch.ones(2)}))
>>> [name for name, _ in params.named_parameters()]
['w', 'n.b']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, MutableMapping
from contextlib import ExitStack
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch import nn

from tensordict import (
    LazyStackedTensorDict,
    NestedKey,
    TensorCollection,
    TensorDict,
    TensorDictBase,
    is_non_tensor,
)
from tensordict.base import NO_DEFAULT
from tensordict.extending import MATH_MIXINS
from tensordict.extending import STACKED_UNINITIALIZED as _STACKED_UNINITIALIZED
from tensordict.utils import acts_as_tensordict

__all__ = ["TensorDictParams"]

_functorch = torch._C._functorch
_Uninitialized = nn.parameter.UninitializedTensorMixin


def _as_leaf(value: Any, convert: bool) -> Any:
    """``value`` as a leaf of a TensorDictParams: Parameters, buffers and tensors carrying
    autograd history stay as they are; other floating (and complex) tensors become
    Parameters when ``convert``; the remaining tensors become buffers (``nn.Buffer``)."""
    if not isinstance(value, torch.Tensor) or isinstance(value, nn.Parameter) \
            or value.grad_fn is not None or getattr(value, "_is_buffer", False):
        return value
    if convert and (value.is_floating_point() or value.is_complex()):
        return nn.Parameter(value)
    return nn.Buffer(value)


def _leaves_in_place(data: TensorDictBase, convert: bool) -> bool:
    """Make the tensor leaves of ``data`` (nested ones too) Parameters or buffers as
    ``_as_leaf`` does, where they stand: ``data`` itself becomes what a TensorDictParams
    holds. A lazy stack anywhere raises RuntimeError before anything is changed; locked
    TensorDicts are unlocked for the swap and locked again. Whether an uninitialized
    tensor (of a lazy module) is among the leaves.

    >>> td = TensorDict(w=torch.zeros(2))
    >>> _leaves_in_place(td, convert=True), type(td["w"]).__name__
    (False, 'Parameter')
    """
    swaps: list[tuple[Any, str, torch.Tensor]] = []
    uninitialized = _collect_swaps(data, convert, (), swaps)
    if swaps:
        with ExitStack() as unlocked:
            if data.is_locked:
                unlocked.enter_context(data.unlock_())
            for node, key, leaf in swaps:
                if node.is_locked:  # locked on its own, under an unlocked parent
                    unlocked.enter_context(node.unlock_())
                node._set_str(key, leaf, inplace=False, validated=True)
    return uninitialized


def _collect_swaps(node: Any, convert: bool, path: tuple[str, ...],
                   swaps: list[tuple[Any, str, torch.Tensor]]) -> bool:
    """Add to ``swaps`` the ``(node, key, leaf)`` that ``_leaves_in_place`` stores."""
    if isinstance(node, LazyStackedTensorDict):
        where = f" (at {path})" if path else ""
        raise RuntimeError(
            f"TensorDictParams cannot hold a LazyStackedTensorDict{where}: its leaves are "
            f"stacked anew on each read, no parameter can stand for them (densify it "
            f"first, e.g. with .contiguous())"
        )
    uninitialized = False
    for key in node._keys_str():
        value = node._get_str(key)
        if isinstance(value, torch.Tensor):
            leaf = _as_leaf(value, convert)
            if leaf is not value:
                swaps.append((node, key, leaf))
            uninitialized = uninitialized or isinstance(value, _Uninitialized)
        elif acts_as_tensordict(value) and not is_non_tensor(value):
            uninitialized = _collect_swaps(value, convert, path + (key,), swaps) \
                or uninitialized
    return uninitialized


def _same_kind(new: Any, old: Any) -> Any:
    """``new`` (a converted or copied ``old``) a Parameter again if ``old`` was one."""
    if isinstance(old, nn.Parameter) and not isinstance(new, nn.Parameter):
        return nn.Parameter(new.detach(), requires_grad=old.requires_grad)
    return new


class _LeafView(MutableMapping):
    """The Parameter (or buffer) leaves of a TensorDictParams, keyed by dotted name: what
    ``nn.Module`` sees as ``_parameters`` / ``_buffers``, writing through to the data."""

    def __init__(self, owner: TensorDictParams, parameters: bool) -> None:
        self._owner = owner
        self._parameters = parameters

    def _wanted(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor) and \
            isinstance(value, nn.Parameter) == self._parameters

    def _entries(self) -> Iterator[tuple[str, torch.Tensor]]:
        for key, value in self._owner._param_td.items(True, True):
            if self._wanted(value):
                yield (key if isinstance(key, str) else ".".join(key)), value

    def __getitem__(self, name: str) -> torch.Tensor:
        value = self._owner._param_td.get(tuple(name.split(".")), None)
        if not self._wanted(value):
            raise KeyError(name)
        return value

    def __setitem__(self, name: str, value: Any) -> None:
        if not self._parameters:  # a buffer registered by nn.Module stays one
            value = _as_leaf(value, False)
        self._owner._param_td.set(tuple(name.split(".")), value)

    def __delitem__(self, name: str) -> None:
        self[name]  # noqa: B018 (raises KeyError when absent)
        self._owner._param_td.del_(tuple(name.split(".")))

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._entries())

    def __len__(self) -> int:
        return sum(1 for _ in self._entries())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._wanted(
            self._owner._param_td.get(tuple(name.split(".")), None))

    def items(self) -> Any:
        return list(self._entries())


def _forward_to_data(name: str) -> Callable[..., Any]:
    """A method that runs ``name`` on the underlying TensorDict (self if it returns it)."""

    def method(self: TensorDictParams, *args: Any, **kwargs: Any) -> Any:
        data = self._param_td
        out = getattr(data, name)(*args, **kwargs)
        return self if out is data else out

    method.__name__ = name
    method.__doc__ = f"``TensorDict.{name}`` on the parameters."
    return method


def _forward_without_grad(name: str) -> Callable[..., Any]:
    """``_forward_to_data(name)`` under ``torch.no_grad()``: an in-place write that
    gives the Parameters new values (as upstream; autograd refuses it otherwise)."""
    forwarded = _forward_to_data(name)

    def method(self: TensorDictParams, *args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():  # (entering no_grad costs a few us)
            return forwarded(self, *args, **kwargs)
        with torch.no_grad():
            return forwarded(self, *args, **kwargs)

    method.__name__ = name
    method.__doc__ = f"``TensorDict.{name}`` on the parameters, without autograd."
    return method


class TensorDictParams(TensorDictBase, nn.Module):
    """A TensorDict whose leaves are registered as the parameters (floating tensors) and
    buffers (other tensors) of an ``nn.Module``: ``.parameters()``, optimizers,
    ``state_dict()`` and ``.to()`` see them, and values written stay Parameters.

    Args:
        parameters: a TensorDict, wrapped itself: its leaves become Parameters and
            buffers where they stand and every write lands in it (a lazy stack raises
            RuntimeError; a TensorDictParams gives a new structure over its leaves).
            Or a dict of tensors (keyword arguments work too).
        no_convert: keep the tensors as given (only existing Parameters are parameters).
        lock: lock the TensorDict.

    Out-of-place TensorDict ops (``params + 1``, ``torch.stack([params, params])``...)
    return plain TensorDicts; in-place ones (``params += 1`` under ``torch.no_grad()``)
    write into the parameters; ``clone``, ``copy`` and ``to`` return a TensorDictParams.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> step = torch.zeros((), dtype=torch.long)
    >>> params = TensorDictParams(TensorDict(w=torch.zeros(3), step=step))
    >>> type(params["w"]).__name__, type(params["step"]).__name__
    ('Parameter', 'Tensor')
    >>> params["v"] = torch.ones(2)
    >>> len(list(params.parameters()))
    2
    """

    __hash__ = nn.Module.__hash__

    def __init__(self, parameters: TensorDictBase | dict[str, Any] | None = None, *,
                 no_convert: bool = False, lock: bool = False, **kwargs: Any) -> None:
        nn.Module.__init__(self)
        if parameters is None:
            parameters = TensorDict(kwargs)
        elif kwargs:
            raise TypeError("TensorDictParams takes a TensorDict or keyword entries, not both")
        elif not acts_as_tensordict(parameters):
            parameters = TensorDict(parameters)
        if isinstance(parameters, TensorDictParams):  # (upstream: its own structure)
            parameters = parameters._param_td.clone(False)
        self.__dict__["no_convert"] = no_convert
        self.__dict__["_uninitialized"] = _leaves_in_place(parameters, not no_convert)
        self.__dict__["_param_td"] = parameters  # wrapped itself: writes reach it
        self.__dict__["_parameters"] = _LeafView(self, parameters=True)
        self.__dict__["_buffers"] = _LeafView(self, parameters=False)
        if lock:
            self._param_td.lock_()

    # -- primitives --------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._param_td.batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        self._param_td.batch_size = value

    @property
    def device(self) -> torch.device | None:
        return self._param_td.device

    @property
    def names(self) -> list[str | None]:
        return self._param_td.names

    @names.setter
    def names(self, value: Any) -> None:
        self._param_td.names = value

    @property
    def is_locked(self) -> bool:
        return self._param_td.is_locked

    def _convert(self, value: Any) -> Any:
        convert = not self.no_convert
        if acts_as_tensordict(value):
            # _as_leaf keeps shapes: no check (an uninitialized tensor has no shape)
            return value._apply_nest(lambda x: _as_leaf(x, convert), filter_empty=False)
        return _as_leaf(value, convert)

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        return self._param_td._get_str(key, default)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> TensorDictParams:
        self._param_td._set_str(key, self._convert(value), inplace=inplace,
                                validated=validated, non_blocking=non_blocking)
        if isinstance(value, _Uninitialized):
            self.__dict__["_uninitialized"] = True
        return self

    def _del_str(self, key: str) -> None:
        self._param_td._del_str(key)

    def _keys_str(self) -> Iterator[str]:
        return self._param_td._keys_str()

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        out = self._param_td._apply_nest(fn, *others, **kwargs)
        return self if out is self._param_td else out

    def _index(self, index: Any) -> Any:
        return self._param_td._index(index)

    @property
    def data(self) -> Any:
        """A TensorDict of the parameters' ``.data`` (plain tensors, same storage): what
        a target-network update writes into."""
        return self._param_td.data

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._param_td._set_at_index(index, value)

    def _propagate_lock(self, locked: bool) -> None:
        self._param_td._propagate_lock(locked)

    # -- writes keep parameters --------------------------------------------------------
    def set(self, key: NestedKey, item: Any, *args: Any, **kwargs: Any) -> TensorDictParams:
        """Write ``item`` at ``key`` (floating tensors become Parameters)."""
        self._param_td.set(key, self._convert(item), *args, **kwargs)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, str) or (isinstance(key, tuple) and key
                                    and all(isinstance(k, (str, tuple)) for k in key)):
            self.set(key, value)
        else:
            self._param_td[key] = value

    def update(self, input_dict_or_td: Any, *args: Any, **kwargs: Any) -> TensorDictParams:
        """``TensorDict.update`` with the new values turned into Parameters."""
        if not acts_as_tensordict(input_dict_or_td):
            input_dict_or_td = TensorDict(input_dict_or_td, batch_size=self.batch_size)
        self._param_td.update(self._convert(input_dict_or_td), *args, **kwargs)
        return self

    def setdefault(self, key: NestedKey, default: Any = None) -> Any:
        """The value at ``key``, written first (as a Parameter) when missing."""
        return self._param_td.setdefault(key, self._convert(default))

    # -- copies stay TensorDictParams --------------------------------------------------
    def _rewrapped(self, data: TensorDictBase) -> TensorDictParams:
        """A TensorDictParams over ``data`` (copies of this one's leaves), each leaf a
        Parameter or a buffer as it was here."""
        return TensorDictParams(data.apply(_same_kind, self._param_td, filter_empty=False),
                                no_convert=True)

    def clone(self, recurse: bool = True, **kwargs: Any) -> TensorDictParams:
        """A TensorDictParams over cloned (``recurse=False``: the same) tensors."""
        if not recurse:
            return TensorDictParams(self._param_td.clone(False), no_convert=True)
        return self._rewrapped(self._param_td.apply(lambda x: x.detach().clone()))

    def copy(self) -> TensorDictParams:
        """A shallow copy (same Parameter objects)."""
        return self.clone(False)

    __copy__ = copy

    def __deepcopy__(self, memo: dict[int, Any]) -> TensorDictParams:
        return self.clone()

    def to(self, *args: Any, **kwargs: Any) -> TensorDictParams:  # type: ignore[override]
        """A TensorDictParams with the parameters moved / cast (``TensorDict.to``); with
        ``inplace=True``, this one, whose parameters keep their identity (as
        ``nn.Module.to``).

        >>> params = TensorDictParams(TensorDict(w=torch.zeros(2)))
        >>> w = params["w"]
        >>> params.to(torch.float64, inplace=True)["w"] is w, w.dtype
        (True, torch.float64)
        """
        if kwargs.pop("inplace", False):
            moved = self._param_td.to(*args, **kwargs)
            return self._convert_leaves(lambda key, _: moved.get(key))
        out = self._param_td.to(*args, **kwargs)
        return self if out is self._param_td else self._rewrapped(out)

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor],
               recurse: bool = True) -> TensorDictParams:
        """What ``nn.Module.to`` / ``.double()``... of an enclosing module do: convert
        every leaf (and gradient) in place, keeping the tensor objects when possible."""
        return self._convert_leaves(lambda _, leaf: fn(leaf), fn)

    def _convert_leaves(self, new_leaf: Callable[[NestedKey, torch.Tensor], torch.Tensor],
                        convert_grad: Callable[[torch.Tensor], torch.Tensor] | None = None
                        ) -> TensorDictParams:
        """Give each leaf the data ``new_leaf(key, leaf)``, in place where the tensor
        kinds allow it (else a new parameter under the key), and its gradient
        ``convert_grad(grad)``."""
        for key, old in list(self._param_td.items(True, True)):
            if not isinstance(old, torch.Tensor):
                continue
            new = new_leaf(key, old)
            if new is not old:
                if torch._has_compatible_shallow_copy_type(old, new) and \
                        not torch.__future__.get_overwrite_module_params_on_conversion():
                    with torch.no_grad():
                        old.data = new
                else:
                    self._param_td.set(key, _as_leaf(_same_kind(new, old), False))
            if convert_grad is not None and old.grad is not None:
                grad = convert_grad(old.grad)
                if torch._has_compatible_shallow_copy_type(old.grad, grad):
                    old.grad.data = grad
                else:
                    old.grad = grad
        return self

    def cpu(self) -> TensorDictParams:  # type: ignore[override]
        """``to("cpu")``."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> TensorDictParams:  # type: ignore[override]
        """``to("cuda")``."""
        return self.to("cuda" if device is None else torch.device("cuda", device))

    # -- everything else is the TensorDict's --------------------------------------------
    # -- reads, with the get post-hooks -------------------------------------------------
    def register_get_post_hook(self, hook: Callable[[TensorDictParams, Any], Any]) -> None:
        """Call ``hook(self, value)`` after each read of a leaf (``params[key]``,
        ``params.get(key)``); a result other than None replaces the value read.

        >>> import torch
        >>> params = TensorDictParams(a=torch.ones(2))
        >>> params.register_get_post_hook(lambda params, value: value.detach() * 0)
        >>> params["a"]
        tensor([0., 0.])
        """
        self.__dict__.setdefault("_get_post_hooks", []).append(hook)

    def _after_get(self, value: Any) -> Any:
        if acts_as_tensordict(value):
            return value
        for hook in self.__dict__.get("_get_post_hooks", ()):
            result = hook(self, value)
            if result is not None:
                value = result
        return value

    def __getitem__(self, index: Any) -> Any:
        return self._after_get(self._param_td[index])

    def get(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """The value at ``key`` (see ``TensorDict.get``), through the get post-hooks."""
        return self._after_get(self._param_td.get(key, *args, **kwargs))

    for _name in ("keys", "items", "values", "pop", "popitem", "clear", "apply",
                  "float", "double", "half", "bfloat16", "int", "bool", "requires_grad_",
                  "__delitem__", "__eq__", "__ne__"):
        locals()[_name] = _forward_to_data(_name)
    for _name in ("set_", "set_at_", "update_", "update_at_", "copy_", "fill_", "zero_",
                  "apply_"):
        locals()[_name] = _forward_without_grad(_name)
    del _name

    def __getattr__(self, name: str) -> Any:
        try:
            return nn.Module.__getattr__(self, name)
        except AttributeError:
            data = self.__dict__.get("_param_td")
            if data is None or name.startswith("__"):
                raise
        attr = getattr(data, name)
        if callable(attr) and getattr(attr, "__self__", None) is data:
            return functools.partial(_forward_to_data(name), self)
        return attr

    def __dir__(self) -> list[str]:
        return sorted(set(nn.Module.__dir__(self)) | set(dir(self._param_td)))

    def _load_from_state_dict(self, state_dict: Any, prefix: str, local_metadata: Any,
                              strict: bool, missing_keys: list[str],
                              unexpected_keys: list[str], error_msgs: list[str]) -> None:
        # nn.Module flags dotted names ("n.b") of nested entries as unexpected: drop those
        start = len(unexpected_keys)
        nn.Module._load_from_state_dict(self, state_dict, prefix, local_metadata, strict,
                                        missing_keys, unexpected_keys, error_msgs)
        local = {prefix + name for name in (*self._parameters, *self._buffers)}
        unexpected_keys[start:] = [key for key in unexpected_keys[start:] if key not in local]

    def __repr__(self) -> str:
        return f"{type(self).__name__}(params={self._param_td!r})"

    def __reduce__(self) -> Any:
        return (TensorDictParams, (self._param_td,), None)


def _forward_property(name: str, settable: bool) -> property:
    def read(self: TensorDictParams) -> Any:
        return getattr(self._param_td, name)

    def write(self: TensorDictParams, value: Any) -> None:
        setattr(self._param_td, name, value)

    return property(read, write if settable else None, doc=f"``TensorDict.{name}``.")


def _forward_shared_methods(cls: type[TensorDictParams]) -> None:
    """TensorDictBase's shared methods work on the primitives; a TensorDictParams runs its
    TensorDict's instead (results that are the TensorDict become self), as ``__getattr__``
    does for the rest, but keeps ``nn.Module``'s where both define one (``state_dict``,
    ``type``...) and its own math (PointwiseMixin, TorchFunctionMixin)."""
    mro = TensorDictBase.__mro__
    shared = [k for k in mro[1:mro.index(TensorCollection)]
              if k not in MATH_MIXINS]
    for name in dir(cls):
        owner = next(k for k in cls.__mro__ if name in vars(k))
        if owner not in shared or name == "__init_subclass__":
            continue
        value = vars(owner)[name]
        if name in vars(nn.Module):
            setattr(cls, name, vars(nn.Module)[name])
        elif isinstance(value, property):
            setattr(cls, name, _forward_property(name, value.fset is not None))
        elif isinstance(value, (classmethod, staticmethod)):
            setattr(cls, name, getattr(TensorDict, name))
        else:
            setattr(cls, name, _forward_to_data(name))


_forward_shared_methods(TensorDictParams)



def _uninitialized_leaves(data: TensorDictBase) -> tuple[tuple[NestedKey, Any], ...]:
    """The uninitialized tensors (of lazy modules) among the leaves of ``data``."""
    return tuple((key, value) for key, value in data.items(True, True)
                 if isinstance(value, _Uninitialized))


def _flatten(params: TensorDictParams) -> tuple[list[Any], Any]:
    """The TensorDict held; without its uninitialized tensors if it has any (they have no
    shape to map over), which go in the context, with a zero-size carrier of the batch
    size as second child: on rebuilding, the carrier says which dim and level ``vmap``
    maps (see ``tensordict._functional._StackedUninitialized``)."""
    data = params._param_td
    if not params.__dict__.get("_uninitialized"):
        return [data], None
    uninitialized = _uninitialized_leaves(data)
    if not uninitialized:  # materialized since
        params.__dict__["_uninitialized"] = False
        return [data], None
    carrier = torch.empty((*data.batch_size, 0), device=data.device)
    return [data.exclude(*(key for key, _ in uninitialized)), carrier], uninitialized


def _unflatten(values: list[Any], context: Any) -> Any:
    if context is None:
        return values[0]
    data, carrier = values
    if not isinstance(carrier, torch.Tensor):
        # placeholders (vmap's in_dims): only the number of leaves matters
        return data, carrier
    in_dim = level = None
    if _functorch.is_batchedtensor(carrier):
        in_dim, level = _functorch.maybe_get_bdim(carrier), _functorch.maybe_get_level(carrier)
    for key, value in context:
        if value.__class__ in _STACKED_UNINITIALIZED:
            value.in_dim, value.vmap_level = in_dim, level
        *path, name = (key,) if isinstance(key, str) else key
        node = data
        for part in path:
            node = node._get_str(part)
        node._set_str(name, value, inplace=False, validated=True)  # has no shape to check
    return data


def _flatten_with_keys(params: TensorDictParams) -> tuple[list[tuple[Any, Any]], Any]:
    children, context = _flatten(params)
    keys = [pytree.GetAttrKey("_param_td"), pytree.MappingKey("<batch size>")]
    return list(zip(keys, children)), context


# vmap, torch.func and torch.compile see through it to the TensorDict it holds
pytree.register_pytree_node(
    TensorDictParams, _flatten, _unflatten,
    serialized_type_name="tensordict.nn.params.TensorDictParams",
    flatten_with_keys_fn=_flatten_with_keys,
)
