"""The ``>>>`` examples of every module of the package run and print what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["", "._attrs", "._build", "._dataclass", "._dtype", "._fields", "._forward",
           "._instance", "._plugin", "._repr"]


@pytest.mark.parametrize("suffix", MODULES)
def test_docstring_examples(suffix):
    module = importlib.import_module("tensordict.tensorclasses" + suffix)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0
    assert result.attempted > 0
