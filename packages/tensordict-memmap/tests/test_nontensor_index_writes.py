"""A non-tensor value written over a whole memmapped entry at an index lands in its file."""

import torch

from tensordict import NonTensorData, TensorDict


def test_one_value_written_at_every_index_reaches_the_file(tmp_path):
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td.set_non_tensor("s", "orig")
    td.memmap_(tmp_path)
    td.update_at_({"s": NonTensorData("new")}, slice(None))
    assert td["s"] == "new"
    assert TensorDict.load_memmap(tmp_path)["s"] == "new"
