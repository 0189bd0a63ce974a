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
    >>> vars(tensordict.TensorCollection)["shout"].__name__  # a plain class attribute
    '<lambda>'
    >>> unregister(plugin)
    >>> "shout" in vars(tensordict.TensorCollection)
    False
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import os
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import pluggy

from tensordict import hookspecs
from tensordict.hookspecs import StorageBackend

ENTRY_POINT_GROUP = "tensordict"
#: Set to a comma-separated list of entry-point names to keep them from loading.
DISABLED_ENV_VAR = "TENSORDICT_DISABLED_PLUGINS"

hookimpl = pluggy.HookimplMarker("tensordict")

#: The version of the plugin interface (the hooks, :mod:`tensordict.extending`,
#: :mod:`tensordict.storage` and this module), raised when one of their names goes or
#: changes meaning. A plugin lists the versions it works with in a module (or object)
#: attribute ``TENSORDICT_PLUGIN_API``, checked when it registers.
PLUGIN_API_VERSION = 1

#: The first-party distributions ``tensordict-<extra>``, and what each provides: the one
#: place core knows of them, used for install hints when one is missing and for the
#: method placeholders that load the plugins on first use. Per extra: ``methods`` of
#: tensor collections, ``names`` of the ``tensordict`` namespace (dotted: of one of its
#: modules), storage ``backends``, ``modules`` (subpackages ``tensordict.<sub>``; those of
#: ``attributes`` are attributes of ``tensordict`` once imported, as upstream's) and
#: ``importable`` classes (imported without the plugin, as upstream's without their
#: optional dependency; using one raises the hint).
FIRST_PARTY: dict[str, dict[str, tuple[str, ...]]] = {
    "memmap": {
        "methods": (
            "memmap", "memmap_", "memmap_like", "memmap_refresh_", "load_memmap",
            "load_memmap_", "dumps", "load_", "is_memmap", "saved_path", "make_memmap",
            "make_memmap_from_tensor", "make_memmap_from_storage", "pack",
        ),
        "names": ("MemoryMappedTensor",),
        "backends": ("memmap",),
        "modules": ("memmap",),
    },
    "tensorclass": {
        "methods": ("attrs",),
        "names": ("tensorclass", "TensorClass", "TensorAttrs", "from_dataclass"),
        "modules": ("tensorclasses", "tensorclass"),
    },
    "nn": {
        "names": ("TensorDictParams", "prototype.fx.symbolic_trace"),
        "modules": ("nn",),
        "attributes": ("nn",),
    },
    "distributed": {
        "methods": (
            "send", "recv", "isend", "irecv", "asend", "arecv", "init_remote",
            "from_remote_init", "broadcast", "all_reduce", "reduce", "all_gather",
            "gather_and_stack", "scatter",
        ),
        "modules": ("distributed",),
    },
    "persistent": {"modules": ("persistent",), "attributes": ("persistent",)},
    "h5": {
        "methods": ("from_h5", "to_h5"),
        "backends": ("h5",),
        "modules": ("h5",),
        "importable": ("PersistentTensorDict",),
    },
    "zarr": {"methods": ("from_zarr", "to_zarr"), "backends": ("zarr",), "modules": ("zarr",)},
    "redis": {
        "methods": ("to_store",),
        "backends": ("redis",),
        "modules": ("store",),
        "attributes": ("store",),
        "importable": ("TensorDictStore", "LazyStackedTensorDictStore"),
    },
    "safetensors": {
        "methods": ("from_safetensors", "to_safetensors"),
        "backends": ("safetensors",),
        "modules": ("safetensors",),
    },
    "tabular": {
        "methods": (
            "from_parquet", "from_csv", "from_json", "from_pandas", "to_parquet", "to_csv",
            "to_json", "to_pandas", "to_arrow", "to_mds",
        ),
        "names": ("from_arrow",),
        "modules": ("tabular",),
    },
}


def _provided(kind: str) -> dict[str, str]:
    """Each feature of ``kind`` in :data:`FIRST_PARTY`, mapped to its extra."""
    return {feature: extra for extra, features in FIRST_PARTY.items()
            for feature in features.get(kind, ())}


#: Views of :data:`FIRST_PARTY`: the methods; every feature named by attribute (methods
#: and names); the subpackages; the storage backends; the importable classes.
PLUGIN_METHODS: dict[str, str] = _provided("methods")
PROVIDED_BY: dict[str, str] = {**PLUGIN_METHODS, **_provided("names")}
SUBPACKAGES: dict[str, str] = _provided("modules")
#: The subpackages that are attributes of ``tensordict`` (imported on first use), and
#: those whose attribute is a top-level name instead (``tensordict.tensorclass``: the
#: module path of upstream, and the decorator).
ATTRIBUTE_MODULES: frozenset[str] = frozenset(_provided("attributes"))
NAMED_LIKE_MODULES: frozenset[str] = frozenset(SUBPACKAGES.keys() & _provided("names").keys())
_BACKENDS = _provided("backends")
_IMPORTABLE = _provided("importable")


def install_hint(feature: str, extra: str) -> str:
    """The message telling which distribution provides ``feature``."""
    return (
        f"{feature} is provided by the tensordict-{extra} package: "
        f"install tensordict-{extra}, or tensordict[{extra}]."
    )


class MissingPluginError(ModuleNotFoundError):
    """A name or module that needs a tensordict plugin which is not installed.

    A ``ModuleNotFoundError`` (so an ``ImportError``): ``pytest.importorskip`` and
    ``except ModuleNotFoundError`` treat a missing plugin like any missing package.
    """


class MissingMethodError(AttributeError):
    """A method that needs a tensordict plugin which is not installed."""


class PluginAPIVersionError(ValueError):
    """A plugin made for other versions of the plugin API than this tensordict-core's."""


def check_api_version(plugin: object, name: str | None = None) -> None:
    """Raise :class:`PluginAPIVersionError` unless ``plugin`` works with this core's
    :data:`PLUGIN_API_VERSION`: its ``TENSORDICT_PLUGIN_API`` (one version, or several)
    must name it. A plugin that declares none is taken to work with any.

    >>> import types
    >>> check_api_version(types.SimpleNamespace(TENSORDICT_PLUGIN_API=(PLUGIN_API_VERSION,)))
    >>> check_api_version(types.SimpleNamespace(TENSORDICT_PLUGIN_API=0), "old")
    Traceback (most recent call last):
        ...
    tensordict.plugins.PluginAPIVersionError: tensordict plugin 'old' supports the plugin API
    version(s) [0], but this tensordict-core provides version 1: install a version of ...
    """
    supported = getattr(plugin, "TENSORDICT_PLUGIN_API", None)
    if supported is None:
        return
    versions = [supported] if isinstance(supported, int) else list(supported)
    if PLUGIN_API_VERSION not in versions:
        label = name if name is not None else getattr(plugin, "__name__", repr(plugin))
        raise PluginAPIVersionError(
            f"tensordict plugin {label!r} supports the plugin API version(s) {versions}, but "
            f"this tensordict-core provides version {PLUGIN_API_VERSION}: install a version "
            f"of the plugin made for it"
        )


class _Manager(pluggy.PluginManager):
    """A PluginManager whose merged registries follow every (un)registration.

    Registering a plugin calls its hooks once: a plugin whose hook raises, or that
    claims a name another plugin already provides, is refused, so the merged
    registries are always consistent.
    """

    def __init__(self) -> None:
        super().__init__(ENTRY_POINT_GROUP)
        self.add_hookspecs(hookspecs)
        self._cache: dict[str, dict[Any, Any]] = {}
        #: the class the plugin methods are set on (see :func:`host_methods`), the
        #: classes below it with their own ``__getattr__``, and the names set on each
        self._host: type | None = None
        self._forwarding: list[type] = []
        self._installed: list[tuple[type, str]] = []
        self._distributions: dict[str, str] = {}
        self._entry_points_loaded = False
        self._lock = threading.RLock()

    def register(self, plugin: object, name: str | None = None) -> str | None:
        check_api_version(plugin, name)
        with self._lock:
            result = super().register(plugin, name)
            try:
                self._invalidate()
                for hook_name in HOOK_NAMES:
                    self.merged(hook_name)
            except Exception:
                super().unregister(plugin)
                self._invalidate()
                raise
            return result

    def unregister(self, plugin: object | None = None, name: str | None = None) -> Any:
        with self._lock:
            name = name if name is not None else self.get_name(plugin)
            result = super().unregister(plugin, name)
            self._distributions.pop(name, None)
            self._invalidate()
            return result

    def load_entry_points(self) -> None:
        """Load every plugin of the ``tensordict`` entry-point group (once).

        A plugin that fails to import or to register only warns: a broken plugin never
        breaks tensordict. Names listed in ``TENSORDICT_DISABLED_PLUGINS`` are skipped.
        """
        with self._lock:
            if self._entry_points_loaded:
                return
            self._entry_points_loaded = True
            disabled = {n.strip() for n in os.environ.get(DISABLED_ENV_VAR, "").split(",")}
            for name in disabled - {""}:
                self.set_blocked(name)
            for dist in importlib.metadata.distributions():
                for entry_point in dist.entry_points:
                    if entry_point.group != ENTRY_POINT_GROUP:
                        continue
                    self._load_entry_point(entry_point, dist)
            self.check_pending()
            self._invalidate()
            _set_fallbacks(self._host, False)

    def _load_entry_point(
        self, entry_point: importlib.metadata.EntryPoint, dist: importlib.metadata.Distribution
    ) -> None:
        name = entry_point.name
        if self.has_plugin(name) or self.is_blocked(name):
            return
        label = f"{dist.metadata['Name']} {dist.version}"
        try:
            plugin = entry_point.load()
            self.register(plugin, name=name)
        except Exception as err:  # a broken plugin must not break tensordict
            warnings.warn(
                f"tensordict plugin {name!r} ({label}) failed to load and is ignored: {err!r}",
                RuntimeWarning,
                stacklevel=4,
            )
            return
        self._distributions[name] = label

    def _invalidate(self) -> None:
        """Forget the merged registries; once the entry points are loaded, set the
        plugin methods on the classes again at once (else they wait as placeholders)."""
        self._cache.clear()
        self._set_methods({})
        if self._entry_points_loaded:
            self.merged("tensordict_methods")

    def _set_methods(self, methods: dict[str, Any]) -> None:
        """Make the host class offer ``methods`` as its own functions (found by the
        ordinary attribute lookup, with no ``__getattr__``), and every other first-party
        method name as a placeholder :class:`_PluginAttribute`. Classes below the host
        with their own ``__getattr__`` get a forwarding :class:`_PluginAttribute` for
        each name, so that their ``__getattr__`` is asked first."""
        host = self._host
        if host is None:
            return
        installed = set(self._installed)
        wanted: dict[tuple[type, str], Any] = {}
        for name in methods.keys() | PLUGIN_METHODS.keys():
            if name.startswith("_") or ((host, name) not in installed and name in vars(host)):
                continue
            function = methods.get(name)
            wanted[host, name] = _PluginAttribute(name) if function is None else function
            for cls in self._forwarding:
                if (cls, name) in installed or name not in vars(cls):
                    wanted[cls, name] = _PluginAttribute(name, forward=True)
        # replaced in place, removed only when gone: a lookup in another thread never
        # finds a name missing on the way
        for (cls, name), attribute in wanted.items():
            setattr(cls, name, attribute)
        for cls, name in installed - wanted.keys():
            delattr(cls, name)
        self._installed = list(wanted)

    def add_forwarding_class(self, cls: type) -> None:
        """Register a class below the host that has its own ``__getattr__``."""
        with self._lock:
            self._forwarding.append(cls)
            self._invalidate()

    def merged(self, hook_name: str) -> dict[Any, Any]:
        """The union of the mappings every plugin returns for ``hook_name``."""
        cached = self._cache.get(hook_name)
        if cached is not None:
            return cached
        self.load_entry_points()
        merged: dict[Any, Any] = {}
        owners: dict[Any, str] = {}
        hook = getattr(self.hook, hook_name)
        for impl in hook.get_hookimpls():  # in registration order
            contributed = impl.function()
            for key, value in (contributed or {}).items():
                if key in merged:
                    raise ValueError(
                        f"{hook_name}: plugin {impl.plugin_name!r} provides {key!r}, "
                        f"which plugin {owners[key]!r} already provides"
                    )
                merged[key] = value
                owners[key] = impl.plugin_name
        self._cache[hook_name] = merged
        if hook_name == "tensordict_methods":
            self._set_methods(merged)
        return merged


class _PluginAttribute:
    """A plugin method name where it cannot be the plain function (see
    :meth:`_Manager._set_methods`): a first-party method not resolved yet, or whose
    package is missing (the install hint), or, with ``forward``, any plugin method on a
    class with its own ``__getattr__``, asked first (it may forward the name elsewhere).

    Not callable, so that code copying the callable attributes of TensorDict (tensorclass
    forwarding) leaves plugin methods alone. (The module docstring shows a plugin method
    set on the class.)
    """

    __slots__ = ("name", "forward")

    def __init__(self, name: str, forward: bool = False) -> None:
        self.name, self.forward = name, forward

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        cls = owner if obj is None else type(obj)
        if self.forward and obj is not None:
            try:
                return cls.__getattr__(obj, self.name)
            except AttributeError:
                pass
        return resolve_method(obj, cls, self.name)


def resolve_method(obj: Any, cls: type, name: str) -> Any:
    """The plugin method ``name`` bound to ``obj`` (to ``cls`` when ``obj`` is None),
    loading the plugins first; the install hint, or an AttributeError, if none gives it."""
    if name.startswith("__") or (obj is not None and name.startswith("_")):
        raise AttributeError(f"{cls.__name__!r} object has no attribute {name!r}")
    function = method(name)
    if function is None:
        raise missing_method_error(cls.__name__, name)
    if obj is None and not isinstance(function, classmethod):
        return function
    return function.__get__(obj, cls)


def _instance_fallback(self: Any, name: str) -> Any:
    return resolve_method(self, type(self), name)


def _class_fallback(cls: type, name: str) -> Any:
    return resolve_method(None, cls, name)


def _set_fallbacks(host: type | None, third_party: bool) -> None:
    """Give ``host`` (and its metaclass) a ``__getattr__`` that loads the plugins while
    ``third_party`` entry points, whose method names are not known before loading, wait;
    take it away otherwise (it costs every attribute lookup CPython's fast path)."""
    if host is None:
        return
    for cls, fallback in ((host, _instance_fallback), (type(host), _class_fallback)):
        if third_party:
            cls.__getattr__ = fallback
        elif vars(cls).get("__getattr__") is fallback:
            del cls.__getattr__


#: Every hook of :mod:`tensordict.hookspecs`.
HOOK_NAMES = tuple(name for name in vars(hookspecs) if name.startswith("tensordict_"))

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


def host_methods(cls: type) -> None:
    """Set the plugin methods on ``cls`` (``tensordict`` passes TensorCollection at
    import): they are then found as the class's own attributes are, and follow every
    (un)registration. Until the entry points are loaded, first-party method names are
    placeholders that load them, and a third-party entry point, whose names are not
    known yet, makes ``cls`` fall back to loading them on an unknown name.

    >>> from tensordict import TensorCollection
    >>> _manager()._host is TensorCollection
    True
    """
    manager = _manager()
    with manager._lock:
        manager._host = cls
        manager._invalidate()
        if not manager._entry_points_loaded:
            _set_fallbacks(cls, any(
                not entry_point.value.startswith("tensordict.")
                for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
            ))


def add_forwarding_class(cls: type) -> None:
    """Let ``cls``, a class below the host with its own ``__getattr__``, answer for
    plugin method names first: its ``__getattr__`` is asked for each, and the plugin
    method is the answer when it raises AttributeError (``TensorCollection`` calls this
    for such subclasses)."""
    _manager().add_forwarding_class(cls)


def register(plugin: object, name: str | None = None) -> object:
    """Register ``plugin`` at run time and return it (for :func:`unregister`).

    Raises ValueError, and registers nothing, when the plugin claims a name another
    plugin provides or supports other plugin API versions (:func:`check_api_version`);
    a plugin whose hook raises is refused with that error.
    """
    manager = _manager()
    manager.load_entry_points()
    manager.register(plugin, name)
    return plugin


def unregister(plugin: object | str) -> None:
    """Remove a plugin, given as the object or its name, registered at run time or
    loaded from an entry point. Its methods, names and backends disappear at once."""
    manager = _manager()
    manager.load_entry_points()
    name = plugin if isinstance(plugin, str) else manager.get_name(plugin)
    if name is None or manager.get_plugin(name) is None:
        raise ValueError(f"no tensordict plugin {plugin!r} is registered")
    manager.unregister(name=name)


def list_plugins() -> list[str]:
    """Names of the registered plugins (entry-point plugins are loaded first)."""
    manager = _manager()
    manager.load_entry_points()
    return sorted(name for name, plugin in manager.list_name_plugin() if plugin is not None)


def plugin_distributions() -> dict[str, str]:
    """Map each plugin loaded from an entry point to ``"distribution version"``.

    >>> from tensordict.plugins import plugin_distributions
    >>> all(" " in label for label in plugin_distributions().values())
    True
    """
    manager = _manager()
    manager.load_entry_points()
    return dict(sorted(manager._distributions.items()))


def _resolve(value: Any) -> Any:
    if isinstance(value, str) and ":" in value:
        module_name, _, attr = value.partition(":")
        return getattr(importlib.import_module(module_name), attr)
    return value


def top_level_name(name: str) -> Any:
    """The object a plugin exports as ``tensordict.<name>`` (a dotted ``name``: as an
    attribute of that module of core); AttributeError if none.

    >>> top_level_name("prototype.fx.no_such_name")
    Traceback (most recent call last):
        ...
    AttributeError: module 'tensordict.prototype.fx' has no attribute 'no_such_name'
    """
    names = _manager().merged("tensordict_top_level_names")
    if name in names:
        return _resolve(names[name])
    if name in PROVIDED_BY:
        raise MissingPluginError(install_hint(f"tensordict.{name}", PROVIDED_BY[name]),
                                 name=f"tensordict.{name}")
    if name in _IMPORTABLE:
        return _missing_class(name)
    module, _, attribute = f"tensordict.{name}".rpartition(".")
    raise AttributeError(f"module {module!r} has no attribute {attribute!r}")


class _MissingClassMeta(type):
    """A class whose plugin is absent: calling it or reading an attribute names the
    package to install; ``isinstance`` checks against it are simply False."""

    def _hint(cls) -> MissingPluginError:
        extra = _IMPORTABLE[cls.__name__]
        return MissingPluginError(install_hint(f"tensordict.{cls.__name__}", extra))

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        raise cls._hint()

    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise cls._hint()


@functools.cache
def _missing_class(name: str) -> type:
    return _MissingClassMeta(name, (), {"__module__": "tensordict"})


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
    if name in _BACKENDS:
        raise MissingPluginError(install_hint(f"the {name!r} storage backend",
                                              _BACKENDS[name]))
    raise ValueError(f"unknown storage backend {name!r}; installed: {sorted(backends)}")


def missing_method_error(owner: str, name: str) -> AttributeError:
    """The error for ``owner.name`` when no plugin provides it."""
    if name in PROVIDED_BY:
        return MissingMethodError(install_hint(f"{owner}.{name}()", PROVIDED_BY[name]))
    return AttributeError(f"'{owner}' object has no attribute {name!r}")


#: Subpackages of ``tensordict`` that plugin distributions provide.
SUBPACKAGES = {"memmap": "memmap", "nn": "nn", "tensorclasses": "tensorclass",
               "tensorclass": "tensorclass", "distributed": "distributed",
               "persistent": "persistent", "h5": "h5", "zarr": "zarr",
               "safetensors": "safetensors", "tabular": "tabular", "store": "redis"}


class _MissingSubpackageFinder:
    """Last on ``sys.meta_path``: turns ``import tensordict.nn`` without tensordict-nn
    into an ImportError that says what to install."""

    @staticmethod
    def find_spec(fullname: str, path: Any = None, target: Any = None) -> None:
        prefix, _, sub = fullname.partition(".")
        if prefix != "tensordict" or sub not in SUBPACKAGES:
            return None
        # Only a regular import searches tensordict's own __path__; tools probing other
        # folders (pytest's importlib mode, find_spec with a path) get the usual None.
        # (tensordict's __init__ installs this finder: the package is loaded.)
        if path is not None and list(path) != list(sys.modules["tensordict"].__path__):
            return None
        raise MissingPluginError(
                install_hint(f"the module {fullname}", SUBPACKAGES[sub]), name=fullname
            )


def install_subpackage_finder() -> None:
    """Put the missing-subpackage finder at the end of ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _MissingSubpackageFinder) for f in sys.meta_path):
        sys.meta_path.append(_MissingSubpackageFinder())
