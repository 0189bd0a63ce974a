"""The ``"zarr"`` storage backend: ``td.save(path, backend="zarr")`` and
``TensorDict.load(path)`` of a Zarr store."""

from __future__ import annotations

import json
import os
from typing import Any


class ZarrBackend:
    """Saves as :func:`tensordict.zarr.to_zarr` does; loads a Zarr store as a
    PersistentTensorDict (read only unless ``mode=`` says otherwise)."""

    def save(self, td: Any, path: Any, **kwargs: Any) -> Any:
        from tensordict.zarr import to_zarr

        return to_zarr(td, path, **kwargs)

    def load(self, path: Any, **kwargs: Any) -> Any:
        from tensordict.zarr import from_zarr

        return from_zarr(path, **kwargs)

    def from_schema(self, prototype: Any, *, device: Any = None, filename: Any = None,
                    **kwargs: Any) -> Any:
        """``TensorDict.from_schema(..., storage="zarr", filename=...)``: a new store of
        zero-filled arrays (no chunk is written)."""
        if filename is None:
            raise TypeError("from_schema(storage='zarr') needs filename=")
        from tensordict.zarr import to_zarr

        return to_zarr(prototype, filename, device=device, **kwargs)

    def can_load(self, path: Any) -> bool:
        """Whether ``path`` is a folder holding a Zarr v3 group."""
        try:
            with open(os.path.join(os.fspath(path), "zarr.json")) as file:
                meta = json.load(file)
        except (OSError, ValueError):
            return False
        return meta.get("node_type") == "group"
