"""Checks for plugin packages: installed alone, registered through their entry point.

Each first-party plugin's test suite calls these; a third-party plugin can do the same.

Example:
    >>> from tensordict.plugins import list_plugins
    >>> from tensordict.testing import assert_registered_plugin, plugin_removed
    >>> assert_registered_plugin("memmap", "tensordict-memmap", "tensordict.memmap")
    >>> with plugin_removed("memmap"):
    ...     "memmap" in list_plugins()
    False
    >>> assert_registered_plugin("memmap", "tensordict-memmap", "tensordict.memmap")
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import re
from collections.abc import Iterator

from tensordict import plugins


def _requirement_name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    if match is None:
        raise ValueError(f"cannot read the requirement {requirement!r}")
    return re.sub(r"[-_.]+", "-", match.group()).lower()


def assert_only_declared_installed(distribution: str, prefix: str = "tensordict") -> None:
    """Assert that the installed ``prefix*`` distributions are ``distribution`` and what
    it declares (so its tests prove it works without undeclared siblings)."""
    declared = {_requirement_name(r) for r in importlib.metadata.requires(distribution) or ()}
    installed = {_requirement_name(d.metadata["Name"])
                 for d in importlib.metadata.distributions()}
    ours = {name for name in installed if name.startswith(prefix)}
    unexpected = ours - {distribution} - declared
    assert not unexpected, f"{distribution} is tested beside undeclared {sorted(unexpected)}"
    assert "tensordict-core" in declared, f"{distribution} must declare tensordict-core"


def assert_registered_plugin(plugin_name: str, distribution: str, package: str) -> None:
    """Assert that ``distribution`` registers the plugin ``plugin_name`` through its
    ``tensordict`` entry point, and that ``package`` carries the distribution's version."""
    version = importlib.metadata.version(distribution)
    assert importlib.import_module(package).__version__ == version
    assert plugins.plugin_distributions()[plugin_name] == f"{distribution} {version}"
    entry_points = [ep for ep in importlib.metadata.distribution(distribution).entry_points
                    if ep.group == plugins.ENTRY_POINT_GROUP]
    assert [ep.name for ep in entry_points] == [plugin_name], entry_points
    plugin = plugins.plugin_manager().get_plugin(plugin_name)
    assert plugin is importlib.import_module(entry_points[0].value)


@contextlib.contextmanager
def plugin_removed(plugin_name: str) -> Iterator[object | None]:
    """Unregister the plugin ``plugin_name`` inside the block (to test what users without
    it see), then register it again exactly as it was; yields the plugin (or None)."""
    manager = plugins._manager()
    manager.load_entry_points()
    plugin = manager.get_plugin(plugin_name)
    distribution = manager._distributions.get(plugin_name)
    if plugin is not None:
        manager.unregister(plugin)
    try:
        yield plugin
    finally:
        if plugin is not None:
            manager.register(plugin, name=plugin_name)
            if distribution is not None:
                manager._distributions[plugin_name] = distribution
