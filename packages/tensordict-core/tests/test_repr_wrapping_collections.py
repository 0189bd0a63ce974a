"""Lazy stacks, tensorclasses and TypedTensorDicts wrap like TensorDicts in the compact
repr (needs the _lazy_dict / _typed / tensorclass patches that use ``compact_layout``).

Every expected text below was printed by upstream tensordict 0.15.3.
"""

import torch

from tensordict import TensorClass, TensorDict, TypedTensorDict, lazy_stack


def _z(*shape):
    return torch.zeros(shape)


def _keys(prefix, count, indent, shape=""):
    return "".join(f"{' ' * indent}{prefix}{i}: f32[{shape}],\n" for i in range(count))


class _Obs(TensorClass):
    pixels: torch.Tensor
    mask: torch.Tensor = None
    other: torch.Tensor = None
    more_fields_here: torch.Tensor = None
    and_another_one: torch.Tensor = None


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


def test_tensorclass_entry_in_lazy_stack_shows_its_class():
    class TC(TensorClass):
        obs: torch.Tensor
        other: torch.Tensor = None

    td = TensorDict({"t": TC(obs=_z(2, 3), batch_size=[2])}, [2])
    assert repr(lazy_stack([td, td.clone()])) == (
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n"
        "    t: TC{obs: f32[3], other: None}})"
    )


def test_tensorclass_wraps_as_entry_and_at_top():
    td = TensorDict({"a": _z(3), "n": _Obs(pixels=_z(3, 4), batch_size=[3])}, [3])
    assert repr(td) == (
        "TensorDict(batch_size=[3], fields={\n    a: f32[],\n    n: _Obs{\n"
        "        pixels: f32[4],\n        mask: None,\n        other: None,\n"
        "        more_fields_here: None,\n        and_another_one: None}})"
    )
    top = _Obs(pixels=TensorDict({f"key{i}": _z(3, 2) for i in range(8)}, [3]), mask=_z(3),
               batch_size=[3])
    assert repr(top) == (
        "_Obs(batch_size=[3], fields={\n    mask: f32[],\n    pixels: {\n"
        + _keys("key", 7, 8, "2") + "        key7: f32[2]},\n    other: None,\n"
        "    more_fields_here: None,\n    and_another_one: None})"
    )


def test_typed_tensordict_entry_wraps_with_its_name():
    typed = _Typed(obs=_z(2), a_longer_name=_z(2), another_long_name=_z(2),
                   yet_another_long_name=_z(2), batch_size=[2])
    assert repr(TensorDict({"a": _z(2), "t": typed}, [2])) == (
        "TensorDict(batch_size=[2], fields={\n    a: f32[],\n    t: _Typed{\n"
        "        a_longer_name: f32[],\n        another_long_name: f32[],\n"
        "        obs: f32[],\n        yet_another_long_name: f32[]}})"
    )
