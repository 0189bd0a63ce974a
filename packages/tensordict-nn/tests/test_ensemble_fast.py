"""EnsembleModule: plain TensorDicts go through vmap as lists of tensors; everything else
takes the TensorDict pytree path. Both must give the same results."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensordict import TensorDict
from tensordict.nn import EnsembleModule, TensorDictModule, TensorDictSequential
from tensordict.nn.ensemble import _flatten, _rebuild


def _generic(ens: EnsembleModule, td: TensorDict) -> TensorDict:
    """The TensorDict pytree path, as the fast path's reference."""
    if ens.expand_input:
        td = td.expand(ens.num_copies, *td.batch_size)
    return ens._vmapped(td, ens.params_td)


def _same(got: TensorDict, want: TensorDict) -> None:
    assert type(got) is type(want) is TensorDict
    assert got.batch_size == want.batch_size
    assert set(got.keys(True, True)) == set(want.keys(True, True))
    for key in want.keys(True, True):
        assert got[key].shape == want[key].shape
        torch.testing.assert_close(got[key], want[key])


def test_flatten_rebuild_roundtrip() -> None:
    td = TensorDict(a=torch.zeros(2, 3), n={"b": torch.ones(2, 4, 1)}, batch_size=[2])
    td["n"].batch_size = [2, 4]
    leaves: list[torch.Tensor] = []
    structure = _flatten(td, leaves)
    assert [leaf.shape for leaf in leaves] == [torch.Size([2, 3]), torch.Size([2, 4, 1])]
    back = _rebuild(structure, iter(leaves), (), 0)
    assert back["n"].batch_size == torch.Size([2, 4])
    assert back["a"] is td["a"] and back["n", "b"] is td["n", "b"]
    grown = _rebuild(structure, iter(leaves), (5,), 1)
    assert grown.batch_size == torch.Size([5]) and grown["n"].batch_size == torch.Size([5, 4])


def test_flatten_refuses_what_it_cannot_rebuild() -> None:
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    td["v"] = TensorDict(b=torch.zeros(2), batch_size=[2], names=["x"])  # dim names
    assert _flatten(td, []) is None
    assert _flatten(TensorDict(a=torch.zeros(2), batch_size=[2], names=["x"]), []) is None


def test_flatten_carries_non_tensor_entries() -> None:
    td = TensorDict(a=torch.zeros(2), v="text", batch_size=[2])
    leaves = []
    structure = _flatten(td, leaves)
    assert len(leaves) == 1 and dict(structure[0])["v"].data == "text"


def test_fast_path_matches_generic_nested() -> None:
    torch.manual_seed(0)
    seq = TensorDictSequential(
        TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=[("h", "z")]),
        TensorDictModule(nn.Linear(4, 2), in_keys=[("h", "z")], out_keys=["y"]),
    )
    ens = EnsembleModule(seq, num_copies=3)
    td = TensorDict(x=torch.randn(5, 3), extra={"e": torch.zeros(5, 1)}, batch_size=[5])
    out = ens(td)
    _same(out, _generic(ens, td))
    assert out.batch_size == torch.Size([3, 5]) and out["h"].batch_size == torch.Size([3, 5])
    assert out["extra", "e"].shape == torch.Size([3, 5, 1])
    assert set(td.keys()) == {"x", "extra"}  # the input is left as it was
    weights = ens.params_td["module", "0", "module", "weight"]
    want = td["x"] @ weights[1].T + ens.params_td["module", "0", "module", "bias"][1]
    torch.testing.assert_close(out["h", "z"][1], want)


def test_fast_path_gradients_reach_params() -> None:
    ens = EnsembleModule(TensorDictModule(nn.Linear(3, 2), in_keys=["x"], out_keys=["y"]), 2)
    ens(TensorDict(x=torch.randn(4, 3), batch_size=[4]))["y"].sum().backward()
    grad = ens.params_td["module", "weight"].grad
    assert grad is not None and grad.shape == torch.Size([2, 2, 3])
    assert ens.module.module.weight.grad is None  # the template is untouched


def test_fallback_paths_match() -> None:
    ens = EnsembleModule(TensorDictModule(nn.Linear(3, 2), in_keys=["x"], out_keys=["y"]), 2)
    named = TensorDict(x=torch.randn(4, 3), batch_size=[4], names=["b"])
    out = ens(named)
    _same(out, _generic(ens, named))
    assert out["y"].shape == torch.Size([2, 4, 2])


def test_expand_input_false_and_errors() -> None:
    ens = EnsembleModule(TensorDictModule(nn.Linear(3, 2), in_keys=["x"], out_keys=["y"]), 2,
                         expand_input=False)
    td = TensorDict(x=torch.randn(2, 4, 3), batch_size=[2, 4])
    out = ens(td)
    _same(out, _generic(ens, td))
    torch.testing.assert_close(out["y"][0], td["x"][0] @ ens.params_td["module", "weight"][0].T
                               + ens.params_td["module", "bias"][0])
    with pytest.raises(ValueError, match="num_copies"):
        ens(TensorDict(x=torch.randn(4, 3), batch_size=[4]))
