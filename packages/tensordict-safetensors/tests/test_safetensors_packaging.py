"""tensordict-safetensors installed beside core: it imports, and registers through its
entry point.

The tox env `safetensors` sets TENSORDICT_ONLY=safetensors: there the first test also
proves that only this package and what it declares are installed."""

import os

import pytest

from tensordict.testing import assert_only_declared_installed, assert_registered_plugin


@pytest.mark.skipif(os.environ.get("TENSORDICT_ONLY") != "safetensors", reason="not the tox env")
def test_only_what_is_declared_is_installed():
    assert_only_declared_installed("tensordict-safetensors")


def test_registered_through_its_entry_point():
    assert_registered_plugin("safetensors", "tensordict-safetensors", "tensordict.safetensors")
