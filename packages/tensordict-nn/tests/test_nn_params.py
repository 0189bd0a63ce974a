"""TensorDictParams and EnsembleModule."""

import copy

import pytest
import torch
from torch import nn

import tensordict
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import EnsembleModule, TensorDictModule, TensorDictParams


def make_params():
    return TensorDictParams(TensorDict(
        w=torch.zeros(3), n={"b": torch.ones(2, 2)}, step=torch.zeros((), dtype=torch.long)))


def test_top_level_name():
    assert tensordict.TensorDictParams is TensorDictParams


def test_leaves_are_parameters_and_buffers():
    params = make_params()
    assert isinstance(params, nn.Module) and isinstance(params, TensorDictBase)
    assert type(params["w"]) is nn.Parameter and type(params["n", "b"]) is nn.Parameter
    assert type(params["step"]) is torch.Tensor
    assert type(params["n"]) is TensorDict
    assert [n for n, _ in params.named_parameters()] == ["w", "n.b"]
    assert [n for n, _ in params.named_buffers()] == ["step"]


def test_writes_stay_parameters():
    params = make_params()
    params["v"] = torch.ones(4)
    params.set(("n", "c"), torch.ones(2))
    params.update({"u": torch.ones(1), "deep": {"x": torch.ones(1)}})
    for key in ["v", ("n", "c"), "u", ("deep", "x")]:
        assert type(params[key]) is nn.Parameter, key
    assert len(list(params.parameters())) == 6
    del params["v"]
    assert "v" not in params.keys() and len(list(params.parameters())) == 5


def test_no_convert():
    params = TensorDictParams(TensorDict(a=torch.zeros(3), p=nn.Parameter(torch.ones(1))),
                              no_convert=True)
    assert type(params["a"]) is torch.Tensor
    assert [n for n, _ in params.named_parameters()] == ["p"]
    params["b"] = torch.zeros(1)
    assert type(params["b"]) is torch.Tensor


def test_keyword_construction_and_lock():
    params = TensorDictParams(a=torch.zeros(2))
    assert type(params["a"]) is nn.Parameter
    locked = TensorDictParams(TensorDict(a=torch.zeros(2)), lock=True)
    assert locked.is_locked
    with pytest.raises(RuntimeError):
        locked["b"] = torch.zeros(1)


def test_optimizer_updates_the_tensordict_leaves():
    params = make_params()
    opt = torch.optim.SGD(params.parameters(), lr=0.5)
    (params["w"].sum() + params["n", "b"].sum()).backward()
    opt.step()
    torch.testing.assert_close(params["w"].detach(), torch.full((3,), -0.5))
    torch.testing.assert_close(params["n", "b"].detach(), torch.full((2, 2), 0.5))


def test_submodule_state_dict_roundtrip():
    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = make_params()

    src, dst = Holder(), Holder()
    with torch.no_grad():
        src.p["w"].add_(3)
    assert list(src.state_dict()) == ["p.w", "p.n.b", "p.step"]
    dst.load_state_dict(src.state_dict())
    torch.testing.assert_close(dst.p["w"].detach(), torch.full((3,), 3.0))
    assert type(dst.p["w"]) is nn.Parameter


def test_module_to_casts_in_place():
    params = make_params()
    holder = nn.ModuleDict({"p": params})
    holder.double()
    assert params["w"].dtype == torch.float64 and type(params["w"]) is nn.Parameter
    assert params["step"].dtype == torch.long


def test_to_in_place_keeps_each_parameter():
    params = make_params()
    w, b = params["w"], params["n", "b"]
    assert params.to(torch.float64, inplace=True) is params
    assert params["w"] is w and params["n", "b"] is b
    assert w.dtype == b.dtype == torch.float64 and type(w) is nn.Parameter
    assert params["step"].dtype == torch.float64  # a cast of every leaf, as TensorDict.to
    assert [p is q for p, q in zip(params.parameters(), (w, b))] == [True, True]


def test_out_of_place_ops_return_tensordict_copies_return_params():
    params = make_params()
    assert type(params.apply(lambda x: x + 1)) is TensorDict
    assert type(params.select("w")) is TensorDict
    assert type(params.detach()) is TensorDict
    for copied in (params.clone(), params.copy(), copy.deepcopy(params)):
        assert type(copied) is TensorDictParams and type(copied["w"]) is nn.Parameter
    clone = params.clone()
    assert clone["w"] is not params["w"] and params.copy()["w"] is params["w"]
    moved = params.to(torch.float64)
    assert type(moved) is TensorDictParams and moved["w"].dtype == torch.float64
    assert params["w"].dtype == torch.float32


def test_shape_and_index():
    params = TensorDictParams(TensorDict(a=torch.zeros(4, 2), batch_size=[4]))
    assert params.batch_size == torch.Size([4]) and params.shape == torch.Size([4])
    assert params[1:3].batch_size == torch.Size([2])
    assert repr(params) == "TensorDictParams(params=TensorDict(batch_size=[4], fields={a: f32[2]}))"


def test_to_module_with_params():
    linear = nn.Linear(2, 2)
    params = TensorDictParams(TensorDict.from_module(linear).detach().apply(torch.zeros_like))
    with params.to_module(linear):
        torch.testing.assert_close(linear(torch.ones(1, 2)), torch.zeros(1, 2))
    assert linear.weight.abs().sum() > 0


def test_vmap_over_params():
    params = TensorDictParams(TensorDict(w=torch.arange(6.0).reshape(3, 2), batch_size=[3]))
    out = torch.vmap(lambda p, x: p["w"] * x, (0, None))(params, torch.ones(2))
    torch.testing.assert_close(out, params["w"].detach())


# -- EnsembleModule -----------------------------------------------------------------------
def make_ensemble(**kwargs):
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    return net, EnsembleModule(TensorDictModule(net, in_keys=["a"], out_keys=["b"]),
                               num_copies=3, **kwargs)


def test_ensemble_output_shape_and_copies_differ():
    _, ensemble = make_ensemble()
    data = TensorDict(a=torch.randn(10, 4), batch_size=[10])
    out = ensemble(data)
    assert out.batch_size == torch.Size([3, 10]) and out["b"].shape == torch.Size([3, 10, 2])
    assert not torch.allclose(out["b"][0], out["b"][1])
    w = ensemble.params_td["module", "0", "weight"]
    assert w.shape == torch.Size([3, 8, 4]) and not torch.allclose(w[0], w[1])


def test_ensemble_matches_each_copy_run_alone():
    net, ensemble = make_ensemble()
    x = torch.randn(5, 4)
    out = ensemble(TensorDict(a=x, batch_size=[5]))
    for i in range(3):
        replica = copy.deepcopy(net).to_empty(device="cpu")
        ensemble.params_td["module"][i].to_module(replica)
        torch.testing.assert_close(out["b"][i], replica(x))


def test_ensemble_parameters_train():
    # as upstream: the wrapped module keeps its own parameters (registered, untouched,
    # no gradient); the copies in params_td are the ones trained
    net, ensemble = make_ensemble()
    names = [name for name, _ in ensemble.named_parameters()]
    assert len(names) == 8 and sum(name.startswith("params_td.") for name in names) == 4
    ensemble(TensorDict(a=torch.randn(5, 4), batch_size=[5]))["b"].sum().backward()
    for name, p in ensemble.named_parameters():
        assert (p.grad is not None) == name.startswith("params_td.")
    assert net[0].weight.device.type == "cpu"


def test_ensemble_expand_input_false_same_parameters():
    _, expanded = make_ensemble()
    _, stacked = make_ensemble(expand_input=False)
    assert [n for n, _ in expanded.named_parameters()] == \
        [n for n, _ in stacked.named_parameters()]
    assert sum(p.numel() for p in expanded.parameters()) == \
        sum(p.numel() for p in stacked.parameters())


def test_ensemble_expand_input_false():
    _, ensemble = make_ensemble(expand_input=False)
    out = ensemble(TensorDict(a=torch.randn(3, 5, 4), batch_size=[3, 5]))
    assert out["b"].shape == torch.Size([3, 5, 2])
    with pytest.raises(ValueError, match="num_copies=3"):
        ensemble(TensorDict(a=torch.randn(5, 4), batch_size=[5]))
    with pytest.raises(ValueError):
        EnsembleModule(TensorDictModule(nn.Linear(1, 1), ["a"], ["b"]), num_copies=0)


def test_get_post_hook():
    params = make_params()
    seen = []

    def hook(owner, value):
        seen.append(owner)
        return value.detach() + 1 if value.is_floating_point() else None

    params.register_get_post_hook(hook)
    torch.testing.assert_close(params["w"], torch.ones(3))
    torch.testing.assert_close(params.get(("n", "b")), torch.full((2, 2), 2.0))
    assert params["step"].dtype == torch.long and params["step"].item() == 0
    assert type(params["n"]) is TensorDict  # sub-TensorDicts are not leaves
    assert all(owner is params for owner in seen) and len(seen) == 4
