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
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tensordict import plugins
from tensordict._collection import TensorCollection, acts_as_tensordict, classes
from tensordict._nontensor import NonTensorData, unwrap_non_tensor

_PYTREE_TYPE = "_pytree_type"
_Tensor = torch.Tensor


def _is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def _is_dataclass_instance(obj: Any) -> bool:
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


def _is_data_frame(obj: Any) -> bool:
    """Whether ``obj`` is a pandas DataFrame (told without importing pandas)."""
    return any(base.__name__ == "DataFrame" and base.__module__.startswith("pandas")
               for base in type(obj).__mro__)


_IGNORED_BATCH_DIMS = (
    "{name} ignores batch_dims={batch_dims} without auto_batch_size=True. Starting with "
    "TensorDict 0.17, the default will change to turning auto_batch_size on when "
    "batch_dims is given, as from_dict does. {advice}"
)


def _drop_batch_dims(name: str, batch_dims: int | None, auto_batch_size: bool,
                     batch_size: Any) -> int | None:
    """``batch_dims`` if ``auto_batch_size`` uses it; else ``None``, with a FutureWarning."""
    if batch_dims is None or auto_batch_size:
        return batch_dims
    advice = ("Drop batch_dims to keep today's result." if batch_size is not None else
              "Pass auto_batch_size=True to get that result now, or drop batch_dims.")
    warnings.warn(_IGNORED_BATCH_DIMS.format(name=name, batch_dims=batch_dims, advice=advice),
                  FutureWarning, stacklevel=3)
    return None


def _build(cls: type, entries: Mapping[str, Any], batch_size: Any, device: Any,
           batch_dims: int | None, auto_batch_size: bool, names: Any = None) -> Any:
    """A ``cls`` of ``entries`` with the batch options of the ``from_*`` constructors: an
    explicit ``batch_size`` wins over ``auto_batch_size``."""
    auto = batch_size is None and (auto_batch_size or batch_dims is not None)
    out = cls(entries, batch_size=None if auto else batch_size, device=device)
    if auto:
        out.auto_batch_size_(batch_dims)
    if names is not None:
        out.names = names
    return out


_NUMBERS = (bool, int, float)


def _number_leaves(obj: list[Any]) -> set[type] | None:
    """The classes of the leaves of a rectangular nested list of numbers, else ``None``."""
    if not obj or obj[0].__class__ is not list:
        kinds = {value.__class__ for value in obj}
        return kinds if kinds <= set(_NUMBERS) else None
    kinds: set[type] = set()
    for row in obj:
        if row.__class__ is not list or len(row) != len(obj[0]):
            return None
        inner = _number_leaves(row)
        if inner is None:
            return None
        kinds |= inner
    return kinds


def _from_list(obj: list[Any]) -> Any:
    """A tensor of a (nested) list of numbers of one type, else a NonTensorStack."""
    kinds = _number_leaves(obj)
    if kinds is not None and len(kinds) <= 1:
        return torch.tensor(obj)
    return classes.NonTensorStack(*obj)


def _value(obj: Any) -> Any:
    """One entry as the ``from_*`` constructors store it: containers become (nested)
    dicts, lists tensors or NonTensorStacks, structured arrays TensorDicts."""
    if obj.__class__ is dict:  # (a plain tensor, the common entry, is taken as it is)
        return {key: value if value.__class__ is _Tensor else _value(value)
                for key, value in obj.items()}
    if obj.__class__ is _Tensor or isinstance(obj, (_Tensor, TensorCollection)):
        return obj
    if isinstance(obj, Mapping):
        return {key: _value(value) for key, value in obj.items()}
    if isinstance(obj, tuple):
        keys = obj._fields if _is_namedtuple(obj) else map(str, range(len(obj)))
        return {key: _value(value) for key, value in zip(keys, obj)}
    if obj.__class__ is list:
        return _from_list(obj)
    if _is_dataclass_instance(obj):
        return {field.name: _value(getattr(obj, field.name))
                for field in dataclasses.fields(obj)}
    if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
        return classes.TensorDict.from_struct_array(obj)
    return obj


def _struct_field(array: np.ndarray) -> Any:
    """One field of a structured array: a tensor sharing its memory where torch can view
    it (a copy otherwise), a TensorDict for a nested record, non-tensor data for text."""
    if array.dtype.names is not None:
        return classes.TensorDict.from_struct_array(array)
    if array.dtype.kind not in "biufc":
        return NonTensorData(array, batch_size=array.shape)
    try:
        return torch.from_numpy(array)
    except (TypeError, ValueError):  # strides that are not a multiple of the item size
        return torch.from_numpy(np.ascontiguousarray(array))


def _struct_dtype(td: Any, batch_dims: int) -> list[tuple[Any, ...]]:
    """The structured dtype of the entries of ``td`` past its first ``batch_dims`` dims."""
    fields: list[tuple[Any, ...]] = []
    for key in td._keys_str():
        value = td._get_str(key)
        if isinstance(value, torch.Tensor):
            fields.append((key, _numpy_dtype(value.dtype), tuple(value.shape[batch_dims:])))
        elif _non_tensor(value):
            width = max([10, *(len(str(item)) for item in _texts(value))])
            fields.append((key, f"U{width}"))
        else:
            fields.append((key, _struct_dtype(value, batch_dims)))
    return fields


_NUMPY_DTYPES: dict[torch.dtype, np.dtype] = {}


def _numpy_dtype(dtype: torch.dtype) -> np.dtype:
    """The NumPy dtype of a torch dtype (TypeError for one NumPy lacks, as bfloat16)."""
    out = _NUMPY_DTYPES.get(dtype)
    if out is None:
        out = _NUMPY_DTYPES[dtype] = torch.empty((), dtype=dtype).numpy().dtype
    return out


def _texts(value: Any) -> list[Any]:
    return value.tolist() if hasattr(value, "_flat") else [value.data]


def _fill_struct(out: np.ndarray, td: Any) -> None:
    for key in td._keys_str():
        value = td._get_str(key)
        if isinstance(value, torch.Tensor):
            out[key] = value.detach().cpu().numpy()
        elif _non_tensor(value):
            out[key] = np.asarray(value.tolist() if hasattr(value, "_flat") else value.data)
        else:
            _fill_struct(out[key], value)


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
        """A TensorDict of a (nested) dict; nested dicts become sub-TensorDicts, and the
        values are converted as :meth:`from_any` does. ``batch_dims`` alone turns
        ``auto_batch_size`` on.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict.from_dict({"a": torch.zeros(2, 3), "b": {"c": torch.ones(2)}},
        ...                           batch_dims=1, names=["time"])
        >>> td.batch_size, td.names
        (torch.Size([2]), ['time'])
        """
        return _build(cls, _value(input_dict), batch_size, device, batch_dims,
                      auto_batch_size, names)

    @classmethod
    def from_namedtuple(cls, named_tuple: Any, *, auto_batch_size: bool = False,
                        batch_dims: int | None = None, device: Any = None,
                        batch_size: Any = None) -> Any:
        """A TensorDict of a (nested) namedtuple, keyed by field name; the fields are
        converted as :meth:`from_any` does.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> import collections
        >>> Pair = collections.namedtuple("Pair", ["x", "y"])
        >>> TensorDict.from_namedtuple(Pair(torch.zeros(2), Pair(1, 2)))["y", "x"]
        tensor(1)
        """
        batch_dims = batch_dims if auto_batch_size else None
        return _build(cls, _value(named_tuple), batch_size, device, batch_dims,
                      auto_batch_size)

    @classmethod
    def from_tuple(cls, obj: Sequence[Any], *, auto_batch_size: bool = False,
                   batch_dims: int | None = None, device: Any = None,
                   batch_size: Any = None) -> Any:
        """A TensorDict of a (nested) tuple, keyed ``"0"``, ``"1"``...; the elements are
        converted as :meth:`from_any` does.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict.from_tuple((torch.zeros(2), (torch.ones(2),)))["1", "0"]
        tensor([1., 1.])
        """
        batch_dims = _drop_batch_dims("from_tuple", batch_dims, auto_batch_size, batch_size)
        entries = {str(i): _value(value) for i, value in enumerate(obj)}
        return _build(cls, entries, batch_size, device, batch_dims, auto_batch_size)

    @classmethod
    def from_dataclass(cls, dataclass: Any, *, dest_cls: type | None = None,
                       auto_batch_size: bool = False, batch_dims: int | None = None,
                       as_tensorclass: bool = False, device: Any = None,
                       batch_size: Any = None) -> Any:
        """A TensorDict of the fields of a dataclass instance (nested ones too); with
        ``as_tensorclass`` (and the tensorclass package), an instance of the tensorclass
        ``dest_cls``, or of a new one made from the dataclass (``<name>_tc``).

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
        if as_tensorclass:  # the tensorclass package's conversion
            return plugins.top_level_name("from_dataclass")(
                dataclass, dest_cls=dest_cls, auto_batch_size=auto_batch_size,
                batch_dims=batch_dims, batch_size=batch_size, device=device)
        if not _is_dataclass_instance(dataclass):
            raise TypeError(f"from_dataclass needs a dataclass instance, got {dataclass!r}")
        return _build(cls, _value(dataclass), batch_size, device, batch_dims,
                      auto_batch_size)

    @classmethod
    def from_struct_array(cls, struct_array: np.ndarray, *, auto_batch_size: bool = False,
                          batch_dims: int | None = None, device: Any = None,
                          batch_size: Any = None) -> Any:
        """A TensorDict of the fields of a NumPy structured array (batch = its shape).

        The tensors share memory with the array where torch can view its fields; a
        nested record becomes a sub-TensorDict and a text field non-tensor data.

        >>> from tensordict import TensorDict
        >>> import numpy as np
        >>> arr = np.zeros(3, dtype=[("x", np.float32), ("y", np.int64, (2,))])
        >>> TensorDict.from_struct_array(arr)
        TensorDict(batch_size=[3], fields={x: f32[], y: i64[2]})
        """
        names = struct_array.dtype.names
        if names is None:
            raise TypeError("from_struct_array needs a structured array (with named fields)")
        if batch_size is not None and auto_batch_size:
            raise TypeError("Conflicting batch sizes in from_struct_array: batch_size and "
                            "auto_batch_size cannot be both specified.")
        batch_dims = _drop_batch_dims("from_struct_array", batch_dims, auto_batch_size,
                                      batch_size)
        entries = {name: _struct_field(struct_array[name]) for name in names}
        if batch_size is None and not auto_batch_size:
            batch_size = struct_array.shape
        return _build(cls, entries, batch_size, device, batch_dims, auto_batch_size)

    @classmethod
    def from_pytree(cls, pytree: Any, *, batch_size: Any = None, auto_batch_size: bool = False,
                    batch_dims: int | None = None) -> Any:
        """A TensorDict of nested dicts, lists, tuples and namedtuples; ``to_pytree``
        gives the containers back (their types are kept under ``"_pytree_type"``). A
        leaf that is no container is returned as it is.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> tree = {"a": torch.zeros(2), "b": [torch.ones(2), (torch.ones(1),)]}
        >>> td = TensorDict.from_pytree(tree)
        >>> td.to_pytree()["b"][1]
        (tensor([1.]),)
        """
        entries = _from_pytree(pytree)
        if not isinstance(entries, dict):
            return pytree
        batch_dims = _drop_batch_dims("from_pytree", batch_dims, auto_batch_size, batch_size)
        return _build(cls, entries, batch_size, None, batch_dims, auto_batch_size)

    @classmethod
    def from_any(cls, obj: Any, *, auto_batch_size: bool = False,
                 batch_dims: int | None = None, device: Any = None,
                 batch_size: Any = None) -> Any:
        """Convert ``obj`` recursively: a dict, namedtuple, dataclass, tuple or NumPy
        structured array becomes a TensorDict, a list a tensor (numbers of one type) or a
        NonTensorStack, a pandas DataFrame what :meth:`from_pandas` gives (it needs
        tensordict-tabular); a tensor, a tensor collection or anything else is returned as
        it is.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict.from_any({"a": torch.zeros(3)}, auto_batch_size=True).batch_size
        torch.Size([3])
        >>> TensorDict.from_any([1, 2])
        tensor([1, 2])
        """
        options = {"auto_batch_size": auto_batch_size, "device": device,
                   "batch_size": batch_size}
        if isinstance(obj, (torch.Tensor, TensorCollection)):
            return obj
        if isinstance(obj, Mapping):
            dims = _drop_batch_dims("from_any", batch_dims, auto_batch_size, batch_size)
            return cls.from_dict(obj, batch_dims=dims, **options)
        if _is_namedtuple(obj):
            return cls.from_namedtuple(obj, batch_dims=batch_dims, **options)
        if _is_dataclass_instance(obj):
            return cls.from_dataclass(obj, batch_dims=batch_dims, **options)
        if isinstance(obj, np.ndarray) and obj.dtype.names is not None:
            return cls.from_struct_array(obj, batch_dims=batch_dims, **options)
        if isinstance(obj, tuple):
            return cls.from_tuple(obj, batch_dims=batch_dims, **options)
        if obj.__class__ is list:
            return _from_list(obj)
        if _is_data_frame(obj):  # through from_pandas (tensordict-tabular)
            return cls.from_pandas(obj, batch_dims=batch_dims, **options)
        return obj

    def to_struct_array(self) -> np.ndarray:
        """A NumPy structured array of the entries, shaped like the batch (a copy).

        Nested TensorDicts become nested records, the feature dims of a tensor the shape
        of its field, and text ``"U"`` fields of at least 10 characters;
        :meth:`from_struct_array` converts back.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(a=torch.tensor([1, 2]), n=TensorDict(b=torch.zeros(2, 3),
        ...                 batch_size=[2]), batch_size=[2])
        >>> td.to_struct_array().dtype
        dtype([('a', '<i8'), ('n', [('b', '<f4', (3,))])])
        >>> TensorDict.from_struct_array(td.to_struct_array())
        TensorDict(batch_size=[2], fields={a: i64[], n: {b: f32[3]}})
        """
        if not any(True for _ in self._keys_str()):
            raise ValueError("to_struct_array needs a TensorDict with at least one entry")
        out = np.empty(tuple(self.batch_size), dtype=_struct_dtype(self, self.batch_dims))
        _fill_struct(out, self)
        return out

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
            elif acts_as_tensordict(value):
                value = value.to_namedtuple()
            values.append(value)
        return collections.namedtuple("GenericDict", keys, rename=True)(*values)

    def to_pytree(self) -> Any:
        """The pytree that ``from_pytree`` converted to this collection (the containers
        its ``"_pytree_type"`` entries recorded); this collection itself if it has no such
        entry, as a nested one without it stays a collection in the pytree.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict.from_pytree({"a": [torch.zeros(1)], "b": torch.ones(1)}).to_pytree()
        {'a': [tensor([0.])], 'b': tensor([1.])}
        >>> td = TensorDict(a=torch.zeros(1))
        >>> td.to_pytree() is td
        True
        """
        recorded = self._get_str(_PYTREE_TYPE, None)
        if not isinstance(getattr(recorded, "data", None), _PytreeType):
            return self
        container: Any = recorded.data.type
        items = {}
        for key in self._keys_str():
            if key == _PYTREE_TYPE:
                continue
            value = self._get_str(key)
            if _non_tensor(value):
                items[key] = unwrap_non_tensor(value)
            elif acts_as_tensordict(value):
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


def from_any(obj: Any, *, auto_batch_size: bool = False, batch_dims: int | None = None,
             device: Any = None, batch_size: Any = None) -> Any:
    """Alias of :meth:`TensorDict.from_any`.

    >>> import torch
    >>> import tensordict
    >>> tensordict.from_any({"obs": torch.zeros(3, 4), "pair": (torch.zeros(3), 1)})
    TensorDict(batch_size=[], fields={obs: f32[3,4], pair: {0: f32[3], 1: i64[]}})
    """
    return classes.TensorDict.from_any(obj, auto_batch_size=auto_batch_size,
                                       batch_dims=batch_dims, device=device,
                                       batch_size=batch_size)


def from_namedtuple(named_tuple: Any, *, auto_batch_size: bool = False,
                    batch_dims: int | None = None, device: Any = None,
                    batch_size: Any = None) -> Any:
    """Alias of :meth:`TensorDict.from_namedtuple`.

    >>> import collections, torch
    >>> import tensordict
    >>> Pair = collections.namedtuple("Pair", ["x", "y"])
    >>> tensordict.from_namedtuple(Pair(torch.zeros(2), 1))
    TensorDict(batch_size=[], fields={x: f32[2], y: i64[]})
    """
    return classes.TensorDict.from_namedtuple(named_tuple, auto_batch_size=auto_batch_size,
                                              batch_dims=batch_dims, device=device,
                                              batch_size=batch_size)


def from_tuple(obj: Sequence[Any], *, auto_batch_size: bool = False,
               batch_dims: int | None = None, device: Any = None,
               batch_size: Any = None) -> Any:
    """Alias of :meth:`TensorDict.from_tuple`.

    >>> import torch
    >>> import tensordict
    >>> tensordict.from_tuple((torch.zeros(2), [1, 2]))
    TensorDict(batch_size=[], fields={0: f32[2], 1: i64[2]})
    """
    return classes.TensorDict.from_tuple(obj, auto_batch_size=auto_batch_size,
                                         batch_dims=batch_dims, device=device,
                                         batch_size=batch_size)


def from_pytree(pytree: Any, *, batch_size: Any = None, auto_batch_size: bool = False,
                batch_dims: int | None = None) -> Any:
    """Alias of :meth:`TensorDict.from_pytree`.

    >>> import torch
    >>> import tensordict
    >>> tensordict.from_pytree([torch.zeros(2)]).to_pytree()
    [tensor([0., 0.])]
    """
    return classes.TensorDict.from_pytree(pytree, batch_size=batch_size,
                                          auto_batch_size=auto_batch_size,
                                          batch_dims=batch_dims)


def from_struct_array(struct_array: np.ndarray, *, auto_batch_size: bool = False,
                      batch_dims: int | None = None, device: Any = None,
                      batch_size: Any = None) -> Any:
    """Alias of :meth:`TensorDict.from_struct_array`.

    >>> import numpy as np
    >>> import tensordict
    >>> tensordict.from_struct_array(np.zeros(2, dtype=[("x", np.float32)]))
    TensorDict(batch_size=[2], fields={x: f32[]})
    """
    return classes.TensorDict.from_struct_array(struct_array, auto_batch_size=auto_batch_size,
                                                batch_dims=batch_dims, device=device,
                                                batch_size=batch_size)


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
