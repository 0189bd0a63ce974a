"""The example third-party plugin (integration_tests/example_plugin), pip-installed: found
through its entry point, and its ``npz`` backend and ``td.l2_norm()`` work."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from tensordict import TensorDict, plugins


def sample() -> TensorDict:
    return TensorDict(
        obs=torch.arange(12.0).reshape(3, 4),
        steps=torch.arange(3),
        label="walk",
        nested=TensorDict(
            reward=torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64),
            empty=TensorDict(batch_size=[3, 2]),
            deeper=TensorDict(mask=torch.tensor([[True], [False], [True]]), batch_size=[3]),
            batch_size=[3],
        ),
        batch_size=[3],
    )


def test_found_through_its_entry_point():
    dist = importlib.metadata.distribution("tensordict-example-plugin")
    (entry_point,) = [ep for ep in dist.entry_points if ep.group == "tensordict"]
    assert (entry_point.name, entry_point.value) == ("td_example", "td_example_plugin")
    assert "td_example" in plugins.list_plugins()
    assert plugins.plugin_distributions()["td_example"] == "tensordict-example-plugin 0.1.0"
    assert isinstance(plugins.storage_backends()["npz"], plugins.StorageBackend)


@pytest.mark.parametrize(
    "td",
    [sample(), sample()[1], TensorDict(), TensorDict(i=torch.arange(4), batch_size=[4])],
    ids=["nested", "0-dim", "empty", "no-float"],
)
def test_l2_norm_matches_leaf_by_leaf(td):
    squares = [
        (value.double() ** 2).sum()
        for value in td.values(include_nested=True, leaves_only=True)
        if isinstance(value, torch.Tensor) and value.is_floating_point()
    ]
    expected = torch.stack(squares).sum().sqrt() if squares else torch.tensor(0.0)
    torch.testing.assert_close(td.l2_norm().double(), expected.double())
    assert td.l2_norm().shape == ()


@pytest.mark.parametrize("index", [slice(None), 0], ids=["batched", "0-dim"])
def test_npz_round_trip(tmp_path, index):
    td = sample()[index]
    path = tmp_path / "data.npz"
    assert td.save(path, backend="npz") is td
    assert path.is_file() and (tmp_path / "data.npz.json").is_file()
    with np.load(path) as archive:  # a plain NumPy archive that anyone can read
        assert len(archive.files) == 4
    for loaded in (TensorDict.load(path), TensorDict.load(path, backend="npz")):
        assert loaded.batch_size == td.batch_size
        assert set(loaded.keys(True, True)) == set(td.keys(True, True))
        for key, value in td.items(True, True):
            if isinstance(value, torch.Tensor):
                assert loaded[key].dtype == value.dtype
                torch.testing.assert_close(loaded[key], value)
            else:
                assert loaded[key] == td[key]
        assert loaded["nested", "empty"].batch_size == td["nested", "empty"].batch_size


def test_npz_bad_path_writes_nothing(tmp_path):
    with pytest.raises(ValueError, match=r"path ending in \.npz"):
        sample().save(tmp_path / "data.bin", backend="npz")
    assert list(tmp_path.iterdir()) == []
    assert not plugins.storage_backends()["npz"].can_load(tmp_path / "missing.npz")


UNREGISTER = """
import json, tempfile, torch
from tensordict import TensorDict, plugins
td = TensorDict(a=torch.ones(2))
path = tempfile.mkdtemp() + "/x.npz"
td.save(path, backend="npz")
before = [td.l2_norm().item(), "npz" in plugins.storage_backends()]
plugins.unregister("td_example")
after = {"npz": "npz" in plugins.storage_backends(), "plugins": plugins.list_plugins()}
for name, call in [("method", lambda: td.l2_norm()), ("load", lambda: TensorDict.load(path)),
                   ("save", lambda: td.save(path, backend="npz"))]:
    try:
        call()
        after[name] = "no error"
    except Exception as err:
        after[name] = type(err).__name__ + ": " + str(err)
print(json.dumps([before, after]))
"""


def test_unregister_removes_method_and_backend():
    result = subprocess.run([sys.executable, "-c", UNREGISTER], capture_output=True, text=True,
                            timeout=120, check=True)
    before, after = json.loads(result.stdout.splitlines()[-1])
    assert before == [pytest.approx(2**0.5), True]
    assert after["npz"] is False and "td_example" not in after["plugins"]
    assert after["method"] == "AttributeError: 'TensorDict' object has no attribute 'l2_norm'"
    assert after["load"].startswith(("ValueError", "MissingPluginError"))
    assert "x.npz" in after["load"]
    assert after["save"].startswith("ValueError: unknown storage backend 'npz'")


FIRST_LOOKUP = """
import json, torch
from tensordict import TensorCollection, TensorDict
waiting = ["__getattr__" in vars(TensorCollection), "__getattr__" in vars(type(TensorCollection))]
norm = TensorDict(a=torch.ones(2)).l2_norm().item()  # the plugin's name, not loaded yet
loaded = ["__getattr__" in vars(TensorCollection), "__getattr__" in vars(type(TensorCollection)),
          "l2_norm" in vars(TensorCollection)]
print(json.dumps([waiting, norm, loaded]))
"""


def test_third_party_method_found_on_first_lookup():
    # its name is unknown until the plugin loads: TensorCollection keeps a __getattr__
    # (on the class and on its metaclass) that loads it, then drops it
    result = subprocess.run([sys.executable, "-c", FIRST_LOOKUP], capture_output=True,
                            text=True, timeout=120, check=True)
    waiting, norm, loaded = json.loads(result.stdout.splitlines()[-1])
    assert waiting == [True, True]
    assert norm == pytest.approx(2**0.5)
    assert loaded == [False, False, True]
