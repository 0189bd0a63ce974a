"""set_printoptions with every option of upstream 0.15.3, and the reprs it gives (the
expected texts are upstream's, observed with the same inputs)."""

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    get_printoptions,
    set_printoptions,
)

DEFAULTS = {
    "show_batch_size": True, "show_device": True, "show_is_shared": True, "show_shape": True,
    "show_field_device": True, "show_dtype": True, "show_field_is_shared": True,
    "show_grad": False, "show_is_contiguous": False, "show_is_view": False,
    "show_storage_size": False, "plain": False, "sort_keys": "alphabetical", "compact": True,
    "html": True}
T2 = "Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32, is_shared=False"


def _td():
    return TensorDict(a=torch.zeros(3, 2), n={"b": torch.ones(3, dtype=torch.int64)},
                      s="hi", batch_size=[3])


def _stack():
    return LazyStackedTensorDict(TensorDict(a=torch.zeros(2)),
                                 TensorDict(a=torch.zeros(2), b=torch.ones(())))


def _changed(**options):
    with set_printoptions(**options):
        current = get_printoptions()
    return {key: value for key, value in current.items() if DEFAULTS[key] != value}


def test_defaults_and_what_each_switch_changes():
    assert get_printoptions() == DEFAULTS
    assert _changed(show_device=False) == {"show_device": False}
    assert _changed(show_dtype=False, show_batch_size=False, sort_keys=None, html=False) == {
        "show_dtype": False, "show_batch_size": False, "sort_keys": None, "html": False}
    # an option of the verbose layout alone selects it, unless compact is given
    assert _changed(show_is_shared=True) == {"compact": False}
    assert _changed(plain=True) == {"plain": True, "compact": False}
    assert _changed(show_grad=True, compact=True) == {"show_grad": True}
    quiet = {"show_device": False, "show_is_shared": False, "show_field_device": False,
             "show_dtype": False, "show_field_is_shared": False}
    assert _changed(verbose=False) == quiet
    assert _changed(verbose=False, show_dtype=True) == {
        key: value for key, value in quiet.items() if key != "show_dtype"}
    assert _changed(verbose=True) == {}
    assert get_printoptions() == DEFAULTS


def test_unknown_option_raises_on_construction():
    with pytest.raises(TypeError, match=r"Unknown printoptions: \{'bogus'\}. Valid options:"):
        set_printoptions(bogus=1)


def test_setter_nesting_decorator_and_clone():
    switch = set_printoptions(show_dtype=False)
    assert get_printoptions()["show_dtype"]
    try:
        assert switch.set() is None and not get_printoptions()["show_dtype"]
        assert repr(_td()) == "TensorDict(batch_size=[3], fields={a: [2], n: {b: []}, s: str})"
    finally:
        set_printoptions(show_dtype=True).set()
    with set_printoptions(compact=False):
        with set_printoptions(show_dtype=False):  # compact stays as set outside
            assert not get_printoptions()["compact"] and not get_printoptions()["show_dtype"]
        assert get_printoptions()["show_dtype"] and not get_printoptions()["compact"]
    assert get_printoptions() == DEFAULTS

    @set_printoptions(show_batch_size=False)
    def show():
        return repr(TensorDict(a=torch.zeros(1)))

    assert show() == "TensorDict(fields={a: f32[1]})"
    assert type(switch.clone()) is set_printoptions
    assert get_printoptions() == DEFAULTS


def test_compact_options():
    td = _td()
    on_cpu = TensorDict(a=torch.zeros(2), device="cpu", batch_size=[2])
    with set_printoptions(show_device=False):
        assert repr(on_cpu) == "TensorDict(batch_size=[2], fields={a: f32[]})"
        meta = TensorDict(a=torch.zeros(2, device="meta"), b=torch.zeros(2), batch_size=[2])
        assert repr(meta) == "TensorDict(batch_size=[2], fields={a: f32[]@meta, b: f32[]})"
    with set_printoptions(show_batch_size=False):
        assert repr(td) == "TensorDict(fields={a: f32[2], n: {b: i64[]}, s: str})"
        assert repr(on_cpu) == "TensorDict(device=cpu, fields={a: f32[]})"
        assert repr(_stack()) == ("LazyStackedTensorDict(stack_dim=0, fields={a: f32[2]}, "
                                  "exclusive_fields={\n    1: {b: f32[]}})")
        nested = TensorDict(m=TensorDict(y=torch.zeros(3, 4), batch_size=[3, 4]),
                            batch_size=[3])
        assert repr(nested) == "TensorDict(fields={m: [4]{y: f32[]}})"
    with set_printoptions(verbose=False):
        assert repr(on_cpu) == "TensorDict(batch_size=[2], fields={a: []})"
        assert repr(_stack()) == ("LazyStackedTensorDict(batch_size=[2], stack_dim=0, "
                                  "fields={\n    a: [2]}, exclusive_fields={1: {b: []}})")


def test_sort_keys():
    td = TensorDict(z=torch.zeros(3), a=torch.ones(3, dtype=torch.int32),
                    m=TensorDict(y=torch.zeros(3, 4), b=torch.zeros(3, 4, 1), batch_size=[3, 4]),
                    batch_size=[3])
    assert repr(td) == ("TensorDict(batch_size=[3], fields={\n    a: i32[],\n"
                        "    m: [4]{b: f32[1], y: f32[]},\n    z: f32[]})")
    for insertion in (None, "insertion", True, False):
        with set_printoptions(sort_keys=insertion):
            assert repr(td) == ("TensorDict(batch_size=[3], fields={\n    z: f32[],\n"
                                "    a: i32[],\n    m: [4]{y: f32[], b: f32[1]}})")
    # sorted as the "key: ..." lines are: "a2:" before "a:"
    keys = TensorDict(a=torch.zeros(1), a2=torch.zeros(1), B=torch.zeros(1))
    assert repr(keys) == "TensorDict(batch_size=[], fields={B: f32[1], a2: f32[1], a: f32[1]})"


def test_verbose_field_options():
    td = _td()
    with set_printoptions(show_field_device=False, show_field_is_shared=False,
                          show_is_shared=False):
        assert repr(td) == (
            "TensorDict(\n    fields={\n"
            "        a: Tensor(shape=torch.Size([3, 2]), dtype=torch.float32),\n"
            "        n: TensorDict(\n            fields={\n"
            "                b: Tensor(shape=torch.Size([3]), dtype=torch.int64)},\n"
            "            batch_size=torch.Size([3]),\n            device=None),\n"
            "        s: NonTensorData(data=hi, batch_size=torch.Size([3]), device=None)},\n"
            "    batch_size=torch.Size([3]),\n    device=None)")
    with set_printoptions(compact=False, show_dtype=False, show_field_device=False,
                          show_batch_size=False, show_device=False):
        assert repr(TensorDict(a=torch.zeros(2), batch_size=[2])) == (
            "TensorDict(\n    fields={\n"
            "        a: Tensor(shape=torch.Size([2]), is_shared=False)},\n"
            "    is_shared=False)")
    with set_printoptions(show_batch_size=False, show_device=False, show_is_shared=False):
        assert repr(TensorDict()) == "TensorDict(\n    fields={\n    })"
    x = torch.zeros(4, 4)
    with set_printoptions(show_is_view=True, show_is_contiguous=True, show_storage_size=True):
        assert repr(TensorDict(a=x[:, 1])).splitlines()[2] == (
            "        a: Tensor(shape=torch.Size([4]), device=cpu, dtype=torch.float32, "
            "is_shared=False, is_contiguous=False, is_view=True, storage_size=64)},")
    with set_printoptions(show_grad=True, show_is_view=True, show_is_contiguous=True,
                          show_storage_size=True, plain=True, show_shape=False,
                          show_dtype=False):
        assert repr(TensorDict(a=torch.zeros(2))).splitlines()[2] == (
            "        a: Tensor(device=cpu, is_shared=False, requires_grad=False, "
            "is_contiguous=True, is_view=False, storage_size=8, mean=0, std=0)},")
    shared = TensorDict(a=torch.zeros(2)).share_memory_()
    with set_printoptions(show_field_is_shared=False):
        assert repr(shared).splitlines()[2:] == [
            "        a: Tensor(shape=torch.Size([2]), device=cpu, dtype=torch.float32)},",
            "    batch_size=torch.Size([]),", "    device=None,", "    is_shared=True)"]


def test_plain_summaries():
    td = TensorDict(a=torch.tensor([1., 2., 4.]), a3=torch.tensor([1e-8, 1e8]),
                    b=torch.tensor([True, False]), c=torch.zeros(0), d=torch.tensor([1, 5]),
                    f=torch.tensor([1 + 2j, 3j]), g=torch.tensor([1.], dtype=torch.float16),
                    h=torch.tensor([1., 2.], dtype=torch.bfloat16))
    with set_printoptions(plain=True):
        lines = repr(td).splitlines()[2:10]
    ends = [line.rpartition("is_shared=False, ")[2] for line in lines]
    assert ends == ["mean=5e+07, std=7.071e+07),", "mean=2.333, std=1.528),",
                    "min=False, max=True),", "[]),", "min=1, max=5),",
                    "mean=0.5+2.5j, std=1),", "mean=1, std=nan),", "mean=1.5, std=0.7071)},"]


def test_lazy_stack_verbose_options():
    with set_printoptions(show_grad=True):
        assert repr(_stack()) == (
            "LazyStackedTensorDict(\n    fields={\n"
            "        a: Tensor(shape=torch.Size([2, 2]), device=cpu, dtype=torch.float32, "
            "is_shared=False, requires_grad=False)},\n"
            "    exclusive_fields={\n        1 ->\n"
            "            b: Tensor(shape=torch.Size([]), device=cpu, dtype=torch.float32, "
            "is_shared=False, requires_grad=False)},\n"
            "    batch_size=torch.Size([2]),\n    device=None,\n    is_shared=False,\n"
            "    stack_dim=0)")
    with set_printoptions(show_storage_size=True, plain=True, show_is_shared=False,
                          show_device=False, show_field_is_shared=False,
                          show_field_device=False):
        assert repr(_stack()) == (
            "LazyStackedTensorDict(\n    fields={\n"
            "        a: Tensor(shape=torch.Size([2, 2]), dtype=torch.float32, "
            "storage_size=16, mean=0, std=0)},\n"
            "    exclusive_fields={\n        1 ->\n"
            "            b: Tensor(shape=torch.Size([]), dtype=torch.float32, "
            "storage_size=4, mean=1, std=nan)},\n"
            "    batch_size=torch.Size([2]),\n    stack_dim=0)")


def test_lazy_stack_compact_wrapping():
    stack = LazyStackedTensorDict(TensorDict(aaaaaaaaa=torch.zeros(2)),
                                  TensorDict(aaaaaaaaa=torch.zeros(2), b=torch.ones(())))
    with set_printoptions(show_batch_size=False):
        assert repr(stack) == ("LazyStackedTensorDict(stack_dim=0, fields={\n"
                               "    aaaaaaaaa: f32[2]}, exclusive_fields={1: {b: f32[]}})")


def test_non_tensor_reprs_keep_their_layout():
    for options in ({}, {"compact": False}, {"verbose": False}, {"show_batch_size": False}):
        with set_printoptions(**options):
            assert repr(NonTensorData("hi", batch_size=[2])) == \
                "NonTensorData(data=hi, batch_size=torch.Size([2]), device=None)"
            assert repr(NonTensorStack("a", "b")) == (
                "NonTensorStack(\n    ['a', 'b'],\n    batch_size=torch.Size([2]),\n"
                "    device=None)")
