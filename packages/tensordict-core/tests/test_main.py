"""``python -m tensordict``: the installation report, a broken plugin reported as broken."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

import pytest
import torch

import tensordict
from tensordict import plugins
from tensordict.__main__ import main
from tensordict._report import collect, format_text


@pytest.fixture(scope="module")
def report_with_broken_plugin(tmp_path_factory):
    """``python -m tensordict --json`` where a distribution on sys.path has two entry
    points: one naming no module, one disabled by the environment variable."""
    folder = tmp_path_factory.mktemp("site")
    info = folder / "td_broken_plugin-0.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: td-broken-plugin\nVersion: 0.3\n")
    (info / "entry_points.txt").write_text(
        "[tensordict]\nbroken = td_broken_plugin_missing_module\noff = td_off_module\n")
    env = {**os.environ, "PYTHONPATH": str(folder), plugins.DISABLED_ENV_VAR: "off"}
    result = subprocess.run([sys.executable, "-m", "tensordict", "--json"], capture_output=True,
                            text=True, timeout=120, env=env, check=True)
    return json.loads(result.stdout)


def test_a_broken_plugin_is_reported_failed_with_its_error(report_with_broken_plugin):
    broken = report_with_broken_plugin["plugins"]["broken"]
    assert broken["status"] == "failed"
    assert broken["distribution"] == "td-broken-plugin 0.3"
    assert broken["entry_point"] == "td_broken_plugin_missing_module"
    assert "ModuleNotFoundError" in broken["error"]
    assert "td_broken_plugin_missing_module" in broken["error"]
    # the distribution providing the entry point is listed beside ours
    assert report_with_broken_plugin["distributions"]["td-broken-plugin"] == "0.3"


def test_a_disabled_plugin_is_reported_disabled(report_with_broken_plugin):
    off = report_with_broken_plugin["plugins"]["off"]
    assert off["status"] == "disabled" and "error" not in off


def test_every_other_plugin_loaded_and_the_environment_is_described(report_with_broken_plugin):
    report = report_with_broken_plugin
    loaded = {name for name, e in report["plugins"].items() if e["status"] == "loaded"}
    assert loaded == set(report["plugins"]) - {"broken", "off"}
    assert report["distributions"]["tensordict-core"] == tensordict.__version__
    assert report["torch"]["version"] == torch.__version__
    assert report["torch"]["cuda"]["available"] == torch.cuda.is_available()
    assert report["plugin_api_version"] == plugins.PLUGIN_API_VERSION


def test_text_report_names_the_failure(report_with_broken_plugin):
    text = format_text(report_with_broken_plugin)
    assert "broken (td-broken-plugin 0.3, td_broken_plugin_missing_module): FAILED" in text
    assert "error: ModuleNotFoundError" in text
    assert f"tensordict-core {tensordict.__version__}" in text
    assert f"plugin API version {plugins.PLUGIN_API_VERSION}" in text


def test_each_installed_plugin_lists_what_it_adds(capsys):
    report = collect()
    for name, label in plugins.plugin_distributions().items():
        entry = report["plugins"][name]
        assert (entry["status"], entry["distribution"]) == ("loaded", label)
        added = [n for kind in ("methods", "top_level_names", "storage_backends")
                 for n in entry.get(kind, [])]
        assert added, f"plugin {name} reports nothing it adds"
    for dist in importlib.metadata.distributions():
        if dist.metadata["Name"].startswith("tensordict"):
            assert report["distributions"][dist.metadata["Name"]] == dist.version
    main([])
    assert capsys.readouterr().out.strip() == format_text(report)
