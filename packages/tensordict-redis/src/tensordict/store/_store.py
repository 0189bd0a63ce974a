"""TensorDictStore: a TensorDict kept in a Redis server, shared by every process that
opens it by its id.

Every read and write goes to the server, in one round trip: ``store["obs"]`` is one
pipelined fetch; ``store[10:20]`` is a view whose reads fetch those rows of every leaf
together (byte ranges of the stored tensors) and whose writes (``add_``, ``set_``,
``view[key] = v``) reach the store; ``store[i] = step`` writes them together in one
transaction, after checking every key and shape. In-place writes keep each leaf's shape
and dtype (values are converted); a leaf deleted by another client raises KeyError.
Nested keys are stored flat (``"next.reward"``), so a sub-TensorDict is a view of the same
store.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.store import TensorDictStore
    >>> store = TensorDictStore.from_tensordict(  # doctest: +SKIP
    ...     TensorDict(obs=torch.zeros(4, 3), batch_size=[4]), host="127.0.0.1")
    >>> store[1] = TensorDict(obs=torch.ones(3))  # doctest: +SKIP
    >>> other = TensorDictStore.from_store(host="127.0.0.1", td_id=store._td_id)  # doctest: +SKIP
    >>> other["obs"][1]  # doctest: +SKIP
    tensor([1., 1., 1.])
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import torch

from tensordict import NonTensorData, TensorDict, TensorDictBase, errors, is_tensor_collection
from tensordict.base import NO_DEFAULT
from tensordict.extending import LOCKED_BY_PARENT
from tensordict.storage import (
    IndexView,
    WriteBackMixin,
    check_fits,
    split_rows,
    zeros_prototype,
)
from tensordict.store import _codec
from tensordict.store._codec import SEPARATOR
from tensordict.store._connection import checked, connect, connection_kwargs, where
from tensordict.store._tensorclass import TENSORCLASS_KEY, class_of, class_path

STORE_BACKENDS = Literal["redis"]


def check_backend(backend: str) -> None:
    """ValueError for a backend other than ``"redis"`` (the one this package provides)."""
    if backend != "redis":
        raise ValueError(f"unknown store backend {backend!r}: only 'redis' exists")


class _Shared:
    """What a store and its sub-TensorDict views share: the client, the key space, the
    metadata cache."""

    def __init__(self, client: Any, prefix: str, td_id: str, cache_metadata: bool) -> None:
        self.client, self.prefix, self.td_id = client, prefix, td_id
        self.space = _codec.space(prefix, td_id)
        self.cache_metadata = cache_metadata
        self.meta: dict[str, dict[str, str]] = {}
        self.keys: set[str] | None = None
        self.closed = False
        #: the class path of the tensorclass the store was written from (or None)
        self.tensorclass: str | None = None

    @classmethod
    def connect(cls, *, prefix: str, td_id: str | None = None, cache_metadata: bool = True,
                **connection: Any) -> _Shared:
        """A new client (``connection``: the arguments of :func:`connect`) for the store
        ``td_id`` (a new id when None)."""
        return cls(connect(**connection), prefix, td_id or str(uuid.uuid4()), cache_metadata)

    def check_open(self) -> None:
        if self.closed:
            raise RuntimeError(f"the TensorDictStore {self.td_id!r} is closed")

    def run(self, call: Callable[..., Any], *args: Any) -> Any:
        self.check_open()
        return checked(call, self.client, *args)

    def pipeline(self, transaction: bool = False) -> Any:
        return self.client.pipeline(transaction=transaction)

    def leaf_keys(self) -> set[str]:
        """The dotted keys of every leaf (cached with ``cache_metadata``)."""
        self.check_open()
        if self.keys is None or not self.cache_metadata:
            members = self.run(self.client.smembers, self.space + "__keys__")
            self.keys = {member.decode() for member in members}
        return self.keys

    def metas(self, keys: Sequence[str]) -> list[dict[str, str]]:
        """The ``m:`` hashes of ``keys`` (fetched together; cached with ``cache_metadata``)."""
        missing = [key for key in keys if key not in self.meta or not self.cache_metadata]
        if missing:
            pipe = self.pipeline()
            for key in missing:
                pipe.hgetall(self.space + "m:" + key)
            for key, meta in zip(missing, self.run(pipe.execute)):
                self.meta[key] = _codec.as_text(meta)
        return [self.meta[key] for key in keys]

    def refresh(self) -> None:
        """Drop the cached keys and metadata (another client changed them)."""
        self.keys = None
        self.meta.clear()

    def forget(self, keys: Sequence[str], added: bool) -> None:
        """Update the caches after this process wrote or deleted ``keys``."""
        for key in keys:
            self.meta.pop(key, None)
        if self.keys is not None:
            (self.keys.update if added else self.keys.difference_update)(keys)


class StoreHandle:
    """What both stores do with their connection: the id, closing, deleting the data."""

    __slots__ = ()
    #: the storage backend's name (upstream's attribute; kept by pickling, as the class)
    _backend = "redis"

    @property
    def _td_id(self) -> str:
        """The id other processes open this store by (``from_store(td_id=...)``)."""
        return self._shared.td_id

    def close(self) -> None:
        """Close the connection; the data stays on the server (see :meth:`clear_redis`)."""
        if not self._shared.closed:
            self._shared.closed = True
            self._shared.client.close()

    def clear_redis(self) -> None:
        """Delete every Redis key of this store from the server."""
        shared = self._shared
        keys = list(shared.run(shared.client.scan_iter, shared.space + "*"))
        if keys:
            shared.run(shared.client.delete, *keys)
        shared.meta.clear()
        shared.keys = set()


class StoreMixin:
    """What the stores (and their elements) do unlike other write-back collections:
    ``update_``/``copy_`` plan each entry's checked write (``_plan_set_``), so every
    entry is checked before the first one is stored, non-tensor data included; and
    ``select``/``exclude`` raise, as upstream's stores: their copies would write
    nowhere."""

    __slots__ = ()

    update_ = TensorDictBase.update_

    def select(self, *keys: Any, inplace: bool = False, strict: bool = True) -> Any:
        """Not on a store: ``to_tensordict().select(...)`` for a copy."""
        raise NotImplementedError(f"Cannot call select on a {type(self).__name__}. Call "
                                  "to_tensordict() first.")

    def exclude(self, *keys: Any, inplace: bool = False) -> Any:
        """Not on a store: ``to_tensordict().exclude(...)`` for a copy."""
        raise NotImplementedError(f"Cannot call exclude on a {type(self).__name__}. Call "
                                  "to_tensordict() first.")

    def _selected(self, tree: Any, strict: bool, prefix: tuple[str, ...]) -> Any:
        return self.select()  # (how a lazy stack of stores selects in its parts)

    def is_contiguous(self) -> bool:
        """False: the entries are bytes on a server (``to_tensordict()`` reads them)."""
        return False

    def share_memory_(self) -> Any:
        """Not on a store (its entries live on the server): ``to_tensordict()`` first."""
        raise NotImplementedError(f"Cannot call share_memory_ on a {type(self).__name__}. "
                                  "Call `to_tensordict()` first.")


class TensorDictStore(StoreHandle, StoreMixin, WriteBackMixin, TensorDictBase):
    """A TensorDict whose entries live in Redis (``host``/``port``/``db``, a
    ``unix_socket_path``, or a ready ``client``).

    Args:
        prefix: the first part of every Redis key of the store.
        batch_size: the batch size of a new store.
        td_id: the id of an existing store to open (a new id when None).
        device: the device of the tensors read.
        cache_metadata: keep the keys and the shapes and dtypes of the leaves in this
            process (other processes' new keys are then seen by a new instance).
        **redis_kwargs: more arguments of ``redis.Redis`` (a dead server fails within
            ``socket_timeout`` seconds, 5 by default).
    """

    def __init__(self, *, backend: STORE_BACKENDS = "redis", host: str = "localhost",
                 port: int = 6379, db: int = 0, unix_socket_path: str | None = None,
                 prefix: str = "tensordict", batch_size: Sequence[int] | None = None,
                 device: Any = None, client: Any = None, td_id: str | None = None,
                 cache_metadata: bool = True, **redis_kwargs: Any) -> None:
        check_backend(backend)
        self._init(_Shared.connect(host=host, port=port, db=db, prefix=prefix, td_id=td_id,
                                   unix_socket_path=unix_socket_path, client=client,
                                   cache_metadata=cache_metadata, **redis_kwargs), ())
        # an existing store is opened (its batch size and device read); else a new one made
        if td_id is None or batch_size is not None or not self._attach(device):
            self._create(batch_size, device)

    def _attach(self, device: Any) -> bool:
        """Open the store of this id: its batch size, device and tensorclass read (one
        round trip); False where the server holds no such store."""
        shared = self._shared
        size, stored_device, tensorclass = shared.run(
            shared.client.mget, shared.space + "__batch_size__", shared.space + "__device__",
            shared.space + TENSORCLASS_KEY)
        if size is None:
            return False
        self._batch_size = torch.Size(json.loads(size))
        device = device if device is not None else (stored_device or b"").decode() or None
        self._device = None if device is None else torch.device(device)
        shared.tensorclass = tensorclass.decode() if tensorclass else None
        return True

    def _create(self, batch_size: Sequence[int] | None, device: Any,
                tensorclass: str | None = None) -> None:
        """Write the batch size, device (and the tensorclass path) of a new store."""
        shared = self._shared
        self._batch_size = torch.Size(batch_size or [])
        self._device = None if device is None else torch.device(device)
        shared.tensorclass = tensorclass
        pipe = shared.pipeline(transaction=True)
        pipe.set(shared.space + "__batch_size__", json.dumps(list(self._batch_size)))
        pipe.set(shared.space + "__device__", "" if device is None else str(device))
        if tensorclass is None:
            pipe.delete(shared.space + TENSORCLASS_KEY)
        else:
            pipe.set(shared.space + TENSORCLASS_KEY, tensorclass)
        shared.run(pipe.execute)

    def _init(self, shared: _Shared, path: tuple[str, ...]) -> None:
        self._shared, self._path = shared, path
        self._is_locked = False
        self._exit_stack: list[Any] | None = None

    def _view(self, path: tuple[str, ...]) -> TensorDictStore:
        view = TensorDictStore.__new__(TensorDictStore)
        view._init(self._shared, path)
        view._batch_size, view._device = self._batch_size, self._device
        view._is_locked = LOCKED_BY_PARENT if self._is_locked else False
        return view

    # -- opening, closing ----------------------------------------------------------------
    @classmethod
    def from_tensordict(cls, td: TensorDictBase, *, backend: STORE_BACKENDS = "redis",
                        host: str = "localhost", port: int = 6379, db: int = 0,
                        unix_socket_path: str | None = None, prefix: str = "tensordict",
                        device: Any = None, **kwargs: Any) -> TensorDictStore:
        """A new store holding the entries of ``td`` (written in one transaction), on
        ``td``'s device unless ``device`` is given. For a tensorclass, its class path is
        recorded: :meth:`from_store` opens the store as that class.

        >>> store = TensorDictStore.from_tensordict(  # doctest: +SKIP
        ...     TensorDict(obs=torch.zeros(4, 3), batch_size=[4]), host="127.0.0.1")
        >>> store["obs"].shape  # doctest: +SKIP
        torch.Size([4, 3])
        """
        check_backend(backend)
        store = cls.__new__(cls)
        store._init(_Shared.connect(host=host, port=port, db=db, prefix=prefix,
                                    unix_socket_path=unix_socket_path, **kwargs), ())
        tensorclass = class_path(type(td)) if getattr(td, "_is_tensorclass", False) else None
        store._create(td.batch_size, td.device if device is None else device, tensorclass)
        store._store_entries([(key, value) for key, value in _leaves(td)], replace=())
        return store

    @classmethod
    def from_dict(cls, input_dict: Mapping[str, Any], *, backend: STORE_BACKENDS = "redis",
                  host: str = "localhost", port: int = 6379, db: int = 0,
                  unix_socket_path: str | None = None, prefix: str = "tensordict",
                  auto_batch_size: bool = False, batch_size: Sequence[int] | None = None,
                  device: Any = None, batch_dims: int | None = None,
                  names: Sequence[str] | None = None, **kwargs: Any) -> TensorDictStore:
        """A new store holding the (nested) dict ``input_dict``, converted as
        :meth:`TensorDict.from_dict` converts it (``batch_size``, ``auto_batch_size``,
        ``batch_dims``, ``device``).

        >>> store = TensorDictStore.from_dict(  # doctest: +SKIP
        ...     {"obs": torch.zeros(4, 3)}, batch_dims=1, host="127.0.0.1")
        >>> store.batch_size  # doctest: +SKIP
        torch.Size([4])
        """
        td = TensorDict.from_dict(input_dict, batch_size=batch_size, device=device,
                                  batch_dims=batch_dims, auto_batch_size=auto_batch_size,
                                  names=names)
        return cls.from_tensordict(td, backend=backend, host=host, port=port, db=db,
                                   unix_socket_path=unix_socket_path, prefix=prefix,
                                   device=device, **kwargs)

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], *,
                    batch_size: Sequence[int] | None = None, backend: STORE_BACKENDS = "redis",
                    host: str = "localhost", port: int = 6379, db: int = 0,
                    unix_socket_path: str | None = None, prefix: str = "tensordict",
                    device: Any = None, **kwargs: Any) -> TensorDictStore:
        """A new zero-filled store of ``schema`` (key -> ``(element_shape, dtype)``, or a
        nested schema). The zeros are made by the server: nothing is built or sent."""
        prototype = zeros_prototype(schema, torch.Size(batch_size or ()))
        return cls.from_tensordict(prototype, backend=backend, host=host, port=port, db=db,
                                   unix_socket_path=unix_socket_path, prefix=prefix,
                                   device=device, **kwargs)

    @classmethod
    def from_store(cls, *, backend: STORE_BACKENDS = "redis", host: str = "localhost",
                   port: int = 6379, db: int = 0, unix_socket_path: str | None = None,
                   prefix: str = "tensordict", td_id: str, device: Any = None,
                   tensorclass_cls: type | str | None = None, **kwargs: Any) -> Any:
        """Open the existing store ``td_id`` (written by this or another process); a
        KeyError where the server holds none.

        A store written from a tensorclass opens as that class where its module is
        imported; ``tensorclass_cls`` (the class, or its dotted path ``"pkg.MyClass"``,
        imported if need be) opens any store as a tensorclass whose fields are its keys.

        >>> TensorDictStore.from_store(td_id=store_id, host="127.0.0.1",  # doctest: +SKIP
        ...                            tensorclass_cls="my_pkg.MyClass").obs.shape
        torch.Size([4, 3])
        """
        check_backend(backend)
        store = cls.__new__(cls)
        store._init(_Shared.connect(host=host, port=port, db=db, prefix=prefix, td_id=td_id,
                                    unix_socket_path=unix_socket_path, **kwargs), ())
        if not store._attach(device):
            raise KeyError(f"No TensorDictStore with td_id={td_id!r} found at "
                           f"{where(store._shared.client)} db={db} (prefix={prefix!r}).")
        tensorclass = class_of(tensorclass_cls, store._shared.tensorclass)
        return store if tensorclass is None else tensorclass.from_tensordict(store)

    def clone(self, recurse: bool = True, **kwargs: Any) -> TensorDictStore:
        """A new store on the same server holding a copy of the entries (of this view's,
        for a sub-TensorDict); ``recurse=False``: another handle (unlocked) on the same
        store, whose writes reach it.

        >>> copy = store.clone()  # doctest: +SKIP
        >>> copy._td_id != store._td_id, torch.equal(copy["obs"], store["obs"])  # doctest: +SKIP
        (True, True)
        """
        shared = self._shared
        if not recurse:
            handle = self._view(self._path)
            handle._is_locked = False
            return handle
        store = TensorDictStore.__new__(TensorDictStore)
        store._init(_Shared.connect(prefix=shared.prefix, cache_metadata=shared.cache_metadata,
                                    **connection_kwargs(shared.client)), ())
        store._create(self._batch_size, self._device,
                      None if self._path else shared.tensorclass)
        store._store_entries(list(_leaves(self.read())), replace=())
        return store

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as where it lives: the receiving process connects itself."""
        shared = self._shared
        return _reconnect, (connection_kwargs(shared.client), shared.prefix, shared.td_id,
                            self._path, self._device, shared.cache_metadata)

    # -- primitives --------------------------------------------------------------------
    @property
    def batch_size(self) -> torch.Size:
        return self._batch_size

    @batch_size.setter
    def batch_size(self, value: Sequence[int]) -> None:
        if self._path:
            raise RuntimeError("set the batch size of a TensorDictStore on the store, "
                               "not on one of its sub-TensorDicts")
        size = torch.Size(value)
        keys = sorted(self._shared.leaf_keys())
        for key, meta in zip(keys, self._shared.metas(keys)):
            if not _codec.is_non_tensor(meta):
                shape = _codec.shape_of(meta)
                if shape[:len(size)] != size:
                    raise errors.batch_mismatch(key, shape, size)
        self._shared.run(self._shared.client.set, self._shared.space + "__batch_size__",
                         json.dumps(list(size)))
        self._batch_size = size

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked

    def _dotted(self, key: str) -> str:
        return SEPARATOR.join((*self._path, key))

    def _under(self, dotted: str | None = None) -> list[str]:
        """The dotted keys of the leaves below this view (or below ``dotted``)."""
        prefix = (dotted if dotted is not None else SEPARATOR.join(self._path))
        if not prefix:
            return sorted(self._shared.leaf_keys())
        prefix += SEPARATOR
        return sorted(key for key in self._shared.leaf_keys() if key.startswith(prefix))

    def _keys_str(self) -> Iterator[str]:
        depth = len(self._path)
        seen: dict[str, None] = {}
        for key in self._under():
            seen.setdefault(key.split(SEPARATOR)[depth])
        return iter(seen)

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        try:
            return self._lookup(key, default)
        except _codec.Gone:  # another client deleted or replaced it: look again
            self._shared.refresh()
            return self._lookup(key, default)

    def _lookup(self, key: str, default: Any) -> Any:
        dotted = self._dotted(key)
        shared = self._shared
        if dotted in shared.leaf_keys():
            (meta,) = shared.metas([dotted])
            data = shared.run(shared.client.get, shared.space + "d:" + dotted)
            return self._decode(meta, data)
        if self._under(dotted):
            return self._view((*self._path, key))
        if default is NO_DEFAULT:
            raise errors.missing_key(key, list(self._keys_str()))
        return default

    def _decode(self, meta: dict[str, str], data: bytes | None,
                shape: torch.Size | None = None) -> Any:
        """The value of a leaf (:class:`~tensordict.store._codec.Gone` if it was deleted)."""
        if not meta or data is None:
            raise _codec.Gone("the leaf is no longer stored")
        if _codec.is_non_tensor(meta):
            return _codec.decode_non_tensor(meta, data or b"null", self._batch_size,
                                            self._device)
        tensor = _codec.decode_tensor(meta, data, shape)
        return tensor if self._device is None else tensor.to(self._device)

    def _peek_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        dotted = self._dotted(key)
        if dotted in self._shared.leaf_keys():
            (meta,) = self._shared.metas([dotted])
            if not _codec.is_non_tensor(meta):
                return torch.empty(_codec.shape_of(meta), dtype=_codec.dtype_of(meta),
                                   device="meta")
        return self._get_str(key, default)

    # -- writes ------------------------------------------------------------------------
    def _check_writable(self, key: Any) -> None:
        if self._is_locked:
            raise errors.locked("modify", key)

    def _validate_value(self, value: Any, key: Any, non_blocking: bool = False) -> Any:
        """``value`` as it will be stored; raises if it does not fit the batch size."""
        if not isinstance(value, torch.Tensor) and not is_tensor_collection(value):
            # converted as a TensorDict converts it: a dict nests, numbers and arrays
            # become tensors, a list of one value per element a NonTensorStack
            value = TensorDict(batch_size=self._batch_size).set(key, value).get(key)
        if getattr(value, "_is_non_tensor", False):
            return value
        shape = value.shape if isinstance(value, torch.Tensor) else value.batch_size
        batch = self._batch_size
        if tuple(shape[:len(batch)]) != tuple(batch):
            raise errors.batch_mismatch(key, shape, batch)
        return value

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> TensorDictStore:
        """Store ``value`` at ``key``: in place (``set_``), a tensor keeps the stored shape
        and dtype (its values converted; RuntimeError, nothing written, if it does not
        fit); otherwise it replaces what was stored."""
        if not inplace:
            self._check_writable(key)
        if SEPARATOR in key:
            raise ValueError(f"a key of a TensorDictStore cannot contain {SEPARATOR!r} "
                             f"(nested keys are stored joined with it): got {key!r}")
        if not validated:
            value = self._validate_value(value, key)
        if isinstance(value, TensorDictStore) and value._shared is self._shared and \
                value._path == (*self._path, key):
            return self
        entries = self._entries(key, value)
        if inplace:
            self._store_entries(self._fitted(entries), replace=())
        else:
            self._store_entries(entries, replace=(self._dotted(key),))
        return self

    def _plan_set_(self, plan: Any, key: str, value: Any, path: Any,
                   non_blocking: bool) -> None:
        """The in-place write of ``set_`` into a lazy stack of stores: checked now, stored
        when ``plan`` runs (with the other parts' writes)."""
        value = self._validate_value(value, path)
        plan.call(self._store_entries, self._fitted(self._entries(key, value)), ())

    def _write_back(self, local: TensorDictBase) -> None:
        """Every tensor of ``local`` over the leaf of the same key, in one transaction."""
        prefix = SEPARATOR.join(self._path)
        entries = [(SEPARATOR.join((prefix, key)) if prefix else key, value)
                   for key, value in _leaves(local) if isinstance(value, torch.Tensor)]
        self._store_entries(self._fitted(entries), replace=())

    def _entries(self, key: str, value: Any) -> list[tuple[str, Any]]:
        """``(dotted key, leaf)`` of ``value`` stored at ``key``."""
        dotted = self._dotted(key)
        if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
            return [(SEPARATOR.join((dotted, sub)), leaf) for sub, leaf in _leaves(value)]
        return [(dotted, value)]

    def _fitted(self, entries: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
        """``entries`` as in-place writes: a value over a stored tensor is checked against
        its shape (RuntimeError naming the key) and converted to its dtype."""
        shared = self._shared
        present = [key for key, _ in entries if key in shared.leaf_keys()]
        metas = dict(zip(present, shared.metas(present)))
        out = []
        for key, value in entries:
            meta = metas.get(key)
            if meta and not _codec.is_non_tensor(meta):
                name = tuple(key.split(SEPARATOR)) if SEPARATOR in key else key
                if not isinstance(value, torch.Tensor):
                    raise TypeError(f"cannot write a {type(value).__name__} in place of the "
                                    f"tensor {name!r}")
                shape = _codec.shape_of(meta)
                check_fits(value.shape, shape, name)
                value = value.expand(shape).to(_codec.dtype_of(meta))
            out.append((key, value))
        return out

    def _store_entries(self, entries: list[tuple[str, Any]], replace: Sequence[str],
                       ranges: Sequence[tuple[str, int, bytes]] = ()) -> None:
        """Write ``(dotted key, value)`` leaves in one transaction, deleting first the
        leaves at or below the keys of ``replace``; with them, the ``(dotted key, offset,
        bytes)`` of ``ranges`` over the bytes of stored tensors."""
        shared = self._shared
        old = [key for dotted in replace for key in
               ([dotted] if dotted in shared.leaf_keys() else []) + self._under(dotted)]
        encoded = []
        for key, value in entries:
            if isinstance(value, torch.Tensor) and _is_expanded_zero(value):
                meta = _codec.encode_tensor(value[(0,) * value.dim()])[0]
                meta["shape"] = json.dumps(list(value.shape))
                encoded.append((key, meta, _Zeros(value.numel() * value.element_size())))
            elif isinstance(value, torch.Tensor):
                encoded.append((key, *_codec.encode_tensor(value)))
            else:
                if not getattr(value, "_is_non_tensor", False):
                    value = NonTensorData(value, batch_size=self._batch_size)
                encoded.append((key, *_codec.encode_non_tensor(value, key)))
        pipe = shared.pipeline(transaction=True)
        space = shared.space
        for key in old:
            pipe.delete(space + "d:" + key, space + "m:" + key)
        if old:
            pipe.srem(space + "__keys__", *old)
        for key, meta, data in encoded:
            pipe.delete(space + "m:" + key, space + "d:" + key)
            if isinstance(data, _Zeros):  # the server pads with zero bytes up to the offset
                if data.size:
                    pipe.setrange(space + "d:" + key, data.size - 1, b"\0")
                else:
                    pipe.set(space + "d:" + key, b"")
            else:
                pipe.set(space + "d:" + key, data)
            pipe.hset(space + "m:" + key, mapping=meta)
        if encoded:
            pipe.sadd(space + "__keys__", *[key for key, _, _ in encoded])
        for key, offset, data in ranges:
            pipe.setrange(space + "d:" + key, offset, data)
        shared.run(pipe.execute)
        shared.forget(old, added=False)
        shared.forget([key for key, _, _ in encoded], added=True)

    def _del_str(self, key: str) -> None:
        self._check_writable(key)
        dotted = self._dotted(key)
        if dotted not in self._shared.leaf_keys() and not self._under(dotted):
            raise errors.missing_key(key, list(self._keys_str()))
        self._store_entries([], replace=(dotted,))

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        """The view holding ``path[-1]`` (views need no creating: keys are flat)."""
        for depth in range(1, len(path)):
            dotted = SEPARATOR.join((*self._path, *path[:depth]))
            if dotted in self._shared.leaf_keys():
                raise errors.KeyThroughLeafError(
                    f"{path[depth - 1]!r} is a leaf, not a TensorDict, so it has no entry "
                    f"{path[depth]!r} (writing {path!r}).")
        if not create and len(path) > 1 and not self._under(
                SEPARATOR.join((*self._path, *path[:-1]))):
            raise errors.missing_key(path, list(self._keys_str()))
        return self._view((*self._path, *path[:-1])) if len(path) > 1 else self

    # -- rows --------------------------------------------------------------------------
    def read(self, rows: Any = None, keys: Sequence[str] | None = None) -> TensorDict:
        """The leaves below this view (those of the dotted ``keys``) read into an
        in-memory TensorDict, all of them in one round trip: every row, or the ``rows`` of
        :func:`split_rows` (a slice or sorted row numbers) read as byte ranges. Leaves
        another client deleted meanwhile are left out."""
        try:
            return self._read(rows, keys)
        except _codec.Gone:
            self._shared.refresh()
            return self._read(rows, keys)

    def _read(self, rows: Any, keys: Sequence[str] | None) -> TensorDict:
        shared, space = self._shared, self._shared.space
        keys = self._under() if keys is None else [
            key for key in keys if key in shared.leaf_keys()]
        metas = shared.metas(keys)
        batch = self._batch_size
        if rows is not None:
            count = len(range(*rows.indices(batch[0]))) if isinstance(rows, slice) else len(rows)
            batch = torch.Size((count, *batch[1:]))
        pipe = shared.pipeline()
        plans = []
        for key, meta in zip(keys, metas):
            if rows is None or _codec.is_non_tensor(meta):
                pipe.get(space + "d:" + key)
                plans.append(1)
                continue
            size = _codec.row_bytes(meta)
            ranges = _row_ranges(rows, self._batch_size[0])
            for start, stop in ranges:
                pipe.getrange(space + "d:" + key, start * size, stop * size - 1)
            plans.append(len(ranges))
        replies = iter(shared.run(pipe.execute))
        out: dict[str, Any] = {}
        depth = len(self._path)
        for key, meta, count in zip(keys, metas, plans):
            chunks = [next(replies) for _ in range(count)]
            if _codec.is_non_tensor(meta):
                value = self._decode(meta, chunks[0])
                if rows is not None:
                    value = value[rows if isinstance(rows, slice) else torch.from_numpy(rows)]
            elif rows is None:
                value = self._decode(meta, chunks[0])
            else:
                shape = torch.Size((batch[0], *_codec.shape_of(meta)[1:]))
                value = self._decode(meta, b"".join(chunks), shape)
            node = out
            parts = key.split(SEPARATOR)[depth:]
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        return TensorDict(out, batch_size=batch, device=self._device)

    def _index(self, index: Any) -> IndexView:
        """A view of the rows ``index``: reads and writes reach the server."""
        return IndexView(self, index)

    def _read_at(self, index: Any) -> TensorDict:
        """``self[index]`` read into memory: its rows of every leaf, in one round trip."""
        rows, rest = split_rows(index, self._batch_size)
        return self.read(rows)[rest]

    def _get_at_str(self, key: str, index: Any, default: Any = NO_DEFAULT) -> Any:
        """The rows ``index`` of the leaf ``key`` alone (byte ranges, one round trip);
        a view of them for a sub-TensorDict."""
        dotted = self._dotted(key)
        if dotted not in self._shared.leaf_keys():
            return super()._get_at_str(key, index, default)
        rows, rest = split_rows(index, self._batch_size)
        return self.read(rows, [dotted])[rest]._get_str(key, default)

    def _set_at_index(self, index: Any, value: Any) -> None:
        """``store[index] = value``: every key and shape checked, then one transaction.
        The rows (first-dim indices) of stored tensors are written as byte ranges; the
        other entries are read, written at ``index`` as a TensorDict writes them, and
        stored whole: a non-tensor entry holds one value per element (a NonTensorStack
        where they differ), an entry the store lacks is created (zeros elsewhere, as a
        TensorDict creates it). Allowed while locked (as upstream) for existing entries.
        """
        batch = self._indexed_batch(index)
        if not is_tensor_collection(value):
            value = TensorDict(dict(value), batch_size=batch)
        shared = self._shared
        rows, rest = split_rows(index, self._batch_size)
        by_rows = rows is not None and len(rest) == 1 and (
            isinstance(rest[0], (int, slice)) or torch.equal(rest[0], torch.arange(len(rows))))
        leaves = [(self._dotted(sub), sub, leaf) for sub, leaf in _leaves(value)]
        present = [key for key, _, _ in leaves if key in shared.leaf_keys()]
        metas = dict(zip(present, shared.metas(present)))
        ranges, merged = [], []
        for key, sub, source in leaves:
            meta = metas.get(key)
            if meta is None and self._is_locked:
                raise errors.locked("add an entry at an index of", sub)
            if by_rows and meta and not _codec.is_non_tensor(meta) and \
                    isinstance(source, torch.Tensor):
                shape = torch.Size((*batch, *_codec.shape_of(meta)[len(self._batch_size):]))
                check_fits(source.shape, shape, sub, index)
                ranges += _row_writes(key, meta, source.expand(shape), rows,
                                      self._batch_size[0])
            else:
                merged.append((key, sub, source))
        entries = []
        if merged:  # written into the stored values read whole, as a TensorDict writes
            current = self.read(keys=[key for key, _, _ in merged if key in metas])
            part = TensorDict(batch_size=batch, device=self._device)
            for _, sub, source in merged:
                part.set(tuple(sub.split(SEPARATOR)), source)
            current[index] = part
            entries = [(key, current.get(tuple(sub.split(SEPARATOR))))
                       for key, sub, _ in merged]
        self._store_entries(entries, replace=(), ranges=ranges)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """Every entry read into an ordinary in-memory TensorDict (one round trip)."""
        return self.read()

    to_local = to_tensordict

    def __repr__(self) -> str:
        return (f"TensorDictStore(keys={list(self._keys_str())}, "
                f"batch_size={self._batch_size}, device={self._device}, backend='redis', "
                f"td_id={self._shared.td_id!r})")


class _Zeros:
    """``size`` zero bytes, made by the server rather than sent."""

    def __init__(self, size: int) -> None:
        self.size = size


def _is_expanded_zero(tensor: torch.Tensor) -> bool:
    """A tensor of zeros expanded from one element (``from_schema``'s prototype)."""
    return tensor.numel() > 1 and not any(tensor.stride()) and \
        not tensor.requires_grad and tensor.reshape(-1)[0].item() == 0


def _row_writes(key: str, meta: dict[str, str], source: torch.Tensor, rows: Any,
               length: int) -> list[tuple[str, int, bytes]]:
    """``(key, offset, bytes)`` writing ``source`` (one row per row of ``rows``, in
    order) over the stored tensor ``key`` of ``length`` rows."""
    size = _codec.row_bytes(meta)
    data = _codec.encode_tensor(source.to(_codec.dtype_of(meta)))[1]
    writes, offset = [], 0
    for start, stop in _row_ranges(rows, length):
        count = (stop - start) * size
        if count:
            writes.append((key, start * size, data[offset:offset + count]))
        offset += count
    return writes


def _row_ranges(rows: Any, length: int) -> list[tuple[int, int]]:
    """``rows`` (a slice or sorted row numbers) as ``(start, stop)`` runs of rows."""
    if isinstance(rows, slice):
        start, stop, step = rows.indices(length)
        if step == 1:
            return [(start, max(start, stop))]
        return [(row, row + 1) for row in range(start, stop, step)]
    runs: list[tuple[int, int]] = []
    for row in rows.tolist():
        if runs and runs[-1][1] == row:
            runs[-1] = (runs[-1][0], row + 1)
        else:
            runs.append((row, row + 1))
    return runs


def _leaves(td: Any) -> Iterator[tuple[str, Any]]:
    """``(dotted key, leaf)`` of every tensor and non-tensor leaf of ``td``."""
    for key, value in td.items(True, True, is_leaf=_is_stored_leaf):
        yield (key if isinstance(key, str) else SEPARATOR.join(key)), value


def _is_stored_leaf(cls: type) -> bool:
    nests = issubclass(cls, TensorDictBase) or getattr(cls, "_is_tensorclass", False)
    return not nests or getattr(cls, "_is_non_tensor", False)


def _reconnect(kwargs: Mapping[str, Any], prefix: str, td_id: str, path: tuple[str, ...],
               device: Any, cache_metadata: bool) -> TensorDictStore:
    store = TensorDictStore(prefix=prefix, td_id=td_id, device=device,
                            cache_metadata=cache_metadata,
                            **{k: v for k, v in kwargs.items() if v is not None})
    return store._view(path) if path else store
