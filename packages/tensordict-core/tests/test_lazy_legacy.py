"""The legacy lazy mode (``set_lazy_legacy(True)``, ``LAZY_LEGACY_OP=1``) as upstream
tensordict 0.15.3 shows it: the switch (context manager, decorator, ``set()``) and its
deprecation warnings, ``torch.stack`` giving lazy stacks, and the shape ops of dense,
nested, lazy-stacked, memmapped and tensorclass inputs giving the batch sizes, values,
names and write-through upstream gives, with the mode on and off."""

import os
import subprocess
import sys
import warnings

import pytest
import torch

import tensordict
from tensordict import LazyStackedTensorDict, TensorDict, lazy_legacy, lazy_stack, set_lazy_legacy
from tensordict.base import TensorDictBase


def _quiet(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return set_lazy_legacy(mode)


def _dense():
    return TensorDict(a=torch.arange(6.0).reshape(2, 3),
                      b=TensorDict(c=torch.zeros(2, 3, 1), batch_size=[2, 3]),
                      batch_size=[2, 3], names=["x", "y"])


def _lazy():
    return lazy_stack([TensorDict(a=torch.arange(3.0) + 3 * i, batch_size=[3])
                       for i in range(2)], 0)


# op, the same op on the tensor leaf "a" (batch dims leading), names it gives
SHAPE_OPS = {
    "unsqueeze": (lambda t: t.unsqueeze(0), lambda a: a.unsqueeze(0), [None, "x", "y"]),
    "unsqueeze-1": (lambda t: t.unsqueeze(-1), lambda a: a.unsqueeze(-1), ["x", "y", None]),
    "squeeze": (lambda t: t.unsqueeze(1).squeeze(1), lambda a: a, ["x", "y"]),
    "squeeze()": (lambda t: t.unsqueeze(1).squeeze(), lambda a: a, ["x", "y"]),
    "permute": (lambda t: t.permute(1, 0), lambda a: a.permute(1, 0), ["y", "x"]),
    "transpose": (lambda t: t.transpose(0, 1), lambda a: a.transpose(0, 1), ["y", "x"]),
    "view": (lambda t: t.view(-1), lambda a: a.view(-1), [None]),
    "reshape": (lambda t: t.reshape(-1), lambda a: a.reshape(-1), [None]),
    "flatten": (lambda t: t.flatten(0, 1), lambda a: a.flatten(0, 1), [None]),
    # (upstream names it [None, "x", "y"]: the names are not checked, see the notes)
    "unflatten": (lambda t: t.unflatten(0, (2, 1)), lambda a: a.unflatten(0, (2, 1)), None),
}
#: ops whose result upstream gives as a lazy stack when the input is one
LAZY_KEEPS = {"unsqueeze", "unsqueeze-1", "squeeze", "squeeze()", "reshape", "flatten",
              "unflatten"}


@pytest.mark.parametrize("mode", [False, True])
@pytest.mark.parametrize("source", ["dense", "lazy"])
@pytest.mark.parametrize("op", SHAPE_OPS)
def test_shape_op_values_names_and_write_through(mode, source, op):
    fn, leaf_fn, names = SHAPE_OPS[op]
    td = _dense() if source == "dense" else _lazy()
    expected = leaf_fn(td["a"].clone())
    with _quiet(mode):
        out = fn(td)
    assert isinstance(out, TensorDictBase)
    assert out.batch_size == expected.shape and torch.equal(out["a"], expected)
    if source == "dense":
        assert out["b"].batch_size == out.batch_size
        if names is not None:
            assert out.names == names
    elif not mode or op in LAZY_KEEPS:
        assert type(out) is LazyStackedTensorDict
    out.set_("a", torch.full_like(out["a"], 7.0))  # a view of the input: written through
    assert (td["a"] == 7).all()
    assert not out.is_locked


@pytest.mark.parametrize("mode", [False, True])
@pytest.mark.parametrize("source", ["dense", "lazy"])
def test_stack_cat_unbind_split(mode, source):
    td = _dense() if source == "dense" else _lazy()
    with _quiet(mode):
        stacked, catted = torch.stack([td, td], 0), torch.cat([td, td], 0)
        pieces = td.split(1, 0), td.chunk(2, 0)
        unbound = td.unbind(0)
        clone = td.clone()
    lazy_input = source == "lazy"
    assert type(stacked) is (LazyStackedTensorDict if mode or lazy_input else TensorDict)
    assert stacked.batch_size == (2, 2, 3) and torch.equal(stacked["a"][1], td["a"])
    assert type(catted) is (LazyStackedTensorDict if lazy_input else TensorDict)
    assert catted.batch_size == (4, 3) and torch.equal(catted["a"][2:], td["a"])
    for split in pieces:
        kinds = {type(p) for p in split}
        assert kinds == {LazyStackedTensorDict if lazy_input else TensorDict}
        assert [tuple(p.batch_size) for p in split] == [(1, 3), (1, 3)]
    assert [type(p) for p in unbound] == [TensorDict, TensorDict]
    assert type(clone) is type(td)
    if mode and not lazy_input:  # a lazy stack of the inputs themselves: writes reach td
        stacked.tensordicts[0]["a"] += 1
        assert td["a"][0, 0] == 1.0


@pytest.mark.parametrize("mode", [False, True])
def test_memmap_and_tensorclass_inputs(mode, tmp_path):
    tensorclass = pytest.importorskip("tensordict.tensorclasses").tensorclass
    pytest.importorskip("tensordict.memmap")

    @tensorclass
    class Pair:
        x: torch.Tensor

    memmapped = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3]).memmap(tmp_path)
    pair = Pair(x=torch.zeros(2, 3), batch_size=[2, 3])
    with _quiet(mode):
        mm_stack, tc_stack = torch.stack([memmapped] * 2), torch.stack([pair] * 2)
        mm_cat, tc_cat = torch.cat([memmapped] * 2), torch.cat([pair] * 2)
        mm_view, tc_view = memmapped.unsqueeze(0), pair.permute(1, 0)
    assert type(mm_stack) is (LazyStackedTensorDict if mode else TensorDict)
    assert mm_stack.is_locked == mode  # (a lazy stack of the locked memmapped inputs)
    assert type(tc_stack) is Pair and \
        type(tc_stack._tensordict) is (LazyStackedTensorDict if mode else TensorDict)
    assert type(mm_cat) is TensorDict and not mm_cat.is_locked
    assert type(tc_cat) is Pair and tc_cat.batch_size == (4, 3)
    assert mm_view.is_locked and mm_view.batch_size == (1, 2, 3)
    assert type(tc_view) is Pair and tc_view.batch_size == (3, 2)


def test_switch_forms_and_deprecation_warnings():
    before = lazy_legacy()
    with pytest.warns(DeprecationWarning, match="legacy lazy mode.*0.17"):
        switch = set_lazy_legacy(True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with set_lazy_legacy(False):  # turning it off does not warn
            assert lazy_legacy() is False
        with switch:
            assert lazy_legacy() is True
        assert lazy_legacy() is before

        @switch
        def inside():
            return lazy_legacy()

        assert inside() is True and inside() is True  # (warned once, when made)
        assert lazy_legacy() is before
        try:
            switch.set()
            assert lazy_legacy() is True and os.environ["LAZY_LEGACY_OP"]
        finally:
            set_lazy_legacy(False).set()
    assert tensordict.lazy_legacy() is False


def test_environment_turns_it_on_with_a_future_warning():
    code = ("import warnings; warnings.simplefilter('always'); import tensordict; "
            "print(tensordict.lazy_legacy())")
    env = {k: v for k, v in os.environ.items() if k != "LAZY_LEGACY_OP"}
    run = subprocess.run([sys.executable, "-c", code], env={**env, "LAZY_LEGACY_OP": "1"},
                         capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["True"]
    assert "FutureWarning" in run.stderr and "legacy lazy mode" in run.stderr
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert run.stdout.split() == ["False"] and "legacy lazy" not in run.stderr
