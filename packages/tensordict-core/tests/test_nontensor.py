"""Non-tensor data rides along with the tensors and never silently vanishes."""

import pytest
import torch

from tensordict import NonTensorData, NonTensorStack, TensorDict, is_non_tensor


@pytest.fixture
def td():
    td = TensorDict({"a": torch.zeros(3, 4)}, batch_size=[3])
    td["s"] = "a string!"
    td["tags"] = ["x", "y", "z"]
    return td


def test_string_is_stored_as_non_tensor_data(td):
    assert td["s"] == "a string!"
    data = td.get("s")
    assert isinstance(data, NonTensorData) and data.batch_size == td.batch_size
    assert is_non_tensor(data) and td.is_non_tensor("s")


def test_list_becomes_per_element_stack(td):
    assert isinstance(td.get("tags"), NonTensorStack)
    assert td["tags"] == ["x", "y", "z"]
    assert repr(td["tags"]) == "LinkedList(['x', 'y', 'z'])"


def test_indexing_keeps_non_tensor(td):
    assert td[0]["s"] == "a string!" and td[0]["tags"] == "z" or td[0]["tags"] == "x"
    assert td[1:]["tags"] == ["y", "z"]
    assert td[torch.tensor([2, 0])]["tags"] == ["z", "x"]
    assert td[torch.tensor([True, False, True])]["tags"] == ["x", "z"]
    assert td[1:].get("s").batch_size == (2,)


def test_equal_elements_are_not_merged():
    td = TensorDict({"l": ["same", "same"]}, [2])
    assert isinstance(td.get("l"), NonTensorStack)
    assert td["l"] == ["same", "same"]


def test_non_tensor_survives_clone_apply_select(td):
    assert td.clone()["s"] == "a string!"
    assert td.apply(lambda x: x + 1)["tags"] == ["x", "y", "z"]
    assert td.select("s")["s"] == "a string!"
    assert td.to(torch.float64)["s"] == "a string!"


def test_set_non_tensor_stores_tensors_as_objects():
    td = TensorDict(batch_size=[2])
    td.set_non_tensor("t", torch.zeros(3))
    assert isinstance(td.get("t"), NonTensorData)
    assert torch.equal(td.get_non_tensor("t"), torch.zeros(3))
    td.set_non_tensor(("n", "x"), 5)
    assert td["n", "x"] == 5


def test_tolist_repeats_over_batch():
    data = NonTensorData("v", batch_size=[2, 2])
    assert data.tolist() == [["v", "v"], ["v", "v"]]
    assert data[0].batch_size == (2,)


def test_non_tensor_stack_from_nested_list():
    stack = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
    assert stack.batch_size == (2, 2)
    assert stack[1].tolist() == ["c", "d"]
    assert stack[:, 0].tolist() == ["a", "c"]
    assert NonTensorStack.from_list([["a"], ["b", "c"]]).batch_size == (2, -1)  # as upstream


def test_short_list_on_batched_td_is_one_object():
    td = TensorDict(batch_size=[3])
    td["pair"] = ["a", "b"]
    assert isinstance(td.get("pair"), NonTensorData)
    assert td["pair"] == ["a", "b"]


def test_comparison_of_non_tensor(td):
    eq = td == td.clone()
    assert eq["s"].all() and eq["tags"].all()
