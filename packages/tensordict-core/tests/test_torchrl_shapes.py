"""Shapes and values that TorchRL's tests build, reproduced without TorchRL."""

import weakref

import pytest
import torch

from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    assert_close,
)


def _ragged(value: float = 0.0) -> LazyStackedTensorDict:
    return LazyStackedTensorDict(TensorDict(i=torch.zeros(2) + value, j=torch.ones(())),
                                 TensorDict(i=torch.zeros(1), j=torch.ones(())))


class TestAssertClose:
    """MCTS trees hold weakrefs to their parent and ragged lazy stacks of subtrees."""

    def test_weakref_to_tensordict_equals_itself(self):
        parent = TensorDict(a=torch.zeros(3))
        td = TensorDict(p=weakref.ref(parent), b=torch.ones(2))
        assert assert_close(td, td)
        assert assert_close(td, TensorDict(p=weakref.ref(parent), b=torch.ones(2)))

    def test_weakrefs_to_distinct_tensordicts_differ(self):
        td = TensorDict(p=weakref.ref(parent := TensorDict(a=torch.zeros(3))))
        other = TensorDict(p=weakref.ref(parent2 := TensorDict(a=torch.zeros(3))))
        assert parent is not parent2
        with pytest.raises(AssertionError, match=r"key \('p',\) does not match"):
            assert_close(td, other)

    def test_non_tensor_values_still_compared(self):
        with pytest.raises(AssertionError, match=r"\('n', 'w'\)"):
            assert_close(TensorDict(n=TensorDict(w="a")), TensorDict(n=TensorDict(w="b")))
        with pytest.raises(AssertionError, match=r"\('w',\)"):
            assert_close(TensorDict(w=NonTensorData("a")), TensorDict(w=torch.ones(())))

    @pytest.mark.parametrize("nest", [False, True])
    def test_ragged_lazy_stack_part_by_part(self, nest):
        def wrap(x):
            return TensorDict(s=x, batch_size=[2]) if nest else x

        assert assert_close(wrap(_ragged()), wrap(_ragged()))
        path = r"\('s', 'i'\)" if nest else r"\('i',\)"
        with pytest.raises(AssertionError, match=path + " does not match, got mse = 1.0000"):
            assert_close(wrap(_ragged()), wrap(_ragged(1.0)))

    def test_lazy_stack_part_keys_and_lengths(self):
        left = LazyStackedTensorDict(TensorDict(i=torch.zeros(1), k=torch.ones(1)),
                                     TensorDict(i=torch.zeros(1)))
        right = LazyStackedTensorDict(TensorDict(i=torch.zeros(1)),
                                      TensorDict(i=torch.zeros(1), k=torch.ones(1)))
        with pytest.raises(KeyError, match="only in actual"):
            assert_close(left, right)
        longer = LazyStackedTensorDict(*right.tensordicts, TensorDict(i=torch.zeros(1)))
        with pytest.raises(AssertionError, match="batch sizes differ"):
            assert_close(right, longer)

    def test_lazy_stack_against_dense(self):
        lazy = LazyStackedTensorDict(TensorDict(i=torch.zeros(1)), TensorDict(i=torch.zeros(1)))
        assert assert_close(lazy, TensorDict(i=torch.zeros(2, 1), batch_size=[2]))
        with pytest.raises(AssertionError, match=r"\('i',\) does not match"):
            assert_close(lazy, TensorDict(i=torch.ones(2, 1), batch_size=[2]))

    def test_empty_sub_tensordict_is_a_key(self):
        with pytest.raises(KeyError, match="only in actual"):
            assert_close(TensorDict(a=torch.ones(1), n={}), TensorDict(a=torch.ones(1)))


def test_non_tensor_copy_copies_the_object():
    """step_mdp copies every collection it keeps, non-tensor data included."""
    data = NonTensorData([1], batch_size=[2])
    copied = data.copy()
    assert type(copied) is NonTensorData and copied.batch_size == data.batch_size
    assert copied.data == data.data and copied.data is not data.data


class TestWhereNonTensor:
    """A partial reset keeps each env's entries with ``where(mask, reset, out=td)``."""

    def _pair(self):
        td = TensorDict(s=NonTensorStack(1, 2, 3), a=torch.zeros(3), batch_size=[3])
        other = TensorDict(s=NonTensorStack(4, 5, 6), a=torch.ones(3), batch_size=[3])
        return td, other

    def test_where_out_selects_the_objects(self):
        td, other = self._pair()
        assert td.where(torch.tensor([True, False, True]), other, out=td) is td
        assert td["s"] == [1, 5, 3]
        assert td["a"].tolist() == [0.0, 1.0, 0.0]

    def test_where_non_tensor_cases(self):
        td, other = self._pair()
        mask = torch.tensor([True, False, True])
        assert td.where(mask, other)["s"] == [1, 5, 3]
        assert td["s"] == [1, 2, 3]
        assert td.where(torch.ones(3, dtype=torch.bool), other)["s"] == [1, 2, 3]
        assert td.where(mask, 0)["s"] == [1, 2, 3]  # no other objects
        x = TensorDict(s="x", batch_size=[3])
        assert x.where(mask, TensorDict(s="y", batch_size=[3]))["s"] == ["x", "y", "x"]
        same = x.where(mask, TensorDict(s="x", batch_size=[3]))._tensordict["s"]
        assert type(same) is NonTensorData and same.data == "x"
        nested = TensorDict(n=TensorDict(s=NonTensorStack.from_list([[1, 2], [3, 4]]),
                                         batch_size=[2, 2]), batch_size=[2])
        theirs = TensorDict(n=TensorDict(s=NonTensorStack.from_list([[5, 6], [7, 8]]),
                                         batch_size=[2, 2]), batch_size=[2])
        picked = nested.where(torch.tensor([False, True]), theirs)
        assert picked["n", "s"] == [[5, 6], [3, 4]]

    def test_update_replaces_a_non_tensor_stack(self):
        td, other = self._pair()
        td.update(other.select("s"))
        assert td["s"] == [4, 5, 6]


def test_where_pad_keeps_the_leaf_dtype():
    """A partial reset of workers without buffers pads ``done`` (bool) with 0."""
    mask = torch.tensor([True, False])
    done = TensorDict(d=torch.ones(2, dtype=torch.bool), batch_size=[2])
    empty = TensorDict(batch_size=[2])
    assert done.where(mask, empty, pad=0)["d"].dtype == torch.bool
    assert empty.where(mask, done, pad=0)["d"].tolist() == [False, True]
    assert done.where(mask, 0)["d"].dtype == torch.int64  # a scalar other promotes


def test_stack_errors_carry_the_words_torchrl_matches():
    """TorchRL's rollout tells dynamic specs apart by these messages' first words."""
    with pytest.raises(RuntimeError, match="The shapes of the tensors to stack is incompatible"):
        torch.stack([TensorDict(a=torch.zeros(1, 2)), TensorDict(a=torch.zeros(2, 2))])
    with pytest.raises(RuntimeError, match="The sets of keys in the tensordicts to stack are"):
        torch.stack([TensorDict(a=torch.zeros(1)), TensorDict(b=torch.zeros(1))])


def test_where_into_an_empty_reset_input_keeps_the_reset_objects():
    """ParallelEnv's partial reset from a ``_reset``-only input: ``where(~reset, reset_td,
    out=input, pad=0)`` gives the entries only the reset data has, objects included (as
    upstream: the object entries are taken as they are)."""
    reset_td = TensorDict(tensor=torch.ones(3, 2), non_tensor=NonTensorStack(7, 8, 9),
                          batch_size=[3])
    node = TensorDict(batch_size=[3])
    keep = torch.tensor([True, False, True])
    out = node.where(keep, other=reset_td, out=node, pad=0)
    assert out is node and node.get("non_tensor").tolist() == [7, 8, 9]
    assert node["tensor"].tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0]]
    with pytest.raises(KeyError, match="Key tensor not found and no pad value"):
        TensorDict(batch_size=[3]).where(keep, other=reset_td)


def test_maybe_dense_stack_of_lazy_steps_whose_entries_change_shape():
    """A rollout of a batched env whose observation shape changes per env and per step
    (TorchRL's EnvWithDynamicSpec): the steps stack lazily, as upstream."""
    steps = [LazyStackedTensorDict.lazy_stack(
        [TensorDict(obs=torch.full((k + t + 1, 2), float(t)), r=torch.zeros(1))
         for k in range(3)]) for t in range(2)]
    out = TensorDict.maybe_dense_stack(steps, 1)
    assert type(out) is LazyStackedTensorDict and out.batch_size == torch.Size([3, 2])
    assert out.stack_dim == 0 and out.tensordicts[0].batch_size == torch.Size([2])
    assert out["r"].shape == torch.Size([3, 2, 1])
    assert out[2, 1]["obs"].tolist() == [[1.0, 1.0]] * 4


def test_where_swaps_whole_elements_of_a_lazy_stack():
    """A batched env's partial reset where observation shapes differ per env: the reset
    element replaces the old one whole (its shape too); keys one side lacks get ``pad``."""
    node = LazyStackedTensorDict.lazy_stack(
        [TensorDict(obs=torch.ones(5, 2), x=torch.ones(1)) for _ in range(2)])
    reset = LazyStackedTensorDict.lazy_stack(
        [TensorDict(obs=torch.zeros(n, 2), y=torch.full((1,), 3.0)) for n in (1, 5)])
    out = node.where(torch.tensor([False, True]), other=reset, out=node, pad=0)
    assert out is node
    assert [tuple(t.shape) for t in node.get("obs", as_list=True)] == [(1, 2), (5, 2)]
    assert node.tensordicts[0]["x"].tolist() == [0.0]
    assert node.tensordicts[0]["y"].tolist() == [3.0]
    assert node.tensordicts[1]["y"].tolist() == [0.0] and node.tensordicts[1]["obs"].sum() == 10
    assert node.tensordicts[0]["obs"].data_ptr() != reset.tensordicts[0]["obs"].data_ptr()
    fresh = LazyStackedTensorDict.lazy_stack(
        [TensorDict(obs=torch.ones(5, 2), x=torch.ones(1)) for _ in range(2)])
    plain = fresh.where(torch.tensor([False, True]), other=reset)  # no pad: elements as is
    assert set(plain.tensordicts[0].keys()) == {"obs", "y"}
    assert set(plain.tensordicts[1].keys()) == {"obs", "x"}
