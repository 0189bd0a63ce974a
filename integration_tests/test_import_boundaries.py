"""Packages meet only at public modules (issue 45).

Every module of every distribution of ``packages/`` and of the example plugins is parsed
(imports at module level, under ``TYPE_CHECKING`` and inside functions alike):

* no module imports a private module (a dotted part starting with ``_``) that another
  distribution ships: plugins use ``tensordict.extending``, ``tensordict.storage``,
  ``tensordict.plugins``... and a plugin building on another uses its public modules;
* tensordict-core imports no module that a plugin ships;
* core compares no value with the name of a first-party package: its only knowledge of
  them is the table ``tensordict.plugins.FIRST_PARTY``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tensordict import plugins

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "integration_tests"
SOURCES = sorted(ROOT.glob("packages/*/src")) + sorted(EXAMPLES.glob("*/src"))
CORE = "tensordict-core"


def _modules() -> dict[str, tuple[str, Path]]:
    """Every module name -> (its distribution folder's name, its file)."""
    found: dict[str, tuple[str, Path]] = {}
    for src in SOURCES:
        for path in src.rglob("*.py"):
            parts = list(path.relative_to(src).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = (src.parent.name, path)
    return found


MODULES = _modules()


def _imported(module: str, path: Path, tree: ast.AST) -> Iterator[tuple[int, str]]:
    """``(line, module name)`` of every import in ``tree``, wherever it sits."""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package[: len(package) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            for alias in node.names:  # `from pkg import sub` imports the module pkg.sub
                full = f"{base}.{alias.name}"
                yield node.lineno, full if full in MODULES else base


def _owner(name: str) -> tuple[str, str] | None:
    """The longest known module that ``name`` starts with, and its distribution."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        prefix = ".".join(parts[:end])
        if prefix in MODULES:
            return prefix, MODULES[prefix][0]
    return None


def _is_private(module: str) -> bool:
    return any(part.startswith("_") and part != "__init__" for part in module.split(".")[1:])


def _violations() -> list[str]:
    found = []
    for module, (dist, path) in sorted(MODULES.items()):
        tree = ast.parse(path.read_text(), str(path))
        for line, name in _imported(module, path, tree):
            owner = _owner(name)
            if owner is None or owner[1] == dist:
                continue
            target, target_dist = owner
            where = f"{path.relative_to(ROOT)}:{line} imports {target} ({target_dist})"
            if _is_private(target):
                found.append(f"private module of another package: {where}")
            if dist == CORE:
                found.append(f"core imports a plugin: {where}")
    return found


def test_the_scan_sees_every_package():
    dists = {dist for dist, _ in MODULES.values()}
    assert {CORE, "tensordict-memmap", "tensordict-nn", "tensordict-h5", "example_plugin",
            "sqlite_plugin", "ops_plugin"} <= dists
    assert "tensordict._td" in MODULES and "tensordict.nn.params" in MODULES


def test_no_import_crosses_a_package_boundary_into_a_private_module():
    assert _violations() == []


def _first_party_names() -> set[str]:
    names = set(plugins.FIRST_PARTY) | set(plugins.SUBPACKAGES)
    return names | {f"tensordict-{extra}" for extra in plugins.FIRST_PARTY}


def test_core_compares_nothing_with_a_plugin_name():
    names = _first_party_names()
    found = []
    for module, (dist, path) in sorted(MODULES.items()):
        if dist != CORE or module == "tensordict.plugins":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
                hits = [o.value for o in operands
                        if isinstance(o, ast.Constant) and o.value in names]
                if hits:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} compares with {hits}")
    assert found == []


@pytest.mark.parametrize(("source", "expected"), [
    ("from tensordict._td import TensorDict", ["private"]),
    ("def f():\n    from tensordict import _td", ["private"]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import tensordict._base",
     ["private"]),
    ("from tensordict.persistent._formats import META_ATTR", ["private"]),
    ("from tensordict.extending import from_entries", []),
    ("from tensordict.persistent.formats import META_ATTR", []),
])
def test_the_scan_catches_each_form_of_import(source, expected):
    path = Path("plugin_under_test.py")
    found = []
    for _line, name in _imported("td_probe.mod", path, ast.parse(source)):
        owner = _owner(name)
        if owner is not None and _is_private(owner[0]):
            found.append("private")
    assert found == expected


def test_every_installed_plugin_declares_this_api_version():
    plugins.list_plugins()  # loads the entry points
    declared = {name: getattr(plugin, "TENSORDICT_PLUGIN_API", None)
                for name, plugin in plugins.plugin_manager().list_name_plugin()}
    assert {"memmap", "nn", "tensorclass", "h5"} <= declared.keys()
    assert {name: versions for name, versions in declared.items()
            if versions is None or plugins.PLUGIN_API_VERSION not in versions} == {}
