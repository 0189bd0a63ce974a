"""Install a client of upstream tensordict (TorchRL, ...) beside our packages, with pip.

    .venv/bin/python tools/install_client.py torchrl==0.14.1 [PIP OPTIONS]

Run it with the interpreter of the environment that holds our packages. A client whose
declared ``tensordict`` range excludes ours (TorchRL 0.14 declares ``tensordict<0.15``,
which excludes upstream's own 0.15.3 too) cannot be resolved with ours by pip, and pip has
no way to override a dependency's requirement. This script is that override, the one way
pip allows: it installs the client's other requirements with every tensordict distribution
of the environment pinned at its installed version (so pip refuses, loudly, rather than
replacing one), then the client itself with ``--no-deps``, and says which requirement it
left out. Extra arguments go to both pip calls (``--find-links``, ``-c``, ...).
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def is_tensordict(name: str) -> bool:
    """Whether ``name`` is a ``tensordict`` distribution (ours, upstream's, nightlies)."""
    normalized = re.sub(r"[-_.]+", "-", name).lower()
    return normalized == "tensordict" or normalized.startswith("tensordict-")


def installed_pins() -> list[str]:
    """``name==version`` of every tensordict distribution installed here."""
    return sorted(
        f"{dist.metadata['Name']}=={dist.version}"
        for dist in importlib.metadata.distributions()
        if is_tensordict(dist.metadata["Name"])
    )


def pip(*args: str, capture: bool = False) -> str:
    result = subprocess.run([sys.executable, "-m", "pip", *args], check=True, text=True,
                            stdout=subprocess.PIPE if capture else None)
    return result.stdout or ""


def client_requirements(client: str, pip_options: list[str]) -> list[str]:
    """What ``client`` requires (its extras' requirements left out), from pip's report."""
    report = json.loads(pip("install", "--quiet", "--dry-run", "--no-deps", "--report", "-",
                            *pip_options, client, capture=True))
    (item,) = report["install"]
    return [r for r in item["metadata"].get("requires_dist", []) if "extra ==" not in r]


def main(argv: list[str]) -> None:
    if not argv or argv[0].startswith("-"):
        sys.exit(__doc__)
    client, pip_options = argv[0], argv[1:]
    pins = installed_pins()
    if not pins:
        sys.exit("no tensordict distribution is installed in this environment: install ours first")
    requirements = client_requirements(client, pip_options)
    overridden = [r for r in requirements if is_tensordict(NAME.match(r).group(1))]
    others = [r for r in requirements if r not in overridden]
    with tempfile.TemporaryDirectory() as folder:
        constraints = Path(folder) / "installed-tensordict.txt"
        constraints.write_text("".join(f"{pin}\n" for pin in pins))
        if others:
            pip("install", "--constraint", str(constraints), *pip_options, *others)
        pip("install", "--no-deps", "--constraint", str(constraints), *pip_options, client)
    print(f"installed {client} on {', '.join(pins)}; its requirement "
          f"{' and '.join(overridden) or '(none)'} was overridden")


if __name__ == "__main__":
    main(sys.argv[1:])
