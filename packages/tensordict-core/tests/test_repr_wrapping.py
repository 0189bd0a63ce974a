"""The compact repr wraps a nested entry that does not fit the line (upstream's layout).

Every expected text below was printed by upstream tensordict 0.15.3.
"""

import torch

from tensordict import NonTensorData, TensorDict
from tensordict._repr import _compact_value, compact_layout


def _z(*shape):
    return torch.zeros(shape)


def test_long_nested_entry_opens_a_block():
    td = TensorDict({"a": _z(2), "n": {f"key{i}": _z(2, 1) for i in range(6)}}, [2])
    assert repr(td) == (
        "TensorDict(batch_size=[2], fields={\n"
        "    a: f32[],\n"
        "    n: {\n"
        "        key0: f32[1],\n"
        "        key1: f32[1],\n"
        "        key2: f32[1],\n"
        "        key3: f32[1],\n"
        "        key4: f32[1],\n"
        "        key5: f32[1]}})"
    )


def test_short_nested_entry_stays_on_its_line():
    td = TensorDict({"a": _z(2), "n": {f"key{i}": _z(2, 1) for i in range(5)}}, [2])
    assert repr(td) == (
        "TensorDict(batch_size=[2], fields={\n"
        "    a: f32[],\n"
        "    n: {key0: f32[1], key1: f32[1], key2: f32[1], key3: f32[1], key4: f32[1]}})"
    )


def _nested_line(key_length: int, last: bool) -> TensorDict:
    entries = {"a": _z(), "b" * 60: _z(), "n": {"x": _z(), "y" * key_length: _z()}}
    if not last:
        entries["z"] = _z()
    return TensorDict(entries)


def test_width_counts_the_closing_braces_of_the_last_entry():
    # "    n: {x: f32[], yyy: f32[]}})": 80 characters fit, 81 do not
    fits = repr(_nested_line(52, last=True)).splitlines()
    assert len(fits[-1]) == 80 and fits[-1].endswith(": f32[]}})")
    wraps = repr(_nested_line(53, last=True)).splitlines()
    assert wraps[-3:] == ["    n: {", "        x: f32[],", "        " + "y" * 53 + ": f32[]}})"]


def test_width_counts_the_comma_of_a_middle_entry():
    fits = repr(_nested_line(53, last=False)).splitlines()
    assert len(fits[-2]) == 80 and fits[-2].endswith("},")
    assert fits[-1] == "    z: f32[]})"
    wraps = repr(_nested_line(54, last=False)).splitlines()
    assert wraps[-4:] == ["    n: {", "        x: f32[],", "        " + "y" * 54 + ": f32[]},",
                          "    z: f32[]})"]


def test_deeper_nesting_wraps_level_by_level():
    td = TensorDict({"a": _z(), "n": {"p": _z(), "m": {f"key{i}": _z() for i in range(3)},
                                      "q": {f"k{i}": _z() for i in range(9)}}})
    assert repr(td) == (
        "TensorDict(batch_size=[], fields={\n"
        "    a: f32[],\n"
        "    n: {\n"
        "        m: {key0: f32[], key1: f32[], key2: f32[]},\n"
        "        p: f32[],\n"
        "        q: {\n"
        + "".join(f"            k{i}: f32[],\n" for i in range(8)) +
        "            k8: f32[]}}})"
    )


def test_block_keeps_extra_batch_dims_and_non_tensor_entries():
    inner = TensorDict({f"key{i}": _z(3, 2) for i in range(6)}, [3, 2])
    inner["s"] = NonTensorData("text", batch_size=[3, 2])
    td = TensorDict({"a": _z(3), "n": inner}, [3], device="cpu")
    assert repr(td) == (
        "TensorDict(batch_size=[3], device=cpu, fields={\n"
        "    a: f32[],\n"
        "    n: [2]{\n"
        + "".join(f"        key{i}: f32[],\n" for i in range(6)) +
        "        s: str}})"
    )


def test_what_cannot_wrap_stays_long():
    empty = TensorDict({"a": _z(), "n" * 90: {}})
    assert repr(empty).splitlines()[-1] == "    " + "n" * 90 + ": {}})"
    leaf = TensorDict({"a": _z(), "n": {"b": {"c" * 90: _z()}}})
    assert repr(leaf).splitlines()[2:] == ["    n: {", "        b: {",
                                           "            " + "c" * 90 + ": f32[]}}})"]
    no_fields = TensorDict({}, [1] * 30)
    assert repr(no_fields) == f"TensorDict(batch_size=[{','.join('1' * 30)}], fields={{}})"


def test_one_line_text_of_a_block():
    inner = TensorDict({f"key{i}": _z() for i in range(9)})
    text, block = _compact_value(inner, 0, None)
    assert "\n" not in text and text.startswith("{key0: f32[], ") and text.endswith("}")
    assert block[0] == "" and [key for key, _, _ in block[1]] == [f"key{i}" for i in range(9)]
    assert _compact_value(_z(2), 0, None) == ("f32[2]", None)


def test_compact_layout_groups():
    leaf = [("a", "f32[]", None)]
    assert compact_layout("X(n=1", [("fields", leaf)]) == "X(n=1, fields={a: f32[]})"
    assert compact_layout("X(n=1", [("fields", []), ("more", [])]) == \
        "X(n=1, fields={}, more={})"
    head = "X(" + "h" * 60
    part = ("1", "{c: f32[]}", ("", [("c", "f32[]", None)]))
    # a later group stays on the line where it starts when it fits there
    assert compact_layout(head, [("fields", leaf), ("more", [part])]) == \
        f"{head}, fields={{\n    a: f32[]}}, more={{1: {{c: f32[]}}}})"
    long_part = ("1", "{" + "c" * 70 + ": f32[]}", ("", [("c" * 70, "f32[]", None)]))
    assert compact_layout(head, [("fields", leaf), ("more", [long_part])]) == (
        f"{head}, fields={{\n    a: f32[]}}, more={{\n    1: {{\n"
        f"        {'c' * 70}: f32[]}}}})"
    )
    # before a later group, the last entry keeps room for its opening and one character
    block = ("", [("x", "f32[]", None), ("y" * 45, "f32[]", None)])
    nested = ("b", "{x: f32[], " + "y" * 45 + ": f32[]}", block)
    lines = compact_layout(head, [("fields", [nested]), ("more", [part])]).splitlines()
    assert lines[1:3] == ["    b: {", "        x: f32[],"]
    block = ("", [("x", "f32[]", None), ("y" * 44, "f32[]", None)])
    nested = ("b", "{x: f32[], " + "y" * 44 + ": f32[]}", block)
    lines = compact_layout(head, [("fields", [nested]), ("more", [part])]).splitlines()
    assert lines[1] == "    b: {x: f32[], " + "y" * 44 + ": f32[]}}, more={"
    assert len(lines[1]) == 79 and lines[2] == "    1: {c: f32[]}})"
