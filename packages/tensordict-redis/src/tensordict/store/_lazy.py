"""LazyStackedTensorDictStore: a stack of TensorDicts whose entries may differ in shape
from one element to the next, kept in Redis in upstream tensordict 0.15.3's layout.

Besides the keys a TensorDictStore has, the store holds ``__type__`` (``lazy_stack``),
``__count__``, ``__stack_dim__`` and ``__inner_batch_size__``. The elements of a key are
stored one after the other in ``d:<key>``; its ``m:<key>`` hash says whether they share
their shape (``homogeneous``: then the stored shape is ``[count, *shape]``) or lists
each element's shape (``shapes``), with the byte offsets of the elements in
``d:<key>:idx`` (``count + 1`` little-endian int64).

Example:
    >>> import torch
    >>> from tensordict import TensorDict, lazy_stack
    >>> stack = lazy_stack([TensorDict(obs=torch.zeros(2)), TensorDict(obs=torch.ones(3))])
    >>> store = LazyStackedTensorDictStore.from_lazy_stack(stack)  # doctest: +SKIP
    >>> store[1]["obs"]  # doctest: +SKIP
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from tensordict import (
    NonTensorData,
    TensorDict,
    TensorDictBase,
    errors,
    is_tensor_collection,
    maybe_dense_stack,
)
from tensordict.base import NO_DEFAULT
from tensordict.storage import IndexView, WriteBackMixin, check_fits
from tensordict.store import _codec
from tensordict.store._codec import SEPARATOR
from tensordict.store._connection import connect, connection_kwargs
from tensordict.store._store import (
    STORE_BACKENDS,
    StoreHandle,
    StoreMixin,
    _leaves,
    _Shared,
    check_backend,
)


class LazyStackedTensorDictStore(StoreHandle, StoreMixin, WriteBackMixin, TensorDictBase):
    """``count`` TensorDicts of batch size ``inner_batch_size`` stacked along dim 0,
    kept in Redis. ``store[i]`` is a view of element ``i`` (reads and writes reach the
    server); a key whose elements share their shape reads as one stacked tensor.
    """

    def __init__(self, *, backend: STORE_BACKENDS = "redis", host: str = "localhost",
                 port: int = 6379, db: int = 0, unix_socket_path: str | None = None,
                 prefix: str = "tensordict", count: int | None = None, stack_dim: int = 0,
                 inner_batch_size: Sequence[int] = (), device: Any = None,
                 client: Any = None, td_id: str | None = None, cache_metadata: bool = True,
                 **redis_kwargs: Any) -> None:
        check_backend(backend)
        if stack_dim != 0:
            raise NotImplementedError("a LazyStackedTensorDictStore stacks along dim 0; "
                                      "transpose the stack before storing it")
        client = connect(host=host, port=port, db=db, unix_socket_path=unix_socket_path,
                         client=client, **redis_kwargs)
        self._shared = _Shared(client, prefix, td_id or str(uuid.uuid4()), cache_metadata)
        self._is_locked = False
        self._exit_stack: list[Any] | None = None
        space = self._shared.space
        if td_id is not None and count is None:
            kind, stored_count, inner, stored_device = self._shared.run(
                client.mget, space + "__type__", space + "__count__",
                space + "__inner_batch_size__", space + "__device__")
            if kind != b"lazy_stack":
                raise KeyError(f"No LazyStackedTensorDictStore with td_id={td_id!r} found "
                               f"(prefix={prefix!r}).")
            count, inner_batch_size = int(stored_count), json.loads(inner)
            device = device if device is not None else (stored_device or b"").decode() or None
        elif count is None:
            raise TypeError("a new LazyStackedTensorDictStore needs count=")
        else:
            pipe = self._shared.pipeline(transaction=True)
            for name, value in (("__type__", "lazy_stack"), ("__count__", str(count)),
                                ("__stack_dim__", "0"),
                                ("__inner_batch_size__", json.dumps(list(inner_batch_size))),
                                ("__device__", "" if device is None else str(device))):
                pipe.set(space + name, value)
            self._shared.run(pipe.execute)
        self._count, self._inner = int(count), torch.Size(inner_batch_size)
        self._device = None if device is None else torch.device(device)

    @classmethod
    def from_lazy_stack(cls, lazy_td: Any, *, backend: STORE_BACKENDS = "redis",
                        host: str = "localhost", port: int = 6379, db: int = 0,
                        unix_socket_path: str | None = None, prefix: str = "tensordict",
                        device: Any = None, **kwargs: Any) -> LazyStackedTensorDictStore:
        """A new store holding the elements of ``lazy_td`` (a lazy stack, or any
        collection: its first dim is the stack), on its device unless ``device`` is
        given."""
        elements = list(lazy_td.unbind(0))
        store = cls(backend=backend, host=host, port=port, db=db,
                    unix_socket_path=unix_socket_path, prefix=prefix, count=len(elements),
                    inner_batch_size=lazy_td.batch_size[1:],
                    device=lazy_td.device if device is None else device, **kwargs)
        store._write_keys(elements)
        return store

    @classmethod
    def from_store(cls, *, backend: STORE_BACKENDS = "redis", host: str = "localhost",
                   port: int = 6379, db: int = 0, unix_socket_path: str | None = None,
                   prefix: str = "tensordict", td_id: str, device: Any = None,
                   **kwargs: Any) -> LazyStackedTensorDictStore:
        """Open the existing stack ``td_id``."""
        return cls(backend=backend, host=host, port=port, db=db,
                   unix_socket_path=unix_socket_path, prefix=prefix, td_id=td_id,
                   device=device, **kwargs)

    def clone(self, recurse: bool = True, **kwargs: Any) -> LazyStackedTensorDictStore:
        """A new stack on the same server holding a copy of the elements;
        ``recurse=False``: another handle (unlocked) on the same stack."""
        shared = self._shared
        if recurse:
            return LazyStackedTensorDictStore.from_lazy_stack(
                self.to_tensordict(), prefix=shared.prefix, device=self._device,
                cache_metadata=shared.cache_metadata, **connection_kwargs(shared.client))
        return _reconnect(connection_kwargs(shared.client), shared.prefix, shared.td_id,
                          self._device, shared.cache_metadata)

    def __reduce__(self) -> tuple[Any, ...]:
        shared = self._shared
        return _reconnect, (connection_kwargs(shared.client), shared.prefix, shared.td_id,
                            self._device, shared.cache_metadata)

    # -- primitives --------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return torch.Size((self._count, *self._inner))

    @batch_size.setter
    def batch_size(self, value: Sequence[int]) -> None:
        if torch.Size(value) != self.batch_size:
            raise RuntimeError("the batch size of a LazyStackedTensorDictStore is fixed "
                               f"({list(self.batch_size)})")

    @property
    def stack_dim(self) -> int:
        return 0

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked

    def _keys_str(self) -> Iterator[str]:
        return iter(dict.fromkeys(key.split(SEPARATOR)[0]
                                  for key in sorted(self._shared.leaf_keys())))

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """The stacked entry: a tensor if its elements share their shape (else a
        RuntimeError telling to read element by element)."""
        keys = [k for k in sorted(self._shared.leaf_keys())
                if k == key or k.startswith(key + SEPARATOR)]
        if not keys:
            if default is NO_DEFAULT:
                raise errors.missing_key(key, list(self._keys_str()))
            return default
        local = self.to_tensordict(keys)
        return local._get_str(key) if local.__class__ is TensorDict else local.get(key)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """A meta tensor of the stacked shape of a tensor entry (element 0's for one
        whose elements differ), read from the metadata alone."""
        if key in self._shared.leaf_keys() and self._count:
            peek = _Element(self, 0)._peek_str(key)
            if isinstance(peek, torch.Tensor):
                return peek.expand(self._count, *peek.shape)
        return self._get_str(key, default)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> LazyStackedTensorDictStore:
        """Store ``value`` (its first dim is the stack) at ``key``: in place (``set_``),
        each element keeps its stored shape and dtype (values converted; RuntimeError,
        nothing written, if one does not fit); otherwise it replaces what was stored."""
        if self._is_locked and not inplace:
            raise errors.locked("modify", key)
        if SEPARATOR in key:
            raise ValueError(f"a key of a store cannot contain {SEPARATOR!r}: got {key!r}")
        self._write_keys(self._per_element(key, value), in_place=inplace)
        return self

    def _del_str(self, key: str) -> None:
        if self._is_locked:
            raise errors.locked("delete an entry of a", key)
        keys = [k for k in self._shared.leaf_keys()
                if k == key or k.startswith(key + SEPARATOR)]
        if not keys:
            raise errors.missing_key(key, list(self._keys_str()))
        self._delete(keys)

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        if len(path) > 1:
            raise NotImplementedError("write nested entries of a LazyStackedTensorDictStore "
                                      "element by element (store[i][key] = value)")
        return self

    # -- storage -----------------------------------------------------------------------
    def _write_keys(self, elements: list[TensorDictBase], in_place: bool = False) -> None:
        """Store the keys of ``elements`` (one TensorDict per element, same keys), in
        one transaction, replacing those keys wholly; ``in_place``, a stored tensor keeps
        the shape and dtype of each of its elements (:meth:`_fit`)."""
        self._store(self._encode(elements, in_place))

    def _plan_set_(self, plan: Any, key: str, value: Any, path: Any,
                   non_blocking: bool) -> None:
        """The in-place write of ``set_``/``update_``: checked now, stored when ``plan``
        runs."""
        plan.call(self._store, self._encode(self._per_element(key, value), in_place=True))

    def _per_element(self, key: str, value: Any) -> list[TensorDict]:
        """``{key: value[i]}`` for each element ``i`` (a value that is no tensor or
        collection goes to every element)."""
        batch = self.batch_size
        shape = value.shape if isinstance(value, torch.Tensor) else getattr(
            value, "batch_size", batch)
        if tuple(shape[:len(batch)]) != tuple(batch):
            raise errors.batch_mismatch(key, shape, batch)
        parts = list(value.unbind(0)) if isinstance(value, torch.Tensor) or \
            is_tensor_collection(value) else [value] * self._count
        return [TensorDict({key: part}, batch_size=self._inner) for part in parts]

    def _encode(self, elements: list[TensorDictBase],
                in_place: bool) -> list[tuple[str, dict[str, str], bytes, bytes | None]]:
        """The checked writes of :meth:`_write_keys`: ``(key, meta, data, offsets)``."""
        shared = self._shared
        per_key: dict[str, list[Any]] = {}
        for element in elements:
            for key, value in _leaves(element):
                per_key.setdefault(key, []).append(value)
        writes = []
        for key, values in per_key.items():
            if len(values) != self._count:
                raise KeyError(f"the entry {key!r} is missing from some elements of the stack")
            if in_place and key in shared.leaf_keys():
                values = self._fit(key, values)
            writes.append((key, *_encode_elements(key, values)))
        return writes

    def _store(self, writes: list[tuple[str, dict[str, str], bytes, bytes | None]]) -> None:
        """Perform the writes of :meth:`_encode` in one transaction."""
        shared, space = self._shared, self._shared.space
        pipe = shared.pipeline(transaction=True)
        for key, meta, data, index in writes:
            pipe.delete(space + "m:" + key, space + "d:" + key + ":idx")
            pipe.set(space + "d:" + key, data)
            pipe.hset(space + "m:" + key, mapping=meta)
            if index is not None:
                pipe.set(space + "d:" + key + ":idx", index)
        if writes:
            pipe.sadd(space + "__keys__", *[key for key, *_ in writes])
        shared.run(pipe.execute)
        shared.forget([key for key, *_ in writes], added=True)

    def _fit(self, key: str, values: list[Any]) -> list[Any]:
        """``values`` (one per element) written over the stored tensor ``key``: each
        checked against its element's shape (RuntimeError naming the key and element)
        and converted to the stored dtype."""
        (meta,) = self._shared.metas([key])
        if _codec.is_non_tensor(meta):
            return values
        dtype = _codec.dtype_of(meta)
        out = []
        shapes = _element_shapes(meta, self._count)
        for position, (value, shape) in enumerate(zip(values, shapes)):
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"cannot write a {type(value).__name__} in place of the "
                                f"tensor {key!r}")
            check_fits(value.shape, shape, key, position)
            out.append(value.expand(shape).to(dtype))
        return out

    def _delete(self, keys: list[str]) -> None:
        shared, space = self._shared, self._shared.space
        pipe = shared.pipeline(transaction=True)
        for key in keys:
            pipe.delete(space + "d:" + key, space + "m:" + key, space + "d:" + key + ":idx")
        pipe.srem(space + "__keys__", *keys)
        shared.run(pipe.execute)
        shared.forget(keys, added=False)

    def _read(self, keys: list[str]) -> list[dict[str, Any]]:
        """Element by element, ``{dotted key: value}`` of ``keys`` (one round trip once
        the metadata is known); keys another client deleted meanwhile are left out."""
        try:
            return self._fetch(keys)
        except _codec.Gone:
            self._shared.refresh()
            return self._fetch([key for key in keys if key in self._shared.leaf_keys()])

    def _fetch(self, keys: list[str]) -> list[dict[str, Any]]:
        shared, space = self._shared, self._shared.space
        metas = shared.metas(keys)
        pipe = shared.pipeline()
        for key in keys:
            pipe.get(space + "d:" + key)
            pipe.get(space + "d:" + key + ":idx")
        replies = shared.run(pipe.execute)
        out: list[dict[str, Any]] = [{} for _ in range(self._count)]
        for position, (key, meta) in enumerate(zip(keys, metas)):
            data, index = replies[2 * position], replies[2 * position + 1]
            if not meta or data is None:
                raise _codec.Gone(f"the leaf {key!r} is no longer stored")
            for element, value in enumerate(_decode_elements(meta, data, index, self._count,
                                                             self._inner)):
                out[element][key] = value if self._device is None or not isinstance(
                    value, torch.Tensor) else value.to(self._device)
        return out

    def to_tensordict(self, keys: list[str] | None = None, *,
                      retain_none: bool | None = None) -> TensorDictBase:
        """The stack read into memory: a TensorDict when every key's elements share
        their shape, else a ``LazyStackedTensorDict`` of the elements."""
        keys = sorted(self._shared.leaf_keys()) if keys is None else keys
        elements = [_nest(values, self._inner, self._device) for values in self._read(keys)]
        if not elements:
            return TensorDict({}, batch_size=self.batch_size, device=self._device)
        return maybe_dense_stack(elements)

    to_local = to_tensordict

    def _index(self, index: Any) -> Any:
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            if not -self._count <= index < self._count:
                raise IndexError(f"index {index} is out of range for a stack of "
                                 f"{self._count}")
            return _Element(self, int(index) % self._count)
        return IndexView(self, index)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str):
            value = self._get_str(index)
            return value.data if isinstance(value, NonTensorData) else value
        if isinstance(index, tuple) and index and all(isinstance(p, str) for p in index):
            return self.to_tensordict()[index]
        return self._index(index)

    def _set_at_index(self, index: Any, value: Any) -> None:
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            self[index].update(value)
            return
        local = self.to_tensordict()
        local[index] = value
        self._write_keys(list(local.unbind(0)), in_place=True)

    def _write_back(self, local: Any) -> None:
        self._write_keys(list(local.unbind(0)), in_place=True)

    def _read_at(self, index: Any) -> TensorDictBase:
        """``self[index]`` read into memory (one round trip)."""
        return self.to_tensordict()[index]

    def _get_at_str(self, key: str, index: Any, default: Any = NO_DEFAULT) -> Any:
        """The entry ``key`` at ``index``, read alone (its elements may differ in shape
        where the index keeps one of them)."""
        keys = [k for k in sorted(self._shared.leaf_keys())
                if k == key or k.startswith(key + SEPARATOR)]
        if not keys:
            return super()._get_at_str(key, index, default)
        return self.to_tensordict(keys)[index].get(key)

    def __repr__(self) -> str:
        return (f"LazyStackedTensorDictStore(keys={list(self._keys_str())}, "
                f"batch_size={self.batch_size}, count={self._count}, stack_dim=0, "
                f"device={self._device}, backend='redis', td_id={self._shared.td_id!r})")


class _Element(StoreMixin, WriteBackMixin, TensorDictBase):
    """Element ``position`` of a LazyStackedTensorDictStore: reads and writes reach the
    server."""

    def __init__(self, stack: LazyStackedTensorDictStore, position: int) -> None:
        self._stack, self._position = stack, position
        self._is_locked = stack._is_locked
        self._exit_stack: list[Any] | None = None

    @property
    def batch_size(self) -> torch.Size:
        return self._stack._inner

    @property
    def device(self) -> torch.device | None:
        return self._stack._device

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked

    def _keys_str(self) -> Iterator[str]:
        return self._stack._keys_str()

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        keys = sorted(self._stack._shared.leaf_keys())
        return _nest(self._stack._read(keys)[self._position], self.batch_size, self.device)

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        if key not in set(self._keys_str()):
            if default is NO_DEFAULT:
                raise errors.missing_key(key, list(self._keys_str()))
            return default
        return self.to_tensordict()._get_str(key)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        """A meta tensor of this element's shape of a tensor entry, from the metadata."""
        if key in self._stack._shared.leaf_keys():
            (meta,) = self._stack._shared.metas([key])
            if not _codec.is_non_tensor(meta):
                shape = _element_shapes(meta, self._stack._count)[self._position]
                return torch.empty(shape, dtype=_codec.dtype_of(meta), device="meta")
        return self._get_str(key, default)

    def _index(self, index: Any) -> IndexView:
        return IndexView(self, index)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, str) or isinstance(index, tuple) and index and \
                all(isinstance(part, str) for part in index):
            return self.to_tensordict()[index]
        return self._index(index)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> _Element:
        self._update({key: value})
        return self

    def _plan_set_(self, plan: Any, key: str, value: Any, path: Any,
                   non_blocking: bool) -> None:
        """The in-place write of ``set_``/``update_``: checked now, stored when ``plan``
        runs."""
        plan.call(self._stack._store, self._encode({key: value}))

    def _update(self, entries: dict[str, Any]) -> None:
        self._stack._store(self._encode(entries))

    def _encode(self, entries: dict[str, Any]) -> list[Any]:
        """The checked writes of ``entries`` into this element: over a stored tensor, in
        place (its shape and dtype kept, as upstream's element views); a new key must
        reach every element (KeyError). Only the keys written are read and stored."""
        stack = self._stack
        if self._is_locked and any(key not in stack._keys_str() for key in entries):
            raise errors.locked("modify")
        keys = [key for key in sorted(stack._shared.leaf_keys())
                if key.split(SEPARATOR)[0] in entries]
        elements = [element.clone() for element in stack.to_tensordict(keys).unbind(0)]
        mine = elements[self._position]
        for key, value in entries.items():
            mine.set(key, value)  # checks batch dims
        return stack._encode(elements, in_place=True)

    def update(self, input_dict_or_td: Any, clone: bool = False, **kwargs: Any) -> _Element:
        self._update(dict(input_dict_or_td.items()) if is_tensor_collection(input_dict_or_td)
                     else dict(input_dict_or_td))
        return self

    def _set_at_index(self, index: Any, value: Any) -> None:
        local = self.to_tensordict()
        local[index] = value
        self._update(dict(local.items()))

    def _write_back(self, local: Any) -> None:
        self._update(dict(local.items()))

    def _del_str(self, key: str) -> None:
        raise RuntimeError("delete the entry from the whole stack (del store[key])")

    def __repr__(self) -> str:
        return (f"LazyStackedTensorDictStore element {self._position} "
                f"(keys={list(self._keys_str())}, batch_size={self.batch_size})")


def _element_shapes(meta: dict[str, str], count: int) -> list[torch.Size]:
    """The shape of each element of a stored tensor."""
    if meta.get("homogeneous") == "0":
        return [torch.Size(shape) for shape in json.loads(meta["shapes"])]
    return [_codec.shape_of(meta)[1:]] * count


def _nest(values: dict[str, Any], batch: torch.Size, device: Any) -> TensorDict:
    """A TensorDict of ``{dotted key: value}``."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        node = out
        parts = key.split(SEPARATOR)
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return TensorDict(out, batch_size=batch, device=device)


def _encode_elements(key: str, values: list[Any]) -> tuple[dict[str, str], bytes, bytes | None]:
    """The ``m:`` hash, the ``d:`` bytes and the ``d:<key>:idx`` offsets of the elements
    of one key (no offsets when they share their shape)."""
    if not isinstance(values[0], torch.Tensor):
        items = [v.data if isinstance(v, NonTensorData) else v.tolist() for v in values]
        meta, data = _codec.encode_non_tensor(NonTensorData(items), key)
        return {**meta, "encoding": "json_array"}, data, None
    dtypes = {value.dtype for value in values}
    if len(dtypes) > 1:
        raise TypeError(f"the elements of {key!r} have different dtypes "
                        f"{sorted(map(str, dtypes))}")
    shapes = [list(value.shape) for value in values]
    chunks = [_codec.encode_tensor(value)[1] for value in values]
    meta = {"dtype": str(values[0].dtype), "layout": "stack"}
    if all(shape == shapes[0] for shape in shapes):
        meta.update(shape=json.dumps([len(values), *shapes[0]]), homogeneous="1")
        return meta, b"".join(chunks), None
    offsets = np.cumsum([0] + [len(chunk) for chunk in chunks]).astype("<i8")
    meta.update(shape=json.dumps([len(values), len(shapes[0])]), homogeneous="0",
                shapes=json.dumps(shapes))
    return meta, b"".join(chunks), offsets.tobytes()


def _decode_elements(meta: dict[str, str], data: bytes | None, index: bytes | None,
                     count: int, inner: torch.Size) -> list[Any]:
    if _codec.is_non_tensor(meta):
        items = json.loads(data or b"[]")
        return [NonTensorData(item, batch_size=inner) for item in items]
    if meta.get("homogeneous", "1") == "1":
        stacked = _codec.decode_tensor(meta, data)
        return list(stacked.unbind(0))
    shapes = json.loads(meta["shapes"])
    offsets = np.frombuffer(index, dtype="<i8")
    return [_codec.decode_tensor({**meta, "shape": json.dumps(shape)},
                                 data[offsets[i]:offsets[i + 1]], torch.Size(shape))
            for i, shape in enumerate(shapes)]


def _reconnect(kwargs: dict[str, Any], prefix: str, td_id: str, device: Any,
               cache_metadata: bool) -> LazyStackedTensorDictStore:
    return LazyStackedTensorDictStore(prefix=prefix, td_id=td_id, device=device,
                                      cache_metadata=cache_metadata,
                                      **{k: v for k, v in kwargs.items() if v is not None})
