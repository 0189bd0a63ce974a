"""Writes to a memory-mapped tensorclass land in its files or raise, as upstream: its
index views are locked (``tc[0].x = ...`` would set a field of a copy), in-place writes
of a field reach the folder (read back with ``load_memmap``)."""

from __future__ import annotations

import os

import pytest
import torch

from tensordict import tensorclass
from tensordict.errors import LockedTensorDictError


@tensorclass
class Sample:
    x: torch.Tensor
    s: str = None


def _files(folder) -> dict[str, bytes]:
    out = {}
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as file:
                out[os.path.relpath(os.path.join(root, name), folder)] = file.read()
    return out


def _saved(path) -> Sample:
    return Sample(x=torch.zeros(3), s="orig", batch_size=[3]).memmap(path)


@pytest.mark.parametrize("index", [0, slice(1, None), (Ellipsis, 0)])
@pytest.mark.parametrize("field, value", [("x", None), ("s", "new")])
def test_setting_a_field_of_an_index_view_raises(tmp_path, index, field, value):
    tc = _saved(tmp_path)
    before = _files(tmp_path)
    view = tc[index]
    assert view.is_locked
    with pytest.raises(LockedTensorDictError, match=f"'{field}'"):
        setattr(view, field, torch.ones(view.batch_size) if value is None else value)
    assert _files(tmp_path) == before
    loaded = Sample.load_memmap(tmp_path)
    assert (loaded.x == 0).all() and loaded.s == "orig"


def test_in_place_writes_reach_the_folder(tmp_path):
    tc = _saved(tmp_path)
    tc[1].x.fill_(2.0)  # a view of the file
    tc.set_("s", "new")
    tc[0].set_("x", torch.tensor(1.0))
    loaded = Sample.load_memmap(tmp_path)
    assert loaded.x.tolist() == [1.0, 2.0, 0.0] and loaded.s == "new"
    assert tc.s == "new"


def test_a_copy_is_not_locked(tmp_path):
    tc = _saved(tmp_path)
    copy = tc[torch.tensor([0, 1])]
    copy.x = torch.ones(2)  # a copy, as upstream: its own field
    assert copy.x.tolist() == [1.0, 1.0] and (tc.x == 0).all()
