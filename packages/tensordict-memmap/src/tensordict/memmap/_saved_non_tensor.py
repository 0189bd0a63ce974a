"""The non-tensor entries of a memory-mapped collection, and how they are written to
their folder.

A memmapped ``NonTensorData`` or ``NonTensorStack`` lives in a folder of its own
(``meta.json``, plus ``other.pickle``/``pickle.pkl`` for a value JSON cannot hold).
``memmap`` builds them as :class:`SavedNonTensorData` and :class:`SavedNonTensorStack`:
an in-place write (``set_``, ``update_``, ``set(..., inplace=True)``, ``copy_``,
``td[idx] = ...`` on a stack), which core makes by assigning ``entry.data`` or calling
``entry._set_at_index``, rewrites the folder first, atomically, and only then the value
in memory. A value that cannot be written (no JSON encoding with ``allow_pickle=False``,
an unwritable folder) raises, leaving memory and disk as they were.

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(2), s="old", batch_size=[2]).memmap(tempfile.mkdtemp())
    >>> td.update_({"s": "new"})["s"], TensorDict.load_memmap(td.saved_path)["s"]
    ('new', 'new')
"""

from __future__ import annotations

import os
import pickle
from typing import Any

import torch

from tensordict import NonTensorData, NonTensorStack
from tensordict.memmap import _jsonsafe, _layout
from tensordict.storage import atomic_write

NONTENSOR_TYPE = "<class 'tensordict.tensorclass.NonTensorData'>"
STACK_TYPE = "<class 'tensordict.tensorclass.NonTensorStack'>"
DATA_PICKLE = "other.pickle"  # the file of a NonTensorData value JSON cannot hold
STACK_PICKLE = "pickle.pkl"  # the file of a NonTensorStack's values JSON cannot hold


# -- encoding -------------------------------------------------------------------------------
def pickled(data: Any, err: Exception, where: str, allow_pickle: bool) -> bytes:
    """``data``, which has no JSON encoding, pickled unless the caller refuses pickles."""
    if not allow_pickle:
        raise TypeError(f"cannot memmap the non-tensor entry {where} without pickle: {err} "
                        "(and allow_pickle=False was passed)")
    try:
        return pickle.dumps(data, protocol=4)
    except (pickle.PicklingError, TypeError, AttributeError) as perr:
        raise TypeError(f"cannot memmap the non-tensor entry {where}: {perr}") from perr


def encode_data(data: Any, metadata: Any, where: str,
                allow_pickle: bool) -> tuple[str, tuple[str, bytes] | None]:
    """The ``meta.json`` text of a NonTensorData holding ``data``, and the pickle file
    (name, bytes) it needs, if any."""
    meta: dict[str, Any] = {"_type": NONTENSOR_TYPE}
    pickle_file = None
    try:
        meta.update(data=_jsonsafe.encode(data), _metadata=_jsonsafe.encode(metadata))
    except _jsonsafe.NotRepresentable as err:
        pickle_file = (DATA_PICKLE, pickled({"data": data, "_metadata": metadata}, err, where,
                                            allow_pickle))
        meta["_metadata"] = None
    meta["_is_non_tensor"] = True
    return _layout.dumps_meta(meta), pickle_file


def encode_stack(values: list[Any], device: torch.device | None, where: str,
                 allow_pickle: bool) -> tuple[str, tuple[str, bytes] | None]:
    """The ``meta.json`` text of a NonTensorStack of the (nested) list ``values``, and the
    pickle file it needs, if any."""
    pickle_file = None
    try:
        encoded: Any = _jsonsafe.encode(values)
    except _jsonsafe.NotRepresentable as err:
        pickle_file = (STACK_PICKLE, pickled(values, err, where, allow_pickle))
        encoded = STACK_PICKLE
    return _layout.dumps_meta({
        "_type": STACK_TYPE, "_format_version": _layout.FORMAT_VERSION,
        "_class": "tensordict:NonTensorStack", "stack_dim": 0,
        "device": None if device is None else str(device), "data": encoded},
        compact=True), pickle_file


# -- rewriting a saved folder -----------------------------------------------------------------
def _write_bytes(path: str, data: bytes) -> None:
    def write(tmp: str) -> None:
        with open(tmp, "wb") as file:
            file.write(data)

    atomic_write(path, write)


def rewrite(folder: str, meta: str, pickle_file: tuple[str, bytes] | None) -> None:
    """Replace the saved entry in ``folder`` by ``meta`` (and ``pickle_file``), each file
    atomically; if writing ``meta.json`` fails, the pickle file it would have named is
    put back as it was: the folder loads as before."""
    old_pickle: tuple[str, bytes | None] | None = None
    if pickle_file is not None:
        path = os.path.join(folder, pickle_file[0])
        try:
            with open(path, "rb") as file:
                old_pickle = (path, file.read())
        except FileNotFoundError:
            old_pickle = (path, None)
        _write_bytes(path, pickle_file[1])
    try:
        _layout.write_meta(folder, meta)
    except BaseException:
        if old_pickle is not None:
            if old_pickle[1] is None:
                os.unlink(old_pickle[0])
            else:
                _write_bytes(*old_pickle)
        raise


class SavedValue:
    """The one value of a memmapped NonTensorData, shared by the entry and its index and
    device views, and the folder it is saved in (None: not saved, memory only)."""

    __slots__ = ("value", "metadata", "folder", "allow_pickle")

    def __init__(self, value: Any, metadata: Any = None, folder: str | None = None,
                 allow_pickle: bool = True) -> None:
        self.value, self.metadata = value, metadata
        self.folder, self.allow_pickle = folder, allow_pickle

    def write(self, value: Any) -> None:
        """Rewrite the folder with ``value`` (nothing changes if that fails), then keep it."""
        if self.folder is not None:
            rewrite(self.folder, *encode_data(value, self.metadata, repr(self.folder),
                                              self.allow_pickle))
        self.value = value


_KEEP = object()  # what NonTensorData.__init__ assigns to ``data``: keep the saved value


class SavedNonTensorData(NonTensorData):
    """A NonTensorData saved in a folder: assigning ``data`` (what every in-place write
    of it does) rewrites the folder, then the value.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> entry = SavedNonTensorData.saved("a", folder, batch_size=[2])
    >>> entry.data = "b"
    >>> _layout.read_meta(folder)["data"], entry[0].data
    ('b', 'b')
    """

    __slots__ = ("_saved",)

    def __init__(self, data: Any, _metadata: Any = None, _is_non_tensor: bool = True, *,
                 batch_size: Any = None, device: Any = None, names: Any = None) -> None:
        if data is not _KEEP:  # a copy (clone...): its own value, in memory only
            self._saved = SavedValue(data, _metadata)
        super().__init__(_KEEP, _metadata, batch_size=batch_size, device=device, names=names)

    @classmethod
    def saved(cls, data: Any, folder: str, *, metadata: Any = None, allow_pickle: bool = True,
              batch_size: Any = None, device: Any = None,
              names: Any = None) -> SavedNonTensorData:
        """The entry of ``data``, already written in ``folder``."""
        return cls._of(SavedValue(data, metadata, folder, allow_pickle), batch_size, device,
                       names)

    @classmethod
    def _of(cls, saved: SavedValue, batch_size: Any, device: Any,
            names: Any) -> SavedNonTensorData:
        entry = cls.__new__(cls)
        entry._saved = saved
        NonTensorData.__init__(entry, _KEEP, saved.metadata, batch_size=batch_size,
                               device=device, names=names)
        return entry

    @property
    def data(self) -> Any:  # type: ignore[override]
        """The value (shared with the index views of this entry)."""
        return self._saved.value

    @data.setter
    def data(self, value: Any) -> None:
        if value is not _KEEP:
            self._saved.write(value)

    def _rebatch(self, batch_size: torch.Size, device: Any = None,
                 names: Any = None) -> SavedNonTensorData:
        # an index or device view: the same value, so that a write through it lands
        return self._of(self._saved, batch_size,
                        self._device if device is None else device, names)

    def __reduce__(self) -> tuple[Any, ...]:
        # a pickled or deep-copied entry is a plain one: it writes no folder
        return (_plain_data, (self.data, self._metadata, self._batch_size, self._device,
                              self._names))


def _plain_data(data: Any, metadata: Any, batch_size: Any, device: Any,
                names: Any) -> NonTensorData:
    return NonTensorData(data, metadata, batch_size=batch_size, device=device, names=names)


class _Element(SavedValue):
    """The value of one element of a saved one-dim stack: writing it (through an index
    view, ``td[0].set_("s", ...)``) writes the stack at its position."""

    __slots__ = ("stack", "position")

    def __init__(self, value: Any, stack: SavedNonTensorStack, position: int) -> None:
        super().__init__(value)
        self.stack, self.position = stack, position

    def write(self, value: Any) -> None:
        if self.stack._writing:  # the stack's own write, already saved
            self.value = value
        else:
            self.stack._set_at_index(self.position, value)


class SavedNonTensorStack(NonTensorStack):
    """A NonTensorStack saved in a folder: an in-place write (``_set_at_index``, which
    ``set_``, ``update_``, ``td[idx] = ...`` of it reach, and a write to one of its
    elements) is made on a copy first, the folder rewritten with the result, and then
    the stack itself written.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> stack = SavedNonTensorStack.saved(NonTensorStack("a", "b"), folder)
    >>> stack[1] = "c"
    >>> _layout.read_meta(folder)["data"], stack.tolist()
    (['a', 'c'], ['a', 'c'])
    """

    __slots__ = ("_folder", "_allow_pickle", "_writing")

    @classmethod
    def saved(cls, stack: Any, folder: str, *, allow_pickle: bool = True) -> SavedNonTensorStack:
        """``stack``'s elements as a stack saved in ``folder``."""
        out = cls(*stack.tensordicts, stack_dim=stack.stack_dim)
        out._folder, out._allow_pickle, out._writing = folder, allow_pickle, False
        for position, part in enumerate(out.tensordicts):
            if type(part) is NonTensorData and not part.batch_size:
                out.tensordicts[position] = SavedNonTensorData._of(
                    _Element(part.data, out, position), part.batch_size, part.device,
                    part._names)
        return out

    def _set_at_index(self, index: Any, value: Any) -> None:
        folder = getattr(self, "_folder", None)
        if folder is None:
            super()._set_at_index(index, value)
            return
        probe = NonTensorStack.from_list(self.tolist(), self.batch_size, self.device)
        probe._set_at_index(index, value)  # raises here, if it does not fit
        rewrite(folder, *encode_stack(probe.tolist(), self.device, repr(folder),
                                      self._allow_pickle))
        self._writing = True
        try:
            super()._set_at_index(index, value)
        finally:
            self._writing = False

    def __reduce__(self) -> tuple[Any, ...]:
        # a pickled or deep-copied stack is a plain one: it writes no folder
        return (NonTensorStack.from_list, (self.tolist(), self.batch_size, self.device))


# A TensorDict's repr (and the entries' own) names the class of each entry: these show
# as the classes they extend, as upstream's memmapped entries do.
SavedNonTensorData.__name__ = SavedNonTensorData.__qualname__ = "NonTensorData"
SavedNonTensorStack.__name__ = SavedNonTensorStack.__qualname__ = "NonTensorStack"
