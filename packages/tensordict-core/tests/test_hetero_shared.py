"""Heterogeneous lazy stacks inside shared buffers, as TorchRL's ParallelEnv uses them.

ParallelEnv puts a TensorDict whose entry is a lazy stack of parts with different keys
and shapes in shared memory, hands ``unbind(0)``'s pieces to worker processes, and the
workers write their results with ``update_``: the pieces must be views of the buffer.
``check_env_specs`` then compares a lazy stack of such TensorDicts with a TensorDict
holding a lazy stack along another dim.
"""

import multiprocessing
import pickle
from multiprocessing.reduction import ForkingPickler

import pytest
import torch

from tensordict import LazyStackedTensorDict, TensorDict

BATCH = (2, 1, 2)


def hetero(batch=BATCH, fill=0.0):
    """A lazy stack (along the dim after ``batch``) of parts with different keys/shapes."""
    parts = [TensorDict({"a": torch.full((*batch, 3), fill),
                         f"x{i}": torch.full((*batch, i + 1), fill)}, batch_size=batch)
             for i in range(3)]
    return LazyStackedTensorDict(*parts, stack_dim=len(batch))


def env_buffer(batch=BATCH, fill=0.0):
    """The layout of a ParallelEnv buffer: root and "next" entries, each with a lazy stack."""
    return TensorDict({"lazy": hetero(batch, fill), "state": torch.full((*batch, 4), fill),
                       "next": TensorDict({"lazy": hetero(batch, fill),
                                           "state": torch.full((*batch, 4), fill)}, batch)},
                      batch)


def sums(td):
    """Each leaf's sum, by (key path, part), reading parts of lazy stacks one by one."""
    if isinstance(td, LazyStackedTensorDict):
        return {(i, *key): value for i, part in enumerate(td.tensordicts)
                for key, value in sums(part).items()}
    out = {}
    for key, value in td.items():
        if isinstance(value, torch.Tensor):
            out[(key,)] = float(value.sum())
        else:
            out.update({(key, *sub): v for sub, v in sums(value).items()})
    return out


CUTS = {
    "unbind0": lambda td: td.unbind(0)[1],
    "unbind2": lambda td: td.unbind(2)[1],
    "split": lambda td: td.split(1, 0)[1],
    "split_sizes": lambda td: td.split([1, 1], 2)[0],
    "chunk": lambda td: td.chunk(2, 0)[0],
    "tensor_split": lambda td: td.tensor_split([1], 0)[1],
}


@pytest.mark.parametrize("cut", list(CUTS))
@pytest.mark.parametrize("nested", [True, False], ids=["in_td", "lazy"])
def test_cut_pieces_are_views(cut, nested):
    """Unbinding/splitting a TensorDict holding a lazy stack (or the stack itself) keeps
    the parts' storage: a write into a piece reaches the whole."""
    whole = TensorDict(lazy=hetero(), batch_size=BATCH) if nested else hetero()
    piece = CUTS[cut](whole)
    stack = piece["lazy"] if nested else piece
    assert isinstance(stack, LazyStackedTensorDict)
    stack.update_(hetero(stack.batch_size[:-1], 1.0))
    written = sum(sums(piece).values())
    assert written > 0
    assert sum(sums(whole).values()) == written


def test_unbind_shared_pieces_stay_shared():
    buffer = env_buffer()
    buffer.share_memory_()
    for piece in buffer.unbind(0):
        assert piece.is_shared()
        assert all(part["a"].is_shared() for part in piece["lazy"].tensordicts)


def _worker_step(shared, fill):
    """What a ParallelEnv worker does with its piece on "init", "reset" and "step"."""
    next_shared = shared.get("next")
    root_shared = shared.exclude("next")
    unlocked = shared.clone(False).unlock_()
    result = env_buffer(BATCH[1:], fill)
    unlocked.update_(result, keys_to_update=[("lazy", "a"), ("lazy", "x0"), ("lazy", "x1"),
                                             ("lazy", "x2"), "state"])
    next_shared.update_(result["next"])
    root_shared.update_(result.exclude("next"))


def _in_worker(shared, fill, done):
    _worker_step(shared, fill)
    done.put(True)


@pytest.mark.parametrize("transport", ["pickle", "process"])
def test_parallel_env_writes_reach_parent(transport):
    """Workers get the pieces of ``unbind(0)`` of a shared buffer; their ``update_`` calls
    reach the parent's buffer, lazy stack entries included."""
    buffer = env_buffer()
    buffer.share_memory_()
    pieces = buffer.unbind(0)
    for piece in pieces:
        piece.lock_()
    if transport == "pickle":
        for i, piece in enumerate(pieces):
            _worker_step(pickle.loads(bytes(ForkingPickler.dumps(piece))), float(i + 1))
    else:
        ctx = multiprocessing.get_context("fork")
        done = ctx.Queue()
        procs = [ctx.Process(target=_in_worker, args=(piece, float(i + 1), done))
                 for i, piece in enumerate(pieces)]
        for proc in procs:
            proc.start()
        assert [done.get(timeout=60) for _ in procs] == [True, True]
        for proc in procs:
            proc.join(timeout=60)
    expected = env_buffer()
    for i in range(2):
        expected[i] = env_buffer(BATCH[1:], float(i + 1))
    assert sums(buffer) == sums(expected)


def test_lazy_compares_with_td_along_other_dim():
    """``check_env_specs`` with ``return_contiguous=False``: a lazy stack (dim 1) of
    TensorDicts compared with a TensorDict holding a lazy stack along dim 2."""
    batch = (10,)
    real = TensorDict(lazy=hetero((10, 3)), batch_size=(10, 3))
    fake = LazyStackedTensorDict.lazy_stack(
        [TensorDict(lazy=hetero(batch), batch_size=batch) for _ in range(3)], -1)
    assert not (torch.zeros_like(fake) != torch.zeros_like(real)).any()
    out = fake == real
    assert isinstance(out, LazyStackedTensorDict) and out.stack_dim == 1
    assert out.all()
    real["lazy"].tensordicts[2]["x2"][4, 1] = 1.0
    assert (fake != real).any()


def test_lazy_compares_with_dense_and_other_stack_dim():
    parts = [TensorDict(a=torch.zeros(4, 3), b=torch.zeros(4, i + 1), batch_size=(4,))
             for i in range(3)]
    stack = LazyStackedTensorDict(*parts, stack_dim=1)
    other = LazyStackedTensorDict(*[t.clone() for t in stack.unbind(0)], stack_dim=0)
    assert (stack == other).all() and (other == stack).all()
    dense = TensorDict(a=torch.zeros(4, 3, 3), batch_size=(4, 3))
    dense["a"][1, 2] = 1.0
    out = stack.select("a") != dense
    assert out.stack_dim == 1
    assert out["a"].sum() == 3 and bool(out["a"][1, 2].all())
    with pytest.raises(KeyError):
        _ = stack == dense


def test_exclude_inplace_deletes_inside_nested_lazy_stack():
    """In-place exclude deletes where the entry lives (nested lazy stack parts keep their
    identity), is a no-op on a locked TensorDict when nothing matches, and checks every
    owner's lock before the first deletion."""
    from tensordict.errors import LockedTensorDictError

    a = TensorDict({"x": torch.zeros(3), "_p": torch.ones(3)}, [3])
    b = TensorDict({"x": torch.zeros(3), "_p": torch.ones(3), "y": torch.ones(3)}, [3])
    lazy = LazyStackedTensorDict.lazy_stack([a, b], 0)
    root = TensorDict({"lazy": lazy, "z": torch.zeros(2, 3)}, [2, 3]).lock_()
    assert root.exclude(inplace=True) is root
    assert root.exclude("missing", ("lazy", "missing"), ("z", "q"), inplace=True) is root
    with pytest.raises(LockedTensorDictError):
        root.exclude(("lazy", "y"), inplace=True)
    assert list(b.keys()) == ["x", "_p", "y"]
    root.unlock_()
    assert root.exclude(("lazy", "_p"), ("lazy", "y"), inplace=True) is root
    assert root.get("lazy") is lazy
    assert list(a.keys()) == ["x"] and list(b.keys()) == ["x"]

    inner = TensorDict({"m": torch.zeros(3)}, [3]).lock_()
    outer = TensorDict({"n": inner, "a": torch.zeros(3)}, [3])
    with pytest.raises(LockedTensorDictError):
        outer.exclude("a", ("n", "m"), inplace=True)
    assert list(outer.keys()) == ["n", "a"] and list(inner.keys()) == ["m"]


def test_update_nested_lazy_stack_from_shorter_batch_collection():
    """A lazy stack updated with a TensorDict of a shorter (prefix) batch size takes its
    entries one by one, each fitted to the stack's batch size."""
    parts = [TensorDict({"a": torch.zeros(2)}, [2]),
             TensorDict({"a": torch.zeros(2), "b": torch.zeros(2, 4)}, [2])]
    lazy = LazyStackedTensorDict.lazy_stack(parts, 0)
    root = TensorDict({"lazy": lazy}, [])
    root.update(TensorDict({"lazy": TensorDict({"c": torch.ones(2, 2)}, [])}, []))
    root.update(TensorDict({"lazy": TensorDict({"a": torch.ones(2, 2)}, [2])}, []))
    assert root.get("lazy") is lazy
    assert sorted(lazy.keys()) == ["a", "c"]
    assert (lazy.get("a") == 1).all() and (parts[1].get("c") == 1).all()
    with pytest.raises(RuntimeError, match="batch"):
        root.update(TensorDict({"lazy": TensorDict({"c": torch.ones(3)}, [])}, []))
