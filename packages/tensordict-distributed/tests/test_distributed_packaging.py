"""tensordict-distributed installed beside core: it imports, and registers through its entry point.

The tox env `distributed` sets TENSORDICT_ONLY=distributed: there the first test also proves that
only this package and what it declares are installed."""

import importlib
import importlib.metadata
import os

import pytest
from packaging.requirements import Requirement

import tensordict.distributed
from tensordict import plugins

DISTRIBUTION = "tensordict-distributed"


@pytest.mark.skipif(os.environ.get("TENSORDICT_ONLY") != "distributed", reason="not the tox env")
def test_only_what_is_declared_is_installed():
    requires = importlib.metadata.requires(DISTRIBUTION) or ()
    declared = {Requirement(r).name for r in requires}
    installed = {d.metadata["Name"] for d in importlib.metadata.distributions()}
    ours = {name for name in installed if name.startswith("tensordict")}
    assert ours == {DISTRIBUTION} | (declared & ours)
    assert "tensordict-core" in declared


def test_registered_through_its_entry_point():
    version = importlib.metadata.version(DISTRIBUTION)
    assert tensordict.distributed.__version__ == version
    assert plugins.plugin_distributions()["distributed"] == f"{DISTRIBUTION} {version}"
    entry_points = importlib.metadata.distribution(DISTRIBUTION).entry_points
    (entry_point,) = [ep for ep in entry_points if ep.group == "tensordict"]
    assert entry_point.value == "tensordict.distributed._plugin"
    plugin = plugins.plugin_manager().get_plugin("distributed")
    assert plugin is importlib.import_module(entry_point.value)
