"""Building tensorclasses: the decorator and base forms, every option, construction."""

from __future__ import annotations

import dataclasses
import inspect
import warnings
from typing import Any, ClassVar

import pytest
import torch

import tensordict
from tensordict import NonTensorData, TensorClass, TensorCollection, TensorDict, tensorclass
from tensordict.tensorclasses import TensorClassBase, is_tensorclass


class Point(TensorClass):
    xy: torch.Tensor
    name: str = "p"
    extra: Any = None


# -- the two forms -----------------------------------------------------------------------
def test_top_level_names_come_from_the_plugin():
    from tensordict import tensorclasses

    assert tensordict.tensorclass is tensorclasses.tensorclass
    assert tensordict.TensorClass is tensorclasses.TensorClass
    # core's, re-exported: it only reads the marker every tensorclass carries
    assert tensordict.is_tensorclass is tensorclasses.is_tensorclass


def test_decorator_bare_and_with_options_make_real_dataclasses():
    @tensorclass
    class A:
        x: torch.Tensor

    @tensorclass(frozen=True)
    class B:
        x: torch.Tensor

    for cls in (A, B):
        obj = cls(x=torch.zeros(2), batch_size=[2])
        assert dataclasses.is_dataclass(obj) and dataclasses.is_dataclass(cls)
        assert [f.name for f in dataclasses.fields(obj)] == ["x"]
        assert is_tensorclass(cls) and is_tensorclass(obj)
        assert isinstance(obj, TensorCollection)
        assert tensordict.is_tensor_collection(obj)
    assert not is_tensorclass(TensorDict()) and is_tensorclass(TensorClass)  # as upstream


def test_decorated_class_keeps_name_methods_and_zero_arg_super():
    class Base:
        def describe(self) -> str:
            return "base"

    @tensorclass
    class Child(Base):
        x: torch.Tensor

        def describe(self) -> str:
            return "child of " + super().describe()

    obj = Child(x=torch.ones(3), batch_size=[3])
    assert Child.__name__ == "Child" and Child.__qualname__.endswith("Child")
    assert obj.describe() == "child of base"
    assert obj[0].describe() == "child of base"


def test_constructor_signature_positional_keyword_and_meta_args():
    params = inspect.signature(Point.__init__).parameters
    assert list(params) == ["self", "xy", "name", "extra", "batch_size", "device", "names"]
    assert params["batch_size"].kind is inspect.Parameter.KEYWORD_ONLY
    p = Point(torch.zeros(3, 2), "q", batch_size=[3], names=["n"])
    assert p.name == "q" and p.names == ["n"] and p.batch_size == torch.Size([3])
    assert Point(xy=torch.zeros(2)).batch_size == torch.Size([])
    with pytest.raises(TypeError, match="xy"):
        Point()
    with pytest.raises(TypeError, match="multiple values"):
        Point(torch.zeros(2), xy=torch.zeros(2))
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        Point(xy=torch.zeros(2), batch_size=[3])


def test_device_moves_every_field():
    p = Point(xy=torch.zeros(2, dtype=torch.float64), batch_size=[2], device="cpu")
    assert p.device == torch.device("cpu") and p.xy.device == torch.device("cpu")


def test_defaults_default_factory_and_init_false():
    @tensorclass
    class D:
        x: torch.Tensor = dataclasses.field(default_factory=lambda: torch.zeros(()))
        n: Any = dataclasses.field(default="fixed", init=False)
        m: torch.Tensor = dataclasses.field(default_factory=lambda: torch.ones(()), init=False)

    a, b = D(), D()
    assert a.x is not b.x and torch.equal(a.x, torch.zeros(()))
    assert a.n == "fixed" and "n" not in inspect.signature(D).parameters
    assert torch.equal(a.m, torch.ones(())) and "m" not in inspect.signature(D).parameters


def test_none_fields_are_not_stored_and_read_none():
    p = Point(xy=torch.zeros(2), batch_size=[2])
    assert p.extra is None and "extra" not in p._tensordict.keys()
    p.extra = "something"
    assert p.extra == "something"
    p.extra = None
    assert p.extra is None and "extra" not in p._tensordict.keys()
    del p.xy
    assert p.xy is None


def test_storage_is_a_tensordict_and_non_tensors_are_wrapped():
    p = Point(xy=torch.zeros(2), name="q", batch_size=[2])
    assert type(p._tensordict) is TensorDict
    assert isinstance(p._tensordict.get("name"), NonTensorData)
    assert p.name == "q" and p._non_tensordict == {}
    assert p.__dict__ is p._tensordict._tensordict  # the read fast path


def test_unknown_attribute_and_string_index_errors():
    p = Point(xy=torch.zeros(2), batch_size=[2])
    with pytest.raises(AttributeError, match="has no such field.*'xy'"):
        p.other = 1
    with pytest.raises(ValueError, match="Invalid indexing arguments: 'xy'"):
        p["xy"]
    with pytest.raises(ValueError, match="Invalid indexing arguments"):
        p["xy"] = torch.ones(2)


# -- default casting and options ---------------------------------------------------------
class Scalars(TensorClass):
    i: int
    f: float
    b: bool
    s: str


def test_default_casting_of_python_scalars_warns_like_upstream():
    with pytest.warns(FutureWarning) as record:
        obj = Scalars(i=1, f=2.0, b=True, s="x")
    assert [str(w.message).split(" is stored")[0] for w in record] == [
        "The int given to the field 'i' of Scalars",
        "The float given to the field 'f' of Scalars",
        "The bool given to the field 'b' of Scalars",
    ]
    assert all(w.filename == __file__ for w in record)  # points at the caller
    assert torch.equal(obj.i, torch.tensor(1)) and torch.equal(obj.f, torch.tensor(2.0))
    assert torch.equal(obj.b, torch.tensor(True)) and obj.s == "x"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        obj = Scalars(i=torch.tensor(3), f=torch.tensor(2.0), b=1, s="y")
    assert torch.equal(obj.b, torch.tensor(1))


def test_autocast_by_bracket_and_keyword():
    class A(TensorClass["autocast"]):
        i: int
        s: str
        t: torch.Tensor

    class B(TensorClass, autocast=True):
        i: int

    a = A(i=torch.ones(()), s=3, t=1)
    assert a.i == 1 and type(a.i) is int and a.s == "3" and torch.equal(a.t, torch.tensor(1))
    assert B(integer := torch.ones(())).i == 1 and integer.item() == 1
    a.i = torch.tensor(5.0)
    assert a.i == 5 and type(a.i) is int


def test_nocast_keeps_python_values():
    class N(TensorClass["nocast"]):
        i: int
        t: torch.Tensor
        x: Any

    n = N(i=1, t=1, x=2.0)
    assert (n.i, n.t, n.x) == (1, 1, 2.0) and type(n.t) is int
    assert repr(n._tensordict) == "TensorDict(batch_size=[], fields={i: int, t: int, x: float})"
    n.t = torch.zeros(())
    assert isinstance(n.t, torch.Tensor)


def test_frozen_instances_raise_and_are_locked():
    class F(TensorClass["nocast", "frozen"]):
        integer: int

    f = F(integer=1)
    assert f.integer == 1 and f.is_locked
    with pytest.raises(dataclasses.FrozenInstanceError):
        f.integer = 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        del f.integer
    assert f.integer == 1


def test_tensor_only_converts_and_rejects_other_annotations():
    class T(TensorClass["tensor_only"]):
        x: torch.Tensor
        td: TensorDict = None
        y: torch.Tensor | None = None

    t = T(x=1, td={"a": torch.zeros(())})
    assert torch.equal(t.x, torch.tensor(1)) and isinstance(t.td, TensorDict)
    with pytest.raises(TypeError, match="tensor_only requires types"):
        class Bad(TensorClass["tensor_only"]):
            x: str


def test_option_conflicts_and_unknown_flags():
    with pytest.raises(TypeError, match="autocast is exclusive with nocast"):
        class X(TensorClass["autocast", "nocast"]):
            x: str
    with pytest.raises(TypeError, match="only accepts the flags"):
        TensorClass["foo"]
    with pytest.raises(TypeError, match="unknown TensorClass options"):
        class Y(TensorClass, fast=True):
            x: str


def test_reserved_names_need_shadow():
    for name in ("batch_size", "sum", "reshape", "memmap"):
        with pytest.raises(AttributeError, match=f"Attribute name {name} can't be used"):
            type("Bad", (TensorClass,), {"__annotations__": {name: torch.Tensor}})

    class WithClassVar(TensorClass):  # class variables are not fields: no clash
        size: ClassVar[int] = 3
        x: torch.Tensor

    assert WithClassVar.size == 3 and [f.name for f in dataclasses.fields(WithClassVar)] == ["x"]

    class S(TensorClass["shadow"]):
        sum: torch.Tensor

    s = S(sum=torch.ones(2))
    assert torch.equal(s.sum, torch.ones(2))


def test_post_init_runs_on_construction_and_rebuilds_unless_skipped():
    seen: list[torch.Size] = []

    @tensorclass
    class P:
        x: torch.Tensor

        def __post_init__(self):
            seen.append(self.batch_size)

    @tensorclass(skip_post_init_on_rebuild=True)
    class Q:
        x: torch.Tensor

        def __post_init__(self):
            seen.append(self.batch_size)

    p = P(x=torch.ones(3), batch_size=[3])
    p[0], p.clone(), torch.stack([p, p]), p.empty()
    assert seen == [torch.Size([3]), torch.Size([]), torch.Size([3]), torch.Size([2, 3])]
    seen.clear()
    q = Q(x=torch.ones(3), batch_size=[3])
    q[0], q.clone()
    assert seen == [torch.Size([3])]


def test_kw_only():
    @tensorclass(kw_only=True)
    class K:
        x: torch.Tensor
        y: torch.Tensor = None

    params = inspect.signature(K.__init__).parameters
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for n, p in params.items() if n != "self")
    with pytest.raises(TypeError, match="positional"):
        K(torch.ones(1))
    assert torch.equal(K(x=torch.ones(1)).x, torch.ones(1))


def test_cast_filter_is_the_default_of_dtype_casts():
    @tensorclass(cast_filter=lambda key, value: key != ("step",))
    class C:
        obs: torch.Tensor
        step: torch.Tensor

    c = C(obs=torch.zeros(2), step=torch.zeros(2, dtype=torch.long), batch_size=[2])
    for cast in (c.to(torch.float16), c.half()):
        assert (cast.obs.dtype, cast.step.dtype) == (torch.float16, torch.int64)
    everything = c.double(cast_filter=None)
    assert everything.step.dtype == torch.float64 and type(everything) is C


def test_subclass_of_a_tensorclass_adds_fields_and_inherits_options():
    class Base(TensorClass["frozen"]):
        x: torch.Tensor

    class Child(Base):
        y: torch.Tensor

    c = Child(x=torch.zeros(1), y=torch.ones(1))
    assert [f.name for f in dataclasses.fields(c)] == ["x", "y"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.y = torch.zeros(1)


def test_fields_classmethod_is_deprecated():
    with pytest.warns(DeprecationWarning, match="dataclasses.fields"):
        fields = Point.fields()
    assert [f.name for f in fields] == ["xy", "name", "extra"]


def test_dataclasses_helpers():
    p = Point(xy=torch.zeros(2), name="q", batch_size=[2])
    as_dict = dataclasses.asdict(p)
    assert torch.equal(as_dict["xy"], p.xy) and as_dict["name"] == "q"
    other = dataclasses.replace(p, name="r")
    assert other.name == "r" and other.xy is p.xy
    assert issubclass(Point, TensorClassBase)


def test_annotations_from_future_strings_are_resolved():
    # this module uses `from __future__ import annotations`: fields are still typed
    assert Point._tc_fast == {"xy"}
    assert "name" not in Point._tc_fast


def test_non_tensor_given_to_a_tensor_field_reads_back_unwrapped():
    class Loose(TensorClass):
        x: torch.Tensor

    obj = Loose(x="text")
    assert obj.x == "text"
    assert Loose(x=torch.zeros(1)).x.shape == torch.Size([1])


def test_decorator_on_a_tensorclass_base_subclass_sets_options():
    @tensorclass(frozen=True)
    class F(TensorClass):
        x: torch.Tensor

    f = F(x=torch.zeros(1))
    assert f.is_locked
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        F()


def test_properties_with_setters_and_batch_size_setter():
    class WithProperty(TensorClass):
        x: torch.Tensor

        @property
        def doubled(self) -> torch.Tensor:
            return self.x * 2

        @doubled.setter
        def doubled(self, value: torch.Tensor) -> None:
            self.x = value / 2

    obj = WithProperty(x=torch.ones(2, 3), batch_size=[2])
    obj.doubled = torch.full((2, 3), 4.0)
    assert torch.equal(obj.x, torch.full((2, 3), 2.0))
    obj.batch_size = [2, 3]
    assert obj.batch_size == torch.Size([2, 3]) and obj[0, 0].x.shape == torch.Size([])
    with pytest.raises(RuntimeError):
        obj.batch_size = [5]
    assert obj.batch_size == torch.Size([2, 3])
