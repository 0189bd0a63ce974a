"""``update_`` and ``copy_`` copy each value into its entry as ``Tensor.copy_`` does: a
value that broadcasts to the entry's shape (fewer leading dims, dims of size 1) fills it,
in dense TensorDicts and in lazy stacks along any dim, as upstream tensordict 0.15.3
does. ``set``/``set_``/``td[key] = v`` still require the batch dims, and a value that
does not broadcast is refused with nothing written."""

import pytest
import torch

from tensordict import TensorDict, lazy_stack


def _dense():
    return TensorDict(a=torch.zeros(2, 3),
                      n=TensorDict(c=torch.zeros(2, 3, 4), batch_size=[2, 3]), batch_size=[2, 3])


def _lazy(stack_dim):
    if stack_dim == 0:
        parts = [TensorDict(a=torch.zeros(3), n=TensorDict(c=torch.zeros(3, 4), batch_size=[3]),
                            batch_size=[3]) for _ in range(2)]
    else:
        parts = [TensorDict(a=torch.zeros(2), n=TensorDict(c=torch.zeros(2, 4), batch_size=[2]),
                            batch_size=[2]) for _ in range(3)]
    return lazy_stack(parts, stack_dim)


MAKERS = {"dense": _dense, "lazy0": lambda: _lazy(0), "lazy1": lambda: _lazy(1)}

WRITES = {
    "update_ (3,)": (lambda t: t.update_({"a": torch.arange(3.0)}), "a", [[0, 1, 2]] * 2),
    "update_ (1, 3)": (lambda t: t.update_({"a": torch.arange(3.0).view(1, 3)}), "a",
                       [[0, 1, 2]] * 2),
    "update_ (2, 1)": (lambda t: t.update_({"a": torch.tensor([[1.0], [2.0]])}), "a",
                       [[1, 1, 1], [2, 2, 2]]),
    "update_ ()": (lambda t: t.update_({"a": torch.tensor(5.0)}), "a", [[5, 5, 5]] * 2),
    "update_ nested (4,)": (lambda t: t.update_({"n": {"c": torch.arange(4.0)}}), ("n", "c"),
                            [[[0, 1, 2, 3]] * 3] * 2),
    "update_ td (3,)": (lambda t: t.update_(TensorDict(a=torch.arange(3.0), batch_size=[3])),
                        "a", [[0, 1, 2]] * 2),
    "update_ td ()": (lambda t: t.update_(TensorDict(a=torch.tensor(4.0))), "a",
                      [[4, 4, 4]] * 2),
    "copy_ td (3,)": (lambda t: t.copy_(TensorDict(
        a=torch.arange(3.0), n=TensorDict(c=torch.ones(3, 4), batch_size=[3]), batch_size=[3])),
        "a", [[0, 1, 2]] * 2),
    "copy_ td ()": (lambda t: t.copy_(TensorDict(a=torch.tensor(1.0),
                                                 n=TensorDict(c=torch.ones(4)))),
                    "a", [[1, 1, 1]] * 2),
}


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize("write", WRITES)
def test_update_broadcasts_into_entry(kind, write):
    td = MAKERS[kind]()
    fn, key, expected = WRITES[write]
    assert fn(td) is td
    assert td[key].tolist() == expected
    assert td.batch_size == torch.Size([2, 3])
    assert td["a"].shape == (2, 3) and td["n", "c"].shape == (2, 3, 4)
    if write.startswith("copy_"):
        assert td["n", "c"].sum().item() == 24.0


@pytest.mark.parametrize("kind", MAKERS)
def test_update_broadcast_reaches_lazy_parts(kind):
    td = MAKERS[kind]()
    td.update_({"a": torch.arange(3.0)})
    if kind != "dense":
        stacked = torch.stack([p["a"] for p in td.tensordicts], td.stack_dim)
        assert stacked.tolist() == [[0, 1, 2]] * 2


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize("value", [torch.arange(2.0), torch.ones(4), torch.ones(3, 3)])
def test_update_not_broadcastable_writes_nothing(kind, value):
    td = MAKERS[kind]()
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        td.update_({"n": {"c": torch.ones(2, 3, 4)}, "a": value})
    assert td["a"].abs().sum() == 0 and td["n", "c"].abs().sum() == 0


@pytest.mark.parametrize("kind", MAKERS)
@pytest.mark.parametrize("write", [
    lambda t: t.set_("a", torch.arange(3.0)), lambda t: t.set("a", torch.arange(3.0)),
    lambda t: t.set("a", torch.arange(3.0), inplace=True),
    lambda t: t.__setitem__("a", torch.tensor(2.0))])
def test_set_still_requires_batch_dims(kind, write):
    # upstream: set/set_/setitem do not broadcast a value missing batch dims
    td = MAKERS[kind]()
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        write(td)
    assert td["a"].abs().sum() == 0
