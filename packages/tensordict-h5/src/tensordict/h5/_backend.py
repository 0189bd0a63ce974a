"""The ``"h5"`` storage backend: ``td.save(path, backend="h5")`` and
``TensorDict.load(path)`` of an HDF5 file."""

from __future__ import annotations

from typing import Any

_SIGNATURE = b"\x89HDF\r\n\x1a\n"


class H5Backend:
    """Saves as :func:`tensordict.h5.to_h5` does; loads an HDF5 file as a
    PersistentTensorDict (read only unless ``mode=`` says otherwise)."""

    def save(self, td: Any, path: Any, **kwargs: Any) -> Any:
        from tensordict.h5 import to_h5

        return to_h5(td, path, **kwargs)

    def load(self, path: Any, **kwargs: Any) -> Any:
        from tensordict.h5 import from_h5

        return from_h5(path, **kwargs)

    def from_schema(self, prototype: Any, *, device: Any = None, filename: Any = None,
                    **kwargs: Any) -> Any:
        """``TensorDict.from_schema(..., storage="h5", filename=...)``: a new file of
        zero-filled datasets (nothing is built in memory)."""
        if filename is None:
            raise TypeError("from_schema(storage='h5') needs filename=")
        from tensordict.h5 import to_h5

        return to_h5(prototype, filename, device=device, **kwargs)

    def can_load(self, path: Any) -> bool:
        """Whether ``path`` is a file starting with the HDF5 signature."""
        try:
            with open(path, "rb") as file:
                return file.read(8) == _SIGNATURE
        except OSError:
            return False
