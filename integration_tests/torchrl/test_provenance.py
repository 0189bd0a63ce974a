"""The ``tensordict`` that TorchRL runs against in this env is ours, not upstream's.

TorchRL 0.14 declares ``tensordict>=0.14.3,<0.15``, which excludes our meta-package
(``0.15.3+split.N``): the env installs it as README.md says, ``tools/install_client.py``
(its other requirements resolved with ours pinned, TorchRL itself without its tensordict
requirement), so pip never pulls the unrelated upstream ``tensordict`` from the index.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
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
    # the only `tensordict` allowed is our code-less meta-package, upstream's API version
    # with our local label
    assert "tensordict-nightly" not in versions
    assert versions["tensordict"].startswith("0.15.3+split.")


def test_pip_refuses_rather_than_swapping_ours_for_upstream(tmp_path):
    # a plain resolving install of TorchRL, with ours pinned as README.md says: pip stops
    # with the conflict instead of replacing our meta-package with upstream's 0.14
    pins = tmp_path / "pins.txt"
    pins.write_text("".join(
        f"{d.metadata['Name']}=={d.version}\n" for d in importlib.metadata.distributions()
        if d.metadata["Name"].startswith("tensordict")))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--report", "-", "-c", str(pins),
         "torchrl==0.14.1"], capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    assert "ResolutionImpossible" in result.stderr
    assert "Cannot install torchrl==0.14.1" in result.stderr
    # without the pins, the same command would swap them: that is what the pins prevent
    result = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet", "--report", "-",
         "torchrl==0.14.1"], capture_output=True, text=True, timeout=300, check=True)
    swapped = {i["metadata"]["name"]: i["metadata"]["version"]
               for i in json.loads(result.stdout)["install"]}
    assert swapped["tensordict"].startswith("0.14")


def test_torchrl_runs_on_our_tensordict():
    assert importlib.metadata.version("torchrl") == "0.14.1"
    assert torchrl.__version__.startswith("0.14")
    from torchrl.envs import GymEnv

    td = GymEnv("CartPole-v1").reset()
    assert isinstance(td, tensordict.TensorDict)
    assert _provides("tensordict-core", sys.modules[type(td).__module__].__file__)
