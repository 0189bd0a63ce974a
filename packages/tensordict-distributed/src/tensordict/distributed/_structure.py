"""What a peer must know about a TensorDict before tensor data can flow: its structure.

A :class:`Structure` lists the tensor leaves (key path, shape, dtype) in traversal order
and the paths of the non-tensor leaves. Two ranks exchange a 63-bit
:func:`fingerprint` of it before each transfer, so a mismatch is caught before any
data moves; the full structure travels only to explain a mismatch, or to build a
TensorDict on a rank that has none (``init_remote``).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.ones(2)}}, batch_size=[2])
    >>> s = Structure.of(td)
    >>> s.leaves
    [(('a',), (2, 3), 'float32'), (('n', 'b'), (2,), 'float32')]
    >>> Structure.from_bytes(s.to_bytes()) == s
    True
    >>> s.fingerprint() == Structure.of(td.clone()).fingerprint()
    True
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    TensorDictBase,
    unravel_key_to_tuple,
)
from tensordict.utils import acts_as_tensordict

Path = tuple[str, ...]
Leaf = tuple[Path, tuple[int, ...], str]


def as_tensordict(td: Any, dense: bool = False) -> TensorDictBase:
    """The TensorDict holding ``td``'s data (a tensorclass instance's inner TensorDict);
    with ``dense=True`` a lazy stack is stacked into one TensorDict (for operations
    that build a new TensorDict on another rank)."""
    if type(td) is TensorDict:
        return td
    if getattr(type(td), "_is_tensorclass", False):
        td = td._tensordict
    if not acts_as_tensordict(td):
        raise TypeError(f"expected a TensorDict or a tensorclass instance, "
                        f"got {type(td).__name__}")
    return td.contiguous() if dense and isinstance(td, LazyStackedTensorDict) else td


def rewrap(like: Any, td: TensorDictBase) -> Any:
    """``td`` as an instance of ``like``'s tensorclass (``like`` may be the class), or
    ``td`` itself when ``like`` is not a tensorclass."""
    cls = like if isinstance(like, type) else type(like)
    return cls.from_tensordict(td) if getattr(cls, "_is_tensorclass", False) else td


def collect(td: TensorDictBase) -> tuple[list[tuple[Path, torch.Tensor]],
                                        list[tuple[Path, Any]]]:
    """``(key path, stored tensor)`` for every tensor leaf and ``(key path,
    NonTensorData or NonTensorStack)`` for every non-tensor leaf, each sorted by path
    (so the key order of two TensorDicts does not matter).

    The leaves of a lazy stack are those of its TensorDicts, the ``i``-th one's under
    the step ``"#i"`` (their shapes may differ: nothing is stacked).

    >>> from tensordict import lazy_stack
    >>> stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))])
    >>> [(path, tuple(x.shape)) for path, x in collect(stack)[0]]
    [(('#0', 'a'), (2,)), (('#1', 'a'), (3,))]
    """
    tensors: list[tuple[Path, torch.Tensor]] = []
    others: list[tuple[Path, Any]] = []

    def walk(node: TensorDictBase, prefix: Path) -> None:
        if getattr(type(node), "_is_tensorclass", False):
            node = node._tensordict
        if isinstance(node, LazyStackedTensorDict):  # (a NonTensorStack is a leaf)
            for i, part in enumerate(node.tensordicts):
                walk(part, (*prefix, f"#{i}"))
            return
        if type(node) is not TensorDict:  # other collections: their own traversal
            node._apply_nest(
                lambda path, x: tensors.append((prefix + unravel_key_to_tuple(path), x)),
                named=True, nested_keys=True, filter_empty=False)
            others.extend((prefix + ((k,) if isinstance(k, str) else k), v)
                          for k, v in node.non_tensor_items(include_nested=True))
            return
        for key in node._keys_str():
            value = node._get_str(key)
            if isinstance(value, torch.Tensor):
                tensors.append((prefix + (key,), value))
            elif getattr(value, "_is_non_tensor", False):
                others.append((prefix + (key,), value))
            else:
                walk(value, prefix + (key,))

    walk(td, ())
    tensors.sort(key=_path_of)
    others.sort(key=_path_of)
    return tensors, others


def _path_of(item: tuple[Path, Any]) -> Path:
    return item[0]


def tensor_leaves(td: TensorDictBase) -> list[tuple[Path, torch.Tensor]]:
    """The tensor leaves of :func:`collect`."""
    return collect(td)[0]


def non_tensor_leaves(td: TensorDictBase) -> list[tuple[Path, Any]]:
    """The non-tensor leaves of :func:`collect`."""
    return collect(td)[1]


def leaf_payload(leaf: Any) -> list[Any]:
    """What travels of a non-tensor leaf (``NonTensorData`` or ``NonTensorStack``):
    ``[is a stack, batch size, the value or the nested list of values]``."""
    if isinstance(leaf, NonTensorStack):
        return [True, list(leaf.batch_size), _plain_lists(leaf.tolist(), leaf.batch_dims)]
    return [False, list(leaf.batch_size), leaf.data]


def _plain_lists(values: Any, depth: int) -> Any:
    """The ``depth`` outer levels of a ``tolist()`` as plain lists (the values inside are
    left as they are)."""
    if depth == 0:
        return values
    return [_plain_lists(item, depth - 1) for item in values]


def leaf_from_payload(payload: list[Any], device: Any = None) -> Any:
    """The ``NonTensorData`` or ``NonTensorStack`` a :func:`leaf_payload` describes."""
    is_stack, batch_size, value = payload
    if is_stack:
        return NonTensorStack.from_list(value, batch_size, device=device)
    return NonTensorData(value, batch_size=batch_size, device=device)


def path_names(items: list[tuple[Path, Any]]) -> list[str]:
    """The key paths of ``(path, leaf)`` pairs as they appear in messages."""
    return [_show(path) for path, _ in items]


def set_non_tensor(td: TensorDictBase, old: list[tuple[Path, Any]], new: list[Any]) -> None:
    """Replace the non-tensor leaves ``old`` (from :func:`non_tensor_leaves`) by those the
    payloads ``new`` describe (see :func:`leaf_payload`), leaving equal ones untouched."""
    for (path, before), payload in zip(old, new):
        after = leaf_from_payload(payload, before.device)
        if type(before) is not type(after) or before.tolist() != after.tolist():
            owner, key = _owner(td, path)
            owner.set(key, after)


def _owner(td: TensorDictBase, path: Path) -> tuple[TensorDictBase, Path]:
    """The TensorDict holding the leaf at ``path`` (of :func:`collect`) below its last
    lazy stack, and the leaf's path in it."""
    node, start = td, 0
    for i, step in enumerate(path[:-1]):
        if step.startswith("#"):
            holder = as_tensordict(node.get(path[start:i])) if i > start else node
            if isinstance(holder, LazyStackedTensorDict):
                node, start = as_tensordict(holder.tensordicts[int(step[1:])]), i + 1
    return node, path[start:]


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def dtype_from_name(name: str) -> torch.dtype:
    """``"float32"`` -> ``torch.float32``."""
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {name!r} in a TensorDict structure")
    return dtype


@dataclass
class Structure:
    """Keys, shapes and dtypes of a TensorDict: enough to build an empty twin."""

    batch_size: tuple[int, ...]
    leaves: list[Leaf]
    non_tensor: list[Path] = field(default_factory=list)
    device: str | None = None
    names: list[str | None] | None = None

    @classmethod
    def of(cls, td: Any, leaves: list[tuple[Path, torch.Tensor]] | None = None,
           non_tensor: list[tuple[Path, Any]] | None = None) -> Structure:
        """The structure of ``td`` (a TensorDict, lazy stack or tensorclass instance);
        pass its :func:`tensor_leaves` and :func:`non_tensor_leaves` if already known."""
        td = as_tensordict(td)
        if leaves is None or non_tensor is None:
            leaves, non_tensor = collect(td)
        names = td.names if any(n is not None for n in td.names) else None
        return cls(tuple(td.batch_size),
                   [(path, tuple(x.shape), _dtype_name(x.dtype)) for path, x in leaves],
                   [p for p, _ in non_tensor], None if td.device is None else str(td.device),
                   names)

    def signature(self) -> bytes:
        """What two ranks must agree on to exchange tensor data: the leaves' paths,
        shapes and dtypes and the non-tensor paths, as JSON (batch size, device and names
        are left out: they do not change the bytes sent)."""
        return json.dumps([self.leaves, self.non_tensor], separators=(",", ":")).encode()

    @classmethod
    def from_signature(cls, data: bytes) -> Structure:
        """The structure a :meth:`signature` describes (with an unknown batch size)."""
        leaves, non_tensor = json.loads(data.decode())
        return cls((), [(tuple(p), tuple(s), d) for p, s, d in leaves],
                   [tuple(p) for p in non_tensor])

    def fingerprint(self) -> int:
        """A 63-bit hash of the :meth:`signature`."""
        return fingerprint_of(self.signature())

    def to_bytes(self) -> bytes:
        """A JSON encoding (never pickled: safe to decode from any peer)."""
        return json.dumps({
            "batch_size": self.batch_size, "leaves": self.leaves,
            "non_tensor": self.non_tensor, "device": self.device, "names": self.names,
        }).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> Structure:
        """Decode :meth:`to_bytes`."""
        raw = json.loads(data.decode())
        leaves = [(tuple(p), tuple(s), d) for p, s, d in raw["leaves"]]
        return cls(tuple(raw["batch_size"]), leaves, [tuple(p) for p in raw["non_tensor"]],
                   raw["device"], raw["names"])

    def empty(self, device: torch.device | str | None = None) -> TensorDict:
        """A TensorDict with this structure and uninitialised tensors (non-tensor leaves
        are set to None until their values arrive)."""
        td = TensorDict(batch_size=self.batch_size, device=device, names=self.names)
        for path, shape, dtype in self.leaves:
            td.set(path, torch.empty(shape, dtype=dtype_from_name(dtype), device=device))
        for path in self.non_tensor:
            td.set_non_tensor(path, None)
        return td

    def stacked(self, size: int) -> Structure:
        """The structure of ``size`` such TensorDicts stacked along a new first dim."""
        names = None if self.names is None else [None, *self.names]
        return Structure((size, *self.batch_size), [(p, (size, *s), d) for p, s, d in self.leaves],
                         self.non_tensor, self.device, names)

    def local_device(self, device: torch.device | str | None = None) -> torch.device | str | None:
        """Where a received copy lives: ``device`` if given, else CPU for a sender on the
        CPU and no device for a sender without one (a sender's CUDA device may not exist
        here)."""
        if device is not None:
            return device
        return "cpu" if self.device == "cpu" else None

    def differences(self, other: Structure, mine: str = "receiver",
                    theirs: str = "sender", limit: int = 8) -> list[str]:
        """Human-readable lines saying how ``other`` differs from this structure."""
        own = {p: (s, d) for p, s, d in self.leaves}
        peer = {p: (s, d) for p, s, d in other.leaves}
        lines = []
        for path in sorted(set(own) | set(peer)):
            if path not in peer:
                lines.append(f"key {_show(path)} only on the {mine}")
            elif path not in own:
                lines.append(f"key {_show(path)} only on the {theirs}")
            elif own[path] != peer[path]:
                (s1, d1), (s2, d2) = own[path], peer[path]
                lines.append(f"key {_show(path)}: {mine} {d1}{list(s1)}, {theirs} {d2}{list(s2)}")
        for path in sorted(set(self.non_tensor) ^ set(other.non_tensor)):
            side = mine if path in self.non_tensor else theirs
            lines.append(f"non-tensor key {_show(path)} only on the {side}")
        if len(lines) > limit:
            lines = lines[:limit] + [f"... and {len(lines) - limit} more"]
        return lines


def fingerprint_of(signature: bytes) -> int:
    """A 63-bit hash of a :meth:`Structure.signature`."""
    return int.from_bytes(hashlib.blake2b(signature, digest_size=8).digest(), "little") >> 1


def _show(path: Path) -> str:
    return repr(path[0]) if len(path) == 1 else repr(path)
