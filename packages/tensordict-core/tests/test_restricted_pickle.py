"""The restricted unpickler: plain data comes back exactly, code is never called."""

from __future__ import annotations

import collections
import io
import os
import pickle

import numpy as np
import pytest
import torch

from tensordict._restricted_pickle import UnsafePickleError, loads_data


def test_a_state_dict_round_trips():
    model = torch.nn.Linear(3, 2)
    optim = torch.optim.Adam(model.parameters())
    model(torch.ones(1, 3)).sum().backward()
    optim.step()
    state = {"model": model.state_dict(), "optim": optim.state_dict()}
    loaded = loads_data(pickle.dumps(state))
    assert type(loaded["model"]) is collections.OrderedDict
    assert all(torch.equal(loaded["model"][k], v) for k, v in state["model"].items())
    assert loaded["optim"]["param_groups"] == state["optim"]["param_groups"]
    steps = loaded["optim"]["state"][0]
    assert torch.equal(steps["exp_avg"], state["optim"]["state"][0]["exp_avg"])


def test_tensors_keep_their_dtype_view_and_grad():
    base = torch.arange(12, dtype=torch.float16).view(3, 4)
    values = {"view": base[1:, ::2], "param": torch.nn.Parameter(torch.ones(2)),
              "grad": torch.zeros(2, requires_grad=True), "bool": torch.tensor([True]),
              "dtype": torch.bfloat16, "device": torch.device("cpu"), "size": torch.Size([2])}
    loaded = loads_data(pickle.dumps(values))
    assert torch.equal(loaded["view"], base[1:, ::2]) and loaded["view"].stride() == (4, 2)
    assert type(loaded["param"]) is torch.nn.Parameter and loaded["grad"].requires_grad
    assert loaded["bool"].dtype == torch.bool
    assert (loaded["dtype"], loaded["device"], loaded["size"]) == (
        torch.bfloat16, torch.device("cpu"), torch.Size([2]))


def test_python_and_numpy_values_round_trip():
    values = [{1, 2}, frozenset({3}), 1 + 2j, slice(1, 4, 2), bytearray(b"ab"), {(1, 2): "k"},
              collections.deque([1, 2]), collections.Counter("aab"),
              collections.defaultdict(list, {"a": [1]}), np.float32(1.5), np.arange(3),
              np.array(["x", "y"]), np.array([{"a": 1}], dtype=object)]
    loaded = loads_data(pickle.dumps(values))
    for value, back in zip(values[:-3], loaded[:-3]):
        assert type(back) is type(value) and back == value
    assert loaded[-3].tolist() == [0, 1, 2] and loaded[-2].tolist() == ["x", "y"]
    assert loaded[-1][0] == {"a": 1}


class _RunsCode:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.mark.parametrize("make, name", [
    (lambda path: _RunsCode(path), "posix.mkdir"),
    (lambda path: [1, {"deep": _RunsCode(path)}], "posix.mkdir"),
    (lambda path: collections.defaultdict(print), "builtins.print"),
    (lambda path: range(3), "builtins.range"),
    (lambda path: torch.nn.Linear(1, 1), "torch.nn.modules.linear.Linear"),
])
def test_any_other_global_is_refused_before_anything_runs(tmp_path, make, name):
    marker = str(tmp_path / "ran")
    with pytest.raises(UnsafePickleError, match="is not plain data") as info:
        loads_data(pickle.dumps(make(marker)))
    assert info.value.name == name and not os.path.exists(marker)
    assert isinstance(info.value, pickle.UnpicklingError)


class _ForgedStorage:
    """Pickles as a tensor storage whose ``torch.save`` payload holds code."""

    def __init__(self, path: str) -> None:
        buffer = io.BytesIO()
        torch.save(_RunsCode(path), buffer)
        self.payload = buffer.getvalue()

    def __reduce__(self):
        return (torch.storage._load_from_bytes, (self.payload,))


def test_a_storage_payload_is_read_by_torchs_restricted_loader(tmp_path):
    marker = str(tmp_path / "ran")
    with pytest.raises(pickle.UnpicklingError, match="Weights only load failed"):
        loads_data(pickle.dumps(_ForgedStorage(marker)))
    assert not os.path.exists(marker)


@pytest.mark.parametrize("payload", [pickle.dumps({"a": [1, 2, 3]})[:-3], b"not a pickle",
                                     pickle.dumps([1])[:2] + b"\xff" * 4, b"\x80\x09", b""])
def test_a_malformed_pickle_is_an_unpickling_error(payload):
    with pytest.raises(pickle.UnpicklingError):
        loads_data(payload)
