"""Build the release artifacts: a wheel and an sdist of every package, into one folder.

    python tools/wheelhouse.py                      # every package, into wheelhouse/
    python tools/wheelhouse.py tensordict-h5        # only the packages named
    python tools/wheelhouse.py --outdir DIR ...

Each package is built with ``python -m build`` as its users' tools build it: the sdist
first, then the wheel *from that sdist*, so a wheel that differs from the one its sdist
makes cannot be shipped. ``twine check --strict`` then checks every artifact, and
``constraints.txt`` beside them pins each distribution to the version just built: pass it
to pip (``-c wheelhouse/constraints.txt``) with ``--find-links wheelhouse``, so pip takes
our distributions from the folder and never swaps one for the unrelated ``tensordict``
of the package index (see README.md, "Install").

Needs ``build``, ``twine`` and ``hatchling`` (``python tools/run.py build`` installs them
into a venv of its own and runs this script).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = REPO / "packages"


def distribution_name(artifact: Path) -> str:
    """``tensordict_core-0.1.0-py3-none-any.whl`` -> ``tensordict-core``."""
    return artifact.name.split("-")[0].replace("_", "-")


def version_of(artifact: Path) -> str:
    """The version in an artifact's file name (wheel or sdist)."""
    stem = artifact.name.removesuffix(".tar.gz")
    return stem.split("-")[1]


def build(folder: Path, outdir: Path) -> None:
    """sdist, then the wheel built from it, of the package in ``folder``, into ``outdir``."""
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(outdir), str(folder)],
        check=True, stdout=subprocess.DEVNULL,
    )


def write_constraints(outdir: Path) -> Path:
    """``constraints.txt``: each distribution of ``outdir`` at the version it holds, then
    the repository's own pins (``constraints.txt``: the torch build)."""
    pins = sorted({f"{distribution_name(w)}=={version_of(w)}" for w in outdir.glob("*.whl")})
    target = outdir / "constraints.txt"
    target.write_text(
        "# Our distributions at the versions of this wheelhouse: with --find-links here,\n"
        "# pip takes them from this folder and fails loudly, rather than swapping in the\n"
        "# unrelated `tensordict` of the package index, when a client's range excludes them.\n"
        + "".join(f"{pin}\n" for pin in pins)
        + (REPO / "constraints.txt").read_text()
    )
    return target


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", nargs="*", help="package folders under packages/ (all)")
    parser.add_argument("--outdir", type=Path, default=REPO / "wheelhouse")
    args = parser.parse_args(argv)
    names = args.packages or sorted(p.name for p in PACKAGES.iterdir() if p.is_dir())
    outdir: Path = args.outdir.resolve()
    outdir.mkdir(parents=True, exist_ok=True)
    # builds go to a fresh folder first: a failed run leaves the wheelhouse as it was
    with tempfile.TemporaryDirectory() as staging:
        for name in names:
            build(PACKAGES / name, Path(staging))
        artifacts = sorted(Path(staging).iterdir())
        subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                        *map(str, artifacts)], check=True)
        for prefix in {artifact.name.split("-")[0] for artifact in artifacts}:
            for stale in outdir.glob(f"{prefix}-*"):
                stale.unlink()  # the artifacts of an earlier build of the same distribution
        for artifact in artifacts:
            shutil.move(artifact, outdir / artifact.name)
    constraints = write_constraints(outdir)
    print(f"{len(artifacts)} artifacts of {len(names)} packages in {outdir}; pins: {constraints}")
    return outdir


if __name__ == "__main__":
    main()
