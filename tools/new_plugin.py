"""Start a third-party tensordict plugin from the template in ``templates/plugin``.

    python tools/new_plugin.py my_plugin ../my-plugin [--distribution my-plugin]

Copies the template to the new folder, renaming its import package ``td_plugin_template``
to ``my_plugin`` and its distribution ``tensordict-plugin-template`` to ``my-plugin``
(by default the package name with dashes), in file names and contents alike. The
template itself is a working plugin: CI renders it this way, installs it beside
tensordict-core and runs its tests (the ``plugin-template`` tox env).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "plugin"
PACKAGE, DISTRIBUTION = "td_plugin_template", "tensordict-plugin-template"


def render(package: str, destination: Path, distribution: str | None = None) -> Path:
    """Copy the template to ``destination`` (which must not exist) under the new names."""
    if not package.isidentifier():
        raise ValueError(f"{package!r} is not a Python package name")
    replacements = {PACKAGE: package, DISTRIBUTION: distribution or package.replace("_", "-")}
    shutil.copytree(TEMPLATE, destination, ignore=shutil.ignore_patterns(
        "__pycache__", ".ruff_cache", ".pytest_cache", ".tox"))
    for path in sorted(destination.rglob("*"), key=lambda p: len(p.parts), reverse=True):
        if path.is_file():
            text = path.read_text()
            for old, new in replacements.items():
                text = text.replace(old, new)
            path.write_text(text)
        if PACKAGE in path.name:
            path.rename(path.with_name(path.name.replace(PACKAGE, package)))
    return destination


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", help="the import package of the plugin (an identifier)")
    parser.add_argument("destination", type=Path, help="the new plugin's folder")
    parser.add_argument("--distribution", help="its distribution name (the package's, dashed)")
    args = parser.parse_args()
    print(render(args.package, args.destination, args.distribution))


if __name__ == "__main__":
    main()
