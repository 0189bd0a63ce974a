"""The remembered layouts of the fast copies (``copy_``, ``update_``, ``td[i] = value``):
a write whose leaves are laid out as the last ones that passed the checks skips them, and
any other write is checked in full, raising with nothing written."""

import pytest
import torch

from tensordict import TensorDict, _layout_memo
from tensordict._layout_memo import LayoutMemo


def pair() -> TensorDict:
    return TensorDict(a=torch.zeros(2, 3), n={"b": torch.zeros(2)}, batch_size=[2])


def counting_check(calls: list, result: bool = True):
    def check() -> bool:
        calls.append(1)
        return result
    return check


def test_this_torch_has_the_layout_checker():
    assert _layout_memo._Guards is not None


def test_a_layout_is_remembered_on_its_second_pass():
    memo, calls = LayoutMemo(), []
    target = torch.zeros(2)
    for _ in range(5):  # new sources each time, laid out the same
        assert memo.fits("copy", [target], [torch.ones(2)], counting_check(calls))
    assert len(calls) == 2
    # another layout is checked
    assert memo.fits("copy", [target], [torch.ones(2, dtype=torch.float64)],
                     counting_check(calls, False)) is False
    assert len(calls) == 3
    # and so is the same layout written into other memory (another place)
    assert memo.fits("copy", [torch.zeros(2)], [torch.ones(2)], counting_check(calls))
    assert len(calls) == 4


def test_a_failed_check_is_not_remembered():
    memo, calls = LayoutMemo(), []
    target = torch.zeros(2)
    for _ in range(3):
        assert not memo.fits("copy", [target], [target], counting_check(calls, False))
    assert len(calls) == 3


@pytest.mark.parametrize("change", ["grad", "inference", "kind", "dtype", "strides",
                                    "requires_grad", "count"])
def test_each_part_of_the_layout_and_modes_is_compared(change):
    memo, calls = LayoutMemo(), []
    buffer = torch.zeros(4, 3)
    targets, sources = [buffer, torch.zeros(3)], [torch.ones(4, 3), torch.ones(3)]
    for _ in range(2):
        memo.fits("copy", targets, sources, counting_check(calls))
    kind = "copy"
    if change == "dtype":
        sources = [torch.zeros(4, 3, dtype=torch.float64), torch.zeros(3)]
    elif change == "strides":
        sources = [torch.zeros(3, 4).t(), torch.zeros(3)]
    elif change == "requires_grad":
        sources = [torch.zeros(4, 3, requires_grad=True), torch.zeros(3)]
    elif change == "count":
        targets, sources = targets[:1], sources[:1]
    elif change == "kind":
        kind = "other"
    if change == "grad":
        with torch.no_grad():
            memo.fits(kind, targets, sources, counting_check(calls))
    elif change == "inference":
        with torch.inference_mode():
            memo.fits(kind, targets, sources, counting_check(calls))
    else:
        memo.fits(kind, targets, sources, counting_check(calls))
    assert len(calls) == 3


def test_an_inference_tensor_is_not_taken_for_a_normal_one():
    memo, calls = LayoutMemo(), []
    target = torch.zeros(2)
    for _ in range(2):
        memo.fits("copy", [target], [torch.ones(2)], counting_check(calls))
    with torch.inference_mode():
        frozen = torch.zeros(2)
    memo.fits("copy", [target], [frozen], counting_check(calls))
    assert len(calls) == 3


def test_tensors_without_storage_are_always_checked():
    memo, calls = LayoutMemo(), []
    sparse = torch.zeros(2).to_sparse()
    for _ in range(3):
        memo.fits("copy", [sparse], [sparse], counting_check(calls))
    assert len(calls) == 3


def test_the_memo_is_bounded():
    memo = LayoutMemo(capacity=4)
    for kind in range(10):
        memo.fits(kind, [torch.zeros(1)], [torch.zeros(1)], lambda: True)
    assert len(memo._layouts) <= 4


def _warm_copies(td: TensorDict) -> None:
    for _ in range(3):  # the layout is remembered from the second on
        td.copy_(pair() + 1)


def _same(td: TensorDict, other: TensorDict) -> bool:
    return all(torch.equal(td.get(k), other.get(k)) for k in other.keys(True, True))


# each spoils the last leaf of the walk, ("n", "b"): a write that skipped the checks
# would have written "a" before torch raised
def _bad_source_shape(td):
    bad = pair()
    bad["n"].set("b", torch.ones(2, 5))
    return td, bad


def _expanded_target(td):
    td["n"].set("b", torch.zeros(1).expand(2))
    return td, pair()


def _inference_target(td):
    with torch.inference_mode():
        td["n"].set("b", torch.zeros(2))
    return td, pair()


def _resized_target(td):
    td["n", "b"].resize_(2, 1)  # in place: the same tensor object, another shape
    return td, pair()


def _leaf_that_requires_grad(td):
    td["n"].set("b", torch.zeros(2, requires_grad=True))
    return td, pair()


@pytest.mark.parametrize("spoil", [_bad_source_shape, _expanded_target, _inference_target,
                                   _resized_target, _leaf_that_requires_grad])
@pytest.mark.parametrize("write", ["copy_", "update_", "td[()] = value"])
def test_after_a_remembered_layout_a_bad_write_raises_unchanged(spoil, write):
    td = pair()
    _warm_copies(td)
    td, source = spoil(td)
    before = {k: td.get(k).detach().clone() for k in td.keys(True, True)}
    with pytest.raises(RuntimeError):
        if write == "copy_":
            td.copy_(source)
        elif write == "update_":
            td.update_(source)
        else:
            td[()] = source
    assert all(torch.equal(td.get(k), v) for k, v in before.items())


def test_remembered_under_no_grad_is_checked_again_with_grad():
    td = TensorDict(a=torch.zeros(2, requires_grad=True), batch_size=[2])
    with torch.no_grad():
        for _ in range(3):
            td.copy_(TensorDict(a=torch.ones(2), batch_size=[2]))
    assert td["a"].tolist() == [1.0, 1.0]
    with pytest.raises(RuntimeError, match="requires grad"):
        td.copy_(TensorDict(a=torch.full((2,), 2.0), batch_size=[2]))
    assert td["a"].tolist() == [1.0, 1.0]


def test_row_writes_after_a_remembered_layout():
    buffer = TensorDict(a=torch.zeros(4, 3), n={"b": torch.zeros(4)}, batch_size=[4])
    row = TensorDict(a=torch.ones(3), n={"b": torch.ones(())}, batch_size=[])
    for i in range(3):
        buffer[i] = row * (i + 1)
    assert buffer["a"][:, 0].tolist() == [1.0, 2.0, 3.0, 0.0]
    assert buffer["n", "b"].tolist() == [1.0, 2.0, 3.0, 0.0]
    before = buffer.clone()
    bad = TensorDict(a=torch.ones(4), n={"b": torch.ones(())}, batch_size=[])
    with pytest.raises(RuntimeError, match="'a'"):
        buffer[3] = bad
    assert _same(buffer, before)
    with pytest.raises(IndexError):
        buffer[4] = row
    assert _same(buffer, before)
    buffer[-1] = row * 9  # any row in range, once the layout is known
    assert buffer["a"][3].tolist() == [9.0] * 3


def test_tensor_index_writes_after_a_remembered_layout():
    buffer = TensorDict(a=torch.zeros(4, 3), n={"b": torch.zeros(4)}, batch_size=[4])
    rows = torch.tensor([0, 2])
    value = TensorDict(a=torch.ones(2, 3), n={"b": torch.ones(2)}, batch_size=[2])
    for _ in range(3):
        buffer[rows] = value
    assert buffer["n", "b"].tolist() == [1.0, 0.0, 1.0, 0.0]
    before = buffer.clone()
    for bad in (TensorDict(a=torch.ones(2, 3), n={"b": torch.ones(2, 2)}, batch_size=[2]),
                TensorDict(a=torch.ones(2, 3), n={"b": torch.ones(2, dtype=torch.float64)},
                           batch_size=[2])):
        with pytest.raises(RuntimeError, match="b"):
            buffer[rows] = bad
        assert _same(buffer, before)
    with torch.inference_mode():
        frozen = TensorDict(a=torch.zeros(4, 3), n={"b": torch.zeros(4)}, batch_size=[4])
    with pytest.raises(RuntimeError, match="inference tensor"):
        frozen[rows] = value
    assert frozen["a"].eq(0).all()
