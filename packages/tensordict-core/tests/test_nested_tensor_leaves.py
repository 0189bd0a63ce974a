"""Nested tensors as leaves under batch dims (issue 18): a strided nested tensor has no
``.shape``, so its batch dims are checked on what can be read (its number of components,
and -1 where they differ), as observed on upstream 0.15.3."""

import pytest
import torch

from tensordict import TensorDict


def _nested(layout=torch.strided):
    return torch.nested.nested_tensor([torch.zeros(2, 3), torch.ones(4, 3)], layout=layout)


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_construct_and_set_with_a_batch_dim(layout):
    nt = _nested(layout)
    td = TensorDict(nt=nt, batch_size=[2])
    assert td["nt"] is nt and td.batch_size == (2,)
    td["again"] = nt
    td.set("set", nt)
    td["sub", "nt"] = nt
    assert td["again"] is td["set"] is td["sub", "nt"] is nt
    assert TensorDict({"a": {"nt": nt}}, batch_size=[2])["a", "nt"] is nt
    assert TensorDict(nt=nt, batch_size=[])["nt"] is nt


@pytest.mark.parametrize("batch_size", [[3], [2, 2], [2, 3]])
def test_batch_mismatch_names_the_key_and_ragged_shape(batch_size):
    nt = _nested()
    match = r"batch dimension mismatch.*torch.Size\(\[2, -1, 3\]\) for key 'nt'"
    with pytest.raises(RuntimeError, match=match):
        TensorDict(nt=nt, batch_size=batch_size)
    td = TensorDict(batch_size=batch_size)
    with pytest.raises(RuntimeError, match=match):
        td["nt"] = nt
    with pytest.raises(RuntimeError, match=match):
        td.set("nt", nt)
    assert "nt" not in td.keys()  # a failed write changes nothing


def test_operations_on_a_nested_leaf():
    nt = _nested()
    td = TensorDict(nt=nt, x=torch.arange(2), batch_size=[2])
    assert torch.equal(td[1]["nt"], torch.ones(4, 3)) and td[0].batch_size == ()
    assert [part["nt"].shape for part in td.unbind(0)] == [(2, 3), (4, 3)]
    for out in (td.clone(), td.to(torch.float64), td.apply(lambda x: x + 1),
                td.update({"nt": nt})):
        assert out.batch_size == (2,) and out["nt"].is_nested
    assert td.apply(lambda x: x + 1)["nt"][1].sum() == 24
    assert "nt: f32[-1,3]" in repr(td)


def test_batch_size_setter():
    td = TensorDict(nt=_nested())
    td.batch_size = [2]
    assert td.batch_size == (2,)
    with pytest.raises(RuntimeError, match=r"'nt' has shape torch.Size\(\[2, -1, 3\]\)"):
        td.batch_size = [3]
    assert td.batch_size == (2,)


def test_stack_of_nested_leaves_names_the_key():
    td = TensorDict(nt=_nested(), batch_size=[2])
    with pytest.raises(RuntimeError, match=r"'nt'.*\(2, -1, 3\)"):
        torch.stack([td, td])


def test_auto_batch_size():
    assert TensorDict(nt=_nested()).auto_batch_size_().batch_size == (2,)


def test_copy_into_nested_leaves():
    """``copy_``/``update_`` of nested leaves (no ``_foreach_copy_`` kernel takes them):
    each copied in place; a value of other component shapes is refused before any
    entry is written, naming the entry and both shapes."""
    td = TensorDict(b=torch.zeros(2), nt=_nested(), batch_size=[2])
    target = td["nt"]
    source = torch.nested.nested_tensor([torch.full((2, 3), 5.0), torch.full((4, 3), 6.0)])
    td.copy_(TensorDict(b=torch.ones(2), nt=source, batch_size=[2]))
    assert td["nt"] is target and td["b"].tolist() == [1.0, 1.0]
    assert [part.unique().item() for part in target.unbind()] == [5.0, 6.0]
    td.update_({"nt": _nested()})
    assert [part.sum().item() for part in target.unbind()] == [0.0, 12.0]
    ragged = torch.nested.nested_tensor([torch.zeros(2, 3), torch.zeros(5, 3)])
    for bad in (ragged, torch.zeros(2, 4, 3)):
        with pytest.raises(RuntimeError, match=r"'nt' of nested shapes \[\[2, 3\], \[4, 3\]\]"):
            td.copy_(TensorDict(b=torch.full((2,), 7.0), nt=bad, batch_size=[2]))
        assert td["b"].tolist() == [1.0, 1.0]  # nothing was written
