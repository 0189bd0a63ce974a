"""Distributions and parameter modules for probabilistic TensorDict modules.

>>> import torch
>>> from tensordict.nn.distributions import Delta
>>> Delta(torch.ones(3)).sample()
tensor([1., 1., 1.])
"""

from tensordict.nn.distributions import continuous, discrete
from tensordict.nn.distributions.composite import (
    CompositeDistribution,
    composite_lp_aggregate,
    set_composite_lp_aggregate,
)
from tensordict.nn.distributions.continuous import (
    AddStateIndependentNormalScale,
    Delta,
    NormalParamExtractor,
    NormalParamWrapper,
)
from tensordict.nn.distributions.discrete import OneHotCategorical, rand_one_hot
from tensordict.nn.distributions.truncated_normal import TruncatedNormal
from tensordict.nn.interaction import InteractionType, set_interaction_type
from tensordict.nn.utils import add_custom_mapping, biased_softplus, inv_softplus, mappings

__all__ = [
    "AddStateIndependentNormalScale",
    "CompositeDistribution",
    "Delta",
    "InteractionType",
    "NormalParamExtractor",
    "NormalParamWrapper",
    "OneHotCategorical",
    "TruncatedNormal",
    "add_custom_mapping",
    "biased_softplus",
    "composite_lp_aggregate",
    "continuous",
    "discrete",
    "inv_softplus",
    "mappings",
    "rand_one_hot",
    "set_composite_lp_aggregate",
    "set_interaction_type",
]
