"""A probabilistic module whose input lacks a distribution parameter raises the ValueError
upstream 0.15.3 raises, which is also a KeyError naming the missing key."""

from __future__ import annotations

import pytest
import torch
from torch import distributions

from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule


@pytest.mark.parametrize("error", [ValueError, KeyError])
def test_missing_distribution_parameter(error):
    module = ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["x"],
                                           distribution_class=distributions.Normal)
    td = TensorDict(loc=torch.zeros(3), batch_size=[3])
    with pytest.raises(error, match="'scale' is missing"):
        module(td)
    assert list(td.keys()) == ["loc"]  # nothing written
