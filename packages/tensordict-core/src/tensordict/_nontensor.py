"""Non-tensor leaves: strings, numbers and objects that ride along with the tensors.

``NonTensorData`` holds one Python object for a whole batch; ``NonTensorStack`` holds one
object per batch element. Both follow every shape op and index of their TensorDict.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2), batch_size=[2])
    >>> td["s"] = "a string!"
    >>> td["tags"] = ["x", "y"]
    >>> td["s"], td["tags"], td[1]["tags"]
    ('a string!', LinkedList(['x', 'y']), 'y')
"""

from __future__ import annotations

import copy
import dataclasses
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import TensorCollection, classes
from tensordict._deprecation import deprecated_fields
from tensordict._metadata import LOCKED_BY_PARENT
from tensordict._shape_ops import ShapeOpsMixin, _shape_args, batch_dim
from tensordict._shapes import as_device, as_size, indexed_batch_size

_EXPAND_WARNING = (
    "Expanding a NonTensorData to a shape that torch.Tensor.expand rejects does not raise "
    "today. Starting with TensorDict 0.17, the default will change to raising a RuntimeError, "
    "as TensorDict.expand does.")

#: What ``torch.stack`` / ``torch.cat`` of non-tensor data run (they give a NonTensorStack):
#: filled by ``_nontensor_stack``, where the handlers are written.
NON_TENSOR_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}


class LinkedList(list):
    """The nested lists ``td[key]`` reads a NonTensorStack as (``tolist()`` gives plain
    lists, as upstream)."""

    def __repr__(self) -> str:
        return f"LinkedList({list.__repr__(self)})"


@dataclasses.dataclass
class _NonTensorFields:
    """The dataclass fields of :class:`NonTensorData`, as upstream's tensorclass declares
    them: ``dataclasses.fields(data)`` reads them."""

    data: Any
    _metadata: dict | None = None
    _is_non_tensor: bool = True


class NonTensorDataBase(TensorCollection):
    """Base of the non-tensor entries that hold one Python object for a whole batch:
    :class:`NonTensorData` and :class:`MetaData`.

    >>> [isinstance(entry, NonTensorDataBase) for entry in (NonTensorData(1), MetaData(1))]
    [True, True]
    """

    __slots__ = ()
    _is_non_tensor = True


def _picks_elements(fn: Callable[[torch.Tensor], torch.Tensor]) -> bool:
    """Whether ``fn`` is an index holding a tensor (a mask or an index tensor): its
    result copies the elements it picks, possibly some twice, never a view."""
    index = getattr(fn, "index", None)
    return any(isinstance(part, torch.Tensor)
               for part in (index if index.__class__ is tuple else (index,)))


class NonTensorData(NonTensorDataBase):
    """One Python object shared by every element of a batch (a ``NonTensorData`` given
    as ``data`` is unwrapped).

    >>> data = NonTensorData("hello", batch_size=[2])
    >>> data.data, data.tolist(), data[0].batch_size
    ('hello', ['hello', 'hello'], torch.Size([]))
    """

    __slots__ = ("_cell", "_metadata", "_batch_size", "_device", "_names", "_is_locked")
    __dataclass_fields__ = _NonTensorFields.__dataclass_fields__
    __dataclass_params__ = _NonTensorFields.__dataclass_params__  # type: ignore[attr-defined]
    __match_args__ = _NonTensorFields.__match_args__
    fields = classmethod(deprecated_fields)
    #: Whether new leading dims (``unsqueeze``, ``expand``) give a NonTensorStack.
    _stacks = True

    def __init__(
        self,
        data: Any,
        _metadata: Any = None,
        _is_non_tensor: bool = True,
        *,
        batch_size: Sequence[int] | torch.Size | None = None,
        device: Any = None,
        names: Sequence[str | None] | None = None,
    ) -> None:
        self._cell = [data.data if isinstance(data, NonTensorData) else data]
        self._metadata = _metadata
        self._batch_size = as_size(batch_size)
        self._device = as_device(device)
        self._names = None if names is None else tuple(names)
        self._is_locked = False

    @property
    def data(self) -> Any:
        """The object, shared with the views of this entry (``td[:]``, ``td.unsqueeze``,
        ``td.permute``...): assigning it writes them all."""
        return self._cell[0]

    @data.setter
    def data(self, value: Any) -> None:
        self._cell[0] = value

    @property  # type: ignore[override]
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        """What ``vars(data)`` gives: a new dict laid out as upstream's instance
        attributes (the batch as an empty TensorDict, the fields in ``_non_tensordict``).

        >>> vars(NonTensorData("hi"))["_non_tensordict"]
        {'data': 'hi', '_metadata': None, '_is_non_tensor': True}
        """
        return {"_tensordict": classes.TensorDict._from_entries(
                    {}, self._batch_size, self._device, self._names),
                "_non_tensordict": {"data": self.data, "_metadata": self._metadata,
                                    "_is_non_tensor": True},
                "_is_initialized": True}

    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Sequence[int]) -> None:
        """Any batch size: the one object stands for every element."""
        self._batch_size = as_size(value)
        if self._names is not None and len(self._names) != len(self._batch_size):
            self._names = None

    shape = batch_size

    @property
    def device(self) -> torch.device | None:
        return self._device

    @property
    def names(self) -> list[str | None]:
        return list(self._names) if self._names else [None] * len(self._batch_size)

    @names.setter
    def names(self, value: Sequence[str | None] | None) -> None:
        if value is not None and len(value) != len(self._batch_size):
            raise ValueError(f"{len(value)} names {list(value)} given for a batch size of "
                             f"{len(self._batch_size)} dims")
        self._names = tuple(value) if value is not None and any(value) else None

    @property
    def dtype(self) -> None:
        """None: a Python object has no tensor dtype (as upstream, also for a tensor).

        >>> NonTensorData("a").dtype is None
        True
        """
        return None

    @property
    def ndim(self) -> int:
        """The number of batch dims.

        >>> NonTensorData("a", batch_size=[3]).ndim
        1
        """
        return len(self._batch_size)

    def numel(self) -> int:
        return self._batch_size.numel()

    # -- the object as the entry "data", and the lock ----------------------------------------
    def get(self, key: Any, default: Any = None) -> Any:
        """The object for ``key`` ``"data"``, else ``default`` (as a tensorclass field).

        >>> NonTensorData("a").get("data"), NonTensorData("a").get("other", 0)
        ('a', 0)
        """
        return self.data if key == "data" else default

    def set(self, key: Any, item: Any, *args: Any, **kwargs: Any) -> NonTensorData:
        """Replace the object (``key`` must be ``"data"``); returns self."""
        if key != "data":
            raise AttributeError(f"Cannot set the attribute {key!r}: {type(self).__name__} "
                                 "holds its object under 'data' only")
        if self._is_locked:
            raise errors.locked(key=key)
        self.data = item.data if isinstance(item, NonTensorData) else item
        return self

    def is_empty(self) -> bool:
        """False: the entry holds an object (as upstream).

        >>> NonTensorData(None).is_empty()
        False
        """
        return False

    def update(self, input_dict_or_td: Any, *args: Any, **kwargs: Any) -> NonTensorData:
        """Take the object of the source's ``"data"`` entry, if it has one; returns self."""
        if "data" in input_dict_or_td.keys():
            self.set("data", input_dict_or_td["data"])
        return self

    @property
    def is_locked(self) -> bool:
        """Whether :meth:`set` is refused (a locked TensorDict locks its entries).

        >>> NonTensorData("a").lock_().is_locked
        True
        """
        return bool(self._is_locked)

    def lock_(self) -> NonTensorData:
        self._is_locked = True
        return self

    def unlock_(self) -> NonTensorData:
        if self._is_locked == LOCKED_BY_PARENT:
            raise errors.LockedTensorDictError(
                "Cannot unlock a NonTensorData held by a locked TensorDict: unlock the "
                "TensorDict holding it instead.")
        self._is_locked = False
        return self

    def _propagate_lock(self, locked: Any) -> None:
        self._is_locked = locked

    def _rebatch(self, batch_size: torch.Size, device: Any = None,
                 names: Any = None) -> NonTensorData:
        return type(self)(self.data, self._metadata, batch_size=batch_size,
                          device=self._device if device is None else device, names=names)

    def _view(self, batch_size: torch.Size, names: Any = None) -> NonTensorData:
        """This entry with the batch size ``batch_size``, sharing its object: a write
        into either is read from both."""
        view = self._rebatch(batch_size, names=names)
        view._cell = self._cell
        return view

    def _restructure(self, fn: Callable[[torch.Tensor], torch.Tensor],
                     batch_size: torch.Size, names: Any = None) -> NonTensorData | Any:
        """The result of a shape op or index (``fn`` acts on batch-shaped tensors). New
        leading dims give a NonTensorStack where ``fn.non_tensor_stack`` says so (set by
        ``unsqueeze`` and ``expand``, as upstream), or else where ``fn`` broadcasts.

        A result covering as many elements as this entry (``td[:]``, ``unsqueeze``,
        ``permute``, ``view``...) is a view sharing its object; one picking some elements
        (``td[0]``, ``td[:2]``, any tensor or mask index) or repeating them (``expand``)
        is a copy, as upstream (writing the one object through it would change elements
        it does not hold)."""
        own = self._batch_size
        share = batch_size.numel() == own.numel() and not _picks_elements(fn)
        lead = len(batch_size) - len(own)
        if lead > 0:
            stack = getattr(fn, "non_tensor_stack", None)
            if stack if stack is not None else _broadcasts(fn, own):
                return self._stacked(batch_size, lead, share)
        if share:
            return self._view(batch_size, names)
        return self._rebatch(batch_size, names=names)

    def _reshaped(self, fn: Callable[[torch.Tensor], torch.Tensor], batch_size: torch.Size,
                  names: Sequence[str | None] | None, **checks: Any) -> NonTensorData:
        # the shape ops borrowed from ShapeOpsMixin have checked the shape
        named = names is not None and any(name is not None for name in names)
        return self._rebatch(batch_size, names=names if named else None)

    view = ShapeOpsMixin.view
    reshape = ShapeOpsMixin.reshape
    unflatten = ShapeOpsMixin.unflatten
    squeeze = ShapeOpsMixin.squeeze
    permute = ShapeOpsMixin.permute
    transpose = ShapeOpsMixin.transpose

    def flatten(self, start_dim: int = 0, end_dim: int = -1) -> NonTensorData:
        """Merge the batch dims ``start_dim..end_dim`` into one (a 0-dim batch becomes
        ``[1]``).

        >>> NonTensorData("a", batch_size=[2, 3]).flatten().batch_size
        torch.Size([6])
        """
        if not self._batch_size:
            return self._rebatch(torch.Size([1]))
        return ShapeOpsMixin.flatten(self, start_dim, end_dim)

    def unsqueeze(self, dim: int) -> Any:
        """Insert a batch dim of size 1: a NonTensorStack of one copy (a ``MetaData``
        stays one object), as upstream.

        >>> stack = NonTensorData("a", batch_size=[2]).unsqueeze(-1)
        >>> type(stack).__name__, stack.batch_size
        ('NonTensorStack', torch.Size([2, 1]))
        """
        dim = batch_dim(self, dim, inserting=True, op="unsqueeze")
        if not self._stacks:
            own = self._batch_size
            return self._rebatch(own[:dim] + torch.Size([1]) + own[dim:])
        return classes.NonTensorStack._from_entries([self.clone(False)], dim)

    def broadcast_to(self, shape: Sequence[int]) -> NonTensorData:
        """The same object with the batch size ``shape``, whatever the batch size was (as
        upstream; ``torch.broadcast_to`` too).

        >>> NonTensorData("a", batch_size=[2]).broadcast_to((3,)).batch_size
        torch.Size([3])
        """
        return self._rebatch(torch.Size(_shape_args((shape,))))

    def expand(self, *shape: Any) -> NonTensorData | Any:
        """Broadcast to ``shape`` like a tensor: new leading dims give a NonTensorStack
        (copies of this entry along them); growing size-1 dims keeps one NonTensorData.
        A ``MetaData`` stays one object.

        A shape that ``torch.Tensor.expand`` rejects is read as upstream does, with its
        FutureWarning: the sizes equal to the batch size's at the same place from the
        right are dropped, the others lead the batch size.

        >>> NonTensorData("a").expand(2).tolist()
        ['a', 'a']
        >>> type(NonTensorData("a", batch_size=[1]).expand(3)).__name__
        'NonTensorData'
        >>> NonTensorData("a", batch_size=[2]).expand(3).batch_size  # a FutureWarning
        torch.Size([3, 2])
        """
        own = self._batch_size
        sizes = _shape_args(shape)
        try:  # a tensor of the batch shape checks the sizes (and resolves -1) like torch
            new = torch.empty(own, device="meta").expand(sizes).shape
        except RuntimeError:
            if -1 in sizes and len(sizes) >= len(own):
                raise
            new = _lenient_expand_size(sizes, own)
        if new == own:
            return self
        if len(new) > len(own):
            return self._stacked(new, len(new) - len(own))
        return self._rebatch(new, names=self._names)

    def _stacked(self, batch_size: torch.Size, lead: int, share: bool = False) -> Any:
        """This entry with the batch size ``batch_size``: a NonTensorStack along the
        first ``lead`` dims of copies, or of views sharing its object (``share``); a
        ``MetaData`` stays one object."""
        if not lead or not self._stacks:
            return self._view(batch_size) if share else self._rebatch(batch_size)
        if share:
            parts = [self._stacked(batch_size[1:], lead - 1, share)
                     for _ in range(batch_size[0])]
            return classes.NonTensorStack._from_entries(parts, 0)
        inner = self._stacked(batch_size[1:], lead - 1)
        parts = [inner] + [inner.clone(False) for _ in range(batch_size[0] - 1)]
        return classes.NonTensorStack._from_entries(parts, 0)

    def all(self, dim: int | None = None) -> bool | NonTensorData:
        """True: there is no entry to be false (with ``dim``: the entry without that dim).

        >>> NonTensorData(0).all(), NonTensorData(1).any()
        (True, False)
        """
        return True if dim is None else self._reduced(dim)

    def any(self, dim: int | None = None) -> bool | NonTensorData:
        """False: there is no entry to be true (with ``dim``: the entry without that dim)."""
        return False if dim is None else self._reduced(dim)

    def _reduced(self, dim: int) -> NonTensorData:
        dim = batch_dim(self, dim)
        own = self._batch_size
        return self._rebatch(own[:dim] + own[dim + 1:])

    def to_dict(self, *args: Any, **kwargs: Any) -> Any:
        """The object (as ``TensorDict.to_dict`` gives it for this entry)."""
        return self.data

    def __getitem__(self, index: Any) -> NonTensorData:
        return self._rebatch(indexed_batch_size(self._batch_size, index))

    def unbind(self, dim: int = 0) -> tuple[NonTensorData, ...]:
        """The slices along the batch dim ``dim``, each holding the same object.

        >>> [d.batch_size for d in NonTensorData("a", batch_size=[2, 3]).unbind(1)]
        [torch.Size([2]), torch.Size([2]), torch.Size([2])]
        """
        dim = batch_dim(self, dim)
        own = self._batch_size
        names = [n for i, n in enumerate(self._names) if i != dim] if self._names else None
        return tuple(self._rebatch(own[:dim] + own[dim + 1:], names=names)
                     for _ in range(own[dim]))

    def tolist(self) -> Any:
        """The object repeated over the batch, as nested lists."""
        result: Any = self.data
        for size in reversed(self._batch_size):
            result = [result] * size
        return result

    def to(self, device: Any, *args: Any, **kwargs: Any) -> NonTensorData:
        if device is None:
            return self
        return self._rebatch(self._batch_size, device=as_device(device))

    def clone(self, recurse: bool = True) -> NonTensorData:
        data = copy.deepcopy(self.data) if recurse else self.data
        return type(self)(data, self._metadata, batch_size=self._batch_size,
                          device=self._device, names=self._names)

    def copy(self) -> NonTensorData:
        """A copy that holds a deep copy of the object, as :meth:`clone` (as upstream).

        >>> data = NonTensorData([1])
        >>> data.copy().data == data.data, data.copy().data is data.data
        (True, False)
        """
        return self.clone()

    def maybe_to_stack(self) -> NonTensorData | Any:
        """A NonTensorStack with one element per batch element (self when 0-dim).

        >>> NonTensorData("a", batch_size=[2]).maybe_to_stack().tolist()
        ['a', 'a']
        """
        if not self._batch_size:
            return self
        return classes.NonTensorStack.from_list(self.tolist(), self._batch_size, self._device)

    @classmethod
    def __torch_function__(cls, func: Callable[..., Any], types: Any,
                           args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
                           ) -> Any:
        """``torch.stack`` and ``torch.cat`` of non-tensor data give a NonTensorStack."""
        handler = NON_TENSOR_FUNCTIONS.get(func)
        if handler is None:
            return NotImplemented
        return handler(*args, **(kwargs or {}))

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        other_data = other.data if isinstance(other, NonTensorData) else other
        return torch.full(self._batch_size, bool(self.data == other_data), device=self._device)

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return ~self.__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(data={self.data}, batch_size={self._batch_size}, "
                f"device={self._device})")


class MetaData(NonTensorData):
    """One Python object for the whole batch, kept as one object by stacking.

    Like :class:`NonTensorData`, except that stacking or concatenating entries that
    hold the same object (``is``) gives one ``MetaData`` of the new batch size, where
    ``NonTensorData`` would give a ``NonTensorStack``; indexing and reshaping keep a
    ``MetaData``. ``MetaData[cls]`` is a subclass that accepts only ``cls`` values.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> config = {"lr": 0.1}
    >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
    >>> td["config"] = MetaData(config, batch_size=[3])
    >>> stacked = torch.stack([td, td])
    >>> type(stacked.get("config")).__name__, stacked["config"] is config
    ('MetaData', True)
    >>> MetaData[str](1)
    Traceback (most recent call last):
        ...
    TypeError: Expected data of type str, got int
    """

    __slots__ = ()
    _stacks = False
    #: The type every value must have (set by ``MetaData[cls]``).
    _data_type: type | None = None
    _typed: dict[tuple[type, type], type[MetaData]] = {}

    def __init__(self, data: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(data, *args, **kwargs)
        expected = self._data_type
        if expected is not None and not isinstance(self.data, expected):
            raise TypeError(f"Expected data of type {expected.__name__}, "
                            f"got {type(self.data).__name__}")

    def __class_getitem__(cls, data_type: type) -> type[MetaData]:
        key = (cls, data_type)
        if key not in cls._typed:
            cls._typed[key] = type(f"MetaData[{data_type.__name__}]", (cls,), {
                "__slots__": (), "_data_type": data_type, "__module__": cls.__module__,
                "__qualname__": f"MetaData[{data_type.__qualname__}]"})
        return cls._typed[key]


def _broadcasts(fn: Callable[[torch.Tensor], torch.Tensor], batch_size: torch.Size) -> bool:
    """Whether the shape op ``fn`` broadcasts a tensor of ``batch_size`` (a stride 0 in
    its result), found on a meta tensor (no data); an op a meta tensor cannot run (an
    index on another device) is no broadcast."""
    try:
        return 0 in fn(torch.empty(batch_size, device="meta")).stride()
    except (RuntimeError, IndexError):
        return False


def _lenient_expand_size(sizes: list[int], batch_size: torch.Size) -> torch.Size:
    """Upstream's reading of an ``expand`` shape that torch rejects (with a FutureWarning):
    the sizes equal to ``batch_size``'s at the same place from the right are dropped, the
    others lead ``batch_size``."""
    warnings.warn(_EXPAND_WARNING, FutureWarning, stacklevel=3)
    offset = len(sizes) - len(batch_size)
    lead = [s for i, s in enumerate(sizes)
            if not (0 <= i - offset < len(batch_size) and s == batch_size[i - offset])]
    if any(s < 0 for s in lead):
        raise RuntimeError(f"cannot expand a NonTensorData of batch size {batch_size} to "
                           f"{sizes}: the new leading sizes {lead} are not all positive")
    return torch.Size(lead) + batch_size


def same_value(a: Any, b: Any) -> bool:
    """Whether two Python objects are the same value (False when ``==`` gives no truth
    value, as for tensors of several elements).

    >>> same_value("a", "a"), same_value(torch.zeros(2), torch.zeros(2))
    (True, False)
    """
    try:
        return bool(a is b or a == b)
    except Exception:  # noqa: BLE001  (objects whose == is not a truth value)
        return False


def merged_non_tensor(values: Sequence[Any], batch_size: torch.Size,
                      capture: bool) -> NonTensorData | None:
    """The one entry that stacking or concatenating the non-tensor ``values`` into
    ``batch_size`` gives, or None when they become a ``NonTensorStack``: ``MetaData``
    holding the same object stay one ``MetaData``; with ``capture``
    (:func:`~tensordict.capture_non_tensor_stack`) equal ``NonTensorData`` values
    become one ``NonTensorData``.

    >>> merged_non_tensor([MetaData(max), MetaData(max)], torch.Size([2]), False)
    MetaData(data=<built-in function max>, batch_size=torch.Size([2]), device=None)
    >>> merged_non_tensor([NonTensorData("a"), NonTensorData("a")], torch.Size([2]), False)
    """
    first = values[0]
    if isinstance(first, MetaData) and all(
            type(v) is type(first) and v.data is first.data for v in values):
        return first._rebatch(torch.Size(batch_size))
    if capture and all(isinstance(v, NonTensorData) and same_value(v.data, first.data)
                       for v in values):
        return NonTensorData(first.data, batch_size=batch_size, device=first.device)
    return None


def __getattr__(name: str) -> Any:
    # NonTensorStack is a lazy stack, defined above this module (kept importable from here)
    if name == "NonTensorStack":
        return classes.NonTensorStack
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def is_non_tensor(obj: Any) -> bool:
    """True for NonTensorData and NonTensorStack instances."""
    cls = obj.__class__
    return cls is not torch.Tensor and getattr(cls, "_is_non_tensor", False)


def check_non_tensor_write(present: Any, value: Any, key: Any) -> None:
    """Raise InplaceWriteError, naming ``key``, unless :func:`write_non_tensor_` can write
    ``value`` into the non-tensor entry ``present``.

    >>> check_non_tensor_write(NonTensorData("a"), NonTensorData("b"), "k")  # fits
    >>> check_non_tensor_write(NonTensorData("a"), torch.zeros(()), "k")
    Traceback (most recent call last):
        ...
    tensordict.errors.InplaceWriteError: ...
    """
    if not is_non_tensor(value) or (isinstance(present, NonTensorData) and
                                    not isinstance(value, NonTensorData)):
        raise errors.inplace_mismatch(key, present, value)


def write_non_tensor_(present: Any, value: Any, key: Any) -> None:
    """Write the non-tensor ``value`` into the existing non-tensor entry ``present`` in
    place (the one in-place write of non-tensor data: ``set_``, ``update_``,
    ``set(..., inplace=True)``, ``copy_`` reach it through ``_set_str``). A NonTensorData
    takes the object of a NonTensorData; a NonTensorStack takes the elements of a stack,
    or one object for all its elements (as upstream). Anything else raises
    InplaceWriteError, nothing written.

    >>> entry = NonTensorData("a", batch_size=[2])
    >>> write_non_tensor_(entry, NonTensorData("b", batch_size=[2]), "s")
    >>> entry.data
    'b'
    """
    check_non_tensor_write(present, value, key)
    if isinstance(present, NonTensorData):
        present.data = value.data  # a leaf shared with a lazy stack writes it through
    else:
        present._set_at_index((), value)


def unwrap_non_tensor(value: Any) -> Any:
    """What ``td[key]`` returns for a stored value: the object for non-tensor data.

    >>> unwrap_non_tensor(NonTensorData("text")), unwrap_non_tensor(torch.ones(1))
    ('text', tensor([1.]))
    """
    if isinstance(value, NonTensorData):
        return value.data
    if getattr(value, "_is_non_tensor", False):
        return value._nested(LinkedList)
    return value
