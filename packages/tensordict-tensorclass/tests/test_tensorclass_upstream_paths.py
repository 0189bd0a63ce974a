"""Upstream's ``tensordict.tensorclass`` module path and what TorchRL needs of
tensorclasses: ``from_dataclass``, ``MetaData``, ``TensorAttrs``, the ``__getattr__``
fallback, fields named like members (``data``), ``extend`` and the private constructor."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.metadata
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

import tensordict
from tensordict import (
    LazyStackedTensorDict,
    NonTensorStack,
    TensorClass,
    TensorDict,
    TensorDictBase,
    lazy_stack,
    tensorclass,
)
from tensordict.tensorclass import (
    MetaData,
    NonTensorData,
    NonTensorDataBase,
    TensorAttrs,
    from_dataclass,
)

PACKAGE_ROOT = Path(__file__).parents[1]

#: Every meaningful name upstream's ``tensordict.tensorclass`` module has.
UPSTREAM_NAMES = [
    "CompatibleType", "LazyStackedTensorDict", "LinkedList", "MetaData", "NO_DEFAULT",
    "NestedKey", "NonTensorData", "NonTensorDataBase", "NonTensorStack",
    "TD_HANDLED_FUNCTIONS", "TensorAttrs", "TensorClass", "TensorCollection", "TensorDict",
    "TensorDictBase", "capture_non_tensor_stack", "default_collate_fn_map",
    "expand_as_right", "from_dataclass", "is_dataclass", "is_non_tensor",
    "is_tensor_collection", "is_tensorclass", "list_to_stack", "tensorclass",
    "warn_deprecated",
]


def _module() -> Any:
    importlib.import_module("tensordict.tensorclass")
    return sys.modules["tensordict.tensorclass"]


# -- the module path ------------------------------------------------------------------------
def test_module_path_and_decorator_coexist():
    module = _module()
    assert callable(tensordict.tensorclass) and tensordict.tensorclass is module.tensorclass
    assert sorted(module.__all__) == [
        "MetaData", "NonTensorData", "NonTensorDataBase", "NonTensorStack", "TensorAttrs",
        "TensorClass", "from_dataclass", "is_non_tensor", "tensorclass"]
    missing = [name for name in UPSTREAM_NAMES if not hasattr(module, name)]
    assert not missing
    # re-exports, not copies
    assert module.NonTensorData is tensordict.NonTensorData
    assert module.NonTensorStack is NonTensorStack and module.TensorClass is TensorClass
    assert module.is_tensorclass is tensordict.is_tensorclass
    assert module.TensorAttrs is tensordict.TensorAttrs
    assert module.from_dataclass is tensordict.from_dataclass


def test_importing_the_module_first_keeps_the_decorator():
    code = (
        "import tensordict.tensorclass\n"
        "import tensordict.tensorclass as alias\n"
        "from tensordict import tensorclass\n"
        "from tensordict.tensorclass import NonTensorData, TensorClass, is_non_tensor\n"
        "import torch\n"
        "@tensorclass\n"
        "class A:\n"
        "    x: torch.Tensor\n"
        "print(type(alias).__name__, type(tensordict.tensorclass).__name__,\n"
        "      A(x=torch.zeros(2), batch_size=[2]).batch_size, is_non_tensor(NonTensorData(1)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == "function function torch.Size([2]) True"


def test_core_provides_the_module_path():
    """``tensordict/tensorclass.py`` is core's; this distribution ships none of its files
    outside ``tensordict/tensorclasses/``."""
    module = _module()
    assert Path(module.__file__) == Path(tensordict.__file__).parent / "tensorclass.py"
    names = {str(f) for f in importlib.metadata.files("tensordict-tensorclass") or []}
    assert not {name for name in names if name.startswith("tensordict/")
                and not name.startswith("tensordict/tensorclasses/")}


def test_the_wheel_holds_only_the_subpackage(tmp_path):
    builder = pytest.importorskip("hatchling.builders.wheel")
    wheel = next(iter(builder.WheelBuilder(str(PACKAGE_ROOT)).build(
        directory=str(tmp_path), versions=["standard"])))
    names = zipfile.ZipFile(wheel).namelist()
    assert "tensordict/tensorclasses/_dataclass.py" in names
    assert [name for name in names if name.startswith("tensordict/")
            and not name.startswith("tensordict/tensorclasses/")] == []


def test_module_docstring_examples():
    import doctest

    result = doctest.testmod(_module(), optionflags=doctest.ELLIPSIS, verbose=False)
    assert result.failed == 0 and result.attempted > 0


# -- from_dataclass ---------------------------------------------------------------------------
@dataclasses.dataclass
class Obs:
    pixels: torch.Tensor
    tag: str = "cam"
    extras: dict = dataclasses.field(default_factory=dict)

    def brightness(self) -> torch.Tensor:
        return self.pixels.mean()


def test_from_dataclass_type_builds_a_new_tensorclass():
    ObsTC = from_dataclass(Obs)
    assert ObsTC.__name__ == "Obs_tc" and tensordict.is_tensorclass(ObsTC)
    assert not issubclass(ObsTC, Obs) and not hasattr(ObsTC, "brightness")  # fields only
    assert [f.name for f in dataclasses.fields(ObsTC)] == ["pixels", "tag", "extras"]
    first, second = ObsTC(torch.zeros(3, 2), batch_size=[3]), ObsTC(torch.ones(3, 2))
    assert first.tag == "cam" and first.extras == {} and first.extras is not second.extras
    assert from_dataclass(ObsTC) is ObsTC  # already a tensorclass
    assert from_dataclass(Obs) is not ObsTC  # a new class each call, as upstream


def test_from_dataclass_type_flags():
    @dataclasses.dataclass
    class Count:
        n: int
        x: torch.Tensor = None

    frozen = from_dataclass(Count, frozen=True)(n=torch.tensor(1))
    with pytest.raises(dataclasses.FrozenInstanceError):
        frozen.n = torch.tensor(2)
    assert from_dataclass(Count, nocast=True)(n=1).n == 1
    assert from_dataclass(Count, autocast=True)(n=torch.tensor(3)).n == 3
    with pytest.warns(FutureWarning, match="flags that @tensorclass rejects as exclusive"):
        both = from_dataclass(Count, autocast=True, nocast=True)
    assert both(n=torch.tensor(4)).n == 4  # autocast wins, as upstream
    inplace = from_dataclass(Count, inplace=True)
    assert inplace.__name__ == "Count" and tensordict.is_tensorclass(inplace)


def test_from_dataclass_instance_copies_the_fields():
    pixels = torch.arange(6.0).reshape(3, 2)
    obs = Obs(pixels, tag="left", extras={"id": 3})
    converted = from_dataclass(obs, batch_size=[3])
    assert type(converted).__name__ == "Obs_tc" and converted.batch_size == torch.Size([3])
    torch.testing.assert_close(converted.pixels, pixels)
    assert converted.pixels.data_ptr() != pixels.data_ptr()  # dataclasses.asdict copies
    assert converted.tag == "left" and converted.extras == {"id": 3}
    assert converted.extras is not obs.extras
    auto = from_dataclass(Obs(torch.zeros(4, 5, 2), tag="x"), auto_batch_size=True,
                          batch_dims=1)
    assert auto.batch_size == torch.Size([4])


def test_from_dataclass_as_a_class_method():
    @dataclasses.dataclass
    class Pose:
        xy: torch.Tensor
        frame: str = "world"

    class PoseTC(TensorClass):
        xy: torch.Tensor
        frame: str = "world"

    pose = Pose(torch.ones(3, 2), frame="cam")
    mine = PoseTC.from_dataclass(pose, batch_size=[3])  # an instance of the class
    assert type(mine) is PoseTC and mine.frame == "cam" and mine.batch_size == (3,)
    torch.testing.assert_close(mine.xy, pose.xy)
    assert type(PoseTC.from_dataclass(pose, as_tensorclass=True)).__name__ == "Pose_tc"
    plain = TensorDict.from_dataclass(pose, batch_size=[3])
    assert type(plain) is TensorDict and plain["frame"] == "cam"
    into = TensorDict.from_dataclass(pose, as_tensorclass=True, dest_cls=PoseTC,
                                     auto_batch_size=True)
    assert type(into) is PoseTC and into.batch_size == (3, 2)


def test_from_dataclass_instance_options_and_errors():
    @dataclasses.dataclass
    class Pair:
        a: torch.Tensor
        b: torch.Tensor
        n: int = dataclasses.field(default=0, init=False)

    class PairTC(TensorClass):
        a: torch.Tensor
        b: torch.Tensor
        n: int = dataclasses.field(default=0, init=False)

    pair = Pair(torch.zeros(2), torch.ones(2))
    pair.n = 7
    into = from_dataclass(pair, dest_cls=PairTC, batch_size=[2])
    assert type(into) is PairTC and torch.equal(into.b, torch.ones(2)) and into.n == 7
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # int field stored as a 0-d tensor
        assert int(from_dataclass(pair).n) == 7  # a field the constructor does not take
    with pytest.raises(TypeError, match="Conflicting batch sizes"):
        from_dataclass(pair, auto_batch_size=True, batch_size=[2])
    with pytest.raises(TypeError, match="exclusive"):
        from_dataclass(pair, tensor_only=True, autocast=True)
    with pytest.raises(TypeError, match="dataclass"):
        from_dataclass(1)
    with pytest.raises(TypeError, match="dataclass"):
        from_dataclass(int)
    grid = Obs(torch.zeros(2, 3))
    with pytest.warns(FutureWarning, match="ignores batch_dims=1 .* Pass auto_batch_size"):
        ignored = from_dataclass(grid, batch_dims=1)
    assert ignored.batch_size == torch.Size([])
    with pytest.warns(FutureWarning, match="Drop batch_dims to keep today's result"):
        assert from_dataclass(grid, batch_dims=1, batch_size=[2]).batch_size == (2,)


# -- MetaData and NonTensorDataBase ------------------------------------------------------------
def test_metadata_keeps_one_object_through_ops():
    config = {"lr": 0.1}
    meta = MetaData(config, batch_size=[3])
    assert isinstance(meta, NonTensorDataBase) and isinstance(NonTensorData(1), NonTensorDataBase)
    assert repr(meta) == ("MetaData(data={'lr': 0.1}, batch_size=torch.Size([3]), "
                          "device=None)")
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td["config"] = meta
    assert td["config"] is config
    for result in (td[0], td.unsqueeze(0), torch.stack([td, td]), torch.cat([td, td]),
                   lazy_stack([td, td])):
        entry = result.get("config")
        assert type(entry) is MetaData and entry.data is config, type(result)
        assert entry.batch_size == result.batch_size
    assert torch.stack([meta, meta]).batch_size == torch.Size([2, 3])
    assert type(torch.cat([meta, meta])) is MetaData


def test_metadata_holding_different_objects_stacks_as_a_list():
    first, second = MetaData({"lr": 0.1}, batch_size=[2]), MetaData({"lr": 0.1}, batch_size=[2])
    stacked = torch.stack([first, second])
    assert isinstance(stacked, NonTensorStack) and stacked.batch_size == torch.Size([2, 2])
    # plain NonTensorData never merges without capture_non_tensor_stack
    plain = torch.stack([TensorDict(s="a"), TensorDict(s="a")]).get("s")
    assert isinstance(plain, NonTensorStack)


def test_typed_metadata_and_unwrapping():
    Text = MetaData[str]
    assert MetaData[str] is Text and issubclass(Text, MetaData)
    assert Text("x").data == "x" and type(Text("x")[None]) is Text
    with pytest.raises(TypeError, match="Expected data of type str, got int"):
        Text(1)
    assert MetaData(NonTensorData(5)).data == 5 and NonTensorData(NonTensorData(5)).data == 5


def test_metadata_in_a_tensorclass_field_as_torchrl_sets_it():
    class Tokens(TensorClass["nocast"]):
        prompt: torch.Tensor | None = None
        padded: bool | None = None

    first = Tokens(prompt=torch.zeros(2, 3), batch_size=[2])
    first.padded = MetaData(True)
    second = Tokens(prompt=torch.ones(2, 3), batch_size=[2])
    second.padded = MetaData(True)
    assert first.padded is True and "padded: MetaData" in repr(first)
    for stacked in (torch.stack([first, second]), lazy_stack([first, second])):
        assert type(stacked) is Tokens and stacked.padded is True
        assert type(stacked._tensordict.get("padded")) is MetaData


# -- TensorAttrs and attrs() -------------------------------------------------------------------
def test_attrs_describes_every_tensor_leaf():
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(3, 2, dtype=torch.int32)},
                     "s": "text"}, batch_size=[3])
    described = td.attrs()
    assert described.batch_size == torch.Size([]) and described.device is None
    leaf = described["n", "b"]
    assert type(leaf) is TensorAttrs
    assert (leaf.tgt_device, leaf.tgt_dtype, leaf.tgt_shape) == (
        torch.device("cpu"), torch.int32, torch.Size([3, 2]))
    assert described["s"] == "text"
    only_dtype = td.attrs(fields=("dtype",))["a"]
    assert (only_dtype.tgt_dtype, only_dtype.tgt_device, only_dtype.tgt_shape) == (
        torch.float32, None, None)
    with pytest.raises(ValueError, match="unknown fields \\['size'\\]"):
        td.attrs(fields=("size",))


def test_to_attrs_moves_and_casts_each_leaf_as_described():
    source = TensorDict({"a": torch.zeros(2, dtype=torch.float16, device="meta"),
                         "n": {"b": torch.zeros(2, dtype=torch.int64)}}, batch_size=[2])
    target = TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2)}, "c": torch.ones(2)},
                        batch_size=[2], device="cpu")
    out = target.to(source.attrs())
    assert (out["a"].device, out["a"].dtype) == (torch.device("meta"), torch.float16)
    assert out["n", "b"].dtype == torch.int64 and torch.equal(out["n", "b"], torch.ones(2).long())
    assert torch.equal(out["c"], target["c"])  # not described: kept
    assert out.device is None  # the leaves now live on two devices
    same_device = target.to(source.attrs(fields=("dtype",)))
    assert same_device.device == torch.device("cpu") and same_device["a"].dtype == torch.float16
    assert target.to(source.attrs(), inplace=True) is target and target["a"].is_meta


def test_tensor_attrs_is_a_tensorclass_of_three_fields():
    attrs = TensorAttrs(torch.device("cpu"), torch.float16, torch.Size([2]))
    assert [f.name for f in dataclasses.fields(TensorAttrs)] == [
        "tgt_device", "tgt_dtype", "tgt_shape"]
    assert type(attrs.tgt_shape) is torch.Size  # a tuple stays a Python value
    assert TensorAttrs().tgt_dtype is None


# -- __getattr__ ------------------------------------------------------------------------------
class Sample(TensorClass):
    x: torch.Tensor
    tag: str = "s"


def test_getattr_is_upstreams_fallback():
    sample = Sample(x=torch.arange(3.0), batch_size=[3])
    fallback = Sample.__getattr__
    assert torch.equal(fallback(sample, "x"), sample.x) and fallback(sample, "tag") == "s"
    assert fallback(sample, "batch_size") == torch.Size([3])
    assert type(fallback(sample, "clone")()) is Sample  # the forwarded method
    assert sample._batch_size == torch.Size([3])  # the TensorDict's own attribute
    with pytest.raises(AttributeError, match=r"'Sample' object has no attribute or field "
                                             r"'unknown'. Its fields are \['tag', 'x'\]"):
        sample.unknown  # noqa: B018
    with pytest.raises(AttributeError, match="^_private$"):
        sample._private  # noqa: B018
    assert not hasattr(sample, "__missing_dunder__")
    assert sample._is_non_tensor is False


def test_a_subclass_can_chain_its_own_fallback():
    """TorchRL's Trajectory: reads ``Cls.__getattr__`` at import and falls back on it."""

    class Trajectory(TensorClass["nocast"]):
        data: TensorDictBase

        def __post_init__(self) -> None:
            if not self.batch_size and self.data is not None and self.data.batch_dims:
                self.batch_size = self.data.batch_size

    inherited = Trajectory.__getattr__

    def chained(self: Trajectory, name: str) -> Any:
        try:
            return inherited(self, name)
        except AttributeError:
            if name.startswith("_"):
                raise
            return self.data.get(name, None) if self.data.get(name, None) is not None \
                else self.data.get(("next", name))

    Trajectory.__getattr__ = chained
    steps = TensorDict(obs=torch.arange(4.0), next={"reward": torch.ones(4)}, batch_size=[4])
    trajectory = Trajectory(steps)
    assert trajectory.batch_size == torch.Size([4]) and trajectory.data is steps
    assert torch.equal(trajectory.obs, steps["obs"])
    assert torch.equal(trajectory.reward, torch.ones(4))
    assert type(trajectory[:2]) is Trajectory and trajectory[:2].data.batch_size == (2,)
    assert type(lazy_stack([trajectory, trajectory])) is Trajectory
    assert Trajectory(None).data is None


# -- field names, extend, the private constructor ---------------------------------------------
@pytest.mark.parametrize("name", ["data", "fields", "tensorclass", "is_tensorclass"])
def test_fields_may_use_names_upstream_allows(name):
    cls = type("Named", (TensorClass,), {"__annotations__": {name: torch.Tensor}})
    obj = cls(**{name: torch.ones(2)}, batch_size=[2])
    assert torch.equal(getattr(obj, name), torch.ones(2))
    assert torch.equal(getattr(obj[1:], name), torch.ones(1))


@pytest.mark.parametrize("name", ["_batch_size", "extend", "to_dict", "_from_tensordict"])
def test_fields_may_not_hide_members(name):
    with pytest.raises(AttributeError, match=f"Attribute name {name} can't be used"):
        type("Named", (TensorClass,), {"__annotations__": {name: torch.Tensor}})


def test_extend_appends_to_the_lazy_stack_of_an_instance():
    stack = lazy_stack([Sample(x=torch.zeros(2), batch_size=[2])])
    with pytest.warns(DeprecationWarning, match="TensorClass.extend\\(\\) is deprecated"):
        assert stack.extend([Sample(x=torch.ones(2), batch_size=[2])]) is None
    with pytest.warns(DeprecationWarning):
        stack.extend(TensorDict(x=torch.full((2, 2), 2.0), tag="s", batch_size=[2, 2]))
    assert type(stack) is Sample and isinstance(stack._tensordict, LazyStackedTensorDict)
    assert stack.batch_size == torch.Size([4, 2])
    torch.testing.assert_close(stack.x[:, 0], torch.tensor([0.0, 1.0, 2.0, 2.0]))
    dense = Sample(x=torch.zeros(2), batch_size=[2])
    with pytest.warns(DeprecationWarning), pytest.raises(
            AttributeError, match="'TensorDict' object has no attribute 'extend'"):
        dense.extend(dense)


def test_extend_carries_non_tensor_fields_and_checks_batch_sizes():
    tagged = type("Tagged", (TensorClass,), {"__annotations__": {"x": torch.Tensor,
                                                                 "tags": list}})
    stack = lazy_stack([tagged(x=torch.zeros(()), tags=["q"]),
                        tagged(x=torch.ones(()), tags=["r"])])
    with pytest.warns(DeprecationWarning):
        stack.extend([tagged(x=torch.full((), 2.0), tags=["s"])])
    assert stack.batch_size == torch.Size([3]) and stack.tags == [["q"], ["r"], ["s"]]
    assert stack[2].tags == ["s"]
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="Batch sizes"):
        stack.extend([tagged(x=torch.ones(3), tags=["t"], batch_size=[3])])
    assert stack.batch_size == torch.Size([3]) and stack.tags == [["q"], ["r"], ["s"]]


def test_private_constructor_and_post_init_on_rebuild():
    calls = []

    class Checked(TensorClass["skip_post_init_on_rebuild"]):
        x: torch.Tensor

        def __post_init__(self) -> None:
            calls.append(self.x.shape)

    td = TensorDict(x=torch.zeros(2), batch_size=[2])
    Checked.from_tensordict(td)  # data from outside: __post_init__ runs
    assert len(calls) == 1
    rebuilt = Checked._from_tensordict(td)  # a rebuild: skipped
    assert type(rebuilt) is Checked and rebuilt.x is td["x"] and len(calls) == 1
    Checked._from_tensordict(td, rebuild=False)
    assert len(calls) == 2
    with pytest.raises(ValueError, match=r"the keys \['y'\] of the tensordict"):
        Checked._from_tensordict(TensorDict(y=torch.zeros(2), batch_size=[2]))


def test_a_lazy_stack_reads_nested_tensorclasses_as_their_class():
    class Node(TensorClass["nocast"]):
        value: torch.Tensor
        child: Any = None

    leaves = [Node(value=torch.tensor([float(i)]), batch_size=[1]) for i in range(2)]
    parents = [Node(value=torch.zeros(1), child=leaf, batch_size=[1]) for leaf in leaves]
    stacked = lazy_stack(parents)
    assert type(stacked) is Node and type(stacked.child) is Node
    torch.testing.assert_close(stacked.child.value, torch.tensor([[0.0], [1.0]]))


# -- casting rules met on the way -------------------------------------------------------------
def test_tuples_stay_python_values_and_scalars_fit_batched_instances():
    class Holder(TensorClass):
        anything: Any = None
        count: int = 0

    with pytest.warns(FutureWarning, match="stored as a 0-d tensor"):  # empty batch size
        assert Holder(anything=(2, 3)).anything == (2, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no 0-d tensor, so no FutureWarning either
        batched = Holder(anything=torch.Size([1]), count=4, batch_size=[2])
    assert batched.count == 4 and type(batched.anything) is torch.Size
    assert batched[0].count == 4

    @tensorclass(tensor_only=True)
    class Only:
        t: torch.Tensor

    assert torch.equal(Only(t=(1, 2)).t, torch.tensor([1, 2]))


def test_to_attrs_takes_no_device_or_dtype_beside():
    td = TensorDict(a=torch.zeros(2), batch_size=[2])
    with pytest.raises(TypeError, match="attrs"):
        td.to(td.attrs(), dtype=torch.float64)
    moved = td.to(td.double().attrs())  # each leaf as described
    assert moved["a"].dtype == torch.float64 and td["a"].dtype == torch.float32
