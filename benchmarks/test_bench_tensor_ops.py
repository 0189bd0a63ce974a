"""Tensor-like ops of TensorDict (indexing, stack/cat, shape ops, apply, math, casts)
beside the same work on a plain (nested) dict of tensors.

Each group holds our op and a ``*_baseline`` doing the equivalent with dicts.
"""

import pytest
import torch

from tensordict import TensorDict


def dmap(fn, d):
    """``fn`` on every tensor of a nested dict (the baseline's traversal)."""
    return {k: dmap(fn, v) if isinstance(v, dict) else fn(v) for k, v in d.items()}


def dzip(fn, ds):
    """``fn`` on the list of tensors at each key of several nested dicts."""
    first = ds[0]
    return {k: dzip(fn, [d[k] for d in ds]) if isinstance(v, dict) else fn([d[k] for d in ds])
            for k, v in first.items()}


def dpair(fn, target, source):
    """``fn(target_leaf, source_leaf)`` at each key of two nested dicts (in-place writes)."""
    for key, value in target.items():
        if isinstance(value, dict):
            dpair(fn, value, source[key])
        else:
            fn(value, source[key])


def make_dict(*batch):
    return {
        "obs": torch.randn(*batch, 8), "action": torch.randn(*batch, 2),
        "reward": torch.randn(*batch, 1), "done": torch.zeros(*batch, 1, dtype=torch.bool),
        "next": {"obs": torch.randn(*batch, 8), "reward": torch.randn(*batch, 1),
                 "done": torch.zeros(*batch, 1, dtype=torch.bool)},
    }


D2 = make_dict(64, 8)
TD2 = TensorDict(D2, batch_size=[64, 8])
D1 = make_dict(128)
TD1 = TensorDict(D1, batch_size=[128])
WIDE = {f"group{g}": {f"leaf{i}": torch.randn(16, 4) for i in range(10)} for g in range(5)}
TD_WIDE = TensorDict(WIDE, batch_size=[16])
INDEX = torch.randint(0, 64, (32,))
MASK = torch.rand(64) > 0.5


# -- indexing ------------------------------------------------------------------------------
@pytest.mark.benchmark(group="index int")
def test_index_int(benchmark):
    benchmark(lambda: TD2[0])


@pytest.mark.benchmark(group="index int")
def test_index_int_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x[0], D2))


@pytest.mark.benchmark(group="index slices")
def test_index_slices(benchmark):
    benchmark(lambda: TD2[:, 1:3])


@pytest.mark.benchmark(group="index slices")
def test_index_slices_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x[:, 1:3], D2))


@pytest.mark.benchmark(group="index tensor")
def test_index_tensor(benchmark):
    benchmark(lambda: TD2[INDEX])


@pytest.mark.benchmark(group="index tensor")
def test_index_tensor_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x[INDEX], D2))


@pytest.mark.benchmark(group="index mask")
def test_index_mask(benchmark):
    benchmark(lambda: TD2[MASK])


@pytest.mark.benchmark(group="index mask")
def test_index_mask_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x[MASK], D2))


@pytest.mark.benchmark(group="setitem index")
def test_setitem_index(benchmark):
    td = TD2.clone()
    sub = td[INDEX].clone()

    def write():
        td[INDEX] = sub
    benchmark(write)


@pytest.mark.benchmark(group="setitem index")
def test_setitem_index_baseline(benchmark):
    d = dmap(torch.clone, D2)
    sub = dmap(lambda x: x[INDEX].clone(), D2)
    benchmark(dpair, lambda target, source: target.__setitem__(INDEX, source), d, sub)


@pytest.mark.benchmark(group="setitem row")
def test_setitem_row(benchmark):
    buffer, row = TD2.clone(), TD2[3].clone()

    def write():
        buffer[5] = row
    benchmark(write)


@pytest.mark.benchmark(group="setitem row")
def test_setitem_row_baseline(benchmark):
    buffer, row = dmap(torch.clone, D2), dmap(lambda x: x[3].clone(), D2)
    benchmark(dpair, lambda target, source: target.__setitem__(5, source), buffer, row)


@pytest.mark.benchmark(group="copy_ 50 leaves")
def test_copy_in_place(benchmark):
    td, other = TD_WIDE.clone(), TD_WIDE.clone()
    benchmark(td.copy_, other)


@pytest.mark.benchmark(group="copy_ 50 leaves")
def test_copy_in_place_baseline(benchmark):
    d, other = dmap(torch.clone, WIDE), dmap(torch.clone, WIDE)
    benchmark(dpair, torch.Tensor.copy_, d, other)


# -- stack / cat / cutting -----------------------------------------------------------------
SMALL = [make_dict() for _ in range(100)]
SMALL_TD = [TensorDict(d) for d in SMALL]
LARGE = [{"a": torch.randn(1000, 64), "b": torch.randn(1000, 64), "c": {"d": torch.randn(
    1000, 64)}} for _ in range(10)]
LARGE_TD = [TensorDict(d, batch_size=[1000]) for d in LARGE]


@pytest.mark.benchmark(group="stack 100 small")
def test_stack_small(benchmark):
    benchmark(lambda: torch.stack(SMALL_TD))


@pytest.mark.benchmark(group="stack 100 small")
def test_stack_small_baseline(benchmark):
    benchmark(lambda: dzip(torch.stack, SMALL))


PAIR = [{"a": torch.randn(3), "b": torch.randn(3, 2)} for _ in range(2)]
PAIR_TD = [TensorDict(d, batch_size=[3]) for d in PAIR]
PAIR_STR = [{**d, "s": "text"} for d in PAIR]
PAIR_STR_TD = [TensorDict(d, batch_size=[3]) for d in PAIR_STR]


def _stack_with_strings(dicts):
    """The baseline of a stack holding a string: tensors stacked, strings listed."""
    return {k: [d[k] for d in dicts] if isinstance(v, str) else torch.stack([d[k] for d in dicts])
            for k, v in dicts[0].items()}


@pytest.mark.benchmark(group="stack 2 small")
def test_stack_pair(benchmark):
    benchmark(lambda: torch.stack(PAIR_TD))


@pytest.mark.benchmark(group="stack 2 small")
def test_stack_pair_baseline(benchmark):
    benchmark(lambda: dzip(torch.stack, PAIR))


@pytest.mark.benchmark(group="stack 2 small with a string")
def test_stack_pair_with_string(benchmark):
    benchmark(lambda: torch.stack(PAIR_STR_TD))


@pytest.mark.benchmark(group="stack 2 small with a string")
def test_stack_pair_with_string_baseline(benchmark):
    benchmark(lambda: _stack_with_strings(PAIR_STR))


@pytest.mark.benchmark(group="stack 10 large")
def test_stack_large(benchmark):
    benchmark(lambda: torch.stack(LARGE_TD))


@pytest.mark.benchmark(group="stack 10 large")
def test_stack_large_baseline(benchmark):
    benchmark(lambda: dzip(torch.stack, LARGE))


@pytest.mark.benchmark(group="cat")
def test_cat(benchmark):
    benchmark(lambda: torch.cat(LARGE_TD))


@pytest.mark.benchmark(group="cat")
def test_cat_baseline(benchmark):
    benchmark(lambda: dzip(torch.cat, LARGE))


def _transpose(d, n):
    """A nested dict of n-tuples as n nested dicts."""
    outs = [{} for _ in range(n)]
    for key, value in d.items():
        parts = _transpose(value, n) if isinstance(value, dict) else value
        for out, part in zip(outs, parts):
            out[key] = part
    return outs


@pytest.mark.benchmark(group="unbind")
def test_unbind(benchmark):
    td = TD1[:16]
    benchmark(lambda: td.unbind(0))


@pytest.mark.benchmark(group="unbind")
def test_unbind_baseline(benchmark):
    d = dmap(lambda x: x[:16], D1)
    benchmark(lambda: _transpose(dmap(lambda x: x.unbind(0), d), 16))


@pytest.mark.benchmark(group="split")
def test_split(benchmark):
    benchmark(lambda: TD1.split(16))


@pytest.mark.benchmark(group="split")
def test_split_baseline(benchmark):
    benchmark(lambda: _transpose(dmap(lambda x: x.split(16), D1), 8))


@pytest.mark.benchmark(group="reshape")
def test_reshape(benchmark):
    benchmark(lambda: TD2.reshape(-1))


@pytest.mark.benchmark(group="reshape")
def test_reshape_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x.reshape(512, *x.shape[2:]), D2))


# -- leaf-wise work -----------------------------------------------------------------------
@pytest.mark.benchmark(group="apply 50 leaves")
def test_apply_wide(benchmark):
    benchmark(lambda: TD_WIDE.apply(lambda x: x + 1))


@pytest.mark.benchmark(group="apply 50 leaves")
def test_apply_wide_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x + 1, WIDE))


@pytest.mark.benchmark(group="add scalar 50 leaves")
def test_add_scalar(benchmark):
    benchmark(lambda: TD_WIDE + 1)


@pytest.mark.benchmark(group="add scalar 50 leaves")
def test_add_scalar_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x + 1, WIDE))


@pytest.mark.benchmark(group="iadd 50 leaves")
def test_iadd(benchmark):
    td = TD_WIDE.clone()

    def add():
        nonlocal td
        td += 1
    benchmark(add)


@pytest.mark.benchmark(group="iadd 50 leaves")
def test_iadd_baseline(benchmark):
    d = dmap(torch.clone, WIDE)
    benchmark(lambda: dmap(lambda x: x.add_(1), d))


@pytest.mark.benchmark(group="clone")
def test_clone(benchmark):
    benchmark(TD1.clone)


@pytest.mark.benchmark(group="clone")
def test_clone_baseline(benchmark):
    benchmark(lambda: dmap(torch.clone, D1))


@pytest.mark.benchmark(group="to float64")
def test_to_float64(benchmark):
    benchmark(lambda: TD1.to(torch.float64))


@pytest.mark.benchmark(group="to float64")
def test_to_float64_baseline(benchmark):
    benchmark(lambda: dmap(lambda x: x.to(torch.float64), D1))
