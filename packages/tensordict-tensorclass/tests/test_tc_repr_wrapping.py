"""Tensorclasses wrap like TensorDicts in the compact repr, as an entry and at the top.

Every expected text below was printed by upstream tensordict 0.15.3.
"""

import torch

from tensordict import TensorClass, TensorDict, lazy_stack


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
