"""tensordict.nn: modules that read and write TensorDicts.

>>> import torch
>>> from torch import nn
>>> from tensordict import TensorDict
>>> from tensordict.nn import TensorDictModule, TensorDictSequential
>>> net = TensorDictSequential(
...     TensorDictModule(nn.Linear(3, 8), in_keys=["x"], out_keys=["hidden"]),
...     TensorDictModule(nn.Linear(8, 1), in_keys=["hidden"], out_keys=["y"]))
>>> net(TensorDict(x=torch.randn(4, 3), batch_size=[4]))["y"].shape
torch.Size([4, 1])
"""

from tensordict.nn._version import __version__
from tensordict.nn.common import (
    TensorDictModule,
    TensorDictModuleBase,
    TensorDictModuleWrapper,
    WrapModule,
    as_tensordict_module,
    dispatch,
)
from tensordict.nn.cudagraphs import CudaGraphModule
from tensordict.nn.distributions import (
    AddStateIndependentNormalScale,
    CompositeDistribution,
    NormalParamExtractor,
    OneHotCategorical,
    TruncatedNormal,
    composite_lp_aggregate,
    rand_one_hot,
    set_composite_lp_aggregate,
)
from tensordict.nn.ensemble import EnsembleModule
from tensordict.nn.functional_modules import (
    extract_weights_and_buffers,
    get_functional,
    is_functional,
    make_functional,
    repopulate_module,
)
from tensordict.nn.fx import symbolic_trace
from tensordict.nn.interaction import InteractionType, interaction_type, set_interaction_type
from tensordict.nn.params import TensorDictParams
from tensordict.nn.probabilistic import (
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
)
from tensordict.nn.sequence import TensorDictSequential
from tensordict.nn.tensorclass_module import TensorClassModuleBase, TensorClassModuleWrapper
from tensordict.nn.utils import (
    add_custom_mapping,
    biased_softplus,
    inv_softplus,
    make_tensordict,
    mappings,
    set_skip_existing,
    skip_existing,
)

__all__ = [
    "AddStateIndependentNormalScale",
    "CompositeDistribution",
    "CudaGraphModule",
    "EnsembleModule",
    "InteractionType",
    "NormalParamExtractor",
    "OneHotCategorical",
    "ProbabilisticTensorDictModule",
    "ProbabilisticTensorDictSequential",
    "TensorClassModuleBase",
    "TensorClassModuleWrapper",
    "TensorDictModule",
    "TensorDictModuleBase",
    "TensorDictModuleWrapper",
    "TensorDictParams",
    "TensorDictSequential",
    "TruncatedNormal",
    "WrapModule",
    "__version__",
    "add_custom_mapping",
    "as_tensordict_module",
    "biased_softplus",
    "composite_lp_aggregate",
    "dispatch",
    "extract_weights_and_buffers",
    "get_functional",
    "interaction_type",
    "inv_softplus",
    "is_functional",
    "make_functional",
    "make_tensordict",
    "mappings",
    "rand_one_hot",
    "repopulate_module",
    "set_composite_lp_aggregate",
    "set_interaction_type",
    "set_skip_existing",
    "skip_existing",
    "symbolic_trace",
]
