"""``td.save`` and ``TensorDict.load``: storage through the storage-backend plugins.

Core knows no file format. A plugin contributes backends through the
``tensordict_storage_backends`` hook (tensordict-memmap provides ``"memmap"``, upstream's
format, which is the default: ``td.save(prefix)`` is ``td.memmap(prefix)`` and
``TensorDict.load(prefix)`` is ``TensorDict.load_memmap(prefix)`` as in upstream). Loading
without a ``backend`` asks every installed backend whether it ``can_load`` the path.

>>> import tempfile
>>> import torch
>>> from tensordict import TensorDict
>>> from tensordict.plugins import hookimpl, register, unregister
>>> class Pickled:  # a toy backend, registered at run time
...     def save(self, td, path):
...         torch.save(td.to_dict(), path)
...         return td
...     def load(self, path):
...         return TensorDict(torch.load(path))
...     def can_load(self, path):
...         return str(path).endswith(".pt")
>>> class ToyPlugin:
...     @hookimpl
...     def tensordict_storage_backends(self):
...         return {"toy": Pickled()}
>>> plugin = register(ToyPlugin())
>>> path = tempfile.mkdtemp() + "/td.pt"
>>> _ = TensorDict(a=torch.ones(2)).save(path, backend="toy")
>>> TensorDict.load(path)["a"]
tensor([1., 1.])
>>> unregister(plugin)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from tensordict import plugins
from tensordict._collection import classes

DEFAULT_BACKEND = "memmap"


def save(td: Any, prefix: str | Path | None = None, *args: Any,
         backend: str = DEFAULT_BACKEND, **kwargs: Any) -> Any:
    """Write ``td`` under ``prefix`` with the storage backend called ``backend``.

    Extra arguments go to the backend's ``save``; its result (for ``"memmap"``, the
    memory-mapped copy of ``td``) is returned.
    """
    return plugins.storage_backend(backend).save(td, prefix, *args, **kwargs)


def load(prefix: str | Path, *args: Any, backend: str | None = None, **kwargs: Any) -> Any:
    """Read the collection saved under ``prefix``.

    With ``backend=None`` the first installed backend whose ``can_load(prefix)`` is true
    reads it; extra arguments go to that backend's ``load``.
    """
    if backend is not None:
        return plugins.storage_backend(backend).load(prefix, *args, **kwargs)
    backends = plugins.storage_backends()
    for found in backends.values():
        if found.can_load(prefix):
            return found.load(prefix, *args, **kwargs)
    if not backends:
        raise plugins.MissingPluginError(
            f"no storage backend is installed to load {str(prefix)!r}. "
            + plugins.install_hint(f"the default {DEFAULT_BACKEND!r} storage backend",
                                   plugins._BACKENDS[DEFAULT_BACKEND])
        )
    raise ValueError(
        f"none of the installed storage backends {sorted(backends)} can load {str(prefix)!r}"
    )


def zeros_prototype(schema: Mapping[str, Any], batch_size: torch.Size) -> Any:
    """A TensorDict of ``schema`` (key -> ``(element_shape, dtype)``, or a nested schema)
    whose tensors are zeros expanded from one element: shapes and dtypes, no memory."""
    entries: dict[str, Any] = {}
    for key, spec in schema.items():
        if isinstance(spec, Mapping):
            entries[key] = zeros_prototype(spec, batch_size)
            continue
        try:
            shape, dtype = spec
            shape = torch.Size((*batch_size, *shape))
        except (TypeError, ValueError):
            raise TypeError(f"the schema entry {key!r} must be an (element_shape, dtype) "
                            f"pair or a nested schema, got {spec!r}") from None
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"the schema entry {key!r} has no torch.dtype: {dtype!r}")
        entries[key] = torch.zeros((), dtype=dtype).expand(shape)
    return classes.TensorDict(entries, batch_size=batch_size)


class StorageMixin:
    """``save`` and ``load`` on tensor collections, dispatching to storage backends."""

    __slots__ = ()

    @classmethod
    def from_schema(cls, schema: Mapping[str, Any], *,
                    batch_size: Sequence[int] | torch.Size | None = None,
                    storage: str | None = None, device: Any = None, **kwargs: Any) -> Any:
        """A zero-filled collection of ``schema`` (key -> ``(element_shape, dtype)``; a
        nested dict for a sub-TensorDict), created where ``storage`` says without being
        built in memory first: ``None`` (ordinary tensors), ``"shared"`` (shared memory),
        or a storage backend: ``"memmap"`` (``prefix=``), ``"h5"`` and ``"zarr"``
        (``filename=``), ``"redis"`` (``host=``, ``port=``...). A backend that is not
        installed gives an error saying which package to install.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict.from_schema({"obs": ([84, 84, 3], torch.uint8),
        ...                              "next": {"reward": ([], torch.float32)}},
        ...                             batch_size=[1000])
        >>> td["obs"].shape, td["next", "reward"].dtype
        (torch.Size([1000, 84, 84, 3]), torch.float32)
        """
        size = torch.Size(batch_size or ())
        prototype = zeros_prototype(schema, size)
        if storage is None or storage == "shared":
            if kwargs:
                raise TypeError(f"from_schema(storage={storage!r}) got unexpected arguments "
                                f"{sorted(kwargs)}")
            out = prototype.apply(lambda x: torch.zeros(x.shape, dtype=x.dtype, device=device))
            if device is not None:
                out.device = device
            return out.share_memory_() if storage == "shared" else out
        backend = plugins.storage_backend(storage)
        make = getattr(backend, "from_schema", None)
        if make is None:
            raise ValueError(f"the {storage!r} storage backend cannot create a collection "
                             f"from a schema")
        return make(prototype, device=device, **kwargs)

    def save(self, prefix: str | Path | None = None, *args: Any,
             backend: str = DEFAULT_BACKEND, **kwargs: Any) -> Any:
        """Save to ``prefix`` with a storage backend (default ``"memmap"``, i.e.
        ``td.memmap(prefix)``); extra arguments go to the backend.

        >>> from tensordict import TensorDict
        >>> TensorDict().save("/tmp/x", backend="nope")
        Traceback (most recent call last):
        ValueError: unknown storage backend 'nope'; installed: [...]
        """
        return save(self, prefix, *args, backend=backend, **kwargs)

    @classmethod
    def load(cls, prefix: str | Path, *args: Any, backend: str | None = None,
             **kwargs: Any) -> Any:
        """Load what was saved under ``prefix``; with ``backend=None`` the backend is
        the installed one that recognises the files (``"memmap"`` for ``td.save``).

        >>> from tensordict import TensorDict
        >>> TensorDict.load("/nonexistent", backend="nope")
        Traceback (most recent call last):
        ValueError: unknown storage backend 'nope'; installed: [...]
        """
        return load(prefix, *args, backend=backend, **kwargs)
