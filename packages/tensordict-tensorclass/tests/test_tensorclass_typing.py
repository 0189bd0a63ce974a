"""Type checkers see the fields and the batch_size/device/names arguments (mypy run)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GOOD = '''
import torch
from tensordict import TensorClass, tensorclass


class Pair(TensorClass):
    left: torch.Tensor
    right: torch.Tensor
    tag: str = "pair"


class Frozen(TensorClass, frozen=True):
    x: torch.Tensor


@tensorclass
class Decorated:
    x: torch.Tensor
    n: int = 0


def total(pair: Pair) -> torch.Tensor:
    return pair.left + pair.right


p = Pair(left=torch.zeros(3), right=torch.ones(3), batch_size=[3], device="cpu")
q = Pair(torch.zeros(3), torch.ones(3), "other", batch_size=[3], names=["n"])
f = Frozen(x=torch.zeros(2), batch_size=[2])
d = Decorated(torch.zeros(2), n=1)
t: torch.Tensor = total(p)
s: str = p.tag
'''

BAD = '''
import torch
from tensordict import TensorClass


class Pair(TensorClass):
    left: torch.Tensor


Pair(left=torch.zeros(3), wrong=1)
Pair(left="no", batch_size=[3])
x: str = Pair(left=torch.zeros(3)).left
'''


def _mypy_command() -> list[str]:
    if importlib.util.find_spec("mypy") is not None:
        return [sys.executable, "-m", "mypy"]
    executable = shutil.which("mypy")
    if executable is None:
        pytest.skip("mypy is not installed (add it to the test dependencies to run this check)")
    return [executable, "--python-executable", sys.executable]


def test_mypy_sees_fields_and_constructor_arguments(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(textwrap.dedent(GOOD))
    (tmp_path / "bad.py").write_text(textwrap.dedent(BAD))
    result = subprocess.run(
        [*_mypy_command(), "--follow-imports=silent", "--cache-dir", str(tmp_path / "cache"),
         "--no-error-summary", "good.py", "bad.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )
    lines = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert not [line for line in lines if line.startswith("good.py")], result.stdout
    bad = sorted(int(line.split(":")[1]) for line in lines if line.startswith("bad.py"))
    # unknown keyword; str given for a Tensor field; a Tensor field read as str
    assert bad == [10, 11, 12], result.stdout + result.stderr
