"""Pickle protocol 5, out of band: tensor leaves travel as ``PickleBuffer``s.

With ``protocol >= 5`` (Ray, ``multiprocessing.shared_memory`` hand-offs, Dask, or
``pickle.dumps(td, protocol=5, buffer_callback=...)``), :func:`out_of_band_state` puts, in
place of each plain CPU tensor leaf of a pickled collection's state, a :class:`_Leaf`
whose pickle is ``(rebuild_leaf, (PickleBuffer(its bytes), dtype, shape))``. Given a
``buffer_callback`` the pickler hands those bytes to the transport instead of copying
them into the stream; ``pickle.loads(data, buffers=...)`` then rebuilds leaves that
*view* the given buffers. Without a ``buffer_callback`` the bytes are written in band, as
before. A consolidated collection sends its one storage as one buffer.

A leaf rebuilt over a **read-only** buffer (Ray's object store hands out read-only
memory that other processes read) is a :class:`ReadOnlyTensor`: the same memory, but
every in-place operation on it or on its views (``add_``, ``copy_``, ``td.zero_()``,
``td.set_``, ``td[idx] = ...``, ``out=``) raises a ``RuntimeError`` that points to
``clone()``, which gives a writable copy. Other operations give plain tensors.

``torch.multiprocessing`` pickles with its own reductions (shared memory): in its
``ForkingPickler`` a :class:`_Leaf` reduces to its tensor, so that path is unchanged.

>>> import pickle
>>> import torch
>>> from tensordict import TensorDict
>>> td = TensorDict(a=torch.arange(4.0), b=torch.zeros(2, 3))
>>> buffers = []
>>> data = pickle.dumps(td, protocol=5, buffer_callback=buffers.append)
>>> len(buffers)
2
>>> out = pickle.loads(data, buffers=buffers)
>>> out["a"].data_ptr() == td["a"].data_ptr()  # in one process: the very same memory
True
"""

from __future__ import annotations

import pickle
import warnings
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch

_Tensor = torch.Tensor
_CPU = torch.device("cpu")
#: in-place operations whose name does not end with a single "_"
_IN_PLACE_DUNDERS = frozenset({
    "__setitem__", "__iadd__", "__isub__", "__imul__", "__itruediv__", "__ifloordiv__",
    "__imod__", "__ipow__", "__iand__", "__ior__", "__ixor__", "__ilshift__", "__irshift__",
    "__imatmul__"})
#: methods ending with "_" that write no element
#: dtypes whose tensors give NumPy arrays directly
_NUMPY_DTYPES = frozenset({torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32,
                           torch.int64, torch.float16, torch.float32, torch.float64,
                           torch.complex64, torch.complex128})
_NOT_WRITES = frozenset({"requires_grad_", "retain_grad_", "share_memory_", "detach_",
                         "_fix_weakref"})


class ReadOnlyTensor(_Tensor):
    """A tensor over memory it must not write: a read-only pickle-5 buffer (such as
    Ray's object store) that other processes read.

    In-place operations on it or on its views raise ``RuntimeError``; ``clone()`` gives a
    writable copy. Other results are plain tensors; ``numpy()`` is a read-only array.

    >>> import pickle, torch
    >>> from tensordict import TensorDict
    >>> buffers = []
    >>> data = pickle.dumps(TensorDict(a=torch.zeros(3)), protocol=5,
    ...                     buffer_callback=buffers.append)
    >>> td = pickle.loads(data, buffers=[memoryview(b).toreadonly() for b in buffers])
    >>> type(td["a"]).__name__, type(td["a"] + 1).__name__
    ('ReadOnlyTensor', 'Tensor')
    >>> td["a"].add_(1)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    RuntimeError: add_: this tensor views a read-only buffer ...; clone() it (or ...
    """

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if _writes(name, args, kwargs):
            raise RuntimeError(
                f"{name}: this tensor views a read-only buffer (for example Ray's object "
                "store) that other processes may read; clone() it (or the TensorDict) for "
                "a writable copy")
        with torch._C.DisableTorchFunctionSubclass():
            out = func(*args, **kwargs)
        if name == "numpy":
            out.flags.writeable = False
            return out
        if isinstance(out, _Tensor):
            return _keep_read_only(out, args)
        if type(out) in (tuple, list):  # unbind, split, chunk...
            return type(out)(_keep_read_only(o, args) if isinstance(o, _Tensor) else o
                             for o in out)
        return out

    def __reduce_ex__(self, protocol: Any) -> Any:
        # pickled as the plain tensor it views (the copy is writable)
        return _plain(self).__reduce_ex__(protocol)


def _writes(name: str, args: Any, kwargs: Any) -> bool:
    """Whether ``func(*args, **kwargs)`` writes into a read-only tensor."""
    if "out" in kwargs:
        targets = kwargs["out"]
        return any(isinstance(t, ReadOnlyTensor) for t in
                   (targets if isinstance(targets, (tuple, list)) else (targets,)))
    if not args or not (name in _IN_PLACE_DUNDERS or (
            name.endswith("_") and not name.endswith("__") and name not in _NOT_WRITES)):
        return False
    target = args[0]
    if isinstance(target, (tuple, list)):  # torch._foreach_add_(tensors, ...)
        return any(isinstance(t, ReadOnlyTensor) for t in target)
    return isinstance(target, ReadOnlyTensor)


def _plain(tensor: _Tensor) -> _Tensor:
    with torch._C.DisableTorchFunctionSubclass():
        return _Tensor.as_subclass(tensor, _Tensor)


def _keep_read_only(out: _Tensor, args: Any) -> _Tensor:
    """``out`` as a :class:`ReadOnlyTensor` if it shares the memory of a read-only
    argument (a view), else as it is."""
    if out.__class__ is not _Tensor or out.device.type != "cpu":
        return out
    source = args[0] if args else None
    if isinstance(source, ReadOnlyTensor) and \
            out.untyped_storage().data_ptr() == _plain(source).untyped_storage().data_ptr():
        return out.as_subclass(ReadOnlyTensor)
    return out


class _Leaf:
    """A tensor leaf in a protocol-5 pickle: its bytes as one ``PickleBuffer``."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: _Tensor) -> None:
        self.tensor = tensor

    def __reduce_ex__(self, protocol: Any) -> Any:
        tensor = self.tensor
        if tensor.__class__ is ReadOnlyTensor:
            tensor = _plain(tensor)
        if tensor.is_complex():
            tensor = tensor.resolve_conj().resolve_neg()
        data = tensor.contiguous()
        if not data.numel():
            raw: Any = b""
        elif data.dtype in _NUMPY_DTYPES:
            raw = data.numpy()
        else:  # (bfloat16, float8...: no NumPy dtype)
            raw = data.reshape(-1).view(torch.uint8).numpy()
        return rebuild_leaf, (pickle.PickleBuffer(raw), tensor.dtype, tensor.shape)


def rebuild_leaf(buffer: Any, dtype: torch.dtype, shape: torch.Size) -> _Tensor:
    """The tensor of ``dtype`` and ``shape`` viewing ``buffer`` (no copy): a
    :class:`ReadOnlyTensor` if the buffer is read-only."""
    view = memoryview(buffer)
    if not view.nbytes:
        return torch.empty(shape, dtype=dtype)
    if not view.readonly:
        tensor = torch.frombuffer(buffer, dtype=dtype)
        return tensor if len(shape) == 1 else tensor.view(shape)
    with warnings.catch_warnings():  # (torch's: "The given buffer is not writable")
        warnings.simplefilter("ignore", UserWarning)
        tensor = torch.frombuffer(buffer, dtype=dtype)
    return tensor.view(shape).as_subclass(ReadOnlyTensor)


def _sendable(value: Any) -> bool:
    """Whether a leaf travels out of band: a CPU tensor (plain or read-only), not
    tracked by autograd, not expanded (its bytes would be repeated)."""
    return (value.__class__ is _Tensor or value.__class__ is ReadOnlyTensor) and \
        value.device == _CPU and not value.requires_grad and (
            value.is_contiguous() or 0 not in value.stride())


def out_of_band_state(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` (of ``__getstate__``) with its tensor leaves, or its consolidated
    storage, as :class:`_Leaf`; a new dict, the collection's own left as they are."""
    entries = state.get("_tensordict")
    if entries.__class__ is dict and any(map(_sendable, entries.values())):
        state = dict(state, _tensordict={
            key: _Leaf(value) if _sendable(value) else value for key, value in entries.items()})
    consolidated = state.get("_consolidated")
    if consolidated is not None and _sendable(consolidated["storage"]):
        state = dict(state, _consolidated=dict(consolidated,
                                               storage=_Leaf(consolidated["storage"])))
    return state


def _reduce_for_forking(leaf: _Leaf) -> Any:
    # torch.multiprocessing's pickler: the tensor, through its own reductions
    return _identity, (leaf.tensor,)


def _identity(value: Any) -> Any:
    return value


ForkingPickler.register(_Leaf, _reduce_for_forking)
