"""``update(source, update_batch_size=True)``: a source of another batch size resizes the
destination and its nested TensorDicts, keeping their identity, or raises before any
change."""

import pytest
import torch

from tensordict import TensorDict


def _dest() -> TensorDict:
    return TensorDict(a=torch.zeros(5, 2), n=TensorDict(b=torch.zeros(5, 3), batch_size=[5]),
                      batch_size=[5])


def _source(rows: int) -> TensorDict:
    return TensorDict(a=torch.ones(rows, 2), n=TensorDict(b=torch.ones(rows, 3), batch_size=[rows]),
                      extra=torch.ones(rows), batch_size=[rows])


def test_the_destination_and_its_nested_tensordicts_take_the_new_batch_size():
    td = _dest()
    nested = td["n"]
    assert td.update(_source(2), update_batch_size=True) is td
    assert td.batch_size == nested.batch_size == torch.Size([2]) and td["n"] is nested
    assert torch.equal(td["n", "b"], torch.ones(2, 3)) and torch.equal(td["extra"], torch.ones(2))


def test_a_nested_tensordict_of_another_batch_size_is_resized_alone():
    # the shape of TorchRL's reset of a history tensorclass nested in a batch-less root
    td = TensorDict(root=torch.zeros(3), history=TensorDict(role=torch.zeros(23, 4),
                                                            batch_size=[23]))
    history = td["history"]
    td.update(TensorDict(history=TensorDict(role=torch.ones(2, 4), batch_size=[2])),
              update_batch_size=True)
    assert td["history"] is history and history.batch_size == torch.Size([2])
    assert torch.equal(history["role"], torch.ones(2, 4)) and td.batch_size == torch.Size([])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):  # not asked to resize
        td.update(TensorDict(history=TensorDict(role=torch.ones(7, 4), batch_size=[7])))


def test_a_source_of_a_compatible_batch_size_updates_as_usual():
    td = _dest()
    td.update(TensorDict(a=torch.ones(5, 2), batch_size=[]), update_batch_size=True)
    assert td.batch_size == torch.Size([5]) and torch.equal(td["a"], torch.ones(5, 2))
    scalar = TensorDict(a=torch.zeros(5, 2))
    with pytest.warns(FutureWarning, match="keeps the destination's batch size"):
        scalar.update(TensorDict(a=torch.ones(5, 2), batch_size=[5]), update_batch_size=True)
    assert scalar.batch_size == torch.Size([])


def _resize_with_a_locked_nested_node(td: TensorDict) -> None:
    td["n"].lock_()
    td.update(_source(2), update_batch_size=True)


@pytest.mark.parametrize("call, match", [
    (lambda td: td.update(TensorDict(a=torch.ones(2, 2), batch_size=[2]),
                          update_batch_size=True), r"lacks, \[\('n', 'b'\)\]"),
    (lambda td: td.update(_source(2), update_batch_size=True, keys_to_update=["a"]),
     "keys_to_update"),
    (lambda td: td.update(_source(2), update_batch_size=True, inplace=True), "inplace"),
    (lambda td: _resize_with_a_locked_nested_node(td), "locked"),
])
def test_a_resize_that_cannot_happen_changes_nothing(call, match):
    td = _dest()
    before = td.clone()
    with pytest.raises(RuntimeError, match=match):
        call(td)
    assert td.batch_size == torch.Size([5]) and td["n"].batch_size == torch.Size([5])
    assert (td == before).all()
