"""Module parameters as TensorDicts: ``from_module``, ``from_modules`` and ``to_module``.

``TensorDict.from_module(model)`` gathers the parameters and buffers of a module into a
TensorDict nested like the module tree. ``params.to_module(model)`` puts the tensors of a
TensorDict into the module (no copy) and returns the tensors it replaced; used as a
context manager it puts them back on exit, even when the block raises. With a stacked
TensorDict (``from_modules``, ``torch.stack``) and ``torch.vmap`` this runs an ensemble.

Example:
    >>> import torch
    >>> from torch import nn
    >>> from tensordict import TensorDict
    >>> model = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    >>> params = TensorDict.from_module(model)
    >>> params["0", "weight"].shape
    torch.Size([4, 3])
    >>> zeros = params.apply(torch.zeros_like)
    >>> with zeros.to_module(model):
    ...     model(torch.ones(2, 3)).abs().sum().item()
    0.0
    >>> model[0].weight is params["0", "weight"]
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from tensordict import plugins
from tensordict._collection import acts_as_tensordict, classes

if TYPE_CHECKING:
    from tensordict._base import TensorDictBase

_Tensor = torch.Tensor
_functorch = torch._C._functorch
_is_functorch_wrapped = _functorch.is_functorch_wrapped_tensor
_Uninitialized = nn.parameter.UninitializedTensorMixin
_SIZE0 = torch.Size([])


class FunctionalMixin:
    """``from_module``/``from_modules``/``to_module`` for TensorDicts."""

    __slots__ = ()

    @classmethod
    def from_module(cls, module: nn.Module, as_module: bool = False,
                    use_state_dict: bool = False, lock: bool = False) -> Any:
        """The parameters and buffers of ``module``, nested by submodule.

        The leaves are the module's own tensors (no copy). Submodules without any tensor
        are left out.

        Args:
            module: the module to read.
            as_module: return a ``tensordict.nn.TensorDictParams`` (an ``nn.Module``).
            use_state_dict: read through ``module.state_dict(keep_vars=True)`` (state-dict
                hooks apply, non-persistent buffers are left out).
            lock: lock the result.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from torch import nn
        >>> params = TensorDict.from_module(nn.Sequential(nn.ReLU(), nn.BatchNorm1d(2)))
        >>> sorted(params.keys(include_nested=True, leaves_only=True))[:2]
        [('1', 'bias'), ('1', 'num_batches_tracked')]
        """
        if use_state_dict:
            flat = module.state_dict(keep_vars=True)
            out = classes.TensorDict._from_entries({}, _SIZE0)
            for name, tensor in flat.items():
                out.set(tuple(name.split(".")), tensor)
        else:
            out = _module_tensordict(module)
        return _finish(out, as_module, lock)

    @classmethod
    def from_modules(cls, *modules: nn.Module, as_module: bool = False,
                     lazy_stack: bool = False, expand_identical: bool = False) -> Any:
        """The parameters of several modules of the same structure, stacked along dim 0.

        Leaves that were parameters are ``nn.Parameter`` objects of the stacked data (so
        the result can be optimized); the modules themselves are left unchanged. The
        uninitialized parameters (buffers) of lazy modules give one uninitialized stack
        each: the first call of a module they are put into (``to_module``, inside
        ``vmap`` too) materializes it whole, each slice initialized on its own.

        Args:
            *modules: modules with the same parameter and buffer names and shapes.
            as_module: return a ``tensordict.nn.TensorDictParams``.
            lazy_stack: return a ``LazyStackedTensorDict`` of each module's own tensors.
            expand_identical: a tensor shared by every module is expanded, not copied.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from torch import nn
        >>> stacked = TensorDict.from_modules(nn.Linear(2, 3), nn.Linear(2, 3))
        >>> stacked.batch_size, stacked["weight"].shape
        (torch.Size([2]), torch.Size([2, 3, 2]))
        """
        if not modules:
            raise ValueError("from_modules needs at least one module")
        tds = [_module_tensordict(module) for module in modules]
        _check_same_structure(tds)
        if lazy_stack:
            stacked = classes.LazyStackedTensorDict(*tds, stack_dim=0)
            return _finish(stacked, as_module, False)
        size = torch.Size([len(tds)])

        def stack(first: _Tensor, *rest: _Tensor) -> _Tensor:
            if isinstance(first, _Uninitialized):
                return _stacked_uninitialized(first, size)
            if expand_identical and all(t is first for t in rest):
                return first.expand(size + first.shape)
            with torch.no_grad():
                data = torch.stack([first, *rest])
            if isinstance(first, nn.Parameter):
                return nn.Parameter(data, requires_grad=first.requires_grad)
            return data

        out = tds[0]._apply_nest(stack, *tds[1:], batch_size=size, filter_empty=False)
        return _finish(out, as_module, False)

    def to_module(self, module: nn.Module, *, inplace: bool | None = None,
                  return_swap: bool = True, swap_dest: TensorDictBase | None = None,
                  use_state_dict: bool = False, non_blocking: bool = False,
                  preserve_module_state: bool = True,
                  memo: dict[int, Any] | None = None) -> Any:
        """Put the tensors of this TensorDict into ``module``; returns what they replaced.

        Keys are parameter, buffer and submodule names (a subset is fine; an unknown name
        raises KeyError and changes nothing). A plain leaf tensor taking the place of a
        parameter is wrapped in ``nn.Parameter`` (sharing its data); tensors that carry
        autograd history or functorch wrappers (inside ``vmap``/``grad``) go in as they
        are, so gradients flow to this TensorDict.

        Args:
            module: the module to write into.
            inplace: copy the values into the module's existing tensors instead.
            return_swap: return a TensorDict of the replaced tensors (None otherwise).
                Used as a context manager (``with params.to_module(m):``) it puts them
                back on exit.
            swap_dest: a TensorDict to write the replaced tensors into (and return).
            use_state_dict: load through ``module.load_state_dict`` (hooks apply);
                copies unless ``inplace=False`` is given.
            non_blocking: for the copies of ``inplace``.
            preserve_module_state: with ``False``, a plain tensor taking the place of a
                parameter goes in as a plain attribute of the module (no longer a
                registered parameter, not wrapped in ``nn.Parameter``) until the ``with``
                block ends, as upstream does; buffers and ``nn.Parameter`` values are
                registered as usual. The module's other state (``training``, hooks) is
                always kept.
            memo: internal, tracks modules met twice (shared submodules).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from torch import nn
        >>> lin = nn.Linear(2, 2)
        >>> params = TensorDict.from_module(lin)
        >>> try:
        ...     with params.apply(torch.zeros_like).to_module(lin):
        ...         raise ValueError("fails inside")
        ... except ValueError:
        ...     pass
        >>> lin.weight is params["weight"]
        True
        """
        if use_state_dict:
            swap = _load_state_dict_into(self, module, inplace, return_swap or swap_dest)
        else:
            swapper = _Swap(bool(inplace), return_swap or swap_dest is not None, non_blocking,
                            memo, preserve_module_state)
            swap = swapper.run(self, module)
        if swap is None:
            return None
        if swap_dest is not None:
            swap_dest.update(swap)
            swap = swap_dest
        if not return_swap:
            return None
        if inplace or use_state_dict:
            swap._push_exit(lambda td: td.to_module(module, inplace=inplace, return_swap=False,
                                                    use_state_dict=use_state_dict))
        else:  # leaving the with block undoes every write (the log holds no TensorDict)
            swap._push_exit(lambda td, undo=swapper.undo: _undo(undo))
        return swap


def _module_tensordict(module: nn.Module) -> Any:
    """The tensors of ``module`` and of its submodules (those holding any), nested."""
    entries: dict[str, Any] = {}
    for name, param in module._parameters.items():
        if param is not None:
            entries[name] = param
    for name, buffer in module._buffers.items():
        if buffer is not None:
            entries[name] = buffer
    for name, child in module._modules.items():
        if child is not None:
            sub = _module_tensordict(child)
            if sub._tensordict:
                entries[name] = sub
    out = classes.TensorDict._from_entries(entries, _SIZE0)
    # a module that is a TensorDict too (TensorDictParams) names its tensors by dotted path
    return out.unflatten_keys(".") if isinstance(module, classes.TensorDictBase) else out


def _finish(td: Any, as_module: bool, lock: bool) -> Any:
    if as_module:  # a TensorDictParams, of tensordict-nn (the install hint without it)
        td = plugins.top_level_name("TensorDictParams")(td, no_convert=True)
    if lock:
        td.lock_()
    return td


def _shape(tensor: _Tensor) -> torch.Size | str:
    """The shape of ``tensor``; the class name of an uninitialized one (it has no shape)."""
    return type(tensor).__name__ if isinstance(tensor, _Uninitialized) else tensor.shape


def _check_same_structure(tds: Sequence[Any]) -> None:
    reference = {key: _shape(value) for key, value in tds[0].items(True, True)}
    for i, td in enumerate(tds[1:], 1):
        other = {key: _shape(value) for key, value in td.items(True, True)}
        if other.keys() != reference.keys():
            diff = sorted(map(str, reference.keys() ^ other.keys()))
            raise KeyError(f"from_modules: module {i} does not have the same tensors as module 0 "
                           f"(differing keys: {diff})")
        for key, shape in reference.items():
            if other[key] != shape:
                raise RuntimeError(f"from_modules: {key!r} has shape {other[key]} in module {i} "
                                   f"but {shape} in module 0")


class _Swap:
    """One ``to_module`` write: its settings, the modules met so far and an undo log
    (an unknown key raises KeyError after every write done so far is undone)."""

    __slots__ = ("inplace", "keep", "non_blocking", "memo", "wrap", "as_attributes", "undo",
                 "td_cls")

    def __init__(self, inplace: bool, keep: bool, non_blocking: bool,
                 memo: dict[int, Any] | None, preserve_module_state: bool = True) -> None:
        self.inplace, self.keep, self.non_blocking = inplace, keep, non_blocking
        self.memo = {} if memo is None else memo
        # plain tensors replacing parameters become parameters, except while compiling or
        # when they go in as plain attributes
        self.as_attributes = not preserve_module_state
        self.wrap = preserve_module_state and not torch.compiler.is_compiling()
        self.undo: list[tuple[Any, str, _Tensor, _Tensor | None]] = []
        self.td_cls = classes.TensorDict

    def run(self, td: Any, module: nn.Module) -> Any:
        try:
            return self._swap(td, module, ())
        except KeyError:
            _undo(self.undo)
            raise

    def _swap(self, td: Any, module: nn.Module, path: tuple[str, ...]) -> Any:
        """Write the leaves of ``td`` into ``module``; the replaced tensors (if kept)."""
        params, buffers = module._parameters, module._buffers
        td_cls = self.td_cls
        as_attributes = self.as_attributes
        if isinstance(module, classes.TensorDictBase):  # TensorDictParams: dotted paths
            td = td.flatten_keys(".")
            as_attributes = False  # its leaves are its data: the values go in there
        entries = (td._tensordict if type(td) is td_cls
                   else {key: td._get_str(key) for key in td._keys_str()})
        undo, wrap = self.undo, self.wrap
        swapped: dict[str, Any] = {}
        rebatch = None
        for key, value in entries.items():
            if isinstance(value, _Tensor):
                slots = params if key in params else buffers if key in buffers else None
                if slots is None and isinstance(module.__dict__.get(key), _Tensor):
                    slots = module.__dict__  # held as a plain attribute by an earlier swap
                if slots is None:
                    raise KeyError(f"to_module: {path + (key,)!r} is not a parameter or buffer "
                                   f"of {type(module).__name__}")
                old = slots[key]
                if self.inplace:
                    saved = old.detach().clone()
                    undo.append((slots, key, old, saved))
                    with torch.no_grad():
                        old.copy_(value, non_blocking=self.non_blocking)
                    swapped[key] = saved
                    continue
                if (wrap and slots is params and not _is_parameter(value)
                        and value.grad_fn is None and not _is_functorch_wrapped(value)
                        and _is_parameter(old)):
                    value = nn.Parameter(value, requires_grad=old.requires_grad)
                if as_attributes and slots is params and not _is_parameter(value):
                    undo.append((_Registered(module, slots), key, old, None))
                    del slots[key]  # a plain attribute, registered again by the undo
                    module.__dict__[key] = value
                elif slots is not params and slots is not buffers and _is_parameter(value):
                    # a parameter taking the place of a plain attribute is registered (a
                    # lazy module initializes the parameters it has), the undo restores it
                    undo.append((_Attribute(module), key, old, None))
                    del slots[key]
                    params[key] = value
                else:
                    undo.append((slots, key, old, None))
                    slots[key] = value
                if (value.__class__ in _STACKED_UNINITIALIZED and value.vmap_level is not None
                        and _functorch.peek_interpreter_stack() is not None):
                    if rebatch is None:
                        rebatch = _Rebatch(module)
                        undo.append((rebatch, key, None, None))
                    rebatch.entries.append((key, value.in_dim, value.vmap_level))
                swapped[key] = old
            elif type(value) is td_cls or (acts_as_tensordict(value)
                                           and not getattr(value, "_is_non_tensor", False)):
                child = module._modules.get(key)
                if child is None:
                    raise KeyError(f"to_module: {path + (key,)!r} is not a submodule of "
                                   f"{type(module).__name__}")
                swapped[key] = self._swap(value, child, path + (key,))
        if not self.keep:
            return None
        # a module met twice (shared submodule) keeps the tensors it had the first time
        return self.memo.setdefault(id(module), td_cls._from_entries(swapped, _SIZE0))


def _undo(log: list[tuple[Any, str, _Tensor, _Tensor | None]]) -> None:
    """Undo the writes of a :class:`_Swap` (its ``undo`` log), last first."""
    for slots, key, old, saved in reversed(log):
        if saved is None:
            slots[key] = old
        else:
            with torch.no_grad():
                old.copy_(saved)


class _Registered:
    """Where a tensor swapped in as a plain attribute goes back: its module's parameters
    or buffers (``slots``), in their order (``module.parameters()`` keeps it), the
    attribute removed."""

    __slots__ = ("module", "slots", "order")

    def __init__(self, module: nn.Module, slots: dict[str, Any]) -> None:
        self.module, self.slots, self.order = module, slots, list(slots)

    def __setitem__(self, key: str, value: _Tensor) -> None:
        self.module.__dict__.pop(key, None)
        slots = self.slots
        entries = {**slots, key: value}
        slots.clear()
        slots.update({name: entries.pop(name) for name in self.order if name in entries})
        slots.update(entries)


class _Attribute:
    """Where a plain attribute replaced by a registered parameter goes back (see
    :class:`_Registered`): the parameter is unregistered, the attribute set again."""

    __slots__ = ("module",)

    def __init__(self, module: nn.Module) -> None:
        self.module = module

    def __setitem__(self, key: str, value: _Tensor) -> None:
        self.module._parameters.pop(key, None)
        self.module.__dict__[key] = value


class _StackedUninitialized:
    """A stack of ``batch_size`` uninitialized tensors of lazy modules (a leaf of
    :meth:`from_modules`): ``materialize(shape)`` materializes all of them at once, with
    shape ``batch_size + shape``. ``vmap`` cannot map over it: a TensorDictParams holding
    it passes it through as it is, noting the mapped dim and level (``in_dim``,
    ``vmap_level``) for ``to_module`` (see :class:`_Rebatch`).

    >>> import torch
    >>> from torch import nn
    >>> from tensordict import TensorDict
    >>> params = TensorDict.from_modules(nn.LazyLinear(3), nn.LazyLinear(3))
    >>> weight = params["weight"]
    >>> weight.materialize((3, 2))
    >>> type(weight).__name__, weight.shape
    ('Parameter', torch.Size([2, 3, 2]))
    """

    batch_size: torch.Size
    in_dim: int | None
    vmap_level: int | None

    def materialize(self, shape: Sequence[int], device: Any = None, dtype: Any = None) -> None:
        """Materialize the whole stack: ``batch_size + shape``."""
        batch_size = self.batch_size
        super().materialize((*batch_size, *shape), device=device, dtype=dtype)  # type: ignore[misc]
        for name in ("batch_size", "in_dim", "vmap_level"):  # now a plain Parameter (buffer)
            self.__dict__.pop(name, None)

    def __deepcopy__(self, memo: dict[int, Any]) -> Any:
        if id(self) not in memo:
            memo[id(self)] = _stacked_uninitialized(self, self.batch_size)
        return memo[id(self)]


class _StackedUninitializedParameter(_StackedUninitialized, nn.UninitializedParameter):
    """A stack of uninitialized parameters (see :class:`_StackedUninitialized`)."""


class _StackedUninitializedBuffer(_StackedUninitialized, nn.UninitializedBuffer):
    """A stack of uninitialized buffers (see :class:`_StackedUninitialized`)."""


_STACKED_UNINITIALIZED = (_StackedUninitializedParameter, _StackedUninitializedBuffer)


def _stacked_uninitialized(first: Any, size: torch.Size) -> _StackedUninitialized:
    """An uninitialized stack of ``size`` tensors like ``first`` (an uninitialized one)."""
    data = first.data
    if isinstance(first, nn.Parameter):
        out: Any = _StackedUninitializedParameter(first.requires_grad, data.device, data.dtype)
    else:
        out = _StackedUninitializedBuffer(first.requires_grad, data.device, data.dtype)
    out.batch_size, out.in_dim, out.vmap_level = size, None, None
    return out


class _Rebatch:
    """A forward pre-hook ``to_module`` puts on a module that gets stacks of uninitialized
    tensors inside ``vmap`` (the module is lazy). It runs once, after the lazy module's
    own hook: that one materialized the whole stacks (each slice initialized on its own,
    as ``reset_parameters`` sees the whole stack); this one hands the module their slice
    at the ``vmap`` level, so that its forward maps over them. Removed when the ``with``
    block ends (it is an entry of the undo log)."""

    __slots__ = ("entries", "handle")

    def __init__(self, module: nn.Module) -> None:
        self.entries: list[tuple[str, int, int]] = []  # (key, in_dim, vmap_level)
        self.handle = module.register_forward_pre_hook(self)

    def __call__(self, module: nn.Module, args: Any) -> None:
        self.handle.remove()
        for key, in_dim, level in self.entries:
            slots = module._parameters if key in module._parameters else module._buffers
            value = slots.get(key)
            if value is not None and not isinstance(value, _Uninitialized):
                slots[key] = _functorch._add_batch_dim(value, in_dim, level)

    def __setitem__(self, key: str, value: Any) -> None:  # the undo: remove the hook
        self.handle.remove()


def _is_parameter(tensor: _Tensor) -> bool:
    return type(tensor) is nn.Parameter or (type(tensor) is not _Tensor
                                            and isinstance(tensor, nn.Parameter))


def _load_state_dict_into(td: Any, module: nn.Module, inplace: bool | None, keep: Any) -> Any:
    state = {".".join(k) if isinstance(k, tuple) else k: v
             for k, v in td.items(True, True) if isinstance(v, _Tensor)}
    current = module.state_dict(keep_vars=True)
    unknown = sorted(state.keys() - current.keys())
    if unknown:
        raise KeyError(f"to_module: {unknown} are not in the state dict of "
                       f"{type(module).__name__}")
    assign = inplace is False
    swap = None
    if keep:
        swap = classes.TensorDict.from_module(module, use_state_dict=True)
        if not assign:
            swap = swap.apply(lambda t: t.detach().clone())
    module.load_state_dict(state, strict=False, assign=assign)
    return swap


def from_module(module: nn.Module, as_module: bool = False, use_state_dict: bool = False,
                lock: bool = False) -> Any:
    """Alias of :meth:`TensorDict.from_module`.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from torch import nn
    >>> import tensordict
    >>> sorted(tensordict.from_module(nn.Linear(2, 2)).keys())
    ['bias', 'weight']
    """
    return classes.TensorDict.from_module(module, as_module=as_module,
                                          use_state_dict=use_state_dict, lock=lock)


def from_modules(*modules: nn.Module, as_module: bool = False, lazy_stack: bool = False,
                 expand_identical: bool = False) -> Any:
    """Alias of :meth:`TensorDict.from_modules`.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from torch import nn
    >>> import tensordict
    >>> tensordict.from_modules(nn.Linear(2, 2), nn.Linear(2, 2)).batch_size
    torch.Size([2])
    """
    return classes.TensorDict.from_modules(*modules, as_module=as_module,
                                           lazy_stack=lazy_stack,
                                           expand_identical=expand_identical)

