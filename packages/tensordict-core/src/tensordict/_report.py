"""What an installation holds, for bug reports: ``python -m tensordict [--json]``.

:func:`collect` gathers the tensordict distributions, torch and its devices, every plugin
of the ``tensordict`` entry-point group (loaded, disabled or failed, with the error) and
what each registered plugin adds; :func:`format_text` lays it out for people.

>>> report = collect()
>>> report["distributions"]["tensordict-core"] == __import__("tensordict").__version__
True
>>> "tensordict-core" in format_text(report)
True
"""

from __future__ import annotations

import importlib.metadata
import platform
import re
import warnings
from typing import Any

import torch

from tensordict import plugins

#: the hooks whose contributions the report lists, and how it calls them
CONTRIBUTIONS = {
    "methods": "tensordict_methods",
    "top_level_names": "tensordict_top_level_names",
    "torch_functions": "tensordict_torch_functions",
    "storage_backends": "tensordict_storage_backends",
}
#: the warning core gives for a plugin that failed to load (see ``plugins``)
FAILED = re.compile(r"tensordict plugin '(?P<name>[^']+)' .*? failed to load and is ignored: "
                    r"(?P<error>.*)", re.DOTALL)


def _is_tensordict(name: str) -> bool:
    normalized = re.sub(r"[-_.]+", "-", name).lower()
    return normalized == "tensordict" or normalized.startswith("tensordict-")


def _load_plugins() -> dict[str, str]:
    """Load the entry points (if not loaded yet) and return the error of each that failed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plugins.list_plugins()
    failures = (FAILED.match(str(w.message)) for w in caught)
    return {m["name"]: m["error"] for m in failures if m}


def _load_error(entry_point: importlib.metadata.EntryPoint) -> str:
    """Why an entry point is not registered when its warning came before this report."""
    try:
        plugin = entry_point.load()
        plugins.check_api_version(plugin, entry_point.name)
    except Exception as err:  # what the plugin manager met when loading it
        return repr(err)
    return "refused when registering (its hooks raised, or a name clashed)"


def _contributions() -> dict[str, dict[str, list[str]]]:
    """For each registered plugin: the names each of its hooks contributes."""
    found: dict[str, dict[str, list[str]]] = {}
    hooks = plugins.plugin_manager().hook
    for kind, hook_name in CONTRIBUTIONS.items():
        for impl in getattr(hooks, hook_name).get_hookimpls():
            keys = impl.function() or {}
            names = sorted(getattr(key, "__name__", str(key)) for key in keys)
            found.setdefault(impl.plugin_name, {})[kind] = names
    return found


def _devices() -> dict[str, Any]:
    cuda = torch.cuda.is_available()
    return {
        "cuda": {
            "available": cuda,
            "version": torch.version.cuda,
            "devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
            if cuda else [],
        },
        "mps": torch.backends.mps.is_available(),
        "xpu": hasattr(torch, "xpu") and torch.xpu.is_available(),
    }


def collect() -> dict[str, Any]:
    """The installation as plain data (what ``python -m tensordict --json`` prints)."""
    failures = _load_plugins()
    manager = plugins.plugin_manager()
    contributions = _contributions()
    loaded_from = plugins.plugin_distributions()
    entries: dict[str, dict[str, Any]] = {}
    owners: set[str] = set()
    for dist in importlib.metadata.distributions():
        for entry_point in dist.entry_points:
            if entry_point.group != plugins.ENTRY_POINT_GROUP or entry_point.name in entries:
                continue
            owners.add(dist.metadata["Name"])
            name = entry_point.name
            entry: dict[str, Any] = {
                "distribution": f"{dist.metadata['Name']} {dist.version}",
                "entry_point": entry_point.value,
            }
            if manager.is_blocked(name):
                entry["status"] = "disabled"
            elif name in loaded_from:
                entry["status"] = "loaded"
            else:
                entry["status"] = "failed"
                entry["error"] = failures.get(name) or _load_error(entry_point)
            entries[name] = entry
    for name in plugins.list_plugins():
        entry = entries.setdefault(name, {"distribution": None, "entry_point": None,
                                          "status": "registered at run time"})
        supported = getattr(manager.get_plugin(name), "TENSORDICT_PLUGIN_API", None)
        entry["api_versions"] = [supported] if isinstance(supported, int) else supported and \
            list(supported)
        entry.update(contributions.get(name, {}))
    return {
        "python": f"{platform.python_version()} ({platform.platform()})",
        "distributions": {
            dist.metadata["Name"]: dist.version
            for dist in sorted(importlib.metadata.distributions(),
                               key=lambda d: d.metadata["Name"].lower())
            if _is_tensordict(dist.metadata["Name"]) or dist.metadata["Name"] in owners
        },
        "torch": {"version": torch.__version__, **_devices()},
        "plugin_api_version": plugins.PLUGIN_API_VERSION,
        "plugins": dict(sorted(entries.items())),
        "storage_backends": sorted(plugins.storage_backends()),
    }


def format_text(report: dict[str, Any]) -> str:
    """``report`` (from :func:`collect`) as the lines ``python -m tensordict`` prints."""
    torch_info, cuda = report["torch"], report["torch"]["cuda"]
    gpu = (f"cuda {cuda['version']}: {', '.join(cuda['devices'])}" if cuda["available"]
           else "cuda: not available")
    lines = [
        f"python {report['python']}",
        f"torch {torch_info['version']} ({gpu}; mps: {torch_info['mps']}; "
        f"xpu: {torch_info['xpu']})",
        f"plugin API version {report['plugin_api_version']}",
        "",
        "distributions:",
        *(f"  {name} {version}" for name, version in report["distributions"].items()),
        "",
        "plugins:",
    ]
    for name, entry in report["plugins"].items():
        status = entry["status"].upper() if entry["status"] == "failed" else entry["status"]
        source = f"{entry['distribution']}, {entry['entry_point']}" if entry["entry_point"] \
            else "no entry point"
        lines.append(f"  {name} ({source}): {status}")
        if "error" in entry:
            lines.append(f"    error: {entry['error']}")
        if entry.get("api_versions"):
            lines.append(f"    plugin API versions: {entry['api_versions']}")
        for kind in CONTRIBUTIONS:
            if entry.get(kind):
                lines.append(f"    {kind.replace('_', ' ')}: {', '.join(entry[kind])}")
    lines += ["", f"storage backends: {', '.join(report['storage_backends']) or '(none)'}"]
    return "\n".join(lines)
