"""How the distributions are installed and what their wheels contain.

The name ``tensordict`` on PyPI belongs to the unrelated upstream project: these tests
prove that what is installed is ours, that each file belongs to exactly one of our
distributions, and that ``import tensordict`` stays lazy about plugins.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import subprocess
import sys
import urllib.parse
import zipfile
from pathlib import Path

import pytest

import tensordict
from tensordict import plugins

REPO = Path(__file__).resolve().parents[1]
# each plugin distribution's package: the first subpackage listed for it (tensordict-tensorclass
# also provides ``tensordict.tensorclass``, upstream's module path, as the module below)
PLUGIN_DISTRIBUTIONS: dict[str, str] = {}
for _sub, _extra in plugins.SUBPACKAGES.items():
    PLUGIN_DISTRIBUTIONS.setdefault(f"tensordict-{_extra}", _sub)
#: single-module facades of upstream module paths that a plugin ships beside its package
FACADES = {"tensordict-tensorclass": {"tensordict/tensorclass.py"}}


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
    assert importlib.metadata.version("tensordict") == "0.1.0"  # our meta-package
    assert not any(
        dist.metadata["Name"] == "tensordict" and dist.version.startswith("0.15")
        for dist in importlib.metadata.distributions()
    )
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


def test_wheel_contents(tmp_path):
    folders = sorted((REPO / "packages").iterdir())
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path), *map(str, folders)],
        check=True, timeout=300,
    )
    wheels = {w.name.split("-")[0].replace("_", "-"): w for w in tmp_path.glob("*.whl")}
    assert set(wheels) == {folder.name for folder in folders}
    owner: dict[str, str] = {}
    for name, wheel in wheels.items():
        assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
        with zipfile.ZipFile(wheel) as archive:
            files = [f for f in archive.namelist() if ".dist-info/" not in f]
        for path in files:
            assert path not in owner, f"{path} is shipped by {owner[path]} and {name}"
            owner[path] = name
        if name == "tensordict":
            assert files == []  # the meta-package ships no code
        elif name == "tensordict-core":
            assert {"tensordict/__init__.py", "tensordict/py.typed"} <= set(files)
        else:
            sub = PLUGIN_DISTRIBUTIONS[name]
            assert f"tensordict/{sub}/__init__.py" in files
            assert f"tensordict/{sub}/_plugin.py" in files
            strays = [f for f in files if not f.startswith(f"tensordict/{sub}/")
                      and f not in FACADES.get(name, set())]
            assert strays == [], f"{name} ships files outside tensordict/{sub}/"
