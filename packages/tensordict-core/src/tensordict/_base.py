"""TensorDictBase: what every TensorDict-like collection shares.

A concrete collection (``TensorDict``, ``LazyStackedTensorDict``) provides a handful of
primitives: ``batch_size``/``device``/``names``, ``_get_str``, ``_set_str``, ``_del_str``,
``_keys_str``, ``_apply_nest`` (the one leaf-wise traversal), ``_index`` and
``_set_at_index``, and the lock (an ``_is_locked`` attribute and ``_propagate_lock``).
Everything else (the dict API, shape ops, math, device moves...) is written once on top
of them, in the mixins this class inherits: every shared method is an attribute of
``TensorDictBase`` itself, and the concrete classes add only what they do differently.

>>> from tensordict import TensorDict
>>> TensorDict.update_at_ is TensorDictBase.update_at_
True
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, TypeVar

import torch

from tensordict._collection import (  # noqa: F401  (re-exported for upstream's imports)
    NO_DEFAULT,
    TensorCollection,
    _CollectionMeta,
    classes,
    is_tensor_collection,
    is_tensorclass,
    register_class,
)
from tensordict._compare import CompareMixin
from tensordict._consolidate import ConsolidateMixin
from tensordict._convert import ConvertMixin
from tensordict._device import DeviceMixin
from tensordict._dict_api import DictMixin
from tensordict._functional import FunctionalMixin
from tensordict._leaf_combine import LeafCombineMixin
from tensordict._masked import MaskedOpsMixin
from tensordict._pointwise import PointwiseMixin
from tensordict._ragged import pad_nested_leaves
from tensordict._reductions import ReductionsMixin
from tensordict._serialization import SerializationMixin
from tensordict._shape_ops import ShapeOpsMixin
from tensordict._storage import StorageMixin
from tensordict._tensor_like import TensorLikeMixin
from tensordict._torch_function import TorchFunctionMixin
from tensordict._traverse import TraverseMixin

T = TypeVar("T", bound="TensorDictBase")

#: Classes whose instances are stored as they are (tensors and tensor collections).
ACCEPTED_CLASSES = (torch.Tensor, TensorCollection)

#: What can be written into a TensorDict as a value.
CompatibleType = torch.Tensor | TensorCollection


@register_class
class TensorDictBase(StorageMixin, DictMixin, TraverseMixin, DeviceMixin, CompareMixin,
                     FunctionalMixin, ShapeOpsMixin, MaskedOpsMixin, PointwiseMixin,
                     ReductionsMixin, TorchFunctionMixin, SerializationMixin, ConsolidateMixin,
                     ConvertMixin, TensorLikeMixin, LeafCombineMixin, TensorCollection,
                     MutableMapping):
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
        return classes.LazyStackedTensorDict.lazy_stack(items, dim, out=out, **kwargs)

    def to_lazystack(self, dim: int = 0) -> Any:
        """A lazy stack along ``dim`` of this collection's slices (views of its leaves).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> TensorDict(x=torch.zeros(3, 2), batch_size=[3, 2]).to_lazystack(1).stack_dim
        1
        """
        ndim = len(self.batch_size)
        if not -ndim <= dim < ndim:
            raise IndexError(f"Incompatible dim {dim} for tensordict with batch dims {ndim}.")
        return classes.LazyStackedTensorDict.lazy_stack(list(self.unbind(dim)), dim % ndim)

    def densify(self, layout: torch.layout = torch.strided) -> Any:
        """A copy in which every lazy stack is densified (entries of different shapes
        become nested tensors of ``layout``); other entries are kept as they are.

        >>> import torch
        >>> from tensordict import TensorDict, lazy_stack
        >>> stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(3))])
        >>> TensorDict(l=stack, batch_size=[2]).densify()["l", "a"].is_nested
        True
        """
        out = self.copy()
        for key in list(self._keys_str()):
            value = self._get_str(key)
            if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
                out._set_str(key, value.densify(layout), inplace=False, validated=True)
        return out

    def to_padded_tensor(self, padding: float = 0.0, mask_key: Any = None) -> Any:
        """A copy with every nested-tensor leaf padded with ``padding``; ragged batch dims
        (``-1``) take the padded sizes, and ``mask_key`` names the mask of the elements
        that are not padding (see :func:`tensordict._ragged.pad_nested_leaves`)."""
        return pad_nested_leaves(self, padding, mask_key)

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
        return iter(self.unbind(0))  # all rows at once, as upstream

    def __bool__(self) -> bool:
        raise RuntimeError(
            "Converting a tensordict to boolean value is not permitted: use "
            "`td.all()`, `td.any()` or `td.is_empty()`."
        )

    def __contains__(self, key: object) -> bool:
        if key.__class__ is str:
            return key in self._keys_str()
        if isinstance(key, tuple):
            return self._get_path(key, None) is not None
        raise RuntimeError(  # as upstream
            f"'in' needs a string or a tuple of strings (a key), got {key!r}"
        )
