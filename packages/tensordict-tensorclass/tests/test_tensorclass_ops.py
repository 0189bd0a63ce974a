"""TensorDict operations on tensorclass instances (nested ones included): every result is
compared with the same op done field by field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from tensordict import LinkedList, TensorDict, tensorclass

sys.path.insert(0, str(Path(__file__).parent))
from tensorclass_test_classes import Decorated, Inner, Outer  # noqa: E402


def make(n: int = 4) -> Outer:
    return Outer(
        inner=Inner(x=torch.arange(float(n)), label="a", batch_size=[n]),
        y=torch.arange(2.0 * n).reshape(n, 2),
        td=TensorDict(z=torch.ones(n, 3), batch_size=[n]),
        extra="meta",
        batch_size=[n],
    )


def assert_same(obj: Outer, y: torch.Tensor, x: torch.Tensor, z: torch.Tensor) -> None:
    assert type(obj) is Outer and type(obj.inner) is Inner and type(obj.td) is TensorDict
    torch.testing.assert_close(obj.y, y)
    torch.testing.assert_close(obj.inner.x, x)
    torch.testing.assert_close(obj.td["z"], z)


def test_nested_fields_are_stored_as_given():
    o = make()
    assert o._tensordict["inner"] is o.inner and o.inner.label == "a" and o.extra == "meta"
    assert o.batch_size == torch.Size([4]) and o.inner.batch_size == torch.Size([4])


@pytest.mark.parametrize("index", [0, -1, slice(1, 3), torch.tensor([0, 2]),
                                   torch.tensor([True, False, True, True]), (Ellipsis,)])
def test_indexing_matches_the_fields(index):
    o = make()
    sub = o[index]
    assert_same(sub, o.y[index], o.inner.x[index], o.td["z"][index])
    assert sub.extra == "meta" and sub.inner.label == "a"


def test_indexing_on_0d_and_two_batch_dims():
    o = make().reshape(2, 2)
    assert_same(o[1, 0], o.y[1, 0], o.inner.x[1, 0], o.td["z"][1, 0])
    with pytest.raises(IndexError):
        o[0][0][0]


def test_setitem_writes_in_place_into_nested_fields():
    o = make()
    value = Outer(inner=Inner(x=torch.tensor(-1.0)), y=-torch.ones(2),
                  td=TensorDict(z=-torch.ones(3)))
    y, x = o.y.clone(), o.inner.x.clone()
    o[1] = value
    y[1], x[1] = -1, -1
    assert_same(o, y, x, torch.tensor([[1.0] * 3, [-1.0] * 3, [1.0] * 3, [1.0] * 3]))
    with pytest.raises(RuntimeError):
        o[0] = Outer(inner=Inner(x=torch.zeros(5)), y=torch.zeros(5, 2), batch_size=[5])
    assert o.y[0].tolist() == [0.0, 1.0]  # a failed write changes nothing


@pytest.mark.parametrize("op, fn", [
    ("reshape", lambda t, extra: t.reshape(2, 2, *t.shape[1:])),
    ("unsqueeze", lambda t, extra: t.unsqueeze(0)),
    ("flip", lambda t, extra: t.flip(0)),
])
def test_shape_ops_keep_the_class(op, fn):
    o = make()
    result = {"reshape": lambda: o.reshape(2, 2), "unsqueeze": lambda: o.unsqueeze(0),
              "flip": lambda: o.flip(0)}[op]()
    assert_same(result, fn(o.y, 1), fn(o.inner.x, 0), fn(o.td["z"], 1))


def test_unbind_split_chunk():
    o = make()
    parts = o.unbind(0)
    assert len(parts) == 4 and all(type(p) is Outer for p in parts)
    assert_same(parts[2], o.y[2], o.inner.x[2], o.td["z"][2])
    first, second = o.split([1, 3])
    assert_same(second, o.y[1:], o.inner.x[1:], o.td["z"][1:])
    assert [c.batch_size[0] for c in o.chunk(2)] == [2, 2]
    assert [p.inner.x.item() for p in o] == [0.0, 1.0, 2.0, 3.0]


def test_torch_stack_and_cat_keep_the_class_and_non_tensors():
    a, b = make(), make()
    b.inner.label = "b"
    stacked = torch.stack([a, b], 1)
    assert_same(stacked, torch.stack([a.y, b.y], 1), torch.stack([a.inner.x, b.inner.x], 1),
                torch.stack([a.td["z"], b.td["z"]], 1))
    assert stacked.batch_size == torch.Size([4, 2])
    assert stacked[0].inner.label == LinkedList(["a", "b"])
    cat = torch.cat([a, b], 0)
    assert_same(cat, torch.cat([a.y, b.y]), torch.cat([a.inner.x, b.inner.x]),
                torch.cat([a.td["z"], b.td["z"]]))


def test_apply_recurses_into_nested_instances():
    o = make()
    result = o.apply(lambda t: t * 2)
    assert_same(result, o.y * 2, o.inner.x * 2, o.td["z"] * 2)
    other = make()
    summed = o.apply(lambda t, u: t + u, other)
    assert_same(summed, o.y * 2, o.inner.x * 2, o.td["z"] * 2)
    o.apply_(lambda t: t + 1)
    assert o.inner.x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_pointwise_math_and_in_place_math():
    o = make()
    assert_same(o + 1, o.y + 1, o.inner.x + 1, o.td["z"] + 1)
    assert_same(-o, -o.y, -o.inner.x, -o.td["z"])
    assert_same(o * o, o.y * o.y, o.inner.x * o.inner.x, o.td["z"] ** 2)
    before = o.y.clone()
    same = o
    o += 1
    assert o is same and torch.equal(o.y, before + 1)


def test_comparisons_return_the_class_with_bool_leaves():
    o = make()
    eq = o == o.clone()
    assert type(eq) is Outer and type(eq.inner) is Inner
    assert eq.all() and eq.y.dtype is torch.bool
    d = Decorated(image=torch.arange(3.0), label=torch.arange(3), batch_size=[3])
    lt = d < 2
    assert type(lt) is Decorated
    assert torch.equal(lt.image, d.image < 2) and torch.equal(lt.label, d.label < 2)
    with pytest.raises(TypeError):
        hash(o)


def test_to_clone_detach_copy():
    o = make()
    moved = o.to(torch.float64)
    assert_same(moved, o.y.double(), o.inner.x.double(), o.td["z"].double())
    clone = o.clone()
    assert clone.y is not o.y and clone.inner.x is not o.inner.x
    assert_same(clone, o.y, o.inner.x, o.td["z"])
    shallow = o.copy()
    assert shallow.y is o.y and shallow._tensordict is not o._tensordict
    assert o.to("cpu").device == torch.device("cpu")


def test_get_and_set_with_nested_keys():
    o = make()
    assert o.get(("inner", "x")) is o.inner.x and o.get(("td", "z")) is o.td["z"]
    assert o.get("extra") == "meta" and o.get("missing") is None and o.get("missing", 3) == 3
    o.set(("inner", "x"), torch.zeros(4))
    assert torch.equal(o.inner.x, torch.zeros(4))
    assert o.set("y", torch.ones(4, 2)) is o and torch.equal(o.y, torch.ones(4, 2))
    with pytest.raises(AttributeError, match="no such field"):
        o.set("nope", torch.zeros(4))
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        o.set("y", torch.zeros(5))
    assert torch.equal(o.y, torch.ones(4, 2))
    assert {("inner", "x"), "y", ("td", "z")} <= set(o.keys(True, True))


def test_from_tensordict_wraps_without_copy_and_checks_keys():
    td = TensorDict(x=torch.zeros(2), batch_size=[2])
    inner = Inner.from_tensordict(td)
    assert inner._tensordict is td and inner.x is td["x"] and inner.label is None
    inner = Inner.from_tensordict(td, {"label": "given"})
    assert inner.label == "given" and "label" not in td.keys()
    with pytest.raises(ValueError, match=r"\['other'\].*not fields of Inner"):
        Inner.from_tensordict(TensorDict(x=torch.zeros(2), other=torch.zeros(2)))
    non_tensor = Inner.from_tensordict(TensorDict(x="text"))
    assert non_tensor.x == "text"


def test_to_tensordict_copies_and_drops_none_unless_retained():
    o = make()
    o.extra = None
    plain = o.to_tensordict()
    assert type(plain) is TensorDict and type(plain["inner"]) is TensorDict
    assert plain["inner", "x"] is not o.inner.x and torch.equal(plain["inner", "x"], o.inner.x)
    assert "extra" not in plain.keys()
    kept = o.to_tensordict(retain_none=True)
    assert kept["extra"] is None
    assert o.to_dict()["extra"] is None and o.to_dict()["inner"]["label"] == "a"


def test_state_dict_round_trip():
    o = make()
    state = o.state_dict()
    assert set(state) >= {"inner.x", "y"}
    target = make().apply(torch.zeros_like)
    target.load_state_dict(state)
    assert_same(target, o.y, o.inner.x, o.td["z"])


def test_lock_and_context_manager():
    o = make()
    with o.lock_():
        assert o.is_locked and o.inner.is_locked
        with pytest.raises(RuntimeError):
            o.y = torch.zeros(4, 2)
    assert not o.is_locked


def test_select_exclude_empty_and_non_fitting_results():
    o = make()
    assert type(o.select("y")) is Outer and o.select("y").inner is None
    assert o.exclude("y").y is None and o.exclude("y").inner is not None
    flat = o.flatten_keys()
    assert type(flat) is TensorDict and ("inner.x" in flat.keys())


def test_user_methods_survive_ops():
    d = Decorated(image=torch.ones(3, 2), label=torch.arange(3), batch_size=[3])
    assert torch.equal(d[0].double(), torch.full((2,), 2.0))
    assert torch.equal(d.reshape(3, 1).double(), torch.full((3, 1, 2), 2.0))


def test_class_level_and_static_functions_return_the_class():
    stacked = Inner.stack([Inner(x=torch.zeros(2), batch_size=[2])] * 3)
    assert type(stacked) is Inner and stacked.batch_size == torch.Size([3, 2])


def test_from_tensordict_with_unknown_extra_key():
    with pytest.raises(ValueError, match=r"\['nope'\]"):
        Inner.from_tensordict(TensorDict(x=torch.zeros(2)), {"nope": 1})


def test_lazy_stack_backing_reads_through_the_tensordict_api():
    from tensordict import TensorClass, lazy_stack

    class Lazy(TensorClass):
        x: torch.Tensor
        tag: str = "t"

    a = Lazy(x=torch.zeros(3), batch_size=[3])
    b = Lazy(x=torch.ones(3), tag="u", batch_size=[3])
    wrapped = lazy_stack([a, b])
    assert type(wrapped) is Lazy and type(wrapped._tensordict).__name__ == "LazyStackedTensorDict"
    assert torch.equal(wrapped.x, torch.stack([a.x, b.x]))
    assert wrapped.tag == [["t"] * 3, ["u"] * 3]
    wrapped.x = torch.full((2, 3), 5.0)
    assert torch.equal(a.x, torch.full((3,), 5.0))  # writes reach the stacked parts
    fresh = Lazy(x=torch.zeros(1), batch_size=[1])
    assert torch.equal(fresh.x, torch.zeros(1)) and fresh[0].tag == "t"


def test_plugin_methods_reach_instances_and_classes():
    from tensordict import TensorClass, plugins
    from tensordict.plugins import hookimpl

    class Shout:
        @hookimpl
        def tensordict_methods(self):
            return {"leaf_count": lambda td: len(list(td.keys(True, True))),
                    "make_empty": classmethod(lambda cls: f"empty {cls.__name__}")}

    plugin = plugins.register(Shout())
    try:
        class Later(TensorClass):  # building a class picks up newly registered plugins
            a: torch.Tensor
            b: torch.Tensor

        obj = Later(a=torch.zeros(2), b=torch.ones(2))
        assert obj.leaf_count() == 2 and Later.make_empty() == "empty Later"
        assert make().leaf_count() >= 3
    finally:
        plugins.unregister(plugin)
    with pytest.raises(AttributeError):
        obj.leaf_count()


def test_pytree_and_vmap_see_the_tensors():
    from torch.utils._pytree import tree_flatten, tree_map

    o = make()
    leaves, _ = tree_flatten(o)
    assert {id(t) for t in leaves} == {id(o.inner.x), id(o.y), id(o.td["z"])}
    mapped = tree_map(lambda t: t + 1, o)
    assert_same(mapped, o.y + 1, o.inner.x + 1, o.td["z"] + 1)
    assert mapped.extra == "meta" and mapped.inner.label == "a"
    doubled = torch.vmap(lambda d: d.image * 2)(
        Decorated(image=torch.ones(3, 2), label=torch.arange(3), batch_size=[3]))
    assert torch.equal(doubled, torch.full((3, 2), 2.0))


def test_in_place_ops_cannot_add_keys_that_are_not_fields():
    o = make()
    with pytest.raises(ValueError, match=r"no fields \['w'\]"):
        o.update({"w": torch.zeros(4)})
    assert "w" not in o._tensordict.keys()
    assert o.update({"y": torch.zeros(4, 2)}) is o and torch.equal(o.y, torch.zeros(4, 2))
    with pytest.raises(RuntimeError, match="boolean value"):
        bool(o)


def test_dim_names_reach_nested_instances():
    o = make()
    o.names = ["t"]
    assert o.inner.names == ["t"] and o.td.names == ["t"]
    assert o[1:].inner.names == ["t"] and o.unsqueeze(0).inner.names == [None, "t"]
    o.names = None
    assert o.inner.names == [None]


def test_to_tensordict_gives_a_tensordict_copy_of_the_fields():
    from tensordict import tensorclass

    @tensorclass
    class Pair:
        x: torch.Tensor
        tag: str

    pair = Pair(x=torch.zeros(2), tag="a", batch_size=[2])
    out = pair.to_tensordict()
    assert type(out) is TensorDict and out["tag"] == "a"
    assert out["x"].data_ptr() != pair.x.data_ptr() and out.batch_size == (2,)
    nested = TensorDict({"p": pair}, [2]).to_tensordict()
    assert type(nested["p"]) is TensorDict

def test_an_op_that_changes_nothing_returns_the_instance_itself():
    @tensorclass
    class Grid:
        x: torch.Tensor

    grid = Grid(x=torch.zeros(2, 3, 4), batch_size=[2, 3])
    assert grid.movedim(0, 0) is grid and grid.permute(0, 1) is grid
    assert grid.reshape(2, 3) is grid and grid.to_pytree() is grid
    moved = grid.transpose(0, 1)
    assert type(moved) is Grid and moved.batch_size == torch.Size([3, 2])
