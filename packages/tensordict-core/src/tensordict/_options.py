"""Global switches: build one, then apply it with ``.set()``, a ``with`` block or as a
decorator. Building a switch changes nothing.

* ``switch.set()`` changes the option for the rest of the program;
* ``with switch:`` changes it inside the block and restores the previous value after;
* ``@switch`` changes it while each call of the decorated function runs.

``lazy_legacy``, ``list_to_stack`` and ``capture_non_tensor_stack`` start unset (their
getters give the default, or None with ``allow_none=True``) unless the environment
variables ``LAZY_LEGACY_OP``, ``LIST_TO_STACK`` or ``CAPTURE_NONTENSOR_STACK`` give them
a value; applying a switch mirrors its value into that variable, so that subprocesses
inherit it.

Example:
    >>> import tensordict
    >>> switch = tensordict.set_lazy_legacy(True)
    >>> tensordict.lazy_legacy()
    False
    >>> with switch:
    ...     tensordict.lazy_legacy()
    True
    >>> switch.mode, tensordict.lazy_legacy()
    (True, False)
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

#: the default of each boolean option, and the environment variable mirroring it
_BOOL_OPTIONS: dict[str, tuple[bool, str]] = {
    "lazy_legacy": (False, "LAZY_LEGACY_OP"),
    "list_to_stack": (True, "LIST_TO_STACK"),
    "capture_non_tensor_stack": (False, "CAPTURE_NONTENSOR_STACK"),
}


def _from_env(variable: str) -> bool | None:
    value = os.environ.get(variable)
    if value is None:
        return None
    return value.strip().lower() not in ("0", "false", "no", "off", "")


_STATE: dict[str, Any] = {name: _from_env(env) for name, (_, env) in _BOOL_OPTIONS.items()}
_STATE["get_defaults_to_none"] = True
#: upstream's print options and their defaults (see ``set_printoptions``)
_PRINT_DEFAULTS: dict[str, Any] = {
    "show_batch_size": True, "show_device": True, "show_is_shared": True, "show_shape": True,
    "show_field_device": True, "show_dtype": True, "show_field_is_shared": True,
    "show_grad": False, "show_is_contiguous": False, "show_is_view": False,
    "show_storage_size": False, "plain": False, "sort_keys": "alphabetical", "compact": True,
    "html": True,
}
#: the options the compact layout shows; giving any other one selects the verbose layout
_COMPACT_OPTIONS = frozenset({"show_batch_size", "show_device", "show_dtype", "sort_keys",
                              "html", "compact"})
#: what ``verbose=False`` turns off
_QUIET = ("show_device", "show_is_shared", "show_field_device", "show_dtype",
          "show_field_is_shared")
_STATE["printoptions"] = dict(_PRINT_DEFAULTS)


class _Switch:
    """A value for one option of ``_STATE``, applied on ``set()``, in ``with`` or as a
    decorator (each call of the decorated function applies a fresh clone)."""

    _option: str

    def __init__(self, mode: bool) -> None:
        self.mode = mode

    def clone(self) -> Any:
        """A new switch with the same value (used by the decorator for each call)."""
        return type(self)(self.mode)

    def _value(self) -> Any:
        return bool(self.mode)

    def _write(self, value: Any) -> None:
        _STATE[self._option] = value
        env = _BOOL_OPTIONS.get(self._option)
        if env is not None:
            if value is None:
                os.environ.pop(env[1], None)
            else:
                os.environ[env[1]] = str(bool(value))

    def set(self) -> None:
        """Change the option for the rest of the program."""
        self._write(self._value())

    def __enter__(self) -> None:
        self.__dict__.setdefault("_previous", []).append(_STATE[self._option])
        self.set()

    def __exit__(self, exc_type: Any, exc_value: Any, traceback: Any) -> None:
        self._write(self._previous.pop())

    def __call__(self, orig_func: F) -> F:
        """Decorator use: the option holds while each call of ``orig_func`` runs."""

        @functools.wraps(orig_func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return orig_func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


def _bool_option(name: str, allow_none: bool) -> bool | None:
    value = _STATE[name]
    if value is None and not allow_none:
        return _BOOL_OPTIONS[name][0]
    return value


class set_lazy_legacy(_Switch):
    """Make shape ops and ``torch.stack`` of TensorDicts lazy, as before tensordict 0.5.

    >>> import torch, tensordict
    >>> from tensordict import TensorDict
    >>> tds = [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))]
    >>> with tensordict.set_lazy_legacy(True):
    ...     type(torch.stack(tds)).__name__
    'LazyStackedTensorDict'
    """

    _option = "lazy_legacy"

    def __init__(self, mode: bool) -> None:
        if mode:
            _warn_lazy_legacy(DeprecationWarning, stacklevel=3)
        super().__init__(mode)

    def clone(self) -> Any:
        twin = object.__new__(type(self))  # (warned once, when the switch was made)
        twin.mode = self.mode
        return twin


_LAZY_LEGACY_DEPRECATION = (
    "The legacy lazy mode, turned on with set_lazy_legacy(True) or LAZY_LEGACY_OP=1, is "
    "deprecated and will be removed in TensorDict 0.17. Shape operations such as unsqueeze "
    "and permute will then always return a tensordict, and torch.stack will stack densely: "
    "use lazy_stack to build a lazy stack.")


def _warn_lazy_legacy(category: type[Warning], stacklevel: int) -> None:
    """Upstream's warning that the legacy lazy mode is going away."""
    warnings.warn(_LAZY_LEGACY_DEPRECATION, category, stacklevel=stacklevel)


if _STATE["lazy_legacy"]:  # turned on by the environment
    _warn_lazy_legacy(FutureWarning, stacklevel=2)

def lazy_legacy(allow_none: bool = False) -> bool | None:
    """Whether ``torch.stack`` of TensorDicts gives a lazy stack (None if never set and
    ``allow_none``).

    >>> lazy_legacy()
    False
    """
    return _bool_option("lazy_legacy", allow_none)


class set_list_to_stack(_Switch):
    """Whether a list written to a batched key becomes a per-element stack.

    >>> import tensordict
    >>> from tensordict import TensorDict
    >>> with tensordict.set_list_to_stack(True):
    ...     TensorDict(s=["a", "b"], batch_size=[2])[1]["s"]
    'b'
    """

    _option = "list_to_stack"

def list_to_stack(allow_none: bool = False) -> bool | None:
    """Whether a list written to a batched key becomes a per-element stack.

    >>> list_to_stack()
    True
    """
    return _bool_option("list_to_stack", allow_none)


class set_capture_non_tensor_stack(_Switch):
    """Whether stacking equal non-tensor values keeps a single value.

    >>> import tensordict
    >>> with tensordict.set_capture_non_tensor_stack(True):
    ...     tensordict.capture_non_tensor_stack()
    True
    """

    _option = "capture_non_tensor_stack"

def capture_non_tensor_stack(allow_none: bool = False) -> bool | None:
    """Whether stacking equal non-tensor values keeps a single value.

    >>> capture_non_tensor_stack()
    False
    """
    return _bool_option("capture_non_tensor_stack", allow_none)


def set_get_defaults_to_none(set_to_none: bool = True) -> None:
    """Choose, right away, whether ``td.get(missing)`` returns None (True) or raises
    KeyError (False). A plain call: not a context manager.

    >>> from tensordict import TensorDict
    >>> set_get_defaults_to_none(False)
    >>> try:
    ...     TensorDict().get("x")
    ... except KeyError:
    ...     print("raised")
    raised
    >>> set_get_defaults_to_none(True)
    """
    _STATE["get_defaults_to_none"] = bool(set_to_none)


def get_defaults_to_none() -> bool:
    """Whether ``td.get(missing)`` returns None.

    >>> get_defaults_to_none()
    True
    """
    return _STATE["get_defaults_to_none"]


class set_printoptions(_Switch):
    """Choose what reprs show. Options not passed keep the value they have when the
    switch is applied.

    Args:
        verbose: False turns off ``show_device``, ``show_is_shared``,
            ``show_field_device``, ``show_dtype`` and ``show_field_is_shared`` (the
            options given override it).
        compact: the one-line layout (``fields={a: f32[3]}``) or the verbose one.
        show_batch_size: the collection's batch size (both layouts).
        show_device: the collection's device (both layouts).
        show_dtype: the leaves' dtypes (both layouts).
        sort_keys: ``"alphabetical"`` sorts the fields, any other value keeps their
            insertion order.
        html: accepted (the notebook layout).
        plain: adds the mean and std, or the min and max, of each leaf (verbose layout).

    The other options (``show_shape``, ``show_field_device``, ``show_field_is_shared``,
    ``show_is_shared``, ``show_grad``, ``show_is_contiguous``, ``show_is_view``,
    ``show_storage_size``) are details of the verbose layout: giving one of them, or
    ``plain``, without ``compact`` selects that layout.

    Raises:
        TypeError: an unknown option.

    >>> import torch, tensordict
    >>> td = tensordict.TensorDict(a=torch.zeros(2))
    >>> with tensordict.set_printoptions(compact=False):
    ...     print(td)
    TensorDict(
        fields={
            a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)},
        batch_size=torch.Size([]),
        device=None,
        is_shared=False)
    >>> with tensordict.set_printoptions(show_field_device=False, show_is_shared=False):
    ...     print(td)
    TensorDict(
        fields={
            a: Tensor(shape=torch.Size([2]), dtype=torch.float32, is_shared=False)},
        batch_size=torch.Size([]),
        device=None)
    """

    _option = "printoptions"

    def __init__(self, *, verbose: bool = True, **kwargs: Any) -> None:
        unknown = kwargs.keys() - _PRINT_DEFAULTS.keys()
        if unknown:
            raise TypeError(f"Unknown printoptions: {unknown}. Valid options: "
                            f"{sorted(_PRINT_DEFAULTS)}")
        self.verbose = verbose
        self._kwargs = kwargs

    def clone(self) -> set_printoptions:
        """A new switch with the same options."""
        return set_printoptions(verbose=self.verbose, **self._kwargs)

    def _value(self) -> dict[str, Any]:
        given = self._kwargs
        quiet = {} if self.verbose else dict.fromkeys(_QUIET, False)
        layout = {} if "compact" in given or given.keys() <= _COMPACT_OPTIONS else \
            {"compact": False}
        return {**_STATE["printoptions"], **quiet, **given, **layout}


def print_option(name: str) -> Any:
    """The current value of one print option (no copy made).

    >>> print_option("compact")
    True
    """
    return _STATE["printoptions"][name]


def get_printoptions() -> dict[str, Any]:
    """The current repr options.

    >>> get_printoptions()["compact"]
    True
    """
    return dict(_STATE["printoptions"])


class _BestAttemptInplace:
    """The type of :data:`BEST_ATTEMPT_INPLACE`: a marker with no truth value."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise NotImplementedError("BEST_ATTEMPT_INPLACE has no truth value: compare it "
                                  "with `is`")


#: ``inplace=`` marker: write in place where an entry exists, else add it.
BEST_ATTEMPT_INPLACE = _BestAttemptInplace()
