"""Memmap archives (``.tdz``): upstream's layout byte for byte, archives written by
upstream 0.15.3 (tests/fixtures), loading without a copy, modes, atomic replacement."""

from __future__ import annotations

import os
import pickle
import shutil
import struct
import subprocess
import zipfile
from pathlib import Path

import pytest
import torch

import tensordict
from tensordict import NonTensorData, TensorDict
from tensordict.memmap import _archive

FIXTURES = Path(__file__).parent / "fixtures"
UPSTREAM_PYTHON = Path("/work/envs/upstream/bin/python")


def _fixture_td() -> TensorDict:
    """What tests/fixtures/make_upstream_archives.py saves."""
    td = TensorDict(
        a=torch.arange(6.).reshape(3, 2),
        b=TensorDict(c=torch.arange(3, dtype=torch.int64),
                     d=TensorDict(e=torch.tensor([[True], [False], [True]]), batch_size=[3]),
                     batch_size=[3]),
        s=NonTensorData("hi"),
        batch_size=[3],
    )
    td["é x/y"] = torch.arange(3, dtype=torch.int16)
    return td


def _layout_of(path: Path) -> list[tuple]:
    """Each entry's name, method, sizes, header offset, data offset and local extra
    length: everything but dates and checksums."""
    data = path.read_bytes()
    out = []
    for info in zipfile.ZipFile(path).infolist():
        offset = info.header_offset
        name_len, extra_len = struct.unpack("<HH", data[offset + 26: offset + 30])
        out.append((info.filename, info.compress_type, info.file_size, info.compress_size,
                    offset, offset + 30 + name_len + extra_len, extra_len, info.extra,
                    info.external_attr))
    return out


def _check_fixture(td: TensorDict) -> None:
    assert td.batch_size == torch.Size([3])
    assert td["a"].tolist() == [[0., 1.], [2., 3.], [4., 5.]]
    assert td["b", "c"].dtype == torch.int64 and td["b", "c"].tolist() == [0, 1, 2]
    assert td["b", "d", "e"].tolist() == [[True], [False], [True]]
    assert td["s"] == "hi"
    assert td["é x/y"].dtype == torch.int16


# -- archives written by upstream ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["upstream_plain.tdz", "upstream_deflate.tdz"])
def test_reads_upstream_archives(name, tmp_path):
    path = Path(shutil.copy(FIXTURES / name, tmp_path / name))
    assert tensordict.is_memmap_archive(path)
    _check_fixture(TensorDict.load_memmap(path))
    _check_fixture(tensordict.load_memmap(path))
    _check_fixture(TensorDict.load_memmap(tensordict.unpack_memmap(path, tmp_path / "dir")))


def test_reads_upstream_nested_archive(tmp_path):
    path = shutil.copy(FIXTURES / "upstream_nested.tdz", tmp_path / "n.tdz")
    td = TensorDict.load_memmap(path)
    assert [t.tolist() for t in td["n"].unbind(0)] == [[0., 0.], [1., 1., 1.]]
    assert td["e"].shape == torch.Size([0, 2])


def test_writes_upstream_layout(tmp_path):
    """Same entries, order, alignment padding, ZIP64 headers and attributes as upstream's
    archive of the same data."""
    for name, kwargs in [("upstream_plain.tdz", {}),
                         ("upstream_deflate.tdz", {"compression": "deflate"})]:
        ours = tmp_path / name
        _fixture_td().save(ours, **kwargs)
        assert _layout_of(ours) == _layout_of(FIXTURES / name)
        for info in zipfile.ZipFile(ours).infolist():
            assert zipfile.ZipFile(ours).read(info) == zipfile.ZipFile(
                FIXTURES / name).read(info.filename)


def test_leaves_are_aligned_views_of_one_mapping(tmp_path):
    path = tmp_path / "x.tdz"
    _fixture_td().save(path)
    for entry in _layout_of(path):
        if entry[0].endswith(".memmap"):
            assert entry[5] % 64 == 0
    td = TensorDict.load_memmap(path)
    assert type(td["a"]) is torch.Tensor and not td.is_locked
    assert td["a"].untyped_storage().data_ptr() == td["b", "c"].untyped_storage().data_ptr()


@pytest.mark.skipif(not UPSTREAM_PYTHON.exists(), reason="no upstream tensordict here")
def test_upstream_reads_our_archives(tmp_path):
    _fixture_td().save(tmp_path / "plain.tdz")
    _fixture_td().save(tmp_path / "deflate.tdz", compression="lzma")
    code = ("import sys, tensordict\n"
            "for name in ('plain', 'deflate'):\n"
            "    td = tensordict.load_memmap(f'{sys.argv[1]}/{name}.tdz')\n"
            "    print(td['a'].sum().item(), td['b', 'c'].tolist(), td['s'], "
            "td['é x/y'].dtype)\n")
    result = subprocess.run([str(UPSTREAM_PYTHON), "-c", code, str(tmp_path)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300)
    assert result.stdout.splitlines() == ["15.0 [0, 1, 2] hi torch.int16"] * 2, result.stderr


# -- pack, unpack, checks ------------------------------------------------------------------------
def test_pack_unpack_round_trip(tmp_path):
    _fixture_td().memmap(tmp_path / "dir")
    (tmp_path / "dir" / "note.txt").write_text("kept")
    path = tensordict.pack_memmap(tmp_path / "dir", tmp_path / "d.tdz")
    assert path == tmp_path / "d.tdz"
    names = zipfile.ZipFile(path).namelist()
    assert names[:2] == ["meta.json", "a.memmap"] and "note.txt" in names
    out = tensordict.unpack_memmap(path, tmp_path / "back")
    assert (out / "note.txt").read_text() == "kept"
    _check_fixture(TensorDict.load_memmap(out))


def test_is_memmap_archive(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("x.json", "{}")
    for path in [tmp_path, tmp_path / "missing", tmp_path / "f.txt", tmp_path / "other.zip"]:
        assert not tensordict.is_memmap_archive(path)
    with pytest.raises(ValueError, match="not a folder written by memmap/save nor"):
        TensorDict.load_memmap(tmp_path / "f.txt")
    with pytest.raises(ValueError, match="it has no top-level meta.json"):
        TensorDict.load_memmap(tmp_path / "other.zip")


def test_pack_errors(tmp_path):
    TensorDict(a=torch.zeros(1)).memmap(tmp_path / "dir")
    with pytest.raises(ValueError, match="no meta.json found"):
        tensordict.pack_memmap(tmp_path / "nothing", tmp_path / "x.tdz")
    for inside in ["x.tdz", "meta.json"]:
        with pytest.raises(ValueError, match="must be outside the source directory"):
            tensordict.pack_memmap(tmp_path / "dir", tmp_path / "dir" / inside)
    with pytest.raises(ValueError, match="Unknown compression 'foo'"):
        tensordict.pack_memmap(tmp_path / "dir", tmp_path / "x.tdz", compression="foo")
    with pytest.raises(ValueError, match="it is an existing directory"):
        tensordict.pack_memmap(tmp_path / "dir", tmp_path)
    for call in [tensordict.unpack_memmap, tensordict.refresh_archive_checksums]:
        args = (tmp_path / "dir", tmp_path / "u") if call is tensordict.unpack_memmap else (
            tmp_path / "dir",)
        with pytest.raises(ValueError, match="is not a memory-mapped tensordict archive"):
            call(*args)


# -- saving and loading --------------------------------------------------------------------------
def test_save_chooses_archive_by_suffix(tmp_path):
    td = TensorDict(a=torch.ones(2), batch_size=[2])
    td.save(tmp_path / "x.zip")
    assert (tmp_path / "x.zip").is_dir()
    td.save(tmp_path / "f.tdz", archive=False)
    assert (tmp_path / "f.tdz").is_dir()
    td.save(tmp_path / "y.bin", archive=True)
    assert tensordict.is_memmap_archive(tmp_path / "y.bin")
    out = tensordict.save(td, tmp_path / "z.tdz")
    assert type(out["a"]) is torch.Tensor and not out.is_memmap()
    with pytest.raises(ValueError, match="A path is required"):
        td.memmap(None, archive=True)
    with pytest.raises(NotImplementedError, match="return_early"):
        td.memmap(tmp_path / "r.tdz", num_threads=1, return_early=True)
    with pytest.raises(RuntimeError, match="Set existsok=True"):
        td.memmap(tmp_path / "z.tdz", existsok=False)
    with pytest.raises(ValueError, match="it is an existing directory"):
        td.save(tmp_path / "x.zip", archive=True)
    with pytest.raises(ValueError, match="compression is only supported when writing"):
        td.save(tmp_path / "dir", compression="deflate")
    assert sorted(os.listdir(tmp_path)) == ["f.tdz", "x.zip", "y.bin", "z.tdz"]


def test_pickled_entries(tmp_path):
    path = tmp_path / "p.tdz"
    TensorDict(p=NonTensorData({1, 2}), q=NonTensorData(print), batch_size=[2]).save(path)
    assert "p/other.pickle" in zipfile.ZipFile(path).namelist()
    with pytest.raises(pickle.UnpicklingError, match="q/other.pickle .*allow_pickle=True"):
        TensorDict.load_memmap(path)
    loaded = TensorDict.load_memmap(path, allow_pickle=True)
    assert loaded["p"] == {1, 2} and loaded["q"] is print


def test_modes(tmp_path):
    path = tmp_path / "x.tdz"
    TensorDict(a=torch.ones(2), batch_size=[2]).memmap(path)["a"].add_(1)  # mode "r"
    loaded = TensorDict.load_memmap(path)
    loaded["a"].add_(1)
    assert TensorDict.load_memmap(path, mode="r")["a"].tolist() == [1., 1.]
    TensorDict.load_memmap(path, mode="r+")["a"].add_(1)
    assert TensorDict.load_memmap(path)["a"].tolist() == [2., 2.]
    with pytest.raises(ValueError, match="mode must be 'r', 'r\\+' or None"):
        TensorDict.load_memmap(path, mode="w")
    TensorDict(a=torch.ones(2)).save(tmp_path / "c.tdz", compression="bzip2")
    assert TensorDict.load_memmap(tmp_path / "c.tdz")["a"].tolist() == [1., 1.]
    with pytest.raises(RuntimeError, match="entry 'a.memmap' is compressed"):
        TensorDict.load_memmap(tmp_path / "c.tdz", mode="r+")


def test_memmap_like_archive_and_checksums(tmp_path):
    path = tmp_path / "x.tdz"
    like = TensorDict(a=torch.ones(3)).memmap_like(path)
    like["a"].fill_(3)
    assert TensorDict.load_memmap(path)["a"].tolist() == [3., 3., 3.]
    assert zipfile.ZipFile(path).testzip() == "a.memmap"
    assert tensordict.refresh_archive_checksums(path) == path
    assert zipfile.ZipFile(path).testzip() is None
    assert tensordict.unpack_memmap(path, tmp_path / "u").joinpath("a.memmap").stat(
    ).st_size == 12


def test_load_options(tmp_path):
    path = tmp_path / "x.tdz"
    _fixture_td().save(path)
    assert TensorDict.load_memmap(path, subpath=("b", "d"))["e"].shape == torch.Size([3, 1])
    assert TensorDict.load_memmap(path, device="meta")["a"].device.type == "meta"
    out = TensorDict(batch_size=[3]).load_memmap_(path)
    _check_fixture(out)


def test_folder_load_mode_and_subpath(tmp_path):
    TensorDict(a=torch.ones(2), n=TensorDict(b=torch.zeros(2))).memmap(tmp_path)
    TensorDict.load_memmap(tmp_path, mode="r")["a"].add_(1)
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [1., 1.]
    TensorDict.load_memmap(tmp_path, mode="r+")["a"].add_(1)
    assert TensorDict.load_memmap(tmp_path)["a"].tolist() == [2., 2.]
    assert TensorDict.load_memmap(tmp_path, subpath="n")["b"].tolist() == [0., 0.]


def test_tensorclass_and_empty_leaves(tmp_path):
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass

    @tensorclass
    class Pair:
        x: torch.Tensor
        y: str

    Pair(x=torch.ones(2), y="s", batch_size=[2]).save(tmp_path / "p.tdz")
    loaded = Pair.load_memmap(tmp_path / "p.tdz")
    assert isinstance(loaded, Pair) and loaded.y == "s" and loaded.x.tolist() == [1., 1.]
    TensorDict(e=torch.zeros(0, 3)).save(tmp_path / "e.tdz")
    assert TensorDict.load_memmap(tmp_path / "e.tdz")["e"].shape == torch.Size([0, 3])


def test_symlink_is_followed(tmp_path):
    td = TensorDict(a=torch.ones(1))
    td.save(tmp_path / "real.tdz")
    os.symlink(tmp_path / "real.tdz", tmp_path / "link.tdz")
    TensorDict(a=torch.zeros(1)).save(tmp_path / "link.tdz")
    assert os.path.islink(tmp_path / "link.tdz")
    assert TensorDict.load_memmap(tmp_path / "real.tdz")["a"].tolist() == [0.]


# -- atomicity -----------------------------------------------------------------------------------
def test_failed_save_keeps_the_old_archive(tmp_path, monkeypatch):
    path = tmp_path / "x.tdz"
    TensorDict(a=torch.ones(2), b=torch.ones(2)).save(path)
    before = path.read_bytes()
    write_entry = _archive._write_entry

    def failing(archive, path, name, *args):
        if name == "b.memmap":
            raise OSError("disk full")
        write_entry(archive, path, name, *args)

    monkeypatch.setattr(_archive, "_write_entry", failing)
    with pytest.raises(OSError, match="disk full"):
        TensorDict(a=torch.zeros(2), b=torch.zeros(2)).save(path)
    with pytest.raises(OSError, match="disk full"):
        tensordict.pack_memmap(tensordict.unpack_memmap(path, tmp_path / "d"), path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["d", "x.tdz"]


def test_saving_memmapped_leaves_copies_them(tmp_path):
    mapped = TensorDict(a=torch.ones(3)).memmap(tmp_path / "dir")
    assert mapped.save(tmp_path / "x.tdz")["a"].tolist() == [1., 1., 1.]
    assert mapped.memmap_like(tmp_path / "y.tdz")["a"].tolist() == [0., 0., 0.]
    loaded = TensorDict.load_memmap(tmp_path / "x.tdz")
    loaded["a"] += 1
    loaded.save(tmp_path / "x.tdz")  # over the archive it views
    assert TensorDict.load_memmap(tmp_path / "x.tdz")["a"].tolist() == [2., 2., 2.]
    strided = TensorDict(a=torch.arange(6.).reshape(2, 3).t(), b=torch.ones(2).expand(3, 2))
    strided.save(tmp_path / "s.tdz")
    assert (TensorDict.load_memmap(tmp_path / "s.tdz") == strided).all()


def test_failed_folder_write_keeps_the_old_archive(tmp_path):
    path = tmp_path / "x.tdz"
    TensorDict(a=torch.ones(2)).save(path)
    before = path.read_bytes()
    with pytest.raises(TypeError):
        TensorDict(a=torch.zeros(2), f=NonTensorData(lambda: 0)).save(path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["x.tdz"]
