"""The plugin manager: run-time registration, entry-point discovery, missing plugins."""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tensordict
from tensordict import TensorDict, plugins
from tensordict.plugins import hookimpl

#: the entry points of this repository's plugin distributions (whichever are installed)
FIRST_PARTY = ",".join(
    ep.name for dist in importlib.metadata.distributions()
    if dist.metadata["Name"].startswith("tensordict-")
    for ep in dist.entry_points if ep.group == plugins.ENTRY_POINT_GROUP
)


@pytest.fixture
def registered():
    """Register plugins for one test; whatever is still registered afterwards is removed."""
    added: list[object] = []

    def add(plugin: object, name: str | None = None) -> object:
        added.append(plugins.register(plugin, name))
        return plugin

    yield add
    manager = plugins.plugin_manager()
    for plugin in added:
        if manager.is_registered(plugin):
            plugins.unregister(plugin)


def nested_td() -> TensorDict:
    return TensorDict(
        a=torch.arange(6.0).reshape(3, 2),
        sub=TensorDict(b=torch.ones(3, 4), c=TensorDict(d=torch.zeros(3), batch_size=[3]),
                       batch_size=[3]),
        batch_size=[3],
    )


class Methods:
    @hookimpl
    def tensordict_methods(self):
        return {
            "leaf_count": lambda td: len(list(td.keys(include_nested=True, leaves_only=True))),
            "from_scalar": classmethod(lambda cls, v: cls(x=torch.tensor(v))),
        }


# ---------------------------------------------------------------------- run-time registration


def test_method_instance_and_class_level(registered):
    td = nested_td()
    with pytest.raises(AttributeError):
        td.leaf_count()
    plugin = registered(Methods())
    assert td.leaf_count() == 3
    assert td["sub"].leaf_count() == 2  # nested collections get the method too
    assert TensorDict(batch_size=[]).leaf_count() == 0
    made = TensorDict.from_scalar(2.5)
    assert type(made) is TensorDict and made["x"].item() == 2.5
    assert made.batch_size == torch.Size([])
    plugins.unregister(plugin)
    with pytest.raises(AttributeError, match="leaf_count"):
        td.leaf_count()
    with pytest.raises(AttributeError, match="from_scalar"):
        TensorDict.from_scalar(1.0)


def test_top_level_names_resolve_lazily(registered):
    class Names:
        @hookimpl
        def tensordict_top_level_names(self):
            return {"Answer": 42, "PosixPathAlias": "pathlib:PurePosixPath"}

    plugin = registered(Names())
    assert tensordict.Answer == 42
    from pathlib import PurePosixPath

    from tensordict import PosixPathAlias

    assert PosixPathAlias is PurePosixPath
    plugins.unregister(plugin)
    with pytest.raises(AttributeError, match="Answer"):
        tensordict.Answer


def test_torch_function_handled_through_a_plugin(registered):
    def erfcx(td):
        return td.apply(torch.special.erfcx)

    td = nested_td()
    assert plugins.torch_function(torch.special.erfcx) is None
    plugin = registered(type("Torchy", (), {
        "tensordict_torch_functions": hookimpl(lambda self: {torch.special.erfcx: erfcx})
    })())
    assert plugins.torch_function(torch.special.erfcx) is erfcx
    assert plugins.torch_function(torch.special.i0e) is None
    result = torch.special.erfcx(td)  # TensorDict.__torch_function__ dispatches to it
    for key in td.keys(True, True):
        torch.testing.assert_close(result[key], torch.special.erfcx(td[key]))
    plugins.unregister(plugin)
    assert plugins.torch_function(torch.special.erfcx) is None


class PtBackend:
    """A real backend: one torch.save file holding the leaves and the batch size."""

    def save(self, td, path, *, tag=None):
        torch.save({"batch_size": list(td.batch_size), "data": td.to_dict(), "tag": tag}, path)
        return td

    def load(self, path):
        payload = torch.load(path)
        return TensorDict(payload["data"], batch_size=payload["batch_size"])

    def can_load(self, path):
        return str(path).endswith(".ptd")


class PtPlugin:
    @hookimpl
    def tensordict_storage_backends(self):
        return {"pt": PtBackend()}


def test_storage_backend_save_load(registered, tmp_path):
    plugin = registered(PtPlugin())
    assert isinstance(plugins.storage_backends()["pt"], plugins.StorageBackend)
    for td in (nested_td(), TensorDict(s=torch.tensor(3.0))):  # nested and 0-dim
        path = tmp_path / f"{td.batch_dims}.ptd"
        assert td.save(path, backend="pt", tag="t") is td
        assert torch.load(path)["tag"] == "t"  # keyword arguments reach the backend
        for loaded in (TensorDict.load(path), TensorDict.load(path, backend="pt")):
            assert loaded.batch_size == td.batch_size
            assert set(loaded.keys(True, True)) == set(td.keys(True, True))
            for key in td.keys(True, True):
                torch.testing.assert_close(loaded[key], td[key])
    with pytest.raises(ValueError, match=r"can load '.*other\.bin'"):
        TensorDict.load(tmp_path / "other.bin")
    with pytest.raises(ValueError, match=r"unknown storage backend 'zip'; installed: \[.*'pt'"):
        nested_td().save(tmp_path / "x", backend="zip")
    plugins.unregister(plugin)
    assert "pt" not in plugins.storage_backends()
    with pytest.raises(ValueError, match="unknown storage backend 'pt'"):
        nested_td().save(tmp_path / "y.ptd", backend="pt")
    assert not (tmp_path / "y.ptd").exists()


# ------------------------------------------------------------------------------- conflicts


def test_duplicate_name_is_refused_and_changes_nothing(registered):
    registered(Methods(), name="first")
    td = nested_td()
    clash = r"plugin 'second' provides 'leaf_count', which plugin 'first' already provides"
    with pytest.raises(ValueError, match=clash):
        registered(Methods(), name="second")
    assert "second" not in plugins.list_plugins()
    assert td.leaf_count() == 3


def test_duplicate_plugin_name(registered):
    registered(Methods(), name="dup")
    with pytest.raises(ValueError, match="dup"):
        registered(PtPlugin(), name="dup")
    assert "pt" not in plugins.storage_backends()


def test_hook_that_raises_is_refused(registered):
    class Broken:
        @hookimpl
        def tensordict_methods(self):
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        registered(Broken(), name="broken")
    assert "broken" not in plugins.list_plugins()
    with pytest.raises(AttributeError):
        nested_td().leaf_count()


def test_unregister_by_name(registered):
    registered(Methods(), name="by-name")
    plugins.unregister("by-name")
    assert "by-name" not in plugins.list_plugins()
    with pytest.raises(ValueError, match="no tensordict plugin 'by-name' is registered"):
        plugins.unregister("by-name")
    with pytest.raises(ValueError, match="no tensordict plugin .*Methods"):
        plugins.unregister(Methods())


def test_every_hook_is_documented():
    assert set(plugins.HOOK_NAMES) == {
        "tensordict_top_level_names", "tensordict_methods",
        "tensordict_torch_functions", "tensordict_storage_backends",
    }
    for name in plugins.HOOK_NAMES:
        doc = getattr(tensordict.hookspecs, name).__doc__
        assert "Returns:" in doc and "Example:" in doc and ">>>" in doc, name


# ------------------------------------------------ entry points, in a fresh interpreter each

GOOD_PLUGIN = """
from tensordict.plugins import hookimpl

@hookimpl
def tensordict_methods():
    return {"fake_double": lambda td: td.apply(lambda x: x * 2)}

@hookimpl
def tensordict_top_level_names():
    return {"FakeThing": "fake_good_heavy:Thing"}
"""

PROBE = """
import json, sys, warnings
import tensordict
imported_at_import = sorted(
    m for m in sys.modules
    if m.startswith("fake_")
    or m.startswith("tensordict.") and m.split(".")[1] in tensordict.plugins.SUBPACKAGES
)
import torch
from tensordict import TensorDict, plugins
td = TensorDict(a=torch.ones(2), batch_size=[2])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    names = plugins.list_plugins()

def outcome(code):
    try:
        value = eval(code, globals())
    except BaseException as err:
        return [type(err).__name__, str(err)]
    return ["ok", repr(value)]

probes = [
    "td.fake_double()['a'].tolist()", "'fake_good_heavy' in sys.modules",
    "tensordict.FakeThing", "sys.modules.get('fake_good_heavy') is not None",
    "td.memmap()", "TensorDict.load_memmap('p')", "tensordict.MemoryMappedTensor",
    "exec('from tensordict import tensorclass')", "td.save('p')", "TensorDict.load('p')",
    "td.no_such_method()",
]
print(json.dumps({
    "imported_at_import": imported_at_import,
    "plugins": names,
    "distributions": plugins.plugin_distributions(),
    "warnings": [str(w.message) for w in caught],
    "outcomes": dict(zip(probes, map(outcome, probes))),
}))
"""


def _fake_distribution(root: Path, name: str, version: str, entry_points: dict[str, str]) -> None:
    info = root / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    lines = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text("[tensordict]\n" + lines)


def _probe(tmp_path: Path, disabled: str) -> dict:
    (tmp_path / "fake_good.py").write_text(GOOD_PLUGIN)
    (tmp_path / "fake_good_heavy.py").write_text("class Thing:\n    pass\n")
    (tmp_path / "fake_broken.py").write_text("raise ImportError('fake_broken is broken')\n")
    _fake_distribution(tmp_path, "fake-good", "0.3", {"good": "fake_good"})
    _fake_distribution(tmp_path, "fake-broken", "1.2", {"broken": "fake_broken"})
    env = dict(os.environ, TENSORDICT_DISABLED_PLUGINS=disabled)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path), env.get("PYTHONPATH")]))
    result = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                            text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_entry_points_broken_plugin_and_missing_plugins(tmp_path):
    seen = _probe(tmp_path, disabled=FIRST_PARTY)
    assert seen["imported_at_import"] == []  # `import tensordict` imports no plugin
    assert seen["plugins"] == ["good"]
    assert seen["distributions"] == {"good": "fake-good 0.3"}
    assert len(seen["warnings"]) == 1
    assert "'broken' (fake-broken 1.2)" in seen["warnings"][0]
    assert "fake_broken is broken" in seen["warnings"][0]
    out = seen["outcomes"]
    assert out["td.fake_double()['a'].tolist()"] == ["ok", "[2.0, 2.0]"]
    # top-level names given as strings are imported on first use only
    assert out["'fake_good_heavy' in sys.modules"] == ["ok", "False"]
    assert out["tensordict.FakeThing"] == ["ok", "<class 'fake_good_heavy.Thing'>"]
    assert out["sys.modules.get('fake_good_heavy') is not None"] == ["ok", "True"]
    for code, (error, dist) in {
        "td.memmap()": ("MissingMethodError", "memmap"),
        "TensorDict.load_memmap('p')": ("MissingMethodError", "memmap"),
        "tensordict.MemoryMappedTensor": ("MissingPluginError", "memmap"),
        "exec('from tensordict import tensorclass')": ("MissingPluginError", "tensorclass"),
        "td.save('p')": ("MissingPluginError", "memmap"),
        "TensorDict.load('p')": ("MissingPluginError", "memmap"),
    }.items():
        assert out[code][0] == error, (code, out[code])
        assert f"install tensordict-{dist}, or tensordict[{dist}]" in out[code][1], code
    assert out["td.no_such_method()"] == [
        "AttributeError", "'TensorDict' object has no attribute 'no_such_method'"
    ]


def test_disabled_plugins_env_var(tmp_path):
    seen = _probe(tmp_path, disabled=f"good, broken,{FIRST_PARTY}")
    assert seen["plugins"] == []
    assert seen["warnings"] == []  # a disabled plugin is not even imported
    assert seen["outcomes"]["td.fake_double()['a'].tolist()"][0] == "AttributeError"
    assert seen["outcomes"]["tensordict.FakeThing"][0] == "AttributeError"
