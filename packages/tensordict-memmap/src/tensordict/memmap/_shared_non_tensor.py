"""Non-tensor data shared between processes (``memmap(..., share_non_tensor=True)``).

The value of a memmapped :class:`NonTensorData` lives in its folder's ``meta.json``.
A :class:`SharedNonTensorData` reads it from there on every access and writes it back
atomically on an in-place update (``set_``/``update_``), so every process holding the
collection (or a pickled copy of it: pickling sends the folder) sees the same value.

Example:
    >>> import tempfile
    >>> from tensordict import TensorDict
    >>> td = TensorDict(s="old").memmap(tempfile.mkdtemp(), share_non_tensor=True)
    >>> td.set_("s", "new")["s"], TensorDict.load_memmap(td.saved_path)["s"]
    ('new', 'new')
"""

from __future__ import annotations

import os
from typing import Any

import torch

from tensordict import NonTensorData
from tensordict.memmap import _jsonsafe, _layout

_UNSET = object()  # the value NonTensorData.__init__ stores: leaves meta.json as it is


class SharedNonTensorData(NonTensorData):
    """A non-tensor leaf whose value is the ``data`` field of ``folder/meta.json``.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> leaf = SharedNonTensorData(folder, "a", batch_size=[2])
    >>> other = SharedNonTensorData(folder)  # another handle on the same folder
    >>> leaf.data = "b"
    >>> other.data, leaf.tolist()
    ('b', ['b', 'b'])
    """

    __slots__ = ("_folder",)

    def __init__(self, folder: str, *data: Any, batch_size: Any = None, device: Any = None,
                 names: Any = None) -> None:
        object.__setattr__(self, "_folder", folder)
        super().__init__(data[0] if data else _UNSET, batch_size=batch_size, device=device,
                         names=names)

    @property
    def data(self) -> Any:  # type: ignore[override]
        """The value, read from ``meta.json``."""
        return _jsonsafe.decode(_layout.read_meta(self._folder).get("data"))

    @data.setter
    def data(self, value: Any) -> None:
        if value is _UNSET:
            return
        try:
            encoded = _jsonsafe.encode(value)
        except _jsonsafe.NotRepresentable as err:
            raise TypeError(f"cannot share the non-tensor value {value!r} of "
                            f"{self._folder}: {err}") from err
        meta = _layout.read_meta(self._folder) if os.path.exists(
            os.path.join(self._folder, _layout.META)) else {}
        meta.update(data=encoded, _is_non_tensor=True)
        meta.setdefault("_type", "<class 'tensordict.tensorclass.NonTensorData'>")
        meta.setdefault("_metadata", None)
        _layout.write_meta(self._folder, _layout.dumps_meta(meta))

    def _rebatch(self, batch_size: torch.Size, device: Any = None,
                 names: Any = None) -> SharedNonTensorData:
        return SharedNonTensorData(self._folder, batch_size=batch_size,
                                   device=self._device if device is None else device,
                                   names=names)

    def __reduce__(self) -> tuple[Any, ...]:
        return (SharedNonTensorData, (self._folder,),
                {"_batch_size": self._batch_size, "_device": self._device,
                 "_names": self._names})

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
