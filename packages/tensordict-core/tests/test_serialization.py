"""Pickling, torch.save/torch.load, state dicts and conversions to Python containers."""

import collections
import copy
import dataclasses
import io
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest
import torch

import tensordict
from tensordict import TensorDict


class Custom:
    """A class torch.load(weights_only=True) does not know."""


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(6.0).view(2, 3), "n": {"b": torch.ones(2, 4, dtype=torch.int64)},
         "s": "text", "tags": ["x", "y"]},
        batch_size=[2], names=["time"],
    )


def _assert_same(out: TensorDict, td: TensorDict) -> None:
    assert type(out) is type(td)
    assert out.batch_size == td.batch_size and out.names == td.names
    assert out.device == td.device
    assert set(out.keys(True)) == set(td.keys(True))
    for key, value in td.items(True):
        if isinstance(value, TensorDict):
            continue
        if isinstance(value, torch.Tensor):
            assert torch.equal(out.get(key), value) and out.get(key).dtype == value.dtype
        else:
            assert out[key] == td[key]


@pytest.mark.parametrize("dumps,loads", [
    (pickle.dumps, pickle.loads),
    (lambda o: bytes(ForkingPickler.dumps(o)), pickle.loads),
])
def test_pickle_round_trip(dumps, loads):
    td = _td()
    out = loads(dumps(td))
    _assert_same(out, td)
    assert out["a"] is not td["a"]
    assert not out._exit_stack  # no pending context action survives


def test_pickle_keeps_lock_and_drops_pending_context_actions():
    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2, 1)}}, [2])
    td.lock_()  # pushes an exit action (a bound method) on the context stack
    out = pickle.loads(pickle.dumps(td))
    assert out.is_locked and out["n"].is_locked and not out._exit_stack
    swap = TensorDict(weight=torch.zeros(1, 1)).to_module(torch.nn.Linear(1, 1))
    assert pickle.loads(pickle.dumps(swap))["weight"].shape == (1, 1)  # closure not pickled


def test_copy_and_deepcopy():
    td = _td()
    shallow = copy.copy(td)
    deep = copy.deepcopy(td)
    assert shallow["a"] is td["a"] and deep["a"] is not td["a"]
    _assert_same(deep, td)


@pytest.mark.parametrize("weights_only", [True, False, None])
def test_torch_save_load_file(tmp_path, weights_only):
    td = _td()
    path = tmp_path / "td.pt"
    torch.save(td, path)
    kwargs = {} if weights_only is None else {"weights_only": weights_only}
    _assert_same(torch.load(path, **kwargs), td)


def test_torch_load_zero_dim_and_empty(tmp_path):
    for td in (TensorDict({"x": torch.tensor(1.5)}), TensorDict(batch_size=[3, 2])):
        buffer = io.BytesIO()
        torch.save(td, buffer)
        buffer.seek(0)
        _assert_same(torch.load(buffer), td)


def test_weights_only_refuses_unknown_objects(tmp_path):
    td = TensorDict(obj=Custom())
    path = tmp_path / "td.pt"
    torch.save(td, path)
    with pytest.raises(pickle.UnpicklingError):
        torch.load(path)
    assert isinstance(torch.load(path, weights_only=False)["obj"], Custom)


def test_state_dict_flat_keys_metadata_and_keep_vars():
    td = _td()
    td["a"].requires_grad_()
    state = td.state_dict()
    assert list(state) == ["a", "n.b"]
    assert state["a"].requires_grad is False and torch.equal(state["a"], td["a"])
    assert td.state_dict(keep_vars=True)["a"] is td["a"]
    assert state._metadata[""]["batch_size"] == torch.Size([2])
    assert state._metadata["s"]["non_tensor"].data == "text"
    assert list(td.state_dict(prefix="p.")) == ["p.a", "p.n.b"]
    destination: dict = {}
    assert td.state_dict(destination=destination) is destination and "n.b" in destination
    assert list(td.state_dict(flatten=True)) == ["a", "n.b"]


def test_load_state_dict_in_place_and_assign():
    td = _td()
    target = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.zeros(2, 4, dtype=torch.int64)}},
                        [2])
    a = target["a"]
    assert target.load_state_dict(td.state_dict()) is target
    assert target["a"] is a and torch.equal(a, td["a"])
    assert target["s"] == "text" and target["tags"] == ["x", "y"]
    new = torch.full((2, 3), 7.0)
    target.load_state_dict({"a": new, "n": {"b": torch.zeros(2, 4, dtype=torch.int64)}},
                           assign=True)
    assert target["a"] is new


def test_load_state_dict_errors_leave_data_unchanged():
    target = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.zeros(2)}}, [2])
    with pytest.raises(RuntimeError, match=r"unexpected \[\('c',\)\]"):
        target.load_state_dict({"a": torch.ones(2, 3), "n.b": torch.ones(2), "c": torch.ones(2)})
    with pytest.raises(RuntimeError, match=r"missing from the state dict \[\('n', 'b'\)\]"):
        target.load_state_dict({"a": torch.ones(2, 3)})
    with pytest.raises(RuntimeError, match=r"\('a',\) has shape torch.Size\(\[3\]\)"):
        target.load_state_dict({"a": torch.ones(3), "n.b": torch.ones(2)})
    assert target["a"].sum() == 0 and target["n", "b"].sum() == 0
    target.load_state_dict({"a": torch.ones(2, 3), "c": torch.ones(2)}, strict=False)
    assert target["a"].sum() == 6 and torch.equal(target["c"], torch.ones(2))


def test_load_state_dict_into_parameters_and_through_a_file(tmp_path):
    params = TensorDict.from_module(torch.nn.Linear(2, 2))
    state = {k: torch.zeros_like(v) for k, v in params.state_dict().items()}
    params.load_state_dict(state, from_flatten=True)  # parameters need no_grad for copy_
    assert params["weight"].abs().sum() == 0
    torch.save(_td().state_dict(), tmp_path / "sd.pt")
    loaded = torch.load(tmp_path / "sd.pt")
    fresh = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.zeros(2, 4, dtype=torch.int64)}},
                       [2])
    _assert_same(fresh.load_state_dict(loaded).refine_names("time"), _td())


def test_to_dict_from_dict_round_trip():
    td = _td()
    out = TensorDict.from_dict(td.to_dict(), batch_size=[2], names=["time"])
    _assert_same(out, td)
    auto = tensordict.from_dict({"a": torch.zeros(2, 3), "n": {"b": torch.zeros(2, 3, 4)}},
                                auto_batch_size=True)
    assert auto.batch_size == (2, 3) and auto["n"].batch_size == (2, 3, 4)
    capped = TensorDict.from_dict({"a": torch.zeros(2, 3)}, batch_dims=1)
    assert capped.batch_size == (2,)
    assert TensorDict.from_dict({"a": torch.zeros(2)}).batch_size == ()
    with pytest.raises(RuntimeError):
        TensorDict.from_dict({"a": torch.zeros(2)}, batch_size=[3])


def test_make_tensordict():
    assert tensordict.make_tensordict(a=torch.zeros(3)).batch_size == ()
    td = tensordict.make_tensordict({"a": torch.zeros(3, 1)}, batch_size=[3])
    assert td.batch_size == (3,)
    with pytest.raises(TypeError):
        tensordict.make_tensordict({"a": 1}, b=2)


def test_namedtuple_round_trip():
    Pair = collections.namedtuple("Pair", ["x", "y"])
    nt = Pair(torch.zeros(3), Pair(torch.ones(3), torch.arange(3)))
    td = TensorDict.from_namedtuple(nt, auto_batch_size=True)
    assert td.batch_size == (3,) and torch.equal(td["y", "y"], torch.arange(3))
    back = td.to_namedtuple()
    assert back._fields == ("x", "y") and torch.equal(back.y.x, nt.y.x)


def test_tuple_dataclass_struct_array_and_from_any():
    td = TensorDict.from_tuple((torch.zeros(2), (torch.ones(2), "s")))
    assert set(td.keys(True)) == {"0", "1", ("1", "0"), ("1", "1")}
    assert td["1", "1"] == "s"

    @dataclasses.dataclass
    class Inner:
        z: torch.Tensor

    @dataclasses.dataclass
    class Outer:
        a: torch.Tensor
        inner: Inner
        k: str

    obj = Outer(torch.zeros(2, 5), Inner(torch.ones(2)), "label")
    td = TensorDict.from_dataclass(obj, batch_dims=1)
    assert td.batch_size == (2,) and torch.equal(td["inner", "z"], obj.inner.z)
    assert td["k"] == "label"
    with pytest.raises(TypeError):
        TensorDict.from_dataclass(Outer)

    arr = np.zeros(4, dtype=[("x", np.float32), ("y", np.int64, (2,))])
    arr["y"] = np.arange(8).reshape(4, 2)
    td = TensorDict.from_struct_array(arr)
    assert td.batch_size == (4,) and torch.equal(td["y"], torch.arange(8).view(4, 2))
    with pytest.raises(TypeError):
        TensorDict.from_struct_array(np.zeros(3))

    assert TensorDict.from_any(obj)["inner", "z"].shape == (2,)
    assert TensorDict.from_any(arr).batch_size == (4,)
    assert TensorDict.from_any((torch.zeros(1),))["0"].shape == (1,)
    assert TensorDict.from_any([torch.zeros(1)]).tolist()[0].shape == (1,)  # NonTensorStack
    assert TensorDict.from_any({"a": torch.zeros(2)}, auto_batch_size=True).batch_size == (2,)
    existing = TensorDict()
    assert TensorDict.from_any(existing) is existing
    assert TensorDict.from_any(3) == 3  # not convertible: returned as it is (upstream)


def test_pytree_containers_round_trip():
    Pair = collections.namedtuple("Pair", ["x", "y"])
    tree = {"a": torch.zeros(2), "b": [torch.ones(2), (torch.ones(1),)],
            "c": Pair(torch.zeros(1), torch.ones(1))}
    td = TensorDict.from_pytree(tree)
    back = td.to_pytree()
    assert isinstance(back["b"], list) and isinstance(back["b"][1], tuple)
    assert isinstance(back["c"], Pair) and torch.equal(back["c"].y, tree["c"].y)
    assert back.keys() == tree.keys()
    leaf = torch.zeros(1)
    assert TensorDict.from_pytree(leaf) is leaf  # a leaf is returned as it is (upstream)


def test_to_pytree_of_a_tensordict_not_from_a_pytree_is_itself():
    td = TensorDict(a=torch.zeros(1), b={"c": torch.ones(1)})
    assert td.to_pytree() is td
    mixed = TensorDict.from_pytree({"x": [torch.zeros(1)]})
    mixed["plain"] = td  # a nested TensorDict without a recorded type stays one
    back = mixed.to_pytree()
    assert back["plain"] is td and isinstance(back["x"], list)


def test_numpy():
    out = _td().numpy()
    assert isinstance(out["a"], np.ndarray) and out["a"].shape == (2, 3)
    assert out["n"]["b"].dtype == np.int64
    assert out["s"] == "text" and out["tags"] == ["x", "y"]
