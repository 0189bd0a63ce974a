"""``parse_tensor_dict_string``: rebuild a TensorDict (filled with zeros) from its repr.

It reads both layouts of :mod:`tensordict._repr`: the compact one
(``TensorDict(batch_size=[3], fields={a: f32[4], n: [2]{b: i64[]}})``) and the verbose
one of ``set_printoptions(compact=False)``. Keys, shapes, dtypes, devices and batch
sizes come back; values are not in a repr, so every tensor is zeros.

Example:
    >>> from tensordict import parse_tensor_dict_string
    >>> td = parse_tensor_dict_string("TensorDict(batch_size=[3], fields={a: f32[4]})")
    >>> td["a"].shape, td["a"].sum()
    (torch.Size([3, 4]), tensor(0.))
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import torch

from tensordict._collection import classes
from tensordict._repr import _DTYPE_ABBREVIATIONS

_DTYPES = {abbreviation: dtype for dtype, abbreviation in _DTYPE_ABBREVIATIONS.items()}
# upstream also abbreviates the dtypes outside the table: u16, f8_e4m3fn, c32...
_PREFIXES = (("bf", "bfloat"), ("f", "float"), ("c", "complex"), ("u", "uint"), ("i", "int"))

_HEAD = re.compile(r"\s*(\w+)\(\s*")
_ATTRIBUTE = re.compile(r"(\w+)=")
_KEY = re.compile(r"([^\n]+?):\s+")
_SIZE = re.compile(r"(?:torch\.Size\()?\[([\d,\s]*)\]\)?")
_COMPACT_TENSOR = re.compile(r"(\w+)\[([-\d,]*)\](?:@([\w:]+))?")
_VERBOSE_TENSOR = re.compile(
    r"\w*Tensor\(shape=torch\.Size\(\[([-\d,\s]*)\]\),\s*device=([\w:]+),\s*"
    r"dtype=torch\.(\w+),\s*is_shared=\w+\)"
)
_VERBOSE_NODE = re.compile(r"TensorDict\(\s*")
_EXTRA_DIMS = re.compile(r"(?:\[([\d,]*)\])?\{")


@dataclass
class _Leaf:
    shape: tuple[int, ...]
    dtype: torch.dtype
    device: str | None
    relative: bool  # compact: the shape after the batch dims


@dataclass
class _Node:
    fields: dict[str, _Leaf | _Node]
    batch_size: tuple[int, ...] | None  # verbose: the whole batch size
    extra: tuple[int, ...] = ()  # compact: the dims after the parent's batch dims
    device: str | None = None
    exclusive: str = ""  # the text of a lazy stack's exclusive_fields


def parse_tensor_dict_string(s: str) -> Any:
    """A TensorDict with the keys, shapes, dtypes, devices and batch size of a printed one.

    A debugging aid to rebuild a TensorDict from a log: values are not printed, so all
    tensors are zeros. Both the default (compact) repr and the verbose one of
    ``set_printoptions(compact=False)`` are read; a lazy stack without exclusive keys
    comes back as a TensorDict.

    Args:
        s: the repr of a TensorDict.

    Raises:
        ValueError: no batch size in ``s``, a field that is neither a tensor nor a
            TensorDict (non-tensor data, nested lazy stacks...), or a lazy stack with
            exclusive keys.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(obs=torch.ones(3, 4), next=TensorDict(done=torch.ones(3, 1).bool()),
    ...                 batch_size=[3])
    >>> rebuilt = parse_tensor_dict_string(repr(td))
    >>> rebuilt["next", "done"].dtype, rebuilt["obs"].shape, rebuilt["obs"].sum()
    (torch.bool, torch.Size([3, 4]), tensor(0.))
    """
    node = _Reader(s).collection()
    if node.batch_size is None:
        raise ValueError(f"parse_tensor_dict_string found no batch size in {s!r}")
    if node.exclusive.strip():
        raise ValueError(
            "parse_tensor_dict_string cannot rebuild a lazy stack with exclusive keys: "
            f"exclusive_fields={{{node.exclusive.strip()}}}"
        )
    return _build(node, node.batch_size, node.device)


class _Reader:
    """A cursor over the repr text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def take(self, pattern: re.Pattern[str]) -> re.Match[str] | None:
        found = pattern.match(self.text, self.pos)
        if found is not None:
            self.pos = found.end()
        return found

    def skip_space(self) -> str:
        """Skip whitespace; the next character ("" at the end)."""
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1
        return self.text[self.pos : self.pos + 1]

    def collection(self) -> _Node:
        """``Name(attr=value, ..., fields={...}, ...)``, compact or verbose."""
        if self.take(_HEAD) is None:
            raise ValueError(f"parse_tensor_dict_string found no batch size in {self.text!r}")
        node = _Node({}, None)
        while (attribute := self.take(_ATTRIBUTE)) is not None:
            name = attribute.group(1)
            if name == "fields":
                node.fields = self.fields()
            elif name == "exclusive_fields":
                node.exclusive = self.block()
            elif name == "batch_size":
                node.batch_size = self.size()
            else:
                value = self.scalar()
                if name == "device" and value != "None":
                    node.device = value
            if self.skip_space() != ",":
                break
            self.pos += 1
            self.skip_space()
        if self.skip_space() == ")":
            self.pos += 1
        return node

    def fields(self) -> dict[str, _Leaf | _Node]:
        """``{key: value, ...}``."""
        out: dict[str, _Leaf | _Node] = {}
        self.pos += 1  # "{"
        while self.skip_space() not in ("}", ""):
            key = self.take(_KEY)
            if key is None:
                raise ValueError(f"parse_tensor_dict_string cannot parse the fields "
                                 f"{self.text[self.pos:]!r}")
            out[key.group(1)] = self.value(key.group(1))
            if self.skip_space() == ",":
                self.pos += 1
        self.pos += 1  # "}"
        return out

    def value(self, key: str) -> _Leaf | _Node:
        start = self.pos
        if (found := self.take(_VERBOSE_TENSOR)) is not None:
            shape, device, dtype = found.groups()
            return _Leaf(_ints(shape), _dtype(dtype, key, found.group(0)), device, False)
        if self.take(_VERBOSE_NODE) is not None:
            self.pos = start
            return self.collection()
        if (found := self.take(_EXTRA_DIMS)) is not None:
            self.pos -= 1  # back on "{"
            return _Node(self.fields(), None, _ints(found.group(1) or ""))
        if (found := self.take(_COMPACT_TENSOR)) is not None:
            dtype, shape, device = found.groups()
            return _Leaf(_ints(shape), _dtype(dtype, key, found.group(0)), device, True)
        shown = re.split(r"[,}\n]", self.text[start:], maxsplit=1)[0]
        raise ValueError(
            f"parse_tensor_dict_string cannot parse the field '{key}: {shown}': it reads "
            "tensors and TensorDicts only (non-tensor data and nested lazy stacks or "
            "tensorclasses are not rebuilt)"
        )

    def size(self) -> tuple[int, ...]:
        found = self.take(_SIZE)
        if found is None:
            raise ValueError(f"parse_tensor_dict_string found no batch size in {self.text!r}")
        return _ints(found.group(1))

    def scalar(self) -> str:
        """The text up to the next "," or ")" outside brackets."""
        depth, start = 0, self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if depth == 0 and char in ",)":
                break
            depth += (char in "([{") - (char in ")]}")
            self.pos += 1
        return self.text[start : self.pos].strip()

    def block(self) -> str:
        """The text inside the braces starting here."""
        depth, start = 0, self.pos
        while self.pos < len(self.text):
            depth += (self.text[self.pos] == "{") - (self.text[self.pos] == "}")
            self.pos += 1
            if depth == 0:
                break
        return self.text[start + 1 : self.pos - 1]


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(",") if part.strip())


def _dtype(name: str, key: str, field_text: str) -> torch.dtype:
    if name in _DTYPES:
        return _DTYPES[name]
    candidates = [name] + [full + name[len(short):] for short, full in _PREFIXES
                           if name.startswith(short) and name[len(short):][:1].isdigit()]
    for candidate in candidates:
        dtype = getattr(torch, candidate, None)
        if isinstance(dtype, torch.dtype):
            return dtype
    raise ValueError(f"parse_tensor_dict_string cannot parse the field '{key}: {field_text}': "
                     f"unknown dtype {name!r}")


def _build(node: _Node, batch_size: tuple[int, ...], device: str | None) -> Any:
    entries: dict[str, Any] = {}
    for key, spec in node.fields.items():
        if isinstance(spec, _Leaf):
            shape = batch_size + spec.shape if spec.relative else spec.shape
            if any(size < 0 for size in shape):
                raise RuntimeError(f"parse_tensor_dict_string cannot rebuild the entry {key!r}: "
                                   f"its shape {list(shape)} has ragged (-1) dims")
            entries[key] = torch.zeros(shape, dtype=spec.dtype,
                                       device=spec.device or device or "cpu")
        else:
            size = batch_size + spec.extra if spec.batch_size is None else spec.batch_size
            entries[key] = _build(spec, size, spec.device or device)
    return classes.TensorDict(entries, batch_size=batch_size, device=device)
