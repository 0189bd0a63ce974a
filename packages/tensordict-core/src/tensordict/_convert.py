"""TensorDicts from and to plain Python containers: dicts, tuples, namedtuples,
dataclasses, NumPy arrays and pytrees.

Every ``from_*`` constructor takes the same batch options: ``batch_size`` (default
``[]``), or ``auto_batch_size=True`` for the longest leading shape the entries share
(``batch_dims`` caps its length), and ``device``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict.from_dict({"a": torch.zeros(3, 2), "n": {"b": torch.ones(3)}},
    ...                           auto_batch_size=True)
    >>> td.batch_size
    torch.Size([3])
    >>> td.to_namedtuple().n.b
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tensordict._collection import classes
from tensordict._nontensor import unwrap_non_tensor

_PYTREE_TYPE = "_pytree_type"


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _build(cls: type, entries: Mapping[str, Any], batch_size: Any, device: Any,
           batch_dims: int | None, auto_batch_size: bool, names: Any = None) -> Any:
    """A ``cls`` of ``entries`` with the batch options of the ``from_*`` constructors."""
    auto = auto_batch_size or (batch_dims is not None and batch_size is None)
    out = cls(entries, batch_size=None if auto else batch_size, device=device)
    if auto:
        out.auto_batch_size_(batch_dims)
    if names is not None:
        out.names = names
    return out


def _from_namedtuple(obj: Any) -> dict[str, Any]:
    return {name: _from_namedtuple(value) if _is_namedtuple(value) else value
            for name, value in zip(obj._fields, obj)}


def _from_tuple(obj: Sequence[Any]) -> dict[str, Any]:
    return {str(i): _from_tuple(value) if isinstance(value, (tuple, list)) else value
            for i, value in enumerate(obj)}


def _from_dataclass(obj: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        is_instance = dataclasses.is_dataclass(value) and not isinstance(value, type)
        out[field.name] = _from_dataclass(value) if is_instance else value
    return out


def _from_pytree(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        entries = {str(k): _from_pytree(v) for k, v in obj.items()}
    elif isinstance(obj, (list, tuple)):
        fields = obj._fields if _is_namedtuple(obj) else range(len(obj))
        entries = {str(k): _from_pytree(v) for k, v in zip(fields, obj)}
    else:
        return obj
    entries[_PYTREE_TYPE] = _PytreeType(type(obj))
    return entries


class _PytreeType:
    """The container type a ``from_pytree`` node came from (kept as non-tensor data)."""

    __slots__ = ("type",)

    def __init__(self, container: type) -> None:
        self.type = container

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _PytreeType) and other.type is self.type

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"{self.type.__name__}"


class ConvertMixin:
    """Conversions between TensorDicts and Python or NumPy containers."""

    __slots__ = ()

    @classmethod
    def from_dict(cls, input_dict: Mapping[str, Any], batch_size: Any = None,
                  device: Any = None, batch_dims: int | None = None,
                  auto_batch_size: bool = False, names: Sequence[str | None] | None = None
                  ) -> Any:
        """A TensorDict of a (nested) dict; nested dicts become sub-TensorDicts.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict.from_dict({"a": torch.zeros(2, 3), "b": {"c": torch.ones(2)}},
        ...                           batch_dims=1, names=["time"])
        >>> td.batch_size, td.names
        (torch.Size([2]), ['time'])
        """
        return _build(cls, input_dict, batch_size, device, batch_dims, auto_batch_size, names)

    @classmethod
    def from_namedtuple(cls, named_tuple: Any, *, auto_batch_size: bool = False,
                        batch_dims: int | None = None, device: Any = None,
                        batch_size: Any = None) -> Any:
        """A TensorDict of a (nested) namedtuple, keyed by field name.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> import collections
        >>> Pair = collections.namedtuple("Pair", ["x", "y"])
        >>> TensorDict.from_namedtuple(Pair(torch.zeros(2), Pair(1, 2)))["y", "x"]
        tensor(1)
        """
        return _build(cls, _from_namedtuple(named_tuple), batch_size, device, batch_dims,
                      auto_batch_size)

    @classmethod
    def from_tuple(cls, obj: Sequence[Any], *, auto_batch_size: bool = False,
                   batch_dims: int | None = None, device: Any = None,
                   batch_size: Any = None) -> Any:
        """A TensorDict of a (nested) tuple, keyed ``"0"``, ``"1"``...

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict.from_tuple((torch.zeros(2), (torch.ones(2),)))["1", "0"]
        tensor([1., 1.])
        """
        return _build(cls, _from_tuple(obj), batch_size, device, batch_dims, auto_batch_size)

    @classmethod
    def from_dataclass(cls, dataclass: Any, *, auto_batch_size: bool = False,
                       batch_dims: int | None = None, device: Any = None,
                       batch_size: Any = None) -> Any:
        """A TensorDict of the fields of a dataclass instance (nested ones too).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> import dataclasses
        >>> @dataclasses.dataclass
        ... class Obs:
        ...     pixels: torch.Tensor
        ...     step: int
        >>> TensorDict.from_dataclass(Obs(torch.zeros(4, 2), 3), auto_batch_size=True)
        TensorDict(batch_size=[], fields={pixels: f32[4,2], step: i64[]})
        """
        if not dataclasses.is_dataclass(dataclass) or isinstance(dataclass, type):
            raise TypeError(f"from_dataclass needs a dataclass instance, got {dataclass!r}")
        return _build(cls, _from_dataclass(dataclass), batch_size, device, batch_dims,
                      auto_batch_size)

    @classmethod
    def from_struct_array(cls, struct_array: np.ndarray, *, auto_batch_size: bool = False,
                          batch_dims: int | None = None, device: Any = None,
                          batch_size: Any = None) -> Any:
        """A TensorDict of the fields of a NumPy structured array (batch = its shape).

        >>> from tensordict import TensorDict
        >>> import numpy as np
        >>> arr = np.zeros(3, dtype=[("x", np.float32), ("y", np.int64, (2,))])
        >>> TensorDict.from_struct_array(arr)
        TensorDict(batch_size=[3], fields={x: f32[], y: i64[2]})
        """
        names = struct_array.dtype.names
        if names is None:
            raise TypeError("from_struct_array needs a structured array (with named fields)")
        entries = {name: torch.as_tensor(np.ascontiguousarray(struct_array[name]))
                   for name in names}
        if batch_size is None and not auto_batch_size and batch_dims is None:
            batch_size = struct_array.shape
        return _build(cls, entries, batch_size, device, batch_dims, auto_batch_size)

    @classmethod
    def from_pytree(cls, pytree: Any, *, batch_size: Any = None, auto_batch_size: bool = False,
                    batch_dims: int | None = None) -> Any:
        """A TensorDict of nested dicts, lists, tuples and namedtuples; ``to_pytree``
        gives the containers back (their types are kept under ``"_pytree_type"``).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> tree = {"a": torch.zeros(2), "b": [torch.ones(2), (torch.ones(1),)]}
        >>> td = TensorDict.from_pytree(tree)
        >>> td.to_pytree()["b"][1]
        (tensor([1.]),)
        """
        entries = _from_pytree(pytree)
        if not isinstance(entries, dict):
            raise TypeError(f"from_pytree needs a dict, list or tuple, got {type(pytree)}")
        return _build(cls, entries, batch_size, None, batch_dims, auto_batch_size)

    @classmethod
    def from_any(cls, obj: Any, *, auto_batch_size: bool = False,
                 batch_dims: int | None = None, device: Any = None,
                 batch_size: Any = None) -> Any:
        """A TensorDict of a TensorDict, dict, namedtuple, dataclass, tuple or list, or
        NumPy structured array.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict.from_any({"a": torch.zeros(3)}, auto_batch_size=True).batch_size
        torch.Size([3])
        """
        options = {"auto_batch_size": auto_batch_size, "batch_dims": batch_dims,
                   "device": device, "batch_size": batch_size}
        if isinstance(obj, classes.TensorDictBase):
            return obj
        if isinstance(obj, Mapping):
            return cls.from_dict(obj, **options)
        if _is_namedtuple(obj):
            return cls.from_namedtuple(obj, **options)
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return cls.from_dataclass(obj, **options)
        if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
            return cls.from_struct_array(obj, **options)
        if isinstance(obj, (tuple, list)):
            return cls.from_tuple(obj, **options)
        raise TypeError(f"cannot build a TensorDict from a {type(obj).__name__}")

    def to_namedtuple(self) -> Any:
        """The entries as (nested) namedtuples called ``GenericDict``.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict(a=torch.zeros(1), b={"c": 1}).to_namedtuple().b.c
        tensor(1)
        """
        keys = list(self._keys_str())
        values = []
        for key in keys:
            value = self._get_str(key)
            if _non_tensor(value):
                value = unwrap_non_tensor(value)
            elif isinstance(value, classes.TensorDictBase):
                value = value.to_namedtuple()
            values.append(value)
        return collections.namedtuple("GenericDict", keys, rename=True)(*values)

    def to_pytree(self) -> Any:
        """Nested containers of the leaves: those recorded by ``from_pytree``, dicts
        otherwise.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict(a=torch.zeros(1), b={"c": torch.ones(1)}).to_pytree()
        {'a': tensor([0.]), 'b': {'c': tensor([1.])}}
        """
        items = {}
        container: Any = dict
        for key in self._keys_str():
            value = self._get_str(key)
            if key == _PYTREE_TYPE and isinstance(getattr(value, "data", None), _PytreeType):
                container = value.data.type
            elif _non_tensor(value):
                items[key] = unwrap_non_tensor(value)
            elif isinstance(value, classes.TensorDictBase):
                items[key] = value.to_pytree()
            else:
                items[key] = value
        if issubclass(container, Mapping):
            return container(items)
        if issubclass(container, tuple) and hasattr(container, "_fields"):
            return container(**items)
        return container(items[str(i)] for i in range(len(items)))

    def numpy(self) -> dict[str, Any]:
        """A nested dict of NumPy arrays (non-tensor data as it is).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict(a=torch.zeros(2), s="text").numpy()
        {'a': array([0., 0.], dtype=float32), 's': 'text'}
        """
        out: dict[str, Any] = {}
        for key in self._keys_str():
            value = self._get_str(key)
            if isinstance(value, torch.Tensor):
                out[key] = value.detach().cpu().numpy()
            elif _non_tensor(value):
                out[key] = value.tolist() if hasattr(value, "_flat") else value.data
            else:
                out[key] = value.numpy()
        return out


def _non_tensor(value: Any) -> bool:
    return getattr(value, "_is_non_tensor", False)


def from_dict(input_dict: Mapping[str, Any], batch_size: Any = None, device: Any = None,
              batch_dims: int | None = None, auto_batch_size: bool = False,
              names: Sequence[str | None] | None = None) -> Any:
    """Alias of :meth:`TensorDict.from_dict`.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> import tensordict
    >>> tensordict.from_dict({"a": torch.zeros(2)}, batch_size=[2])
    TensorDict(batch_size=[2], fields={a: f32[]})
    """
    return classes.TensorDict.from_dict(input_dict, batch_size=batch_size, device=device,
                                        batch_dims=batch_dims,
                                        auto_batch_size=auto_batch_size, names=names)


def make_tensordict(input_dict: Mapping[str, Any] | None = None, batch_size: Any = None,
                    device: Any = None, auto_batch_size: bool | None = None,
                    **kwargs: Any) -> Any:
    """A TensorDict of a dict or of keyword arguments.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> import tensordict
    >>> tensordict.make_tensordict(a=torch.zeros(3), auto_batch_size=True).batch_size
    torch.Size([3])
    """
    if input_dict is not None and kwargs:
        raise TypeError("make_tensordict takes a dict or keyword arguments, not both")
    return from_dict(kwargs if input_dict is None else input_dict, batch_size=batch_size,
                     device=device, auto_batch_size=bool(auto_batch_size))
