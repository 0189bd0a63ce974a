"""The bottom of core: what any core module may import.

``TensorCollection`` (the common ancestor of TensorDicts, lazy stacks, non-tensor data
and tensorclasses), the ``NO_DEFAULT`` marker, ``is_tensor_collection`` /
``is_tensorclass``, and :data:`classes`, the registry of the core classes.

The mixins are written below the classes they end up in (``TensorDictBase`` inherits
them; ``TensorDict`` and ``LazyStackedTensorDict`` inherit ``TensorDictBase``), so they
never import those classes' modules: when they need one (to build a result, to test a
type) they read it from :data:`classes`, filled by :func:`register_class` when each
class is defined.

>>> from tensordict import TensorDict
>>> classes.TensorDict is TensorDict
True
"""

from __future__ import annotations

import abc
import enum
from typing import TYPE_CHECKING, Any, TypeVar

from tensordict import plugins

if TYPE_CHECKING:
    from tensordict._base import TensorDictBase
    from tensordict._lazy import LazyStackedTensorDict
    from tensordict._nontensor_stack import NonTensorStack
    from tensordict._sub_tensordict import _SubTensorDict
    from tensordict._td import TensorDict

C = TypeVar("C", bound=type)


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
    """The metaclass of tensor collections: where :mod:`tensordict.plugins` sets the
    class-level fallback (``TensorDict.from_h5`` of a plugin not loaded yet), while one
    is needed."""


class TensorCollection(metaclass=_CollectionMeta):
    """Common ancestor of TensorDicts, lazy stacks, non-tensor data and tensorclasses.

    Plugin methods are set on it as its own attributes (see
    :func:`tensordict.plugins.host_methods`).
    """

    __slots__ = ()
    #: set by the ``@tensorclass`` plugin on its classes (here: a hit for every other one)
    _is_tensorclass = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__getattr__" in vars(cls):  # its __getattr__ decides about plugin methods too
            plugins.add_forwarding_class(cls)


def is_tensor_collection(obj: Any) -> bool:
    """True for TensorDicts, lazy stacks, non-tensor data and tensorclasses (instances
    or classes).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> is_tensor_collection(TensorDict()), is_tensor_collection(torch.zeros(1))
    (True, False)
    """
    try:  # the hot path: an instance of a class seen before
        return _COLLECTION_TYPES[obj.__class__]
    except KeyError:
        pass
    if isinstance(obj, type):  # a class seen before
        known = _COLLECTION_TYPES.get(obj)
        if known is not None:
            return known
        cls = obj
    else:
        cls = obj.__class__
    answer = _is_collection_type(cls)
    if issubclass(cls, type):  # a metaclass is never a key: its instances, classes, are
        return answer          # asked about themselves
    if len(_COLLECTION_TYPES) > 4096:  # classes made on the fly: keep the cache bounded
        _COLLECTION_TYPES.clear()
    _COLLECTION_TYPES[cls] = answer
    return answer


def is_collection_class(cls: type) -> bool:
    """:func:`is_tensor_collection` of a class, read from the cache without first looking
    up the class of the class (key traversals ask ``is_leaf(cls)`` of every entry).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> is_collection_class(TensorDict), is_collection_class(torch.Tensor)
    (True, False)
    """
    known = _COLLECTION_TYPES.get(cls)
    return is_tensor_collection(cls) if known is None else known


def _is_collection_type(cls: type) -> bool:
    return issubclass(cls, TensorCollection) or bool(getattr(cls, "_is_tensorclass", False))


def _uncached_is_tensor_collection(obj: Any) -> bool:
    return _is_collection_type(obj if isinstance(obj, type) else type(obj))


# What torch.compile traces in place of is_tensor_collection: dynamo would guard on the
# cache's contents, and every type cached afterwards (eagerly) would recompile.
is_tensor_collection._torchdynamo_inline = _uncached_is_tensor_collection  # type: ignore[attr-defined]


#: type -> whether it is a tensor collection (types never change their answer)
_COLLECTION_TYPES: dict[type, bool] = {}


def is_sub_tensordict(value: Any) -> bool:
    """True for a value that holds entries (a TensorDict, a lazy stack, a tensorclass
    instance...), False for tensors, non-tensor data and anything else.

    >>> import torch
    >>> from tensordict import NonTensorData, TensorDict
    >>> is_sub_tensordict(TensorDict()), is_sub_tensordict(NonTensorData("a"))
    (True, False)
    """
    cls = value.__class__
    try:
        return _NODE_TYPES[cls]
    except KeyError:
        pass
    answer = (issubclass(cls, classes.TensorDictBase) and not getattr(cls, "_is_non_tensor", False)
              ) or bool(getattr(cls, "_is_tensorclass", False))
    if len(_NODE_TYPES) > 4096:
        _NODE_TYPES.clear()
    _NODE_TYPES[cls] = answer
    return answer


def acts_as_tensordict(value: Any) -> bool:
    """True for a TensorDictBase and for a tensorclass instance, which implements the same
    primitives (``isinstance(instance, TensorDictBase)`` is False, as upstream).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> acts_as_tensordict(TensorDict()), acts_as_tensordict(torch.zeros(1))
    (True, False)
    """
    cls = value.__class__
    try:
        return _TENSORDICT_LIKE[cls]
    except KeyError:
        pass
    answer = _uncached_acts_as_tensordict(value)
    if len(_TENSORDICT_LIKE) > 4096:
        _TENSORDICT_LIKE.clear()
    _TENSORDICT_LIKE[cls] = answer
    return answer


def _uncached_acts_as_tensordict(value: Any) -> bool:
    return isinstance(value, classes.TensorDictBase) or \
        bool(getattr(value.__class__, "_is_tensorclass", False))


# traced uncached, as is_tensor_collection (see there)
acts_as_tensordict._torchdynamo_inline = _uncached_acts_as_tensordict  # type: ignore[attr-defined]

#: type -> whether its instances act as TensorDicts (types never change their answer)
_TENSORDICT_LIKE: dict[type, bool] = {}


#: type -> whether its instances are sub-TensorDicts
_NODE_TYPES: dict[type, bool] = {}


def is_tensorclass(obj: Any) -> bool:
    """True for tensorclasses and their instances (the ``@tensorclass`` plugin marks them).

    >>> is_tensorclass(TensorCollection), is_tensorclass(object())
    (False, False)
    """
    return bool(getattr(obj if isinstance(obj, type) else obj.__class__, "_is_tensorclass",
                        False))


def is_non_tensor_class(cls: type) -> bool:
    """True for the classes of non-tensor data (NonTensorData, NonTensorStack).

    >>> from tensordict import NonTensorData
    >>> is_non_tensor_class(NonTensorData), is_non_tensor_class(TensorCollection)
    (True, False)
    """
    return getattr(cls, "_is_non_tensor", False)


class _Classes:
    """The core classes by name, each set by :func:`register_class` where it is defined."""

    __slots__ = ("TensorDictBase", "TensorDict", "LazyStackedTensorDict", "NonTensorStack",
                 "_SubTensorDict")

    TensorDictBase: type[TensorDictBase]
    TensorDict: type[TensorDict]
    LazyStackedTensorDict: type[LazyStackedTensorDict]
    NonTensorStack: type[NonTensorStack]
    _SubTensorDict: type[_SubTensorDict]


#: ``classes.TensorDict``, ``classes.LazyStackedTensorDict``... for the modules below them.
classes = _Classes()


def register_class(cls: C) -> C:
    """Class decorator: publish a core class as ``classes.<its name>`` (one of the
    names above, each registered once, by the module defining the class).

    >>> from tensordict import LazyStackedTensorDict
    >>> register_class(LazyStackedTensorDict) is classes.LazyStackedTensorDict
    True
    """
    setattr(classes, cls.__name__, cls)
    return cls
