"""ProbabilisticTensorDictModule / Sequential, interaction types, composite modules."""

import functools

import pytest
import torch
from torch import distributions as D
from torch import nn

from tensordict import TensorDict
from tensordict.nn import (
    CompositeDistribution,
    InteractionType,
    ProbabilisticTensorDictModule,
    ProbabilisticTensorDictSequential,
    TensorDictModule,
    TensorDictSequential,
    interaction_type,
    set_composite_lp_aggregate,
    set_interaction_type,
)
from tensordict.nn.distributions import Delta, NormalParamExtractor, OneHotCategorical


def normal_td(batch=(3,)):
    torch.manual_seed(0)
    return TensorDict(loc=torch.randn(*batch, 2), scale=torch.rand(*batch, 2) + 0.5,
                      batch_size=list(batch))


def normal_module(**kwargs):
    return ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                         distribution_class=D.Normal, **kwargs)


def test_keys_and_log_prob_key():
    module = normal_module(return_log_prob=True)
    assert module.in_keys == ["loc", "scale"]
    assert module.out_keys == ["action", "action_log_prob"]
    assert module.log_prob_key == "action_log_prob"
    assert module.dist_sample_keys == ["action"] and module.dist_params_keys == ["loc", "scale"]
    nested = ProbabilisticTensorDictModule(in_keys=["p"], out_keys=[("agent", "act")])
    assert nested.log_prob_key == ("agent", "act_log_prob")
    custom = normal_module(return_log_prob=True, log_prob_key="lp")
    assert custom.out_keys == ["action", "lp"]


def test_default_is_deterministic_mean_with_log_prob():
    td = normal_td()
    normal_module(return_log_prob=True)(td)
    torch.testing.assert_close(td["action"], td["loc"])
    expected = D.Normal(td["loc"], td["scale"]).log_prob(td["loc"])
    torch.testing.assert_close(td["action_log_prob"], expected)


@pytest.mark.parametrize("itype,attr", [("mode", "mode"), ("mean", "mean"),
                                        (InteractionType.MEDIAN, "loc")])
def test_interaction_types(itype, attr):
    td = normal_td()
    with set_interaction_type(itype):
        normal_module()(td)
    dist = D.Normal(td["loc"], td["scale"])
    torch.testing.assert_close(td["action"], getattr(dist, attr) if attr != "loc" else td["loc"],
                               atol=0.15, rtol=0)


def test_random_sampling_is_random_and_reparameterized():
    td = normal_td((2000,))
    td["loc"].requires_grad_(True)
    with set_interaction_type("random"):
        normal_module()(td)
    sample = td["action"]
    assert sample.requires_grad
    z = (sample - td["loc"]) / td["scale"]
    assert abs(z.mean().item()) < 0.1 and abs(z.std().item() - 1) < 0.1


def test_interaction_type_context():
    assert interaction_type() is None
    with set_interaction_type("random"):
        assert interaction_type() is InteractionType.RANDOM
        with set_interaction_type(InteractionType.MODE):
            assert interaction_type() is InteractionType.MODE
        assert interaction_type() is InteractionType.RANDOM
    assert interaction_type() is None
    with pytest.raises(ValueError):
        set_interaction_type("nonsense")
    assert [t.value for t in InteractionType] == ["mode", "median", "mean", "random",
                                                  "deterministic"]


def test_default_interaction_type_of_module():
    td = normal_td((500,))
    module = normal_module(default_interaction_type="random")
    module(td)
    assert not torch.equal(td["action"], td["loc"])


def test_categorical_deterministic_is_mode():
    module = ProbabilisticTensorDictModule(in_keys=["logits"], out_keys=["a"],
                                           distribution_class=D.Categorical)
    td = module(TensorDict(logits=torch.tensor([[0.0, 3.0, 1.0], [5.0, 0.0, 0.0]]),
                           batch_size=[2]))
    assert td["a"].tolist() == [1, 0]


def test_empirical_mode_when_no_closed_form():
    class NoMode(D.Normal):
        @property
        def mode(self):
            raise NotImplementedError

    module = ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["a"],
                                           distribution_class=NoMode,
                                           n_empirical_estimate=2000)
    td = TensorDict(loc=torch.tensor([3.0]), scale=torch.tensor([0.1]), batch_size=[1])
    with set_interaction_type("mode"):
        module(td)
    assert abs(td["a"].item() - 3.0) < 0.05


def test_default_delta_and_out_keys_default():
    module = ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"])
    td = module(TensorDict(param=torch.arange(4.0), batch_size=[4]))
    torch.testing.assert_close(td["a"], torch.arange(4.0))
    assert ProbabilisticTensorDictModule(in_keys=["p"]).out_keys == ["_"]


def test_dict_in_keys_and_distribution_kwargs():
    module = ProbabilisticTensorDictModule(
        in_keys={"loc": "mu", "scale": ("n", "sig")}, out_keys=["a"],
        distribution_class=D.Normal, distribution_kwargs={"validate_args": True})
    assert module.in_keys == ["mu", ("n", "sig")]
    td = module(TensorDict(mu=torch.ones(2), n={"sig": torch.ones(2)}, batch_size=[2]))
    torch.testing.assert_close(td["a"], torch.ones(2))


def test_missing_param_raises_and_changes_nothing():
    td = TensorDict(loc=torch.zeros(2), batch_size=[2])
    with pytest.raises(KeyError, match="scale"):
        normal_module()(td)
    assert list(td.keys()) == ["loc"]


def test_get_dist_log_prob_cache_dist():
    td = normal_td()
    module = normal_module(cache_dist=True)
    dist = module.get_dist(td)
    assert isinstance(dist, D.Normal) and module._dist is dist
    module(td)
    torch.testing.assert_close(module.log_prob(td), dist.log_prob(td["action"]))


def test_one_hot_module():
    module = ProbabilisticTensorDictModule(in_keys=["logits"], out_keys=["a"],
                                           distribution_class=OneHotCategorical)
    td = module(TensorDict(logits=torch.tensor([[0.0, 3.0]]), batch_size=[1]))
    assert td["a"].tolist() == [[0, 1]]


def make_actor():
    torch.manual_seed(0)
    net = TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
                           in_keys=["x"], out_keys=["loc", "scale"])
    return ProbabilisticTensorDictSequential(net, normal_module(return_log_prob=True))


def test_sequential_forward_get_dist_log_prob():
    actor = make_actor()
    assert actor.in_keys == ["x"]
    assert actor.out_keys == ["loc", "scale", "action", "action_log_prob"]
    td = TensorDict(x=torch.randn(5, 3), batch_size=[5])
    actor(td)
    dist = actor.get_dist(td.select("x"))
    assert isinstance(dist, D.Normal) and dist.batch_shape == torch.Size([5, 2])
    torch.testing.assert_close(actor.log_prob(td), td["action_log_prob"])
    params = actor.get_dist_params(TensorDict(x=td["x"], batch_size=[5]))
    torch.testing.assert_close(params["loc"], td["loc"])
    assert actor.default_interaction_type is InteractionType.DETERMINISTIC
    assert actor.log_prob_key == "action_log_prob"
    assert isinstance(actor.det_part, TensorDictSequential) and len(actor.det_part) == 1


def test_sequential_needs_probabilistic_last():
    # as upstream: without return_composite=False a deterministic last module makes a
    # composite sequence, which needs one probabilistic module to build a distribution
    det = TensorDictModule(nn.Identity(), in_keys=["x"], out_keys=["y"])
    with pytest.raises(TypeError, match="final module .* must be an instance of Proba"):
        ProbabilisticTensorDictSequential(det, return_composite=False)
    seq = ProbabilisticTensorDictSequential(det)
    assert seq.return_composite is True
    with pytest.raises(RuntimeError, match="No distribution module found"):
        seq.get_dist(TensorDict(x=torch.zeros(2), batch_size=[2]))


def test_a_get_dist_forwarded_by_a_wrapper_is_not_probabilistic():
    # as upstream, a module gives a distribution by its class: a TensorDictModule whose
    # wrapped module has a get_dist (reached through __getattr__) is deterministic
    class WithGetDist(nn.Identity):
        def get_dist(self, td):
            return D.Normal(td["x"], 1.0)

    wrapper = TensorDictModule(WithGetDist(), in_keys=["x"], out_keys=["y"])
    assert callable(wrapper.get_dist)
    seq = ProbabilisticTensorDictSequential(wrapper)
    assert seq.return_composite is True
    with pytest.raises(RuntimeError, match="No distribution module found"):
        seq.get_dist(TensorDict(x=torch.zeros(2), batch_size=[2]))
    with pytest.raises(TypeError, match="final module .* must be an instance of Proba"):
        ProbabilisticTensorDictSequential(wrapper, return_composite=False)


def _two_action_policy(**kwargs):
    torch.manual_seed(0)
    normal = functools.partial(ProbabilisticTensorDictModule,
                               distribution_class=D.Normal, return_log_prob=True)
    return ProbabilisticTensorDictSequential(
        TensorDictModule(nn.Sequential(nn.Linear(3, 4), NormalParamExtractor()),
                         in_keys=["obs"], out_keys=["loc", "scale"]),
        normal(in_keys=["loc", "scale"], out_keys=["a"]),
        TensorDictModule(lambda a: a + 1, in_keys=["a"], out_keys=["c"]),
        normal(in_keys={"loc": "c", "scale": "scale"}, out_keys=["b"]), **kwargs)


def test_sequential_return_composite():
    policy = _two_action_policy()
    assert policy.return_composite is True  # several probabilistic modules
    td = TensorDict(obs=torch.randn(5, 3), batch_size=[5])
    dist = policy.get_dist(td)
    assert list(td.keys()) == ["obs"]  # get_dist works on a copy
    assert isinstance(dist, CompositeDistribution) and list(dist.dists) == ["a", "b"]
    # deterministic values feed the next modules: b's mean is a's mean + 1
    torch.testing.assert_close(dist.dists["b"].loc, dist.dists["a"].loc + 1)
    assert sorted(dist.sample().keys()) == ["a", "b"]
    with set_interaction_type("random"):
        out = policy(td.clone())
    assert {"a", "a_log_prob", "b", "b_log_prob", "c"} <= set(out.keys())
    log_prob = policy.log_prob(out)
    assert sorted(log_prob.keys()) == ["a_log_prob", "b_log_prob"]
    torch.testing.assert_close(log_prob["a_log_prob"],
                               D.Normal(out["loc"], out["scale"]).log_prob(out["a"]))
    assert policy.dist_sample_keys == ["b", "a"]
    assert policy.log_prob_keys == ["b_log_prob", "a_log_prob"]
    assert policy.dist_params_keys == ["c", "scale", "loc", "scale"]
    single = _two_action_policy(return_composite=False)
    assert isinstance(single.get_dist(td.clone()), D.Normal)
    assert single.dist_sample_keys == ["b"]
    with set_composite_lp_aggregate(True):
        summed = _two_action_policy()
        out = summed(td.clone())
        assert "sample_log_prob" in out.keys() and "a_log_prob" not in out.keys()
        assert summed.log_prob(out).shape == torch.Size([5])


def test_log_prob_key_while_aggregating():
    # as upstream: while composite_lp_aggregate is on every module writes one
    # "sample_log_prob" entry (or its log_prob_key) and log_prob_keys are refused
    normal = functools.partial(ProbabilisticTensorDictModule, in_keys=["loc", "scale"],
                               out_keys=["a"], distribution_class=D.Normal,
                               return_log_prob=True)
    with set_composite_lp_aggregate(True):
        assert normal().log_prob_keys == ["sample_log_prob"]
        assert normal(log_prob_key="lp").log_prob_key == "lp"
        with pytest.raises(RuntimeError, match="log_prob_keys were passed"):
            normal(log_prob_keys=["lp"])


def test_sequential_slicing_keeps_probabilistic_kind():
    actor = make_actor()
    assert isinstance(actor[1:], ProbabilisticTensorDictSequential)
    head = actor[:1]
    assert type(head) is TensorDictSequential
    sub = actor.select_subsequence(out_keys=["loc"])
    assert type(sub) is TensorDictSequential


def test_sequential_training_gradient():
    actor = make_actor()
    td = TensorDict(x=torch.randn(5, 3), batch_size=[5])
    with set_interaction_type("random"):
        actor(td)
    td["action_log_prob"].sum().backward()
    assert all(p.grad is not None for p in actor.parameters())


def test_vmap_probabilistic():
    actor = make_actor()
    td = TensorDict(x=torch.randn(4, 5, 3), batch_size=[4, 5])
    out = torch.vmap(actor)(td.clone())
    ref = actor(td.clone())
    torch.testing.assert_close(out["action_log_prob"], ref["action_log_prob"])


def composite_params():
    return TensorDict({"cont": {"loc": torch.zeros(3, 4), "scale": torch.ones(3, 4)},
                       ("nested", "disc"): {"logits": torch.zeros(3, 10)}}, [3])


COMPOSITE_MAP = {"cont": D.Normal, ("nested", "disc"): D.Categorical}


def test_composite_module_per_key_log_probs():
    module = ProbabilisticTensorDictModule(
        in_keys=["params"], out_keys=["cont", ("nested", "disc")],
        distribution_class=CompositeDistribution,
        distribution_kwargs={"distribution_map": COMPOSITE_MAP}, return_log_prob=True)
    assert module.log_prob_keys == ["cont_log_prob", ("nested", "disc_log_prob")]
    with pytest.raises(RuntimeError, match="log_prob_keys"):
        module.log_prob_key  # noqa: B018
    td = module(TensorDict(params=composite_params(), batch_size=[3]))
    assert td["cont"].shape == torch.Size([3, 4])
    torch.testing.assert_close(td["cont_log_prob"],
                               D.Normal(torch.zeros(3, 4), torch.ones(3, 4)).log_prob(td["cont"]))
    torch.testing.assert_close(td["nested", "disc_log_prob"],
                               torch.full((3,), -torch.log(torch.tensor(10.0)).item()))


def test_composite_module_aggregated_log_prob():
    with set_composite_lp_aggregate(True):
        module = ProbabilisticTensorDictModule(
            in_keys=["params"], out_keys=["cont", ("nested", "disc")],
            distribution_class=CompositeDistribution,
            distribution_kwargs={"distribution_map": COMPOSITE_MAP}, return_log_prob=True)
        assert module.log_prob_key == "sample_log_prob"
        td = module(TensorDict(params=composite_params(), batch_size=[3]))
    expected = D.Normal(0.0, 1.0).log_prob(torch.zeros(3, 4)).sum(-1) \
        - torch.log(torch.tensor(10.0))
    torch.testing.assert_close(td["sample_log_prob"], expected)


def test_delta_is_default_distribution_class():
    module = ProbabilisticTensorDictModule(in_keys=["param"], out_keys=["a"],
                                           return_log_prob=True)
    assert module.distribution_class is Delta
    td = module(TensorDict(param=torch.ones(2, 3), batch_size=[2]))
    assert torch.isinf(td["a_log_prob"]).all()


def test_num_samples():
    td = normal_td()
    module = normal_module(num_samples=4, return_log_prob=True)
    with set_interaction_type("random"):
        out = module(td)
    assert out is not td and out.batch_size == torch.Size([4, 3])
    assert out["action"].shape == torch.Size([4, 3, 2]) and "action" not in td.keys()
    assert not torch.allclose(out["action"][0], out["action"][1])
    expected = D.Normal(td["loc"], td["scale"]).log_prob(out["action"])
    torch.testing.assert_close(out["action_log_prob"], expected)
    out = normal_module(num_samples=(2, 5))(td)
    assert out["action"].shape == torch.Size([2, 5, 3, 2])
    torch.testing.assert_close(out["action"][1, 4], td["loc"])


def test_generator_of_the_wrong_type_raises():
    with pytest.raises(TypeError, match="generator must be"):
        ProbabilisticTensorDictModule(in_keys=["p"], generator=1.5)


class _Recorder(nn.Module):
    """Writes loc, scale (and ``action``, when asked) and records the interaction type."""

    def __init__(self, action: float | None = None) -> None:
        super().__init__()
        self.action, self.seen = action, []

    def forward(self, obs):
        self.seen.append(interaction_type())
        out = (torch.zeros_like(obs), torch.ones_like(obs))
        return out if self.action is None else (*out, torch.full_like(obs, self.action))


@pytest.mark.parametrize("default", [InteractionType.RANDOM, InteractionType.DETERMINISTIC])
def test_sequence_runs_its_modules_under_its_default_interaction_type(default):
    recorder = _Recorder()
    seq = ProbabilisticTensorDictSequential(
        TensorDictModule(recorder, ["obs"], ["loc", "scale"]),
        ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                      distribution_class=D.Normal,
                                      default_interaction_type=default))
    td = TensorDict(obs=torch.randn(4), batch_size=[4])
    seq(td), seq.get_dist_params(td), seq.get_dist(td)
    assert recorder.seen == [default] * 3 and interaction_type() is None
    with set_interaction_type(InteractionType.MODE):  # one that is set wins
        seq(td)
    assert recorder.seen[-1] is InteractionType.MODE


@pytest.mark.parametrize("return_log_prob", [False, True])
def test_sequence_keeps_a_sample_an_earlier_module_wrote(return_log_prob):
    seq = ProbabilisticTensorDictSequential(
        TensorDictModule(_Recorder(action=3.0), ["obs"], ["loc", "scale", "action"]),
        ProbabilisticTensorDictModule(in_keys=["loc", "scale"], out_keys=["action"],
                                      distribution_class=D.Normal, return_log_prob=return_log_prob,
                                      default_interaction_type=InteractionType.RANDOM))
    out = seq(TensorDict(obs=torch.randn(4), batch_size=[4]))
    assert (out["action"] == 3).all()
    if return_log_prob:  # the log-prob of the kept value
        torch.testing.assert_close(out["action_log_prob"], D.Normal(0.0, 1.0).log_prob(
            torch.full((4,), 3.0)))
    # a value that only the input holds is drawn anew, as upstream
    fresh = ProbabilisticTensorDictSequential(
        TensorDictModule(_Recorder(), ["obs"], ["loc", "scale"]), seq[-1])
    drawn = fresh(TensorDict(obs=torch.randn(4), action=torch.full((4,), 3.0), batch_size=[4]))
    assert not (drawn["action"] == 3).any()
