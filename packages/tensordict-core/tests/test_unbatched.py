"""UnbatchedTensor: a tensor entry that the batch operations of its TensorDict leave as
it is."""

import pickle
import warnings

import pytest
import torch

from tensordict import TensorDict, UnbatchedTensor, lazy_stack


def _td():
    return TensorDict(a=UnbatchedTensor(torch.arange(12.0).view(3, 4)), b=torch.zeros(2, 3),
                      batch_size=[2])


def test_bare_unbatched_tensor_is_a_tensor():
    data = torch.arange(12.0).view(3, 4)
    u = UnbatchedTensor(data, batch_size=[5])
    assert isinstance(u, torch.Tensor) and u.data_ptr() == data.data_ptr()
    assert u.shape == (3, 4) and u.batch_size == (5,)
    assert UnbatchedTensor([1, 2]).batch_size == ()
    for out in (u + 1, u[0], u.clone(), u.sum(), torch.zeros(3, 4) + u, u.reshape(12)):
        assert type(out) is UnbatchedTensor and out.batch_size == (5,)
    assert u[0].shape == (4,)  # alone, it indexes like any tensor
    assert all(type(x) is UnbatchedTensor for x in u.unbind(0))
    assert repr(UnbatchedTensor([1, 2])) == "UnbatchedTensor(tensor([1, 2]))"
    back = pickle.loads(pickle.dumps(u))
    assert type(back) is UnbatchedTensor and back.batch_size == (5,)


def test_storing_sets_batch_size_without_touching_the_input():
    u = UnbatchedTensor(torch.zeros(3))
    td = TensorDict(a=u, batch_size=[2])
    assert td["a"].batch_size == (2,) and u.batch_size == ()
    assert td["a"].data_ptr() == u.data_ptr()
    assert repr(td) == "TensorDict(batch_size=[2], fields={a: f32[3]})"


@pytest.mark.parametrize("op", [
    lambda td: td[0], lambda td: td[1:], lambda td: td[torch.tensor([True, False])],
    lambda td: td[None], lambda td: td.reshape(1, 2), lambda td: td.view(-1),
    lambda td: td.unsqueeze(0), lambda td: td.unsqueeze(-1), lambda td: td.expand(4, 2),
    lambda td: td.permute(0), lambda td: td.flatten(0, 0), lambda td: td.unflatten(0, (1, 2)),
    lambda td: td.repeat(2), lambda td: td.squeeze(), lambda td: td.sum(0),
    lambda td: td.mean(0), lambda td: td.sum(), lambda td: td.split(1)[0],
    lambda td: td.unbind(0)[1], lambda td: td.chunk(2)[0],
    lambda td: td.gather(0, torch.tensor([0, 0])), lambda td: torch.stack([td, td]),
    lambda td: torch.cat([td, td]), lambda td: td.masked_select(torch.tensor([True, False])),
])
def test_batch_ops_leave_the_payload(op):
    td = _td()
    out = op(td)
    assert type(out["a"]) is UnbatchedTensor
    assert out["a"].shape == (3, 4) and out["a"].data_ptr() == td["a"].data_ptr()
    assert out["a"].batch_size == out.batch_size


def test_other_ops_apply_to_the_payload():
    td = _td()
    for out in (td.clone(), td.to(torch.float64), td.apply(lambda x: x + 1), td + 1):
        assert type(out["a"]) is UnbatchedTensor and out["a"].shape == (3, 4)
    assert td.clone()["a"].data_ptr() != td["a"].data_ptr()
    assert td.to(torch.float64)["a"].dtype == torch.float64
    assert (td == td)["a"].shape == (3, 4)
    reshaped = td.apply(lambda x: x.reshape(1, 2, *x.shape[1:]), batch_size=[1, 2])
    assert reshaped["a"].shape == (3, 4)  # a batch_size given: a batch op


def test_batch_size_setter_and_auto_batch_size():
    td = _td()
    td.batch_size = [2, 3]
    assert td["a"].shape == (3, 4) and td["a"].batch_size == (2, 3)
    auto = TensorDict(a=UnbatchedTensor(torch.zeros(3, 4)), b=torch.zeros(2, 3))
    assert auto.auto_batch_size_().batch_size == (2, 3)


def test_stack_of_unbatched_entries():
    td = _td()
    other = TensorDict(a=UnbatchedTensor(torch.ones(3, 4)), b=torch.zeros(2, 3),
                       batch_size=[2])
    with pytest.warns(UserWarning, match="different data storage"):
        out = torch.stack([td, other])
    assert torch.equal(out["a"], td["a"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.stack([td, td])
    plain = TensorDict(a=torch.ones(2, 4), b=torch.zeros(2, 3), batch_size=[2])
    with pytest.raises(RuntimeError, match="UnbatchedTensor"):
        torch.stack([td, plain])
    lazy = lazy_stack([td, td])
    assert type(lazy["a"]) is UnbatchedTensor and lazy["a"].batch_size == (2, 2)


def test_indexed_write_writes_the_payload_whole():
    td = _td()
    td[0] = TensorDict(a=UnbatchedTensor(torch.ones(3, 4)), b=torch.ones(3))
    assert torch.equal(td["a"], torch.ones(3, 4)) and td["b"][0].tolist() == [1, 1, 1]
    td = _td()
    td[0] = TensorDict(b=torch.ones(3))  # without the entry: left as it is
    assert torch.equal(td["a"], torch.arange(12.0).view(3, 4))
    before = td["a"].clone()
    with pytest.raises(RuntimeError):
        td[0] = TensorDict(a=UnbatchedTensor(torch.ones(5)), b=torch.ones(3))
    assert torch.equal(td["a"], before)


def test_nested_and_replaced():
    td = _td()
    outer = TensorDict(n=td, batch_size=[2])
    assert outer[0]["n", "a"].shape == (3, 4)
    assert outer.unsqueeze(0)["n", "a"].batch_size == (1, 2)
    td.update({"a": torch.ones(2)})
    assert type(td["a"]) is torch.Tensor
