"""Tensorclass reprs under set_printoptions (upstream 0.15.3's texts, same inputs)."""

import torch

from tensordict import set_printoptions, tensorclass


@tensorclass
class TC:
    b: torch.Tensor
    a2: torch.Tensor
    a: torch.Tensor = None
    s: str = "x"


def _tc():
    return TC(b=torch.zeros(1), a2=torch.zeros(1), batch_size=[1])


def test_compact_options():
    assert repr(_tc()) == "TC(batch_size=[1], fields={a2: f32[], b: f32[], s: str, a: None})"
    with set_printoptions(sort_keys=None):  # stored fields in insertion order
        assert repr(_tc()) == "TC(batch_size=[1], fields={b: f32[], a2: f32[], s: str, a: None})"
    with set_printoptions(show_dtype=False):
        assert repr(_tc()) == "TC(batch_size=[1], fields={a2: [], b: [], s: str, a: None})"
    with set_printoptions(show_batch_size=False):
        assert repr(_tc()) == "TC(fields={a2: f32[], b: f32[], s: str, a: None})"
    on_cpu = TC(b=torch.zeros(1), a2=torch.zeros(1), batch_size=[1], device="cpu")
    with set_printoptions(show_device=False):
        assert repr(on_cpu) == "TC(batch_size=[1], fields={a2: f32[], b: f32[], s: str, a: None})"


def test_verbose_options():
    field = "Tensor(shape=torch.Size([1]), device=cpu, dtype=torch.float32, is_shared=False)"
    with set_printoptions(show_batch_size=False, show_device=False, show_is_shared=False):
        assert repr(_tc()) == (
            f"TC(\n    a2={field},\n    b={field},\n"
            "    s=NonTensorData(data=x, batch_size=torch.Size([1]), device=None),\n"
            "    a=None)")
    with set_printoptions(compact=False, sort_keys=None, show_field_device=False):
        assert repr(_tc()) == (
            "TC(\n"
            "    b=Tensor(shape=torch.Size([1]), dtype=torch.float32, is_shared=False),\n"
            "    a2=Tensor(shape=torch.Size([1]), dtype=torch.float32, is_shared=False),\n"
            "    s=NonTensorData(data=x, batch_size=torch.Size([1]), device=None),\n"
            "    a=None,\n    batch_size=torch.Size([1]),\n    device=None,\n"
            "    is_shared=False)")
    with set_printoptions(show_grad=True):
        assert repr(_tc()).splitlines()[1] == (
            "    a2=Tensor(shape=torch.Size([1]), device=cpu, dtype=torch.float32, "
            "is_shared=False, requires_grad=False),")
