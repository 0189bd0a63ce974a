"""The fast paths of unbind / split / chunk / iteration / transpose on plain TensorDicts.

Each piece is built from one ``unbind`` or ``split`` call per leaf; these tests check the
pieces against indexing (the slow, obviously right way), for every kind of entry.
"""

from __future__ import annotations

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict
from tensordict._unbatched import UnbatchedTensor


def _mixed() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(24.0).view(4, 3, 2),
            "b": torch.arange(12).view(4, 3),
            "text": "hello",
            "nested": {"c": torch.arange(4.0 * 3 * 5).view(4, 3, 5), "deeper": {
                "d": torch.ones(4, 3, 1, dtype=torch.bool)}},
            "stack": LazyStackedTensorDict.lazy_stack(
                [TensorDict(e=torch.full((3,), float(i)), batch_size=[3]) for i in range(4)]),
        },
        batch_size=[4, 3],
    )


def _same(got: TensorDict, want: TensorDict) -> None:
    assert type(got) is type(want)
    assert got.batch_size == want.batch_size
    assert got.names == want.names
    assert set(got.keys(True, True)) == set(want.keys(True, True))
    for key in want.keys(True, True):
        mine, theirs = got.get(key), want.get(key)
        if isinstance(theirs, torch.Tensor):
            assert type(mine) is type(theirs)
            assert mine.shape == theirs.shape and mine.dtype == theirs.dtype
            assert (mine == theirs).all()
        else:
            assert got[key] == want[key]


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unbind_matches_indexing(dim: int) -> None:
    td = _mixed()
    parts = td.unbind(dim)
    assert type(parts) is tuple and len(parts) == td.batch_size[dim]
    for i, part in enumerate(parts):
        _same(part, td[(slice(None),) * (dim % 2) + (i,)])
        assert part["nested", "deeper"].batch_size == part.batch_size
        assert part["text"] == "hello"


def test_unbind_pieces_are_views_and_keep_names() -> None:
    td = TensorDict(a=torch.zeros(3, 2), n={"b": torch.zeros(3, 2, 4)}, batch_size=[3, 2],
                    names=["x", "y"])
    rows = td.unbind(0)
    assert [r.names for r in rows] == [["y"]] * 3
    assert rows[1]["n"].names == ["y"]
    rows[1]["a"] += 1
    rows[2]["n", "b"] += 2
    assert td["a"][1].eq(1).all() and td["a"][0].eq(0).all()
    assert td["n", "b"][2].eq(2).all()
    cols = td.unbind(1)
    assert [c.names for c in cols] == [["x"]] * 2


def test_unbind_of_empty_and_leafless() -> None:
    parts = TensorDict(batch_size=[3, 2]).unbind(0)
    assert len(parts) == 3
    assert all(p.batch_size == torch.Size([2]) and not list(p.keys()) for p in parts)
    assert TensorDict(a=torch.zeros(0, 2), batch_size=[0]).unbind(0) == ()
    parts = TensorDict(n={}, batch_size=[2]).unbind(0)
    assert [p["n"].batch_size for p in parts] == [torch.Size([])] * 2


def test_unbind_unbatched_and_tensor_subclass() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td["u"] = UnbatchedTensor(torch.arange(5))
    td["p"] = torch.nn.Parameter(torch.arange(3.0))
    for i, part in enumerate(td.unbind(0)):
        assert type(part.get("u")) is UnbatchedTensor
        assert part.get("u").batch_size == torch.Size([])
        assert (part.get("u").data == torch.arange(5)).all()
        assert part["p"].item() == float(i)


@pytest.mark.parametrize("how", ["split2", "split_list", "chunk3", "tensor_split"])
@pytest.mark.parametrize("dim", [0, 1])
def test_split_and_chunk_match_indexing(how: str, dim: int) -> None:
    td = _mixed()
    size = td.batch_size[dim]
    cut = {"split2": lambda: td.split(2, dim), "split_list": lambda: td.split(
        [1, size - 1], dim), "chunk3": lambda: td.chunk(3, dim),
        "tensor_split": lambda: td.tensor_split([1], dim)}[how]
    pieces = cut()
    want = torch.arange(size).split([p.batch_size[dim] for p in pieces])
    assert sum(p.batch_size[dim] for p in pieces) == size
    for piece, rows in zip(pieces, want):
        index = (slice(None),) * dim + (slice(int(rows[0]), int(rows[-1]) + 1),)
        _same(piece, td[index])


def test_split_locked_pieces_are_locked_and_errors() -> None:
    td = TensorDict(a=torch.zeros(5, 2), batch_size=[5]).lock_()
    assert all(p.is_locked for p in td.split(2))
    assert all(p.is_locked for p in td.chunk(2))
    assert not any(p.is_locked for p in td.unbind(0))
    with pytest.raises(RuntimeError, match="add up"):
        td.split([1, 1])
    with pytest.raises(ValueError):
        td.chunk(0)
    with pytest.raises(IndexError):
        td.unbind(1)


def test_memmap_like_subclass_keeps_its_split() -> None:
    class Marked(torch.Tensor):
        calls: list[str] = []

        def unbind(self, dim: int = 0):  # type: ignore[override]
            Marked.calls.append("unbind")
            return super().unbind(dim)

        def split(self, split_size, dim: int = 0):  # type: ignore[override]
            Marked.calls.append("split")
            return super().split(split_size, dim)

    td = TensorDict(m=torch.zeros(4, 2).as_subclass(Marked), batch_size=[4])
    assert len(td.unbind(0)) == 4 and len(td.split(2)) == 2
    assert Marked.calls == ["unbind", "split"]


def test_iteration_is_unbind() -> None:
    td = _mixed()
    it = iter(td)
    assert type(it).__name__ == "tuple_iterator"
    rows = list(it)
    assert len(rows) == 4
    for i, row in enumerate(rows):
        _same(row, td[i])
    with pytest.raises(TypeError, match="0-d"):
        iter(TensorDict(a=torch.zeros(2)))
    lazy = LazyStackedTensorDict.lazy_stack([TensorDict(a=torch.zeros(2)) for _ in range(3)])
    assert all(r is c for r, c in zip(lazy, lazy.tensordicts))


@pytest.mark.parametrize(("d0", "d1"), [(0, 1), (1, 0), (0, 2), (-1, 1), (1, 1)])
def test_transpose_matches_permute(d0: int, d1: int) -> None:
    td = TensorDict(a=torch.randn(2, 3, 4, 5), n={"b": torch.randn(2, 3, 4)}, s="x",
                    batch_size=[2, 3, 4], names=["i", "j", "k"])
    order = list(range(3))
    order[d0], order[d1] = order[d1], order[d0]
    _same(td.transpose(d0, d1), td.permute(order))
    got = td.transpose(d0, d1)
    assert (got["a"] == td["a"].transpose(d0 % 3, d1 % 3)).all()
    assert got["n"].names == got.names


def test_transpose_lock_errors_and_lazy() -> None:
    td = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3]).lock_()
    assert td.transpose(0, 1).is_locked
    assert td.names == [None, None]
    with pytest.raises(ValueError):
        td.transpose(0, 2)
    lazy = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.full((3,), float(i)), batch_size=[3]) for i in range(2)])
    out = lazy.transpose(0, 1)
    assert out.batch_size == torch.Size([3, 2])
    assert (out["a"] == lazy["a"].transpose(0, 1)).all()
