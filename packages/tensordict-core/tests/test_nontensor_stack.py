"""NonTensorStack: a lazy stack of NonTensorData; indexing, shape ops, tolist, writes that
reach the parts, stack/cat with NonTensorData, and its place inside TensorDicts."""

import pickle

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    LinkedList,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    lazy_stack,
    set_capture_non_tensor_stack,
)


def grid():
    return NonTensorStack.from_list([["a", "b", "c"], ["d", "e", "f"]])


def nested_list(stack):
    return [list(row) if isinstance(row, list) else row for row in stack.tolist()]


def test_is_a_lazy_stack_of_non_tensor_data():
    stack = NonTensorStack.from_list(["a", "b", "a"])
    assert isinstance(stack, LazyStackedTensorDict) and stack._is_non_tensor
    assert [type(p) for p in stack.tensordicts] == [NonTensorData] * 3
    assert [p.data for p in stack.tensordicts] == ["a", "b", "a"]  # equal values kept apart
    assert stack.batch_size == torch.Size([3]) and stack.stack_dim == 0
    assert list(stack.keys()) == [] and stack.get("a") is None


def test_construction_forms():
    assert NonTensorStack("a", "a").tolist() == ["a", "a"]
    assert NonTensorStack(NonTensorData("a"), NonTensorData("b")).tolist() == ["a", "b"]
    two_d = grid()
    assert two_d.batch_size == torch.Size([2, 3])
    assert all(isinstance(p, NonTensorStack) for p in two_d.tensordicts)
    broadcast = NonTensorStack.from_list(["x", "y"], batch_size=[2, 3])
    assert broadcast.tolist() == [["x"] * 3, ["y"] * 3]
    assert NonTensorStack.from_list([["a"], ["b", "c"]]).batch_size == (2, -1)  # upstream
    with pytest.raises(ValueError, match="cannot fill"):
        NonTensorStack.from_list(["a", "b"], batch_size=[3])
    assert NonTensorStack.from_list([]).batch_size == torch.Size([0])


def test_tolist_and_data():
    stack = grid()
    listed = stack.tolist()
    assert type(listed) is list and type(listed[0]) is list  # td[key] reads LinkedLists
    read = TensorDict(s=stack, batch_size=[2, 3])["s"]
    assert type(read) is LinkedList and type(read[0]) is LinkedList
    assert listed == [["a", "b", "c"], ["d", "e", "f"]]
    assert NonTensorStack("x", "x").data == "x"
    with pytest.raises(AttributeError, match="non-unique"):
        stack.data
    transposed = lazy_stack([NonTensorStack("a", "b"), NonTensorStack("c", "d")], 1)
    assert transposed.tolist() == [["a", "c"], ["b", "d"]]


# element positions, to compare every op with the same op on a tensor of the batch shape
def check_like_positions(op):
    stack = grid()
    letters = [c for row in stack.tolist() for c in row]
    positions = op(torch.arange(6).reshape(2, 3))
    result = op(stack)
    if not positions.ndim:
        assert result.data == letters[int(positions)]
        return
    assert result.batch_size == positions.shape
    expected = NonTensorStack.from_list(
        [letters[p] for p in positions.reshape(-1).tolist()]).tolist()
    flat = result.reshape(-1) if result.ndim > 1 else result
    assert flat.tolist() == expected


@pytest.mark.parametrize("op", [
    lambda t: t[1], lambda t: t[1, 2], lambda t: t[:, 1], lambda t: t[:, 1:],
    lambda t: t[None], lambda t: t[torch.tensor([1, 0])], lambda t: t[:, torch.tensor([2, 0])],
    lambda t: t[torch.tensor([[True, False, True], [False, True, False]])],
    lambda t: t.transpose(0, 1), lambda t: t.permute(1, 0), lambda t: t.unsqueeze(1),
    lambda t: t.reshape(-1), lambda t: t.reshape(3, 2), lambda t: t.flip(1),
    lambda t: t.unbind(1)[2], lambda t: t.expand(2, 2, 3), lambda t: t.roll(1, 1),
], ids=["int", "int2", "col", "cols", "none", "tensor", "tensor_inner", "mask", "transpose",
        "permute", "unsqueeze", "reshape", "reshape2", "flip", "unbind", "expand", "roll"])
def test_index_and_shape_ops_follow_positions(op):
    check_like_positions(op)


def test_indexing_returns_the_parts():
    stack = NonTensorStack.from_list(["a", "b", "c"])
    assert stack[1] is stack.tensordicts[1]
    assert stack[1:].tensordicts[0] is stack.tensordicts[1]


def test_writes_reach_the_parts_and_their_tensordicts():
    a = TensorDict(s="a", x=torch.zeros(()))
    b = TensorDict(s="b", x=torch.zeros(()))
    strings = lazy_stack([a, b]).get("s")
    assert strings.tensordicts[0] is a.get("s")
    strings[0] = "z"
    assert a["s"] == "z"
    strings[:] = ["p", "q"]
    assert (a["s"], b["s"]) == ("p", "q")
    stack = grid()
    stack[0, 1] = "B"
    stack[1] = "row"
    stack[:, 2] = NonTensorStack("C", "F")
    assert stack.tolist() == [["a", "B", "C"], ["row", "row", "F"]]


def test_inside_a_tensordict():
    td = TensorDict(x=torch.arange(3), tags=["a", "b", "c"], batch_size=[3])
    assert isinstance(td.get("tags"), NonTensorStack)
    assert td["tags"] == ["a", "b", "c"] and td[1]["tags"] == "b"
    assert td[1:]["tags"] == ["b", "c"] and td[torch.tensor([2, 0])]["tags"] == ["c", "a"]
    assert td.unsqueeze(0)["tags"] == [["a", "b", "c"]]
    assert td.clone()["tags"] == ["a", "b", "c"]
    assert td.reshape(3, 1)["tags"] == [["a"], ["b"], ["c"]]
    assert td.to("cpu").get("tags").device == torch.device("cpu")
    assert (td == td.clone())["tags"].all()


def test_stack_and_cat_with_non_tensor_data():
    d = NonTensorData("a", batch_size=[2])
    stacked = torch.stack([d, NonTensorData("b", batch_size=[2])])
    assert isinstance(stacked, NonTensorStack) and stacked.tolist() == [["a", "a"], ["b", "b"]]
    same = torch.stack([d, d])
    assert isinstance(same, NonTensorStack) and same.tolist() == [["a", "a"], ["a", "a"]]
    with set_capture_non_tensor_stack(True):
        captured = torch.stack([d, d], 1)
    assert isinstance(captured, NonTensorData) and captured.batch_size == torch.Size([2, 2])
    s = NonTensorStack.from_list(["a", "b", "c"])
    assert torch.cat([s, s]).tolist() == ["a", "b", "c"] * 2
    assert torch.cat([s, NonTensorData("z", batch_size=[2])]).tolist() == ["a", "b", "c", "z", "z"]
    assert torch.cat([grid(), grid()], 1).tolist() == [list("abcabc"), list("defdef")]
    assert torch.stack([s, s], 1).tolist() == [["a", "a"], ["b", "b"], ["c", "c"]]
    dense = torch.stack([TensorDict(s="x"), TensorDict(s="y")])
    assert dense["s"] == ["x", "y"] and isinstance(dense.get("s"), NonTensorStack)


def test_copies_comparisons_and_conversions():
    stack = NonTensorStack.from_list([["a"], ["b"]])
    clone = stack.clone()
    assert clone.tolist() == stack.tolist() and clone.tensordicts[0] is not stack.tensordicts[0]
    objects = NonTensorStack.from_list([[1], [2]])
    assert objects.clone(recurse=False).tensordicts[0].tensordicts[0].data == 1
    assert (stack == stack.clone()).all()
    assert (stack == "a").tolist() == [[True], [False]]
    assert (stack != NonTensorData("b", batch_size=[2, 1])).tolist() == [[True], [False]]
    moved = stack.to("cpu")
    assert moved.device == torch.device("cpu") and moved.tolist() == stack.tolist()
    data = NonTensorData("a", batch_size=[2, 2])
    as_stack = data.maybe_to_stack()
    assert isinstance(as_stack, NonTensorStack) and as_stack.tolist() == [["a", "a"]] * 2
    assert NonTensorStack.from_nontensordata(data).batch_size == torch.Size([2, 2])
    mixed = NonTensorStack(data[0], NonTensorStack("b", "c"))
    assert all(isinstance(p, NonTensorStack) for p in mixed.maybe_to_stack().tensordicts)
    assert NonTensorData("z").maybe_to_stack().data == "z"


def test_repr_and_pickle():
    stack = NonTensorStack.from_list(["a", "b"])
    assert repr(stack) == ("NonTensorStack(\n    ['a', 'b'],\n    batch_size=torch.Size([2]),"
                           "\n    device=None)")
    assert repr(TensorDict(s=stack, batch_size=[2])) == (
        "TensorDict(batch_size=[2], fields={s: NonTensorStack})")
    back = pickle.loads(pickle.dumps(stack))
    assert type(back) is NonTensorStack and back.tolist() == ["a", "b"]


def test_errors():
    stack = grid()
    with pytest.raises(TypeError, match="no entries"):
        stack["k"] = 1
    with pytest.raises(KeyError, match="no entries"):
        stack["k"]
    with pytest.raises(IndexError):
        stack[5]
    with pytest.raises(RuntimeError, match="different values"):
        TensorDict(tags=["a", "b"], batch_size=[2]).sum(0)


def test_lock_device_and_in_place_update_inside_a_tensordict():
    td = TensorDict(tags=["a", "b"], batch_size=[2], device="cpu")
    stack = td.get("tags")
    td.lock_()
    assert stack.is_locked
    td.set_("tags", NonTensorStack("x", "y"))  # in place: the same stack, new values
    assert td.get("tags") is stack and td["tags"] == ["x", "y"]
    td.unlock_()
    td.clear_device_()
    assert stack.device is None and stack.tensordicts[0].device is None


def test_rebatch_with_the_parent_batch_size():
    td = TensorDict(tags=[["a", "b", "c"], ["d", "e", "f"]], batch_size=[2, 3])
    td.batch_size = [2]
    assert td.get("tags").batch_size == torch.Size([2, 3]) and td[1]["tags"] == ["d", "e", "f"]
    flat = TensorDict(tags=["a", "b"], batch_size=[2])
    flat.batch_size = [2, 2]
    assert flat["tags"] == [["a", "a"], ["b", "b"]]
    with pytest.raises(RuntimeError, match="cannot give a NonTensorStack"):
        flat.get("tags")._rebatch(torch.Size([3]))


def test_fast_apply_with_others_hands_differing_objects_to_fn():
    # TorchRL's batched envs: the non-tensor leaves go to fn when is_leaf says so, even
    # with a batch size given (the same one), and x[mask] of per-element objects works
    from tensordict._keys import is_leaf_nontensor

    def make() -> TensorDict:
        return TensorDict(obs=torch.arange(3.0), s=NonTensorStack("a", "b", "c"),
                          batch_size=[3])

    td, seen = make(), []
    out = td._fast_apply(lambda x, y: seen.append(type(x).__name__) or x.clone(), make(),
                         batch_size=td.batch_size, is_leaf=is_leaf_nontensor, default=None)
    assert seen == ["Tensor", "NonTensorStack"] and out["s"] == ["a", "b", "c"]
    mask = torch.tensor([True, False, True])
    picked = td._fast_apply(lambda x, y: x[mask], make(), default=None,
                            batch_size=torch.Size([2]))
    assert picked["s"] == ["a", "c"] and torch.equal(picked["obs"], torch.tensor([0.0, 2.0]))
