"""Shapes and values that TorchRL's tests build, reproduced without TorchRL."""

import weakref

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, assert_close


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
