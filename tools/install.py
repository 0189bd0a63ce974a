"""tox's install command: pip, with one copy of torch shared by every env of a run.

torch and its requirements take over a gigabyte per virtual environment; sixteen tox
envs would hold sixteen copies. The first install of a run puts them, at the version
the constraints file pins, into ``.tox/.shared-torch``; every env gets a ``.pth`` file
naming that folder, so pip finds torch already installed and puts only the env's own
packages into the env. A package an env needs at another version than the shared
folder holds is installed into the env, which comes first on ``sys.path``.

Usage (tox.ini): ``install_command = python -I tools/install.py {opts} {packages}``.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

SHARED_REQUIREMENT = "torch"


def pip(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "pip", *args], check=True)


def ensure_shared_folder(folder: Path) -> None:
    """Fill ``folder`` with torch and its requirements once (a lock guards parallel envs)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f"{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if folder.is_dir():
            return
        partial = folder.with_name(folder.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        pip("install", "--quiet", "--target", str(partial), SHARED_REQUIREMENT)
        partial.rename(folder)


def main(argv: list[str]) -> None:
    env_dir = Path(sys.prefix)
    shared = env_dir.parent / ".shared-torch"
    ensure_shared_folder(shared)
    site_packages = Path(sysconfig.get_path("purelib"))
    (site_packages / "_shared_torch.pth").write_text(f"{shared}\n")
    pip("install", *argv)


if __name__ == "__main__":
    main(sys.argv[1:])
