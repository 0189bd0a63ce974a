"""``with td.<op>(...) as out:`` writes ``out`` back into ``td`` on exit (issue 43, family 1).

For every op upstream gives this form (shape ops, ``to``, ``flatten_keys``,
``unflatten_keys``), on dense, nested, lazy-stacked and locked TensorDicts: the values set
into ``out`` land in ``td`` (in place when ``td`` is locked), keys added to ``out`` appear in
``td`` with ``td``'s batch shape, and nothing is written when the block raises.
"""

from __future__ import annotations

import gc

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack

# (op, args, batch size of the source)
OPS = [
    ("flatten", (0, 1), [2, 3]),
    ("flatten", (), [2, 3]),
    ("unflatten", (1, (3, 1)), [2, 3]),
    ("view", (6,), [2, 3]),
    ("view", (-1,), [2, 3]),
    ("permute", (1, 0), [2, 3]),
    ("transpose", (0, 1), [2, 3]),
    ("swapaxes", (0, 1), [2, 3]),
    ("swapdims", (1, 0), [2, 3]),
    ("squeeze", (0,), [1, 3]),
    ("unsqueeze", (0,), [2, 3]),
    ("unsqueeze", (-1,), [2, 3]),
    ("movedim", (0, 1), [2, 3]),
    ("moveaxis", (1, 0), [2, 3]),
    ("flip", ([0],), [2, 3]),
    ("fliplr", (), [2, 3]),
    ("flipud", (), [2, 3]),
    ("roll", (1, 0), [2, 3]),
    ("roll", (2,), [2, 3]),
    ("rot90", (), [2, 3]),
    ("rot90", (3, (1, 0)), [2, 3]),
    ("atleast_1d", (), []),
    ("atleast_2d", (), [3]),
    ("atleast_3d", (), [2, 3]),
    ("flatten_keys", (), [2, 3]),
    ("unflatten_keys", (), [2, 3]),
    ("to", (torch.float64,), [2, 3]),
    ("cpu", (), [2, 3]),
]
OP_IDS = [f"{op}{list(args)}" for op, args, _ in OPS]
KINDS = ["dense", "nested", "lazy", "locked"]


def make(kind: str, batch_size: list[int], dotted: bool = False) -> TensorDict:
    """A source of ``kind`` (see KINDS). ``dotted`` (for unflatten_keys, whose inverse
    flattens every nested key) names leaves "d.e" and "n.c" instead of nesting them."""
    def dense(size: list[int]) -> TensorDict:
        leaves = {"a": torch.randn(*size, 4), ("d.e" if dotted else "b"): torch.randn(size)}
        if kind != "dense" and dotted:
            leaves["n.c"] = torch.randn(*size, 2)
        elif kind != "dense":
            leaves["n"] = TensorDict(c=torch.randn(*size, 2), batch_size=size)
        return TensorDict(leaves, batch_size=size)

    if kind == "lazy":
        return lazy_stack([dense(batch_size[1:]) for _ in range(batch_size[0])])
    td = dense(batch_size)
    return td.lock_() if kind == "locked" else td


def cases() -> list:
    return [pytest.param(op, args, size, kind, id=f"{kind}-{op_id}")
            for (op, args, size), op_id in zip(OPS, OP_IDS) for kind in KINDS
            if not (kind == "lazy" and not size)]


def new_value(op: str, args: tuple, batch_size: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """A new entry in the source's frame, and the same entry as ``op`` lays it out."""
    value = torch.randn(batch_size)
    return value, getattr(TensorDict(new=value, batch_size=batch_size), op)(*args)["new"]


@pytest.mark.parametrize("op, args, size, kind", cases())
def test_values_and_new_keys_are_written_back(op, args, size, kind):
    src = make(kind, size, dotted=op == "unflatten_keys")
    before = src.to_tensordict() if kind == "lazy" else src.clone()
    new, new_out = new_value(op, args, size)
    ptrs = {key: src.get(key).data_ptr() for key in before.keys(True, True)}
    with getattr(src, op)(*args) as out:
        assert out is not src
        for key in list(out.keys(True, True)):
            if kind == "locked":
                out.set_(key, out.get(key) + 1)
            else:
                out.set(key, out.get(key) + 1)
        if kind != "locked":
            out["new"] = new_out
    for key in before.keys(True, True):
        assert src.get(key).dtype == before.get(key).dtype, key
        assert torch.equal(src.get(key), before.get(key) + 1), key
    if kind == "locked":
        assert src.is_locked and "new" not in src.keys()
        assert ptrs == {key: src.get(key).data_ptr() for key in before.keys(True, True)}
    else:
        assert src["new"].shape == torch.Size(size)
        assert torch.equal(src["new"].to(new.dtype), new)
    if kind == "lazy":
        assert isinstance(src, LazyStackedTensorDict)
        assert all("new" in part.keys() for part in src.tensordicts)


@pytest.mark.parametrize("op, args, size", [case[:3] for case in OPS], ids=OP_IDS)
def test_nothing_is_written_when_the_block_raises(op, args, size):
    src = make("nested", size, dotted=op == "unflatten_keys")
    before = src.clone()
    _, new_out = new_value(op, args, size)
    with pytest.raises(ValueError, match="inside"):
        with getattr(src, op)(*args) as out:
            for key in list(out.keys(True, True)):
                out.set(key, out.get(key) + 1)
            out["new"] = new_out
            raise ValueError("inside the block")
    assert set(src.keys(True, True)) == set(before.keys(True, True))
    assert (src == before).all()


@pytest.mark.parametrize("op, args", [
    ("reshape", (6,)), ("select", ("a",)), ("exclude", ("b",)), ("clone", ()),
    ("float", ()), ("double", ()), ("expand", (4, 2, 3)),
])
@pytest.mark.parametrize("kind", ["nested", "lazy"])
def test_ops_without_the_form_write_nothing_back(op, args, kind):
    src = make(kind, [2, 3])
    before = src.to_tensordict()
    with getattr(src, op)(*args) as out:
        out.set("a", torch.zeros_like(out.get("a")))
        out["new"] = torch.zeros(out.batch_size)
    assert "new" not in src.keys()
    assert torch.equal(src["a"], before["a"])


def test_the_issue_example():
    td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3])
    with td.flatten(0, 1) as tf:
        tf["a"] = torch.ones(6, 4)
        tf["b"] = torch.ones(6)
    assert torch.equal(td["a"], torch.ones(2, 3, 4))
    assert torch.equal(td["b"], torch.ones(2, 3))


def test_to_restores_each_leaf_dtype_and_keeps_new_keys_dtype():
    td = TensorDict(a=torch.zeros(2, 3), i=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    with td.to(torch.float64) as out:
        out["a"] = out["a"] + 1.5
        out["new"] = torch.ones(2, dtype=torch.float64)
    assert td["a"].dtype == torch.float32 and torch.equal(td["a"], torch.full((2, 3), 1.5))
    assert td["i"].dtype == torch.int64
    assert td["new"].dtype == torch.float64


def test_deleted_and_renamed_keys_stay_in_the_source():
    td = TensorDict(a=torch.zeros(2, 3), b=torch.zeros(2, 3), batch_size=[2, 3])
    with td.flatten(0, 1) as out:
        del out["b"]
        out.rename_key_("a", "z")
    assert sorted(td.keys()) == ["a", "b", "z"]


def test_unflatten_keys_writes_nested_entries_back_flattened_as_upstream():
    td = TensorDict({"d.e": torch.zeros(2), "n": TensorDict(c=torch.zeros(2), batch_size=[2])},
                    [2])
    with td.unflatten_keys() as out:
        out["n", "c"] = torch.ones(2)
        out["d", "e"] = torch.ones(2)
    assert torch.equal(td["d.e"], torch.ones(2)) and torch.equal(td["n.c"], torch.ones(2))
    assert torch.equal(td["n", "c"], torch.zeros(2))


def test_a_second_with_on_the_result_writes_back_again():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    out = td.transpose(0, 1)
    with out:
        out["a"] = torch.ones(3, 2)
    assert torch.equal(td["a"], torch.ones(2, 3))
    with out:
        out["a"] = torch.full((3, 2), 5.0)
    assert torch.equal(td["a"], torch.full((2, 3), 5.0))


def test_nested_with_blocks_write_back_level_by_level():
    td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3, 4])
    with td.flatten(0, 1) as flat:
        with flat.permute(1, 0) as swapped:
            swapped["a"] = torch.arange(24.0).reshape(4, 6)
            swapped["new"] = torch.ones(4, 6)
        assert torch.equal(flat["a"], torch.arange(24.0).reshape(4, 6).T)
        assert not (td["a"] != 0).any() and "new" not in td.keys()
    assert torch.equal(td["a"], torch.arange(24.0).reshape(4, 6).T.reshape(2, 3, 4))
    assert td["new"].shape == torch.Size([2, 3, 4])


def test_a_result_of_a_result_writes_into_the_first_result_only():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    flat = td.flatten(0, 1)
    with flat.unsqueeze(0) as lifted:
        lifted["a"] = torch.full((1, 6), 9.0)
    assert torch.equal(flat["a"], torch.full((6,), 9.0))
    assert torch.equal(td["a"], torch.zeros(2, 3))


def test_lock_toggles_on_the_result_keep_their_own_with():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    flat = td.flatten(0, 1)
    with flat.lock_():  # leaving it unlocks flat again, writes nothing back
        pass
    assert not flat.is_locked
    with flat:
        flat["a"] = torch.ones(6)
    assert torch.equal(td["a"], torch.ones(2, 3))


def test_many_lock_toggles_outside_a_with_keep_the_write_back():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    flat = td.flatten(0, 1)
    for _ in range(10):  # 20 exits pushed: only the latest 8 are kept
        flat.lock_()
        flat.unlock_()
    for _ in range(8):
        with flat:
            pass
    assert "a" in td.keys() and not (td["a"] != 0).any()
    with flat:
        flat["a"] = torch.ones(6)
    assert torch.equal(td["a"], torch.ones(2, 3))


def test_the_result_keeps_no_strong_reference_to_its_source():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    flat = td.flatten(0, 1)
    del td
    gc.collect()
    with flat:  # the source is gone: nothing to write into, no error
        flat["a"] = torch.ones(6)


def test_squeeze_without_a_dim_cannot_be_undone():
    td = TensorDict(a=torch.zeros(1, 3), batch_size=[1, 3])
    with pytest.raises(RuntimeError, match="implicit"):
        with td.squeeze():
            pass


def test_transpose_of_a_lazy_stack_along_its_stack_dim():
    stack = lazy_stack([TensorDict(a=torch.zeros(3, 4), batch_size=[3]) for _ in range(2)], 1)
    with stack.transpose(0, 1) as out:
        out["a"] = torch.arange(24.0).reshape(2, 3, 4)
        out["new"] = torch.ones(2, 3)
    assert torch.equal(stack["a"], torch.arange(24.0).reshape(2, 3, 4).transpose(0, 1))
    assert stack["new"].shape == torch.Size([3, 2])


def test_memory_mapped_source_is_written_in_its_files(tmp_path):
    pytest.importorskip("tensordict.memmap")
    td = TensorDict(a=torch.zeros(2, 3, 4), batch_size=[2, 3]).memmap_(tmp_path)
    with td.flip([0]) as out:
        out.set_("a", torch.arange(24.0).reshape(2, 3, 4))
    expected = torch.arange(24.0).reshape(2, 3, 4).flip(0)
    assert torch.equal(TensorDict.load_memmap(tmp_path)["a"], expected)
    with td.to(torch.float64) as out:  # (upstream raises here; ours writes, in place)
        out.set_("a", torch.ones(2, 3, 4, dtype=torch.float64))
    reread = TensorDict.load_memmap(tmp_path)["a"]
    assert reread.dtype == torch.float32 and torch.equal(reread, torch.ones(2, 3, 4))
