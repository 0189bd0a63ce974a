"""Distributions and parameter modules, checked against torch.distributions."""

import math

import pytest
import torch
from torch import distributions as D

from tensordict import TensorDict
from tensordict.nn import (
    add_custom_mapping,
    biased_softplus,
    composite_lp_aggregate,
    inv_softplus,
    mappings,
    set_composite_lp_aggregate,
)
from tensordict.nn.distributions import (
    AddStateIndependentNormalScale,
    CompositeDistribution,
    Delta,
    NormalParamExtractor,
    NormalParamWrapper,
    OneHotCategorical,
    TruncatedNormal,
    rand_one_hot,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


# -- mappings ---------------------------------------------------------------------------
def test_inv_softplus_inverts_softplus():
    x = torch.tensor([0.1, 1.0, 5.0])
    torch.testing.assert_close(torch.nn.functional.softplus(inv_softplus(x)), x)
    assert math.isclose(inv_softplus(1.0), math.log(math.e - 1))


def test_biased_softplus():
    f = biased_softplus(2.0, min_val=0.5)
    torch.testing.assert_close(f(torch.zeros(1)), torch.tensor([2.0]))
    assert f(torch.tensor([-100.0])).item() == pytest.approx(0.5)
    with pytest.raises(ValueError):
        biased_softplus(0.1, min_val=0.5)


@pytest.mark.parametrize("name,expected", [
    ("exp", torch.exp), ("softplus", torch.nn.functional.softplus), ("relu", torch.relu),
    ("none", lambda x: x),
])
def test_named_mappings(name, expected):
    x = torch.linspace(-2, 2, 5)
    torch.testing.assert_close(mappings(name)(x), expected(x))


def test_biased_softplus_names_and_custom_and_unknown():
    x = torch.zeros(1)
    torch.testing.assert_close(mappings("biased_softplus")(x), torch.ones(1))
    torch.testing.assert_close(mappings("biased_softplus_3.0")(x), torch.full((1,), 3.0))
    assert mappings("biased_softplus_3.0_1.0")(torch.tensor([-50.0])).item() == \
        pytest.approx(1.0)
    add_custom_mapping("cube_test", lambda t: t**3)
    torch.testing.assert_close(mappings("cube_test")(torch.tensor([2.0])), torch.tensor([8.0]))
    with pytest.raises(NotImplementedError, match="abs"):
        mappings("abs")
    with pytest.raises(TypeError):
        add_custom_mapping("bad", 3)


# -- parameter modules --------------------------------------------------------------------
def test_normal_param_extractor():
    x = torch.randn(5, 6)
    loc, scale = NormalParamExtractor()(x)
    torch.testing.assert_close(loc, x[:, :3])
    torch.testing.assert_close(scale, mappings("biased_softplus_1.0")(x[:, 3:]).clamp_min(1e-4))
    _, _, extra = NormalParamExtractor()(x, torch.ones(1))
    torch.testing.assert_close(extra, torch.ones(1))
    with pytest.raises(ValueError, match="even"):
        NormalParamExtractor()(torch.zeros(2, 3))


def test_normal_param_wrapper_passes_other_outputs():
    loc, scale, other = NormalParamWrapper(lambda x: (x, x * 0))(torch.zeros(2, 4))
    assert loc.shape == scale.shape == torch.Size([2, 2]) and other.shape == torch.Size([2, 4])


def test_add_state_independent_scale():
    module = AddStateIndependentNormalScale(3, init_value=math.log(2.0))
    loc, scale = module(torch.zeros(4, 3))
    torch.testing.assert_close(scale, torch.full((4, 3), 2.0))
    assert [n for n, _ in module.named_parameters()] == ["state_independent_scale"]
    scale.sum().backward()
    assert module.state_independent_scale.grad is not None
    with pytest.raises(RuntimeError, match="scale shape"):
        module(torch.zeros(4, 2))


# -- Delta ------------------------------------------------------------------------------
def test_delta():
    param = torch.randn(4, 3, requires_grad=True)
    d = Delta(param)
    assert d.batch_shape == torch.Size([4]) and d.event_shape == torch.Size([3])
    assert d.sample((2,)).shape == torch.Size([2, 4, 3]) and not d.sample().requires_grad
    assert d.rsample().requires_grad
    for value in (d.mode, d.mean, d.deterministic_sample):
        assert value is param
    off = param.detach().clone()
    off[1, 0] += 1
    assert d.log_prob(param.detach()).tolist() == [math.inf] * 4
    assert d.log_prob(off).tolist() == [math.inf, -math.inf, math.inf, math.inf]
    with pytest.raises(NotImplementedError):
        d.entropy()
    scalar = Delta(torch.ones(5), batch_shape=[5])
    assert scalar.event_shape == torch.Size([]) and scalar.log_prob(torch.ones(5)).shape == \
        torch.Size([5])
    with pytest.raises(ValueError, match="param shape"):
        Delta(torch.ones(5), batch_shape=[4], event_shape=[2])


# -- TruncatedNormal -----------------------------------------------------------------------
def test_truncated_normal_log_prob_matches_renormalised_normal():
    loc, scale = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0])
    a, b = torch.tensor([-1.0, 0.0]), torch.tensor([2.0, 5.0])
    d = TruncatedNormal(loc, scale, a, b)
    normal = D.Normal(loc, scale)
    value = torch.tensor([0.5, 3.0])
    expected = normal.log_prob(value) - (normal.cdf(b) - normal.cdf(a)).log()
    torch.testing.assert_close(d.log_prob(value), expected)
    torch.testing.assert_close(d.cdf(b), torch.ones(2))
    checked = TruncatedNormal(loc, scale, a, b, validate_args=True)  # global default varies
    with pytest.raises(ValueError):
        checked.log_prob(torch.tensor([3.0, 3.0]))  # outside [a, b]
    with pytest.raises(ValueError):
        TruncatedNormal(0.0, 1.0, 1.0, 0.0)


def test_truncated_normal_moments_and_entropy_against_samples():
    d = TruncatedNormal(torch.tensor([0.5]), torch.tensor([1.5]), -1.0, 2.0)
    samples = d.rsample((200_000,))
    assert samples.min() >= -1.0 and samples.max() <= 2.0
    torch.testing.assert_close(samples.mean(0), d.mean, atol=0.01, rtol=0)
    torch.testing.assert_close(samples.var(0), d.variance, atol=0.02, rtol=0)
    mc_entropy = -d.log_prob(samples).mean(0)
    torch.testing.assert_close(d.entropy(), mc_entropy, atol=0.01, rtol=0)
    torch.testing.assert_close(d.mode, torch.tensor([0.5]))


def test_truncated_normal_half_normal_limit():
    d = TruncatedNormal(torch.zeros(1), torch.ones(1), 0.0, float("inf"))
    half = D.HalfNormal(torch.ones(1))
    torch.testing.assert_close(d.mean, half.mean)
    torch.testing.assert_close(d.entropy(), half.entropy())
    torch.testing.assert_close(d.log_prob(torch.tensor([0.7])), half.log_prob(torch.tensor([0.7])))


def test_truncated_normal_rsample_has_grad():
    loc = torch.zeros(3, requires_grad=True)
    TruncatedNormal(loc, torch.ones(3), -1.0, 1.0).rsample().sum().backward()
    assert loc.grad is not None


# -- OneHotCategorical --------------------------------------------------------------------
def test_one_hot_categorical_matches_torch():
    logits = torch.randn(4, 5)
    ours, ref = OneHotCategorical(logits=logits), D.OneHotCategorical(logits=logits)
    value = ref.sample().long()
    torch.testing.assert_close(ours.log_prob(value), ref.log_prob(value.float()))
    torch.testing.assert_close(ours.entropy(), ref.entropy())
    torch.testing.assert_close(ours.mode, ref.mode.long())
    assert ours.deterministic_sample.dtype == torch.int64
    samples = ours.sample((20_000,))
    assert samples.shape == torch.Size([20_000, 4, 5]) and (samples.sum(-1) == 1).all()
    torch.testing.assert_close(samples.float().mean(0), ref.probs, atol=0.02, rtol=0)
    with pytest.raises(ValueError, match="classes"):
        ours.log_prob(torch.zeros(4, 3))


def test_rand_one_hot():
    out = rand_one_hot(torch.tensor([[0.0, 50.0, 0.0]] * 3))
    assert out.tolist() == [[0, 1, 0]] * 3 and out.dtype == torch.int64
    probs = torch.tensor([0.0, 0.0, 1.0])
    assert rand_one_hot(probs, do_softmax=False).tolist() == [0, 0, 1]


# -- CompositeDistribution ---------------------------------------------------------------
def make_composite():
    params = TensorDict({"cont": {"loc": torch.randn(3, 4), "scale": torch.rand(3, 4) + 0.5},
                         ("nested", "disc"): {"logits": torch.randn(3, 6)}}, [3])
    dist = CompositeDistribution(params, {"cont": D.Normal, ("nested", "disc"): D.Categorical})
    normal = D.Normal(params["cont", "loc"], params["cont", "scale"])
    cat = D.Categorical(logits=params["nested", "disc", "logits"])
    return dist, normal, cat


def test_composite_sample_and_per_key_log_prob():
    dist, normal, cat = make_composite()
    sample = dist.sample()
    assert sample.batch_size == torch.Size([3]) and sample["cont"].shape == torch.Size([3, 4])
    assert dist.sample((2,)).batch_size == torch.Size([2, 3])
    lp = dist.log_prob(sample)
    assert composite_lp_aggregate() is False
    torch.testing.assert_close(lp["cont_log_prob"], normal.log_prob(sample["cont"]))
    torch.testing.assert_close(lp["nested", "disc_log_prob"],
                               cat.log_prob(sample["nested", "disc"]))
    ent = dist.entropy()
    torch.testing.assert_close(ent["cont_entropy"], normal.entropy())


def test_composite_aggregated():
    dist, normal, cat = make_composite()
    sample = dist.sample()
    with set_composite_lp_aggregate(True):
        lp = dist.log_prob(sample)
        ent = dist.entropy()
    expected = normal.log_prob(sample["cont"]).sum(-1) + cat.log_prob(sample["nested", "disc"])
    torch.testing.assert_close(lp, expected)
    torch.testing.assert_close(ent, normal.entropy().sum(-1) + cat.entropy())
    assert composite_lp_aggregate() is False


def test_composite_mode_mean_deterministic_and_keys():
    dist, normal, cat = make_composite()
    torch.testing.assert_close(dist.mode["cont"], normal.mode)
    torch.testing.assert_close(dist.deterministic_sample["nested", "disc"], cat.mode)
    assert dist.log_prob_keys == ["cont_log_prob", ("nested", "disc_log_prob")]
    assert dist.sample_keys == ["cont", ("nested", "disc")]


def test_composite_name_map_extra_kwargs_and_errors():
    params = TensorDict(a={"loc": torch.zeros(2), "scale": torch.ones(2)}, batch_size=[2])
    dist = CompositeDistribution(params, {"a": D.Normal}, name_map={"a": ("out", "a")},
                                 extra_kwargs={"a": {"validate_args": False}})
    assert ("out", "a") in dist.sample().keys(True)
    with pytest.raises(KeyError, match="b"):
        CompositeDistribution(params, {"b": D.Normal})
    with pytest.raises(KeyError, match="a"):
        CompositeDistribution(params, {"a": D.Normal}).log_prob(TensorDict(batch_size=[2]))


def test_composite_from_distributions():
    normal = D.Normal(torch.zeros(2), torch.ones(2))
    dist = CompositeDistribution.from_distributions(TensorDict(batch_size=[2]), {"x": normal})
    sample = dist.sample()
    torch.testing.assert_close(dist.log_prob(sample)["x_log_prob"], normal.log_prob(sample["x"]))
