"""Modules that read and write TensorDicts: the base class, TensorDictModule and wrappers.

>>> import torch
>>> from torch import nn
>>> from tensordict import TensorDict
>>> from tensordict.nn import TensorDictModule
>>> module = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["y"])
>>> module(TensorDict(x=torch.zeros(2, 3), batch_size=[2]))["y"].shape
torch.Size([2, 4])
"""

from __future__ import annotations

import functools
import inspect
import textwrap
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch
from torch import nn

from tensordict import (  # noqa: F401 (make_tensordict, unravel_key_list: upstream names)
    NestedKey,
    TensorDict,
    TensorDictBase,
    is_tensor_collection,
    is_tensorclass,
    make_tensordict,
    unravel_key,
    unravel_key_list,
)
from tensordict.base import NO_DEFAULT  # noqa: F401 (upstream name of this module)
from tensordict.errors import MissingKeyError
from tensordict.nn._rollback import record, restore
from tensordict.nn.utils import _DISPATCH, _set_skip_existing_None
from tensordict.utils import deprecation_message, warn_deprecated

__all__ = [
    "TensorDictModule",
    "TensorDictModuleBase",
    "TensorDictModuleWrapper",
    "WrapModule",
    "as_tensordict_module",
    "dispatch",
]


# -- keys --------------------------------------------------------------------------------
def _normalize_keys(keys: Any, what: str) -> list[NestedKey]:
    """``keys`` as a list of unravelled nested keys (a single key becomes a list)."""
    if isinstance(keys, (str, tuple)):
        keys = [keys]
    if not isinstance(keys, list):
        raise ValueError(f"{what} must be of type list, str or tuples of str, got {keys!r}.")
    out = []
    for key in keys:
        if not (isinstance(key, str) or (isinstance(key, tuple) and key
                                          and all(isinstance(k, (str, tuple)) for k in key))):
            raise ValueError(f"{what} must be of type list, str or tuples of str, got {key!r}.")
        out.append(unravel_key(key))
    return out


def _key_name(key: NestedKey, separator: str) -> str:
    return key if isinstance(key, str) else separator.join(key)


def _indented(label: str, value: str) -> str:
    """``label=value`` with the lines after the first indented by 4 spaces."""
    return textwrap.indent(f"{label}={value}", "    ")


def _module_repr(module: nn.Module, fields: Iterable[tuple[str, Any]]) -> str:
    body = ",\n".join(_indented(label, value if isinstance(value, str) else repr(value))
                      for label, value in fields)
    return f"{type(module).__name__}(\n{body})"


# -- dispatch ----------------------------------------------------------------------------
def _tensors_to_td(keys: list[NestedKey], args: tuple[Any, ...], kwargs: dict[str, Any],
                   separator: str, auto_batch_size: bool) -> TensorDict:
    """The TensorDict that a tensor-call ``f(*args, **kwargs)`` stands for."""
    if len(args) > len(keys):
        raise TypeError(f"got {len(args)} positional tensors for the input keys {keys}")
    entries: dict[NestedKey, Any] = dict(zip(keys, args))
    names = {_key_name(key, separator): key for key in keys[len(args):]}
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(
                f"got an unexpected keyword argument {name!r}: the input keys are {keys} "
                f"(nested keys joined with {separator!r})"
            )
        entries[names[name]] = value
    return TensorDict(entries, batch_size="auto" if auto_batch_size else None)


def _set_entry(td: Any, key: NestedKey, value: Any) -> None:
    """``td.set(key, value)``, through the primitive when that is the same thing."""
    if key.__class__ is str and td.__class__ is TensorDict:
        td._set_str(key, value, inplace=False, validated=False)
    else:
        td.set(key, value)


def _describe(value: Any) -> str:
    shape = getattr(value, "shape", None)
    return type(value).__name__ if shape is None else f"{type(value).__name__}{list(shape)}"


def _split_outputs(name: str, output: Any, out_keys: list[NestedKey]) -> tuple[Any, ...]:
    """What a module returned, as one value per out key: a tuple (or list) as it is, a
    TensorDict or dict read at the out keys it holds (written whole when it holds none),
    ``None`` as no value, anything else as one value. Any other count than
    ``len(out_keys)`` raises ``RuntimeError`` (``"_"`` counts: it discards an output)."""
    if output is None:
        values: tuple[Any, ...] = ()
    elif isinstance(output, (tuple, list)):
        values = tuple(output)
    elif isinstance(output, (Mapping, TensorDictBase)):  # not a tensorclass: one value
        found = [output.get(key, None) for key in out_keys]
        absent = [key for key, value in zip(out_keys, found) if value is None]
        if absent and len(absent) < len(out_keys):
            raise RuntimeError(
                f"There are more out_keys than tensors: the {type(output).__name__} "
                f"returned by {name} has no entry {absent} (out_keys={out_keys}, its "
                f"keys: {list(output.keys())})"
            )
        values = (output,) if absent else tuple(found)
    else:
        values = (output,)
    if len(values) != len(out_keys):
        shapes = ", ".join(_describe(value) for value in values)
        more = "tensors than out_keys" if len(values) > len(out_keys) else \
            "out_keys than tensors"
        raise RuntimeError(
            f"There are more {more}: {name} returned {len(values)} value(s) ({shapes}) "
            f"for the {len(out_keys)} out_keys {out_keys}; give one out key per output "
            "('_' discards one)."
        )
    return values


def _outputs(td: Any, keys: list[NestedKey]) -> Any:
    values = tuple(td.get(key) for key in keys if key != "_")
    return values[0] if len(values) == 1 else values


def _tensordict_optional(signature: inspect.Signature) -> inspect.Signature:
    """The signature of a :func:`dispatch` wrapper: its ``tensordict`` may be left out
    for keyword tensors (``torch.export`` binds ``module(input=x)`` to it), as upstream.

    >>> def forward(self, tensordict, *args, **kwargs): ...
    >>> str(_tensordict_optional(inspect.signature(forward)))
    '(self, tensordict=None, *args, **kwargs)'
    """
    params = [param.replace(default=None) if name == "tensordict" and
              param.default is inspect.Parameter.empty else param
              for name, param in signature.parameters.items()]
    try:
        return signature.replace(parameters=params)
    except ValueError:  # a required argument after it: it stays required
        return signature


def dispatch(
    separator: str | Callable[..., Any] = "_",
    source: str | list[NestedKey] = "in_keys",
    dest: str | list[NestedKey] = "out_keys",
    auto_batch_size: bool = True,
) -> Any:
    """Let a function (or method) taking a TensorDict also be called with tensors.

    The function's first argument (after ``self``) must be named ``tensordict``. Tensors
    are given by position (in ``source`` order) or by keyword (nested keys joined with
    ``separator``); the call then returns the ``dest`` entries (one tensor or a tuple).
    ``source``/``dest`` are key lists or the names of attributes of ``self`` holding them.
    Inside ``tensordict.nn.utils._set_dispatch_td_nn_modules(False)`` the arguments are
    passed on as they are.

    >>> import torch
    >>> @dispatch(source=["x"], dest=["y"])
    ... def double(tensordict):
    ...     return tensordict.set("y", tensordict["x"] * 2)
    >>> double(x=torch.ones(2))
    tensor([2., 2.])
    """
    if callable(separator):
        return dispatch()(separator)

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(func)
        params = list(signature.parameters)
        is_method = bool(params) and params[0] == "self"
        first = params[int(is_method)] if len(params) > int(is_method) else None
        if first != "tensordict":
            raise RuntimeError(
                f"the first argument of the wrapped function must be named 'tensordict'. "
                f"Got {first} instead."
            )
        if not is_method and (isinstance(source, str) or isinstance(dest, str)):
            raise RuntimeError(
                "dispatch: give source= and dest= as lists of keys when decorating a "
                f"function ({func.__name__}) rather than a method"
            )

        def keys_of(owner: Any, spec: str | list[NestedKey]) -> list[NestedKey]:
            if isinstance(spec, str):
                return getattr(owner, spec)
            return _normalize_keys(spec, "dispatch keys")

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            owner, rest = (args[0], args[1:]) if is_method else (None, args)
            if rest:
                first = rest[0]
                if first.__class__ is TensorDict or is_tensor_collection(first):
                    return func(*args, **kwargs)
            if "tensordict" in kwargs or not _DISPATCH.get():
                return func(*args, **kwargs)
            td = _tensors_to_td(keys_of(owner, source), rest, kwargs, separator,
                                auto_batch_size)
            out = func(owner, td) if is_method else func(td)
            return _outputs(out, keys_of(owner, dest))

        wrapper.__signature__ = _tensordict_optional(signature)  # type: ignore[attr-defined]
        return wrapper

    return decorate


class _OutKeyNotFoundError(ValueError, RuntimeError):
    """``select_out_keys`` was given a key the module does not write."""


class _OutKeysSelect:
    """Forward hook of a module after :meth:`TensorDictModuleBase.select_out_keys`: the
    out keys it had before (``original``) that are not selected are removed from the
    returned TensorDict."""

    def __init__(self, original: list[NestedKey]) -> None:
        self.original = original

    def __call__(self, module: TensorDictModuleBase, args: Any, output: Any) -> Any:
        if not is_tensor_collection(output):
            return output
        selected = module.out_keys
        dropped = [key for key in self.original if key not in selected]
        return output.exclude(*dropped, inplace=True) if dropped else output


def _class_keys(cls: type, name: str) -> None:
    """Keys given as a class attribute (``in_keys = ["x"]``) become the default of the
    private attribute behind the property of the same name (and, for ``out_keys``, the
    declared keys it falls back to)."""
    value = cls.__dict__.get(name)
    if isinstance(value, (str, tuple, list)):
        delattr(cls, name)
        keys = _normalize_keys(value, name)
        setattr(cls, "_" + name, keys)
        if name == "out_keys":
            cls._declared_out_keys = keys


class _PickledByValue:
    """A function pickled by value (with cloudpickle): one that pickle cannot find by its
    name, such as a lambda or a local function given as a module."""

    __slots__ = ("payload",)

    def __init__(self, function: Callable[..., Any]) -> None:
        import cloudpickle  # only when pickling

        self.payload = cloudpickle.dumps(function)

    def load(self) -> Callable[..., Any]:
        import cloudpickle

        return cloudpickle.loads(self.payload)


# -- the base ----------------------------------------------------------------------------
class TensorDictModuleBase(nn.Module):
    """Base class of modules that read ``in_keys`` from a TensorDict and write ``out_keys``.

    ``in_keys`` and ``out_keys`` are properties stored in ``_in_keys`` / ``_out_keys``;
    a subclass may also give them as class attributes. :meth:`select_out_keys` hides some
    of the out keys (``out_keys_source`` keeps them all). A subclass's ``forward`` takes a
    TensorDict; decorate it with :func:`dispatch` to also accept tensors and with
    :func:`~tensordict.nn.set_skip_existing` to honour that switch.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> class Double(TensorDictModuleBase):
    ...     in_keys, out_keys = ["x"], ["y"]
    ...     @dispatch
    ...     def forward(self, tensordict):
    ...         return tensordict.set("y", tensordict["x"] * 2)
    >>> Double()(x=torch.ones(2))
    tensor([2., 2.])
    """

    #: The out keys a subclass declares as a class attribute: ``out_keys`` while the
    #: instance's are None (as upstream, where TorchRL's losses set ``_out_keys = None``).
    _declared_out_keys: list[NestedKey] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _class_keys(cls, "in_keys")
        _class_keys(cls, "out_keys")

    def __getstate__(self) -> dict[str, Any]:
        """``nn.Module``'s state, the functions it holds (a lambda given as the module)
        pickled by value, as upstream: the module can be sent to another process
        (TorchRL's multiprocess collectors send their policy).

        >>> import pickle, torch
        >>> double = TensorDictModule(lambda x: 2 * x, in_keys=["x"], out_keys=["y"])
        >>> pickle.loads(pickle.dumps(double))(x=torch.ones(1))
        tensor([2.])
        """
        state = super().__getstate__()
        for name, value in state.items():
            if inspect.isfunction(value):
                state[name] = _PickledByValue(value)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {name: value.load() if isinstance(value, _PickledByValue) else value
                 for name, value in state.items()}
        super().__setstate__(state)

    @property
    def in_keys(self) -> list[NestedKey]:
        """The keys read."""
        return self._in_keys

    @in_keys.setter
    def in_keys(self, value: NestedKey | list[NestedKey]) -> None:
        self._in_keys = _normalize_keys(value, "in_keys")

    @property
    def out_keys(self) -> list[NestedKey]:
        """The keys written (after :meth:`select_out_keys`)."""
        apparent = self.__dict__.get("_out_keys_apparent")
        return self.out_keys_source if apparent is None else apparent

    @out_keys.setter
    def out_keys(self, value: NestedKey | list[NestedKey]) -> None:
        self._out_keys = _normalize_keys(value, "out_keys")
        self.__dict__.pop("_out_keys_apparent", None)

    @property
    def out_keys_source(self) -> list[NestedKey]:
        """All the out keys, whatever :meth:`select_out_keys` hides."""
        keys = self._out_keys
        return self._declared_out_keys if keys is None else keys

    @staticmethod
    def is_tdmodule_compatible(module: Any) -> bool:
        """Whether ``module`` has ``in_keys`` and ``out_keys`` (so it fits in a sequence).

        >>> import torch
        >>> TensorDictModuleBase.is_tdmodule_compatible(torch.nn.Linear(1, 1))
        False
        """
        return hasattr(module, "in_keys") and hasattr(module, "out_keys")

    def select_out_keys(self, *out_keys: NestedKey) -> TensorDictModuleBase:
        """Write only ``out_keys`` from now on (in place; returns the module): the others
        are removed from the output TensorDict. A subclass defining its own ``out_keys``
        property sees the selection through its setter.

        >>> from tensordict.nn import TensorDictModule
        >>> m = TensorDictModule(lambda x: (x, x + 1), in_keys=["x"], out_keys=["a", "b"])
        >>> m.select_out_keys("b").out_keys
        ['b']
        """
        hook = self._out_keys_hook()
        original = hook.original if hook is not None else list(self.out_keys)
        selected = _normalize_keys(list(out_keys), "out_keys")
        unknown = [key for key in selected if key not in original]
        if unknown:
            raise _OutKeyNotFoundError(
                f"Can't select non existent key: {', '.join(map(str, unknown))}. "
                f"The out keys of this module are {original}."
            )
        if self._base_out_keys_property():
            self._out_keys_apparent = selected
        else:
            self.out_keys = selected
        if hook is None:
            self.register_forward_hook(_OutKeysSelect(original))
        return self

    def reset_out_keys(self) -> TensorDictModuleBase:
        """Undo :meth:`select_out_keys` (returns the module).

        >>> from tensordict.nn import TensorDictModule
        >>> m = TensorDictModule(lambda x: (x, x + 1), in_keys=["x"], out_keys=["a", "b"])
        >>> m.select_out_keys("b").reset_out_keys().out_keys
        ['a', 'b']
        """
        hook = self._out_keys_hook()
        if hook is None:
            return self
        if self._base_out_keys_property():
            self.__dict__.pop("_out_keys_apparent", None)
        else:
            self.out_keys = hook.original
        for handle, value in list(self._forward_hooks.items()):
            if value is hook:
                del self._forward_hooks[handle]
        return self

    def _out_keys_hook(self) -> _OutKeysSelect | None:
        return next((hook for hook in self._forward_hooks.values()
                     if isinstance(hook, _OutKeysSelect)), None)

    @classmethod
    def _base_out_keys_property(cls) -> bool:
        """Whether ``out_keys`` is this base's property (not a subclass's own)."""
        return getattr(cls, "out_keys", None) is TensorDictModuleBase.__dict__["out_keys"]

    def reset_parameters_recursive(self, parameters: TensorDictBase | None = None
                                   ) -> TensorDictBase | None:
        """Call ``reset_parameters()`` on every sub-module that has one; with
        ``parameters`` (shaped like ``TensorDict.from_module(self)``), reset those tensors
        instead and return them.

        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> m = TensorDictModule(torch.nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
        >>> m.reset_parameters_recursive() is None
        True
        """
        if parameters is not None:
            with parameters.to_module(self):
                self.reset_parameters_recursive()
            return parameters
        for module in self.modules():
            if module is not self and hasattr(module, "reset_parameters"):
                module.reset_parameters()
        return None

    def __repr__(self) -> str:
        return _module_repr(self, [("in_keys", self.in_keys), ("out_keys", self.out_keys)])


# -- TensorDictModule --------------------------------------------------------------------
class TensorDictModule(TensorDictModuleBase):
    """Wrap a callable so that it reads ``in_keys`` from a TensorDict and writes its
    outputs to ``out_keys``.

    Args:
        module: an ``nn.Module`` or any callable.
        in_keys: the keys read (nested keys allowed). A dict maps the callable's keyword
            arguments to keys (``{kwarg: key}``; ``out_to_in_map=False`` reads it as
            ``{key: kwarg}``).
        out_keys: where the outputs go, in order; ``"_"`` discards an output.
        inplace: ``True`` writes into the input TensorDict, ``False`` (or ``None``) into a
            new one with no batch size (as upstream), ``"empty"`` into
            ``tensordict.empty()``.
        method / method_kwargs: call ``module.<method>(..., **method_kwargs)`` instead.
        strict: a missing input raises ``KeyError`` (else ``None`` is passed).
        get_kwargs: extra keyword arguments of ``tensordict.get``.

    Called with tensors (``module(x=tensor)``) it returns the output tensors.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> m = TensorDictModule(lambda a, b: a + b, in_keys={"a": "x", "b": ("n", "y")},
    ...                      out_keys=["z"])
    >>> td = TensorDict(x=torch.ones(2), n={"y": torch.ones(2)}, batch_size=[2])
    >>> m(td)["z"]
    tensor([2., 2.])
    """

    def __init__(
        self,
        module: Callable[..., Any],
        in_keys: NestedKey | list[NestedKey] | dict[Any, Any],
        out_keys: NestedKey | list[NestedKey],
        *,
        out_to_in_map: bool | None = None,
        inplace: bool | str | None = True,
        method: str | None = None,
        method_kwargs: dict[str, Any] | None = None,
        strict: bool = False,
        get_kwargs: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if isinstance(in_keys, Mapping):
            pairs = [(v, k) for k, v in in_keys.items()] if out_to_in_map is False \
                else list(in_keys.items())
            self._kwargs: list[str] | None = [kwarg for kwarg, _ in pairs]
            in_keys = [key for _, key in pairs]
        else:
            self._kwargs = None
        self.in_keys = in_keys
        self.out_keys = out_keys
        if inplace not in (None, True, False, "empty"):
            raise ValueError("The only accepted valued for inplace is `None`, `True`, "
                             f"`False`, or `'empty'`. Got inplace={inplace} instead.")
        if method is not None and not callable(getattr(module, method, None)):
            raise ValueError(f"{type(module).__name__} has no method {method!r}")
        if method is None and not callable(module):
            raise ValueError(
                f"Module {module} of type {type(module)} is not callable. Typical accepted "
                "types are nn.Module or TensorDictModule. To call a specific method of "
                "your module, pass the `method` keyword argument."
            )
        self.module = module
        self.inplace = inplace
        self.method = method
        self.method_kwargs = method_kwargs or {}
        self.strict = strict
        self._get_kwargs = get_kwargs or {}

    @property
    def device(self) -> torch.device:
        """The device of the first parameter or buffer (``cpu`` when there is none).
        Deprecated (a module may hold tensors on several devices), as upstream.

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     TensorDictModule(torch.nn.Linear(2, 2), ["x"], ["y"]).device
        device(type='cpu')
        """
        warnings.warn(
            deprecation_message("TensorDictModule.device", removal="0.17")
            + " Modules may contain parameters and buffers on multiple devices; inspect the "
            "relevant module state explicitly instead.", DeprecationWarning, stacklevel=2)
        for tensor in self.parameters():
            return tensor.device
        for tensor in self.buffers():
            return tensor.device
        return torch.device("cpu")

    @property
    def is_functional(self) -> bool:
        """Whether the wrapped module went through ``make_functional`` (deprecated).

        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     TensorDictModule(torch.nn.Linear(2, 2), ["x"], ["y"]).is_functional
        False
        """
        warn_deprecated("TensorDictModule.is_functional", removal="0.17")
        return bool(getattr(self.module, "_is_functional", False))

    @dispatch(auto_batch_size=False)
    @_set_skip_existing_None()
    def forward(self, tensordict: TensorDictBase | None = None, *args: Any,
                tensordict_out: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Read the inputs, call the module, write the outputs (see the class doc)."""
        inputs = self._read(tensordict)
        try:
            out = self._call_module(inputs, *args, **kwargs)
        except Exception as err:
            missing = [key for key, value in zip(self.in_keys, inputs) if value is None]
            if missing:
                raise KeyError(
                    f"the inputs {missing} of {type(self.module).__name__} were not found "
                    f"in the TensorDict (keys: {list(tensordict.keys(True, True))})"
                ) from err
            raise
        if out.__class__ is torch.Tensor and tensordict_out is None and self.inplace is True:
            out_keys = self._out_keys  # the common call: one tensor written in place
            if len(out_keys) == 1 and tensordict.__class__ is TensorDict and \
                    out_keys[0].__class__ is str and out_keys[0] != "_":
                tensordict._set_str(out_keys[0], out, inplace=False, validated=False)
                return tensordict
        elif out.__class__ is list:  # one output that happens to be a list
            out = (out,)
        return self._write_to_tensordict(tensordict, out, tensordict_out)

    def _call_module(self, tensors: list[Any], *args: Any, **kwargs: Any) -> Any:
        """The wrapped callable applied to the input ``tensors``."""
        modules = self._modules
        func = modules["module"] if "module" in modules else self.__dict__["module"]
        if self.method is None and self._kwargs is None and not self.method_kwargs:
            return func(*tensors, *args, **kwargs)
        if self.method is not None:
            func = getattr(func, self.method)
        if self.method_kwargs:
            kwargs.update(self.method_kwargs)
        if self._kwargs is None:
            return func(*tensors, *args, **kwargs)
        return func(*args, **dict(zip(self._kwargs, tensors)), **kwargs)

    def _read(self, tensordict: TensorDictBase) -> list[Any]:
        """The module's inputs: the entries at ``in_keys`` (None where missing, unless
        ``strict``), non-tensor data as ``td[key]`` reads it (the object itself)."""
        if self.strict or self._get_kwargs:
            values = self._read_with_options(tensordict)
        else:
            get = tensordict.get
            values = [get(key, None) for key in self.in_keys]
        for value in values:
            if value.__class__ is not torch.Tensor and getattr(value, "_is_non_tensor", False):
                return [tensordict[key] if getattr(value, "_is_non_tensor", False) else value
                        for key, value in zip(self.in_keys, values)]
        return values

    def _read_with_options(self, tensordict: TensorDictBase) -> list[Any]:
        """The entries at ``in_keys``, read with ``get_kwargs``; a missing one raises if
        ``strict``."""
        get_kwargs = self._get_kwargs
        values = [tensordict.get(key, None, **get_kwargs) for key in self.in_keys]
        missing = [key for key, value in zip(self.in_keys, values) if value is None]
        if missing and self.strict:
            raise MissingKeyError(
                f"the in_keys {missing} of {type(self.module).__name__} were not found "
                f"in the TensorDict (strict=True); its keys are "
                f"{list(tensordict.keys(True, True))}"
            )
        return values

    def _write_to_tensordict(self, tensordict: TensorDictBase, tensors: Any,
                             tensordict_out: TensorDictBase | None = None,
                             out_keys: list[NestedKey] | None = None) -> TensorDictBase:
        """Write ``tensors`` (one value, a sequence, or a TensorDict read at the keys) at
        ``out_keys`` (default: all the out keys) of ``tensordict_out`` (default: chosen
        by ``inplace``); returns it."""
        fresh = tensordict_out is None and self.inplace is not True
        if tensordict_out is None:
            inplace = self.inplace
            if inplace is True:
                tensordict_out = tensordict
            elif inplace == "empty":
                tensordict_out = tensordict.empty()
            else:
                tensordict_out = TensorDict()  # no batch size, as upstream
        out_keys = self._out_keys if out_keys is None else out_keys
        if tensors.__class__ is torch.Tensor and len(out_keys) == 1:
            if out_keys[0] != "_":
                _set_entry(tensordict_out, out_keys[0], tensors)
            return tensordict_out
        values = _split_outputs(type(self.module).__name__, tensors, out_keys)
        # a failed write changes nothing, so the last key never needs undoing
        before = None if fresh or len(out_keys) < 2 else record(tensordict_out, out_keys[:-1])
        try:
            for key, value in zip(out_keys, values):
                if key != "_":
                    _set_entry(tensordict_out, key, value)
        except Exception:
            if before is not None:
                restore(tensordict_out, before)
            raise
        return tensordict_out

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            module = self.__dict__.get("_modules", {}).get("module")
            if module is None or name.startswith("__"):
                raise
            return getattr(module, name)

    def __repr__(self) -> str:
        return _module_repr(self, [("module", self.module), ("in_keys", self.in_keys),
                                   ("out_keys", self.out_keys)])


class TensorDictModuleWrapper(TensorDictModuleBase):
    """Wrap a TensorDict module; attributes not found here are looked up on it.

    >>> import torch
    >>> from tensordict.nn import TensorDictModule
    >>> inner = TensorDictModule(torch.nn.Linear(2, 3), in_keys=["x"], out_keys=["y"])
    >>> wrapper = TensorDictModuleWrapper(inner)
    >>> wrapper.in_keys, wrapper.module is inner.module
    (['x'], True)
    """

    def __init__(self, td_module: TensorDictModuleBase) -> None:
        super().__init__()
        self.td_module = td_module

    in_keys = property(lambda self: self.td_module.in_keys)  # type: ignore[assignment]

    @property
    def out_keys_source(self) -> list[NestedKey]:
        """The out keys of the wrapped module."""
        return self.td_module.out_keys

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name.startswith("__") or "td_module" not in self.__dict__.get("_modules", {}):
                raise
            return getattr(self._modules["td_module"], name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Call the wrapped module."""
        return self.td_module(*args, **kwargs)

    def __repr__(self) -> str:
        return _module_repr(self, [("td_module", self.td_module), ("in_keys", self.in_keys),
                                   ("out_keys", self.out_keys)])


class WrapModule(TensorDictModuleBase):
    """A TensorDict -> TensorDict function as a module (``inplace=True`` copies the
    result into the input TensorDict).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> m = WrapModule(lambda td: td.set("y", td["x"] + 1), in_keys=["x"], out_keys=["y"])
    >>> m(TensorDict(x=torch.zeros(2), batch_size=[2]))["y"]
    tensor([1., 1.])
    """

    def __init__(self, func: Callable[[TensorDictBase], TensorDictBase], *,
                 inplace: bool = False, in_keys: list[NestedKey] | None = None,
                 out_keys: list[NestedKey] | None = None) -> None:
        super().__init__()
        if not callable(func):
            raise TypeError(f"WrapModule needs a callable, got {type(func).__name__}")
        self.func = func
        self.inplace = inplace
        self.in_keys = in_keys or []
        self.out_keys = out_keys or []

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Apply the function."""
        out = self.func(tensordict)
        if self.inplace and out is not tensordict:
            return tensordict.update(out)
        return out


def as_tensordict_module(*, in_keys: NestedKey | list[NestedKey],
                         out_keys: NestedKey | list[NestedKey]) -> Callable[..., Any]:
    """Decorator turning a function of tensors into a :class:`TensorDictModule`.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> @as_tensordict_module(in_keys=["x"], out_keys=["y"])
    ... def add_one(x):
    ...     return x + 1
    >>> add_one(TensorDict(x=torch.zeros(2), batch_size=[2]))["y"]
    tensor([1., 1.])
    """

    def decorate(func: Callable[..., Any]) -> TensorDictModule:
        return TensorDictModule(func, in_keys=in_keys, out_keys=out_keys)

    return decorate


def _as_td_module(module: Any) -> nn.Module:
    """``module`` if it reads/writes keys, else a :class:`WrapModule` around the callable."""
    if TensorDictModuleBase.is_tdmodule_compatible(module):
        return module
    if not callable(module):
        raise TypeError(f"{module!r} is neither a TensorDict module nor callable")
    return WrapModule(module)

