"""tensordict-core installed alone: no plugin is importable, and asking for one says what
to install. The tox env ``core`` sets TENSORDICT_ONLY=core so the first test proves
that env really holds core alone; elsewhere each test runs only for absent plugins."""

from __future__ import annotations

import importlib
import importlib.metadata
import os

import pytest
import torch

import tensordict
from tensordict import TensorDict, plugins

CORE_ALONE = os.environ.get("TENSORDICT_ONLY") == "core"


def _installed(distribution: str) -> bool:
    try:
        importlib.metadata.distribution(distribution)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.skipif(not CORE_ALONE, reason="only in the tox env that installs core alone")
def test_no_plugin_installed():
    names = {dist.metadata["Name"] for dist in importlib.metadata.distributions()}
    assert "tensordict-core" in names
    assert not {n for n in names if n.startswith("tensordict") and n != "tensordict-core"}
    assert plugins.list_plugins() == []
    assert plugins.plugin_distributions() == {}
    assert dict(plugins.storage_backends()) == {}


@pytest.mark.parametrize(("module", "extra"), sorted(plugins.SUBPACKAGES.items()))
def test_missing_subpackage_names_the_distribution(module, extra):
    if _installed(f"tensordict-{extra}"):
        pytest.skip(f"tensordict-{extra} is installed")
    hint = f"install tensordict-{extra}, or tensordict\\[{extra}\\]"
    with pytest.raises(ImportError, match=hint):
        importlib.import_module(f"tensordict.{module}")
    with pytest.raises(ModuleNotFoundError, match=f"tensordict-{extra}") as info:
        exec(f"import tensordict.{module}.sub", {})
    assert info.value.name == f"tensordict.{module}"
    with pytest.raises(pytest.skip.Exception, match=f"tensordict-{extra}"):
        pytest.importorskip(f"tensordict.{module}")


@pytest.mark.skipif(_installed("tensordict-memmap"), reason="tensordict-memmap is installed")
def test_missing_memmap_features():
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    with pytest.raises(plugins.MissingMethodError, match=r"TensorDict\.memmap\(\) is provided"):
        td.memmap()
    with pytest.raises(AttributeError, match="install tensordict-memmap"):
        TensorDict.load_memmap("somewhere")
    with pytest.raises(ImportError, match="install tensordict-memmap"):
        from tensordict import MemoryMappedTensor  # noqa: F401
    with pytest.raises(ImportError, match="'memmap' storage backend .* tensordict-memmap"):
        td.save("somewhere")
    with pytest.raises(ImportError, match="no storage backend is installed"):
        TensorDict.load("somewhere")
    assert td["a"].shape == (2, 3) and td.batch_size == (2,)  # nothing changed


def test_unknown_attribute_is_a_plain_attribute_error():
    td = TensorDict()
    with pytest.raises(AttributeError) as info:
        td.definitely_not_a_method
    assert not isinstance(info.value, plugins.MissingMethodError)
    with pytest.raises(AttributeError, match="definitely_not_a_name"):
        tensordict.definitely_not_a_name
