"""How the distributions are installed and what their wheels contain.

The name ``tensordict`` on PyPI belongs to the unrelated upstream project: these tests
prove that what is installed is ours, that each file belongs to exactly one of our
distributions, and that ``import tensordict`` stays lazy about plugins.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import urllib.parse
import venv
import zipfile
from pathlib import Path

import pytest

import tensordict
from tensordict import plugins

REPO = Path(__file__).resolve().parents[1]
# each plugin distribution's package: the first subpackage listed for it (core provides
# ``tensordict.tensorclass``, upstream's module path, that looks up tensordict-tensorclass's names)
PLUGIN_DISTRIBUTIONS: dict[str, str] = {}
for _sub, _extra in plugins.SUBPACKAGES.items():
    PLUGIN_DISTRIBUTIONS.setdefault(f"tensordict-{_extra}", _sub)
META_VERSION = tomllib.loads((REPO / "packages/tensordict/pyproject.toml").read_text())[
    "project"]["version"]
#: our distributions that a plugin requires beside core
DECLARED = {"tensordict-h5": {"tensordict-persistent"},
            "tensordict-zarr": {"tensordict-persistent"}}


def _owns(dist: importlib.metadata.Distribution, target: Path) -> bool:
    """Whether ``dist`` installed ``target``: listed in its RECORD or, for an editable
    install, inside the ``src`` folder of its project."""
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    if direct_url.get("dir_info", {}).get("editable"):
        source = Path(urllib.parse.urlparse(direct_url["url"]).path) / "src"
        return target.is_relative_to(source.resolve())
    return any(Path(dist.locate_file(f)).resolve() == target for f in dist.files or ())


def _owner(module_file: str) -> str:
    """The one installed distribution that provides ``module_file``."""
    target = Path(module_file).resolve()
    owners = {d.metadata["Name"] for d in importlib.metadata.distributions() if _owns(d, target)}
    assert len(owners) == 1, (module_file, owners)
    return owners.pop()


def test_tensordict_is_ours_not_upstream():
    assert _owner(tensordict.__file__) == "tensordict-core"
    assert importlib.metadata.version("tensordict-core") == tensordict.__version__
    assert importlib.metadata.version("tensordict") == META_VERSION  # our meta-package
    assert [dist.version for dist in importlib.metadata.distributions()
            if dist.metadata["Name"] == "tensordict"] == [META_VERSION]  # and no upstream
    meta_files = importlib.metadata.files("tensordict") or []
    assert not [f for f in meta_files if f.parts[0] == "tensordict"]  # code-less


@pytest.mark.parametrize("distribution", sorted(PLUGIN_DISTRIBUTIONS))
def test_each_plugin_module_belongs_to_its_distribution(distribution):
    module = importlib.import_module(f"tensordict.{PLUGIN_DISTRIBUTIONS[distribution]}")
    assert _owner(module.__file__) == distribution
    assert module.__version__ == importlib.metadata.version(distribution)
    name = distribution.removeprefix("tensordict-")
    assert plugins.plugin_distributions()[name] == f"{distribution} {module.__version__}"


LAZY = """
import sys
import tensordict
loaded = sorted(m for m in sys.modules if m.startswith(("tensordict.", "td_example")))
print(sorted(set(m.split(".")[1] for m in loaded if m.startswith("tensordict.")) & {SUBS}))
print("td_example_plugin" in sys.modules)
"""


def test_import_tensordict_imports_no_plugin():
    code = LAZY.replace("{SUBS}", repr(set(plugins.SUBPACKAGES)))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.split() == ["[]", "False"], result.stdout


def test_modules_are_attributes_of_the_package_as_upstream():
    # a fresh interpreter, ``import tensordict`` alone: upstream's module attributes
    code = ("import tensordict\n"
            "print(tensordict.persistent.PersistentTensorDict.__name__,\n"
            "      tensordict.typedtensordict.TypedTensorDict is tensordict.TypedTensorDict,\n"
            "      tensordict.tensordict.TensorDict is tensordict.TensorDict,\n"
            "      tensordict.functional.pad is tensordict.pad)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=120, check=True)
    assert result.stdout.split() == ["PersistentTensorDict", "True", "True", "True"]


def test_meta_package_version_is_the_upstream_api_with_a_local_label():
    # what clients of upstream 0.15.3 require, and never a version of the package index
    assert META_VERSION.startswith("0.15.3+split.")


@pytest.fixture(scope="module")
def wheelhouse(tmp_path_factory) -> Path:
    """The release artifacts, built as README.md says (``tools/wheelhouse.py``: sdists,
    wheels from them, ``twine check --strict``), in a folder named ``wheelhouse``."""
    folder = tmp_path_factory.mktemp("clone") / "wheelhouse"
    subprocess.run([sys.executable, str(REPO / "tools/wheelhouse.py"), "--outdir", str(folder)],
                   check=True, timeout=600)
    return folder


def _artifacts(folder: Path, suffix: str) -> dict[str, Path]:
    return {a.name.split("-")[0].replace("_", "-"): a for a in folder.glob(f"*{suffix}")}


def test_wheelhouse_holds_a_wheel_and_an_sdist_of_every_package(wheelhouse):
    folders = {folder.name for folder in (REPO / "packages").iterdir()}
    assert set(_artifacts(wheelhouse, ".whl")) == folders
    assert set(_artifacts(wheelhouse, ".tar.gz")) == folders
    pins = (wheelhouse / "constraints.txt").read_text().split()
    for name, wheel in _artifacts(wheelhouse, ".whl").items():
        assert f"{name}=={wheel.name.split('-')[1]}" in pins


def test_each_sdist_builds_into_the_wheel_built_from_the_tree(wheelhouse, tmp_path):
    # the wheelhouse's wheels come from the sdists; these from the package folders
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), *map(str, sorted((REPO / "packages").iterdir()))],
        check=True, timeout=300,
    )
    from_tree = _artifacts(tmp_path, ".whl")
    for name, wheel in _artifacts(wheelhouse, ".whl").items():
        assert wheel.name == from_tree[name].name
        with zipfile.ZipFile(wheel) as ours, zipfile.ZipFile(from_tree[name]) as theirs:
            assert ours.namelist() == theirs.namelist(), name
            for member in ours.namelist():
                assert ours.read(member) == theirs.read(member), (name, member)


def test_wheel_contents(wheelhouse):
    owner: dict[str, str] = {}
    for name, wheel in _artifacts(wheelhouse, ".whl").items():
        assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
        with zipfile.ZipFile(wheel) as archive:
            names = archive.namelist()
            info = next(n for n in names if n.endswith(".dist-info/METADATA")).rpartition("/")[0]
            metadata = archive.read(f"{info}/METADATA").decode()
        assert f"{info}/licenses/LICENSE" in names, name
        assert "Description-Content-Type: text/markdown" in metadata, name  # the README
        files = [f for f in names if ".dist-info/" not in f]
        for path in files:
            assert path not in owner, f"{path} is shipped by {owner[path]} and {name}"
            owner[path] = name
        if name == "tensordict":
            assert files == []  # the meta-package ships no code
        elif name == "tensordict-core":
            assert {"tensordict/__init__.py", "tensordict/py.typed"} <= set(files)
        else:
            sub = PLUGIN_DISTRIBUTIONS[name]
            assert {f"tensordict/{sub}/__init__.py", f"tensordict/{sub}/_plugin.py",
                    f"tensordict/{sub}/py.typed"} <= set(files)
            strays = [f for f in files if not f.startswith(f"tensordict/{sub}/")]
            assert strays == [], f"{name} ships files outside tensordict/{sub}/"


def _readme_command(marker: str) -> list[str]:
    """The README's ``python -m pip install --find-links wheelhouse ...`` line that
    contains ``marker``, as arguments."""
    lines = [line for line in (REPO / "README.md").read_text().splitlines()
             if line.startswith("python -m pip install --find-links wheelhouse") and marker in line]
    assert len(lines) == 1, (marker, lines)
    return shlex.split(lines[0].partition("#")[0])


def _fresh_venv(folder: Path) -> Path:
    """A new virtual environment; torch comes from the tox run's shared folder (as in every
    env of the run, see tools/install.py), so pip does not copy it again."""
    venv.create(folder, with_pip=True)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(folder),
                                                    "platbase": str(folder)}))
    shared = Path(sysconfig.get_path("purelib")) / "_shared_torch.pth"
    if shared.exists():
        shutil.copy(shared, site)
    return folder / "bin" / "python"


def _ours(python: Path) -> dict[str, str]:
    code = ("import importlib.metadata as m, json; print(json.dumps({d.metadata['Name']: "
            "d.version for d in m.distributions() "
            "if d.metadata['Name'].startswith('tensordict')}))")
    return json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                                     check=True).stdout)


def test_the_demo_env_runs_the_readme_all_command():
    # the `demo` tox env installs every package from a wheelhouse with this very command
    # (a fresh venv, the tour run in it: examples/tour.py imports every plugin)
    command = shlex.join(_readme_command('"tensordict[all]"')).replace("'", '"')
    assert command in (REPO / "tox.ini").read_text().split("[testenv:demo]")[1]


def test_readme_chosen_plugins_command_installs_only_those(wheelhouse, tmp_path):
    python = _fresh_venv(tmp_path / "venv")
    command = _readme_command("tensordict-core tensordict-memmap")
    subprocess.run([str(python), *command[1:]], cwd=wheelhouse.parent, check=True, timeout=600)
    assert set(_ours(python)) == {"tensordict-core", "tensordict-memmap"}
    code = ("import torch, tensordict; td = tensordict.TensorDict(a=torch.ones(2), "
            "batch_size=[2]).memmap(); assert td.is_memmap(); import tensordict.nn")
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True)
    assert "install tensordict-nn, or tensordict[nn]" in result.stderr  # the hint, not nn
    # every other plugin's wheel installs alone beside core: it requires nothing of ours
    # but core and what it declares (which the wheelhouse holds)
    for name, wheel in _artifacts(wheelhouse, ".whl").items():
        with zipfile.ZipFile(wheel) as archive:
            metadata = next(archive.read(n).decode() for n in archive.namelist()
                            if n.endswith(".dist-info/METADATA"))
        required = {re.match(r"Requires-Dist: ([\w.-]+)", line)[1]
                    for line in metadata.splitlines()
                    if line.startswith("Requires-Dist:") and "extra ==" not in line}
        ours = {r for r in required if r.startswith("tensordict")}
        assert ours <= {"tensordict-core", *DECLARED.get(name, ())}, name
