"""How TensorDicts print: compact by default, verbose with ``set_printoptions(compact=False)``;
the other print options (see ``set_printoptions``) choose what each layout shows.

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
from tensordict._options import get_printoptions, print_option
from tensordict._unbatched import UnbatchedTensor

_LINE_WIDTH = 80
_DTYPE_ABBREVIATIONS = {
    torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
    torch.uint8: "u8", torch.bool: "bool", torch.complex64: "c64", torch.complex128: "c128",
}


def _dtype_abbreviation(dtype: torch.dtype) -> str:
    if not print_option("show_dtype"):
        return ""
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


def sorted_keys(keys: Any) -> list[str]:
    """``keys`` in the order reprs list them: sorted as their ``key: ...`` lines (with
    ``sort_keys="alphabetical"``, the default), else as given.

    >>> sorted_keys(["b", "a2", "a"])
    ['a2', 'a', 'b']
    """
    if print_option("sort_keys") == "alphabetical":
        return sorted(keys, key=lambda key: key + ":")
    return list(keys)


def compact_entries(td: Any) -> list[Entry]:
    """The compact fields of ``td``, in :func:`sorted_keys` order."""
    ndim = len(td.batch_size)
    device = td.device
    return [(key, *_compact_value(td._get_str(key), ndim, device))
            for key in sorted_keys(td._keys_str())]


def compact_head(name: str, batch_size: torch.Size, device: Any, *extra: str) -> str:
    """``Name(batch_size=[3], device=cpu, *extra`` as the print options show it.

    >>> compact_head("TensorDict", torch.Size([3]), None, "stack_dim=0")
    'TensorDict(batch_size=[3], stack_dim=0'
    """
    parts = []
    if print_option("show_batch_size"):
        parts.append(f"batch_size={_sizes(batch_size)}")
    if device is not None and print_option("show_device"):
        parts.append(f"device={device}")
    return f"{name}(" + ", ".join([*parts, *extra])


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
    first = "" if head.endswith("(") else ", "  # (a head showing nothing)
    line = head + first + ", ".join([f"{name}={{{_joined(entries)}}}"
                                     for name, entries in groups]) + ")"
    if len(line) <= _LINE_WIDTH:
        return line
    out = [head]
    last = len(groups) - 1
    for i, (name, entries) in enumerate(groups):
        end = ")" if i == last else ""
        sep = ", " if i else first
        flat = f"{sep}{name}={{{_joined(entries)}}}{end}"
        # before a later group, upstream keeps room for its opening and one more character
        reserve = 0 if i == last else len(groups[i + 1][0]) + 5
        if not entries or len(out[-1]) + len(flat) + reserve <= _LINE_WIDTH:
            out[-1] += flat
            continue
        out[-1] += f"{sep}{name}={{"
        _lines(entries, 4, "}" + end, out, reserve)
    return "\n".join(out)


def compact_repr(td: Any) -> str:
    """``TensorDict(batch_size=[3], fields={a: f32[4]})``, one field a line when long."""
    return compact_layout(compact_head(type(td).__name__, td.batch_size, td.device),
                          [("fields", compact_entries(td))])


def _indent(text: str, spaces: int = 4) -> str:
    """``text`` with its lines after the first indented by ``spaces``.

    >>> _indent("a" + chr(10) + "b", 2).splitlines()
    ['a', '  b']
    """
    return text.replace("\n", "\n" + " " * spaces)


def _verbose_entry(value: Any, shape: torch.Size | None = None) -> str:
    """One entry of the verbose repr (a tensor's details as the print options choose;
    ``shape``: the one to show, if not the tensor's).

    >>> _verbose_entry(torch.zeros(2))
    'Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False)'
    """
    if not isinstance(value, torch.Tensor):
        return repr(value)  # NonTensorStack's repr is the verbose layout already
    options = get_printoptions()
    parts = []
    if options["show_shape"]:
        parts.append(f"shape={value.shape if shape is None else shape}")
    if options["show_field_device"]:
        parts.append(f"device={value.device}")
    if options["show_dtype"]:
        parts.append(f"dtype={value.dtype}")
    if options["show_field_is_shared"]:
        parts.append(f"is_shared={value.is_shared()}")
    if options["show_grad"]:
        parts.append(f"requires_grad={value.requires_grad}")
    if options["show_is_contiguous"]:
        parts.append(f"is_contiguous={value.is_contiguous()}")
    if options["show_is_view"]:
        parts.append(f"is_view={value._is_view()}")
    if options["show_storage_size"]:
        parts.append(f"storage_size={value.untyped_storage().nbytes()}")
    if options["plain"]:
        parts.append(_summary(value))
    return f"{type(value).__name__}({', '.join(parts)})"


def _summary(tensor: torch.Tensor) -> str:
    """``mean=..., std=...`` of a floating or complex tensor (4 significant digits),
    ``min=..., max=...`` of another, ``[]`` when empty.

    >>> _summary(torch.tensor([1., 2., 4.])), _summary(torch.tensor([1, 5]))
    ('mean=2.333, std=1.528', 'min=1, max=5')
    """
    if not tensor.numel():
        return "[]"
    if tensor.is_floating_point() or tensor.is_complex():
        if tensor.element_size() < 4:  # half precision: summed in float32
            tensor = tensor.float()
        std = tensor.std().item() if tensor.numel() > 1 else float("nan")
        return f"mean={tensor.mean().item():.4g}, std={std:.4g}"
    return f"min={tensor.min().item()}, max={tensor.max().item()}"


def verbose_tail(batch_size: torch.Size, device: Any, is_shared: Any) -> list[str]:
    """The ``batch_size=``, ``device=`` and ``is_shared=`` lines of a verbose repr that
    the print options show (``is_shared``: called only when shown).

    >>> verbose_tail(torch.Size([2]), None, lambda: False)
    ['batch_size=torch.Size([2])', 'device=None', 'is_shared=False']
    """
    options = get_printoptions()
    lines = []
    if options["show_batch_size"]:
        lines.append(f"batch_size={batch_size}")
    if options["show_device"]:
        lines.append(f"device={device}")
    if options["show_is_shared"]:
        lines.append(f"is_shared={is_shared()}")
    return lines


def fields_block(name: str, lines: list[str]) -> str:
    """``name={`` and ``lines``, one a line, as a verbose repr lists its fields.

    >>> print(fields_block("fields", ["a: 1", "b: 2"]))
    fields={
        a: 1,
        b: 2}
    """
    if not lines:
        return f"{name}={{\n}}"
    return f"{name}={{\n    " + _indent(",\n".join(lines)) + "}"


def verbose_layout(name: str, parts: list[str]) -> str:
    """``Name(`` and ``parts``, one a line, indented.

    >>> print(verbose_layout("T", ["batch_size=torch.Size([])", "device=None"]))
    T(
        batch_size=torch.Size([]),
        device=None)
    """
    return f"{name}(\n    " + _indent(",\n".join(parts)) + ")"


def verbose_repr(td: Any) -> str:
    """The multi-line layout of ``set_printoptions(compact=False)``."""
    fields = [f"{key}: {_verbose_entry(td._get_str(key))}"
              for key in sorted_keys(td._keys_str())]
    return verbose_layout(type(td).__name__, [
        fields_block("fields", fields),
        *verbose_tail(td.batch_size, td.device, lambda: _is_shared(td))])


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
