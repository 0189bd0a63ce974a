"""``expand`` of non-tensor data: new leading dims give one element per position."""

import pytest
import torch

from tensordict import NonTensorData, NonTensorStack, TensorDict


def test_expand_to_new_dims_gives_a_stack_of_independent_elements():
    data = NonTensorData("a")
    out = data.expand(3)
    assert type(out) is NonTensorStack and out.batch_size == torch.Size([3])
    assert out.tolist() == ["a", "a", "a"] and out.data == "a"
    out[0] = NonTensorData("q")
    assert out.tolist() == ["q", "a", "a"] and data.data == "a"


@pytest.mark.parametrize("shape", [(3, 2), ((3, 2),), (torch.Size([3, 2]),), (3, -1)])
def test_expand_accepts_shapes_like_a_tensor(shape):
    out = NonTensorData("b", batch_size=[2]).expand(*shape)
    assert type(out) is NonTensorStack and out.batch_size == torch.Size([3, 2])
    assert out.tolist() == [["b", "b"]] * 3


def test_expand_of_size_one_dims_keeps_one_value():
    data = NonTensorData("c", batch_size=[2, 1])
    out = data.expand(2, 4)
    assert type(out) is NonTensorData and out.batch_size == torch.Size([2, 4])
    assert data.expand(2, 1) is data


def test_expand_reads_sizes_torch_rejects_as_upstream():
    with pytest.warns(FutureWarning, match="torch.Tensor.expand rejects"):
        out = NonTensorData("d", batch_size=[2]).expand(3, 3)
    assert type(out) is NonTensorStack and out.batch_size == torch.Size([3, 3, 2])
    with pytest.raises(RuntimeError, match="expanded size"):
        NonTensorData("d", batch_size=[2, 3]).expand(4, -1)


def test_tensordict_expand_stacks_its_non_tensor_data():
    td = TensorDict(a=torch.zeros(2, 1), s=NonTensorData("z", batch_size=[2, 1]),
                    batch_size=[2, 1])
    out = td.expand(3, 2, 1)
    assert type(out.get("s")) is NonTensorStack and out.get("s").batch_size == (3, 2, 1)
    assert out["s"] == [[["z"], ["z"]]] * 3
    # growing a size-1 dim, reshaping or indexing keep one value
    assert type(td.expand(2, 4).get("s")) is NonTensorData
    assert type(td.reshape(1, 2, 1).get("s")) is NonTensorData
    assert type(td[torch.tensor([[0, 1], [1, 0]])].get("s")) is NonTensorData
