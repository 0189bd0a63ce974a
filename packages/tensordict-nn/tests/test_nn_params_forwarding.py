"""TensorDictParams inherits TensorDictBase's shared methods but runs its TensorDict's
(results that are the TensorDict are the TensorDictParams), keeps nn.Module's where both
define one, and its own math."""

from __future__ import annotations

import copy

import torch
from torch import nn

from tensordict import TensorDict
from tensordict.nn import TensorDictParams


def _params() -> TensorDictParams:
    return TensorDictParams(TensorDict(a=torch.zeros(3), n={"b": torch.ones(2)}))


def test_shared_methods_run_on_the_data() -> None:
    params = _params()
    selected = params.select("a")
    assert type(selected) is TensorDict and set(selected.keys()) == {"a"}
    assert isinstance(selected["a"], nn.Parameter) and selected["a"] is params["a"]
    assert params.lock_() is params and params._param_td.is_locked
    with params.unlock_():
        assert not params._param_td.is_locked
        params.rename_key_("a", "c")
    assert params._param_td.is_locked and set(params.keys()) == {"c", "n"}
    assert isinstance(params["c"], nn.Parameter)
    assert params.requires_grad and params.data["c"].requires_grad is False


def test_module_methods_stay_the_modules() -> None:
    params = _params()
    assert TensorDictParams.state_dict is nn.Module.state_dict
    assert list(params.state_dict()) == ["a", "n.b"]
    params.load_state_dict({"a": torch.ones(3), "n.b": torch.zeros(2)})
    assert params["a"].tolist() == [1.0, 1.0, 1.0]
    params["a"].grad = torch.ones(3)
    assert params.zero_grad() is None and params["a"].grad is None
    assert params.type(torch.float64) is params and params["a"].dtype is torch.float64


def test_math_and_comparisons() -> None:
    params = _params()
    assert type(params + 1) is TensorDict and (params + 1)["a"].tolist() == [1.0] * 3
    assert (params < 1)["n", "b"].tolist() == [False, False]
    assert type(torch.stack([params, params])) is TensorDict
    copied = copy.copy(params)
    assert type(copied) is TensorDictParams and copied["a"] is params["a"]

