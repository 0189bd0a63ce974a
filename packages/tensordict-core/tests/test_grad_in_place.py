"""In-place writes into leaves that require grad follow torch's rules as upstream
tensordict 0.15.3 applies them: refused (a RuntimeError, nothing written) with grad
enabled, done under ``torch.no_grad()``, the leaves staying leaves that require grad;
a new value set in place of a leaf, ``detach_`` and ``requires_grad_`` are allowed."""

import pytest
import torch

from tensordict import TensorDict, lazy_stack


def _leaves():
    return TensorDict(a=torch.zeros(3, requires_grad=True),
                      n=TensorDict(b=torch.ones(3, requires_grad=True), batch_size=[3]),
                      batch_size=[3])


# op -> the values of "a" and ("n", "b") after it, under no_grad (as upstream)
IN_PLACE = {
    "add_": (lambda t: t.add_(1), 1.0, [2.0] * 3),
    "mul_": (lambda t: t.mul_(2), 0.0, [2.0] * 3),
    "zero_": (lambda t: t.zero_(), 0.0, [0.0] * 3),
    "fill_": (lambda t: t.fill_("a", 1), 1.0, [1.0] * 3),
    "copy_": (lambda t: t.copy_(t.detach().clone()), 0.0, [1.0] * 3),
    "update_": (lambda t: t.update_({"a": torch.ones(3)}), 1.0, [1.0] * 3),
    "set_": (lambda t: t.set_("a", torch.ones(3)), 1.0, [1.0] * 3),
    "setitem_index": (lambda t: t.__setitem__(0, t[0].detach().clone()), 0.0, [1.0] * 3),
    "apply_": (lambda t: t.apply_(lambda x: x + 1), 1.0, [2.0] * 3),
    "clamp_max_": (lambda t: t.clamp_max_(0.5), 0.0, [0.5] * 3),
    "iadd": (lambda t: t.__iadd__(1), 1.0, [2.0] * 3),
    "lerp_": (lambda t: t.lerp_(t.detach().clone(), 0.5), 0.0, [1.0] * 3),
    "masked_fill_": (lambda t: t.masked_fill_(torch.tensor([True, False, True]), 5.0),
                     None, [5.0, 1.0, 5.0]),
    "sub_": (lambda t: t.sub_(t.detach()), 0.0, [0.0] * 3),
}


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_refused_with_grad_enabled_and_nothing_written(name):
    td = _leaves()
    # torch's words, which upstream passes on (set_ and apply_ say "Failed to update")
    phrase = "" if name in ("set_", "apply_") else "leaf Variable that requires grad"
    with pytest.raises(RuntimeError, match=phrase):
        IN_PLACE[name][0](td)
    assert torch.equal(td["a"], torch.zeros(3)) and torch.equal(td["n", "b"], torch.ones(3))
    assert td["a"].is_leaf and td["a"].requires_grad and td["n", "b"].requires_grad


@pytest.mark.parametrize("name", list(IN_PLACE))
def test_done_under_no_grad(name):
    op, a, b = IN_PLACE[name]
    td = _leaves()
    with torch.no_grad():
        op(td)
    if a is not None:
        assert torch.equal(td["a"], torch.full((3,), a))
    assert torch.equal(td["n", "b"], torch.tensor(b))
    assert td["a"].is_leaf and td["a"].requires_grad and td["a"].grad_fn is None


LAZY = {
    "add_": (lambda t: t.add_(1), 1.0),
    "zero_": (lambda t: t.zero_(), 0.0),
    "update_": (lambda t: t.update_({"a": torch.ones(2, 3)}), 1.0),
    "set_": (lambda t: t.set_("a", torch.ones(2, 3)), 1.0),
}


@pytest.mark.parametrize("name", list(LAZY))
def test_a_lazy_stack_of_such_leaves(name):
    op, a = LAZY[name]
    stack = lazy_stack([_leaves(), _leaves()])
    with pytest.raises(RuntimeError):
        op(stack)
    assert all(torch.equal(part["a"], torch.zeros(3)) for part in stack.tensordicts)
    with torch.no_grad():
        op(stack)
    assert torch.equal(stack["a"], torch.full((2, 3), a))
    assert all(part["a"].requires_grad and part["a"].is_leaf for part in stack.tensordicts)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_what_torch_allows(grad_mode):
    with torch.set_grad_enabled(grad_mode):
        td = _leaves()
        assert td.set("a", torch.ones(3)) is td and not td["a"].requires_grad
        td = _leaves()
        td.data.add_(1)  # through .data: no autograd check
        assert torch.equal(td["a"], torch.ones(3)) and td["a"].requires_grad
        td = _leaves()
        assert td.detach_() is td and not td["n", "b"].requires_grad
        td = _leaves()
        assert td.requires_grad_(False) is td and not td["a"].requires_grad
