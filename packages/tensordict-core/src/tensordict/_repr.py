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
    text = _DTYPE_ABBREVIATIONS.get(dtype)
    return str(dtype).removeprefix("torch.") if text is None else text


def _sizes(size: torch.Size) -> str:
    """``size`` as a repr prints it.

    >>> _sizes(torch.Size([3, 4]))
    '[3,4]'
    """
    return "[" + ",".join(map(str, size)) + "]"


#: One field of a compact repr: ``(key, value's one-line text, value's block or None)``.
Entry = tuple[str, str, "Block | None"]
#: A nested collection's ``(text before "{", its fields)``; it may print on several lines.
Block = tuple[str, list[Entry]]


def _compact_value(value: Any, batch_ndim: int, device: torch.device | None
                   ) -> tuple[str, Block | None]:
    """The one-line text of ``value`` and, for a nested collection, its block.

    >>> _compact_value(torch.zeros(3, 4), 1, None)
    ('f32[4]', None)
    """
    if isinstance(value, torch.Tensor):
        if value.__class__ is UnbatchedTensor:
            shape = value.shape
        elif value.is_nested:  # a strided nested tensor has no .shape
            shape = _shape(value)[batch_ndim:]
        else:
            shape = value.shape[batch_ndim:]
        text = _dtype_abbreviation(value.dtype) + _sizes(shape)
        if not value.is_cpu and value.device != device:
            text += f"@{value.device}"
        return text, None
    if type(value).__name__ == "TensorDict" and hasattr(value, "_tensordict"):
        extra = value.batch_size[batch_ndim:]
        block = (_sizes(extra) if extra else "", compact_entries(value))
    elif getattr(value, "_is_non_tensor", False):
        data = getattr(value, "data", None)
        plain = isinstance(value, NonTensorData) and not isinstance(value, MetaData)
        return (type(data) if plain else type(value)).__name__, None
    elif hasattr(type(value), "_compact_nested_block"):  # tensorclasses, lazy stacks
        block = value._compact_nested_block(batch_ndim)
    else:
        return repr(value), None
    return block_text(block), block


def compact_entries(td: Any) -> list[Entry]:
    """The compact fields of ``td``, sorted by key."""
    ndim = len(td.batch_size)
    device = td.device
    return [(key, *_compact_value(td._get_str(key), ndim, device))
            for key in sorted(td._keys_str())]


def _joined(entries: list[Entry]) -> str:
    return ", ".join([f"{key}: {text}" for key, text, _ in entries])


def block_text(block: Block) -> str:
    """A block on one line: ``prefix{a: f32[], b: {c: i64[]}}``."""
    return f"{block[0]}{{{_joined(block[1])}}}"


def _lines(entries: list[Entry], indent: int, closing: str, out: list[str],
           reserve: int = 0) -> None:
    """Append one line per entry, ``closing`` (and ``reserve`` more characters of width)
    after the last one: an entry whose line would pass the width opens its block and
    lists its fields one level deeper."""
    pad = " " * indent
    last = len(entries) - 1
    for i, (key, text, block) in enumerate(entries):
        end, extra = (closing, reserve) if i == last else (",", 0)
        if block is None or not block[1] or \
                indent + len(key) + 2 + len(text) + len(end) + extra <= _LINE_WIDTH:
            out.append(f"{pad}{key}: {text}{end}")
        else:
            out.append(f"{pad}{key}: {block[0]}{{")
            _lines(block[1], indent + 4, "}" + end, out, extra)


def compact_layout(head: str, groups: list[tuple[str, list[Entry]]]) -> str:
    """``head, name={fields}, ...)`` on one line when it fits the width. Otherwise the
    first group's fields go one a line (a nested block that does not fit opens on its
    own lines too), and each later group stays on the line it starts on when it fits
    there (the layout upstream prints).

    Example:
        >>> entries = [("a", "f32[]", None), ("b", "{c: i64[]}", ("", [("c", "i64[]", None)]))]
        >>> compact_layout("TensorDict(batch_size=[]", [("fields", entries)])
        'TensorDict(batch_size=[], fields={a: f32[], b: {c: i64[]}})'
        >>> print(compact_layout("T(batch_size=[]" + "." * 50, [("fields", entries)]))
        T(batch_size=[].................................................., fields={
            a: f32[],
            b: {c: i64[]}})
    """
    line = head + "".join([f", {name}={{{_joined(entries)}}}" for name, entries in groups]) + ")"
    if len(line) <= _LINE_WIDTH:
        return line
    out = [head]
    last = len(groups) - 1
    for i, (name, entries) in enumerate(groups):
        end = ")" if i == last else ""
        flat = f", {name}={{{_joined(entries)}}}{end}"
        if not entries or (i and len(out[-1]) + len(flat) <= _LINE_WIDTH):
            out[-1] += flat
            continue
        out[-1] += f", {name}={{"
        # before a later group, upstream keeps room for its opening and one more character
        _lines(entries, 4, "}" + end, out, 0 if i == last else len(groups[i + 1][0]) + 5)
    return "\n".join(out)


def compact_repr(td: Any) -> str:
    """``TensorDict(batch_size=[3], fields={a: f32[4]})``, one field a line when long."""
    head = f"{type(td).__name__}(batch_size={_sizes(td.batch_size)}"
    if td.device is not None:
        head += f", device={td.device}"
    return compact_layout(head, [("fields", compact_entries(td))])


def _indent(text: str, spaces: int = 4) -> str:
    """``text`` with its lines after the first indented by ``spaces``.

    >>> _indent("a" + chr(10) + "b", 2).splitlines()
    ['a', '  b']
    """
    return text.replace("\n", "\n" + " " * spaces)


def _verbose_entry(value: Any) -> str:
    """One entry of the verbose repr.

    >>> _verbose_entry(torch.zeros(2))
    'Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)'
    """
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
    """Whether every tensor leaf of ``td`` is in shared memory (False without leaves).

    >>> from tensordict import TensorDict
    >>> _is_shared(TensorDict(a=torch.zeros(2))), _is_shared(TensorDict())
    (False, False)
    """
    leaves = td._tensor_leaves()  # (lazy stacks give their parts' leaves: no stacking)
    return bool(leaves) and all(leaf.is_shared() for leaf in leaves)


def tensordict_repr(td: Any) -> str:
    """The repr of ``td`` under the current print options."""
    if get_printoptions()["compact"]:
        return compact_repr(td)
    return verbose_repr(td)
