"""The seeds' TensorDict.map example runs as written on a memory-mapped dataset, with 4
workers started by fork, spawn and forkserver, and updates the files in place."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tensordict import TensorDict

pytest.importorskip("tensordict.memmap")

SCRIPT = Path(__file__).parent / "scripts" / "map_seed_example.py"


@pytest.mark.parametrize("start_method", ["fork", "spawn", "forkserver"])
def test_map_seed_example(tmp_path, start_method):
    gen = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (12, 8, 8, 3), dtype=torch.uint8, generator=gen)
    labels = torch.randint(0, 100, (12,), generator=gen)
    TensorDict(images=images, labels=labels, batch_size=[12]).memmap(tmp_path / "dataset")
    done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "dataset"), start_method],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "result: None" in done.stdout  # the function updated the data in place
    assert "12/12" in done.stderr  # the tqdm bar went over every element
    result = TensorDict.load_memmap(tmp_path / "dataset")
    assert torch.equal(result["images"], images.flip(-2))
    assert torch.equal(result["labels"], labels // 10)
