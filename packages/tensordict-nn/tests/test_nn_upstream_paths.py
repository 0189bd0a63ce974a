"""Upstream 0.15.3's tensordict.nn module paths: every public name of each module, and the
private names TorchRL imports, resolve to the one implementation (no copies)."""

import importlib

import pytest
import torch
from torch import distributions as D
from torch import nn
from torch.utils import _pytree

import tensordict
import tensordict.nn as tnn
from tensordict.base import NO_DEFAULT

# upstream's public names per module, less the bare imports that mean nothing here
# (``annotations``, ``TYPE_CHECKING`` and the deprecation helpers)
UPSTREAM_NAMES = {
    "tensordict.nn": [
        "AddStateIndependentNormalScale", "CompositeDistribution", "CudaGraphModule",
        "EnsembleModule", "InteractionType", "NormalParamExtractor", "OneHotCategorical",
        "ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential",
        "TensorClassModuleBase", "TensorClassModuleWrapper", "TensorDictModule",
        "TensorDictModuleBase", "TensorDictModuleWrapper", "TensorDictParams",
        "TensorDictSequential", "TruncatedNormal", "WrapModule", "add_custom_mapping",
        "as_tensordict_module", "biased_softplus", "composite_lp_aggregate", "dispatch",
        "interaction_type", "inv_softplus", "make_tensordict", "mappings", "rand_one_hot",
        "set_composite_lp_aggregate", "set_interaction_type", "set_skip_existing",
        "skip_existing",
    ],
    "tensordict.nn.common": [
        "NO_DEFAULT", "NestedKey", "TensorDict", "TensorDictBase", "TensorDictModule",
        "TensorDictModuleBase", "TensorDictModuleWrapper", "WrapModule",
        "as_tensordict_module", "dispatch", "is_tensor_collection", "make_tensordict",
        "unravel_key_list",
    ],
    "tensordict.nn.distributions": [
        "AddStateIndependentNormalScale", "CompositeDistribution", "Delta", "InteractionType",
        "NormalParamExtractor", "OneHotCategorical", "TruncatedNormal", "add_custom_mapping",
        "mappings", "rand_one_hot", "set_interaction_type",
    ],
    "tensordict.nn.functional_modules": [
        "PYTREE_REGISTERED_LAZY_TDS", "PYTREE_REGISTERED_TDS", "SUPPORTED_NODES",
        "is_tensor_collection", "set_tensor", "set_tensor_dict",
    ],
    "tensordict.nn.probabilistic": [
        "CompositeDistribution", "Delta", "InteractionType", "NestedKey", "OneHotCategorical",
        "ProbabilisticTensorDictModule", "ProbabilisticTensorDictSequential", "TensorDict",
        "TensorDictBase", "TensorDictModuleBase", "TensorDictSequential", "TruncatedNormal",
        "TruncatedStandardNormal", "composite_lp_aggregate", "dispatch", "interaction_type",
        "is_non_tensor", "is_tensor_collection", "set_composite_lp_aggregate",
        "set_interaction_type", "unravel_key",
    ],
    "tensordict.nn.utils": [
        "NestedKey", "add_custom_mapping", "biased_softplus", "composite_lp_aggregate", "expln",
        "inv_softplus", "mappings", "set_composite_lp_aggregate", "set_skip_existing",
        "skip_existing", "unravel_key_list",
    ],
}

# the private names TorchRL (0.14) and its tests import
TORCHRL_NAMES = {
    "tensordict.nn.utils": ["_set_dispatch_td_nn_modules", "_set_skip_existing_None", "Buffer",
                            "biased_softplus", "expln", "inv_softplus", "mappings"],
    "tensordict.nn.probabilistic": ["set_interaction_type", "interaction_type",
                                    "InteractionType", "_use_generator"],
    "tensordict.nn.functional_modules": ["_exclude_td_from_pytree"],
    "tensordict.nn.distributions.composite": ["_add_suffix"],
    "tensordict.nn.distributions": ["Delta", "NormalParamExtractor"],
}


def _pairs(table):
    return [(module, name) for module, names in table.items() for name in names]


@pytest.mark.parametrize(("module", "name"), _pairs(UPSTREAM_NAMES) + _pairs(TORCHRL_NAMES))
def test_name_importable(module, name):
    value = getattr(importlib.import_module(module), name)  # what ``from m import n`` does
    assert value is not None


# (module, name) -> the object it must be
CANONICAL = {
    # one implementation, re-exported
    ("tensordict.nn.common", "NO_DEFAULT"): NO_DEFAULT,
    ("tensordict.nn.common", "make_tensordict"): tensordict.make_tensordict,
    ("tensordict.nn.common", "unravel_key_list"): tensordict.unravel_key_list,
    ("tensordict.nn.utils", "unravel_key_list"): tensordict.unravel_key_list,
    ("tensordict.nn.utils", "NestedKey"): tensordict.NestedKey,
    ("tensordict.nn.utils", "Buffer"): nn.Buffer,
    ("tensordict.nn.functional_modules", "SUPPORTED_NODES"): _pytree.SUPPORTED_NODES,
    ("tensordict.nn.functional_modules", "is_tensor_collection"):
        tensordict.is_tensor_collection,
    ("tensordict.nn.probabilistic", "is_non_tensor"): tensordict.is_non_tensor,
    ("tensordict.nn.probabilistic", "unravel_key"): tensordict.unravel_key,
    ("tensordict.nn.probabilistic", "dispatch"): tnn.dispatch,
    ("tensordict.nn.probabilistic", "TensorDictSequential"): tnn.TensorDictSequential,
    ("tensordict.nn.probabilistic", "CompositeDistribution"): tnn.CompositeDistribution,
    ("tensordict.nn.probabilistic", "TruncatedNormal"): tnn.TruncatedNormal,
    ("tensordict.nn.probabilistic", "OneHotCategorical"): tnn.OneHotCategorical,
    ("tensordict.nn.probabilistic", "set_interaction_type"): tnn.set_interaction_type,
    ("tensordict.nn.probabilistic", "interaction_type"): tnn.interaction_type,
    ("tensordict.nn.probabilistic", "InteractionType"): tnn.InteractionType,
    ("tensordict.nn.probabilistic", "composite_lp_aggregate"): tnn.composite_lp_aggregate,
    ("tensordict.nn.distributions", "InteractionType"): tnn.InteractionType,
    ("tensordict.nn.utils", "composite_lp_aggregate"): tnn.composite_lp_aggregate,
    ("tensordict.nn.utils", "set_composite_lp_aggregate"): tnn.set_composite_lp_aggregate,
    ("tensordict.nn.distributions.composite", "composite_lp_aggregate"):
        tnn.composite_lp_aggregate,
}


@pytest.mark.parametrize(("module", "name"), list(CANONICAL))
def test_reexports_are_the_same_object(module, name):
    assert getattr(importlib.import_module(module), name) is CANONICAL[module, name]


def test_defining_modules_match_upstream():
    from tensordict.nn import utils

    # upstream defines the aggregation switch in tensordict.nn.utils
    assert tnn.composite_lp_aggregate.__module__ == "tensordict.nn.utils"
    assert tnn.set_composite_lp_aggregate.__module__ == "tensordict.nn.utils"
    assert issubclass(utils._set_skip_existing_None, utils.set_skip_existing)
    assert tnn.TensorClassModuleBase.__module__ == "tensordict.nn.tensorclass_module"


def test_classes_are_real():
    from tensordict.nn.functional_modules import PYTREE_REGISTERED_LAZY_TDS, PYTREE_REGISTERED_TDS
    from tensordict.nn.probabilistic import TruncatedStandardNormal

    assert issubclass(TruncatedStandardNormal, D.Distribution)
    assert issubclass(tnn.TruncatedNormal, TruncatedStandardNormal)
    assert issubclass(tnn.TensorDictSequential, tnn.TensorDictModule)
    assert issubclass(tnn.ProbabilisticTensorDictSequential, tnn.TensorDictSequential)
    assert issubclass(tnn.TensorClassModuleBase, nn.Module)
    assert issubclass(tnn.TensorClassModuleWrapper, tnn.TensorDictModuleBase)
    assert tensordict.TensorDict in PYTREE_REGISTERED_TDS
    assert tensordict.LazyStackedTensorDict in PYTREE_REGISTERED_LAZY_TDS
    assert all(cls in _pytree.SUPPORTED_NODES
               for cls in PYTREE_REGISTERED_TDS + PYTREE_REGISTERED_LAZY_TDS)


def test_torchrl_style_aliases():
    # envs/utils.py of TorchRL renames the interaction names on import
    from tensordict.nn.probabilistic import InteractionType as ExplorationType
    from tensordict.nn.probabilistic import interaction_type as exploration_type
    from tensordict.nn.probabilistic import set_interaction_type as set_exploration_type

    with set_exploration_type(ExplorationType.RANDOM):
        assert exploration_type() is ExplorationType.RANDOM
    assert exploration_type() is None
    assert isinstance(torch.nn.Buffer(torch.zeros(1)), tnn.utils.Buffer)
