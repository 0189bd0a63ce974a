"""tensordict-plugin-template installed beside tensordict-core: found through its entry point."""

from __future__ import annotations

import tensordict
import torch
from tensordict import TensorDict, plugins


def sample() -> TensorDict:
    return TensorDict(obs=torch.zeros(4, 3), nested=TensorDict(r=torch.ones(4)), batch_size=[4])


def test_the_entry_point_is_loaded():
    assert "td_plugin_template" in plugins.list_plugins()
    label = plugins.plugin_distributions()["td_plugin_template"]
    assert label.startswith("tensordict-plugin-template ")


def test_the_method():
    assert sample().total_numel() == 16
    assert sample()[1:3].total_numel() == 8  # on every TensorDict, views included


def test_the_top_level_name():
    assert tensordict.total_numel(sample()) == 16


def test_the_plugin_api_version_is_the_core_s():
    from td_plugin_template import _plugin

    assert plugins.PLUGIN_API_VERSION in _plugin.TENSORDICT_PLUGIN_API
