"""Compact and verbose reprs."""

import torch

from tensordict import TensorDict, get_printoptions, set_printoptions


def test_compact_repr():
    td = TensorDict({"a": torch.zeros(3, 4), "b": {"c": torch.zeros(3, dtype=torch.long)}}, [3])
    assert repr(td) == "TensorDict(batch_size=[3], fields={a: f32[4], b: {c: i64[]}})"


def test_compact_repr_device_non_tensor_and_wrapping():
    td = TensorDict({"a": torch.zeros(3, 4), "b": torch.zeros(3), "c": torch.zeros(3),
                     "d": torch.zeros(3, dtype=torch.bfloat16)}, [3], device="cpu")
    assert repr(td) == (
        "TensorDict(batch_size=[3], device=cpu, fields={\n"
        "    a: f32[4],\n    b: f32[],\n    c: f32[],\n    d: bf16[]})"
    )
    small = TensorDict({"s": "txt", "m": torch.zeros(2, device="meta")}, [])
    assert repr(small) == "TensorDict(batch_size=[], fields={m: f32[2]@meta, s: str})"


def test_compact_repr_shows_extra_nested_batch_dims():
    inner = TensorDict({"x": torch.zeros(3, 2)}, [3])
    td = TensorDict({"n": inner}, [])
    assert repr(td) == "TensorDict(batch_size=[], fields={n: [3]{x: f32[2]}})"


def test_verbose_repr_matches_seed_layout():
    td = TensorDict({"a": torch.zeros(3, 4), "n": {"x": torch.zeros(3)}, "s": "str"}, [3])
    with set_printoptions(compact=False):
        text = repr(td)
    assert text == (
        "TensorDict(\n"
        "    fields={\n"
        "        a: Tensor(shape=torch.Size([3, 4]), device=cpu, dtype=torch.float32, "
        "is_shared=False),\n"
        "        n: TensorDict(\n"
        "            fields={\n"
        "                x: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.float32, "
        "is_shared=False)},\n"
        "            batch_size=torch.Size([3]),\n"
        "            device=None,\n"
        "            is_shared=False),\n"
        "        s: NonTensorData(data=str, batch_size=torch.Size([3]), device=None)},\n"
        "    batch_size=torch.Size([3]),\n"
        "    device=None,\n"
        "    is_shared=False)"
    )


def test_printoptions_set_and_restore():
    assert get_printoptions()["compact"]
    switch = set_printoptions(compact=False)
    assert get_printoptions()["compact"]  # building the switch changes nothing
    switch.set()
    try:
        assert not get_printoptions()["compact"]
    finally:
        set_printoptions(compact=True).set()
    assert get_printoptions()["compact"]


def test_printoptions_decorator():
    @set_printoptions(compact=False)
    def show():
        return repr(TensorDict())

    assert show().startswith("TensorDict(\n")
    assert repr(TensorDict()) == "TensorDict(batch_size=[], fields={})"


def test_deep_nesting_stays_readable():
    td = TensorDict({"a": {"b": {"c": {"d": torch.zeros(1)}}}}, [])
    assert repr(td) == "TensorDict(batch_size=[], fields={a: {b: {c: {d: f32[1]}}}})"
    many = TensorDict({f"k{i}": torch.zeros(2) for i in range(30)}, [2])
    lines = repr(many).splitlines()
    assert len(lines) == 31 and all(len(line) < 80 for line in lines)
