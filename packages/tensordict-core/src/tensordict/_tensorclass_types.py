"""What type checkers see of ``tensordict.tensorclass`` and ``tensordict.TensorClass``.

The tensordict-tensorclass plugin provides both at run time (core imports no plugin);
``tensordict/__init__.py`` imports these declarations only under ``TYPE_CHECKING``, so
that a type checker sees the fields of a tensorclass and the keyword-only
``batch_size``, ``device`` and ``names`` of its constructor.

>>> from tensordict._tensorclass_types import TensorClass
>>> sorted(TensorClass.__annotations__)
['batch_size', 'device', 'names']
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from typing import Any, TypeVar, overload

C = TypeVar("C", bound=type)


@overload
@typing.dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def tensorclass(cls: C, /) -> C: ...


@overload
def tensorclass(cls: None = None, /, **options: Any) -> Callable[[C], C]: ...


def tensorclass(cls: Any = None, /, **options: Any) -> Any:
    """Declared for type checkers: the plugin's ``tensorclass`` decorator."""
    raise NotImplementedError("tensordict.tensorclass comes from tensordict-tensorclass")


@typing.dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
class _TensorClassMeta(type):
    def __getitem__(cls, flags: str | tuple[str, ...]) -> type: ...


class TensorClass(metaclass=_TensorClassMeta):
    """Declared for type checkers: the plugin's ``TensorClass`` base."""

    batch_size: Any = dataclasses.field(default=None, kw_only=True)
    device: Any = dataclasses.field(default=None, kw_only=True)
    names: Any = dataclasses.field(default=None, kw_only=True)
