"""Reshaping lazy stacks of parts of different keys and shapes, and stacking such lazy
stacks (with each other and with TensorDicts): the batch sizes (and errors) upstream
tensordict 0.15.3 gives, and values read back as from the equivalent TensorDict.

Upstream builds some of these results as lazy stacks of one lazy stack per element (and
then cannot stack their entries: ``get`` raises); ours keeps the parts whole, so the
stack dim and parts differ from upstream's while the batch size and values match."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict, lazy_stack


def _make(kind):
    if kind == "ragged":  # parts of different batch sizes
        return lazy_stack([TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3]),
                           TensorDict(a=torch.ones(2, 4), batch_size=[2, 4])])
    stack_dim = int(kind[-1])
    if kind.startswith("hom"):
        parts = [TensorDict(a=torch.arange(6.0).view(2, 3) + 10 * i, batch_size=[2, 3])
                 for i in range(2)]
    elif kind.startswith("hetk"):  # different keys
        parts = [TensorDict(a=torch.arange(6.0).view(2, 3), batch_size=[2, 3]),
                 TensorDict(a=-torch.arange(6.0).view(2, 3), b=torch.ones(2, 3),
                            batch_size=[2, 3])]
    else:  # different feature shapes
        parts = [TensorDict(a=torch.randn(2, 3, i + 1), batch_size=[2, 3]) for i in range(2)]
    return lazy_stack(parts, stack_dim)


OPS = {
    "view(-1)": lambda t: t.view(-1),
    "view(2, 6)": lambda t: t.view(2, 6),
    "reshape(-1)": lambda t: t.reshape(-1),
    "reshape(4, 3)": lambda t: t.reshape(4, 3),
    "flatten(0, 1)": lambda t: t.flatten(0, 1),
    "flatten(1, 2)": lambda t: t.flatten(1, 2),
    "flatten()": lambda t: t.flatten(),
    "unflatten(2, (3, 1))": lambda t: t.unflatten(2, (3, 1)),
    "unflatten(0, (2, 1))": lambda t: t.unflatten(0, (2, 1)),
    "permute(2, 0, 1)": lambda t: t.permute(2, 0, 1),
    "transpose(0, 1)": lambda t: t.transpose(0, 1),
    "transpose(1, 2)": lambda t: t.transpose(1, 2),
    "unsqueeze(0)": lambda t: t.unsqueeze(0),
    "unsqueeze(1)": lambda t: t.unsqueeze(1),
    "unsqueeze(-1)": lambda t: t.unsqueeze(-1),
    "squeeze()": lambda t: t.unsqueeze(1).squeeze(),
    "squeeze(1)": lambda t: t.unsqueeze(1).squeeze(1),
    "squeeze(0)": lambda t: t.squeeze(0),
}
# where upstream differs from a TensorDict of the same batch size: the stack of parts of
# different shapes along dim 2 cannot be cut across its parts (upstream: "Failed to
# stack"), and the stack of parts of different batch sizes ([2, 2, -1]); upstream's
# ValueError for flatten(1, 2) of the latter is a failure inside it (ours a RuntimeError)
UNLIKE_DENSE = {
    ("het2", "reshape(4, 3)"): RuntimeError,
    ("ragged", "view(-1)"): RuntimeError, ("ragged", "view(2, 6)"): RuntimeError,
    ("ragged", "reshape(-1)"): (14,), ("ragged", "reshape(4, 3)"): RuntimeError,
    ("ragged", "flatten(0, 1)"): (4, -1), ("ragged", "flatten(1, 2)"): RuntimeError,
    ("ragged", "flatten()"): (14,), ("ragged", "unflatten(2, (3, 1))"): RuntimeError,
    ("ragged", "unflatten(0, (2, 1))"): (2, 1, 2, -1), ("ragged", "permute(2, 0, 1)"): (-1, 2, 2),
    ("ragged", "transpose(0, 1)"): (2, 2, -1), ("ragged", "transpose(1, 2)"): (2, -1, 2),
    ("ragged", "unsqueeze(0)"): (1, 2, 2, -1), ("ragged", "unsqueeze(1)"): (2, 1, 2, -1),
    ("ragged", "unsqueeze(-1)"): (2, 2, -1, 1), ("ragged", "squeeze()"): (2, 2, -1),
    ("ragged", "squeeze(1)"): (2, 2, -1), ("ragged", "squeeze(0)"): (2, 2, -1),
}


def _expected(kind, name, stack):
    """The batch size (or error class) upstream gives: a TensorDict's, but where listed."""
    if (kind, name) in UNLIKE_DENSE:
        return UNLIKE_DENSE[kind, name]
    try:
        return tuple(OPS[name](TensorDict(batch_size=stack.batch_size)).batch_size)
    except RuntimeError:
        return RuntimeError


@pytest.mark.parametrize("kind", ["hom0", "hom1", "het0", "het2", "hetk0", "ragged"])
@pytest.mark.parametrize("name", list(OPS))
def test_reshaping(name, kind):
    stack, op = _make(kind), OPS[name]
    expected = _expected(kind, name, stack)
    if expected is RuntimeError:
        with pytest.raises(RuntimeError):
            op(stack)
        return
    out = op(stack)
    assert isinstance(out, LazyStackedTensorDict) and tuple(out.batch_size) == expected
    if kind.startswith(("hom", "hetk")):  # the values of the TensorDict of the entries
        assert torch.equal(out["a"], op(stack.to_tensordict())["a"])
        assert torch.equal(op(stack.to_tensordict())["a"], out.to_tensordict()["a"])


STACKS = {
    "lazy of lazy": (lambda: lazy_stack([_make("het0"), _make("het0")]),
                     LazyStackedTensorDict, (2, 2, 2, 3)),
    "torch.stack of lazy": (lambda: torch.stack([_make("het0"), _make("het0")]),
                            LazyStackedTensorDict, (2, 2, 2, 3)),
    "torch.stack of lazy, dim 1": (lambda: torch.stack([_make("hetk0"), _make("hetk0")], 1),
                                   LazyStackedTensorDict, (2, 2, 2, 3)),
    "lazy with dense": (lambda: lazy_stack([_make("hom0"), _make("hom0").to_tensordict()]),
                        LazyStackedTensorDict, (2, 2, 2, 3)),
    "torch.stack lazy with dense": (
        lambda: torch.stack([_make("hom0"), _make("hom0").to_tensordict()]),
        TensorDict, (2, 2, 2, 3)),
    "lazy of different keys with dense, dim 1": (
        lambda: lazy_stack([_make("hetk0"), _make("hetk0").to_tensordict()], 1),
        LazyStackedTensorDict, (2, 2, 2, 3)),
    "torch.stack of different keys with dense": (
        lambda: torch.stack([_make("hetk0"),
                             TensorDict(a=torch.zeros(2, 2, 3), batch_size=[2, 2, 3])]),
        TensorDict, (2, 2, 2, 3)),
    "lazy of ragged": (lambda: lazy_stack([_make("ragged"), _make("ragged")]),
                       LazyStackedTensorDict, (2, 2, 2, -1)),
    "torch.cat": (lambda: torch.cat([_make("het0"), _make("het0")]),
                  LazyStackedTensorDict, (4, 2, 3)),
    "torch.cat, dim 1": (lambda: torch.cat([_make("het0"), _make("het0")], 1),
                         LazyStackedTensorDict, (2, 4, 3)),
    "torch.cat of different keys": (lambda: torch.cat([_make("hetk0"), _make("hetk0")]),
                                    LazyStackedTensorDict, (4, 2, 3)),
}


@pytest.mark.parametrize("name", list(STACKS))
def test_stacking(name):
    make, cls, batch_size = STACKS[name]
    out = make()
    assert type(out) is cls and tuple(out.batch_size) == batch_size
