"""The repository's commands, on a machine with only Python: each installs what it needs.

    python tools/run.py demo            # the tour (examples/tour.py), every package installed
    python tools/run.py test [ARGS]     # every test: `tox [ARGS]` (what .ci/run runs)
    python tools/run.py build [ARGS]    # wheel + sdist of every package into wheelhouse/

The first run makes a virtual environment in ``.tools/venv`` and installs
``tools/requirements.txt`` into it (tox, build, twine, hatchling), with the repository's
``constraints.txt``; later runs reuse it. Nothing is installed outside the repository.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TOOLS_VENV = REPO / ".tools" / "venv"

#: each command: what runs inside the tools venv (extra arguments are appended)
COMMANDS: dict[str, list[str]] = {
    "demo": ["-m", "tox", "-e", "demo"],
    "test": ["-m", "tox"],
    "build": [str(REPO / "tools" / "wheelhouse.py")],
}


def tools_python() -> Path:
    """The tools venv's interpreter, created and brought up to tools/requirements.txt."""
    python = TOOLS_VENV / "bin" / "python"
    if not python.exists():
        venv.create(TOOLS_VENV, with_pip=True, clear=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--constraint",
         str(REPO / "constraints.txt"), "--requirement", str(REPO / "tools" / "requirements.txt")],
        check=True,
    )
    return python


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in COMMANDS:
        print(__doc__, file=sys.stderr)
        return 2
    command = [str(tools_python()), *COMMANDS[argv[0]], *argv[1:]]
    return subprocess.run(command, cwd=REPO).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
