"""Every public name of every package appears in the API reference (docs/reference/*.md).

The reference pages list names by hand, grouped for readers; these tests catch a name
added to a package's ``__all__`` (or contributed through a plugin hook) but not to the
reference, and a name listed in the reference that no longer exists.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import tensordict
from tensordict import plugins

REFERENCE = Path(__file__).resolve().parents[1] / "docs" / "reference"

MODULES = [
    "tensordict",
    "tensordict.memmap",
    "tensordict.tensorclasses",
    "tensordict.nn",
    "tensordict.nn.distributions",
    "tensordict.nn.functional_modules",
    "tensordict.distributed",
]

# modules documented with automodule: every public name is rendered from the module
AUTOMODULES = ["tensordict.hookspecs", "tensordict.plugins", "tensordict.extending",
               "tensordict.errors"]


def reference_text() -> str:
    pages = sorted(REFERENCE.glob("*.md"))
    assert len(pages) >= 8, f"reference pages missing in {REFERENCE}: {pages}"
    return "\n".join(page.read_text() for page in pages)


def documented_names(text: str) -> set[str]:
    """Names the reference documents: autosummary entries, ``.. auto*::`` targets and
    names in backticks (prose such as "`tensordict.__version__` is ..."), each by its
    last dotted component."""
    names = set(re.findall(r"^   ([A-Za-z_]\w*)$", text, flags=re.MULTILINE))
    names.update(re.findall(r"^\.\. auto\w+:: (?:[\w.]+\.)?(\w+)", text, flags=re.MULTILINE))
    prose = re.sub(r"^```.*$", "", text, flags=re.MULTILINE)  # fences would pair backticks
    for quoted in re.findall(r"`([^`\n]+)`", prose):
        names.update(re.findall(r"(?:^|\.)([A-Za-z_]\w*)(?=\(|$)", quoted))
    return names


@pytest.mark.parametrize("module_name", MODULES)
def test_every_name_of_all_is_in_the_reference(module_name: str) -> None:
    module = importlib.import_module(module_name)
    names = documented_names(reference_text())
    missing = [name for name in module.__all__ if name not in names]
    assert not missing, f"{module_name}.__all__ names absent from docs/reference: {missing}"


def test_plugin_contributions_are_in_the_reference() -> None:
    """Top-level names and methods that the installed first-party plugins add."""
    tensordict.TensorDict().memmap_like  # noqa: B018 - loads the entry points
    names = documented_names(reference_text())
    contributed: set[str] = set()
    for _name, plugin in plugins.plugin_manager().list_name_plugin():
        if not getattr(plugin, "__name__", "").startswith("tensordict."):
            continue
        for hook in ("tensordict_methods", "tensordict_top_level_names"):
            implementation = getattr(plugin, hook, None)
            if implementation is not None:
                contributed.update(implementation())
    assert {"memmap", "send", "tensorclass", "TensorDictParams"} <= contributed
    # a dotted name is an attribute of a module of core (prototype.fx.symbolic_trace)
    missing = sorted(name for name in contributed if name.rsplit(".", 1)[-1] not in names)
    assert not missing, f"plugin-provided names absent from docs/reference: {missing}"


@pytest.mark.parametrize("module_name", AUTOMODULES)
def test_automodules_are_rendered(module_name: str) -> None:
    assert f".. automodule:: {module_name}" in reference_text()


def test_autosummary_entries_exist() -> None:
    """Each name listed under ``.. currentmodule:: X`` in an autosummary resolves."""
    missing = []
    for page in sorted(REFERENCE.glob("*.md")):
        module = None
        in_summary = False
        for line in page.read_text().splitlines():
            if line.startswith(".. currentmodule::"):
                module = importlib.import_module(line.split("::")[1].strip())
            elif line.startswith(".. autosummary::"):
                in_summary = True
            elif in_summary and re.fullmatch(r"   [A-Za-z_]\w*", line):
                if not hasattr(module, line.strip()):
                    missing.append(f"{page.name}: {module.__name__}.{line.strip()}")
            elif line.startswith("```"):
                in_summary = False
    assert not missing, f"autosummary entries that do not resolve: {missing}"
