"""How TensorDicts print: compact by default, verbose with ``set_printoptions(compact=False)``.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> TensorDict({"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, dtype=torch.long)}}, [3])
    TensorDict(batch_size=[3], fields={a: f32[4], b: {c: i64[]}})
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict._helpers import _shape
from tensordict._nontensor import MetaData, NonTensorData
from tensordict._options import get_printoptions
from tensordict._unbatched import UnbatchedTensor

_LINE_WIDTH = 80
_DTYPE_ABBREVIATIONS = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
}


def _dtype_abbreviation(dtype: torch.dtype) -> str:
    return _DTYPE_ABBREVIATIONS.get(dtype, str(dtype).removeprefix("torch."))


def _sizes(size: torch.Size) -> str:
    return "[" + ",".join(str(s) for s in size) + "]"


def _compact_entry(value: Any, batch_ndim: int, device: torch.device | None) -> str:
    if isinstance(value, torch.Tensor):
        shape = value.shape if value.__class__ is UnbatchedTensor else \
            _shape(value)[batch_ndim:]  # a strided nested tensor has no .shape
        text = _dtype_abbreviation(value.dtype) + _sizes(shape)
        if value.device != device and value.device.type != "cpu":
            text += f"@{value.device}"
        return text
    if getattr(value, "_is_non_tensor", False):
        data = getattr(value, "data", None)
        plain = isinstance(value, NonTensorData) and not isinstance(value, MetaData)
        shown = type(data) if plain else type(value)
        return shown.__name__
    if hasattr(type(value), "_compact_nested_repr"):  # tensorclasses, lazy stacks
        return value._compact_nested_repr(batch_ndim)
    if hasattr(value, "_tensordict") and type(value).__name__ == "TensorDict":
        extra = value.batch_size[batch_ndim:]
        return (_sizes(extra) if extra else "") + "{" + _compact_fields(value) + "}"
    return repr(value)


def _compact_fields(td: Any) -> str:
    ndim = len(td.batch_size)
    return ", ".join(
        f"{key}: {_compact_entry(td._get_str(key), ndim, td.device)}"
        for key in sorted(td._keys_str())
    )


def compact_repr(td: Any) -> str:
    """``TensorDict(batch_size=[3], fields={a: f32[4]})``, one field a line when long."""
    head = f"{type(td).__name__}(batch_size={_sizes(td.batch_size)}"
    if td.device is not None:
        head += f", device={td.device}"
    ndim = len(td.batch_size)
    entries = [
        f"{key}: {_compact_entry(td._get_str(key), ndim, td.device)}"
        for key in sorted(td._keys_str())
    ]
    line = f"{head}, fields={{{', '.join(entries)}}})"
    if len(line) <= _LINE_WIDTH:
        return line
    body = ",\n".join("    " + entry for entry in entries)
    return f"{head}, fields={{\n{body}}})"


def _indent(text: str, spaces: int = 4) -> str:
    return text.replace("\n", "\n" + " " * spaces)


def _verbose_entry(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return (f"{type(value).__name__}(shape={value.shape}, device={value.device}, "
                f"dtype={value.dtype}, is_shared={value.is_shared()})")
    return repr(value)  # NonTensorStack's repr is the verbose layout already


def verbose_repr(td: Any) -> str:
    """The multi-line layout of ``set_printoptions(compact=False)``."""
    fields = ",\n".join(
        f"{key}: {_verbose_entry(td._get_str(key))}" for key in sorted(td._keys_str())
    )
    fields = _indent(fields, 8)
    return (
        f"{type(td).__name__}(\n    fields={{\n        {fields}}},\n"
        f"    batch_size={td.batch_size},\n    device={td.device},\n"
        f"    is_shared={_is_shared(td)})"
    )


def _is_shared(td: Any) -> bool:
    leaves = td._tensor_leaves()  # (lazy stacks give their parts' leaves: no stacking)
    return bool(leaves) and all(leaf.is_shared() for leaf in leaves)


def tensordict_repr(td: Any) -> str:
    """The repr of ``td`` under the current print options."""
    if get_printoptions()["compact"]:
        return compact_repr(td)
    return verbose_repr(td)
