"""The plugin API: its version checked at registration, the one table of first-party
features, and the extension module :mod:`tensordict.extending`."""

from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import sys
import types

import pytest
import torch

from tensordict import TensorDict, extending, lazy_stack, plugins
from tensordict.plugins import PLUGIN_API_VERSION, PluginAPIVersionError, hookimpl


def _plugin(versions: object, method: str = "api_probe") -> types.SimpleNamespace:
    plugin = types.SimpleNamespace(
        tensordict_methods=hookimpl(lambda: {method: lambda td: "probed"}))
    if versions is not None:
        plugin.TENSORDICT_PLUGIN_API = versions
    return plugin


@pytest.mark.parametrize("versions", [None, PLUGIN_API_VERSION, (0, PLUGIN_API_VERSION)],
                         ids=["undeclared", "int", "several"])
def test_a_plugin_of_this_api_version_registers(versions):
    plugins.register(_plugin(versions), name="api_probe")
    try:
        assert TensorDict().api_probe() == "probed"
    finally:
        plugins.unregister("api_probe")


@pytest.mark.parametrize("versions", [PLUGIN_API_VERSION + 1, (), [0]])
def test_another_api_version_is_refused_at_registration(versions):
    before = plugins.list_plugins()
    with pytest.raises(PluginAPIVersionError, match=r"plugin 'api_probe' supports the plugin "
                       rf"API version\(s\) .* provides version {PLUGIN_API_VERSION}"):
        plugins.register(_plugin(versions), name="api_probe")
    assert plugins.list_plugins() == before
    assert "api_probe" not in vars(plugins.plugin_manager()._host)
    with pytest.raises(AttributeError):
        TensorDict().api_probe()  # noqa: B018


def test_an_entry_point_of_another_api_version_is_skipped_with_a_warning(tmp_path,
                                                                          monkeypatch):
    (tmp_path / "td_old_plugin.py").write_text(
        "from tensordict.plugins import hookimpl\nTENSORDICT_PLUGIN_API = (0,)\n"
        "@hookimpl\ndef tensordict_methods():\n    return {'old_probe': lambda td: 1}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_point = importlib.metadata.EntryPoint("td_old", "td_old_plugin", "tensordict")
    dist = types.SimpleNamespace(metadata={"Name": "td-old-plugin"}, version="0.0.1")
    manager = plugins.plugin_manager()
    with pytest.warns(RuntimeWarning, match=r"'td_old' \(td-old-plugin 0.0.1\) failed to "
                      r"load.*PluginAPIVersionError.*provides version"):
        manager._load_entry_point(entry_point, dist)
    sys.modules.pop("td_old_plugin", None)
    assert "td_old" not in plugins.list_plugins()
    assert "td_old" not in plugins.plugin_distributions()
    with pytest.raises(AttributeError):
        TensorDict().old_probe()  # noqa: B018


def test_first_party_features_come_from_one_table():
    table = plugins.FIRST_PARTY
    for extra, features in table.items():
        for method in features.get("methods", ()):
            assert plugins.PLUGIN_METHODS[method] == plugins.PROVIDED_BY[method] == extra
        for name in features.get("names", ()):
            assert plugins.PROVIDED_BY[name] == extra
        for module in features.get("modules", ()):
            assert plugins.SUBPACKAGES[module] == extra
        assert set(features.get("attributes", ())) <= set(features.get("modules", ()))
    n_methods = sum(len(f.get("methods", ())) for f in table.values())
    assert len(plugins.PLUGIN_METHODS) == n_methods  # no feature claimed twice
    assert plugins.NAMED_LIKE_MODULES == {"tensorclass"}


@pytest.mark.parametrize("name", sorted(plugins.ATTRIBUTE_MODULES))
def test_plugin_modules_upstream_imports_are_package_attributes(name):
    import tensordict

    try:
        module = importlib.import_module(f"tensordict.{name}")
    except ImportError:  # the plugin is not installed: the attribute names it
        with pytest.raises(AttributeError, match=f"tensordict-{plugins.SUBPACKAGES[name]}"):
            getattr(tensordict, name)
    else:
        assert getattr(tensordict, name) is module


def test_dotted_top_level_names_are_module_attributes():
    import tensordict.prototype.fx as fx

    with pytest.raises(AttributeError, match="module 'tensordict.prototype.fx' has no "
                       "attribute 'nothing'"):
        fx.nothing  # noqa: B018


@pytest.mark.parametrize("name", extending.__all__)
def test_every_callable_of_the_extension_api_has_an_example(name):
    value = getattr(extending, name)
    if callable(value) and not isinstance(value, types.GenericAlias):
        assert ">>>" in (inspect.getdoc(value) or ""), name


def test_from_entries_wraps_without_checks():
    leaf = torch.zeros(3, 2)
    td = extending.from_entries({"a": leaf}, torch.Size([3]), torch.device("cpu"), ("t",))
    assert td["a"] is leaf and td.batch_size == (3,) and td.names == ["t"]
    assert td.device == torch.device("cpu") and not td.is_locked


def test_named_leaves_walk_nested_and_non_tensor_entries():
    td = TensorDict(b=torch.ones(2), a=TensorDict(s="x", z=TensorDict(t=torch.zeros(2, 1),
                                                                       batch_size=[2]),
                                                  batch_size=[2]), batch_size=[2])
    leaves = list(extending.named_leaves(td))
    assert [path for path, _ in leaves] == [("a", "s"), ("a", "z", "t"), ("b",)]
    assert leaves[0][1].data == "x" and leaves[1][1] is td["a", "z", "t"]


@pytest.mark.parametrize("td", [
    TensorDict(batch_size=[3, 2], names=["t", None]),
    TensorDict(batch_size=[], device="cpu"),
    TensorDict(a=torch.zeros(4), batch_size=[4]),
], ids=["names", "device", "plain"])
def test_metadata_round_trip(td):
    import json

    meta = json.loads(json.dumps(extending.encode_metadata(td)))
    kwargs = extending.decode_metadata(meta)
    rebuilt = TensorDict(**kwargs)
    assert rebuilt.batch_size == td.batch_size and rebuilt.device == td.device
    assert rebuilt.names == td.names


@pytest.mark.parametrize("meta", [{}, {"batch_size": "x"}, {"batch_size": [2], "names": []}])
def test_decode_metadata_names_what_does_not_fit(meta):
    with pytest.raises(ValueError):
        extending.decode_metadata(meta)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.bool, torch.int8,
                                   torch.complex64])
def test_dtype_names_round_trip(dtype):
    assert extending.dtype_from_name(extending.dtype_name(dtype)) is dtype


def test_dtype_from_name_refuses_other_text():
    with pytest.raises(ValueError, match="'Tensor' names no torch dtype"):
        extending.dtype_from_name("Tensor")


CLAMP = extending.pointwise_methods(
    "clamp_between", lambda x, lo, hi=1.0: x.clamp(min=lo).clamp(max=hi))


@pytest.mark.parametrize("make", [
    lambda: TensorDict(a=torch.tensor([-2.0, 3.0]), n=TensorDict(b=torch.tensor([[0.5], [9.0]]),
                                                                 batch_size=[2]), batch_size=[2]),
    lambda: lazy_stack([TensorDict(a=torch.tensor(-2.0), n=TensorDict(b=torch.tensor([0.5]))),
                        TensorDict(a=torch.tensor(3.0), n=TensorDict(b=torch.tensor([9.0])))]),
], ids=["dense", "lazy"])
def test_pointwise_methods_match_leaf_by_leaf(make):
    td = make()
    out = CLAMP["clamp_between"](td, 0.0, hi=2.0)
    assert type(out) is type(td)
    for key, value in td.items(True, True):
        torch.testing.assert_close(out[key], value.clamp(0.0, 2.0))
    lows = td.apply(lambda x: torch.full_like(x, 1.0))  # a collection operand, paired by key
    torch.testing.assert_close(CLAMP["clamp_between"](td, lows, hi=5.0)["n", "b"],
                               td["n", "b"].clamp(1.0, 5.0))
    assert CLAMP["clamp_between_"](td, 0.0) is td
    assert td["a"].tolist() == [0.0, 1.0] and td["n", "b"].flatten().tolist() == [0.5, 1.0]


def test_pointwise_in_place_failing_on_one_leaf_writes_none():
    def only_floats(x, lo):
        if not x.is_floating_point():
            raise TypeError("floats only")
        return x.clamp(min=lo)

    methods = extending.pointwise_methods("floor_at", only_floats)
    td = TensorDict(a=torch.tensor([-1.0, 2.0]), b=torch.tensor([1, 5]), batch_size=[2])
    with pytest.raises(TypeError, match="floats only"):
        methods["floor_at_"](td, 0.0)
    assert td["a"].tolist() == [-1.0, 2.0] and td["b"].tolist() == [1, 5]


def test_pointwise_in_place_refuses_a_result_the_leaf_cannot_hold():
    methods = extending.pointwise_methods("halve", lambda x: x / 2)
    td = TensorDict(a=torch.tensor([2.0]), n=TensorDict(i=torch.tensor([4])))
    with pytest.raises(RuntimeError, match=r"halve_ cannot write its torch.float32 result "
                       r"into a leaf of dtype torch.int64"):
        methods["halve_"](td)
    assert td["a"].tolist() == [2.0] and td["n", "i"].tolist() == [4]
    assert methods["halve"](td)["n", "i"].tolist() == [2.0]
