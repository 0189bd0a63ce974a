"""TypedTensorDict: fields declared as annotations, over a TensorDict of entries (as
observed on upstream 0.15.3)."""

import copy
import pickle
import warnings
from typing import NotRequired

import pytest
import torch
from torch import Tensor

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    TensorDict,
    TensorDictBase,
    TypedTensorDict,
    is_tensor_collection,
    is_tensorclass,
)


class State(TypedTensorDict):
    eta: Tensor
    X: Tensor


class WithDefaults(TypedTensorDict):
    a: Tensor
    b: Tensor = None
    c: int = 3


class Optional(TypedTensorDict):
    a: Tensor
    b: NotRequired[Tensor]


def _state():
    return State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])


def test_class_hierarchy():
    state = _state()
    assert State.__mro__[1] is TypedTensorDict and TensorDictBase in State.__mro__
    assert TensorDict not in State.__mro__
    assert not isinstance(state, TensorDict) and isinstance(state, TensorDictBase)
    assert not is_tensorclass(state) and not is_tensorclass(State)
    assert is_tensor_collection(state)
    assert type(state._source) is TensorDict
    with pytest.raises(TypeError):
        hash(state)


def test_construction_and_access():
    state = _state()
    assert state.eta.shape == (5, 3) and state["X"].shape == (5, 4)
    assert state.eta is state["eta"] is state._source["eta"]
    assert list(state.keys()) == ["eta", "X"] and len(state) == 5 and "eta" in state
    assert repr(state) == "State(batch_size=[5], fields={X: f32[4], eta: f32[3]})"
    assert State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4)).batch_size == ()
    assert State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=5).batch_size == (5,)
    on_cpu = State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5], device="cpu")
    assert repr(on_cpu) == "State(batch_size=[5], device=cpu, fields={X: f32[4], eta: f32[3]})"
    locked = State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5], lock=True,
                   names=["n"])
    assert locked.is_locked and locked._source.is_locked and locked.names == ["n"]
    assert State.__expected_keys__ == State.__required_keys__ == {"eta", "X"}
    assert State.__optional_keys__ == frozenset() and State.__field_defaults__ == {}


def test_construction_errors():
    with pytest.raises(TypeError, match=r"^State\(\) missing required field\(s\): X$"):
        State(eta=torch.zeros(5, 3), batch_size=[5])
    with pytest.raises(TypeError, match=r"^State\(\) missing required field\(s\): X, eta$"):
        State(batch_size=[5])
    with pytest.raises(TypeError, match=r"^State\(\) got unexpected field\(s\): Y, Z$"):
        State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), Z=1, Y=2, batch_size=[5])
    with pytest.raises(RuntimeError, match="batch dimension mismatch.*'eta'"):
        State(eta=torch.zeros(4, 3), X=torch.zeros(5, 4), batch_size=[5])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        State(eta=1, X=torch.zeros(5, 4), batch_size=[5])  # no type check: a 0-dim tensor
    with pytest.raises(TypeError):
        State(torch.zeros(5, 3), torch.zeros(5, 4))
    with pytest.raises(TypeError):
        TypedTensorDict(a=torch.zeros(2))


def test_construction_from_a_mapping():
    td = TensorDict(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), Q=torch.zeros(5),
                    batch_size=[5])
    state = State(td)
    assert state._source is not td and state.eta is td["eta"] and state.batch_size == ()
    assert set(State(dict(td.items()), batch_size=[5]).keys()) == {"eta", "X", "Q"}
    with pytest.warns(FutureWarning, match=r"State\(dict\) returns an instance of State that "
                      r"misses the required field\(s\) X\. Starting with TensorDict 0\.17"):
        partial = State({"eta": torch.zeros(5, 3)}, batch_size=[5])
    assert list(partial.keys()) == ["eta"]
    # fields by keyword complete the mapping (upstream drops them and warns)
    merged = State({"eta": torch.zeros(5, 3)}, X=torch.ones(5, 4), batch_size=[5])
    assert merged.X.sum() == 20


def test_from_dict():
    state = State.from_dict({"eta": torch.zeros(5, 3), "X": {"a": torch.zeros(5, 4)}},
                            batch_size=[5])
    assert type(state) is State and repr(state) == \
        "State(batch_size=[5], fields={X: {a: f32[4]}, eta: f32[3]})"
    assert State.from_dict({"eta": torch.zeros(5, 3), "X": torch.zeros(5, 4)},
                           auto_batch_size=True).batch_size == (5,)
    with pytest.warns(FutureWarning, match=r"State\.from_dict\(\) returns .* pass check=False"):
        State.from_dict({"eta": torch.zeros(5, 3)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert list(State.from_dict({"eta": torch.zeros(5, 3)}, check=False).keys()) == ["eta"]
    assert type(_state().from_dict_instance({"eta": torch.zeros(2), "X": torch.zeros(2)})) \
        is State


def test_operations_keep_the_class():
    state = _state()
    results = (state[0], state[1:3], state[torch.tensor([0, 1])], state[None], state.clone(),
               state.copy(), state.to("cpu"), state.float(), state + 1, 1 + state, -state,
               state * state, state.abs(), state.isnan(), state.logical_and(state),
               state.unsqueeze(0), state.view(5, 1),
               state.exclude("eta"), state.select("eta"), state.reshape(5, 1), state.expand(2, 5),
               state.apply(lambda x: x + 1), state.named_apply(lambda k, x: x), state.empty(),
               state.detach(), state.contiguous(), state.flatten_keys(), state.masked_fill(
                   torch.ones(5, dtype=torch.bool), 0.0), torch.zeros_like(state),
               torch.stack([state, state]), torch.cat([state, state]),
               torch.stack([state, state.to_tensordict()]), copy.deepcopy(state),
               torch.vmap(lambda t: t + 1)(state), *state.unbind(0), *state.split(2))
    assert all(type(out) is State for out in results)
    assert state[0].batch_size == () and torch.stack([state, state]).batch_size == (2, 5)
    assert state.apply(lambda x: x[0], batch_size=[]).batch_size == ()
    assert state.apply(lambda x: None) is None
    assert state.copy().eta is state.eta and state.clone().eta is not state.eta
    for same in (state.update({"eta": torch.ones(5, 3)}), state.add_(1), state.zero_(),
                 state.apply_(lambda x: x), state.set("z", torch.zeros(5)), state.lock_(),
                 state.unlock_()):
        assert same is state


def test_plain_results():
    state = _state()
    for out in (state == state, state != state, state < 0.5, state.sum(), state.mean(),
                state.max(), state.amax(), state.all(0), state.to_tensordict(),
                torch.stack([state.to_tensordict(), state])):
        assert type(out) is TensorDict
    assert type(tensordict.lazy_stack([state, state])) is LazyStackedTensorDict
    assert state.to_tensordict()["eta"] is not state.eta
    assert (state == state).all()


def test_set_get_delete():
    state = _state()
    state.eta = torch.ones(5, 3)
    assert torch.equal(state["eta"], torch.ones(5, 3))
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        state.eta = torch.ones(3)
    state["Z"] = torch.ones(5)
    assert "Z" in state.keys()
    with pytest.raises(AttributeError, match="no attribute 'Z'"):
        state.Z  # noqa: B018  (an entry that is no field is no attribute)
    state.note = "kept"  # an attribute that is no field: on the instance, not an entry
    assert state.note == "kept" and "note" not in state.keys()
    with pytest.raises(AttributeError, match="property of 'State' object has no deleter"):
        del state.eta
    del state["eta"]
    with pytest.raises(AttributeError, match="'State' has field 'eta' declared but not set"):
        state.eta  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'zzz'"):
        state.zzz  # noqa: B018
    state[0] = state[1]
    state["n", "a"] = torch.zeros(5)
    assert type(state["n"]) is TensorDict and state["n", "a"].shape == (5,)
    state.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        state.set("eta", torch.zeros(5, 3))
    with state.unlock_():
        state.eta = torch.zeros(5, 3)
    assert state.is_locked


def test_defaults_and_not_required():
    td = WithDefaults(a=torch.zeros(2))
    assert td.b is None and td.c == 3 and list(td.keys()) == ["a"]
    assert WithDefaults.__required_keys__ == {"a"} and WithDefaults.__optional_keys__ == {"b", "c"}
    assert WithDefaults.__field_defaults__ == {"b": None, "c": 3}
    td.c = torch.tensor(4)
    assert td["c"] == 4 and td.c == 4
    assert Optional.__required_keys__ == {"a"} and Optional.__optional_keys__ == {"b"}
    assert Optional.__field_defaults__ == {}
    opt = Optional(a=torch.zeros(2))
    with pytest.raises(AttributeError, match="'Optional' has field 'b' declared but not set"):
        opt.b  # noqa: B018
    with pytest.raises(KeyError):
        opt["b"]
    assert torch.equal(Optional(a=torch.zeros(2), b=torch.ones(2)).b, torch.ones(2))

    class Private(TypedTensorDict):
        a: Tensor
        _b: int = 3

    assert Private.__expected_keys__ == {"a"} and Private(a=torch.zeros(1))._b == 3


def test_inheritance():
    class Extended(State):
        y: Tensor

    out = Extended(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), y=torch.zeros(5),
                   batch_size=[5])
    assert set(out.keys()) == {"eta", "X", "y"} and isinstance(out, State)
    assert Extended.__required_keys__ == {"eta", "X", "y"}
    assert type(out[0]) is Extended
    with pytest.raises(TypeError, match=r"^Extended\(\) missing required field\(s\): y$"):
        Extended(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])


def test_from_tensordict_shares_entries():
    td = TensorDict(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), Z=torch.zeros(5),
                    batch_size=[5])
    state = State.from_tensordict(td)
    assert type(state) is State and state._source is td and state.eta is td["eta"]
    assert list(state.keys()) == ["eta", "X", "Z"]
    state["new"] = torch.ones(5)
    assert "new" in td.keys()
    with pytest.raises(TypeError, match=r"State.from_tensordict\(\) missing required"):
        State.from_tensordict(TensorDict(eta=torch.zeros(5, 3), batch_size=[5]))
    assert list(State.from_tensordict(TensorDict(eta=torch.zeros(5, 3)), check=False).keys()) \
        == ["eta"]
    stack = tensordict.lazy_stack([td[0], td[1]])
    assert State.from_tensordict(stack)._source is stack


def test_pickle():
    state = _state()
    state.note = "kept"
    for out in (pickle.loads(pickle.dumps(state)), pickle.loads(pickle.dumps(
            state.consolidate()))):
        assert type(out) is State and type(out._source) is TensorDict
        assert (out == state).all() and out.batch_size == (5,)
    assert pickle.loads(pickle.dumps(state)).note == "kept"


def test_options():
    class Frozen(TypedTensorDict["frozen"]):
        a: Tensor

    class AlsoFrozen(TypedTensorDict, frozen=True):
        a: Tensor

    class Child(AlsoFrozen):
        b: Tensor

    assert TypedTensorDict["frozen", "shadow"].__name__ == "TypedTensorDict_frozen_shadow"
    assert Frozen(a=torch.zeros(2)).is_locked and AlsoFrozen(a=torch.zeros(2)).is_locked
    assert Child(a=torch.zeros(2), b=torch.zeros(2)).is_locked
    frozen = Frozen(a=torch.zeros(2), batch_size=[2])
    assert not frozen.clone().is_locked and not frozen[0].is_locked  # only the constructor
    assert not Frozen.from_tensordict(TensorDict(a=torch.zeros(2))).is_locked
    for name in ("batch_size", "sum", "keys"):
        with pytest.raises(AttributeError, match=f"Field '{name}' shadows a TensorDictBase "
                           r"attribute. Use TypedTensorDict\['shadow'\] to allow this."):
            type("Bad", (TypedTensorDict,), {"__annotations__": {name: Tensor}})

    class Shadow(TypedTensorDict, shadow=True):
        sum: Tensor

    assert torch.equal(Shadow(sum=torch.zeros(2)).sum, torch.zeros(2))
    with pytest.warns(DeprecationWarning, match="'autocast' has no effect"):
        class Auto(TypedTensorDict, autocast=True):
            a: Tensor
    with pytest.raises(ValueError, match="Unknown TypedTensorDict option: 'bogus'. Valid "
                       "options: shadow, frozen, autocast, nocast, tensor_only"):
        TypedTensorDict["bogus"]
    with pytest.raises(TypeError):
        class Unknown(TypedTensorDict, bogus=True):
            a: Tensor
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not State(eta=torch.zeros(1, 3), X=torch.zeros(1, 4)).is_locked


def test_nested_typed_field():
    class Outer(TypedTensorDict):
        inner: State
        z: Tensor

    outer = Outer(inner=_state(), z=torch.zeros(5), batch_size=[5])
    assert type(outer.inner) is State and type(outer[0].inner) is State
    assert type(outer.clone().inner) is State
    assert repr(outer) == \
        "Outer(batch_size=[5], fields={inner: State{X: f32[4], eta: f32[3]}, z: f32[]})"
    parent = TensorDict(a=_state(), batch_size=[5])
    for out in (parent[0], parent.clone(), parent + 1, parent.to("cpu")):
        assert type(out["a"]) is State
    assert type((parent == 0)["a"]) is TensorDict
    parent.lock_()  # (upstream leaves a typed entry of a locked TensorDict unlocked)
    assert parent["a"].is_locked
    with pytest.raises(RuntimeError):
        parent["a"].unlock_()
    as_dict = Outer(inner={"eta": torch.zeros(5, 3), "X": torch.zeros(5, 4)},
                    z=torch.zeros(5), batch_size=[5])
    assert type(as_dict.inner) is TensorDict  # a dict is no State: no conversion


# -- typed entries through stack, cat, pad, reductions, map (as upstream) ------------------
def _holder(n=5):
    return TensorDict(st=State(eta=torch.zeros(n, 3), X=torch.ones(n, 4), batch_size=[n]),
                      a=torch.zeros(n), batch_size=[n])


def test_stack_and_cat_keep_the_class():
    state = _state()
    plain = state.to_tensordict()
    for out in (TensorDict.stack([state, state]), TensorDict.cat([state, state]),
                tensordict.stack([state, plain]), tensordict.cat([state, plain], 0),
                TensorDict.maybe_dense_stack([state, state]),
                LazyStackedTensorDict.maybe_dense_stack([state, state]),
                torch.stack([state, state], 1), tensordict.pad_sequence([state, state[:3]]),
                tensordict.pad_sequence([state, state[:3]], return_mask=True)):
        assert type(out) is State and type(out._source) is TensorDict
    assert TensorDict.stack([state, state], 1).batch_size == (5, 2)
    assert TensorDict.cat([state, state]).eta.shape == (10, 3)
    for out in (TensorDict.stack([plain, state]), tensordict.cat([plain, state])):
        assert type(out) is TensorDict  # the first item's class
    assert type(LazyStackedTensorDict.maybe_dense_stack([state, state.exclude("X")])) is \
        LazyStackedTensorDict
    padded = tensordict.pad_sequence([state, state[:3]], return_mask=True)
    assert padded.batch_size == (2, 5) and padded["masks", "eta"][1].tolist() == [
        True, True, True, False, False]
    out = torch.stack([state, state]).clone()
    assert torch.stack([state, state], out=out) is out


def test_typed_entries_keep_the_class_through_stack_and_cat():
    holders = [_holder(), _holder()]
    for out in (TensorDict.stack(holders), TensorDict.cat(holders), torch.stack(holders),
                torch.cat(holders), LazyStackedTensorDict.maybe_dense_stack(holders),
                torch.stack(holders[0].unbind(0)),
                tensordict.pad_sequence([_holder(2), _holder(3)])):
        assert type(out) is TensorDict and type(out["st"]) is State
    assert TensorDict.stack(holders)["st"].batch_size == (2, 5)
    assert TensorDict.stack(holders)["st", "eta"].shape == (2, 5, 3)


def test_pad_and_reductions_give_plain_tensordicts():
    state, holder = _state(), _holder()
    padded = tensordict.pad(state, [1, 1])
    assert type(padded) is TensorDict and padded.batch_size == (7,)
    assert type(tensordict.pad(holder, [0, 1])["st"]) is TensorDict
    assert holder["st"].__class__ is State  # the input is left as it was
    for out in (state.sum(0), state.quantile(0.5, 0), state.cummax(0).values,
                state.cummin(0).values, state.max(0).values, state.amin(0), state.mean()):
        assert type(out) is TensorDict
    for out in (holder == holder, holder != holder):
        assert type(out["st"]) is TensorDict


def _negate(td):
    return -td


def test_map_and_map_iter():
    state = _state().apply(lambda x: x + 1)
    out = state.map(_negate, chunksize=2, mp_start_method="fork", num_workers=1)
    assert type(out) is State and (out == -state).all()
    chunks = list(state.map_iter(_negate, chunksize=2, mp_start_method="fork",
                                 num_workers=1))
    assert all(type(chunk) is State for chunk in chunks)
    assert (torch.cat(chunks) == -state).all()
    holder = _holder()
    assert type(holder.map(_negate, chunksize=2, mp_start_method="fork",
                           num_workers=1)["st"]) is State

