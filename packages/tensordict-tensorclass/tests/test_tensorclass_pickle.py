"""Pickling, copies, DataLoader workers and saving tensorclasses on disk."""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader

sys.path.insert(0, str(Path(__file__).parent))
from tensorclass_test_classes import (  # noqa: E402
    Decorated,
    FrozenDecorated,
    FrozenPoint,
    Inner,
    Outer,
    Samples,
)


def make() -> Outer:
    return Outer(inner=Inner(x=torch.arange(3.0), label="a", batch_size=[3]),
                 y=torch.ones(3, 2), extra={"any": "object"}, batch_size=[3])


@pytest.mark.parametrize("build", [
    make,
    lambda: FrozenPoint(xy=torch.zeros(2, 2), name="q", batch_size=[2]),
    lambda: Decorated(image=torch.ones(2, 3), label=torch.arange(2), batch_size=[2]),
    lambda: FrozenDecorated(image=torch.ones(2), batch_size=[2]),
])
def test_pickle_round_trip(build):
    obj = build()
    back = pickle.loads(pickle.dumps(obj))
    assert type(back) is type(obj)
    assert (back == obj).all()
    assert back.is_locked == obj.is_locked
    assert back.__dict__ is back._tensordict._tensordict


def test_pickle_keeps_nested_classes_and_non_tensors():
    back = pickle.loads(pickle.dumps(make()))
    assert type(back.inner) is Inner and back.inner.label == "a"
    assert back.extra == {"any": "object"} and back.td is None


def test_frozen_stays_frozen_after_unpickling():
    back = pickle.loads(pickle.dumps(FrozenDecorated(image=torch.ones(2))))
    with pytest.raises(Exception, match="cannot assign to field 'image'"):
        back.image = torch.zeros(2)


def test_copy_shares_and_deepcopy_copies():
    obj = make()
    shallow = copy.copy(obj)
    deep = copy.deepcopy(obj)
    assert shallow.y is obj.y and shallow._tensordict is not obj._tensordict
    assert deep.y is not obj.y and torch.equal(deep.y, obj.y)
    assert deep.inner.x is not obj.inner.x and type(deep.inner) is Inner
    shallow.y = torch.zeros(3, 2)
    assert torch.equal(obj.y, torch.ones(3, 2))  # the structure is not shared


@pytest.mark.parametrize("collate_fn", [None, torch.stack])
def test_dataloader_workers_send_instances(collate_fn):
    loader = DataLoader(Samples(6), batch_size=3, num_workers=2, collate_fn=collate_fn)
    batches = list(loader)
    assert [type(b) for b in batches] == [Outer, Outer]
    assert all(type(b.inner) is Inner for b in batches)
    assert torch.equal(torch.cat([b.inner.x for b in batches]), torch.arange(6.0))
    assert torch.equal(batches[1].y, torch.arange(6.0, 12.0).reshape(3, 2))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_an_instance_is_a_dataset(num_workers):
    data = Samples(6).data
    batches = list(DataLoader(data, batch_size=4, num_workers=num_workers))
    assert [type(b) for b in batches] == [Outer, Outer]
    assert torch.equal(batches[0].inner.x, data.inner.x[:4])
    assert torch.equal(batches[1].y, data.y[4:])
    shuffled = next(iter(DataLoader(data, batch_size=6, shuffle=True)))
    assert sorted(shuffled.inner.x.tolist()) == data.inner.x.tolist()
