"""TypedTensorDict: a TensorDict subclass with fields declared as annotations."""

import warnings

import pytest
import torch
from torch import Tensor

from tensordict import TensorDict, TypedTensorDict


class State(TypedTensorDict):
    eta: Tensor
    X: Tensor


class WithDefaults(TypedTensorDict):
    a: Tensor
    b: Tensor = None
    c: int = 3


def _state():
    return State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])


def test_construction_and_access():
    state = _state()
    assert state.eta.shape == (5, 3) and state["X"].shape == (5, 4)
    assert state.eta is state["eta"]
    assert list(state.keys()) == ["eta", "X"]
    assert repr(state) == "State(batch_size=[5], fields={X: f32[4], eta: f32[3]})"
    from_dict = State({"eta": torch.zeros(5, 3), "X": torch.zeros(5, 4)}, batch_size=[5])
    assert from_dict.batch_size == (5,)
    locked = State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5], lock=True,
                   names=["n"])
    assert locked.is_locked and locked.names == ["n"]


def test_construction_errors():
    with pytest.raises(TypeError, match=r"State\(\) missing required field\(s\): X"):
        State(eta=torch.zeros(5, 3), batch_size=[5])
    with pytest.raises(TypeError, match=r"State\(\) got unexpected field\(s\): Y"):
        State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), Y=1, batch_size=[5])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        State(eta=torch.zeros(5, 3), X=torch.zeros(4, 4), batch_size=[5])
    with pytest.raises(TypeError):
        State(torch.zeros(5, 3), torch.zeros(5, 4))
    with pytest.raises(TypeError, match="cannot be instantiated"):
        TypedTensorDict(a=torch.zeros(2))


def test_operations_keep_the_class():
    state = _state()
    for out in (state[0], state.clone(), state.to("cpu"), state + 1, state.unsqueeze(0),
                state.exclude("eta"), state.select("eta"), state.reshape(5)):
        assert type(out) is State
    assert state[0].batch_size == ()
    assert type(torch.stack([state, state])) is State
    assert type(torch.cat([state, state])) is State
    assert type(state.to_tensordict()) is TensorDict


def test_set_get_delete():
    state = _state()
    state.eta = torch.ones(5, 3)
    assert torch.equal(state["eta"], torch.ones(5, 3))
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        state.eta = torch.ones(3)
    state["Z"] = torch.ones(5)
    assert "Z" in state.keys()
    with pytest.raises(AttributeError):
        del state.eta
    del state["eta"]
    with pytest.raises(AttributeError, match="'eta'"):
        state.eta  # noqa: B018


def test_defaults():
    td = WithDefaults(a=torch.zeros(2))
    assert td.b is None and td.c == 3 and list(td.keys()) == ["a"]
    td.c = torch.tensor(4)
    assert td["c"] == 4


def test_inheritance():
    class Extended(State):
        y: Tensor

    out = Extended(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), y=torch.zeros(5),
                   batch_size=[5])
    assert set(out.keys()) == {"eta", "X", "y"}
    with pytest.raises(TypeError, match="missing required field"):
        Extended(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])


def test_from_tensordict_shares_entries():
    td = TensorDict(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), Z=torch.zeros(5),
                    batch_size=[5])
    state = State.from_tensordict(td)
    assert type(state) is State and state.eta is td["eta"] and "Z" in state.keys()
    state["new"] = torch.ones(5)
    assert "new" in td.keys()
    with pytest.raises(TypeError, match=r"State.from_tensordict\(\) missing required"):
        State.from_tensordict(TensorDict(eta=torch.zeros(5, 3), batch_size=[5]))


def test_options():
    class Frozen(TypedTensorDict["frozen"]):
        a: Tensor

    class AlsoFrozen(TypedTensorDict, frozen=True):
        a: Tensor

    class Child(AlsoFrozen):
        b: Tensor

    assert Frozen(a=torch.zeros(2)).is_locked and AlsoFrozen(a=torch.zeros(2)).is_locked
    assert Child(a=torch.zeros(2), b=torch.zeros(2)).is_locked
    with pytest.raises(AttributeError, match="shadows a TensorDictBase attribute"):
        class Bad(TypedTensorDict):
            batch_size: Tensor

    class Shadow(TypedTensorDict, shadow=True):
        sum: Tensor

    assert torch.equal(Shadow(sum=torch.zeros(2)).sum, torch.zeros(2))
    with pytest.warns(DeprecationWarning, match="'autocast' has no effect"):
        class Auto(TypedTensorDict, autocast=True):
            a: Tensor
    with pytest.raises(ValueError, match="Unknown TypedTensorDict option: 'bogus'"):
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
