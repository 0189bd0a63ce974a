"""Bad input raises what upstream tensordict 0.15.3 raises, and says it as upstream does.

One table of common bad inputs, each observed in upstream 0.15.3: the exception must be an
instance of upstream's class (ours may be a subclass of it and of the class we raised
before), and its message must hold upstream's key phrase (ours may say more). Every case
runs on a fresh ``td`` (batch ``[3, 4]``, a nested TensorDict) and ``f`` (batch ``[2]``)
and checks that neither changed.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorData, TensorDict, pad


def _fresh() -> dict[str, Any]:
    nested = TensorDict(c=torch.zeros(3, 4), batch_size=[3, 4])
    return {
        "td": TensorDict(a=torch.arange(12.).view(3, 4), b=torch.ones(3, 4, 2), n=nested,
                         batch_size=[3, 4]),
        "f": TensorDict(a=torch.arange(6.).view(2, 3), batch_size=[2]),
    }


def _snapshot(td: Any) -> Any:
    return (td.batch_size, td.names, td.is_locked,
            sorted((str(k), v.shape, v.clone()) if isinstance(v, torch.Tensor) else (str(k),)
                   for k, v in td.items(True, True)))


def _same(one: Any, other: Any, lock: bool = True) -> bool:
    """Whether two snapshots agree (on the lock state too, if ``lock``)."""
    return one[:2] == other[:2] and (not lock or one[2] == other[2]) and \
        len(one[3]) == len(other[3]) and all(
        a[:2] == b[:2] and (len(a) < 3 or torch.equal(a[2], b[2]))
        for a, b in zip(one[3], other[3]))


_LAZY = "LazyStackedTensorDict.lazy_stack"
# (id, code run on td and f, upstream's exception class, upstream's key phrase or None)
CASES: list[tuple[str, str, type[BaseException], str | None]] = [
    # keys and locks
    ("getitem-missing", "td['zz']", KeyError, "key \"zz\" not found in TensorDict with keys"),
    ("getitem-missing-nested", "td['n', 'zz']", KeyError,
     "key \"zz\" not found in TensorDict with keys"),
    ("select-missing-nested", "td.select(('n', 'zz'))", KeyError,
     "key \"zz\" not found in TensorDict with keys"),
    ("pop-missing", "td.pop('zz')", KeyError, "key \"zz\" not found in TensorDict with keys"),
    ("fill-missing", "td.fill_('zz', 1)", KeyError, "key \"zz\" not found in TensorDict"),
    ("rename-exists", "td.rename_key_('a', 'b', safe=True)", KeyError,
     "already present in TensorDict"),
    ("index-through-leaf", "td['a', 'x']", ValueError,
     "'a' is a Tensor, not a tensordict, so it has no entry 'x'"),
    ("get-through-leaf", "td.get(('a', 'x'))", ValueError,
     "'a' is a Tensor, not a tensordict, so it has no entry 'x'"),
    ("select-bad-key", "td.select(1)", RuntimeError, None),
    ("exclude-bad-key", "td.exclude(1.0)", RuntimeError, None),
    ("set-bad-key", "td.set(1, torch.zeros(3, 4))", KeyError, "Only NestedKeys are supported"),
    ("set-locked", "td.lock_(); td['zz'] = torch.zeros(3, 4)", RuntimeError,
     "Cannot modify locked TensorDict"),
    ("set-locked-nested", "td.lock_(); td['n', 'zz'] = torch.zeros(3, 4)", RuntimeError,
     "Cannot modify locked TensorDict"),
    ("del-locked", "td.lock_(); del td['a']", RuntimeError, "Cannot modify locked TensorDict"),
    ("rename-locked", "td.lock_(); td.rename_key_('a', 'q')", RuntimeError,
     "Cannot modify locked TensorDict"),
    ("update-locked", "td.lock_(); td.update({'zz': torch.zeros(3, 4)})", RuntimeError,
     "Cannot modify locked TensorDict"),
    ("flatten-keys-clash",
     "TensorDict({'a.b': torch.zeros(3), 'a': {'b': torch.ones(3)}}, [3]).flatten_keys()",
     KeyError, "Flattening keys in tensordict causes keys"),
    ("unflatten-keys-clash",
     "TensorDict({'a.b': torch.zeros(3), 'a': torch.zeros(3)}, [3]).unflatten_keys()",
     KeyError, "Unflattening key(s) in tensordict will override an existing"),
    ("unflatten-keys-clash-nested",
     "TensorDict({'a.b': torch.zeros(3), 'a': {'b': torch.ones(3)}}, [3]).unflatten_keys()",
     KeyError, "Unflattening key(s) in tensordict will override an existing"),
    ("unflatten-keys-through-leaf",
     "TensorDict({'a': torch.zeros(3), 'a.b': torch.zeros(3)}, [3]).unflatten_keys()",
     KeyError, "Unflattening key(s) in tensordict will override an existing"),
    ("update-conflict-inplace", "td.update({'n': torch.zeros(3, 4)}, inplace=True)",
     ValueError, "Failed to update 'n'"),
    ("from-dict-not-a-mapping", "TensorDict.from_dict(1)", TypeError, None),
    ("construct-not-a-mapping", "TensorDict(1)", ValueError,
     "A TensorDict source is expected to be a TensorDictBase sub-type or a Mapping"),
    # shapes of values
    ("set-shape-mismatch", "td['z'] = torch.zeros(2, 4)", RuntimeError,
     "batch dimension mismatch"),
    ("set-scalar-batched", "td['z'] = torch.tensor(1.0)", RuntimeError,
     "batch dimension mismatch"),
    ("apply-scalar-result", "td.apply(lambda x: 1)", RuntimeError, "batch dimension mismatch"),
    ("batch-size-setter", "td.batch_size = [5]", RuntimeError,
     "which is incompatible with the batch-size"),
    ("setitem-index-bad-batch", "td[0] = TensorDict(a=torch.zeros(5), batch_size=[5])",
     RuntimeError, "which differs from the source batch size"),
    ("names-bad-length", "td.names = ['x']", ValueError,
     "the length of the dimension names must equate the tensordict batch_dims attribute"),
    ("names-twice", "td.names = ['x', 'x']", ValueError, "Some dimension names are non-unique"),
    ("add-keys-mismatch", "td + TensorDict(zz=torch.zeros(3, 4), batch_size=[3, 4])", KeyError,
     "keys in tensordicts mismatch"),
    ("clamp-no-bounds", "td.clamp()", TypeError, None),
    ("to-two-dtypes", "td.to(torch.float64, torch.float32)", TypeError, None),
    # batch indices
    ("index-out-of-bounds", "td[5]", IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("index-negative-out-of-bounds", "td[-5]", IndexError,
     "index -5 is out of bounds for dimension 0 with size 3"),
    ("index-tensor-out-of-bounds", "td[torch.tensor([5])]", IndexError,
     "index 5 is out of bounds for dimension 0 with size 3"),
    ("index-too-many", "td[0, 0, 0]", IndexError, "too many indices for"),
    ("index-float", "td[1.5]", IndexError, "are valid indices (got float)"),
    ("index-0dim", "TensorDict(a=torch.zeros(()))[0]", RuntimeError,
     "indexing a tensordict with td.batch_dims==0 is not permitted"),
    ("index-mask-shape", "td[torch.ones(4, dtype=torch.bool)]", IndexError,
     "shape of the mask [4]"),
    # shape ops
    ("view-bad", "td.view(5)", RuntimeError, "invalid shape [5] for a batch of 12 elements"),
    ("reshape-bad", "td.reshape(5)", RuntimeError, "invalid shape [5] for a batch of 12 elements"),
    ("expand-bad", "td.expand(3, 5)", RuntimeError, "Incompatible expanded shape"),
    ("split-sizes", "td.split([1, 1], 0)", RuntimeError,
     "split_with_sizes expects split_sizes to sum exactly to 3"),
    ("split-float", "td.split(1.5)", TypeError,
     "split(): argument 'split_size' must be int or list of ints"),
    ("chunk-zero", "td.chunk(0)", ValueError, "chunks must be a strictly positive integer"),
    ("narrow-past-end", "td.narrow(0, 2, 5)", RuntimeError,
     "start (2) + length (5) exceeds dimension size (3)"),
    ("masked-fill-mask", "td.masked_fill(torch.ones(2, dtype=torch.bool), 0)", RuntimeError,
     "tensor shape is incompatible with dest shape"),
    ("where-mask", "td.where(torch.ones(2, dtype=torch.bool), 0)", RuntimeError,
     "tensor shape is incompatible with dest shape"),
    # dims out of range
    ("unsqueeze-dim", "td.unsqueeze(5)", RuntimeError,
     "unsqueezing is allowed for dims comprised between"),
    ("unsqueeze-negative-dim", "td.unsqueeze(-5)", RuntimeError,
     "unsqueezing is allowed for dims comprised between"),
    ("lazy-unsqueeze-dim", f"{_LAZY}([td, td]).unsqueeze(4)", RuntimeError,
     "unsqueezing is allowed for dims comprised between"),
    ("non-tensor-unsqueeze-dim", "NonTensorData('x', batch_size=[2]).unsqueeze(3)",
     RuntimeError, None),
    ("gather-dim", "td.gather(3, torch.zeros(3, 4, dtype=torch.long))", RuntimeError,
     "Cannot gather tensordict with shape torch.Size([3, 4]) along dim 3"),
    ("permute-dim", "td.permute(0, 2)", ValueError,
     "Received an permutation order incompatible with the tensordict shape"),
    ("transpose-dim", "td.transpose(0, 2)", ValueError,
     "dim0 and dim1 must be within the range of the number of dimensions"),
    ("squeeze-dim", "td.squeeze(5)", IndexError, "Incompatible dim 5 for tensordict with shape"),
    ("unbind-dim", "td.unbind(3)", IndexError, "Incompatible dim 3 for tensordict with shape"),
    ("split-dim", "td.split(1, 3)", IndexError, "Incompatible dim 3 for tensordict with shape"),
    ("softmax-dim", "td.softmax(2)", IndexError, "Incompatible dim 2 for tensordict with shape"),
    ("sum-dim", "td.sum(2)", IndexError, "Incompatible dim 2 for tensordict with"),
    ("flatten-dim", "td.flatten(0, 3)", IndexError, "Dimension out of range"),
    ("flip-dim", "td.flip(2)", IndexError, "Dimension out of range"),
    ("narrow-dim", "td.narrow(2, 0, 1)", IndexError, "Dimension out of range"),
    ("all-dim", "td.all(2)", RuntimeError,
     "dim must be greater than or equal to -tensordict.batch_dims"),
    ("any-dim", "td.any(-3)", RuntimeError,
     "dim must be greater than or equal to -tensordict.batch_dims"),
    ("logsumexp-dim", "td.logsumexp(2)", ValueError,
     "The dimension 2 is incompatible with a tensordict with batch_size"),
    ("logsumexp-dims", "td.logsumexp((0, 2))", ValueError,
     "is incompatible with a tensordict with batch_size"),
    ("softmax-dim-none", "td.softmax(None)", ValueError, "Expected dim of type int"),
    ("softmax-dim-tuple", "td.softmax((0, 1))", ValueError, "Expected dim of type int"),
    ("softmax-dim-feature", "td.softmax('feature')", ValueError, "Expected dim of type int"),
    # stacking
    ("stack-different-keys", "torch.stack([f, f.exclude('a').set('b', torch.zeros(2))])",
     RuntimeError, "The sets of keys in the tensordicts to stack are exclusive"),
    ("stack-different-batch", "torch.stack([f, td])", RuntimeError,
     "stacking tensordicts requires them to have congruent batch sizes"),
    ("stack-dim", "torch.stack([f, f], dim=3)", IndexError, "Dimension out of range"),
    ("cat-different-batch",
     "torch.cat([TensorDict(a=torch.zeros(3, 2), batch_size=[3, 2]), "
     "TensorDict(a=torch.zeros(3, 3), batch_size=[3, 3])])", RuntimeError,
     "Sizes of tensors must match except in dimension"),
    ("cat-dim", "torch.cat([f, f], dim=1)", RuntimeError,
     "dim must be in the range 0 <= dim < len(batch_size)"),
    ("lazy-stack-dim", f"{_LAZY}([f, f], dim=3)", RuntimeError,
     "Stack dim 3 is too big for batch size"),
    ("map-zero-workers", "f.map(lambda x: x, num_workers=0)", ValueError,
     "Number of processes must be at least 1"),
    ("map-negative-workers", "f.map(lambda x: x, num_workers=-1)", ValueError,
     "Number of processes must be at least 1"),
    ("pad-odd-size", "pad(td, [1])", RuntimeError, None),
]


@pytest.mark.parametrize(("code", "cls", "phrase"), [case[1:] for case in CASES],
                         ids=[case[0] for case in CASES])
def test_bad_input_raises_upstreams_class_and_phrase(code: str, cls: type, phrase: str | None):
    env = _fresh()
    before = {name: _snapshot(value) for name, value in env.items()}
    env.update(torch=torch, TensorDict=TensorDict, LazyStackedTensorDict=LazyStackedTensorDict,
               NonTensorData=NonTensorData, pad=pad)
    with pytest.raises(cls) as info:
        exec(code, env)  # noqa: S102 - the case's one line
    if phrase is not None:
        assert phrase in str(info.value), str(info.value)
    for name, snap in before.items():  # (the lock a case takes itself is no change)
        assert _same(_snapshot(env[name]), snap, lock="lock_()" not in code), name


def test_classes_are_also_the_ones_raised_before():
    """Where upstream's class differs from ours, ours is a subclass of both."""
    env = _fresh()
    td = env["td"]
    with pytest.raises(IndexError):  # and RuntimeError, as upstream
        td.unsqueeze(5)
    with pytest.raises(IndexError):  # and ValueError, as upstream
        td.logsumexp(2)
    with pytest.raises(KeyError):  # and ValueError, as upstream
        td["a", "x"]
    with pytest.raises(KeyError):  # and RuntimeError, as upstream's select
        td.select(1)
    with pytest.raises(ValueError):  # and TypeError, as upstream
        td.clamp()
    with pytest.raises(ValueError):  # and TypeError, as upstream
        TensorDict(1)


# -- sources that are no mapping, and cat of TensorDicts differing in keys and batch ------
def test_a_source_that_is_no_mapping_raises_upstreams_attribute_error_too() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    for call in (lambda: td.update(1), lambda: TensorDict(1),
                 lambda: TensorDict.from_namedtuple(1)):
        with pytest.raises(AttributeError) as info:
            call()
        assert isinstance(info.value, (TypeError, ValueError))
    assert list(td.keys()) == ["a"] and (td["a"] == 0).all()


def test_cat_of_different_keys_and_batch_sizes_reports_the_keys_as_upstream() -> None:
    first = TensorDict(a=torch.zeros(3), batch_size=[3])
    second = TensorDict(b=torch.zeros(2, 2), batch_size=[2, 2])
    with pytest.raises(KeyError, match="keys"):
        torch.cat([first, second])
    with pytest.raises(RuntimeError, match="congruent batch sizes"):  # stack: batch first
        torch.stack([first, second])
