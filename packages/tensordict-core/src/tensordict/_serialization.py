"""Saving TensorDicts the PyTorch way: ``state_dict``/``load_state_dict`` and pickling.

* ``state_dict()`` is an ``OrderedDict`` of the tensor leaves under ``"."``-joined keys,
  like ``nn.Module.state_dict``; batch sizes, devices and non-tensor entries ride in its
  ``_metadata`` attribute. ``load_state_dict`` copies it back (in place by default).
* Pickling (``pickle``, ``copy``, ``torch.save``/``torch.load``, multiprocessing) stores
  the slots of the object, without the context-manager stack; a consolidated collection
  (see ``consolidate``) stores its one flat buffer and the metadata to rebuild it. With
  protocol 5 the CPU leaves (or that buffer) are ``PickleBuffer``s, handed out of band
  to a ``buffer_callback`` (Ray, shared memory): see ``tensordict._out_of_band``. The
  tensordict classes are registered with ``torch.serialization.add_safe_globals`` when
  defined, so ``torch.load(path)`` (``weights_only=True``, the default) loads a saved
  TensorDict.
  Non-tensor entries load that way only if their Python objects are themselves allowed.

Example:
    >>> import io
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.ones(2)}}, [2])
    >>> list(td.state_dict())
    ['a', 'n.b']
    >>> buffer = io.BytesIO()
    >>> torch.save(td, buffer)
    >>> _ = buffer.seek(0)
    >>> torch.load(buffer)["n", "b"]
    tensor([1., 1.])
"""

from __future__ import annotations

import copyreg
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import torch

from tensordict._collection import classes
from tensordict._consolidate import mark_consolidated, rebuild, storage_and_metadata
from tensordict._metadata import LOCKED_BY_PARENT
from tensordict._nontensor import NonTensorData
from tensordict._out_of_band import out_of_band_state
from tensordict._plan import in_place_ready

_Tensor = torch.Tensor
#: slots never pickled: weak references, pending ``with`` actions (closures) and what a
#: locked lazy stack keeps of its reads (views of its parts); all but the first are None
#: once unpickled
_TRANSIENT = frozenset({"__weakref__", "_exit_stack", "_frozen"})
_SLOTS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def allow_weights_only_load(*classes: type) -> None:
    """Let ``torch.load(..., weights_only=True)`` rebuild instances of ``classes``."""
    torch.serialization.add_safe_globals(list(classes))


def _pickled_slots(cls: type) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The slots to pickle, and the transient ones to set to None when unpickled."""
    cached = _SLOTS.get(cls)
    if cached is None:
        declared: list[str] = []
        for klass in reversed(cls.__mro__):
            slots = klass.__dict__.get("__slots__", ())
            declared += [slots] if isinstance(slots, str) else list(slots)
        names = tuple(dict.fromkeys(n for n in declared if n not in _TRANSIENT))
        reset = tuple(n for n in dict.fromkeys(declared) if n in _TRANSIENT and n != "__weakref__")
        cached = _SLOTS[cls] = (names, reset)
    return cached


class SerializationMixin:
    """``state_dict``, ``load_state_dict`` and the pickling protocol."""

    __slots__ = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.split(".")[0] == "tensordict":
            allow_weights_only_load(cls)

    # -- pickling -------------------------------------------------------------------------
    def __reduce_ex__(self, protocol: Any) -> Any:
        reduced = object.__reduce_ex__(self, protocol)
        if protocol < 5 or reduced[0] is not copyreg.__newobj__ or \
                reduced[2].__class__ is not dict:  # (a class of its own __reduce__)
            return reduced
        # protocol 5: the leaves as PickleBuffers (out of band given a buffer_callback)
        return (reduced[0], reduced[1], out_of_band_state(reduced[2]), *reduced[3:])

    def __getstate__(self) -> dict[str, Any]:
        consolidated = storage_and_metadata(self)
        if consolidated is not None:  # one buffer, not one tensor per leaf
            return {"_consolidated": {"storage": consolidated[0],
                                      "metadata": consolidated[1]}}
        names, _ = _pickled_slots(type(self))
        state = {name: getattr(self, name) for name in names if hasattr(self, name)}
        if state.get("_is_locked") == LOCKED_BY_PARENT:  # a copy may be unpickled alone
            state["_is_locked"] = True
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        names, reset = _pickled_slots(type(self))
        consolidated = state.get("_consolidated")
        if consolidated is not None:  # unlocked, as upstream's
            storage = consolidated["storage"]
            rebuilt = rebuild(consolidated["metadata"], storage)
            state = {name: getattr(rebuilt, name) for name in names if hasattr(rebuilt, name)}
        for name in names:
            if name in state:
                object.__setattr__(self, name, state[name])
        for name in reset:
            object.__setattr__(self, name, None)
        if consolidated is not None:
            mark_consolidated(self, consolidated["storage"])

    # -- state dicts ----------------------------------------------------------------------
    def state_dict(self, destination: dict[str, Any] | None = None, prefix: str = "",
                   keep_vars: bool = False, flatten: bool = False) -> dict[str, Any]:
        """The tensor leaves under ``"."``-joined keys, as ``nn.Module.state_dict``.

        Args:
            destination: a mapping to fill (a new ``OrderedDict`` by default).
            prefix: put before every key.
            keep_vars: keep the tensors as they are (otherwise they are detached, as
                plain tensors: a memory-mapped leaf gives a tensor sharing its memory).
            flatten: accepted for compatibility: keys are always ``"."``-joined.

        The ``_metadata`` attribute of the result holds, per sub-TensorDict path, its
        ``batch_size`` and ``device``, and the non-tensor entries.

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.ones(3)}}, [3])
        >>> sd = td.state_dict(prefix="td.")
        >>> list(sd), sd._metadata["td"]["batch_size"]
        (['td.a', 'td.n.b'], torch.Size([3]))
        """
        out: Any = OrderedDict() if destination is None else destination
        metadata: OrderedDict[str, Any] = OrderedDict()
        _fill_state(self, out, metadata, prefix, keep_vars)
        try:
            out._metadata = metadata
        except AttributeError:  # a plain dict destination has no attributes
            pass
        return out

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True,
                        assign: bool = False, from_flatten: bool = False) -> Any:
        """Load a state dict (as :meth:`state_dict` makes); returns self.

        Tensors are copied into the existing leaves unless ``assign=True``. With
        ``strict=True`` the tensor keys must match exactly; otherwise missing keys are
        left alone and new ones are added. The batch sizes recorded in the metadata are
        restored (the device is not), and non-tensor entries of the metadata are
        written too. The keys and shapes are checked before anything is written.

        Args:
            state_dict: flat (``"a.b"`` keys) or nested mapping of tensors.
            strict: require the same keys.
            assign: store the given tensors instead of copying them.
            from_flatten: the keys are ``"."``-joined (always understood; kept for
                compatibility).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2)}}, [2])
        >>> _ = td.load_state_dict({"a": torch.ones(2), "n.b": torch.ones(2)})
        >>> td["n", "b"]
        tensor([1., 1.])
        >>> TensorDict().load_state_dict(td.state_dict(), strict=False).batch_size
        torch.Size([2])
        """
        metadata = getattr(state_dict, "_metadata", {}) or {}
        if not assign and _copy_state(self, state_dict, metadata):
            return self
        tensors = _flat_tensors(state_dict)
        non_tensor = {tuple(path.split(".")): meta["non_tensor"]
                      for path, meta in metadata.items() if "non_tensor" in meta}
        current = {k if isinstance(k, tuple) else (k,): v
                   for k, v in self.items(True, True)}
        if strict:  # non-tensor entries are written but do not count here
            current = {k: v for k, v in current.items() if isinstance(v, torch.Tensor)}
            given = tensors.keys()
            if given != current.keys():
                raise RuntimeError(
                    "load_state_dict: the keys do not match: missing from the state dict "
                    f"{sorted(current.keys() - given)}, unexpected "
                    f"{sorted(given - current.keys())}"
                )
        if not assign:
            for path, tensor in tensors.items():
                target = current.get(path)
                if isinstance(target, torch.Tensor) and target.shape != tensor.shape:
                    raise RuntimeError(f"load_state_dict: {path!r} has shape {tensor.shape} in "
                                       f"the state dict but {target.shape} here")
        sizes = {path: meta["batch_size"] for path, meta in metadata.items()
                 if "non_tensor" not in meta and "batch_size" in meta}
        source = classes.TensorDict._from_entries({}, torch.Size(sizes.get("", ())))
        for path in sorted((p for p in sizes if p), key=lambda p: p.count(".")):
            source.set(tuple(path.split(".")), classes.TensorDict(batch_size=sizes[path]))
        for path, tensor in tensors.items():
            source.set(path, tensor)
        for path, value in non_tensor.items():
            source.set(path, value)
        if "" in sizes and self.batch_size != source.batch_size:
            self.batch_size = source.batch_size
        with torch.no_grad():
            self.update(source, inplace=not assign)
        return self


def _fill_state(td: Any, out: Any, metadata: Any, prefix: str, keep_vars: bool) -> None:
    metadata[prefix[:-1] if prefix.endswith(".") else prefix] = {
        "batch_size": td.batch_size, "device": td.device}
    entries = td._tensordict if td.__class__ is classes.TensorDict else \
        {key: td._get_str(key) for key in td._keys_str()}
    for key, value in entries.items():
        name = prefix + key
        if value.__class__ is _Tensor or isinstance(value, _Tensor):
            # torch's detach, not a subclass's: upstream gives plain tensors (sharing the
            # memory of memory-mapped ones, so that torch.save and pickle take them)
            out[name] = value if keep_vars else _Tensor.detach(value)
        elif getattr(value, "_is_non_tensor", False):
            metadata[name] = {"batch_size": value.batch_size, "device": value.device,
                              "non_tensor": value}
        else:
            _fill_state(value, out, metadata, name + ".", keep_vars)


def _copy_state(td: Any, state_dict: Mapping[str, Any], metadata: Mapping[str, Any]) -> bool:
    """The fast path of ``load_state_dict`` (in place): ``td`` a dense TensorDict of tensor
    leaves (sub-TensorDicts of the batch sizes the metadata records, no non-tensor
    entry), ``state_dict`` a flat one of plain tensors under exactly its leaves' names,
    of the same shapes. Everything is checked, then one ``_foreach_copy_`` writes every
    leaf. Returns False, having written nothing, when the case does not apply.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2)}}, [2])
    >>> _copy_state(td, {"a": torch.ones(2), "n.b": torch.ones(2)}, {}), td["n", "b"]
    (True, tensor([1., 1.]))
    >>> _copy_state(td, {"a": torch.ones(2)}, {})  # a key missing: the general path
    False
    """
    leaves: dict[str, torch.Tensor] = {}
    sizes: dict[str, torch.Size] = {}
    if td.__class__ is not classes.TensorDict or not _dense_leaves(td, "", leaves, sizes) \
            or len(state_dict) != len(leaves):
        return False
    for path, meta in metadata.items():
        if "non_tensor" in meta or ("batch_size" in meta and (
                path not in sizes or tuple(meta["batch_size"]) != sizes[path])):
            return False
    targets: list[torch.Tensor] = []
    sources: list[torch.Tensor] = []
    for name, source in state_dict.items():
        target = leaves.get(name)  # (None for a key that is not a str: then no match)
        if target is None or source.__class__ is not _Tensor or target.shape != source.shape:
            return False
        targets.append(target)
        sources.append(source)
    if not in_place_ready(targets):  # (an expanded target...: the general path names it)
        return False
    if targets:
        with torch.no_grad():
            torch._foreach_copy_(targets, sources)
    return True


def _dense_leaves(td: Any, prefix: str, leaves: dict[str, torch.Tensor],
                  sizes: dict[str, torch.Size]) -> bool:
    """Fill ``leaves`` (``"."``-joined name: tensor) and ``sizes`` (path of each
    TensorDict: batch size) for a TensorDict of TensorDicts and plain tensors only."""
    sizes[prefix[:-1]] = td._batch_size
    dense = classes.TensorDict
    for key, value in td._tensordict.items():
        if value.__class__ is _Tensor:
            leaves[prefix + key] = value
        elif value.__class__ is not dense or not _dense_leaves(value, prefix + key + ".",
                                                                leaves, sizes):
            return False
    return True


def _flat_tensors(state_dict: Mapping[str, Any], prefix: tuple[str, ...] = ()
                  ) -> dict[tuple[str, ...], torch.Tensor]:
    """``{path: tensor}`` for a flat (``"a.b"``) or nested state dict."""
    out: dict[tuple[str, ...], torch.Tensor] = {}
    for key, value in state_dict.items():
        path = prefix + (tuple(key.split(".")) if isinstance(key, str) else tuple(key))
        if isinstance(value, Mapping):
            out.update(_flat_tensors(value, path))
        else:
            out[path] = value
    return out


allow_weights_only_load(NonTensorData)  # lazy stacks register themselves in _lazy.py
