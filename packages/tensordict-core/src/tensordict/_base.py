"""TensorDictBase: what every tensor collection shares.

A concrete collection (``TensorDict``, ``LazyStackedTensorDict``) provides a handful of
primitives: ``batch_size``/``device``/``names``, ``_get_str``, ``_set_str``, ``_del_str``,
``_keys_str``, ``_apply_nest`` (the one leaf-wise traversal), ``_index`` and
``_set_at_index``, and the lock. Everything else (the dict API, shape ops, math, device
moves...) is written once on top of them, in the mixins this class combines.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, TypeVar

import torch

from tensordict import plugins
from tensordict._nested_key import NestedKey

T = TypeVar("T", bound="TensorDictBase")


class _NoDefault(enum.Enum):
    """Marker for "no default given" (``None`` is a valid default).

    An enum member, so ``torch.compile`` treats it as a constant.
    """

    NO_DEFAULT = 0

    def __repr__(self) -> str:
        return "NO_DEFAULT"

    def __bool__(self) -> bool:
        return False


NO_DEFAULT: Any = _NoDefault.NO_DEFAULT


class _CollectionMeta(abc.ABCMeta):
    """Finds class-level plugin methods (``TensorDict.load_memmap``) on lookup."""

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        function = plugins.method(name)
        if isinstance(function, classmethod):
            return function.__get__(None, cls)
        if function is not None:
            return function
        raise plugins.missing_method_error(cls.__name__, name)


class TensorCollection(metaclass=_CollectionMeta):
    """Common ancestor of TensorDicts, lazy stacks, non-tensor data and tensorclasses."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        # only called when regular lookup fails: plugin-provided methods live here
        if name.startswith("_"):
            raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")
        function = plugins.method(name)
        if function is None:
            raise plugins.missing_method_error(type(self).__name__, name)
        if isinstance(function, classmethod):
            return function.__get__(None, type(self))
        return function.__get__(self, type(self))


def is_tensor_collection(obj: Any) -> bool:
    """True for TensorDicts, lazy stacks, non-tensor data and tensorclasses (instances
    or classes).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> is_tensor_collection(TensorDict()), is_tensor_collection(torch.zeros(1))
    (True, False)
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return issubclass(cls, TensorCollection) or getattr(cls, "_is_tensorclass", False)


def is_tensorclass(obj: Any) -> bool:
    """True for tensorclasses and their instances (the ``@tensorclass`` plugin marks them).

    >>> is_tensorclass(TensorDictBase), is_tensorclass(object())
    (False, False)
    """
    cls = obj if isinstance(obj, type) else type(obj)
    return bool(getattr(cls, "_is_tensorclass", False))


class TensorDictBase(TensorCollection, MutableMapping):
    """Abstract base of every TensorDict-like container."""

    __slots__ = ()
    _is_non_tensor = False

    # -- primitives a concrete collection provides -------------------------------------
    @property
    @abc.abstractmethod
    def batch_size(self) -> torch.Size: ...

    @property
    @abc.abstractmethod
    def device(self) -> torch.device | None: ...

    @property
    @abc.abstractmethod
    def names(self) -> list[str | None]: ...

    @abc.abstractmethod
    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any: ...

    @abc.abstractmethod
    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> TensorDictBase: ...

    @abc.abstractmethod
    def _del_str(self, key: str) -> None: ...

    @abc.abstractmethod
    def _keys_str(self) -> Iterator[str]: ...

    @abc.abstractmethod
    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any: ...

    @abc.abstractmethod
    def _index(self, index: Any) -> Any: ...

    @abc.abstractmethod
    def _set_at_index(self, index: Any, value: Any) -> None: ...

    @property
    @abc.abstractmethod
    def is_locked(self) -> bool: ...

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """A value telling what kind of entry ``key`` is (node, tensor, non-tensor) without
        building it: the stored value (one part's for a lazy stack)."""
        return self._get_str(key, default)

    @classmethod
    def lazy_stack(cls, items: Any, dim: int = 0, *, out: Any = None, **kwargs: Any) -> Any:
        """Stack ``items`` lazily: a ``LazyStackedTensorDict`` that keeps and writes to them.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> a, b = TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(2))
        >>> TensorDict.lazy_stack([a, b])[1] is b
        True
        """
        from tensordict._lazy import LazyStackedTensorDict

        return LazyStackedTensorDict.lazy_stack(items, dim, out=out, **kwargs)

    # -- sizes -------------------------------------------------------------------------
    @property
    def shape(self) -> torch.Size:
        """Alias of :attr:`batch_size`."""
        return self.batch_size

    @shape.setter
    def shape(self, value: Any) -> None:
        self.batch_size = value

    @property
    def batch_dims(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    @property
    def ndim(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    def dim(self) -> int:
        """The number of batch dimensions."""
        return len(self.batch_size)

    ndimension = dim

    def numel(self) -> int:
        """The number of elements of the batch (product of ``batch_size``)."""
        return self.batch_size.numel()

    def size(self, dim: int | None = None) -> torch.Size | int:
        """The batch size, or its size along ``dim``."""
        return self.batch_size if dim is None else self.batch_size[dim]

    def __len__(self) -> int:
        """The size of the first batch dimension (0 for a 0-dim TensorDict)."""
        return self.batch_size[0] if self.batch_size else 0

    def __iter__(self) -> Iterator[Any]:
        """Iterate over the first batch dimension, like a tensor."""
        if not self.batch_size:
            raise TypeError("iteration over a 0-d tensordict. Use keys() to iterate keys.")
        return (self[i] for i in range(self.batch_size[0]))

    def __bool__(self) -> bool:
        raise RuntimeError(
            "Converting a tensordict to boolean value is not permitted: use "
            "`td.all()`, `td.any()` or `td.is_empty()`."
        )

    __hash__ = None  # type: ignore[assignment]

    def __contains__(self, key: object) -> bool:
        if key.__class__ is str:
            return key in self._keys_str()
        if isinstance(key, tuple):
            return self._get_path(key, None) is not None
        raise TypeError(
            f"'in' needs a string or a tuple of strings (a key), got {type(key).__name__}"
        )

    # Implemented by _td.py / the dict-api mixin; declared here for type checkers.
    def _get_path(self, key: NestedKey, default: Any) -> Any:  # pragma: no cover
        raise NotImplementedError
