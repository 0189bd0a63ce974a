"""TensorDictBase carries the shared behaviour: every method TensorDict and lazy stacks
share is an attribute of TensorDictBase, patching it there changes what they run, and a
collection that implements only the primitives gets the whole API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
import torch

from tensordict import LazyStackedTensorDict, NonTensorStack, TensorDict, TensorDictBase
from tensordict._base import TensorCollection
from tensordict._collection import NO_DEFAULT, classes
from tensordict._lazy_dict import LazyDictMixin
from tensordict._lazy_index import LazyIndexMixin
from tensordict._lazy_ops import DensifyMixin
from tensordict._lazy_shape import LazyShapeMixin
from tensordict._map import MapMixin

PRIMITIVES = {"batch_size", "device", "names", "_get_str", "_set_str", "_del_str", "_keys_str",
              "_apply_nest", "_index", "_set_at_index"}


def _dense() -> TensorDict:
    return TensorDict(a=torch.zeros(3, 2), n={"b": torch.zeros(3)}, batch_size=[3])


def _lazy() -> LazyStackedTensorDict:
    return LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.zeros(2), n={"b": torch.zeros(())}) for _ in range(3)])


def _owner(cls: type, name: str) -> type:
    return next(k for k in cls.__mro__ if name in vars(k))


@pytest.mark.parametrize("make", [_dense, _lazy])
def test_patched_update_at_is_what_concrete_classes_run(make: Callable[[], Any]) -> None:
    td = make()
    original = TensorDictBase.update_at_
    calls = []

    def spy(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(type(self))
        return original(self, *args, **kwargs)

    with mock.patch.object(TensorDictBase, "update_at_", spy):
        td.update_at_({"a": torch.ones(2), ("n", "b"): torch.ones(())}, 1)
    assert calls == [type(td)]
    assert td["a"][1].tolist() == [1.0, 1.0] and td["a"][0].tolist() == [0.0, 0.0]
    assert td["n", "b"].tolist() == [0.0, 1.0, 0.0]
    assert TensorDictBase.update_at_ is original  # restored


@pytest.mark.parametrize("make", [_dense, _lazy])
def test_unbound_calls_through_the_base(make: Callable[[], Any]) -> None:
    td = make()
    TensorDictBase.update(td, {"c": torch.ones(3)})
    assert TensorDictBase.get(td, "c").tolist() == [1.0, 1.0, 1.0]
    selected = TensorDictBase.select(td, "a", ("n", "b"))
    assert set(selected.keys(True, True)) == {"a", ("n", "b")}
    assert torch.equal(TensorDictBase.clone(td)["a"], td["a"])


@pytest.mark.parametrize("cls", [TensorDict, LazyStackedTensorDict, NonTensorStack])
def test_shared_methods_are_the_bases(cls: type) -> None:
    """Every name a concrete class does not define itself (nor in its own mixins)
    resolves through TensorDictBase, i.e. is TensorDictBase's attribute."""
    own = {MapMixin, LazyDictMixin, DensifyMixin, LazyShapeMixin, LazyIndexMixin}
    shared = [name for name in dir(cls) if _owner(cls, name) in TensorDictBase.__mro__]
    assert {"update_at_", "depth", "apply", "tile", "sum", "state_dict", "save",
            "__add__", "to_module", "from_dict", "lock_"} <= set(shared)
    for name in shared:
        assert _owner(cls, name) is _owner(TensorDictBase, name), name
    assert not any(k in own for k in TensorDictBase.__mro__)


def test_primitives_stay_abstract() -> None:
    assert PRIMITIVES <= TensorDictBase.__abstractmethods__
    with pytest.raises(TypeError, match="abstract"):
        TensorDictBase()  # type: ignore[abstract]
    assert not TensorDict.__abstractmethods__ and not LazyStackedTensorDict.__abstractmethods__


def test_registry_holds_the_core_classes() -> None:
    assert classes.TensorDictBase is TensorDictBase
    assert classes.TensorDict is TensorDict
    assert classes.LazyStackedTensorDict is LazyStackedTensorDict
    assert classes.NonTensorStack is NonTensorStack
    assert issubclass(TensorDictBase, TensorCollection)
    with pytest.raises(AttributeError):
        classes.Other = object  # type: ignore[attr-defined]  (only the core classes)


class _Wrapped(TensorDictBase):
    """A third-party collection (like a PersistentTensorDict stand-in): the primitives
    (and reads, and ``_validate_value``: the stored form of a value written at a key),
    answered by an inner TensorDict."""

    def __init__(self, inner: TensorDict) -> None:
        self._inner = inner
        self._is_locked = False

    batch_size = property(lambda self: self._inner.batch_size)
    device = property(lambda self: self._inner.device)
    names = property(lambda self: self._inner.names)

    def _get_str(self, key: str, default: Any = NO_DEFAULT) -> Any:
        return self._inner._get_str(key, default)

    def _set_str(self, key: str, value: Any, *, inplace: bool, validated: bool,
                 non_blocking: bool = False) -> _Wrapped:
        self._inner._set_str(key, value, inplace=inplace, validated=validated,
                             non_blocking=non_blocking)
        return self

    def _del_str(self, key: str) -> None:
        self._inner._del_str(key)

    def _keys_str(self) -> Iterator[str]:
        return self._inner._keys_str()

    def _apply_nest(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        return self._inner._apply_nest(fn, *others, **kwargs)

    def _index(self, index: Any) -> Any:
        return self._inner._index(index)

    def _set_at_index(self, index: Any, value: Any) -> None:
        self._inner._set_at_index(index, value)

    def _propagate_lock(self, locked: bool) -> None:
        self._is_locked = locked
        self._inner._propagate_lock(locked)

    def __getitem__(self, index: Any) -> Any:
        return self._inner[index]

    def _validate_value(self, value: Any, key: str, non_blocking: bool = False) -> Any:
        return self._inner._validate_value(value, key, non_blocking)


def test_a_collection_of_primitives_gets_the_shared_api() -> None:
    wrapped = _Wrapped(_dense())
    wrapped.update({"c": torch.ones(3)})
    wrapped.update_at_({"a": torch.ones(2)}, 2)
    assert wrapped._inner["c"].tolist() == [1.0, 1.0, 1.0]
    assert wrapped._inner["a"][2].tolist() == [1.0, 1.0] and not wrapped._inner["a"][:2].any()
    assert set(wrapped.keys(True, True)) == {"a", "c", ("n", "b")}
    assert wrapped.get(("n", "b")).shape == (3,) and ("n", "b") in wrapped
    assert isinstance(wrapped.unsqueeze(0), TensorDict)
    assert (wrapped + 1)["a"].sum().item() == 2 * 3 + 2
    assert wrapped.to_dict()["n"]["b"].tolist() == [0.0, 0.0, 0.0]
    assert wrapped.lock_().is_locked and wrapped._inner.is_locked
    with pytest.raises(RuntimeError, match="locked"):
        wrapped.set("d", torch.zeros(3))
