"""The extension API: what a plugin builds on, beside :mod:`tensordict.hookspecs` (the
hooks), :mod:`tensordict.plugins` (registration, :data:`~tensordict.plugins.PLUGIN_API_VERSION`)
and :mod:`tensordict.storage` (collections whose data lives in a store).

Everything here is public and versioned with the plugin API; a plugin needs no
``tensordict._*`` module. Grouped by what it is for:

* building results: :func:`from_entries`, :func:`as_size`, :func:`as_device`,
  :func:`typed_hook`, :func:`typed_like`;
* walking leaves and key paths: :func:`named_leaves`, :func:`key_to_path`,
  :func:`is_row_index`;
* what a backend saves: :func:`encode_metadata`, :func:`decode_metadata`,
  :func:`dtype_name`, :func:`dtype_from_name`, the safe unpickler :func:`loads_data`
  (:class:`UnsafePickleError`);
* non-tensor entries: :func:`unwrap_non_tensor`, :func:`check_non_tensor_write`;
* leaf-wise ops and ``torch`` functions: :func:`pointwise_methods`,
  :data:`IN_PLACE_POINTWISE`, :data:`TORCH_FUNCTIONS`, :data:`MATH_MIXINS`,
  :data:`WRITABLE_AS_TENSOR`, :data:`STACKED_UNINITIALIZED`;
* locks: :func:`unlock_tree`, :data:`LOCKED_BY_PARENT`, :func:`lock_views`;
* reprs: :func:`compact_layout`, :func:`compact_value`, :func:`sizes`, :func:`indent`,
  :func:`verbose_entry`, :func:`is_shared`, :data:`Entry`, :data:`Block`, and what the
  print options choose: :func:`compact_head`, :func:`sorted_keys`, :func:`verbose_tail`;
* deprecations: :func:`deprecated_fields`;
* upstream's module paths: :func:`resolve_on_access` (a module also callable as a
  function, names looked up on access).

Example, a leaf-wise method, added by a plugin:

>>> import torch
>>> from tensordict import TensorDict
>>> from tensordict.extending import pointwise_methods
>>> from tensordict.plugins import hookimpl, register, unregister
>>> class Doubler:
...     @hookimpl
...     def tensordict_methods(self):
...         return pointwise_methods("twice", lambda x: x * 2)
>>> plugin = register(Doubler())
>>> TensorDict(a=torch.ones(2), batch_size=[2]).twice()["a"]
tensor([2., 2.])
>>> unregister(plugin)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch

from tensordict._base import is_tensor_collection
from tensordict._collection import classes
from tensordict._deprecation import deprecated_fields
from tensordict._functional import _STACKED_UNINITIALIZED
from tensordict._metadata import LOCKED_BY_PARENT, lock_views, unlock_tree
from tensordict._nested_key import key_to_path
from tensordict._nontensor import check_non_tensor_write, unwrap_non_tensor
from tensordict._pointwise import BINARY, UNARY, PointwiseMixin
from tensordict._repr import Block, Entry, compact_head, compact_layout, sorted_keys, verbose_tail
from tensordict._repr import _compact_value as compact_value
from tensordict._repr import _indent as indent
from tensordict._repr import _is_shared as is_shared
from tensordict._repr import _sizes as sizes
from tensordict._repr import _verbose_entry as verbose_entry
from tensordict._restricted_pickle import UnsafePickleError, loads_data
from tensordict._setitem import WRITABLE_AS_TENSOR
from tensordict._shapes import as_device, as_size
from tensordict._stack import typed_hook, typed_like
from tensordict._torch_function import HANDLED, TorchFunctionMixin
from tensordict._traverse import is_row_index
from tensordict._upstream_paths import resolve_on_access

#: The in-place leaf-wise methods of core (``add_``, ``exp_``...): they write values into
#: the existing leaves and add or remove no entry.
IN_PLACE_POINTWISE: frozenset[str] = frozenset(
    {f"{name}_" for name in UNARY}
    | {f"{name}_" for name, (_, _, in_place) in BINARY.items() if in_place}
)
#: The ``torch`` functions core handles on tensor collections, with their handlers (a
#: plugin adds its own through the ``tensordict_torch_functions`` hook).
TORCH_FUNCTIONS: Mapping[Callable[..., Any], Callable[..., Any]] = HANDLED
#: The bases of ``TensorDictBase`` that give leaf-wise math and ``__torch_function__``:
#: a class that is a TensorDict by delegation (``TensorDictParams``) keeps its own.
MATH_MIXINS: tuple[type, ...] = (PointwiseMixin, TorchFunctionMixin)
#: The classes of ``from_modules``' stacks of uninitialized parameters and buffers.
STACKED_UNINITIALIZED: tuple[type, ...] = _STACKED_UNINITIALIZED


def from_entries(entries: dict[str, Any], batch_size: torch.Size,
                 device: torch.device | None = None,
                 names: tuple[str | None, ...] | None = None) -> Any:
    """A TensorDict holding ``entries`` as they are, without checking them: for results
    built from entries already known to fit (each leading with ``batch_size``, on
    ``device``). ``batch_size`` must be a ``torch.Size`` and ``device`` a
    ``torch.device`` or None (see :func:`as_size`, :func:`as_device`).

    >>> from tensordict import TensorDict
    >>> td = from_entries({"a": torch.zeros(3, 2)}, torch.Size([3]))
    >>> td
    TensorDict(batch_size=[3], fields={a: f32[2]})
    """
    return classes.TensorDict._from_entries(entries, batch_size, device, names)


def named_leaves(td: Any) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every leaf of ``td`` with its key path, in key order: tensors, and non-tensor
    entries as they are stored (``NonTensorData``, ``NonTensorStack``).

    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2), n=TensorDict(s="text", b=torch.ones(2)))
    >>> [(path, type(value).__name__) for path, value in named_leaves(td)]
    [(('a',), 'Tensor'), (('n', 'b'), 'Tensor'), (('n', 's'), 'NonTensorData')]
    """
    for key in sorted(td._keys_str()):
        value = td._get_str(key)
        if isinstance(value, torch.Tensor) or getattr(value, "_is_non_tensor", False):
            yield (key,), value
        else:
            for path, leaf in named_leaves(value):
                yield (key, *path), leaf


def dtype_name(dtype: torch.dtype) -> str:
    """``dtype`` as text, for metadata saved as JSON (:func:`dtype_from_name` reads it).

    >>> dtype_name(torch.bfloat16)
    'bfloat16'
    """
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    """The dtype :func:`dtype_name` wrote; ValueError for any other text.

    >>> dtype_from_name("float16")
    torch.float16
    """
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"{name!r} names no torch dtype")
    return dtype


def encode_metadata(td: Any) -> dict[str, Any]:
    """What a backend saves of a collection besides its entries, as JSON data: the batch
    size, the device and the dim names (:func:`decode_metadata` reads it back).

    >>> from tensordict import TensorDict
    >>> meta = encode_metadata(TensorDict(batch_size=[3, 2], names=["t", None]))
    >>> meta
    {'batch_size': [3, 2], 'device': None, 'names': ['t', None]}
    >>> TensorDict(**decode_metadata(meta))
    TensorDict(batch_size=[3,2], fields={})
    """
    return {
        "batch_size": list(td.batch_size),
        "device": None if td.device is None else str(td.device),
        "names": list(td.names) if td._has_names() else None,
    }


def decode_metadata(meta: Mapping[str, Any]) -> dict[str, Any]:
    """The ``batch_size``, ``device`` and ``names`` that :func:`encode_metadata` saved, as
    keyword arguments of ``TensorDict``; ValueError naming what does not fit.

    >>> decode_metadata({"batch_size": [2], "device": "cpu", "names": None})
    {'batch_size': torch.Size([2]), 'device': device(type='cpu'), 'names': None}
    """
    try:
        batch_size = as_size(meta["batch_size"])
        device = as_device(meta.get("device"))
    except (KeyError, TypeError, RuntimeError) as err:
        raise ValueError(f"not the metadata of a tensor collection: {dict(meta)!r}") from err
    names = meta.get("names")
    if names is not None and len(names) != len(batch_size):
        raise ValueError(f"names {names} do not fit the batch size {list(batch_size)}")
    return {"batch_size": batch_size, "device": device, "names": names}


def pointwise_methods(name: str, fn: Callable[..., torch.Tensor]) -> dict[str, Callable[..., Any]]:
    """The methods ``name`` and ``name_`` applying ``fn(leaf, *args, **kwargs)`` to every
    tensor leaf, for the ``tensordict_methods`` hook. They work on every tensor
    collection (TensorDict, lazy stacks, tensorclasses): an argument that is a collection
    gives ``fn`` its leaf at the same key; the in-place form writes each result into
    the existing leaf, all of them computed and checked (a result of a dtype the leaf
    cannot hold is a RuntimeError) before the first write.

    >>> methods = pointwise_methods("clamp01", lambda x: x.clamp(0, 1))
    >>> sorted(methods)
    ['clamp01', 'clamp01_']
    >>> from tensordict import TensorDict
    >>> methods["clamp01"](TensorDict(a=torch.tensor([-1.0, 2.0])))["a"]
    tensor([0., 1.])
    """
    def split(args: tuple[Any, ...]) -> tuple[list[Any], Callable[..., torch.Tensor]]:
        collections = [a for a in args if is_tensor_collection(a)]
        slots = [None if is_tensor_collection(a) else a for a in args]

        def call(x: torch.Tensor, *matched: Any, **kwargs: Any) -> torch.Tensor:
            it = iter(matched)
            return fn(x, *[next(it) if s is None else s for s in slots], **kwargs)
        return collections, call

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        collections, call = split(args)
        return self.apply(lambda x, *m: call(x, *m, **kwargs), *collections)

    def method_(self: Any, *args: Any, **kwargs: Any) -> Any:
        collections, call = split(args)

        def into(x: torch.Tensor, *matched: Any) -> torch.Tensor:
            result = call(x, *matched, **kwargs)
            if not torch.can_cast(result.dtype, x.dtype):
                raise RuntimeError(f"{name}_ cannot write its {result.dtype} result into a "
                                   f"leaf of dtype {x.dtype}")
            return result
        return self.apply_(into, *collections)

    method.__name__ = method.__qualname__ = name
    method_.__name__ = method_.__qualname__ = f"{name}_"
    method.__doc__ = f"``{name}`` of every leaf (a plugin's leaf-wise op)."
    method_.__doc__ = f"In place: ``{name}`` of every leaf (a plugin's leaf-wise op)."
    return {name: method, f"{name}_": method_}


__all__ = [
    "Block", "Entry", "IN_PLACE_POINTWISE", "LOCKED_BY_PARENT", "MATH_MIXINS",
    "STACKED_UNINITIALIZED", "TORCH_FUNCTIONS", "UnsafePickleError", "WRITABLE_AS_TENSOR",
    "as_device", "as_size", "check_non_tensor_write", "compact_head", "compact_layout",
    "compact_value",
    "decode_metadata", "deprecated_fields", "dtype_from_name", "dtype_name",
    "encode_metadata", "from_entries", "indent", "is_row_index", "is_shared",
    "key_to_path", "loads_data", "lock_views", "named_leaves", "pointwise_methods",
    "resolve_on_access", "sizes", "sorted_keys", "typed_hook", "typed_like", "unlock_tree",
    "unwrap_non_tensor", "verbose_entry", "verbose_tail",
]
