"""tensordict-tabular: td.to_mds, MosaicML Streaming (MDS) datasets written without
mosaicml-streaming: upstream's bytes, read back with a small reader of the format below;
encodings, columns, options, writers, errors. The tests that use streaming itself are
skipped where it does not import."""

import bz2
import decimal
import filecmp
import gzip
import hashlib
import importlib.util
import inspect
import json
import os
import pickle
import sys
import types
import warnings

import numpy as np
import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, NonTensorStack, TensorDict
from tensordict.tabular import _mds_format

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
UPSTREAM = os.path.join(FIXTURES, "mds_upstream")
_spec = importlib.util.spec_from_file_location(
    "make_upstream_mds", os.path.join(FIXTURES, "make_upstream_mds.py"))
DATASETS = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(DATASETS)


@pytest.fixture
def streaming():
    try:
        import streaming
    except Exception as err:  # not installed, or a torchvision that does not load
        pytest.skip(f"mosaicml-streaming cannot be imported: {err!r}")
    return streaming


# -- a reader of MDS datasets, for the tests -------------------------------------------------

_SCALARS = ("uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
            "float16", "float32", "float64")
_ARRAY_DTYPES = {8: "uint8", 9: "int8", 16: "uint16", 17: "int16", 18: "float16",
                 32: "uint32", 33: "int32", 34: "float32", 64: "uint64", 65: "int64",
                 66: "float64"}


def _decode(encoding, data):
    name, _, config = encoding.partition(":")
    if name in _SCALARS:
        return np.frombuffer(data, name)[0]
    if name == "ndarray":
        dtype, _, shape = config.partition(":")
        if not dtype:
            dtype, data = _ARRAY_DTYPES[data[0]], data[1:]
        if shape:
            shape = tuple(map(int, shape.split(",")))
        else:
            ndim, shape_dtype = data[0] >> 2, ("uint8", "uint16", "uint32", "uint64")[data[0] & 3]
            width = np.dtype(shape_dtype).itemsize
            shape = tuple(np.frombuffer(data[1:1 + ndim * width], shape_dtype).tolist())
            data = data[1 + ndim * width:]
        return np.frombuffer(data, dtype).reshape(shape)
    return {"int": lambda d: int.from_bytes(d, "little", signed=True), "bytes": bytes,
            "str": bytes.decode, "json": json.loads, "pkl": pickle.loads,
            "str_int": int, "str_float": float,
            "str_decimal": lambda d: decimal.Decimal(d.decode())}[name](data)


def _index(out):
    with open(os.path.join(out, "index.json")) as file:
        return json.load(file)


def _encodings(out):
    shard = _index(out)["shards"][0]
    return dict(zip(shard["column_names"], shard["column_encodings"], strict=True))


def _checked(data, info):
    """``data``, whose size and hashes are those of its ``index.json`` entry ``info``."""
    assert len(data) == info["bytes"]
    for algo, digest in info["hashes"].items():
        assert getattr(hashlib, algo)(data).hexdigest() == digest
    return data


def _samples(out):
    """Every sample of a dataset, each a dict; the sizes and hashes of its files are
    checked."""
    samples = []
    for shard in _index(out)["shards"]:
        zipped = shard["zip_data"]
        with open(os.path.join(out, (zipped or shard["raw_data"])["basename"]), "rb") as file:
            data = file.read()
        if zipped is not None:
            decompress = {"bz2": bz2.decompress, "gz": gzip.decompress}
            data = decompress[shard["compression"].partition(":")[0]](_checked(data, zipped))
        _checked(data, shard["raw_data"])
        assert sorted(shard["raw_data"]["hashes"]) == shard["hashes"]
        (count,) = np.frombuffer(data[:4], np.uint32)
        offsets = np.frombuffer(data[4:8 + 4 * count], np.uint32)
        config = json.loads(data[8 + 4 * count:offsets[0]])
        assert count == shard["samples"] and {**config, "samples": count} == {
            key: value for key, value in shard.items() if key not in ("raw_data", "zip_data")}
        names, encodings = config["column_names"], config["column_encodings"]
        sizes = config["column_sizes"]
        for start, stop in zip(offsets[:-1], offsets[1:], strict=True):
            sample = data[start:stop]
            variable = iter(np.frombuffer(sample, np.uint32, sizes.count(None)).tolist())
            position = 4 * sizes.count(None)
            values = {}
            for name, encoding, size in zip(names, encodings, sizes, strict=True):
                size = next(variable) if size is None else size
                values[name] = _decode(encoding, sample[position:position + size])
                position += size
            assert position == len(sample)
            samples.append(values)
    return samples


def _check_samples(td, samples):
    """The samples are those of ``td`` (one per element of its first dimension)."""
    assert len(samples) == td.shape[0]
    for i, sample in enumerate(samples):
        assert sorted(sample) == sorted(td.keys())
        for name, read in sample.items():
            value = td[i][name]
            if isinstance(value, torch.Tensor):
                value = value.numpy() if value.dim() else value.item()
            if isinstance(read, np.ndarray) and read.ndim:
                assert read.dtype == value.dtype and np.array_equal(read, value), name
            else:
                assert read == value, name


def _written(td, out, **options):
    td.to_mds(out=str(out), **options)
    return _samples(out)


# -- upstream's bytes, read back ----------------------------------------------------------


@pytest.mark.parametrize("name", list(DATASETS.DATASETS))
def test_writes_upstreams_bytes(tmp_path, name):
    td, options = DATASETS.DATASETS[name]()
    td.to_mds(out=str(tmp_path / name), **options)
    assert sorted(os.listdir(tmp_path / name)) == sorted(os.listdir(os.path.join(UPSTREAM, name)))
    for file in os.listdir(tmp_path / name):
        assert filecmp.cmp(tmp_path / name / file, os.path.join(UPSTREAM, name, file),
                           shallow=False), file


@pytest.mark.parametrize("name", list(DATASETS.DATASETS))
def test_reads_back_the_values(tmp_path, name):
    td, options = DATASETS.DATASETS[name]()
    _check_samples(td, _samples(os.path.join(UPSTREAM, name)))
    _check_samples(td, _written(td, tmp_path / name, **options))


def test_upstreams_datasets_cover_the_format():
    assert {encoding for name in DATASETS.DATASETS
            for encoding in _encodings(os.path.join(UPSTREAM, name)).values()} >= {
        "int", "str", "bytes", "json", "pkl", "str_int", "str_float", "ndarray", *_SCALARS}
    assert len(_index(os.path.join(UPSTREAM, "shards"))["shards"]) > 1
    assert _index(os.path.join(UPSTREAM, "tiny"))["shards"][0]["samples"] == 0


def test_streaming_reads_ours(streaming, tmp_path):
    td, options = DATASETS.shards()
    td.to_mds(out=str(tmp_path / "ds"), **options)
    dataset = streaming.StreamingDataset(local=str(tmp_path / "ds"), batch_size=2)
    assert len(dataset) == 12 and dataset[11]["s"] == "s" * 11
    assert np.array_equal(dataset[7]["x"], td["x"][7].numpy())


# -- writing and reading back --------------------------------------------------------------


def test_round_trip_nested_keys_dtypes(tmp_path):
    td = DATASETS.basic()[0].unflatten_keys(".")
    td["obs", "half"] = torch.arange(4, dtype=torch.float16)
    td["small"] = torch.arange(4, dtype=torch.int8)
    td["feature"] = torch.arange(16, dtype=torch.int32).view(4, 4)
    assert td.flatten_keys().to_mds(out=str(tmp_path)) is None
    assert _encodings(tmp_path) == {
        "action": "int", "done": "int", "feature": "ndarray", "label": "str",
        "obs.half": "float16", "obs.pixels": "ndarray", "obs.x": "float32",
        "reward": "float64", "small": "int"}
    samples = _samples(tmp_path)
    _check_samples(td.flatten_keys(), samples)
    assert samples[2]["obs.half"].dtype == np.float16 and samples[2]["obs.x"].dtype == np.float32


def test_lazy_stack_unbatched_and_non_tensor_values(tmp_path):
    lazy = LazyStackedTensorDict(
        TensorDict(a=0, c=torch.zeros(2), d="a string", n=NonTensorData([1])),
        TensorDict(a=1, c=torch.ones(3), d="another", n=NonTensorData([2, 3])))
    first, second = _written(lazy, tmp_path / "lazy")
    assert _encodings(tmp_path / "lazy") == {"a": "int", "c": "ndarray", "d": "str", "n": "json"}
    assert (first["a"], first["d"], first["n"]) == (0, "a string", [1])
    assert np.array_equal(second["c"], np.ones(3, dtype=np.float32)) and second["n"] == [2, 3]

    single = TensorDict(a=torch.arange(4).view(2, 2), b=torch.tensor(3.5), s="hi")
    (sample,) = _written(single, tmp_path / "single")
    assert np.array_equal(sample["a"], [[0, 1], [2, 3]]) and sample["b"] == 3.5
    assert sample["s"] == "hi"

    values = TensorDict(i=NonTensorStack(1, True), f=NonTensorStack(1.5, 2),
                        b=NonTensorStack(b"x", b"yy"), arr=NonTensorStack(np.zeros(2), np.ones(3)),
                        c=NonTensorData("const", batch_size=[2]), batch_size=[2])
    samples = _written(values, tmp_path / "values")
    assert _encodings(tmp_path / "values") == {"arr": "ndarray", "b": "bytes", "c": "str",
                                              "f": "float64", "i": "int"}
    assert [s["i"] for s in samples] == [1, 1] and [s["f"] for s in samples] == [1.5, 2.0]
    assert [s["b"] for s in samples] == [b"x", b"yy"] and samples[1]["c"] == "const"
    assert np.array_equal(samples[1]["arr"], np.ones(3))


def test_requires_grad_and_two_batch_dims(tmp_path):
    td = TensorDict(a=torch.ones(2, requires_grad=True), b=torch.ones(2, 2, requires_grad=True),
                    batch_size=[2])
    assert [s["a"] for s in _written(td, tmp_path / "grad")] == [1.0, 1.0]
    # one sample per element of the first batch dimension (upstream fails here)
    td = TensorDict(a=torch.arange(4).view(2, 2),
                    s=NonTensorStack(NonTensorStack("a", "b"), NonTensorStack("c", "d")),
                    batch_size=[2, 2])
    first, second = _written(td, tmp_path / "two")
    assert _encodings(tmp_path / "two") == {"a": "ndarray", "s": "json"}
    assert np.array_equal(second["a"], [2, 3]) and first["s"] == ["a", "b"]


def test_columns_subset_and_encodings(tmp_path):
    td = TensorDict(a=torch.arange(3), b=torch.randn(3, 2), s=NonTensorStack("x", "y", "z"),
                    n=TensorDict(x=torch.arange(3), batch_size=[3]), batch_size=[3])
    samples = _written(td, tmp_path / "subset", columns={"b": "ndarray", "s": "str"})
    assert _encodings(tmp_path / "subset") == {"b": "ndarray", "s": "str"}
    assert [sorted(s) for s in samples] == [["b", "s"]] * 3

    samples = _written(td, tmp_path / "typed", columns={"a": "int64", "b": "ndarray:float32:2"})
    assert [s["a"] for s in samples] == [0, 1, 2] and samples[0]["a"].dtype == np.int64
    assert np.array_equal(samples[2]["b"], td["b"][2].numpy())

    samples = _written(td, tmp_path / "pkl", columns={"n": "pkl"})
    assert samples[2]["n"] == {"x": 2}


# -- options ---------------------------------------------------------------------------------


def test_compression_hashes_size_limit(tmp_path):
    td = TensorDict(a=torch.arange(300), b=torch.randn(300, 8), batch_size=[300])
    for compression in ("bz2", "gz:1"):
        out = tmp_path / compression.replace(":", "")
        samples = _written(td, out, compression=compression, hashes=["md5", "sha1"],
                           size_limit="2kb")
        shards = _index(out)["shards"]
        assert len(shards) > 1 and {s["compression"] for s in shards} == {compression}
        extension = compression.partition(":")[0]
        assert all(name.endswith(f".mds.{extension}") or name == "index.json"
                   for name in os.listdir(out))
        _check_samples(td, samples)


def test_optional_modules(tmp_path, monkeypatch):
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    for module, options in (("zstd", {"compression": "zstd"}),
                            ("xxhash", {"hashes": ["xxh64"]})):
        monkeypatch.setitem(sys.modules, module, None)
        with pytest.raises((NotImplementedError, ImportError), match=rf"{module}.*pip install"):
            td.to_mds(out=str(tmp_path / module), **options)
        assert not (tmp_path / module).exists()
    # where the module is installed, it compresses or hashes as streaming calls it
    calls = []
    monkeypatch.setitem(sys.modules, "zstd", types.SimpleNamespace(
        compress=lambda data, level: calls.append(level) or data[::-1]))
    monkeypatch.setitem(sys.modules, "xxhash", types.SimpleNamespace(xxh64=hashlib.sha1))
    td.to_mds(out=str(tmp_path / "ok"), compression="zstd:7", hashes=["md5", "xxh64"])
    (shard,) = _index(tmp_path / "ok")["shards"]
    assert calls == [7] and shard["zip_data"]["basename"] == "shard.00000.mds.zstd"
    with open(tmp_path / "ok" / "shard.00000.mds.zstd", "rb") as file:
        data = file.read()[::-1]
    assert shard["raw_data"]["hashes"]["xxh64"] == hashlib.sha1(data).hexdigest()


def test_out_local_remote_and_exist_ok(tmp_path):
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    # (local, remote): written locally, then copied to the folder remote
    local, remote = tmp_path / "local", tmp_path / "remote"
    td.to_mds(out=(str(local), str(remote)), size_limit=None)
    assert not local.exists() and sorted(os.listdir(remote)) == ["index.json", "shard.00000.mds"]
    td.to_mds(out=(local, tmp_path / "remote2"), keep_local=True)
    assert sorted(os.listdir(local)) == sorted(os.listdir(tmp_path / "remote2"))
    # an empty folder is written into; a folder with files needs exist_ok=True
    (tmp_path / "empty").mkdir()
    td.to_mds(out=tmp_path / "empty")
    with pytest.raises(FileExistsError, match="not empty"):
        td.to_mds(out=tmp_path / "empty", columns={"a": "int64"})
    assert _encodings(tmp_path / "empty") == {"a": "int"}
    (tmp_path / "empty" / "extra").write_text("x")
    td.to_mds(out=tmp_path / "empty", columns={"a": "int64"}, exist_ok=True, max_workers=2,
              progress_bar=False, retry=1)
    assert sorted(os.listdir(tmp_path / "empty")) == ["index.json", "shard.00000.mds"]
    assert _encodings(tmp_path / "empty") == {"a": "int64"}
    assert sorted(os.listdir(tmp_path)) == ["empty", "local", "remote", "remote2"]


@pytest.mark.parametrize(("options", "error", "match"), [
    ({"compression": "foo"}, ValueError, "Invalid compression: foo"),
    ({"compression": "zstd:99"}, ValueError, "Invalid compression"),
    ({"compression": "zstd:"}, ValueError, "Invalid compression"),
    ({"compression": "snappy:1"}, ValueError, "Invalid compression"),
    ({"hashes": ["sha1", "md5"]}, ValueError, "sorted order"),
    ({"hashes": ["nope"]}, ValueError, "Invalid hash: nope"),
    ({"size_limit": -1}, ValueError, "greater than zero"),
    ({"size_limit": 1 << 32}, ValueError, "less than 2"),
    ({"size_limit": "12qb"}, ValueError, "Unsupported value/suffix 12qb"),
    ({"foo": 1}, ValueError, r"Invalid Writer argument\(s\): \['foo'\]"),
    ({"out": ("a",)}, ValueError, "Invalid `out`"),
    ({"out": "s3://bucket/ds"}, NotImplementedError, r"s3://bucket/ds.*writer=streaming"),
    ({"out": ("ds", "gs://bucket/ds")}, NotImplementedError, "gs://bucket/ds"),
    ({"columns": {"a": "jpeg"}}, NotImplementedError, r"'jpeg'.*writer=streaming"),
])
def test_bad_options_write_nothing(tmp_path, monkeypatch, options, error, match):
    monkeypatch.chdir(tmp_path)
    td = TensorDict(a=torch.arange(3), batch_size=[3])
    with pytest.raises(error, match=match):
        td.to_mds(**{"out": "ds", **options})
    assert os.listdir(tmp_path) == []


def test_size_limits():
    def parse(size_limit):
        return _mds_format.MDSOptions.parse("ds", keep_local=False, compression=None,
                                            hashes=None, size_limit=size_limit,
                                            kwargs={}).size_limit
    assert [parse(v) for v in (0, None, "", 100, 100.7, "100", "100b", " 2KB ", "1.5kb",
                               "1mb")] == [None, None, None, 100, 100, 100, 100, 2048, 1536,
                                           1 << 20]


def test_a_failed_write_leaves_nothing(tmp_path, monkeypatch):
    write_shard = _mds_format._write_shard

    def fail_on_second(options, folder, index, samples, config_data):
        if index == 1:
            raise OSError("disk full")
        return write_shard(options, folder, index, samples, config_data)

    monkeypatch.setattr(_mds_format, "_write_shard", fail_on_second)
    td = TensorDict(a=torch.arange(300), batch_size=[300])
    with pytest.raises(OSError, match="disk full"):
        td.to_mds(out=str(tmp_path / "ds"), size_limit="1kb")
    assert os.listdir(tmp_path) == []
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "old").write_text("x")
    with pytest.raises(OSError, match="disk full"):
        td.to_mds(out=str(tmp_path / "ds"), size_limit="1kb", exist_ok=True)
    assert os.listdir(tmp_path) == ["ds"] and os.listdir(tmp_path / "ds") == ["old"]


def test_values_that_do_not_encode_write_nothing(tmp_path):
    for td, columns, match in (
            (TensorDict(x=torch.ones(2, 0), batch_size=[2]), None, "0 elements"),
            (TensorDict(x=torch.ones(2, 2), batch_size=[2]), {"x": "ndarray:float32:3"},
             "Wrong shape"),
            (TensorDict(x=torch.ones(2, 2), batch_size=[2]), {"x": "ndarray:float64"},
             "Wrong dtype"),
            (TensorDict(x=NonTensorStack(1, 2), batch_size=[2]), {"x": "str_float"},
             "float")):
        with pytest.raises((ValueError, AttributeError), match=match):
            td.to_mds(out=str(tmp_path / "ds"), columns=columns)
        assert not (tmp_path / "ds").exists()
    # a bytes value is written as it is, which a fixed-size encoding checks
    with pytest.raises(KeyError, match="'x'.*8 bytes.*'int'"):
        _mds_format.MDSColumns.parse({"x": "int"}).encode({"x": [b"abc"]})


# -- writers ---------------------------------------------------------------------------------


class _Writer:
    """An object with streaming's writer interface: ``columns``, ``write``, ``finish``."""

    def __init__(self, columns):
        self.columns, self.samples, self.finished = columns, [], False

    def write(self, sample):
        assert not self.finished
        self.samples.append(sample)

    def finish(self):
        self.finished = True


def test_any_writer(tmp_path):
    td = TensorDict(a=torch.arange(3), b=torch.randn(3, 2), s=NonTensorStack("x", "y", "z"),
                    batch_size=[3])
    writer = _Writer({"a": "int", "s": "str"})
    td.to_mds(out="ignored", writer=writer, finish_writer=False)
    assert not writer.finished
    td.to_mds(out="ignored", writer=writer, finish_writer=True)
    assert writer.finished and [s["a"] for s in writer.samples] == [0, 1, 2, 0, 1, 2]
    assert writer.samples[4] == {"a": 1, "s": "y"}
    writer = _Writer({"a": "int"})
    with pytest.warns(FutureWarning, match="finish_writer"):
        td.to_mds(out="ignored", writer=writer)
    assert writer.finished
    writer = _Writer({"a": "int", "b": "ndarray"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        td[0].to_mds(out="ignored", writer=writer)
        td[2].to_mds(out="ignored", writer=writer)
    assert not writer.finished and [s["a"] for s in writer.samples] == [0, 2]
    assert np.array_equal(writer.samples[1]["b"], td["b"][2].numpy())
    writer = _Writer({"a": "int", "zz": "int"})
    with pytest.raises(KeyError, match="zz"):
        td.to_mds(out="ignored", writer=writer, finish_writer=True)
    assert writer.samples == [] and not writer.finished
    assert os.listdir(tmp_path) == []


def test_streaming_writer(streaming, tmp_path):
    td = TensorDict(a=torch.arange(3), b=torch.randn(3, 2), s=NonTensorStack("x", "y", "z"),
                    batch_size=[3])
    writer = streaming.MDSWriter(out=str(tmp_path / "two"), columns={"a": "int", "s": "str"})
    td.to_mds(out="ignored", writer=writer, finish_writer=False)
    assert not (tmp_path / "two" / "index.json").exists()
    td.to_mds(out="ignored", writer=writer, finish_writer=True)
    samples = _samples(tmp_path / "two")
    assert [s["a"] for s in samples] == [0, 1, 2, 0, 1, 2] and sorted(samples[0]) == ["a", "s"]


# -- errors: raised before anything is written ---------------------------------------------


@pytest.mark.parametrize(("td", "columns", "error", "match"), [
    (TensorDict(x=torch.ones(2, dtype=torch.bfloat16), batch_size=[2]), None, TypeError,
     r"'x'.*bfloat16"),
    (TensorDict(x=torch.ones(2, 3, dtype=torch.bfloat16), batch_size=[2]), None, TypeError,
     r"'x'.*bfloat16"),
    (TensorDict(x=torch.ones(2, dtype=torch.complex64), batch_size=[2]), None, TypeError,
     r"'x'.*complex64"),
    (TensorDict(x=torch.ones(2, 3, dtype=torch.bfloat16), batch_size=[2]), {"x": "pkl"},
     TypeError, r"'x'.*bfloat16"),
    (TensorDict(ok=torch.ones(2), x=torch.ones(2, 3, dtype=torch.bool), batch_size=[2]), None,
     ValueError, r"'x'.*bool"),
    (TensorDict({"n": {"y": torch.ones(2)}}, batch_size=[2]), None, ValueError,
     r"'n'.*flatten_keys"),
    (TensorDict(s=NonTensorStack("a", 1), batch_size=[2]), None, AttributeError,
     r"sample 1 of column 's'.*int"),
    (TensorDict(s=NonTensorStack("a", None), batch_size=[2]), None, AttributeError, r"'s'"),
    (TensorDict(s=NonTensorStack((1,), (2,)), batch_size=[2]), None, ValueError,
     r"'s'.*tuple"),
    (TensorDict(s=NonTensorStack({"u": 1}, {"u": 2}), batch_size=[2]), None, ValueError,
     r"'s'.*dict"),
    (TensorDict(x=torch.ones(2), batch_size=[2]), {"x": "ndarray"}, AttributeError,
     r"sample 0 of column 'x'.*'ndarray'"),
    (TensorDict(x=torch.ones(2), batch_size=[2]), {"zz": "int"}, KeyError, r"'zz'"),
    (TensorDict(x=torch.ones(2), batch_size=[2]), {}, ValueError, "without entries"),
    (TensorDict(batch_size=[2]), None, ValueError, "without entries"),
    (TensorDict(x=torch.ones(0), batch_size=[0]), None, ValueError, "without samples"),
])
def test_errors_name_the_key_and_write_nothing(tmp_path, td, columns, error, match):
    out = tmp_path / "ds"
    with pytest.raises(error, match=match):
        td.to_mds(out=str(out), columns=columns)
    assert not out.exists()


@pytest.mark.parametrize("encoding", ["foo", "ndarray:bool", "ndarray:float32:0", "ndarray::4",
                                      "ndarray:float32:4:1", "json:1"])
def test_unknown_encoding(tmp_path, encoding):
    td = TensorDict(x=torch.ones(2, 2), batch_size=[2])
    with pytest.raises(TypeError, match=rf"'x'.*'{encoding}'"):
        td.to_mds(out=str(tmp_path / "ds"), columns={"x": encoding})
    assert not (tmp_path / "ds").exists()


def test_streaming_is_never_imported(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "streaming", None)
    _written(TensorDict(x=torch.ones(2), batch_size=[2]), tmp_path / "ds")


def test_signature_is_upstreams():
    parameters = inspect.signature(TensorDict.to_mds).parameters
    assert list(parameters)[1:] == ["columns", "out", "keep_local", "compression", "hashes",
                                    "size_limit", "writer", "finish_writer", "kwargs"]
    assert parameters["size_limit"].default == 1 << 26
    assert parameters["out"].default is inspect.Parameter.empty
    assert all(p.kind in (p.KEYWORD_ONLY, p.VAR_KEYWORD) for p in list(parameters.values())[1:])
