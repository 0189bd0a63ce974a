"""In-place writes into a TensorDictParams follow upstream tensordict 0.15.3: arithmetic
in place (``add_``, ``mul_``) is refused with grad enabled, as torch refuses it on a leaf
parameter (a RuntimeError, nothing written), and done under ``torch.no_grad()``; the
writes of values (``zero_``, ``update_``, ``set_``, ``copy_``, ``apply_``, through
``.data``) are done either way. The entries stay parameters that require grad."""

import pytest
import torch

from tensordict import TensorDict
from tensordict.nn import TensorDictParams


def _params():
    return TensorDictParams(TensorDict(a=torch.zeros(3),
                                       n=TensorDict(b=torch.ones(3), batch_size=[3]),
                                       batch_size=[3]))


def _state(params):
    return (params["a"].tolist(), params["n", "b"].tolist(), type(params["a"]),
            params["a"].requires_grad, params["n", "b"].requires_grad)


P = torch.nn.Parameter
# op -> the values of "a" and ("n", "b") after it (under no_grad, and with grad enabled
# where upstream writes them then too)
WRITES = {
    "zero_": (lambda p: p.zero_(), [0.0] * 3, [0.0] * 3),
    "update_": (lambda p: p.update_({"a": torch.ones(3)}), [1.0] * 3, [1.0] * 3),
    "set_": (lambda p: p.set_("a", torch.ones(3)), [1.0] * 3, [1.0] * 3),
    "copy_": (lambda p: p.copy_(p.detach().clone()), [0.0] * 3, [1.0] * 3),
    "apply_": (lambda p: p.apply_(lambda x: x + 1), [1.0] * 3, [2.0] * 3),
    "data": (lambda p: p.data.add_(1), [1.0] * 3, [2.0] * 3),
}
ARITHMETIC = {
    "add_": (lambda p: p.add_(1), [1.0] * 3, [2.0] * 3),
    "mul_": (lambda p: p.mul_(2), [0.0] * 3, [2.0] * 3),
}


@pytest.mark.parametrize("grad_mode", [True, False])
@pytest.mark.parametrize("name", list(WRITES))
def test_value_writes_are_done_in_either_grad_mode(name, grad_mode):
    op, a, b = WRITES[name]
    params = _params()
    with torch.set_grad_enabled(grad_mode):
        op(params)
    assert _state(params) == (a, b, P, True, True)


@pytest.mark.parametrize("name", list(ARITHMETIC))
def test_arithmetic_in_place_needs_no_grad(name):
    op, a, b = ARITHMETIC[name]
    params = _params()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        op(params)
    assert _state(params) == ([0.0] * 3, [1.0] * 3, P, True, True)
    with torch.no_grad():
        op(params)
    assert _state(params) == (a, b, P, True, True)


def test_functional_call_through_to_module_keeps_the_parameters():
    linear = torch.nn.Linear(3, 2)
    params = TensorDictParams(TensorDict.from_module(linear))
    ones = params.detach().clone().apply(lambda x: x * 0 + 1)
    with ones.to_module(linear):
        out = linear(torch.ones(1, 3))
    assert torch.equal(out, torch.full((1, 2), 4.0))
    assert type(params["weight"]) is P and params["weight"].requires_grad
    assert linear.weight is params["weight"]
