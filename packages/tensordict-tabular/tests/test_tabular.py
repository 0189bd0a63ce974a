"""tensordict-tabular: Arrow, Parquet, CSV, JSON and pandas conversions, errors, atomic
writes."""

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import tensordict
from tensordict import NonTensorData, NonTensorStack, TensorDict
from tensordict.testing import plugin_removed


def _td():
    return TensorDict(
        a=torch.arange(3), f=torch.tensor([0.5, 1.0, 2.0]),
        b=torch.tensor([True, False, True]), s=NonTensorStack("x", "y,z", "w"),
        n=TensorDict(c=torch.tensor([1, 2, 3], dtype=torch.int32), batch_size=[3]),
        batch_size=[3])


def _check(td, exact_dtypes=True):
    expected = _td()
    assert td.batch_size == torch.Size([3])
    for key in ("a", "f", "b", ("n", "c")):
        value = td[key]
        assert torch.equal(value.to(expected[key].dtype), expected[key]), key
        if exact_dtypes:
            assert value.dtype == expected[key].dtype, key
    assert isinstance(td.get("s"), NonTensorStack)
    assert td[1]["s"] == "y,z" and td.get("s").tolist() == ["x", "y,z", "w"]


# -- files -------------------------------------------------------------------------------


def test_parquet_round_trip(tmp_path):
    path = tmp_path / "d.parquet"
    _td().to_parquet(path, separator=".")
    assert pq.read_table(path).column_names == ["a", "f", "b", "s", "n.c"]
    _check(TensorDict.from_parquet(path, separator="."))
    _check(tensordict.from_parquet(str(path), separator="."))
    assert list(tensordict.from_parquet(path).keys()) == ["a", "f", "b", "s", "n.c"]
    assert sorted(TensorDict.from_parquet(path, columns=["a", "s"]).keys()) == ["a", "s"]


@pytest.mark.parametrize("lines", [False, True])
def test_json_round_trip(tmp_path, lines):
    path = tmp_path / "d.json"
    _td().to_json(path, separator=".", lines=lines)
    text = path.read_text()
    if lines:
        assert text.splitlines()[0] == '{"a":0,"f":0.5,"b":true,"s":"x","n.c":1}'
    else:
        assert json.loads(text)[1] == {"a": 1, "f": 1.0, "b": False, "s": "y,z", "n.c": 2}
    # JSON numbers read back as int64 / float64
    _check(TensorDict.from_json(path, separator=".", lines=lines), exact_dtypes=False)


def test_csv_round_trip(tmp_path):
    path = tmp_path / "d.csv"
    _td().to_csv(path, separator=".")
    td = TensorDict.from_csv(path, separator=".")
    _check(td, exact_dtypes=False)
    assert td["f"].dtype is torch.float64 and td["b"].dtype is torch.bool
    # whole floats are written with a decimal point, so they read back as floats
    whole = TensorDict(x=torch.tensor([1.0, -2.0, float("nan")]), batch_size=[3])
    whole.to_csv(path)
    back = TensorDict.from_csv(path)["x"]
    assert back.dtype is torch.float64 and back[:2].tolist() == [1.0, -2.0] and back[2].isnan()


def test_csv_written_by_pandas_with_missing_values(tmp_path):
    # upstream writes CSV with pandas: unquoted, True/False; empty fields are missing
    path = tmp_path / "d.csv"
    path.write_text("a,b,s,flag\n1,2.5,x,True\n,3.0,,False\n3,,z,True\n")
    td = tensordict.from_csv(path)
    assert torch.equal(td["a"].isnan(), torch.tensor([False, True, False]))
    assert td["a"].dtype is torch.float64 and td["flag"].dtype is torch.bool
    assert td.get("s").tolist() == ["x", None, "z"]


def test_reader_options(tmp_path):
    path = tmp_path / "d.parquet"
    _td().to_parquet(path, separator="/")
    td = TensorDict.from_parquet(path, separator="/", dtype=torch.float32)
    assert td["a"].dtype is torch.float32 and td["n", "c"].dtype is torch.float32
    assert TensorDict.from_parquet(path, batch_size=[]).batch_size == torch.Size([])
    assert TensorDict.from_parquet(path, batch_size=[], auto_batch_size=False).batch_dims == 0
    auto = TensorDict.from_parquet(path, batch_size=[])
    auto.auto_batch_size_()
    assert auto.batch_size == torch.Size([3])
    assert TensorDict.from_parquet(path, device="cpu").device == torch.device("cpu")
    with pytest.raises(ValueError, match="exclusive"):
        TensorDict.from_parquet(path, batch_size=[3], auto_batch_size=True)


def test_zero_and_one_row(tmp_path):
    path = tmp_path / "d.parquet"
    _td()[:0].to_parquet(path, separator=".")
    assert TensorDict.from_parquet(path).batch_size == torch.Size([0])
    TensorDict(a=torch.tensor(1.0), s=NonTensorData("q")).to_parquet(path)
    one = TensorDict.from_parquet(path)
    assert one.batch_size == torch.Size([1]) and one[0]["s"] == "q"


# -- arrow -------------------------------------------------------------------------------


def test_arrow_round_trip_with_structs_fixed_shapes_and_jagged():
    td = TensorDict(
        x=torch.tensor([1.0, 2.0]), image=torch.arange(24.0).reshape(2, 3, 4),
        ids=torch.nested.nested_tensor([torch.tensor([1, 2]), torch.tensor([3])],
                                       layout=torch.jagged),
        obs=TensorDict(y=torch.tensor([3, 4]), batch_size=[2]),
        text=NonTensorStack("a", "b"), batch_size=[2])
    table = td.to_arrow()
    assert pa.types.is_struct(table.schema.field("obs").type)
    assert pa.types.is_large_list(table.schema.field("ids").type)
    back = tensordict.from_arrow(table)
    assert torch.equal(back["image"], td["image"]) and torch.equal(back["obs", "y"], td["obs", "y"])
    assert [t.tolist() for t in back["ids"].unbind(0)] == [[1, 2], [3]]
    assert back.get("text").tolist() == ["a", "b"]
    sliced = tensordict.from_arrow(table.slice(1))
    assert [t.tolist() for t in sliced["ids"].unbind(0)] == [[3]]


def test_from_arrow_inputs_and_copy():
    table = pa.table({"x": pa.array([1.0, 2.0])})
    batch = tensordict.from_arrow(table.to_batches()[0])
    assert torch.equal(batch["x"], torch.tensor([1.0, 2.0], dtype=torch.float64))
    assert tensordict.from_arrow({"x": [1, 2]})["x"].dtype is torch.int64
    copied = tensordict.from_arrow(table, copy=True)
    copied["x"][0] = 5.0  # a copy: writable, and the table is unchanged
    assert table.column("x").to_pylist() == [1.0, 2.0]
    viewed = tensordict.from_arrow(table)  # a mutable buffer: viewed, as upstream does
    assert viewed["x"].data_ptr() == table.column("x").chunks[0].buffers()[1].address
    chunked = pa.Table.from_batches([pa.record_batch({"x": [1, 2]}), pa.record_batch({"x": [3]})])
    assert tensordict.from_arrow(chunked)["x"].tolist() == [1, 2, 3]
    fixed = pa.table({"y": pa.FixedSizeListArray.from_arrays(pa.array([1.0, 2, 3, 4]), 2)})
    assert tensordict.from_arrow(fixed)["y"].shape == (2, 2)


def test_from_arrow_nulls():
    table = pa.table({"y": pa.array([1, None]), "f": pa.array([0.5, None]),
                      "s": pa.array(["a", None]), "st": pa.array([{"q": 1}, None])})
    with pytest.raises(ValueError, match=r"column \('y',\) has 1 null"):
        tensordict.from_arrow(table)
    filled = tensordict.from_arrow(table, nulls="fill")
    assert filled["y"].tolist() == [1, 0] and filled["f"][1].isnan()
    assert filled.get("s").tolist() == ["a", None] and filled["st", "q"].tolist() == [1, 0]
    masked = tensordict.from_arrow(table, nulls="mask", mask_key="m")
    assert masked["m", "y"].tolist() == [True, False]
    assert masked["m", "st", "q"].tolist() == [True, False]
    with pytest.raises(ValueError, match="mask_key"):
        tensordict.from_arrow(table, mask_key="m")
    with pytest.raises(ValueError, match="nulls must be"):
        tensordict.from_arrow(table, nulls="drop")


def test_to_arrow_errors():
    with pytest.raises(ValueError, match="one batch dimension"):
        tensordict.to_arrow(TensorDict(a=torch.ones(2)))
    with pytest.raises(ValueError, match="one batch dimension"):
        TensorDict(a=torch.ones(2, 2), batch_size=[2, 2]).to_arrow()
    with pytest.raises(TypeError, match=r"\('a',\)"):
        TensorDict(a=torch.ones(2, dtype=torch.bfloat16), batch_size=[2]).to_arrow()
    with pytest.raises(TypeError):
        tensordict.from_arrow(42)


# -- pandas ------------------------------------------------------------------------------


def test_pandas_round_trip():
    pd = pytest.importorskip("pandas")
    df = _td().to_pandas(separator=".")
    assert list(df.columns) == ["a", "f", "b", "s", "n.c"] and df["s"][1] == "y,z"
    _check(TensorDict.from_pandas(df, separator="."))
    df = pd.DataFrame({0: [1, 2], "cat": pd.Categorical(["u", "v"]),
                       "t": pd.to_datetime(["1970-01-01", "1970-01-02"]),
                       "i": pd.array([1, None], dtype="Int64")})
    td = tensordict.from_pandas(df)
    assert sorted(td.keys()) == ["0", "cat", "i", "t"]
    assert td["cat"].tolist() == [0, 1] and td["t"].tolist() == [0, 86_400_000_000_000]
    assert td["i"][1].isnan()
    with pytest.raises(TypeError, match="DataFrame"):
        tensordict.from_pandas({"a": [1]})


def test_to_pandas_non_tensor_and_tensorclass():
    pytest.importorskip("pandas")
    td = TensorDict(x=torch.zeros(2), s=NonTensorData("q", batch_size=[2]), batch_size=[2])
    assert td.to_pandas()["s"].tolist() == ["q", "q"]
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Point:
        x: torch.Tensor
        y: torch.Tensor

    td = TensorDict(p=Point(x=torch.zeros(3), y=torch.ones(3), batch_size=[3]), batch_size=[3])
    df = td.to_pandas()
    assert type(df["p"][0]).__name__ == "Point" and df["p"][0].y == 1
    assert list(td.to_pandas(separator=".").columns) == ["p.x", "p.y"]
    assert list(td["p"].to_pandas().columns) == ["x", "y"]  # a tensorclass at the root


# -- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("writer", ["to_parquet", "to_csv", "to_json"])
def test_writer_errors_leave_previous_file(tmp_path, writer):
    path = tmp_path / f"d.{writer[3:]}"
    getattr(_td(), writer)(path, separator=".")
    before = path.read_bytes()
    nested = TensorDict(a=TensorDict(b=torch.ones(2), batch_size=[2]), batch_size=[2])
    with pytest.raises(ValueError, match="Nested TensorDict at key 'a' requires a separator"):
        getattr(nested, writer)(path)
    with pytest.raises(ValueError, match=r"shape torch.Size\(\[2, 2\]\) at key 'x'"):
        getattr(TensorDict(x=torch.ones(2, 2), batch_size=[2]), writer)(path)
    with pytest.raises(ValueError, match="column name 'a.b'"):
        getattr(TensorDict({"a.b": torch.ones(2), "a": {"b": torch.ones(2)}}, [2]), writer)(
            path, separator=".")
    assert path.read_bytes() == before and os.listdir(tmp_path) == [path.name]


def test_failure_during_the_write_keeps_previous_file(tmp_path, monkeypatch):
    path = tmp_path / "d.parquet"
    _td().to_parquet(path, separator=".")
    before = path.read_bytes()

    def broken(table, where, **kwargs):
        with open(where, "wb") as file:
            file.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(pq, "write_table", broken)
    with pytest.raises(OSError, match="disk full"):
        _td().to_parquet(path, separator=".")
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["d.parquet"]


def test_unwritable_values_raise_type_error(tmp_path):
    td = TensorDict(s=NonTensorStack("a", 1), batch_size=[2])
    with pytest.raises(TypeError, match="column 's'"):
        td.to_parquet(tmp_path / "d.parquet")
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("reader", ["from_parquet", "from_csv", "from_json"])
def test_missing_file(tmp_path, reader):
    with pytest.raises(FileNotFoundError, match="nope"):
        getattr(TensorDict, reader)(tmp_path / "nope")


def test_json_that_is_not_records(tmp_path):
    path = tmp_path / "o.json"
    path.write_text('{"a": [1, 2]}')
    with pytest.raises(ValueError, match="array of JSON records"):
        tensordict.from_json(path)
    path.write_text('[{"a": 1},')
    with pytest.raises(ValueError, match="o.json is not valid JSON"):
        tensordict.from_json(path)


def test_missing_plugin_names_the_package():
    with plugin_removed("tabular"):
        with pytest.raises(AttributeError, match="tensordict-tabular"):
            TensorDict(a=torch.ones(2), batch_size=[2]).to_parquet("x.parquet")
        with pytest.raises(ModuleNotFoundError, match=r"tensordict\[tabular\]"):
            tensordict.from_csv("x.csv")
