"""Fast paths: ``load_state_dict`` in place, ``torch.stack(..., out=)`` checks, a tensor
repeated in every stacked TensorDict, and plugin methods resolved as class attributes."""

from __future__ import annotations

import importlib.metadata

import pytest
import torch

import tensordict
from tensordict import TensorCollection, TensorDict, _serialization, plugins
from tensordict.plugins import MissingMethodError, hookimpl, register, unregister


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(3, 2), "n": {"b": torch.zeros(3),
                                                     "m": {"c": torch.zeros(3, 1)}}}, [3])


def _state(value: float) -> dict:
    return _td().apply(lambda t: t + value).state_dict()


# -- load_state_dict ------------------------------------------------------------------------
def test_load_state_dict_fast_path(monkeypatch) -> None:
    td = _td()
    monkeypatch.setattr(_serialization, "_flat_tensors",
                        lambda *args: pytest.fail("the general path was taken"))
    assert td.load_state_dict(_state(2.0)) is td
    assert td["n", "m", "c"].unique().tolist() == [2.0]
    assert td["a"].unique().tolist() == [2.0]


def test_load_state_dict_fast_path_casts_and_keeps_leaves() -> None:
    td = TensorDict({"a": torch.zeros(2, dtype=torch.int64)}, [2])
    leaf = td["a"]
    td.load_state_dict({"a": torch.full((2,), 3.0)})
    assert td["a"] is leaf and td["a"].tolist() == [3, 3]


def test_load_state_dict_general_cases_still_work() -> None:
    td = _td()
    sd = _state(1.0)
    sd._metadata[""]["batch_size"] = torch.Size([])  # batch size restored: general path
    td.load_state_dict(sd)
    assert td.batch_size == torch.Size([]) and td["a"].unique().tolist() == [1.0]
    td = _td()
    td.load_state_dict({"a": torch.ones(3, 2)}, strict=False)  # a subset
    assert td["a"].unique().tolist() == [1.0] and td["n", "b"].unique().tolist() == [0.0]
    td = _td()
    new = td.load_state_dict({"a": torch.ones(3, 2)}, strict=False, assign=True)
    assert new["a"].unique().tolist() == [1.0]


@pytest.mark.parametrize("change", ["shape", "missing", "extra"])
def test_load_state_dict_failure_leaves_td_unchanged(change) -> None:
    td = _td()
    sd = _state(5.0)
    if change == "shape":
        sd["n.m.c"] = torch.ones(3, 2)
    elif change == "missing":
        del sd["n.b"]
    else:
        sd["z"] = torch.ones(3)
    before = td.clone()
    with pytest.raises(RuntimeError):
        td.load_state_dict(sd)
    assert (td == before).all()


def test_load_state_dict_into_expanded_leaf_uses_general_path() -> None:
    td = TensorDict({"a": torch.zeros(1, 2).expand(3, 2)}, [3])
    with pytest.raises(RuntimeError, match="share memory|expanded|single memory"):
        td.load_state_dict({"a": torch.ones(3, 2)})
    assert td["a"].unique().tolist() == [0.0]


# -- torch.stack(out=) ----------------------------------------------------------------------
def test_stack_out_fast_checks() -> None:
    tds = [TensorDict({"a": torch.full((2,), float(i))}, [2]) for i in range(3)]
    out = torch.stack(tds, 0).zero_()
    assert torch.stack(tds, 0, out=out) is out
    assert out["a"][:, 0].tolist() == [0.0, 1.0, 2.0]
    out1 = torch.stack(tds, 1).zero_()
    torch.stack(tds, 1, out=out1)
    assert out1["a"][0].tolist() == [0.0, 1.0, 2.0]


@pytest.mark.parametrize("bad", ["shape", "dtype", "out_shape"])
def test_stack_out_mismatch_raises_and_writes_nothing(bad) -> None:
    tds = [TensorDict({"a": torch.ones(2), "b": torch.ones(2)}, [2]) for _ in range(3)]
    out = torch.stack(tds, 0).zero_()
    if bad == "shape":
        tds[2]["b"] = torch.ones(2, 1)
    elif bad == "dtype":
        out["b"] = torch.zeros(3, 2, dtype=torch.int64)
        tds[0]["b"] = torch.ones(2, dtype=torch.complex64)
    else:
        out["b"] = torch.zeros(3, 2, 1)
    with pytest.raises((RuntimeError, TypeError)):
        torch.stack(tds, 0, out=out)
    assert out["a"].unique().tolist() == [0.0]


def test_stack_out_mixed_dtypes_cast() -> None:
    tds = [TensorDict({"a": torch.ones(2, dtype=torch.int32)}, [2]),
           TensorDict({"a": torch.ones(2)}, [2])]
    out = torch.stack([td.float() for td in tds], 0).zero_()
    torch.stack(tds, 0, out=out)
    assert out["a"].dtype is torch.float32 and out["a"].sum().item() == 4.0


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_of_one_tensor_repeated_is_torchs_stack(dim) -> None:
    # a rollout's constants (its parameters) are the same tensor at every step
    const = torch.arange(6.0).reshape(2, 3).requires_grad_()
    column = const[:, 0]  # a view: expanded from its own strides
    tds = [TensorDict({"c": const, "v": torch.full((2, 3), float(i)), "n": {"z": column}},
                      [2]) for i in range(4)]
    out = torch.stack(tds, dim)
    dim %= 2  # (a dim of the new batch size)
    expected = torch.stack([const] * 4, dim)
    assert torch.equal(out["c"], expected) and out["c"].is_contiguous()
    assert out["c"].stride() == expected.stride()
    assert torch.equal(out["n", "z"], torch.stack([column] * 4, dim))
    assert out["n", "z"].is_contiguous()
    assert out["v"].select(dim, 3).eq(3).all()
    assert out["c"].data_ptr() != const.data_ptr()  # a copy, as torch.stack's
    out["c"].sum().backward()
    assert torch.equal(const.grad, torch.full((2, 3), 4.0))


# -- plugin methods as class attributes -----------------------------------------------------
class _Plugin:
    @hookimpl
    def tensordict_methods(self):
        return {"double_len": lambda td: 2 * len(td.keys()),
                "from_keys": classmethod(lambda cls, *keys: cls({k: torch.zeros(1)
                                                                 for k in keys})),
                "nkeys": property(lambda td: len(td.keys()))}


@pytest.fixture
def plugin():
    registered = register(_Plugin())
    yield registered
    unregister(registered)


def test_plugin_methods_are_class_attributes(plugin) -> None:
    td = TensorDict(a=torch.zeros(1), b=torch.zeros(1))
    assert "double_len" in vars(TensorCollection)
    assert td.double_len() == 4 and td.nkeys == 2
    made = TensorDict.from_keys("x", "y")
    assert type(made) is TensorDict and sorted(made.keys()) == ["x", "y"]
    assert isinstance(TensorDict.nkeys, property)  # on the class: the property itself
    lazy = tensordict.lazy_stack([td, td.clone()])
    assert lazy.double_len() == 4


def test_unregistered_plugin_methods_disappear() -> None:
    registered = register(_Plugin())
    unregister(registered)
    assert "double_len" not in vars(TensorCollection)
    with pytest.raises(AttributeError):
        TensorDict().double_len()


def test_a_class_with_its_own_getattr_keeps_deciding(plugin) -> None:
    class Forwarding(TensorDict):
        def __getattr__(self, name):
            if name == "double_len":
                return lambda: "forwarded"
            raise AttributeError(name)

    td = Forwarding(a=torch.zeros(1))
    assert td.double_len() == "forwarded"
    assert td.nkeys == 1  # its __getattr__ raised: the plugin's property
    with pytest.raises(AttributeError):
        td.not_a_method_of_any_plugin


def test_missing_plugin_method_error_unchanged() -> None:
    with pytest.raises(AttributeError):
        TensorDict().not_a_method_of_any_plugin()
    assert issubclass(MissingMethodError, AttributeError)


# -- pad_sequence ---------------------------------------------------------------------------
@pytest.mark.parametrize("return_mask", [False, True])
def test_pad_sequence_masks_only_when_asked(return_mask) -> None:
    tds = [TensorDict({"a": torch.ones(n, 2), "n": {"b": torch.ones(n)}}, [n]) for n in (1, 3)]
    out = tensordict.pad_sequence(tds, padding_value={"a": -1.0}, return_mask=return_mask)
    assert out.batch_size == torch.Size([2, 3])
    assert out["a"][0, :, 0].tolist() == [1.0, -1.0, -1.0]
    assert out["n", "b"][0].tolist() == [1.0, 0.0, 0.0]
    assert ("masks" in out.keys()) is return_mask
    if return_mask:
        assert out["masks", "a"].tolist() == [[True, False, False], [True, True, True]]
        assert out["masks", "n", "b"].dtype is torch.bool


def test_no_getattr_hook_without_third_party_plugins() -> None:
    # first-party method names are known: nothing costs CPython's attribute fast path
    third_party = [ep for ep in importlib.metadata.entry_points(group="tensordict")
                   if not ep.value.startswith("tensordict.")]
    if third_party:
        pytest.skip(f"third-party plugins installed: {third_party}")
    assert "__getattr__" not in vars(TensorCollection)
    assert "__getattr__" not in vars(type(TensorCollection))
    for name in plugins.PLUGIN_METHODS:
        assert name in vars(TensorCollection)


def test_forwarding_class_gets_every_plugin_name(plugin) -> None:
    class Forwarding(TensorDict):
        def __getattr__(self, name):
            raise AttributeError(name)

    assert {"double_len", "memmap"} <= set(vars(Forwarding))
    assert Forwarding(a=torch.zeros(1)).double_len() == 2
