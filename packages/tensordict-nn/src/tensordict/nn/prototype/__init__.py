"""Legacy import path of older tensordict releases: ``tensordict.nn.prototype``.

>>> from tensordict.nn.prototype import ProbabilisticTensorDictModule
>>> from tensordict.nn import ProbabilisticTensorDictModule as current
>>> ProbabilisticTensorDictModule is current
True
"""

from tensordict.nn.probabilistic import (
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
)

__all__ = ["ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential"]
