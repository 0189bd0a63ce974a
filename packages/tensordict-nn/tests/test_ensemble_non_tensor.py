"""EnsembleModule (and ``torch.vmap``) over TensorDicts holding non-tensor entries: the
values observed under upstream tensordict 0.15.3 (non-tensor data is not mapped; the
output repeats it over the copies)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    is_non_tensor,
)
from tensordict._vmap_lazy import fit_non_tensor as _fit_non_tensor
from tensordict.nn import EnsembleModule, TensorDictModule, TensorDictModuleBase


def _linear() -> TensorDictModule:
    return TensorDictModule(nn.Linear(3, 2), in_keys=["obs"], out_keys=["y"])


def _grid() -> NonTensorStack:
    return NonTensorStack(*(NonTensorStack(*(f"{i}{j}" for j in range(4))) for i in range(2)))


class _Writer(TensorDictModuleBase):
    """Writes a tensor and a non-tensor entry into the TensorDict it gets."""

    in_keys = ["obs"]
    out_keys = ["y", "made"]

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)

    def forward(self, td: TensorDict) -> TensorDict:
        td["y"] = self.lin(td["obs"])
        td["made"] = "m"
        return td


@pytest.mark.parametrize("expand_input", [True, False])
@pytest.mark.parametrize("names", [None, "b"])
def test_non_tensor_data_is_repeated_over_copies(expand_input: bool, names: str | None) -> None:
    batch = [4] if expand_input else [2, 4]
    dim_names = None if names is None else [None] * (len(batch) - 1) + [names]
    td = TensorDict(obs=torch.randn(*batch, 3), name="x", batch_size=batch, names=dim_names)
    out = EnsembleModule(_linear(), 2, expand_input=expand_input)(td)
    assert set(out.keys()) == {"obs", "name", "y"}
    assert out.batch_size == torch.Size([2, 4]) and out["y"].shape == torch.Size([2, 4, 2])
    name = out.get("name")
    assert type(name) is NonTensorData and name.batch_size == torch.Size([2, 4])
    assert out["name"] == "x" and name.tolist() == [["x"] * 4] * 2
    if names is not None:
        assert out.names == [None, "b"]
    # the input is left as it was
    assert td.batch_size == torch.Size(batch) and type(td.get("name")) is NonTensorData
    assert set(td.keys()) == {"obs", "name"}


@pytest.mark.parametrize("names", [None, ["b"]])
def test_non_tensor_stack_expand_input(names: list[str] | None) -> None:
    td = TensorDict(obs=torch.randn(4, 3), batch_size=[4], names=names)
    td["name"] = NonTensorStack(*"abcd")
    out = EnsembleModule(_linear(), 2)(td)
    assert out.batch_size == torch.Size([2, 4]) and out["y"].shape == torch.Size([2, 4, 2])
    name = out.get("name")
    assert is_non_tensor(name) and name.batch_size == torch.Size([2, 4])
    assert name.tolist() == [list("abcd"), list("abcd")]
    assert td.get("name").batch_size == torch.Size([4])


def test_non_tensor_stack_no_expand_keeps_each_copy_value() -> None:
    td = TensorDict(obs=torch.randn(2, 4, 3), batch_size=[2, 4])
    td["name"] = _grid()
    out = EnsembleModule(_linear(), 2, expand_input=False)(td)
    assert out.batch_size == torch.Size([2, 4])
    name = out.get("name")
    assert is_non_tensor(name) and name.batch_size == torch.Size([2, 4])
    assert name.tolist() == [["00", "01", "02", "03"], ["10", "11", "12", "13"]]


def test_nested_and_unbatched_non_tensor() -> None:
    nested = TensorDict(z=torch.zeros(4), s="q", batch_size=[4])
    td = TensorDict(obs=torch.randn(4, 3), name="x", nested=nested, batch_size=[4])
    out = EnsembleModule(_linear(), 2)(td)
    assert out["nested"].batch_size == torch.Size([2, 4]) and out["nested", "s"] == "q"
    assert out["nested", "z"].shape == torch.Size([2, 4])
    flat = EnsembleModule(_linear(), 2)(TensorDict(obs=torch.randn(3), name="x"))
    assert flat.batch_size == torch.Size([2]) and type(flat.get("name")) is NonTensorData
    assert flat.get("name").tolist() == ["x", "x"]


@pytest.mark.parametrize("expand_input", [True, False])
def test_non_tensor_written_inside_the_copies(expand_input: bool) -> None:
    batch = [4] if expand_input else [2, 4]
    td = TensorDict(obs=torch.randn(*batch, 3), name="x", batch_size=batch)
    out = EnsembleModule(_Writer(), 2, expand_input=expand_input)(td)
    assert set(out.keys()) == {"obs", "name", "y", "made"}
    made = out.get("made")
    assert type(made) is NonTensorData and made.batch_size == torch.Size([2, 4])
    assert out["made"] == "m" and out["name"] == "x"
    assert not torch.equal(out["y"][0], out["y"][1])  # each copy has its own parameters


def test_lazy_stack_input_with_non_tensor() -> None:
    parts = [TensorDict(obs=torch.randn(3), name=f"n{i}") for i in range(4)]
    out = EnsembleModule(_linear(), 2)(LazyStackedTensorDict(*parts))
    assert out.batch_size == torch.Size([2, 4]) and out["y"].shape == torch.Size([2, 4, 2])
    assert out.get("name").tolist() == [["n0", "n1", "n2", "n3"]] * 2


def test_vmap_keeps_a_stack_whose_dim_it_hides() -> None:
    td = TensorDict(obs=torch.randn(2, 4, 3), batch_size=[2, 4])
    td["name"] = _grid()
    seen = []

    def fn(inner: TensorDict) -> TensorDict:
        seen.append((inner.batch_size, inner.get("name").tolist()))
        return inner

    out = torch.vmap(fn)(td)
    assert seen == [(torch.Size([4]), [["00", "01", "02", "03"], ["10", "11", "12", "13"]])]
    assert out.batch_size == torch.Size([2, 4])
    assert out.get("name").tolist() == [["00", "01", "02", "03"], ["10", "11", "12", "13"]]


def test_vmap_in_dims_none_repeats_a_stack() -> None:
    td = TensorDict(obs=torch.randn(4, 3), batch_size=[4])
    td["name"] = NonTensorStack(*"abcd")
    out = torch.vmap(lambda t, w: t.set("y", t["obs"] * w), (None, 0))(td, torch.ones(3))
    assert out.batch_size == torch.Size([3, 4])
    assert out.get("name").tolist() == [list("abcd")] * 3


def test_fit_non_tensor_cases() -> None:
    stack = NonTensorStack(*"ab")
    assert _fit_non_tensor(stack, torch.Size([2])) is stack
    assert _fit_non_tensor(stack, torch.Size([3, 2])).tolist() == [["a", "b"]] * 3
    assert _fit_non_tensor(stack, torch.Size([2, 3])).tolist() == [["a"] * 3, ["b"] * 3]
    assert _fit_non_tensor(stack, torch.Size([])) is stack  # fewer dims: kept whole
    grid = _grid()
    assert _fit_non_tensor(grid, torch.Size([4])) is grid  # vmap hid dim 0: kept whole
    data = _fit_non_tensor(NonTensorData("x", batch_size=[4]), torch.Size([2, 4]))
    assert type(data) is NonTensorData and data.batch_size == torch.Size([2, 4])
