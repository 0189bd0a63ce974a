"""How ``to`` reads its arguments and copies leaves between devices and dtypes.

``non_blocking`` has three values, as upstream's:

- not given (None): every leaf is copied asynchronously, and a move that reads an
  accelerator into host memory waits once, after the last copy, so the result can be read
  at once (a copy to a CUDA device is ordered on its stream and needs no wait);
- True: asynchronous copies and no wait, the caller synchronizes;
- False: blocking copies.

The rarer options (:class:`ToOptions`): ``memory_format``, ``other=``, a per-leaf
description (``td.to(source.attrs())``), ``inplace=True`` and ``non_blocking_pin`` (pin the
CPU leaves, in ``num_threads`` threads, then copy them asynchronously).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(img=torch.zeros(2, 3, 4, 4), label=torch.zeros(2), batch_size=[2])
    >>> out = td.to(memory_format=torch.channels_last)
    >>> out["img"].is_contiguous(memory_format=torch.channels_last), out["label"].shape
    (True, torch.Size([2]))
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import torch

from tensordict._collection import NO_DEFAULT, is_tensor_collection
from tensordict._consolidate import move_consolidated
from tensordict._pointwise import map_dense
from tensordict.errors import locked

_Tensor = torch.Tensor


def parse_to_args(*args: Any, **kwargs: Any) -> tuple[Any, Any, Any, bool | None,
                                                     ToOptions | None]:
    """(device, dtype, batch_size, non_blocking, options) from the arguments of ``to``: None
    for a device, dtype or ``non_blocking`` not given, and ``options`` None unless one of
    the rarer keywords (or a per-leaf description) is."""
    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    batch_size = kwargs.pop("batch_size", None)
    non_blocking = kwargs.pop("non_blocking", None)
    if "copy" in kwargs:  # as upstream: a move copies only what changes
        raise RuntimeError(".to() does not accept copy argument: a TensorDict moves or casts "
                           "only the leaves that change (use clone() for a copy)")
    if non_blocking is not None:
        non_blocking = bool(non_blocking)
    options = ToOptions.pop_from(kwargs) if kwargs else None
    given_dtype = dtype
    for arg in args:
        if arg is None:  # no device: nothing to move
            continue
        if isinstance(arg, torch.dtype):
            if dtype is not None and (given_dtype is None or arg != given_dtype):
                raise TypeError(f"to() got two dtypes: {dtype} and {arg}")
            dtype = arg
        elif isinstance(arg, (str, torch.device, int)):
            if device is not None:
                raise TypeError(f"to() got two devices: {device!r} and {arg!r}")
            device = arg
        elif isinstance(arg, _Tensor):
            device, dtype = arg.device, arg.dtype
        elif hasattr(arg, "batch_size"):
            if leaf_descriptions(arg):  # td.to(source.attrs())
                options = options or ToOptions()
                options.leaf_targets = arg
            else:
                device = arg.device
        else:
            raise TypeError(f"to() does not understand the argument {arg!r} (a "
                            f"{type(arg).__name__}): give a device, a dtype, a tensor or a "
                            "TensorDict")
    if options is not None and options.leaf_targets is not None and \
            (device is not None or dtype is not None):
        raise TypeError("to(td.attrs()) takes each leaf's device and dtype from the "
                        f"description: no device or dtype as well (got {device!r}, {dtype!r})")
    if options is not None and options.other is not None:
        device = options.other.device if device is None else device
        dtype = options.other.dtype or dtype  # as upstream: other's shared dtype wins
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"to() needs a torch.dtype as dtype, got {dtype!r}")
    return device, dtype, batch_size, non_blocking, options


def move(td: Any, device: torch.device | None, dtype: torch.dtype | None,
         non_blocking: bool | None, memory_format: torch.memory_format | None = None) -> Any:
    """``td`` on ``device`` and/or cast to ``dtype`` (each None to keep it), a new
    collection unless nothing changes; a consolidated collection moves as one buffer."""
    same_dtype = dtype is None and memory_format is None
    if same_dtype and (device is None or device == td.device):
        return td
    if non_blocking is None and torch.compiler.is_compiling():
        non_blocking = False  # as upstream: blocking copies under torch.compile
    copy_async = non_blocking is not False
    # a default move to the host waits for the accelerators it read, once, at the end
    read = set() if non_blocking is None and device is not None and device.type != "cuda" \
        else None
    out = None
    if same_dtype:
        out = move_consolidated(td, device, copy_async)
        if out is not None and read is not None:  # one copy of the storage the leaves view
            read.update(leaf.device.type for leaf in td._tensor_leaves()[:1])
        if out is None:
            out = _move_dense(td, device, copy_async, read)
    if out is None:
        # non_blocking only when set: each keyword costs torch's argument parser time
        to_kwargs: dict[str, Any] = {"non_blocking": True} if copy_async else {}
        if device is not None:
            to_kwargs["device"] = device
        if dtype is not None:
            to_kwargs["dtype"] = dtype
        # as nn.Module.to: the memory format of the 4-D and 5-D leaves only
        formatted = None if memory_format is None else dict(to_kwargs,
                                                            memory_format=memory_format)

        def fn(x: _Tensor) -> _Tensor:
            if read is not None:
                read.add(x.device.type)
            if formatted is not None and x.dim() in (4, 5):
                return x.to(**formatted)
            return x.to(**to_kwargs)

        out = td._apply_nest(fn, filter_empty=False,
                             device=NO_DEFAULT if device is None else device)
    if read:
        synchronize(read)
    return out


def _move_dense(td: Any, device: torch.device, non_blocking: bool,
                read: set[str] | None) -> Any:
    """``td.to(device)`` of a dense TensorDict (None for another collection): leaves
    already on ``device`` are kept, as ``Tensor.to`` keeps them; the device types copied
    from are added to ``read`` (if given)."""
    def fn(x: _Tensor) -> _Tensor:
        if x.device == device:
            return x
        if read is not None:
            read.add(x.device.type)
        return x.to(device, non_blocking=non_blocking)
    return map_dense(td, fn, device)


def synchronize(device_types: set[str]) -> None:
    """Wait for every accelerator among ``device_types`` (the CPU and meta need nothing)."""
    for kind in device_types - {"cpu", "meta"}:
        getattr(torch, kind).synchronize()


class ToOptions:
    """The keywords of ``to`` beyond device, dtype, ``non_blocking`` and ``batch_size``."""

    __slots__ = ("memory_format", "inplace", "pin", "num_threads", "other", "leaf_targets")
    _KEYWORDS = ("memory_format", "inplace", "non_blocking_pin", "num_threads", "other")

    def __init__(self, memory_format: torch.memory_format | None = None, inplace: bool = False,
                 non_blocking_pin: bool = False, num_threads: int | None = None,
                 other: Any = None) -> None:
        if memory_format is not None and not isinstance(memory_format, torch.memory_format):
            raise TypeError(f"to() got memory_format={memory_format!r}: give a "
                            "torch.memory_format (torch.channels_last...)")
        self.memory_format, self.inplace = memory_format, bool(inplace)
        self.pin, self.num_threads = bool(non_blocking_pin), num_threads
        self.other, self.leaf_targets = other, None

    @classmethod
    def pop_from(cls, kwargs: dict[str, Any]) -> ToOptions:
        unknown = sorted(set(kwargs) - set(cls._KEYWORDS))
        if unknown:
            raise TypeError(f"to() got unexpected arguments {unknown}")
        return cls(**kwargs)

    def apply(self, td: Any, device: torch.device | None, dtype: torch.dtype | None,
              non_blocking: bool | None) -> Any:
        """``td.to(...)`` with these options."""
        source = td
        if self.pin and device is not None and device.type != "cpu":
            source = pinned(td, self.num_threads, cpu_only=True)
            non_blocking = True if non_blocking is None else non_blocking
        if self.leaf_targets is not None:
            out = _cast_per_leaf(source, self.leaf_targets, non_blocking)
        else:
            out = move(source, device, dtype, non_blocking, self.memory_format)
        if not self.inplace:
            return out
        if not adopt(td, out):
            raise locked("move or cast in place a")
        return td


def _cast_per_leaf(td: Any, described: Any, non_blocking: bool | None) -> Any:
    """Each leaf of ``td`` moved and cast as the entry of the same key in ``described``
    (a :meth:`attrs` result) says; leaves it does not describe are kept."""
    copy_async = non_blocking is not False
    targets = {spec.tgt_device for spec in leaf_descriptions(described)} - {None}
    read: set[str] = set()

    def cast(key: Any, x: _Tensor) -> _Tensor:
        spec = described.get(key, None)
        if spec is None:
            return x
        read.add(x.device.type)
        return x.to(device=spec.tgt_device, dtype=spec.tgt_dtype, non_blocking=copy_async)

    stays = targets <= {td.device}
    out = td._apply_nest(cast, named=True, nested_keys=True, filter_empty=False,
                         device=NO_DEFAULT if stays else None)
    if non_blocking is None and not all(target.type == "cuda" for target in targets):
        synchronize(read)
    return out


def leaf_descriptions(described: Any) -> list[Any]:
    """The :class:`~tensordict.TensorAttrs` (objects with ``tgt_device`` and ``tgt_dtype``)
    in a collection: non-empty for a ``td.attrs()`` result."""
    found = []
    for value in described.values():
        if hasattr(value, "tgt_device") and hasattr(value, "tgt_dtype"):
            found.append(value)
        elif is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
            found.extend(leaf_descriptions(value))
    return found


def pinned(td: Any, num_threads: int | None = None, *, cpu_only: bool = False) -> Any:
    """``td`` with its tensor leaves copied to page-locked memory (in ``num_threads``
    threads if given); keys holding the same tensor share its copy. With ``cpu_only``,
    leaves on another device are kept as they are."""
    copies: dict[int, _Tensor] = {}  # id of a leaf -> its pinned copy

    def pin(x: _Tensor) -> _Tensor:
        return x if cpu_only and x.device.type != "cpu" else x.pin_memory()

    if num_threads:
        unique = {id(leaf): leaf for leaf in td._tensor_leaves()}
        with ThreadPoolExecutor(num_threads) as pool:
            copies.update(zip(unique, pool.map(pin, unique.values())))

    def pinned_copy(x: _Tensor) -> _Tensor:
        copy = copies.get(id(x))
        if copy is None:
            copy = copies[id(x)] = pin(x)
        return copy

    out = map_dense(td, pinned_copy)  # one walk of a dense TensorDict
    return td._apply_nest(pinned_copy, filter_empty=False) if out is None else out


def adopt(node: Any, new: Any) -> bool:
    """Make ``node`` hold the leaves and device of ``new`` (a result of ``node.to(...)``),
    every nested node keeping its identity; False, with nothing changed, if a node is
    locked (``to(inplace=True)``, ``pin_memory(inplace=True)``).

    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(1), n=TensorDict(b=torch.zeros(1)))
    >>> n = td["n"]
    >>> adopt(td, td.to("meta")), td["n"] is n, n["b"].device
    (True, True, device(type='meta'))
    """
    entries: list[tuple[dict[str, Any], str, Any]] = []
    devices: list[tuple[Any, Any]] = []
    if not _plan_adoption(node, new, entries, devices):
        return False
    for store, key, value in entries:
        store[key] = value
    for target, device in devices:
        target._device = device
    return True


def _plan_adoption(node: Any, new: Any, entries: list[tuple[dict[str, Any], str, Any]],
                   devices: list[tuple[Any, Any]]) -> bool:
    if node.is_locked:
        return False
    parts = getattr(node, "tensordicts", None)
    if parts is not None:  # a lazy stack: its parts hold the entries
        devices.append((node, new.device))
        return all(_plan_adoption(part, new_part, entries, devices)
                   for part, new_part in zip(parts, new.tensordicts))
    store = getattr(node, "_tensordict", None)
    if store is None:
        raise TypeError(f"{type(node).__name__} cannot be moved or cast in place: call "
                        "to_tensordict() first")
    if store.__class__ is not dict:  # a tensorclass: its TensorDict holds the entries
        return _plan_adoption(store, new._tensordict, entries, devices)
    devices.append((node, new.device))
    for key, value in new._tensordict.items():
        old = store[key]
        if is_tensor_collection(old) and not getattr(old, "_is_non_tensor", False):
            if not _plan_adoption(old, value, entries, devices):
                return False
        else:
            entries.append((store, key, value))
    return True
