"""torch.func's transforms (jvp, vjp, grad, jacrev) with TensorDicts and lazy stacks as
primals, tangents and cotangents, and over a module's parameters (to_module,
functional_call). Results and errors as upstream tensordict 0.15.3 gives them."""

import pytest
import torch
from torch.func import functional_call, grad, jacrev, jvp, vjp

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack


def _td():
    return TensorDict(a=torch.arange(3.0), n=TensorDict(b=torch.ones(3, 2), batch_size=[3]),
                      batch_size=[3])


def _square(t):
    return t.apply(lambda x: x ** 2)


def _scalar(t):
    return (t["a"] ** 2).sum() + t["n", "b"].sum() * 3


def _ones(t):
    return t.apply(torch.ones_like)


@pytest.mark.parametrize("lazy", [False, True])
def test_jvp_of_a_tensordict_function(lazy):
    primal = lazy_stack([_td(), _td()]) if lazy else _td()
    out, tangent = jvp(_square, (primal,), (_ones(primal),))
    assert type(out) is type(primal) and type(tangent) is type(primal)
    assert out.batch_size == primal.batch_size == tangent.batch_size
    assert torch.equal(out["a"], primal["a"] ** 2)
    assert torch.equal(tangent["a"], 2 * primal["a"])
    assert torch.equal(tangent["n", "b"], 2 * primal["n", "b"])


def test_jvp_to_a_scalar():
    out, tangent = jvp(_scalar, (_td(),), (_ones(_td()),))
    assert out.item() == 23.0 and tangent.item() == 24.0


@pytest.mark.parametrize("tangent", [_td().exclude("a"), torch.ones(3)])
def test_jvp_tangents_of_another_structure_raise(tangent):
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(_square, (_td(),), (tangent,))


@pytest.mark.parametrize("lazy", [False, True])
def test_vjp_of_a_tensordict_function(lazy):
    primal = lazy_stack([_td(), _td()]) if lazy else _td()
    out, pullback = vjp(_square, primal)
    (cotangent,) = pullback(_ones(out))
    assert type(cotangent) is type(primal) and cotangent.batch_size == primal.batch_size
    assert torch.equal(cotangent["a"], 2 * primal["a"])
    assert torch.equal(cotangent["n", "b"], 2 * primal["n", "b"])


def test_vjp_to_a_scalar():
    out, pullback = vjp(_scalar, _td())
    (cotangent,) = pullback(torch.ones_like(out))
    assert out.item() == 23.0
    assert torch.equal(cotangent["a"], torch.tensor([0.0, 2.0, 4.0]))
    assert torch.equal(cotangent["n", "b"], torch.full((3, 2), 3.0))


@pytest.mark.parametrize("lazy,cotangent", [
    (False, lambda out: torch.ones(3)),
    (False, lambda out: _ones(out.exclude("a"))),
    (True, lambda out: _ones(out.to_tensordict())),  # its repr printed a lazy placeholder
])
def test_vjp_cotangents_of_another_structure_raise(lazy, cotangent):
    out, pullback = vjp(_square, lazy_stack([_td(), _td()]) if lazy else _td())
    with pytest.raises(RuntimeError, match="pytree structure of cotangents") as info:
        pullback(cotangent(out))
    assert "primal output: " + type(out).__name__ in str(info.value)


@pytest.mark.parametrize("lazy", [False, True])
def test_grad(lazy):
    primal = lazy_stack([_td(), _td()]) if lazy else _td()
    gradient = grad(_scalar)(primal)
    assert type(gradient) is type(primal) and gradient.batch_size == primal.batch_size
    assert torch.equal(gradient["a"], 2 * primal["a"])
    assert torch.equal(gradient["n", "b"], torch.full_like(primal["n", "b"], 3.0))


def test_jacrev():
    jacobian = jacrev(lambda t: t["a"] ** 2)(_td())
    assert jacobian.batch_size == (3,)
    assert torch.equal(jacobian["a"], torch.diag(torch.tensor([0.0, 2.0, 4.0])))
    assert jacobian["n", "b"].shape == (3, 3, 2) and not jacobian["n", "b"].any()


def _module():
    linear = torch.nn.Linear(3, 2)
    with torch.no_grad():
        linear.weight.copy_(torch.arange(6.0).view(2, 3))
        linear.bias.copy_(torch.ones(2))
    return linear, TensorDict.from_module(linear).detach()


def _call(linear, params, x):
    with params.to_module(linear):
        return linear(x)


def test_transforms_over_module_parameters():
    linear, params = _module()
    x = torch.ones(4, 3)
    assert torch.equal(_call(linear, params, x), torch.tensor([[4.0, 13.0]] * 4))
    gradient = grad(lambda p: _call(linear, p, x).sum())(params)
    assert torch.equal(gradient["weight"], torch.full((2, 3), 4.0))
    assert torch.equal(gradient["bias"], torch.full((2,), 4.0))
    (cotangent,) = vjp(lambda p: _call(linear, p, x), params)[1](torch.ones(4, 2))
    assert (cotangent == gradient).all()
    flat = grad(lambda p: functional_call(linear, dict(p.flatten_keys(".").items()), (x,))
                .sum())(params)
    assert (flat == gradient).all()
    # a deliberate difference: upstream's tangent through to_module is zero
    _, tangent = jvp(lambda p: _call(linear, p, x), (params,), (_ones(params),))
    assert torch.equal(tangent, torch.full((4, 2), 4.0))


@pytest.mark.parametrize("stack", [torch.stack, lazy_stack])
def test_an_ensemble_through_vmap(stack):
    linear, params = _module()
    x = torch.ones(4, 3)
    ensemble = stack([params, params * 2])
    out = torch.vmap(lambda p, x: _call(linear, p, x), (0, None))(ensemble, x)
    assert torch.equal(out, torch.stack([_call(linear, params, x),
                                         _call(linear, params * 2, x)]))
    # (upstream raises for a lazy stack here: its parts reach to_module unbatched)
    grads = torch.vmap(grad(lambda p: _call(linear, p, x).pow(2).sum()))(ensemble)
    assert type(grads) is TensorDict and grads.batch_size == (2,)
    assert torch.equal(grads["bias"][1], 2 * _call(linear, params * 2, x).sum(0))


def test_jacrev_of_a_lazy_stack():
    stack = lazy_stack([_td(), _td()])
    jacobian = jacrev(lambda t: t["a"] ** 2)(stack)
    assert isinstance(jacobian, LazyStackedTensorDict)
    assert (tuple(jacobian.batch_size), jacobian.stack_dim) == ((2, 2, 3), 0)
    first = jacobian.tensordicts[0]
    assert first.batch_size == (2, 3) and first["n"].batch_size == (2, 3)
    assert torch.equal(first["a"][0], torch.diag(torch.tensor([0.0, 2.0, 4.0])))
    assert not first["a"][1].any() and not jacobian.tensordicts[1]["a"][0].any()
