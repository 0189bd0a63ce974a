"""The plugin manager: discovery, run-time registration and the merged registries.

Plugins are found through the ``tensordict`` entry-point group the first time a
plugin-provided feature is needed, so ``import tensordict`` never imports a plugin.
Hook specs and their contracts live in :mod:`tensordict.hookspecs`.

Example:
    >>> import tensordict
    >>> from tensordict.plugins import hookimpl, register, unregister
    >>> class Shout:
    ...     @hookimpl
    ...     def tensordict_methods(self):
    ...         return {"shout": lambda td: sorted(td.keys())}
    >>> plugin = register(Shout())
    >>> tensordict.TensorDict(a=1).shout()
    ['a']
    >>> unregister(plugin)
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import pluggy

from tensordict import hookspecs

ENTRY_POINT_GROUP = "tensordict"
#: Set to a comma-separated list of entry-point names to keep them from loading.
DISABLED_ENV_VAR = "TENSORDICT_DISABLED_PLUGINS"

hookimpl = pluggy.HookimplMarker("tensordict")

#: Which distribution provides a feature that core knows about but does not ship.
#: Used to turn a missing attribute into an actionable error.
PROVIDED_BY: dict[str, str] = {
    **dict.fromkeys(
        (
            "memmap", "memmap_", "memmap_like", "memmap_refresh_", "load_memmap",
            "load_memmap_", "dumps", "load_", "is_memmap", "saved_path",
            "make_memmap", "make_memmap_from_tensor", "make_memmap_from_storage",
            "MemoryMappedTensor",
        ),
        "memmap",
    ),
    **dict.fromkeys(("tensorclass", "TensorClass", "is_tensorclass"), "tensorclass"),
    **dict.fromkeys(("TensorDictParams",), "nn"),
    **dict.fromkeys(
        (
            "send", "recv", "isend", "irecv", "init_remote", "from_remote_init",
            "broadcast", "all_reduce", "reduce", "all_gather", "gather_and_stack",
            "scatter",
        ),
        "distributed",
    ),
}


def install_hint(feature: str, extra: str) -> str:
    """The message telling which distribution provides ``feature``."""
    return (
        f"{feature} is provided by the tensordict-{extra} package: "
        f"install tensordict-{extra}, or tensordict[{extra}]."
    )


class MissingPluginError(ImportError):
    """A name or module that needs a tensordict plugin which is not installed."""


class MissingMethodError(AttributeError):
    """A method that needs a tensordict plugin which is not installed."""


@runtime_checkable
class StorageBackend(Protocol):
    """What a storage backend offers (see ``tensordict_storage_backends``)."""

    def save(self, td: Any, path: Any, **kwargs: Any) -> Any:
        """Write ``td`` under ``path`` and return the saved collection."""

    def load(self, path: Any, **kwargs: Any) -> Any:
        """Read the collection saved under ``path``."""

    def can_load(self, path: Any) -> bool:
        """Whether ``path`` holds data written by this backend."""


class _Manager(pluggy.PluginManager):
    """A PluginManager whose merged registries follow every (un)registration."""

    def __init__(self) -> None:
        super().__init__(ENTRY_POINT_GROUP)
        self.add_hookspecs(hookspecs)
        self._cache: dict[str, dict[Any, Any]] = {}
        self._entry_points_loaded = False
        self._lock = threading.RLock()

    def register(self, plugin: object, name: str | None = None) -> str | None:
        result = super().register(plugin, name)
        self._cache.clear()
        return result

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        result = super().unregister(plugin, name)
        self._cache.clear()
        return result

    def load_entry_points(self) -> None:
        """Load every plugin of the ``tensordict`` entry-point group (once)."""
        with self._lock:
            if self._entry_points_loaded:
                return
            self._entry_points_loaded = True
            disabled = {n.strip() for n in os.environ.get(DISABLED_ENV_VAR, "").split(",")}
            for name in disabled - {""}:
                self.set_blocked(name)
            try:
                self.load_setuptools_entrypoints(ENTRY_POINT_GROUP)
            except Exception as err:  # a broken plugin must not break tensordict
                warnings.warn(f"a tensordict plugin failed to load: {err!r}", stacklevel=2)
            self.check_pending()
            self._cache.clear()

    def merged(self, hook_name: str) -> dict[Any, Any]:
        """The union of the mappings every plugin returns for ``hook_name``."""
        cached = self._cache.get(hook_name)
        if cached is not None:
            return cached
        self.load_entry_points()
        merged: dict[Any, Any] = {}
        owners: dict[Any, str] = {}
        hook = getattr(self.hook, hook_name)
        for impl in reversed(hook.get_hookimpls()):
            contributed = impl.function()
            for key, value in (contributed or {}).items():
                if key in merged:
                    raise RuntimeError(
                        f"{hook_name}: {key!r} is provided by both plugin "
                        f"{owners[key]!r} and plugin {impl.plugin_name!r}"
                    )
                merged[key] = value
                owners[key] = impl.plugin_name
        self._cache[hook_name] = merged
        return merged


_MANAGER: _Manager | None = None


def plugin_manager() -> pluggy.PluginManager:
    """The one plugin manager of tensordict (entry points are loaded on first use)."""
    global _MANAGER
    if _MANAGER is None:
        _MANAGER = _Manager()
    return _MANAGER


def _manager() -> _Manager:
    plugin_manager()
    assert _MANAGER is not None
    return _MANAGER


def register(plugin: object, name: str | None = None) -> object:
    """Register ``plugin`` at run time and return it (for :func:`unregister`)."""
    _manager().load_entry_points()
    _manager().register(plugin, name)
    return plugin


def unregister(plugin: object) -> None:
    """Remove a plugin registered at run time or loaded from an entry point."""
    _manager().unregister(plugin)


def list_plugins() -> list[str]:
    """Names of the registered plugins (entry-point plugins are loaded first)."""
    manager = _manager()
    manager.load_entry_points()
    return sorted(name for name, _ in manager.list_name_plugin())


def plugin_distributions() -> dict[str, str]:
    """Map each plugin loaded from an entry point to ``"distribution version"``."""
    manager = _manager()
    manager.load_entry_points()
    return {
        manager.get_name(plugin): f"{dist.project_name} {dist.version}"
        for plugin, dist in manager.list_plugin_distinfo()
    }


def _resolve(value: Any) -> Any:
    if isinstance(value, str) and ":" in value:
        module_name, _, attr = value.partition(":")
        module = __import__(module_name, fromlist=[attr])
        return getattr(module, attr)
    return value


def top_level_name(name: str) -> Any:
    """The object a plugin exports as ``tensordict.<name>``; AttributeError if none."""
    names = _manager().merged("tensordict_top_level_names")
    if name in names:
        return _resolve(names[name])
    if name in PROVIDED_BY:
        raise MissingPluginError(install_hint(f"tensordict.{name}", PROVIDED_BY[name]))
    raise AttributeError(f"module 'tensordict' has no attribute {name!r}")


def method(name: str) -> Callable[..., Any] | None:
    """The function a plugin adds as a tensor-collection method, or None."""
    return _manager().merged("tensordict_methods").get(name)


def torch_function(func: Callable[..., Any]) -> Callable[..., Any] | None:
    """A plugin's handler for the torch function ``func``, or None."""
    return _manager().merged("tensordict_torch_functions").get(func)


def storage_backends() -> Mapping[str, StorageBackend]:
    """Every registered storage backend, by name."""
    return _manager().merged("tensordict_storage_backends")


def storage_backend(name: str) -> StorageBackend:
    """The storage backend called ``name``; a clear error when none is installed."""
    backends = storage_backends()
    if name in backends:
        return backends[name]
    if name == "memmap":
        raise MissingPluginError(install_hint("the 'memmap' storage backend", "memmap"))
    raise ValueError(f"unknown storage backend {name!r}; installed: {sorted(backends)}")


def missing_method_error(owner: str, name: str) -> AttributeError:
    """The error for ``owner.name`` when no plugin provides it."""
    if name in PROVIDED_BY:
        return MissingMethodError(install_hint(f"{owner}.{name}()", PROVIDED_BY[name]))
    return AttributeError(f"'{owner}' object has no attribute {name!r}")


#: Subpackages of ``tensordict`` that plugin distributions provide.
SUBPACKAGES = {"memmap": "memmap", "nn": "nn", "tensorclasses": "tensorclass",
               "distributed": "distributed"}


class _MissingSubpackageFinder:
    """Last on ``sys.meta_path``: turns ``import tensordict.nn`` without tensordict-nn
    into an ImportError that says what to install."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> None:
        prefix, _, sub = fullname.partition(".")
        if prefix == "tensordict" and sub in SUBPACKAGES:
            raise MissingPluginError(
                install_hint(f"the module {fullname}", SUBPACKAGES[sub]), name=fullname
            )


def install_subpackage_finder() -> None:
    """Put the missing-subpackage finder at the end of ``sys.meta_path`` (once)."""
    import sys

    if not any(isinstance(f, _MissingSubpackageFinder) for f in sys.meta_path):
        sys.meta_path.append(_MissingSubpackageFinder())
