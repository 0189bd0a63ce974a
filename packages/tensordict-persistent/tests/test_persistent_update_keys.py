"""``keys_to_update`` on an h5 file: a key selects its whole subtree, read back from a
freshly opened file."""

import pytest
import torch

from tensordict import TensorDict

PersistentTensorDict = pytest.importorskip("tensordict.persistent").PersistentTensorDict
pytest.importorskip("h5py")


def _write(path):
    data = TensorDict({("agents", "obs"): torch.zeros(3, 2), "x": torch.zeros(3)}, [3])
    return PersistentTensorDict.from_dict(data, filename=str(path))


def _reopened(path):
    store = PersistentTensorDict.from_h5(str(path))
    try:
        return store["agents", "obs"].sum().item(), store["x"].sum().item()
    finally:
        store.close()


@pytest.mark.parametrize("key", ["agents", ("agents",), ("agents", "obs")])
def test_update__writes_the_subtree_of_a_key_into_the_file(tmp_path, key):
    path = tmp_path / "f.h5"
    store = _write(path)
    store.update_(TensorDict({("agents", "obs"): torch.ones(3, 2), "x": torch.ones(3)}, [3]),
                  keys_to_update=[key])
    store.close()
    assert _reopened(path) == (6.0, 0.0)


@pytest.mark.parametrize("key", ["agents", ("agents", "obs")])
def test_update_at__writes_the_subtree_of_a_key_into_the_file(tmp_path, key):
    path = tmp_path / "f.h5"
    store = _write(path)
    store.update_at_(TensorDict({("agents", "obs"): torch.ones(2), "x": torch.ones(())}, []), 1,
                     keys_to_update=[key])
    store.close()
    assert _reopened(path) == (2.0, 0.0)


def test_update__of_a_selected_leaf_the_file_lacks_raises_and_writes_nothing(tmp_path):
    path = tmp_path / "f.h5"
    store = _write(path)
    source = TensorDict({("agents", "new"): torch.ones(3), "x": torch.ones(3)}, [3])
    with pytest.raises(KeyError, match="new"):
        store.update_(source, keys_to_update=["agents", "x"])
    store.close()
    assert _reopened(path) == (0.0, 0.0)
