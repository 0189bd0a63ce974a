"""What upstream's PersistentTensorDict refuses or guesses, on both formats: ops that
would act on memory the entries do not live in, the exception classes of read-only
writes and wrong batch sizes, a dict's batch size, and a row written back."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict
from tensordict.persistent import PersistentTensorDict


def sample() -> TensorDict:
    return TensorDict({"obs": torch.arange(12.0).view(4, 3), "name": "cartpole",
                       "next": {"reward": torch.arange(4.0).view(4, 1)}}, [4])


@pytest.fixture
def ptd(tmp_path, backend):
    out = PersistentTensorDict.from_dict(sample(), tmp_path / f"data.{backend}",
                                         backend=backend)
    yield out
    out.close()


def reopened(ptd: PersistentTensorDict, **options) -> PersistentTensorDict:
    ptd.close()
    return PersistentTensorDict(filename=ptd.filename, backend=ptd._format.name, **options)


def test_memory_ops_are_refused_and_change_nothing(ptd):
    assert not ptd.is_contiguous() and ptd.contiguous().is_contiguous()
    with pytest.raises(NotImplementedError, match="share_memory_"):
        ptd.share_memory_()
    with pytest.raises(RuntimeError, match="memmap"):
        ptd.memmap_()
    with pytest.raises(RuntimeError, match="pin memory"):
        ptd.pin_memory()
    with reopened(ptd) as again:
        assert not again.is_locked and not again.is_shared()
        assert torch.equal(again["obs"], sample()["obs"])


def test_read_only_writes_raise_upstreams_classes(ptd):
    with reopened(ptd, mode="r") as again:
        for write in (lambda: again.__setitem__("x", torch.zeros(4)),
                      lambda: again.set_("obs", torch.ones(4, 3)),
                      lambda: again.__delitem__("obs")):
            with pytest.raises(ValueError, match="read-only") as info:  # as upstream's
                write()
            assert isinstance(info.value, OSError)
    with reopened(ptd) as again:
        assert sorted(again.keys()) == ["name", "next", "obs"]
        assert torch.equal(again["obs"], sample()["obs"])


def test_a_batch_size_the_arrays_lack_raises_upstreams_class(ptd):
    with pytest.raises(ValueError, match="batch dimension mismatch"):
        ptd.batch_size = [5]
    with pytest.raises(ValueError, match="batch size and array size mismatch") as info:
        reopened(ptd, batch_size=[3])
    assert isinstance(info.value, RuntimeError)
    with reopened(ptd, mode="r+") as again:  # the failed open closed the file
        assert again.batch_size == torch.Size([4])


@pytest.mark.parametrize("options, batch", [({}, [3, 2]), ({"batch_dims": 1}, [3]),
                                            ({"batch_size": [3]}, [3])])
def test_a_dict_gets_the_leading_dims_its_values_share(tmp_path, backend, options, batch):
    path = tmp_path / f"dict.{backend}"
    PersistentTensorDict.from_dict({"a": torch.zeros(3, 2), "n": {"b": torch.ones(3, 2, 5)}},
                                   path, backend=backend, **options).close()
    with PersistentTensorDict(filename=path, backend=backend) as again:
        assert again.batch_size == torch.Size(batch)
        assert torch.equal(again["n", "b"], torch.ones(3, 2, 5))


def test_a_row_read_back_writes_its_tensors(ptd):
    row = sample()[0]  # holds "cartpole" as str, the file holds it (bytes from HDF5)
    row["obs"] += 100
    ptd[2] = row
    with reopened(ptd) as again:
        assert again["obs"][2].tolist() == [100.0, 101.0, 102.0]
        assert again["obs"][1].tolist() == [3.0, 4.0, 5.0]


def test_update__checks_non_tensor_entries_as_every_collection(ptd, read_text):
    from tensordict import NonTensorStack

    with pytest.raises(RuntimeError, match="NonTensorStack"):  # as upstream's (and dense)
        ptd.update_({"name": NonTensorStack("p", "q", "r", "s"),
                     "obs": torch.ones(4, 3)})
    with pytest.raises(TypeError, match='"s"') as info:  # upstream: TypeError for a str
        ptd["next"][0].update_({"s": "new"})
    assert isinstance(info.value, KeyError)
    ptd.update_({"name": "other"})  # a string over a string lands
    with reopened(ptd) as again:
        assert again["name"] == read_text("other")
        assert torch.equal(again["obs"], sample()["obs"])
        assert sorted(again["next"].keys()) == ["reward"]
