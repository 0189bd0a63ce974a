"""The TensorDict methods of :class:`~tensordict.NonTensorData` that it does not define
itself, as upstream's tensorclass gives them: each runs on an empty TensorDict of the
entry's batch size, device, names and lock (a *shell*, since the object is not a tensor
entry), and a TensorDict result becomes a NonTensorData holding the same object.

So ``dim()``, ``size()``, ``batch_dims``, ``keys()`` (none), ``apply``, the casts and the
math keep the object and follow the batch size (``sum()`` reduces it); an in-place op
(``unsqueeze_``, ``clear_device_``...) changes the entry itself.

Example:
    >>> import torch
    >>> from tensordict import NonTensorData
    >>> data = NonTensorData("walk", batch_size=[3])
    >>> data.dim(), data.size(0), data.batch_dims, list(data.keys())
    (1, 3, 1, [])
    >>> data.float().data, data.sum().batch_size, data.repeat(2).batch_size
    ('walk', torch.Size([]), torch.Size([6]))
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tensordict._collection import classes
from tensordict._nontensor import NonTensorData

#: Results that stay TensorDicts, as upstream's (they describe leaves, of which there are none).
_PLAIN_RESULTS = frozenset({"data_ptr"})


def _shell(entry: NonTensorData) -> Any:
    """An empty TensorDict of the entry's batch size, device, names and lock."""
    shell = classes.TensorDict._from_entries({}, entry._batch_size, entry._device, entry._names)
    shell._is_locked = entry._is_locked
    return shell


def _forwarded(name: str, method: Callable[..., Any]) -> Callable[..., Any]:
    keep_plain = name in _PLAIN_RESULTS

    def forwarded(self: NonTensorData, *args: Any, **kwargs: Any) -> Any:
        shell = _shell(self)
        out = method(shell, *args, **kwargs)
        if out is shell:  # in place: the entry takes the shell's new state
            self._batch_size, self._device = shell._batch_size, shell._device
            self._names, self._is_locked = shell._names, shell._is_locked
            return self
        if out.__class__ is classes.TensorDict and not out._tensordict and not keep_plain:
            return self._rebatch(out._batch_size, out._device, out._names)
        return out

    forwarded.__name__ = forwarded.__qualname__ = name
    forwarded.__doc__ = (f"``TensorDict.{name}`` over the entry's batch; a TensorDict result "
                         "is a NonTensorData holding the same object.")
    return forwarded


def _forwarded_property(name: str) -> property:
    return property(lambda self: getattr(_shell(self), name),
                    doc=f"``TensorDict.{name}`` of the entry's batch.")


def _class_attribute(cls: type, name: str, default: Any) -> Any:
    """``name`` as the first class of ``cls.__mro__`` defining it stores it, or
    ``default``: looked up statically (a plugin method's placeholder would load the
    plugins), as ``inspect.getattr_static`` would, at a fraction of its cost at import.

    >>> _class_attribute(NonTensorData, "tolist", None) is vars(NonTensorData)["tolist"]
    True
    """
    for klass in cls.__mro__:
        stored = vars(klass).get(name, default)
        if stored is not default:
            return stored
    return default


def install() -> None:
    """Give :class:`NonTensorData` every public TensorDict method and property it lacks
    (class methods and static methods, which build new collections, are left out)."""
    dense, missing = classes.TensorDict, object()
    for name in dir(dense):
        if name.startswith("_") or _class_attribute(NonTensorData, name, missing) is not missing:
            continue
        attr = _class_attribute(dense, name, missing)
        if isinstance(attr, (classmethod, staticmethod)):
            continue
        if isinstance(attr, property):
            setattr(NonTensorData, name, _forwarded_property(name))
        elif callable(attr):
            setattr(NonTensorData, name, _forwarded(name, attr))
