"""Lazy stacks and TypedTensorDicts wrap like TensorDicts in the compact repr
(tensorclasses: tensordict-tensorclass's test_tc_repr_wrapping.py).

Every expected text below was printed by upstream tensordict 0.15.3.
"""

import torch

from tensordict import TensorDict, TypedTensorDict, lazy_stack


def _z(*shape):
    return torch.zeros(shape)


def _keys(prefix, count, indent, shape=""):
    return "".join(f"{' ' * indent}{prefix}{i}: f32[{shape}],\n" for i in range(count))


class _Typed(TypedTensorDict):
    obs: torch.Tensor
    a_longer_name: torch.Tensor
    another_long_name: torch.Tensor
    yet_another_long_name: torch.Tensor


def test_lazy_stack_wraps_fields_and_exclusive_fields():
    first = TensorDict({"a": _z(2), "n": {f"key{i}": _z(2) for i in range(8)}}, [2])
    second = first.clone()
    second["xx"] = TensorDict({f"kk{i}": _z(2) for i in range(9)}, [2])
    assert repr(lazy_stack([first, second])) == (
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n"
        "    a: f32[],\n    n: {\n" + _keys("key", 7, 8) + "        key7: f32[]}}, "
        "exclusive_fields={\n    1: {\n        xx: {\n" + _keys("kk", 8, 12) +
        "            kk8: f32[]}}})"
    )


def test_lazy_stack_exclusive_fields_stay_on_the_line_when_they_fit():
    stack = lazy_stack([TensorDict({"a": _z()}),
                        TensorDict({"a": _z(), "x": _z(), "y" * 20: _z()})])
    assert repr(stack) == (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: f32[]}, exclusive_fields={1: {x: f32[], " + "y" * 20 + ": f32[]}})"
    )


def test_lazy_stack_last_field_keeps_room_before_exclusive_fields():
    def stack(n):
        return lazy_stack([TensorDict({"a": _z(), "b": {"x": _z(), "y" * n: _z()}}),
                           TensorDict({"a": _z(), "b": {"x": _z(), "y" * n: _z()}, "c": _z()})])
    fits = repr(stack(32)).splitlines()
    assert len(fits[2]) == 79 and fits[2].endswith("}}, exclusive_fields={")
    assert fits[3] == "    1: {c: f32[]}})"
    assert repr(stack(33)).splitlines()[2:4] == ["    b: {", "        x: f32[],"]


def test_nested_lazy_stack_wraps_with_its_name():
    part = TensorDict({"a": _z(), "b": {f"key{i}": _z() for i in range(9)}})
    td = TensorDict({"x": _z(2), "n": lazy_stack([part, part.clone()])}, [2])
    assert repr(td) == (
        "TensorDict(batch_size=[2], fields={\n    n: LazyStackedTensorDict{\n"
        "        a: f32[],\n        b: {\n" + _keys("key", 8, 12) +
        "            key8: f32[]}},\n    x: f32[]})"
    )


def test_typed_tensordict_entry_wraps_with_its_name():
    typed = _Typed(obs=_z(2), a_longer_name=_z(2), another_long_name=_z(2),
                   yet_another_long_name=_z(2), batch_size=[2])
    assert repr(TensorDict({"a": _z(2), "t": typed}, [2])) == (
        "TensorDict(batch_size=[2], fields={\n    a: f32[],\n    t: _Typed{\n"
        "        a_longer_name: f32[],\n        another_long_name: f32[],\n"
        "        obs: f32[],\n        yet_another_long_name: f32[]}})"
    )
