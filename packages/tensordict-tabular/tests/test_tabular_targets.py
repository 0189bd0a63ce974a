"""What a table turns into, as upstream: a tensorclass calling ``from_csv``/``from_json``/
``from_parquet``/``from_pandas``/``from_any`` gets an instance of itself; ``from_any`` of a
DataFrame is ``from_pandas``; string columns are non-tensor data; ``auto_batch_size`` with
``batch_size`` raises upstream's TypeError."""

from __future__ import annotations

import pytest
import torch

import tensordict
from tensordict import NonTensorStack, TensorDict, errors

tensorclasses = pytest.importorskip("tensordict.tensorclasses")


@tensorclasses.tensorclass
class Row:
    a: torch.Tensor
    name: str = None


class Strict(tensorclasses.TensorClass):
    a: torch.Tensor


def table() -> TensorDict:
    return TensorDict(a=torch.tensor([1, 2, 3]), name=["x", "y", "z"], batch_size=[3])


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_a_tensorclass_reads_a_file_as_itself(tmp_path, fmt):
    path = tmp_path / f"rows.{fmt}"
    getattr(table(), f"to_{fmt}")(path)
    rows = getattr(Row, f"from_{fmt}")(path)
    assert type(rows) is Row and rows.batch_size == torch.Size([3])
    assert rows.a.tolist() == [1, 2, 3] and rows[1].name == "y"
    assert list(rows.name) == ["x", "y", "z"]  # one value per row
    assert type(getattr(TensorDict, f"from_{fmt}")(path)) is TensorDict
    with pytest.raises(ValueError, match="name"):  # a column that is not a field
        getattr(Strict, f"from_{fmt}")(path)


@pytest.mark.parametrize("fmt", ["csv", "json", "parquet"])
def test_auto_batch_size_with_batch_size_is_upstreams_type_error(tmp_path, fmt):
    path = tmp_path / f"rows.{fmt}"
    getattr(table(), f"to_{fmt}")(path)
    with pytest.raises(TypeError, match=f"Conflicting batch sizes in from_{fmt}") as info:
        getattr(TensorDict, f"from_{fmt}")(path, auto_batch_size=True, batch_size=[3])
    assert isinstance(info.value, ValueError) and isinstance(info.value, errors.ArgumentError)
    assert getattr(TensorDict, f"from_{fmt}")(path, auto_batch_size=True).batch_size == (3,)


def test_pandas_frames_through_from_pandas_and_from_any():
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame({"a": [1, 2, 3], "name": ["x", "y", "z"]})
    for convert in (TensorDict.from_pandas, TensorDict.from_any, tensordict.from_any):
        td = convert(frame)
        assert type(td) is TensorDict and td.batch_size == torch.Size([3])
        assert td["a"].tolist() == [1, 2, 3] and td[2]["name"] == "z"
        assert isinstance(td.get("name"), NonTensorStack)
    assert TensorDict.from_any(frame, auto_batch_size=True, batch_dims=0).batch_size == ()
    assert TensorDict.from_any(frame, batch_size=[3], device="cpu").device == torch.device("cpu")
    with pytest.raises(TypeError, match="Conflicting batch sizes in from_pandas"):
        TensorDict.from_any(frame, auto_batch_size=True, batch_size=[3])
    for convert in (Row.from_pandas, Row.from_any):
        rows = convert(frame)
        assert type(rows) is Row and rows.a.tolist() == [1, 2, 3] and rows[0].name == "x"
