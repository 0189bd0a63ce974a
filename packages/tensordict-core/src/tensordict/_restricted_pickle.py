"""Unpickling restricted to data: rebuilding a pickle that holds only values, never code.

A pickle may name any importable callable and call it, so loading one from an untrusted
folder or peer could run anything. :func:`loads_data` resolves only the globals that plain
data needs: Python's builtin containers and scalars, ``collections``' dicts and deques,
tensors, parameters, ``torch.Size``/``device``/dtypes, and numpy arrays and scalars. Any
other global raises :class:`UnsafePickleError`, naming it, before anything is called.

A tensor's storage is itself a ``torch.save`` payload inside the pickle; it is read with
``torch.load(weights_only=True)``, torch's own restricted loader.

Example:
    >>> import pickle, torch
    >>> loads_data(pickle.dumps({"w": torch.ones(2), "steps": {3, 4}}))
    {'w': tensor([1., 1.]), 'steps': {3, 4}}
    >>> try:
    ...     loads_data(pickle.dumps(print))
    ... except UnsafePickleError as err:
    ...     err.name
    'builtins.print'
"""

from __future__ import annotations

import builtins
import collections
import importlib
import io
import pickle
from typing import Any

import torch
import torch._utils

__all__ = ["UnsafePickleError", "loads_data"]


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle names a global that is not plain data (``name``: its dotted path).

    >>> import pickle
    >>> try:
    ...     loads_data(pickle.dumps(pickle.Pickler))
    ... except UnsafePickleError as err:
    ...     print(err.name)
    _pickle.Pickler
    """

    def __init__(self, name: str) -> None:
        super().__init__(f"the pickle needs {name}, which is not plain data")
        self.name = name


def _load_storage(payload: bytes) -> Any:
    """A tensor storage (pickled as a ``torch.save`` payload), read by torch's restricted
    loader instead of the unrestricted one a plain ``pickle.loads`` would call."""
    return torch.load(io.BytesIO(payload), weights_only=True)


_BUILTINS = frozenset({"bool", "bytearray", "bytes", "complex", "dict", "float", "frozenset",
                       "int", "list", "set", "slice", "str", "tuple"})
_COLLECTIONS = frozenset({"Counter", "OrderedDict", "defaultdict", "deque"})
_TORCH_REBUILDERS = frozenset({"_rebuild_parameter", "_rebuild_tensor_v2"})
_NUMPY = {"numpy": frozenset({"dtype", "ndarray"}),
          "numpy._core.multiarray": frozenset({"_reconstruct", "scalar"}),
          "numpy.core.multiarray": frozenset({"_reconstruct", "scalar"})}


def _data_global(module: str, name: str) -> Any:
    """The global ``module.name`` if plain data needs it, else None."""
    if module == "builtins" and name in _BUILTINS:
        return getattr(builtins, name)
    if module == "collections" and name in _COLLECTIONS:
        return getattr(collections, name)
    if module == "torch":
        value = getattr(torch, name, None)
        if value is torch.Size or value is torch.device or isinstance(value, torch.dtype):
            return value
        return None
    if module == "torch._utils" and name in _TORCH_REBUILDERS:
        return getattr(torch._utils, name)
    if module == "torch.storage" and name == "_load_from_bytes":
        return _load_storage
    if name in _NUMPY.get(module, ()):
        return getattr(importlib.import_module(module), name)
    return None


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        value = _data_global(module, name)
        if value is None:
            raise UnsafePickleError(f"{module}.{name}")
        return value


def loads_data(payload: bytes) -> Any:
    """The value pickled in ``payload``, if it is plain data (see the module's docstring).

    Raises:
        UnsafePickleError: the pickle names any other global (nothing was called).
        pickle.UnpicklingError: the payload is not a valid pickle.

    >>> import pickle
    >>> loads_data(pickle.dumps({"lr": 0.1, "steps": (1, 2)}))
    {'lr': 0.1, 'steps': (1, 2)}
    >>> loads_data(pickle.dumps(pickle.Pickler))
    Traceback (most recent call last):
        ...
    tensordict._restricted_pickle.UnsafePickleError: ...
    """
    try:
        return _DataUnpickler(io.BytesIO(payload)).load()
    except (EOFError, IndexError, KeyError, TypeError, ValueError) as err:
        raise pickle.UnpicklingError(f"not a valid pickle: {err!r}") from None
