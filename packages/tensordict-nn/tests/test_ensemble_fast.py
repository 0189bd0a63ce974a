"""EnsembleModule: the parameters (and a plain input) go through vmap as plain
TensorDicts, which vmap takes as one unit (tensordict._vmap); the TensorDictParams and
inputs with non-tensor data or names take the pytree route. Both must give the same
results."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensordict import TensorDict, _vmap
from tensordict.nn import EnsembleModule, TensorDictModule, TensorDictSequential

_PLAIN = _vmap._plain


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


def test_the_parameters_go_through_vmap_as_one_unit(monkeypatch) -> None:
    checked = []

    def plain(td):
        checked.append((td, _PLAIN(td)))
        return checked[-1][1]

    monkeypatch.setattr(_vmap, "_plain", plain)
    ens = EnsembleModule(TensorDictModule(nn.Linear(3, 2), in_keys=["x"], out_keys=["y"]), 2)
    ens(TensorDict(x=torch.randn(4, 3), batch_size=[4]))
    assert any(td is ens.params_td._param_td and ok for td, ok in checked)


def test_non_tensor_input_matches_the_pytree_route() -> None:
    ens = EnsembleModule(TensorDictModule(nn.Linear(3, 2), in_keys=["x"], out_keys=["y"]), 2)
    td = TensorDict(x=torch.randn(4, 3), v="text", batch_size=[4])
    out = ens(td)
    _same(out.exclude("v"), _generic(ens, td).exclude("v"))
    assert out["v"] == "text" and out.batch_size == torch.Size([2, 4])


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
