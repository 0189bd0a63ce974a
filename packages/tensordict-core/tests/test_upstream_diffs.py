"""Non-tensor data and ragged lazy stacks, as upstream tensordict 0.15.3 behaves (observed).

Three groups: the shape ops of ``NonTensorData`` (alone and as a TensorDict leaf), the
``NonTensorStack`` built from parts of different batch sizes, and the shape ops of ragged
lazy stacks (batch sizes such as ``[2, -1]``).
"""

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    LinkedList,
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorDict,
)


def ntd(*batch_size):
    return NonTensorData("v", batch_size=list(batch_size))


def kind_and_size(entry):
    return type(entry).__name__, list(entry.batch_size)


# -- 1. NonTensorData shape ops ----------------------------------------------------------------
@pytest.mark.parametrize("size", [[], [1], [2], [2, 3]])
def test_broadcast_to_sets_the_batch_size(size):
    for shape in ([2, 3], [4, 2, 3], [5], []):
        out = torch.broadcast_to(ntd(*size), shape)
        assert kind_and_size(out) == ("NonTensorData", shape) and out.data == "v"
    assert kind_and_size(ntd(*size).broadcast_to((4,))) == ("NonTensorData", [4])
    meta = torch.broadcast_to(MetaData("v", batch_size=size), (4, *size))
    assert kind_and_size(meta) == ("MetaData", [4, *size])


def test_unsqueeze_gives_a_stack():
    assert kind_and_size(ntd().unsqueeze(0)) == ("NonTensorStack", [1])
    assert kind_and_size(ntd(2).unsqueeze(0)) == ("NonTensorStack", [1, 2])
    assert kind_and_size(ntd(2).unsqueeze(-1)) == ("NonTensorStack", [2, 1])
    out = ntd(2, 3).unsqueeze(1)
    assert kind_and_size(out) == ("NonTensorStack", [2, 1, 3])
    assert out.tolist() == [[["v"] * 3], [["v"] * 3]]
    with pytest.raises(RuntimeError):
        ntd(2).unsqueeze(5)
    meta = MetaData("v", batch_size=[2]).unsqueeze(0)
    assert kind_and_size(meta) == ("MetaData", [1, 2])


def test_squeeze_keeps_one_value():
    assert kind_and_size(ntd().squeeze()) == ("NonTensorData", [])
    assert kind_and_size(ntd(1).squeeze(0)) == ("NonTensorData", [])
    assert kind_and_size(ntd(1).squeeze(-1)) == ("NonTensorData", [])
    assert kind_and_size(ntd(2).squeeze(0)) == ("NonTensorData", [2])
    assert kind_and_size(ntd(2, 3).squeeze()) == ("NonTensorData", [2, 3])
    with pytest.raises(IndexError):
        ntd().squeeze(0)
    with pytest.raises(IndexError):
        ntd(2).squeeze(4)


@pytest.mark.parametrize("size", [[], [1], [2], [2, 3]])
def test_expand_new_leading_dims_gives_a_stack(size):
    for lead in (1, 3):
        out = ntd(*size).expand(lead, *size)
        assert kind_and_size(out) == ("NonTensorStack", [lead, *size])
        assert out.tolist() == [ntd(*size).tolist()] * lead
    if size != [2]:  # [2] -> [4, 2, 3, 2], see the lenient cases below
        first = ntd(*size).expand(4, 2, 3)[0]
        assert kind_and_size(first) == ("NonTensorData" if size == [2, 3] else
                                        "NonTensorStack", [2, 3])
    meta = MetaData("v", batch_size=size).expand(3, *size)
    assert kind_and_size(meta) == ("MetaData", [3, *size])


def test_expand_keeps_one_value_for_grown_dims():
    assert kind_and_size(ntd(1).expand(3)) == ("NonTensorData", [3])
    assert kind_and_size(ntd(1).expand(-1)) == ("NonTensorData", [1])
    assert kind_and_size(ntd(2).expand(2)) == ("NonTensorData", [2])
    assert kind_and_size(ntd(2).expand(4, -1)) == ("NonTensorStack", [4, 2])
    assert kind_and_size(ntd(1).expand(2, 3)) == ("NonTensorStack", [2, 3])
    assert kind_and_size(ntd(2, 3).expand()) == ("NonTensorData", [2, 3])


@pytest.mark.parametrize("size, shape, expected", [
    ([2], (3,), ("NonTensorStack", [3, 2])),
    ([2], (1,), ("NonTensorStack", [1, 2])),
    ([2], (5, 1), ("NonTensorStack", [5, 1, 2])),
    ([2], (2, 3), ("NonTensorStack", [2, 3, 2])),
    ([2], (3, 3), ("NonTensorStack", [3, 3, 2])),
    ([2], ((4, 3),), ("NonTensorStack", [4, 3, 2])),
    ([2, 3], (3,), ("NonTensorData", [2, 3])),
    ([2, 3], (2,), ("NonTensorStack", [2, 2, 3])),
    ([2, 3], (2, 2), ("NonTensorStack", [2, 2, 3])),
    ([2, 3], (3, 3), ("NonTensorStack", [3, 2, 3])),
    ([2, 3], (torch.Size([4, 3]),), ("NonTensorStack", [4, 2, 3])),
    ([2, 3], (4, 3, 2), ("NonTensorStack", [4, 3, 2, 2, 3])),
])
def test_expand_to_a_shape_torch_rejects_is_lenient(size, shape, expected):
    with pytest.warns(FutureWarning, match="torch.Tensor.expand rejects"):
        assert kind_and_size(ntd(*size).expand(*shape)) == expected


def test_expand_errors():
    with pytest.raises(RuntimeError, match="expanded size"):
        ntd(2, 3).expand(4, -1)
    with pytest.warns(FutureWarning), pytest.raises(RuntimeError):
        ntd(2, 3).expand(-1)


def test_reshape_view_flatten_unflatten_keep_one_value():
    assert kind_and_size(ntd().reshape(-1)) == ("NonTensorData", [1])
    assert kind_and_size(ntd().view(-1)) == ("NonTensorData", [1])
    assert kind_and_size(ntd().flatten()) == ("NonTensorData", [1])
    assert kind_and_size(ntd(2, 3).reshape(-1)) == ("NonTensorData", [6])
    assert kind_and_size(ntd(2, 3).reshape((-1,))) == ("NonTensorData", [6])
    assert kind_and_size(ntd(2, 3).reshape(3, 2)) == ("NonTensorData", [3, 2])
    assert kind_and_size(ntd(2, 3).view(3, 2)) == ("NonTensorData", [3, 2])
    assert kind_and_size(ntd(2, 3).view(torch.float)) == ("NonTensorData", [2, 3])
    assert kind_and_size(ntd(2, 3).flatten()) == ("NonTensorData", [6])
    assert kind_and_size(ntd(2, 3).flatten(0, -1)) == ("NonTensorData", [6])
    assert kind_and_size(ntd(2).unflatten(0, (1, -1))) == ("NonTensorData", [1, 2])
    assert kind_and_size(ntd(2).unflatten(0, (2, -1))) == ("NonTensorData", [2, 1])
    assert kind_and_size(ntd(2, 3).unflatten(0, (1, -1))) == ("NonTensorData", [1, 2, 3])
    meta = MetaData("v", batch_size=[2, 3]).reshape(-1)
    assert kind_and_size(meta) == ("MetaData", [6])
    for op in (lambda: ntd(2).reshape(3, 2), lambda: ntd(2).view(3, 2),
               lambda: ntd(2).view(-1, -1), lambda: ntd(1).unflatten(0, (2, -1)),
               lambda: ntd(2).unflatten(0, (3, -1))):
        with pytest.raises(RuntimeError):
            op()
    with pytest.raises(IndexError):
        ntd().unflatten(0, (1, -1))
    with pytest.raises(IndexError):
        ntd(2).unflatten(5, (3, -1))
    with pytest.raises(ValueError):
        ntd(2, 3).flatten(1, 0)


def test_permute_and_transpose_keep_one_value():
    named = NonTensorData("v", batch_size=[2, 3], names=["a", "b"])
    assert kind_and_size(named.permute(1, 0)) == ("NonTensorData", [3, 2])
    assert named.permute(1, 0).names == ["b", "a"]
    assert kind_and_size(ntd(2, 3).permute([1, 0])) == ("NonTensorData", [3, 2])
    assert kind_and_size(ntd(2, 3).transpose(0, -1)) == ("NonTensorData", [3, 2])
    assert kind_and_size(ntd(1).transpose(0, -1)) == ("NonTensorData", [1])
    assert kind_and_size(ntd().permute()) == ("NonTensorData", [])
    for op in (lambda: ntd(2).permute(1, 0), lambda: ntd(2, 3).permute(0, 0),
               lambda: ntd().transpose(0, -1), lambda: ntd(2).transpose(0, 5)):
        with pytest.raises(ValueError):
            op()


def test_tolist_gives_plain_lists_and_get_linked_lists():
    stack = NonTensorStack.from_list([["x", "y"], ["z", "w"]])
    assert type(stack.tolist()) is list and type(stack.tolist()[0]) is list
    td = TensorDict(a=torch.zeros(2, 2), batch_size=[2, 2])
    td["tags"] = [["x", "y"], ["z", "w"]]
    assert type(td["tags"]) is LinkedList and type(td["tags"][0]) is LinkedList
    assert repr(td[0]["tags"]) == "LinkedList(['x', 'y'])"


def leaf_td(size, kind):
    td = TensorDict(a=torch.zeros(size), batch_size=size)
    if kind == "data":
        td.set("s", NonTensorData("v", batch_size=size))
    else:
        td.set("s", NonTensorStack.from_list(torch.arange(torch.Size(size).numel())
                                             .reshape(size).tolist()))
    return td


@pytest.mark.parametrize("size", [[1], [2], [2, 3]])
def test_tensordict_shape_ops_on_non_tensor_leaves(size):
    data = leaf_td(size, "data")
    assert kind_and_size(data.expand(3, *size).get("s")) == ("NonTensorStack", [3, *size])
    assert kind_and_size(data.reshape(-1).get("s")) == ("NonTensorData", [data.numel()])
    assert kind_and_size(data.view(-1).get("s")) == ("NonTensorData", [data.numel()])
    assert kind_and_size(data.permute(*reversed(range(len(size)))).get("s")) == (
        "NonTensorData", size[::-1])
    assert kind_and_size(data.expand(3, *size)[0].get("s")) == ("NonTensorData", size)
    stack = leaf_td(size, "stack")
    values = stack.get("s").tolist()
    grown = stack.expand(3, *size).get("s")
    assert kind_and_size(grown) == ("NonTensorStack", [3, *size])
    assert grown.tolist() == [values] * 3
    assert stack.unsqueeze(-1).get("s").tolist() == torch.tensor(values).unsqueeze(-1).tolist()
    assert stack.reshape(-1).get("s").tolist() == torch.tensor(values).reshape(-1).tolist()
    for op in (lambda td: td.reshape(3, 2), lambda td: td.view(3, 2)) if size != [2, 3] \
            else ():
        with pytest.raises(RuntimeError):
            op(data)


def test_tensordict_expand_on_non_tensor_leaves():
    td = leaf_td([2, 3], "data")
    assert kind_and_size(td.expand(4, 2, 3).get("s")) == ("NonTensorStack", [4, 2, 3])
    assert td.expand(4, 2, 3)["s"] == [[["v"] * 3] * 2] * 4
    assert kind_and_size(leaf_td([1], "data").expand(3).get("s")) == ("NonTensorData", [3])
    with pytest.raises(RuntimeError):
        leaf_td([2], "data").expand(4, 2, 3)
    stack = leaf_td([2, 3], "stack")
    assert stack.permute(1, 0).get("s").tolist() == [[0, 3], [1, 4], [2, 5]]
    assert stack.reshape(3, 2).get("s").tolist() == [[0, 1], [2, 3], [4, 5]]


# -- 2. NonTensorStack of parts of different batch sizes ----------------------------------------
def ragged_parts():
    return [NonTensorData("a", batch_size=[2]), NonTensorData("b", batch_size=[3])]


def test_ragged_non_tensor_stack():
    stack = NonTensorStack(*ragged_parts())
    assert stack.batch_size == torch.Size([2, -1]) and stack.shape == torch.Size([2, -1])
    assert stack.tolist() == [["a", "a"], ["b", "b", "b"]]
    assert stack.numel() == 1 and stack.batch_dims == 2 and len(stack) == 2
    assert repr(stack) == ("NonTensorStack(\n    [['a', 'a'], ['b', 'b', 'b']],\n"
                           "    batch_size=torch.Size([2, -1]),\n    device=None)")
    with pytest.raises(AttributeError, match="non-unique"):
        stack.data
    same = NonTensorStack(NonTensorData("a", batch_size=[2]), NonTensorData("a", batch_size=[3]))
    assert same.data == "a"
    sized = NonTensorStack(*ragged_parts(), batch_size=[2, -1])
    assert sized.batch_size == torch.Size([2, -1])
    with pytest.raises(RuntimeError, match="batch sizes in tensordicts differs"):
        NonTensorStack(NonTensorData("a", batch_size=[2]), NonTensorData("b"))
    two_d = NonTensorStack(NonTensorData("a", batch_size=[2, 3]),
                           NonTensorData("b", batch_size=[2, 4]))
    assert two_d.batch_size == torch.Size([2, 2, -1])
    assert two_d.tolist() == [[["a"] * 3] * 2, [["b"] * 4] * 2]


def test_ragged_non_tensor_stack_indexing():
    stack = NonTensorStack(*ragged_parts())
    assert kind_and_size(stack[0]) == ("NonTensorData", [2]) and stack[0].data == "a"
    assert kind_and_size(stack[-1]) == ("NonTensorData", [3])
    assert kind_and_size(stack[1, 2]) == ("NonTensorData", []) and stack[1, 2].data == "b"
    assert kind_and_size(stack[:, 0]) == ("NonTensorStack", [2])
    assert stack[:, 0].tolist() == ["a", "b"]
    assert kind_and_size(stack[[1, 0]]) == ("NonTensorStack", [2, -1])
    assert stack[[1, 0]].tolist() == [["b", "b", "b"], ["a", "a"]]
    assert kind_and_size(stack[1:]) == ("NonTensorStack", [1, 3])
    assert stack[:, 1:].batch_size == torch.Size([2, -1])
    assert stack[:, 1:].tolist() == [["a"], ["b", "b"]]
    assert stack[:, :2].batch_size == torch.Size([2, 2])
    with pytest.raises(IndexError):
        stack[:, 2]
    with pytest.raises(IndexError):
        stack[0, 2]
    nested = NonTensorStack(NonTensorStack("a", "b"), NonTensorStack("c", "d", "e"))
    assert nested.tolist() == [["a", "b"], ["c", "d", "e"]]
    assert nested[1].tolist() == ["c", "d", "e"] and nested[1, 2].data == "e"
    assert nested[:, 0].tolist() == ["a", "c"]
    along_1 = NonTensorStack(*ragged_parts(), stack_dim=1)
    assert along_1.batch_size == torch.Size([-1, 2])
    assert kind_and_size(along_1[:, 1]) == ("NonTensorData", [3])
    assert kind_and_size(along_1[0]) == ("NonTensorStack", [2])
    assert along_1[0].tolist() == ["a", "b"]
    with pytest.raises(ValueError):
        along_1.tolist()


def test_stacking_non_tensor_data_of_different_shapes():
    for stack in (LazyStackedTensorDict.lazy_stack(ragged_parts()), torch.stack(ragged_parts()),
                  LazyStackedTensorDict.maybe_dense_stack(ragged_parts())):
        assert kind_and_size(stack) == ("NonTensorStack", [2, -1])
        assert stack.tolist() == [["a", "a"], ["b", "b", "b"]]
    for stack in (LazyStackedTensorDict.lazy_stack(ragged_parts(), 1),
                  torch.stack(ragged_parts(), 1)):
        assert kind_and_size(stack) == ("NonTensorStack", [-1, 2])
    listed = NonTensorStack.from_list([["a", "b"], ["c"]])
    assert kind_and_size(listed) == ("NonTensorStack", [2, -1])
    assert listed.tolist() == [["a", "b"], ["c"]]
    assert listed[1].tolist() == ["c"]
    assert NonTensorStack.from_list([[["a"], ["b"]], [["c", "d"]]]).batch_size == \
        torch.Size([2, -1, -1])
    assert NonTensorStack.from_list([["a", "b"], []]).batch_size == torch.Size([2, -1])


def test_ragged_non_tensor_stack_shape_ops_and_comparisons():
    stack = NonTensorStack(*ragged_parts())
    for flat in (stack.reshape(-1), stack.flatten()):
        assert kind_and_size(flat) == ("NonTensorStack", [5])
        assert flat.tolist() == ["a", "a", "b", "b", "b"]
        assert [kind_and_size(part) for part in flat.tensordicts] == \
            [("NonTensorData", [])] * 5
    assert stack.unsqueeze(0).batch_size == torch.Size([1, 2, -1])
    assert stack.unsqueeze(0).tolist() == [[["a", "a"], ["b", "b", "b"]]]
    assert stack.unsqueeze(-1).tolist() == [[["a"], ["a"]], [["b"], ["b"], ["b"]]]
    assert stack.squeeze().batch_size == torch.Size([2, -1])
    assert [kind_and_size(part) for part in stack.unbind(0)] == [
        ("NonTensorData", [2]), ("NonTensorData", [3])]
    assert stack.clone().tolist() == [["a", "a"], ["b", "b", "b"]]
    with pytest.raises(ValueError):
        stack.unbind(1)
    with pytest.raises(RuntimeError):
        stack.reshape(5)
    with pytest.raises(RuntimeError, match="Cannot call `view`"):
        stack.view(-1)
    assert (stack == "a") is False and (stack != "a") is True
    same = NonTensorStack(NonTensorData("a", batch_size=[2]), NonTensorData("a", batch_size=[3]))
    assert (same == "a") is False
    with pytest.raises(RuntimeError):
        stack == NonTensorStack(*ragged_parts())  # noqa: B015
    td = TensorDict(s=stack, batch_size=[2])
    assert td.batch_size == torch.Size([2])
    assert type(td["s"]) is LinkedList and td["s"] == [["a", "a"], ["b", "b", "b"]]


# -- 3. ragged lazy stacks ------------------------------------------------------------------------
def ragged(stack_dim=0, extra=()):
    parts = [TensorDict(x=torch.full((n, *extra), float(i)), batch_size=[n, *extra])
             for i, n in enumerate((3, 4))]
    return LazyStackedTensorDict.lazy_stack(parts, stack_dim)


def test_ragged_sizes():
    for stack, size in ((ragged(), [2, -1]), (ragged(1), [-1, 2]), (ragged(0, (2,)), [2, -1, 2])):
        assert list(stack.batch_size) == size and list(stack.shape) == size
        assert stack.batch_dims == len(size) and stack.ndim == len(size)
        assert stack.numel() == 1
    assert len(ragged()) == 2
    empty = LazyStackedTensorDict.lazy_stack([TensorDict(batch_size=[0]),
                                              TensorDict(batch_size=[2])])
    assert empty.numel() == 1


def test_ragged_reshape_and_flatten():
    stack = ragged()
    assert stack.reshape(2, -1) is stack and stack.reshape(stack.batch_size) is stack
    for flat in (stack.reshape(-1), stack.flatten(), stack.flatten(0, 1)):
        assert type(flat) is LazyStackedTensorDict and flat.batch_size == torch.Size([7])
        assert flat.stack_dim == 0 and len(flat.tensordicts) == 7
        assert flat["x"].tolist() == [0.0] * 3 + [1.0] * 4
    assert stack.reshape(1, 2, -1).batch_size == torch.Size([1, 2, -1])
    assert stack.flatten(0, 0) is stack and stack.flatten(1, 1) is stack
    wide = ragged(0, (2,))
    assert wide.reshape(-1).batch_size == torch.Size([14])
    assert wide.flatten(0, 1).batch_size == torch.Size([7, 2])
    assert wide.flatten(0, 1)["x"].shape == torch.Size([7, 2])
    assert [part.batch_size for part in wide.flatten(0, 1).tensordicts] == [torch.Size([2])] * 7
    assert wide.flatten(2, 2) is wide
    for op in (lambda: stack.reshape(7), lambda: stack.reshape(1, 7),
               lambda: stack.reshape(2, 4), lambda: wide.reshape(14),
               lambda: wide.reshape(7, 2), lambda: stack.reshape(-1, -1)):
        with pytest.raises(RuntimeError):
            op()
    for op in (lambda: ragged(1).reshape(-1), lambda: ragged(1).flatten(),
               lambda: wide.flatten(1, 2), lambda: wide.reshape(2, -1)):
        with pytest.raises(ValueError):
            op()
    with pytest.raises(IndexError):
        stack.flatten(1, 2)


def test_ragged_view():
    stack = ragged()
    assert stack.view(2, -1) is stack and stack.view(stack.batch_size) is stack
    for shape in ((-1,), (2, 3), (2, 4)):
        with pytest.raises(RuntimeError, match="Cannot call `view`"):
            stack.view(*shape)
    with pytest.raises(RuntimeError, match="only one dimension can be inferred"):
        stack.view(-1, -1)
    assert ragged(1).view(-1, 2).batch_size == torch.Size([-1, 2])
    with pytest.raises(RuntimeError):
        ragged(1).view(2, -1)


def test_ragged_unflatten():
    stack = ragged()
    assert stack.unflatten(0, (1, 2)).batch_size == torch.Size([1, 2, -1])
    assert stack.unflatten(0, (2, 1)).batch_size == torch.Size([2, 1, -1])
    assert stack.unflatten(1, (1, -1)).batch_size == torch.Size([2, 1, -1])
    along_1 = ragged(1)
    out = along_1.unflatten(-1, (2, 1))
    assert out.batch_size == torch.Size([-1, 2, 1]) and out.stack_dim == 1
    assert [part.batch_size for part in out.tensordicts] == [torch.Size([3, 1]),
                                                             torch.Size([4, 1])]
    assert along_1.unflatten(-1, (1, 2)).batch_size == torch.Size([-1, 1, 2])
    wide = ragged(0, (2,))
    assert wide.unflatten(0, (1, 2)).batch_size == torch.Size([1, 2, -1, 2])
    assert wide.unflatten(1, (1, -1)).batch_size == torch.Size([2, 1, -1, 2])
    assert wide.unflatten(-1, (2, 1)).batch_size == torch.Size([2, -1, 2, 1])
    for op in (lambda: stack.unflatten(-1, (2, 1)), lambda: stack.unflatten(1, (2, -1)),
               lambda: stack.unflatten(0, (1, -1)), lambda: stack.unflatten(0, (3, -1)),
               lambda: stack.unflatten(1, (3, 1)), lambda: along_1.unflatten(0, (1, 2)),
               lambda: along_1.unflatten(-1, (1, -1))):
        with pytest.raises(RuntimeError):
            op()
    for op in (lambda: stack.unflatten(1, (-1, 1)), lambda: along_1.unflatten(0, (1, -1))):
        with pytest.raises(ValueError):
            op()
    with pytest.raises(IndexError):
        stack.unflatten(5, (3, 1))


def test_ragged_reductions():
    stack = ragged()
    assert stack.all() is False and stack.any() is True
    assert ragged(0, (2,)).all() is False
    assert stack.apply(lambda x: x + 1).all() is True
    assert stack.apply(lambda x: x * 0).any() is False
    for dim in (0, 1):
        with pytest.raises(RuntimeError, match="Failed to stack"):
            stack.all(dim)


def test_non_tensor_truth_and_to_dict():
    assert ntd(2).all() is True and ntd(2).any() is False
    assert NonTensorData(0).all() is True and NonTensorData(None).any() is False
    assert kind_and_size(ntd(2, 3).all(0)) == ("NonTensorData", [3])
    assert kind_and_size(ntd(2, 3).any(1)) == ("NonTensorData", [2])
    assert NonTensorStack("a", "b").all() is True and NonTensorStack("a", "b").any() is False
    assert NonTensorStack(0, 0).all() is True
    reduced = NonTensorStack("a", "b").all(0)
    assert type(reduced) is TensorDict and reduced.batch_size == torch.Size([])
    assert NonTensorStack.from_list([["a", "b"], ["c", "d"]]).all(1).batch_size == \
        torch.Size([2])
    stack = NonTensorStack(*ragged_parts())
    assert stack.all() is True and stack.any() is False
    assert stack.all(0).batch_size == torch.Size([-1])
    assert TensorDict(s=stack, a=torch.ones(2), batch_size=[2]).all() is True
    assert NonTensorStack("a", "b").to_dict() == ["a", "b"]
    assert NonTensorStack.from_list([["a", "b"], ["c", "d"]]).to_dict() == [["a", "b"],
                                                                           ["c", "d"]]
    assert ntd(2).to_dict() == "v"


def test_ragged_non_tensor_stack_copies_and_stacks():
    stack = NonTensorStack(*ragged_parts())
    assert stack.to("cpu").tolist() == [["a", "a"], ["b", "b", "b"]]
    assert [type(part).__name__ for part in stack.clone().tensordicts] == ["NonTensorData"] * 2
    assert stack.maybe_to_stack().batch_size == torch.Size([2, -1])
    assert stack.expand(3, 2, -1).batch_size == torch.Size([3, 2, -1])
    assert stack.names == [None, None] and stack.get("x", None) is None
    assert stack.update_(NonTensorStack(*ragged_parts())).tolist() == [["a", "a"],
                                                                      ["b", "b", "b"]]
    assert torch.cat([stack, stack], 0).batch_size == torch.Size([4, -1])
    assert torch.stack([stack, stack], 0).batch_size == torch.Size([2, 2, -1])
    lazy = LazyStackedTensorDict.lazy_stack([
        TensorDict(s=NonTensorData("a", batch_size=[2]), batch_size=[2]),
        TensorDict(s=NonTensorData("b", batch_size=[3]), batch_size=[3])])
    assert kind_and_size(lazy.get("s")) == ("NonTensorStack", [2, -1])
    assert type(lazy["s"]) is LinkedList and lazy["s"] == [["a", "a"], ["b", "b", "b"]]
    assert lazy.reshape(-1)["s"] == ["a", "a", "b", "b", "b"]


# -- flattening regular lazy stacks: one element of a part per result element -------------------
def counting(stack_dim=0, size=(3,)):
    numel = torch.Size(size).numel()
    return LazyStackedTensorDict.lazy_stack([
        TensorDict(a=torch.arange(10.0 * i, 10.0 * i + numel).reshape(size), batch_size=size)
        for i in range(4)], stack_dim)


def test_flattened_lazy_stacks_index_their_parts():
    flat = counting().reshape(-1)
    assert type(flat) is LazyStackedTensorDict and len(flat.tensordicts) == 12
    assert flat["a"].tolist() == [0.0, 1.0, 2.0, 10.0, 11.0, 12.0, 20.0, 21.0, 22.0, 30.0,
                                  31.0, 32.0]
    assert len(counting(0, (2, 3)).reshape(-1).tensordicts) == 24
    assert counting(0, (2, 3)).reshape(-1)["a"].tolist() == [
        10.0 * i + j for i in range(4) for j in range(6)]
    assert counting(1).reshape(-1)["a"].tolist() == [
        10.0 * i + j for j in range(3) for i in range(4)]
    assert counting(1, (2, 3)).reshape(-1)["a"].tolist() == [
        10.0 * i + 3 * r + j for r in range(2) for i in range(4) for j in range(3)]
    scalars = LazyStackedTensorDict.lazy_stack([TensorDict(a=torch.tensor(float(i)))
                                                for i in range(4)])
    assert scalars.flip(0)["a"].tolist() == [3.0, 2.0, 1.0, 0.0]


def test_flattened_lazy_stacks_write_through():
    stack = counting()
    stack.reshape(-1).tensordicts[4]["a"].fill_(-1.0)
    assert stack.tensordicts[1]["a"].tolist() == [10.0, -1.0, 12.0]
    flat = stack.reshape(-1)
    flat[4] = TensorDict(a=torch.tensor(-2.0))
    assert stack.tensordicts[1]["a"].tolist() == [10.0, -2.0, 12.0]
    names = NonTensorStack.from_list([list("abc"), list("def")])
    flat_names = names.reshape(-1)
    assert flat_names.tolist() == ["a", "b", "c", "d", "e", "f"]
    flat_names[4] = "z"
    assert names.tolist() == [["a", "b", "c"], ["d", "z", "f"]]
    assert flat_names.tolist() == ["a", "b", "c", "d", "z", "f"]
    columns = LazyStackedTensorDict.lazy_stack([NonTensorStack("a", "b", "c"),
                                                NonTensorStack("d", "e", "f")], 1)
    assert columns.reshape(-1).tolist() == ["a", "d", "b", "e", "c", "f"]
    assert NonTensorStack("a", "b", "c").flip(0).tolist() == ["c", "b", "a"]
