"""copy_at_(..., fast=True): which sources, destinations and indices take the fast path
(as upstream 0.15.3): TensorDicts at every depth and basic indices; non-tensor data of the
source is skipped; anything else raises RuntimeError before any write."""

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict

FAST = "requires the optimized tensor-only copy path"


def _td(with_string: bool = True) -> TensorDict:
    td = TensorDict({"a": torch.zeros(2, 3), "n": {"c": torch.zeros(2, 3)}}, [2, 3])
    if with_string:
        td.set_non_tensor("s", "orig")
    return td


def _row(value: float = 1.0, string: str | None = "new") -> TensorDict:
    row = TensorDict({"a": torch.full((3,), value), "n": {"c": torch.full((3,), value)}}, [3])
    if string is not None:
        row.set_non_tensor("s", string)
    return row


@pytest.mark.parametrize("dest_string", [True, False])
@pytest.mark.parametrize("source_string", ["new", None])
def test_non_tensor_data_is_skipped(dest_string, source_string):
    td = _td(dest_string)
    td.copy_at_(_row(1.0, source_string), 1)
    assert td["a"].tolist() == [[0.0] * 3, [1.0] * 3]
    assert td["n", "c"].tolist() == [[0.0] * 3, [1.0] * 3]
    assert ("s" in td.keys()) is dest_string
    if dest_string:
        assert td.get_non_tensor("s") == "orig"


@pytest.mark.parametrize(
    "view", [lambda t: t[0], lambda t: t[1:], lambda t: t.select("a", "n", "s")])
def test_views_of_a_dense_td_with_strings_write_through(view):
    td = _td()
    target = view(td)
    target.copy_at_(target[0].apply(lambda x: x + 5), 0)
    assert (td["a"] == 5).any() and (td["n", "c"] == 5).any()


def test_a_nested_string_of_the_destination_is_no_obstacle():
    td = _td(False)
    td["n"].set_non_tensor("t", "x")
    td.copy_at_(_row(2.0), 0)
    assert td["n", "c"][0].tolist() == [2.0] * 3 and td["n"].get_non_tensor("t") == "x"


def _lazy() -> LazyStackedTensorDict:
    return LazyStackedTensorDict(*(_td(False)[i].clone() for i in range(2)), stack_dim=0)


def _nested_lazy() -> TensorDict:
    td = _td(False)
    td["n"] = LazyStackedTensorDict(*(td["n"][i].clone() for i in range(2)), stack_dim=0)
    return td


@pytest.mark.parametrize("dest, source, idx", [
    (_lazy, lambda: _row(1.0, None), 0),                                  # lazy destination
    (_nested_lazy, lambda: _row(1.0, None), 0),                           # nested lazy one
    (lambda: _td(False)._get_sub_tensordict(0), lambda: _row(1.0, None)[:3], 0),  # a view
    (lambda: _td(False), lambda: _td(False)._get_sub_tensordict(0), 0),   # view source
    (lambda: _td(False), lambda: LazyStackedTensorDict(*_row(1.0, None).unbind(0), stack_dim=0), 0),
    (lambda: _td(False), lambda: _td(False).apply(lambda x: x + 1), torch.tensor([1, 0])),
    (lambda: _td(False), lambda: _td(False)[:1], torch.tensor([True, False])),
    (lambda: _td(False), lambda: _td(False)[:1], [0]),
    (lambda: _td(), lambda: TensorDict({"s": torch.ones(3)}, [3]), 0),    # tensor at a string
])
def test_incompatible_operands_raise_before_any_write(dest, source, idx):
    td = dest()
    before = td.to_dict() if hasattr(td, "to_dict") else None
    with pytest.raises(RuntimeError, match=FAST):
        td.copy_at_(source(), idx)
    if before is not None:
        assert td["a"].eq(0).all() and td["n", "c"].eq(0).all()


def test_a_string_source_at_a_tensor_key_raises():
    source = TensorDict({}, [3])
    source.set_non_tensor("a", "x")
    td = _td(False)
    with pytest.raises(RuntimeError, match=FAST):
        td.copy_at_(source, 0)
    assert td["a"].eq(0).all()


@pytest.mark.parametrize("idx", [None, Ellipsis, torch.tensor(1), slice(1, 2), (1, slice(None))])
def test_basic_indices_take_the_fast_path(idx):
    td = _td(False)
    td.copy_at_(td[idx].apply(lambda x: x + 7), idx)
    assert (td["a"] == 7).any()


def test_fast_false_is_update_at():
    ls = _lazy()
    ls.copy_at_(_row(3.0, None), 1, fast=False)
    assert ls["a"][1].tolist() == [3.0] * 3


@pytest.mark.parametrize("reach", ["nested", "int_nested", "slice_nested"])
def test_a_sub_tensordict_of_an_index_view_takes_the_fast_path(reach):
    """``td._get_sub_tensordict(i)["n"]`` stands for upstream's TensorDict of views of
    ``td["n"][i]``: the fast path writes through it (the index view itself refuses)."""
    parent = TensorDict({"n": {"c": torch.zeros(2, 2, 3)}}, [2, 2, 3])
    sub = parent._get_sub_tensordict(0)
    target = {"nested": lambda: sub["n"], "int_nested": lambda: sub[1]["n"],
              "slice_nested": lambda: sub[1:]["n"]}[reach]()
    assert target.copy_at_(target[0].apply(lambda x: x + 5), 0) is target
    written = {"nested": (0, 0), "int_nested": (0, 1, 0), "slice_nested": (0, 1)}[reach]
    assert parent["n", "c"][written].eq(5).all()
    assert parent["n", "c"].eq(5).sum() == (1 if reach == "int_nested" else 3)
    with pytest.raises(RuntimeError, match=FAST):
        sub.copy_at_(sub[0].apply(lambda x: x + 5), 0)


def test_a_sub_tensordict_of_a_mask_view_refuses_the_fast_path():
    parent = TensorDict({"n": {"c": torch.zeros(2, 3)}}, [2, 3])
    target = parent._get_sub_tensordict(torch.tensor([True, False]))["n"]
    with pytest.raises(RuntimeError, match=FAST):
        target.copy_at_(target[0].apply(lambda x: x + 5), 0)
    target.copy_at_(target[0].apply(lambda x: x + 5), 0, fast=False)
    assert parent["n", "c"][0].eq(5).all() and parent["n", "c"][1].eq(0).all()
