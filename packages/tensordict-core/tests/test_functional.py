"""from_module / from_modules / to_module on real nn.Modules."""

import copy

import pytest
import torch
from torch import nn

import tensordict
from tensordict import TensorDict


def _net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(),
                         nn.Sequential(nn.Linear(4, 2)))


def _all_tensors(module: nn.Module) -> dict:
    return {**dict(module.named_parameters(remove_duplicate=False)),
            **dict(module.named_buffers(remove_duplicate=False))}


def _flat(td: TensorDict) -> dict:
    return {".".join(k): v for k, v in td.items(True, True)}


def test_from_module_nested_parameters_and_buffers_are_the_module_tensors():
    net = _net()
    params = TensorDict.from_module(net)
    flat = _flat(params)
    expected = _all_tensors(net)
    assert flat.keys() == expected.keys()
    assert all(flat[k] is expected[k] for k in expected)
    assert isinstance(params["0", "weight"], nn.Parameter)
    assert "2" not in params.keys()  # ReLU holds nothing
    assert params.batch_size == torch.Size([]) and params.device is None
    assert not params.is_locked


def test_from_module_lock_and_top_level_alias():
    net = _net()
    assert TensorDict.from_module(net, lock=True).is_locked
    flat = _flat(tensordict.from_module(net))
    assert flat.keys() == _all_tensors(net).keys()


def test_from_module_use_state_dict_skips_non_persistent_buffers():
    net = nn.Linear(2, 2)
    net.register_buffer("scratch", torch.zeros(1), persistent=False)
    assert "scratch" in TensorDict.from_module(net).keys()
    via_state = TensorDict.from_module(net, use_state_dict=True)
    assert sorted(via_state.keys()) == ["bias", "weight"]
    assert via_state["weight"] is net.weight


def test_from_modules_stacks_each_leaf():
    modules = [nn.Linear(2, 3) for _ in range(3)]
    stacked = TensorDict.from_modules(*modules)
    assert stacked.batch_size == torch.Size([3])
    for key in ("weight", "bias"):
        expected = torch.stack([getattr(m, key) for m in modules])
        assert torch.equal(stacked[key], expected)
        assert isinstance(stacked[key], nn.Parameter) and stacked[key].grad_fn is None
    assert stacked["weight"].data_ptr() != modules[0].weight.data_ptr()
    assert tensordict.from_modules(*modules)["bias"].shape == (3, 3)


def test_from_modules_expand_identical_and_buffers():
    shared = nn.BatchNorm1d(2)
    stacked = TensorDict.from_modules(shared, shared, expand_identical=True)
    assert stacked["weight"].stride(0) == 0
    assert stacked["num_batches_tracked"].shape == (2,)
    assert not isinstance(stacked["running_mean"], nn.Parameter)


def test_from_modules_structure_mismatch():
    with pytest.raises(KeyError, match="differing keys"):
        TensorDict.from_modules(nn.Linear(2, 2), nn.Linear(2, 2, bias=False))
    with pytest.raises(RuntimeError, match="'weight' has shape"):
        TensorDict.from_modules(nn.Linear(2, 2), nn.Linear(3, 2))
    with pytest.raises(ValueError):
        TensorDict.from_modules()


def test_from_modules_lazy_stack_keeps_module_tensors():
    modules = [nn.Linear(2, 3) for _ in range(2)]
    lazy = TensorDict.from_modules(*modules, lazy_stack=True)
    assert type(lazy).__name__ == "LazyStackedTensorDict"
    assert lazy.tensordicts[1]["weight"] is modules[1].weight


def test_to_module_context_manager_swaps_and_restores():
    net = _net().eval()
    params = TensorDict.from_module(net)
    zeros = params.apply(torch.zeros_like)
    x = torch.randn(5, 3)
    with zeros.to_module(net) as swap:
        assert net(x).abs().sum() == 0
        assert swap["0", "weight"] is params["0", "weight"]
        assert net[3][0].weight.abs().sum() == 0
    after = _all_tensors(net)
    assert all(after[k] is v for k, v in _flat(params).items())


def test_to_module_restores_after_exception():
    net = _net()
    params = TensorDict.from_module(net)
    with pytest.raises(ValueError):
        with params.apply(torch.ones_like).to_module(net):
            assert net[0].weight.sum() == 12
            raise ValueError("inside")
    assert net[0].weight is params["0", "weight"]
    assert net[1].running_mean is params["1", "running_mean"]


def test_to_module_plain_call_returns_swap_and_wraps_parameters():
    net = nn.Linear(2, 2)
    original = TensorDict.from_module(net)
    net.bias.requires_grad_(False)
    new = TensorDict(weight=torch.ones(2, 2), bias=torch.ones(2))
    swap = new.to_module(net)
    assert swap["weight"] is original["weight"] and swap["bias"] is original["bias"]
    assert isinstance(net.weight, nn.Parameter) and net.weight.requires_grad
    assert not net.bias.requires_grad  # follows the parameter it replaces
    assert net.weight.data_ptr() == new["weight"].data_ptr()
    assert [n for n, _ in net.named_parameters()] == ["weight", "bias"]
    assert swap.to_module(net, return_swap=False) is None
    assert net.weight is original["weight"]


def test_to_module_keeps_autograd_history():
    net = nn.Linear(3, 1)
    params = TensorDict.from_module(net)
    doubled = params.apply(lambda p: p * 2)
    with doubled.to_module(net):
        assert net.weight is doubled["weight"]
        net(torch.ones(1, 3)).sum().backward()
    assert torch.equal(params["weight"].grad, torch.full((1, 3), 2.0))


def test_to_module_partial_and_unknown_keys():
    net = _net()
    before = _all_tensors(net)
    partial = TensorDict({"0": {"weight": torch.zeros(4, 3)}})
    with partial.to_module(net):
        assert net[0].weight.sum() == 0 and net[0].bias is before["0.bias"]
    bad = TensorDict({"0": {"weight": torch.zeros(4, 3)}, "3": {"nope": torch.zeros(1)}})
    with pytest.raises(KeyError, match="'3', 'nope'"):
        bad.to_module(net)
    with pytest.raises(KeyError, match="not a submodule"):
        TensorDict({"9": {"weight": torch.zeros(1)}}).to_module(net)
    after = _all_tensors(net)
    assert all(after[k] is v for k, v in before.items())  # nothing was written


def test_to_module_inplace_copies_and_restores_values():
    net = nn.Linear(2, 2)
    weight = net.weight
    saved = weight.detach().clone()
    with TensorDict(weight=torch.ones(2, 2)).to_module(net, inplace=True) as swap:
        assert net.weight is weight and torch.equal(weight, torch.ones(2, 2))
        assert torch.equal(swap["weight"], saved)
    assert net.weight is weight and torch.equal(weight, saved)


def test_to_module_swap_dest_and_state_dict_mode():
    net = nn.Linear(2, 2)
    weight = net.weight
    dest = TensorDict()
    out = TensorDict(weight=torch.zeros(2, 2)).to_module(net, swap_dest=dest)
    assert out is dest and dest["weight"] is weight
    out.to_module(net)
    with TensorDict(weight=torch.ones(2, 2)).to_module(net, use_state_dict=True):
        assert net.weight is weight and net.weight.sum() == 4  # copied through load_state_dict
    assert net.weight is weight and not torch.equal(weight, torch.ones(2, 2))
    with pytest.raises(KeyError):
        TensorDict(nope=torch.zeros(1)).to_module(net, use_state_dict=True)


def test_to_module_shared_submodule_and_tied_weights():
    lin = nn.Linear(2, 2)
    shared = nn.Sequential(lin, lin)
    params = TensorDict.from_module(shared)
    assert params["0", "weight"] is params["1", "weight"]
    zeros = params.apply(torch.zeros_like)
    with zeros.to_module(shared):
        assert shared[0].weight is shared[1].weight and lin.weight.sum() == 0
    assert lin.weight is params["0", "weight"]

    enc, dec = nn.Linear(3, 3), nn.Linear(3, 3)
    dec.weight = enc.weight  # tied across two modules
    tied = nn.Sequential(enc, dec)
    params = TensorDict.from_module(tied)
    with params.apply(torch.ones_like).to_module(tied):
        assert enc.weight.sum() == 9 and dec.weight.sum() == 9
    assert enc.weight is dec.weight is params["0", "weight"]


def test_seed_functional_example():
    from torch import vmap

    layer1 = nn.Linear(3, 4)
    layer2 = nn.Linear(4, 4)
    model = nn.Sequential(layer1, layer2)
    params = TensorDict.from_module(model)
    weights1 = TensorDict(layer1.state_dict(), []).unflatten_keys(".")
    weights2 = TensorDict(layer2.state_dict(), []).unflatten_keys(".")
    assert (params == TensorDict({"0": weights1, "1": weights2}, [])).all()
    x = torch.randn(10, 3)
    with params.to_module(model):
        out = model(x)
    assert torch.allclose(out, layer2(layer1(x)))
    params_stack = torch.stack([params, params], 0)

    def func(x, params):
        with params.to_module(model):
            return model(x)

    y = vmap(func, (None, 0))(x, params_stack)
    assert y.shape == torch.Size([2, 10, 4])
    assert torch.allclose(y[1], out, atol=1e-6)


def test_vmap_ensemble_matches_each_member():
    members = [nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)) for _ in range(4)]
    stacked = TensorDict.from_modules(*members)
    model = members[0]
    x = torch.randn(6, 3)

    def call(params, x):
        with params.to_module(model):
            return model(x)

    y = torch.vmap(call, (0, None))(stacked, x)
    expected = torch.stack([m(x) for m in members])
    assert torch.allclose(y, expected, atol=1e-6)
    assert model[0].weight is TensorDict.from_module(members[0])["0", "weight"]


def test_torch_func_grad_and_functional_call():
    model = nn.Sequential(nn.Linear(3, 2), nn.Linear(2, 1))
    params = TensorDict.from_module(model)
    x = torch.randn(4, 3)

    def loss(params, x):
        with params.to_module(model):
            return model(x).pow(2).sum()

    grads = torch.func.grad(loss)(params.detach(), x)
    assert isinstance(grads, TensorDict)
    model(x).pow(2).sum().backward()
    for key, value in grads.items(True, True):
        assert torch.allclose(value, params.get(key).grad, atol=1e-6), key
    flat = dict(params.flatten_keys(".").items())
    assert torch.equal(torch.func.functional_call(model, flat, (x,)), model(x))


def test_as_module_needs_nn():
    nn_pkg = pytest.importorskip("tensordict.nn")
    if not hasattr(nn_pkg, "TensorDictParams"):
        pytest.skip("tensordict-nn has no TensorDictParams yet")
    params = TensorDict.from_module(nn.Linear(2, 2), as_module=True)
    assert isinstance(params, nn.Module)


def test_to_module_without_preserving_module_state_sets_plain_attributes_until_exit():
    net = torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.BatchNorm1d(3))
    params = [name for name, _ in net.named_parameters()]
    buffers = [name for name, _ in net.named_buffers()]
    weight = net[0].weight
    zeros = TensorDict.from_module(net).data.apply(torch.zeros_like)
    with zeros.to_module(net, preserve_module_state=False):
        assert type(net[0].weight) is torch.Tensor and not list(net.parameters())
        assert net[0].weight.sum() == 0 and "weight" in net[0].__dict__
        swapped_again = zeros.apply(torch.ones_like).to_module(net, preserve_module_state=False)
        assert net[0].weight.sum() == 6  # a plain attribute can be swapped again
        swapped_again.to_module(net, preserve_module_state=False, return_swap=False)
    assert net[0].weight is weight and "weight" not in net[0].__dict__
    assert [name for name, _ in net.named_parameters()] == params  # the order is kept
    assert [name for name, _ in net.named_buffers()] == buffers
    as_params = TensorDict.from_module(net).apply(
        lambda x: torch.nn.Parameter(x.detach() * 0) if isinstance(x, torch.nn.Parameter) else x)
    with as_params.to_module(net, preserve_module_state=False):  # parameters stay registered
        assert type(net[0].weight) is torch.nn.Parameter and len(list(net.parameters())) == 4
    with zeros.to_module(net, preserve_module_state=False):  # buffers stay registered too
        assert list(net[1]._buffers) == ["running_mean", "running_var", "num_batches_tracked"]
    with pytest.raises(KeyError):  # an unknown key: every write undone
        TensorDict({"0": {"weight": torch.zeros(3, 2), "nope": torch.zeros(1)}}).to_module(
            net, preserve_module_state=False)
    assert net[0].weight is weight and "weight" in net[0]._parameters


def test_to_module_registers_a_parameter_taking_a_plain_attribute_place_until_exit():
    # TorchRL empties a network (its tensors become plain "meta" attributes), then puts
    # the parameters in for each call: they are registered parameters again (a lazy
    # module only initializes registered ones) and the attributes come back on exit
    net = nn.Linear(2, 3)
    params = TensorDict.from_module(nn.Linear(2, 3))
    TensorDict.from_module(net).data.to("meta").to_module(net, preserve_module_state=False)
    for preserve in (False, True):
        with params.to_module(net, preserve_module_state=preserve):
            assert net.weight is params["weight"] and list(net._parameters) == ["weight", "bias"]
            assert "weight" not in net.__dict__
        assert not net._parameters and net.__dict__["weight"].device.type == "meta"
    with pytest.raises(KeyError):  # an unknown key: the registration is undone too
        TensorDict(weight=params["weight"], nope=torch.zeros(1)).to_module(net)
    assert not net._parameters and net.__dict__["weight"].device.type == "meta"


def test_to_module_initializes_a_lazy_module_through_its_uninitialized_parameters():
    lazy = nn.LazyLinear(3)
    params = TensorDict.from_module(lazy)
    with torch.device("meta"):
        empty = nn.LazyLinear(3)
    TensorDict.from_module(empty).data.to("meta").to_module(empty, preserve_module_state=False)
    weight = params["weight"]
    with params.to_module(empty, preserve_module_state=False):
        out = empty(torch.ones(5, 2))
    assert out.shape == (5, 3) and type(weight) is nn.Parameter and weight.shape == (3, 2)
    assert params["weight"] is weight and lazy.weight is weight  # materialized in place


def test_from_modules_of_lazy_modules_stacks_uninitialized_tensors():
    params = TensorDict.from_modules(nn.LazyLinear(3), nn.LazyLinear(3))
    weight = params["weight"]
    assert isinstance(weight, nn.UninitializedParameter) and weight.batch_size == (2,)
    assert params.batch_size == (2,)
    copied = copy.deepcopy(weight)
    assert copied is not weight and copied.batch_size == (2,)
    weight.materialize((3, 4))
    assert type(weight) is nn.Parameter and weight.shape == (2, 3, 4)
    assert not hasattr(weight, "batch_size") and not hasattr(weight, "vmap_level")
    assert isinstance(copied, nn.UninitializedParameter)  # the copy is its own
    norms = TensorDict.from_modules(nn.LazyBatchNorm1d(), nn.LazyBatchNorm1d())
    assert isinstance(norms["running_mean"], nn.UninitializedBuffer)
    assert not isinstance(norms["running_mean"], nn.Parameter)
    with pytest.raises(RuntimeError, match="module 1"):  # lazy and not lazy do not stack
        TensorDict.from_modules(nn.LazyLinear(3), nn.Linear(2, 3))


def test_lazy_ensemble_in_vmap_initializes_each_copy_on_its_own():
    nn_pkg = pytest.importorskip("tensordict.nn")
    torch.manual_seed(0)
    nets = [nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.LazyLinear(2)) for _ in range(3)]
    params = TensorDict.from_modules(*nets, as_module=True)
    assert isinstance(params, nn_pkg.TensorDictParams)
    leaves = list(params.parameters())
    assert all(isinstance(p, nn.UninitializedParameter) for p in leaves)
    with torch.device("meta"):
        empty = nn.Sequential(nn.LazyLinear(4), nn.Tanh(), nn.LazyLinear(2))
    TensorDict.from_module(empty).data.to("meta").to_module(empty, preserve_module_state=False)

    def call(p, x):
        with p.to_module(empty, preserve_module_state=False):
            return empty(x)

    x = torch.randn(3, 5, 6)
    out = torch.vmap(call, (0, 0), randomness="same")(params, x)
    assert out.shape == (3, 5, 2)
    # the same objects, materialized whole: an optimizer holding them keeps working
    assert [p for p in params.parameters()] == leaves
    assert all(type(p) is nn.Parameter for p in leaves)
    w0 = params["0", "weight"]
    assert w0.shape == (3, 4, 6) and not torch.allclose(w0[0], w0[1])
    for i in range(3):
        hidden = torch.tanh(x[i] @ w0[i].T + params["0", "bias"][i])
        expected = hidden @ params["2", "weight"][i].T + params["2", "bias"][i]
        torch.testing.assert_close(out[i], expected)
    out.sum().backward()
    assert all(p.grad is not None for p in leaves)
    assert not empty._parameters and not empty[0]._forward_pre_hooks  # all undone
    out2 = torch.vmap(call, (0, 0), randomness="different")(params, x)  # initialized now
    torch.testing.assert_close(out2, out)


def test_lazy_stacks_outside_vmap_materialize_whole_and_unused_hooks_go():
    pytest.importorskip("tensordict.nn")
    params = TensorDict.from_modules(nn.LazyLinear(2), nn.LazyLinear(2), as_module=True)
    with torch.device("meta"):
        empty = nn.LazyLinear(2)
    TensorDict.from_module(empty).data.to("meta").to_module(empty, preserve_module_state=False)

    def no_forward(p):
        with p.to_module(empty, preserve_module_state=False):
            return torch.zeros(())

    hooks = list(empty._forward_pre_hooks.values())  # the lazy module's own
    torch.vmap(no_forward, randomness="same")(params)
    assert list(empty._forward_pre_hooks.values()) == hooks  # to_module's is gone
    assert isinstance(params["weight"], nn.UninitializedParameter)
    with params.to_module(empty, preserve_module_state=False):  # no vmap: the whole stack
        empty.initialize_parameters(torch.ones(4, 3))
        assert list(empty._forward_pre_hooks.values()) == hooks  # no vmap: no hook
    assert params["weight"].shape == (2, 2, 3)
    tree = torch.utils._pytree.tree_map(lambda t: t, params)  # the stacks pass through
    assert tree["weight"] is params["weight"]


def test_to_module_without_preserving_state_writes_into_a_tensordictparams():
    # TorchRL's value estimators swap stacked values into a network holding a
    # TensorDictParams (MultiAgentMLP) and vmap: the values go into its data (that the
    # network reads), not into dotted plain attributes
    nn_pkg = pytest.importorskip("tensordict.nn")

    class Holder(nn.Module):
        def __init__(self):
            super().__init__()
            self.p = nn_pkg.TensorDictParams(TensorDict(w=torch.ones(3), n={"b": torch.ones(2)}))

    holder = Holder()
    weight = holder.p["w"]
    zeros = TensorDict.from_module(holder).apply(lambda x: torch.zeros_like(x).detach())
    with zeros.to_module(holder, preserve_module_state=False):
        assert type(holder.p["w"]) is torch.Tensor and holder.p["w"].sum() == 0
        assert holder.p["n", "b"].sum() == 0
        assert not [key for key in holder.p.__dict__ if "." in key]
    assert holder.p["w"] is weight
    assert [name for name, _ in holder.named_parameters()] == ["p.w", "p.n.b"]
