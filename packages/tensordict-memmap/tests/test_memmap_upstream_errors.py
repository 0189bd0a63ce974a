"""Memory-mapping a leaf of a layout that cannot be mapped (sparse) raises the RuntimeError
upstream 0.15.3 raises (and the TypeError ours did), before anything is written."""

from __future__ import annotations

import pytest
import torch

from tensordict import TensorDict


@pytest.mark.parametrize("error", [RuntimeError, TypeError])
def test_sparse_leaf_is_refused_before_any_write(tmp_path, error):
    td = TensorDict(a=torch.zeros(3), s=torch.eye(3).to_sparse(), batch_size=[3])
    with pytest.raises(error, match="'s'.*sparse"):
        td.memmap_(tmp_path / "out")
    assert not td.is_memmap() and td["s"].is_sparse
    assert not (tmp_path / "out" / "meta.json").exists()
