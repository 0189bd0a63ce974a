"""The ``tensordict`` that TorchRL runs against in this env is ours, not upstream's.

TorchRL 0.14 declares ``tensordict<0.15``; it is installed with ``--no-deps`` so that
pip never pulls the unrelated upstream ``tensordict`` distribution from the index.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import torchrl

import tensordict
import tensordict.nn

REPO = Path(__file__).resolve().parents[2]


def _provides(distribution: str, module_file: str) -> bool:
    """Whether ``module_file`` comes from ``distribution``: its editable source folder in
    this repository, or a file recorded in its installed wheel."""
    target = Path(module_file).resolve()
    source = REPO / "packages" / distribution / "src"
    if target.is_relative_to(source):
        return True
    dist = importlib.metadata.distribution(distribution)
    return any(Path(dist.locate_file(f)).resolve() == target for f in dist.files or ())


def test_tensordict_comes_from_our_distributions():
    assert importlib.metadata.version("tensordict-core") == tensordict.__version__
    assert _provides("tensordict-core", tensordict.__file__)
    assert _provides("tensordict-nn", tensordict.nn.__file__)


def test_no_upstream_tensordict_is_installed():
    versions = {
        dist.metadata["Name"].lower(): dist.version
        for dist in importlib.metadata.distributions()
        if dist.metadata["Name"].lower() in {"tensordict", "tensordict-nightly"}
    }
    # the only `tensordict` allowed is our code-less meta-package (0.1.0)
    assert "tensordict-nightly" not in versions
    assert versions.get("tensordict", "0.1.0") == "0.1.0"


def test_torchrl_runs_on_our_tensordict():
    assert importlib.metadata.version("torchrl") == "0.14.1"
    assert torchrl.__version__.startswith("0.14")
    from torchrl.envs import GymEnv

    td = GymEnv("CartPole-v1").reset()
    assert isinstance(td, tensordict.TensorDict)
    assert _provides("tensordict-core", sys.modules[type(td).__module__].__file__)
