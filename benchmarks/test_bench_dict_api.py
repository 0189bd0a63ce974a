"""Dict-like operations of TensorDict beside the same work on a plain dict of tensors.

Each group holds our op and a ``*_baseline`` doing the equivalent with dicts.
"""

import pytest
import torch

from tensordict import TensorDict

FLAT = {f"key{i}": torch.zeros(4, 3) for i in range(10)}
NESTED = {"a": {"b": {"c": torch.zeros(4, 3), "d": torch.zeros(4)}, "e": torch.zeros(4)},
          "f": torch.zeros(4)}


def _nested_dict_copy(d):
    return {k: _nested_dict_copy(v) if isinstance(v, dict) else v for k, v in d.items()}


def _walk_leaves(d, prefix=()):
    for k, v in d.items():
        if isinstance(v, dict):
            yield from _walk_leaves(v, prefix + (k,))
        else:
            yield prefix + (k,)


@pytest.fixture(scope="module")
def flat_td():
    return TensorDict(FLAT, batch_size=[4])


@pytest.fixture(scope="module")
def nested_td():
    return TensorDict(NESTED, batch_size=[4])


@pytest.mark.benchmark(group="construct-flat-10")
def test_construct_flat(benchmark):
    benchmark(TensorDict, FLAT, batch_size=[4])


@pytest.mark.benchmark(group="construct-flat-10")
def test_construct_flat_baseline(benchmark):
    benchmark(dict, FLAT)


@pytest.mark.benchmark(group="construct-nested-3")
def test_construct_nested(benchmark):
    benchmark(TensorDict, NESTED, batch_size=[4])


@pytest.mark.benchmark(group="construct-nested-3")
def test_construct_nested_baseline(benchmark):
    benchmark(_nested_dict_copy, NESTED)


@pytest.mark.benchmark(group="getitem-str")
def test_getitem(benchmark, flat_td):
    benchmark(flat_td.__getitem__, "key3")


@pytest.mark.benchmark(group="getitem-str")
def test_getitem_baseline(benchmark):
    benchmark(FLAT.__getitem__, "key3")


@pytest.mark.benchmark(group="getitem-nested")
def test_getitem_nested(benchmark, nested_td):
    benchmark(nested_td.__getitem__, ("a", "b", "c"))


@pytest.mark.benchmark(group="getitem-nested")
def test_getitem_nested_baseline(benchmark):
    benchmark(lambda: NESTED["a"]["b"]["c"])


@pytest.mark.benchmark(group="setitem-str")
def test_setitem(benchmark, flat_td):
    value = torch.ones(4, 3)
    benchmark(flat_td.__setitem__, "key3", value)


@pytest.mark.benchmark(group="setitem-str")
def test_setitem_baseline(benchmark):
    d = dict(FLAT)
    value = torch.ones(4, 3)
    benchmark(d.__setitem__, "key3", value)


@pytest.mark.benchmark(group="keys-nested-leaves")
def test_keys_nested_leaves(benchmark, nested_td):
    benchmark(lambda: list(nested_td.keys(include_nested=True, leaves_only=True)))


@pytest.mark.benchmark(group="keys-nested-leaves")
def test_keys_nested_leaves_baseline(benchmark):
    benchmark(lambda: list(_walk_leaves(NESTED)))


@pytest.mark.benchmark(group="update")
def test_update(benchmark, flat_td):
    other = {f"key{i}": torch.ones(4, 3) for i in range(10)}
    td = flat_td.clone()
    benchmark(td.update, other)


@pytest.mark.benchmark(group="update")
def test_update_baseline(benchmark):
    other = {f"key{i}": torch.ones(4, 3) for i in range(10)}
    d = dict(FLAT)
    benchmark(d.update, other)


@pytest.mark.benchmark(group="select")
def test_select(benchmark, flat_td):
    benchmark(flat_td.select, "key1", "key2", "key3")


@pytest.mark.benchmark(group="select")
def test_select_baseline(benchmark):
    benchmark(lambda: {k: FLAT[k] for k in ("key1", "key2", "key3")})


@pytest.mark.benchmark(group="flatten-keys")
def test_flatten_keys(benchmark, nested_td):
    benchmark(nested_td.flatten_keys)


@pytest.mark.benchmark(group="flatten-keys")
def test_flatten_keys_baseline(benchmark):
    def flatten():
        out = {}
        for path in _walk_leaves(NESTED):
            node = NESTED
            for part in path:
                node = node[part]
            out[".".join(path)] = node
        return out

    benchmark(flatten)
