"""Upstream 0.15.3 behaviours of tensordict.nn that TorchRL relies on: the key attributes
behind the properties, the switches, random generators, composite distributions, vmap and
the subclassing patterns of TorchRL's SafeModule / SafeSequential."""

import functools

import pytest
import torch
from torch import distributions as D
from torch import nn
from torch.utils._pytree import tree_leaves

from tensordict import LazyStackedTensorDict, LinkedList, NonTensorStack, TensorDict, lazy_stack
from tensordict.nn import (
    CompositeDistribution,
    InteractionType,
    NormalParamExtractor,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictModuleBase,
    TensorDictModuleWrapper,
    TensorDictParams,
    TensorDictSequential,
    composite_lp_aggregate,
    dispatch,
    set_composite_lp_aggregate,
    set_interaction_type,
    set_skip_existing,
    skip_existing,
)
from tensordict.nn.distributions.composite import _add_suffix
from tensordict.nn.functional_modules import _exclude_td_from_pytree, set_tensor
from tensordict.nn.probabilistic import TruncatedStandardNormal, _use_generator
from tensordict.nn.utils import (
    Buffer,
    _set_dispatch_td_nn_modules,
    _set_skip_existing_None,
    biased_softplus,
    expln,
    inv_softplus,
    mappings,
)


def normal_module(**kwargs):
    return ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["action"], distribution_class=D.Normal, **kwargs)


def normal_td(*batch):
    return TensorDict(loc=torch.zeros(*batch, 3), scale=torch.ones(*batch, 3), batch_size=batch)


def composite_params():
    return TensorDict({"cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
                       ("nested", "disc"): {"logits": torch.zeros(3, 10)}}, [3])


COMPOSITE = {"distribution_map": {"cont": D.Normal, ("nested", "disc"): D.Categorical}}


# -- keys behind the properties -----------------------------------------------------------
def test_private_key_attributes_and_select_out_keys_hook():
    module = TensorDictModule(lambda x: (x, x + 1), in_keys=["x"], out_keys=["a", ("n", "b")])
    assert module._in_keys == ["x"] and module._out_keys == ["a", ("n", "b")]
    module.select_out_keys(("n", "b"))
    assert module.out_keys == [("n", "b")] and module.out_keys_source == ["a", ("n", "b")]
    assert module._out_keys == ["a", ("n", "b")]  # the source stays behind _out_keys
    td = TensorDict(x=torch.zeros(2), a=torch.ones(2), batch_size=[2])
    out = module(td)
    assert set(out.keys(True, True)) == {"x", ("n", "b")}  # "a" dropped, even pre-existing
    torch.testing.assert_close(module(x=torch.zeros(2)), torch.ones(2))
    with pytest.raises(ValueError, match="Can't select non existent key: zz"):
        module.select_out_keys("zz")
    module.reset_out_keys()
    assert module.out_keys == ["a", ("n", "b")] and len(module._forward_hooks) == 0
    module.in_keys = ["z"]
    assert module._in_keys == ["z"]


def test_class_level_keys_become_properties():
    class Module(TensorDictModuleBase):
        in_keys = ["x"]
        out_keys = ["y", "z"]

        def forward(self, tensordict):
            return tensordict.update({"y": tensordict["x"] + 1, "z": tensordict["x"] + 2})

    module = Module()
    assert module._in_keys == ["x"] and module.out_keys_source == ["y", "z"]
    module.select_out_keys("z")
    assert Module().out_keys == ["y", "z"]  # per instance
    assert list(module(TensorDict(x=torch.zeros(1), batch_size=[1])).keys()) == ["x", "z"]
    assert repr(module) == "Module(\n    in_keys=['x'],\n    out_keys=['z'])"

    class NoKeys(TensorDictModuleBase):
        def forward(self, tensordict):
            return tensordict

    with pytest.raises(AttributeError, match="in_keys"):
        NoKeys().in_keys  # noqa: B018


def test_select_out_keys_through_a_subclass_property():
    class Loss(TensorDictModuleBase):  # TorchRL's losses keep out_keys behind a property
        def __init__(self):
            super().__init__()
            self._out_keys = None

        @property
        def in_keys(self):
            return ["x"]

        @property
        def out_keys(self):
            if self._out_keys is None:
                self._out_keys = ["a", "b", "c"]
            return self._out_keys

        @out_keys.setter
        def out_keys(self, value):
            self._out_keys = value

        @dispatch
        def forward(self, tensordict):
            x = tensordict["x"]
            return TensorDict(a=x, b=x + 1, c=x + 2)

    loss = Loss().select_out_keys("a", "c")
    assert loss.out_keys == ["a", "c"] and loss._out_keys == ["a", "c"]
    a, c = loss(x=torch.zeros(1))
    torch.testing.assert_close(c, torch.full((1,), 2.0))
    assert set(loss(TensorDict(x=torch.zeros(1))).keys()) == {"a", "c"}
    loss.reset_out_keys()
    assert loss.out_keys == ["a", "b", "c"]
    assert set(loss(TensorDict(x=torch.zeros(1))).keys()) == {"a", "b", "c"}


def test_wrapper_selects_its_own_out_keys():
    inner = TensorDictModule(lambda x: (x, x), in_keys=["x"], out_keys=["a", "b"])
    wrapper = TensorDictModuleWrapper(inner).select_out_keys("b")
    assert wrapper.out_keys == ["b"] and inner.out_keys == ["a", "b"]
    assert list(wrapper(TensorDict(x=torch.zeros(1), batch_size=[1])).keys()) == ["x", "b"]


def test_module_attributes():
    linear = TensorDictModule(nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
    # device and is_functional are deprecated upstream (removed in 0.17)
    with pytest.warns(DeprecationWarning, match="TensorDictModule.device is deprecated"):
        assert linear.device == torch.device("cpu")
    with pytest.warns(DeprecationWarning, match="is_functional is deprecated"):
        assert linear.is_functional is False
    meta = TensorDictModule(nn.Linear(2, 2, device="meta"), in_keys=["x"], out_keys=["y"])
    with pytest.warns(DeprecationWarning, match="multiple devices"):
        assert meta.device == torch.device("meta")
        assert TensorDictModule(lambda x: x, ["x"], ["y"]).device == torch.device("cpu")
    seq = TensorDictSequential(linear)
    assert isinstance(seq, TensorDictModule) and isinstance(seq.module, nn.ModuleList)
    assert (seq.method, seq.method_kwargs, seq.strict, seq._kwargs, seq.inplace) == \
        (None, {}, False, None, None)
    prob = ProbabilisticTensorDictModule(in_keys={"loc": "l", "scale": ("n", "s")},
                                         out_keys=["a"], distribution_class=D.Normal)
    assert prob.dist_keys == ("loc", "scale") and prob.in_keys == ["l", ("n", "s")]
    assert normal_module().dist_keys == ["loc", "scale"]
    assert normal_module(num_samples=3).num_samples == torch.Size([3])


def test_write_to_tensordict_and_call_module():
    module = TensorDictModule(lambda x: (x, x * 2), in_keys=["x"], out_keys=["a", "b"])
    td = TensorDict(x=torch.ones(2), batch_size=[2])
    assert module._write_to_tensordict(td, (torch.zeros(2), torch.ones(2))) is td
    assert set(td.keys()) == {"x", "a", "b"}
    out = TensorDict(batch_size=[2])
    module._write_to_tensordict(td, [torch.ones(2)], out, out_keys=["q"])
    assert list(out.keys()) == ["q"]
    a, b = module._call_module([torch.ones(2)])
    torch.testing.assert_close(b, torch.full((2,), 2.0))


# -- TensorDictParams --------------------------------------------------------------------
def test_params_leaves_are_parameters_or_buffers():
    step = torch.zeros((), dtype=torch.long)
    params = TensorDictParams(TensorDict(w=torch.zeros(2), step=step))
    assert isinstance(params["w"], nn.Parameter) and isinstance(params["step"], nn.Buffer)
    kept = TensorDictParams(TensorDict(w=nn.Parameter(torch.zeros(2)), a=torch.zeros(2)),
                            no_convert=True)
    assert isinstance(kept["a"], nn.Buffer) and not isinstance(kept["a"], nn.Parameter)
    history = torch.ones(2, requires_grad=True) * 2
    kept.set("h", history)  # a tensor with autograd history stays as it is
    assert kept["h"] is history
    cast = kept.to(torch.float64)
    assert isinstance(cast["w"], nn.Parameter) and isinstance(cast["a"], nn.Buffer)
    assert cast["w"].dtype == torch.float64
    copy = kept.clone()
    assert isinstance(copy["w"], nn.Parameter) and copy["w"] is not kept["w"]


def test_params_follow_the_enclosing_module_in_place():
    params = TensorDictParams(TensorDict(w=nn.Parameter(torch.zeros(2)), a=torch.zeros(2)),
                              no_convert=True)
    holder = nn.Module()
    holder.params = params
    before = dict(params.items())
    holder.to(torch.float64)
    assert all(params[key] is value for key, value in before.items())  # same objects
    assert params["w"].dtype == params["a"].dtype == torch.float64
    assert isinstance(params["a"], nn.Buffer)
    assert [name for name, _ in holder.named_buffers()] == ["params.a"]


def test_params_torch_functions_and_inplace_math():
    params = TensorDictParams(TensorDict(a=torch.zeros(2), batch_size=[2]))
    stacked = torch.stack([params, params], 0)
    assert type(stacked) is TensorDict and stacked.batch_size == torch.Size([2, 2])
    assert type(torch.cat([params, params], 0)) is TensorDict
    assert type(params + 1) is TensorDict
    weight = params["a"]
    with torch.no_grad():
        params += 1
    assert params["a"] is weight and (weight == 1).all()  # written into the parameter


# -- sequences ---------------------------------------------------------------------------
def test_compute_in_and_out_keys_last_write_order():
    def module(i, o):
        return TensorDictModule(lambda *a: a[0] if len(o) == 1 else (a[0],) * len(o), i, o)

    modules = [module(["x"], ["v"]), module(["v", "c"], ["a", "v", "w"])]
    assert TensorDictSequential._compute_in_and_out_keys(None, modules) == \
        (["x", "c"], ["a", "v", "w"])
    assert TensorDictSequential(*modules).out_keys == ["a", "v", "w"]
    seq = TensorDictSequential(*modules)
    # tensors out follow the out keys
    a, v, w = seq(torch.ones(1), torch.zeros(1))
    torch.testing.assert_close(v, torch.ones(1))


class SpecModule(TensorDictModule):
    """Like TorchRL's SafeModule: a TensorDictModule with one more argument."""

    def __init__(self, module, in_keys, out_keys, spec=None, inplace=True):
        super().__init__(module, in_keys, out_keys, inplace=inplace)
        self.spec = spec


class SpecSequential(TensorDictSequential, SpecModule):
    """Like TorchRL's SafeSequential: keys computed before nn.Module is initialised."""

    def __init__(self, *modules, partial_tolerant=False):
        self.partial_tolerant = partial_tolerant
        in_keys, out_keys = self._compute_in_and_out_keys(modules)
        super(TensorDictSequential, self).__init__(
            module=nn.ModuleList(list(modules)), in_keys=in_keys, out_keys=out_keys,
            spec="spec", inplace=None)


class SpecProbabilisticSequential(ProbabilisticTensorDictSequential, SpecSequential):
    """Like TorchRL's SafeProbabilisticTensorDictSequential."""

    def __init__(self, *modules, partial_tolerant=False):
        super().__init__(*modules, partial_tolerant=partial_tolerant)


def test_torchrl_subclassing_patterns():
    first = TensorDictModule(nn.Linear(3, 6), in_keys=["x"], out_keys=["h"])
    params = TensorDictModule(NormalParamExtractor(), in_keys=["h"], out_keys=["loc", "scale"])
    seq = SpecSequential(first, params)
    assert seq.spec == "spec" and seq.in_keys == ["x"] and seq.out_keys == ["h", "loc", "scale"]
    td = seq(TensorDict(x=torch.randn(4, 3), batch_size=[4]))
    assert td["loc"].shape == torch.Size([4, 3])
    prob = SpecProbabilisticSequential(first, params, normal_module(return_log_prob=True))
    assert prob.out_keys == ["h", "loc", "scale", "action", "action_log_prob"]
    td = prob(TensorDict(x=torch.randn(4, 3), batch_size=[4]))
    torch.testing.assert_close(prob.log_prob(td), D.Normal(td["loc"], td["scale"]).log_prob(
        td["action"]))
    assert prob._last_module.dist_sample_keys == prob.dist_sample_keys == ["action"]


def test_sequence_setitem_delitem():
    first = TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"])
    second = TensorDictModule(nn.Linear(4, 2), in_keys=["h"], out_keys=["y"])
    other = TensorDictModule(nn.Linear(3, 2), in_keys=["z"], out_keys=["w"])
    seq = TensorDictSequential(first, second)
    seq[1] = other
    assert seq[1] is other and seq.in_keys == ["x", "z"] and seq.out_keys == ["h", "w"]
    del seq[0]
    assert len(seq) == 1 and seq.in_keys == ["z"]
    with pytest.raises(IndexError):
        seq[5] = first


def test_partial_tolerant_runs_on_the_parts_of_a_lazy_stack():
    first = TensorDictModule(nn.Linear(3, 4), in_keys=["a"], out_keys=["hidden"])
    from_b = TensorDictModule(nn.Linear(4, 2), in_keys=["b"], out_keys=["out"])
    from_c = TensorDictModule(nn.Linear(4, 2), in_keys=["c"], out_keys=["out"])
    seq = TensorDictSequential(first, from_b, from_c, partial_tolerant=True)
    td = LazyStackedTensorDict(TensorDict(a=torch.randn(3), b=torch.randn(4)),
                               TensorDict(a=torch.randn(3), c=torch.randn(4)), stack_dim=0)
    seq(td)
    assert "out" in td.keys() and "b" not in td.keys()
    torch.testing.assert_close(td[0]["out"], from_b.module(td[0]["b"]))
    torch.testing.assert_close(td[1]["out"], from_c.module(td[1]["c"]))


# -- switches ------------------------------------------------------------------------------
def test_set_dispatch_td_nn_modules():
    module = TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"])
    torch.testing.assert_close(module(x=torch.zeros(2)), torch.ones(2))
    with _set_dispatch_td_nn_modules(False):
        with pytest.raises(TypeError):
            module(x=torch.zeros(2))  # handed to forward as it is
        td = module(TensorDict(x=torch.zeros(2), batch_size=[2]))
        torch.testing.assert_close(td["y"], torch.ones(2))
    torch.testing.assert_close(module(torch.zeros(2)), torch.ones(2))

    @_set_dispatch_td_nn_modules(False)
    def call():
        return module(torch.zeros(2))

    with pytest.raises(AttributeError):
        call()


def test_set_skip_existing_none_decorator():
    calls = []

    class Module(TensorDictModuleBase):
        def __init__(self, in_keys, out_keys):
            super().__init__()
            self.in_keys, self.out_keys = in_keys, out_keys

        @_set_skip_existing_None()
        def forward(self, tensordict):
            calls.append(skip_existing())
            return tensordict.set(self.out_keys[0], tensordict[self.in_keys[0]] + 1)

    td = TensorDict(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    Module(["x"], ["y"])(td)
    assert calls == [False]  # off: runs, mode untouched
    with set_skip_existing(True):
        Module(["x"], ["y"])(td)  # outputs present: skipped
        Module(["x"], ["q"])(td)  # missing: runs with the mode on
        Module(["x"], ["x"])(td)  # its output is also an input: runs
    assert calls == [False, True, True]
    with pytest.raises(RuntimeError, match="``None`` input"):
        with set_skip_existing(None):
            pass


def test_positive_mappings():
    x = torch.linspace(-3, 3, 7)
    torch.testing.assert_close(expln(x), torch.where(x > 0, x.log1p() + 1, x.exp()))
    torch.testing.assert_close(nn.functional.softplus(torch.tensor(inv_softplus(2.0))),
                               torch.tensor(2.0))
    torch.testing.assert_close(biased_softplus(3.0, 0.5)(torch.zeros(1)), torch.full((1,), 3.0))
    torch.testing.assert_close(mappings("expln")(x), expln(x))
    module = nn.Module()
    module.buf = Buffer(torch.ones(2))
    assert "buf" in dict(module.named_buffers())


def test_set_composite_lp_aggregate_set_and_decorator():
    @set_composite_lp_aggregate(True)
    def inside():
        return composite_lp_aggregate(nowarn=True)

    assert inside() is True and composite_lp_aggregate() is False
    set_composite_lp_aggregate(True).set()
    try:
        assert composite_lp_aggregate() is True
    finally:
        set_composite_lp_aggregate(False).set()


# -- random generators ---------------------------------------------------------------------
def test_use_generator_swaps_the_global_generator():
    torch.manual_seed(0)
    expected_global = torch.randn(3)
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(5)
    with _use_generator(generator):
        inside = torch.randn(3)
    torch.testing.assert_close(inside, torch.randn(3, generator=torch.Generator().manual_seed(5)))
    torch.testing.assert_close(torch.randn(3), expected_global)  # global stream untouched
    reference = torch.Generator().manual_seed(5)
    torch.randn(3, generator=reference)
    torch.testing.assert_close(torch.randn(2, generator=generator),
                               torch.randn(2, generator=reference))  # generator advanced
    with pytest.raises(ValueError), _use_generator(generator):
        raise ValueError
    with _use_generator(None):
        torch.randn(1)


def test_probabilistic_module_generator():
    td = normal_td(3)
    seeded = normal_module(generator=torch.Generator().manual_seed(0),
                           default_interaction_type="random")
    torch.testing.assert_close(seeded(td.clone())["action"],
                               torch.randn(3, 3, generator=torch.Generator().manual_seed(0)))
    from_int = normal_module(generator=3, default_interaction_type=InteractionType.RANDOM)
    reference = torch.Generator().manual_seed(3)
    for _ in range(2):  # the module's generator advances from call to call
        torch.testing.assert_close(from_int(td.clone())["action"],
                                   torch.randn(3, 3, generator=reference))
    assert from_int._generator.initial_seed() == 3
    with pytest.raises(TypeError, match="generator must be"):
        normal_module(generator=1.5)


def test_generator_read_from_the_input():
    module = normal_module(generator="gen", default_interaction_type="random")
    assert module._generator_key == "gen" and module._generator is None
    td = TensorDict(loc=torch.zeros(4), scale=torch.ones(4), gen=torch.tensor(7))
    module(td)
    reference = torch.Generator().manual_seed(7)
    torch.testing.assert_close(td["action"], torch.randn(4, generator=reference))
    # the seed is replaced by the next one drawn from the generator
    assert td["gen"].item() == int(torch.randint(0, 2**62, (1,), generator=reference))
    stored = TensorDict(loc=torch.zeros(4), scale=torch.ones(4))
    stored.set_non_tensor("gen", torch.Generator().manual_seed(1))
    torch.testing.assert_close(module(stored)["action"],
                               torch.randn(4, generator=torch.Generator().manual_seed(1)))
    assert module._resolve_generator(normal_td(4)) == (None, None)  # missing: global RNG
    with pytest.raises(ValueError, match="tensor of 2 elements"):
        module(TensorDict(loc=torch.zeros(2), scale=torch.ones(2), gen=torch.tensor([1, 2]),
                          batch_size=[2]))
    bad = TensorDict(loc=torch.zeros(1), scale=torch.ones(1))
    bad.set_non_tensor("gen", "seed")
    with pytest.raises(TypeError, match="value of type str"):
        module(bad)


def test_dist_sample():
    module = normal_module(num_samples=2)
    dist = module.get_dist(normal_td(3))
    assert module._dist_sample(dist, InteractionType.MODE).shape == torch.Size([2, 3, 3])
    generator = torch.Generator().manual_seed(2)
    sample = module._dist_sample(dist, InteractionType.RANDOM, generator=generator)
    torch.testing.assert_close(sample, torch.randn(2, 3, 3,
                                                   generator=torch.Generator().manual_seed(2)))
    with set_interaction_type("mean"):
        torch.testing.assert_close(module._dist_sample(dist), torch.zeros(2, 3, 3))


# -- probabilistic keys -------------------------------------------------------------------
def test_out_keys_vs_sample_keys():
    module = normal_module(return_log_prob=True)
    assert module._out_keys == module.dist_sample_keys == ["action"]
    assert module.out_keys == ["action", "action_log_prob"]
    assert module.log_prob_key == "action_log_prob"
    two = ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["a", "b"],
                                        distribution_class=D.Normal, return_log_prob=True)
    assert two.log_prob_keys == ["a_log_prob", "b_log_prob"]
    with pytest.raises(RuntimeError, match="one and only one element"):
        two.log_prob_key  # noqa: B018
    custom = normal_module(return_log_prob=True, log_prob_key="lp")
    assert custom.out_keys == ["action", "lp"] and "lp" in custom(normal_td(2)).keys()


@pytest.mark.parametrize("aggregate", [False, True])
def test_composite_module_keys(aggregate):
    with set_composite_lp_aggregate(aggregate):
        module = ProbabilisticTensorDictModule(
            in_keys=["params"], distribution_class=CompositeDistribution,
            distribution_kwargs={**COMPOSITE, "name_map": {"cont": ("act", "c")}},
            return_log_prob=True)
        assert module._composite_lp_aggreate_at_init is aggregate
        assert module.dist_sample_keys == [("act", "c"), ("nested", "disc")]
        out = module(TensorDict(params=composite_params(), batch_size=[3]))
        keys = set(out.exclude("params").keys(True, True))
        per_component = {("act", "c"), ("act", "c_log_prob"), ("nested", "disc"),
                         ("nested", "disc_log_prob")}
        if aggregate:
            assert module.log_prob_keys == ["sample_log_prob"]
            assert keys == per_component | {"sample_log_prob"}
            torch.testing.assert_close(
                out["sample_log_prob"],
                out["act", "c_log_prob"].sum(-1) + out["nested", "disc_log_prob"])
        else:
            assert module.log_prob_keys == [("act", "c_log_prob"), ("nested", "disc_log_prob")]
            assert keys == per_component
    with set_composite_lp_aggregate(not aggregate), \
            pytest.raises(RuntimeError, match="class was instantiated with"):
        module.log_prob_keys  # noqa: B018


def test_composite_partial_and_custom_log_prob_keys():
    partial = functools.partial(CompositeDistribution, **COMPOSITE)
    module = ProbabilisticTensorDictModule(
        in_keys=["params"], out_keys=["cont", ("nested", "disc")], distribution_class=partial,
        return_log_prob=True, log_prob_keys=["lp1", ("n", "lp2")])
    assert module.out_keys == ["cont", ("nested", "disc"), "lp1", ("n", "lp2")]
    out = module(TensorDict(params=composite_params(), batch_size=[3]))
    assert {"lp1", ("n", "lp2")} <= set(out.keys(True, True))
    assert "cont_log_prob" not in out.keys()
    lp = TensorDict({"cont_log_prob": torch.zeros(3, 4),
                     ("nested", "disc_log_prob"): torch.zeros(3)}, [3])
    module._update_td_lp(lp)
    assert set(lp.keys(True, True)) == {"lp1", ("n", "lp2")}
    with set_composite_lp_aggregate(True), pytest.raises(RuntimeError, match="log_prob_key"):
        ProbabilisticTensorDictModule(in_keys=["params"], distribution_class=partial,
                                      log_prob_keys=["lp1", "lp2"])


# -- CompositeDistribution -----------------------------------------------------------------
def test_composite_distribution_calls():
    loc = torch.zeros(3, 4, requires_grad=True)
    params = TensorDict({"cont": {"loc": loc, "scale": torch.ones(3, 4)}}, [3])
    dist = CompositeDistribution(params, {"cont": D.Normal}, log_prob_key="LP",
                                 entropy_key="ENT")
    normal = D.Normal(loc, torch.ones(3, 4))
    assert dist.has_rsample is False and dist.log_prob_key == "LP"
    assert not dist.sample()["cont"].requires_grad and dist.rsample()["cont"].requires_grad
    with pytest.raises(RuntimeError, match="Expected a tensordict sample"):
        dist.log_prob(torch.zeros(3, 4))
    sample, log_prob = dist.sample_and_log_prob((2,))
    assert sample.batch_size == torch.Size([2, 3])
    torch.testing.assert_close(log_prob["cont_log_prob"], normal.log_prob(sample["cont"]))
    with_sum = dist.log_prob_composite(sample, include_sum=True)
    torch.testing.assert_close(with_sum["LP"], normal.log_prob(sample["cont"]).sum(-1))
    torch.testing.assert_close(dist.entropy_composite(include_sum=True)["ENT"],
                               normal.entropy().sum(-1))
    with set_composite_lp_aggregate(True):
        torch.testing.assert_close(dist.log_prob(sample), with_sum["LP"])
    value = TensorDict(cont=torch.full((3, 4), 0.5), batch_size=[3])
    dist.cdf(value)
    torch.testing.assert_close(value["cont_cdf"], normal.cdf(torch.full((3, 4), 0.5)))
    dist.icdf(value)
    torch.testing.assert_close(value["cont_icdf"], value["cont"])
    with pytest.raises(NotImplementedError):  # a Categorical has no rsample
        CompositeDistribution(composite_params(), COMPOSITE["distribution_map"]).rsample()
    assert _add_suffix(("a", "b"), "_x") == ("a", "b_x") and _add_suffix("a", "_x") == "a_x"


def test_truncated_standard_normal():
    a, b = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, float("inf")])
    dist = TruncatedStandardNormal(a, b)
    normal = D.Normal(0.0, 1.0)
    mass = normal.cdf(b) - normal.cdf(a)
    torch.testing.assert_close(dist.auc, mass)
    value = torch.tensor([0.5, 0.5])
    torch.testing.assert_close(dist.log_prob(value), normal.log_prob(value) - mass.log())
    torch.testing.assert_close(dist.icdf(dist.cdf(value)), value)
    samples = dist.rsample((100_000,))
    assert (samples >= a).all() and (samples <= b).all()
    torch.testing.assert_close(samples.mean(0), dist.mean, atol=0.01, rtol=0)
    torch.testing.assert_close(samples.var(0), dist.variance, atol=0.02, rtol=0)
    with pytest.raises(ValueError, match="Incorrect truncation range"):
        TruncatedStandardNormal(1.0, 0.0)


# -- pytree and vmap -----------------------------------------------------------------------
def test_exclude_td_from_pytree():
    td = TensorDict(a=torch.zeros(2, 3), b={"c": torch.ones(2)}, batch_size=[2])
    assert len(tree_leaves(td)) == 2
    with _exclude_td_from_pytree():
        assert tree_leaves([td, torch.ones(1)])[0] is td
        parts = td.unbind(0)
    assert len(tree_leaves(td)) == 2 and len(parts) == 2
    with pytest.raises(ValueError), _exclude_td_from_pytree():
        raise ValueError
    assert len(tree_leaves(td)) == 2  # registrations restored after an error too


def test_set_tensor():
    linear = nn.Linear(2, 2)
    set_tensor(linear, "weight", torch.zeros(2, 2))
    assert "weight" not in linear._parameters and (linear.weight == 0).all()
    set_tensor(linear, "bias", nn.Parameter(torch.ones(2)))
    assert linear._parameters["bias"].sum() == 2
    linear.register_buffer("buf", torch.zeros(1))
    set_tensor(linear, "buf", torch.ones(1))
    assert linear._buffers["buf"].item() == 1.0


def test_vmap_over_parameters_and_functional_call():
    module = TensorDictModule(nn.Linear(2, 2), in_keys=["x"], out_keys=["y"])
    params = TensorDict.from_module(module)
    stacked = torch.stack([params.detach() * scale for scale in range(1, 5)])
    td = TensorDict(x=torch.randn(3, 2), batch_size=[3])

    def call(data, p):  # TorchRL's _vmap_func
        with p.to_module(module):
            return module(data)

    out = torch.vmap(call, (None, 0))(td, stacked)
    assert out.batch_size == torch.Size([4, 3])
    for i in range(4):
        expected = td["x"] @ stacked["module", "weight"][i].T + stacked["module", "bias"][i]
        torch.testing.assert_close(out["y"][i], expected)
    zeros = {name: torch.zeros_like(p) for name, p in module.named_parameters()}
    result = torch.func.functional_call(module, zeros, (td.clone(),))
    torch.testing.assert_close(result["y"], torch.zeros(3, 2))
    mapped = torch.vmap(module, (0,), 0)(TensorDict(x=torch.randn(5, 3, 2), batch_size=[5]))
    assert mapped["y"].shape == torch.Size([5, 3, 2])


# -- tensorclass modules -------------------------------------------------------------------
try:
    from tensordict.tensorclasses import TensorClass
except ImportError:  # tensordict-tensorclass not installed: the test below is skipped
    TensorClass = None

if TensorClass is not None:

    class Inner(TensorClass):
        z: torch.Tensor

    class Nested(TensorClass):
        a: torch.Tensor
        inner: Inner

    class Inputs(TensorClass):
        a: torch.Tensor
        b: torch.Tensor

    class Outputs(TensorClass):
        result: torch.Tensor


@pytest.mark.skipif(TensorClass is None, reason="needs tensordict-tensorclass")
def test_tensorclass_module():
    from tensordict.nn import TensorClassModuleBase, TensorClassModuleWrapper

    class Add(TensorClassModuleBase[Inputs, Outputs]):
        def forward(self, x):
            return Outputs(result=x.a + x.b, batch_size=x.batch_size)

    module = Add()
    assert (Add.input_type, Add.output_type) == (Inputs, Outputs)
    wrapper = module.as_td_module()
    assert isinstance(wrapper, TensorClassModuleWrapper) and wrapper.tc_module is module
    assert wrapper.in_keys == ["a", "b"] and wrapper.out_keys == ["result"]
    td = TensorDict(a=torch.ones(2), b=torch.ones(2), extra=torch.zeros(2), batch_size=[2])
    out = wrapper(td)
    assert list(out.keys()) == ["result"] and "result" not in td.keys()
    torch.testing.assert_close(out["result"], torch.full((2,), 2.0))
    torch.testing.assert_close(wrapper(a=torch.ones(2), b=torch.ones(2)), torch.full((2,), 2.0))
    seq = TensorDictSequential(wrapper, TensorDictModule(lambda r: r * 2, ["result"], ["r2"]))
    torch.testing.assert_close(seq(td.clone())["r2"], torch.full((2,), 4.0))

    class FromNested(TensorClassModuleBase[Nested, Outputs]):
        def forward(self, x):
            return Outputs(result=x.a + x.inner.z, batch_size=x.batch_size)

    assert FromNested().as_td_module().in_keys == ["a", ("inner", "z")]

    class Plain(TensorClassModuleBase[torch.Tensor, torch.Tensor]):
        def forward(self, x):
            return x + 1

    torch.testing.assert_close(Plain()(torch.zeros(1)), torch.ones(1))
    with pytest.raises(ValueError, match="both input and output type as TensorClass"):
        Plain().as_td_module()

    class Untyped(TensorClassModuleBase):
        def forward(self, x):
            return x

    with pytest.raises(ValueError, match="Generic input/output types not set"):
        Untyped().as_td_module()
    with pytest.raises(TypeError, match="abstract"):
        TensorClassModuleBase()


@pytest.mark.skipif(TensorClass is None, reason="needs tensordict-tensorclass")
def test_tensorclass_module_wrapper_ignores_other_arguments_with_a_warning():
    from tensordict.nn import TensorClassModuleBase

    class Add(TensorClassModuleBase[Inputs, Outputs]):
        def forward(self, x):
            return Outputs(result=x.a + x.b, batch_size=x.batch_size)

    wrapper = Add().as_td_module()
    td = TensorDict(a=torch.ones(2), b=torch.ones(2), batch_size=[2])
    with pytest.warns(FutureWarning, match="ignores 'tensordict_out', 'foo'. Starting with"):
        out = wrapper(td, tensordict_out=TensorDict(batch_size=[2]), foo=1)
    assert list(out.keys()) == ["result"]
    with pytest.warns(FutureWarning, match="ignores positional arguments. Starting"):
        wrapper(td, 1)


def test_top_level_nn_names():
    import tensordict
    import tensordict.nn as tnn

    assert tensordict.TensorClassModuleBase is tnn.TensorClassModuleBase
    assert tensordict.TensorClassModuleWrapper is tnn.TensorClassModuleWrapper
    assert tensordict.as_tensordict_module is tnn.as_tensordict_module


def test_distribution_kwargs_as_a_tensordict():
    module = ProbabilisticTensorDictModule(
        in_keys=["loc", "scale"], out_keys=["x"], distribution_class=torch.distributions.Normal,
        distribution_kwargs=TensorDict(validate_args=False))
    out = module(TensorDict(loc=torch.zeros(3), scale=torch.ones(3), batch_size=[3]))
    assert out["x"].shape == (3,) and isinstance(module.distribution_kwargs, TensorDict)


def test_tensordict_params_as_a_context_manager():
    from tensordict.nn import TensorDictParams

    params = TensorDictParams(TensorDict(w=torch.zeros(3)))
    with params as entered:
        assert entered is params
        entered["w"].data += 1
    torch.testing.assert_close(params["w"].detach(), torch.ones(3))


def test_tensordict_params_of_lazy_modules_flatten_without_their_uninitialized_stacks():
    import torch.utils._pytree as pytree

    params = TensorDict.from_modules(nn.LazyLinear(2), nn.LazyLinear(2), as_module=True)
    leaves, spec = pytree.tree_flatten(params)
    # no uninitialized tensor among the leaves (vmap could not map over it): a carrier
    # of the batch size takes their place
    assert not any(isinstance(leaf, nn.parameter.UninitializedTensorMixin) for leaf in leaves)
    assert leaves[-1].shape == (2, 0)
    rebuilt = pytree.tree_unflatten(leaves, spec)
    assert rebuilt["weight"] is params["weight"] and rebuilt["bias"] is params["bias"]
    params["weight"].materialize((2, 3))
    params["bias"].materialize((2,))
    leaves, _ = pytree.tree_flatten(params)  # materialized: plain leaves again
    assert sorted(tuple(leaf.shape) for leaf in leaves) == [(2, 2), (2, 2, 3)]


class _Recorder(nn.Module):
    """Records what it is given for ``s``; returns ``x + 1``."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list = []

    def forward(self, x, s):
        self.seen.append(s)
        return x + 1


def test_non_tensor_inputs_reach_the_module_as_objects():
    # as upstream: the module gets what td[key] reads (the string, a LinkedList of a
    # stack), not the NonTensorData / NonTensorStack wrapper
    recorder = _Recorder()
    module = TensorDictModule(recorder, in_keys=["x", "s"], out_keys=["y"])
    module(TensorDict(x=torch.zeros(3), s="hello", batch_size=[3]))
    module(TensorDict(x=torch.zeros(2), s=NonTensorStack("a", "b"), batch_size=[2]))
    strict = TensorDictModule(recorder, in_keys=["x", "s"], out_keys=["y"], strict=True)
    out = strict(lazy_stack([TensorDict(x=torch.zeros(()), s="c"),
                             TensorDict(x=torch.zeros(()), s="d")]))
    assert recorder.seen == ["hello", ["a", "b"], ["c", "d"]]
    assert [type(s) for s in recorder.seen] == [str, LinkedList, LinkedList]
    assert out["y"].tolist() == [1.0, 1.0]
