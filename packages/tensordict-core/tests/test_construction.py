"""Building TensorDicts: sources, batch sizes, devices, names, factories."""

import pytest
import torch

from tensordict import NonTensorData, TensorDict, TensorDictBase


def test_from_mapping_nested_dicts_become_tensordicts():
    td = TensorDict({"a": torch.zeros(3, 4), "n": {"b": torch.ones(3)}}, batch_size=[3])
    assert isinstance(td["n"], TensorDict)
    assert td["n"].batch_size == torch.Size([3])
    assert td["n", "b"].shape == torch.Size([3])


def test_nested_dicts_take_the_device_names_and_checks_of_the_root():
    inner = {"b": torch.zeros(2), ("c", "d"): torch.ones(2)}
    td = TensorDict({"n": {"a": torch.zeros(2, 3), "m": inner}},
                    batch_size=[2], device="cpu", names=["x"])
    assert td["n", "m"].names == ["x"] and td["n", "m"].device == torch.device("cpu")
    assert torch.equal(td["n", "m", "c", "d"], torch.ones(2)) and td["n", "m", "c"].names == ["x"]
    with pytest.raises(RuntimeError, match="'a'"):
        TensorDict({"n": {"a": torch.zeros(3)}}, batch_size=[2])


def test_keyword_entries_and_batch_size_forms():
    for size in (3, [3], (3,), torch.Size([3])):
        td = TensorDict(a=torch.zeros(3, 2), batch_size=size)
        assert td.batch_size == torch.Size([3])
    assert TensorDict(a=torch.zeros(3)).batch_size == torch.Size([])


def test_source_and_kwargs_together_is_an_error():
    with pytest.raises(ValueError, match="either"):
        TensorDict({"a": torch.zeros(1)}, b=torch.zeros(1))


def test_tuple_keys_in_source_are_nested():
    td = TensorDict({"a": torch.zeros(()), ("b", "c"): torch.ones(())}, [])
    assert td["b", "c"] == 1
    assert ("b", "c") in td.keys(include_nested=True)


def test_batch_size_mismatch_names_key_and_shapes():
    with pytest.raises(RuntimeError, match=r"batch_size=torch.Size\(\[3\]\).*\[4, 3\].*'b'"):
        TensorDict({"a": torch.zeros(3), "b": torch.zeros(4, 3)}, batch_size=[3])


def test_auto_batch_size():
    td = TensorDict({"a": torch.zeros(3, 4, 5), "n": {"b": torch.zeros(3, 4)}}, batch_size="auto")
    assert td.batch_size == torch.Size([3, 4])
    assert td["n"].batch_size == torch.Size([3, 4])
    td2 = TensorDict({"a": torch.zeros(3, 4), "b": torch.zeros(3, 5)}).auto_batch_size_()
    assert td2.batch_size == torch.Size([3])
    assert TensorDict(a=torch.zeros(2, 3)).auto_batch_size_(batch_dims=1).batch_size == (2,)


def test_unknown_batch_size_string():
    with pytest.raises(ValueError, match="auto"):
        TensorDict(a=torch.zeros(1), batch_size="infer")


def test_device_moves_values_now_and_later():
    td = TensorDict({"x": torch.zeros(2)}, batch_size=[2], device="meta")
    td["y"] = torch.ones(2)
    assert td["x"].device.type == "meta" and td["y"].device.type == "meta"
    assert td.device == torch.device("meta")
    assert td.clear_device_().device is None
    td["z"] = torch.ones(2)
    assert td["z"].device.type == "cpu"


def test_device_cannot_be_assigned():
    with pytest.raises(RuntimeError, match="to\\(device\\)"):
        TensorDict().device = "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_device_gets_an_index():
    td = TensorDict({"a": torch.zeros(2)}, [2], device="cuda")
    assert td["a"].device == torch.device("cuda", torch.cuda.current_device())


def test_names_set_get_and_validation():
    longer = TensorDict({"b": torch.zeros(3, 4, 5)}, [3, 4, 5])
    td = TensorDict({"a": torch.zeros(3, 4), "n": longer}, [3, 4], names=["x", "y"])
    assert td.names == ["x", "y"]
    assert td["n"].names == ["x", "y", None]
    with pytest.raises(ValueError, match="2 dims"):
        td.names = ["x"]
    with pytest.raises(ValueError, match="unique"):
        td.names = ["x", "x"]
    td.names = None
    assert td.names == [None, None]


def test_rename_and_refine_names():
    td = TensorDict({"a": torch.zeros(3, 4)}, [3, 4], names=["x", "y"])
    assert td.rename(x="t").names == ["t", "y"]
    assert td.names == ["x", "y"]
    assert td.rename("p", "q").names == ["p", "q"]
    td.rename_(y="w")
    assert td.names == ["x", "w"]
    plain = TensorDict({"a": torch.zeros(3, 4)}, [3, 4]).refine_names("x", None)
    assert plain.names == ["x", None]
    with pytest.raises(ValueError, match="no dim named"):
        td.rename(missing="z")


def test_batch_size_setter():
    td = TensorDict({"a": torch.zeros(3, 4), "s": "text"}, [3])
    td.batch_size = [3, 4]
    assert td.shape == torch.Size([3, 4])
    assert td.get("s").batch_size == torch.Size([3, 4])
    td.batch_size = []
    assert td.batch_size == torch.Size([])
    with pytest.raises(RuntimeError, match="'a'.*\\[3, 4\\]"):
        td.batch_size = [4]


def test_sizes_and_dims():
    td = TensorDict({"a": torch.zeros(3, 4, 5)}, [3, 4])
    assert (td.numel(), td.dim(), td.ndim, td.batch_dims, len(td)) == (12, 2, 2, 2, 3)
    assert td.size() == torch.Size([3, 4]) and td.size(1) == 4
    assert len(TensorDict()) == 0


def test_from_tensordict_shares_leaves():
    src = TensorDict({"a": torch.zeros(2)}, [2])
    td = TensorDict(src)
    assert td["a"] is src["a"]


def test_sub_tensordict_entries_are_stored_as_they_are_or_fitted():
    sub = TensorDict(b=torch.zeros(()))
    assert TensorDict({"n": sub}, torch.Size([]))["n"] is sub  # nothing to check
    moved = TensorDict({"n": sub}, torch.Size([]), device="cpu")["n"]
    assert moved.device == torch.device("cpu") and moved["b"] is sub["b"]
    batched = TensorDict(b=torch.zeros(2), batch_size=[2])
    assert TensorDict({"n": batched}, torch.Size([2]))["n"] is batched
    with pytest.raises(RuntimeError, match="'n'"):
        TensorDict({"n": batched}, torch.Size([3]))


def test_empty_sources_and_size_forms():
    assert TensorDict({}, torch.Size([2])).batch_size == torch.Size([2])
    assert TensorDict(None, [2, 3]).batch_size == torch.Size([2, 3])
    assert TensorDict(TensorDict(), torch.Size([])).is_empty()  # no truth value asked
    assert TensorDict(batch_size=torch.Size([-1])).batch_size == torch.Size([-1])
    with pytest.raises(RuntimeError, match="-1"):
        TensorDict(batch_size=torch.Size([-2]))


def test_non_mapping_source_is_an_error():
    with pytest.raises(ValueError, match="mapping"):
        TensorDict([1, 2, 3])


def test_fromkeys():
    td = TensorDict.fromkeys(["a", ("b", "c")], 0)
    assert td["a"] == 0 and td["b", "c"] == 0
    assert isinstance(td["b"], TensorDictBase)


def test_lock_argument():
    td = TensorDict(a=torch.zeros(1), lock=True)
    assert td.is_locked


def test_values_converted_on_write():
    td = TensorDict(batch_size=[2])
    td["num"] = [1.0, 2.0]
    td["tup"] = (1, 2)
    td["arr"] = __import__("numpy").zeros(2)
    td["tensors"] = [torch.zeros(3), torch.ones(3)]
    assert td["num"].dtype == torch.float32 and td["tup"].dtype == torch.int64
    assert td["arr"].dtype == torch.float64 and td["tensors"].shape == (2, 3)
    td0 = TensorDict()
    td0["x"] = 3
    assert isinstance(td0["x"], torch.Tensor) and td0["x"].item() == 3


def test_scalar_on_batched_tensordict_fails_batch_check():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        td["i"] = 3


def test_shorter_sub_tensordict_is_widened_and_shares_leaves():
    td = TensorDict({"a": {"b": torch.zeros(3, 4)}}, batch_size=[3])
    sub = TensorDict({"y": torch.zeros(3, 2)}, batch_size=[])
    td["s"] = sub
    assert td["s"].batch_size == torch.Size([3]) and sub.batch_size == torch.Size([])
    assert td["s"] is not sub and td["s", "y"] is sub["y"]
    td["x"] = TensorDict({"y": torch.zeros(3, 4)}, batch_size=[3, 4])
    assert td["x"].batch_size == torch.Size([3, 4])
    same = TensorDict({"y": torch.zeros(3)}, [3])
    td["same"] = same
    assert td["same"] is same


def test_incompatible_sub_tensordict():
    td = TensorDict(batch_size=[3])
    with pytest.raises(RuntimeError, match="'bad'"):
        td["bad"] = TensorDict({"y": torch.zeros(4)}, [4])


def test_none_and_objects_are_non_tensor():
    td = TensorDict(batch_size=[3])
    td["none"] = None
    td["obj"] = {1, 2}
    assert isinstance(td.get("none"), NonTensorData) and td["none"] is None
    assert td["obj"] == {1, 2}
