"""Attributes of upstream's module paths that are looked up on access.

The one mechanism behind two needs of the facades (see CONTRIBUTING.md, "Upstream
paths"):

- a name that is both a module and an attribute: ``tensordict.tensorclass`` is the
  decorator as an attribute and a module path for ``from tensordict.tensorclass import
  NonTensorData``; ``tensordict.memmap`` is a function and the memmap subpackage. The
  attribute wins, as upstream's: importing the module does not rebind it (the import
  system's ``setattr`` on the package is ignored), and the module stays reachable by
  import statements;
- names a facade takes from elsewhere that may not be there at import time
  (``tensordict.base.from_h5``, contributed by a plugin).

Each such name is a property of the module's class, not a module ``__getattr__``:
``from tensordict.base import x`` asks the module for ``__path__``, which then runs no
Python code.

Example:
    >>> import sys, types
    >>> sys.modules["demo_path"] = types.ModuleType("demo_path")
    >>> resolve_on_access("demo_path", ["answer"], lambda name: 42)
    >>> sys.modules["demo_path"].answer
    42
    >>> sys.modules["demo_path"].answer = types.ModuleType("demo_path.answer")  # ignored
    >>> sys.modules["demo_path"].answer
    42
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Iterable
from typing import Any


def package_attribute(name: str) -> Any:
    """``tensordict.<name>``: the package's name, core's or a plugin's."""
    return getattr(sys.modules["tensordict"], name)


def resolve_on_access(module_name: str, names: Iterable[str],
                      resolve: Callable[[str], Any] = package_attribute) -> None:
    """Make each of ``names`` an attribute of the module ``module_name`` whose value is
    ``resolve(name)`` (by default the package's), looked up on every access; binding a
    submodule over it is a no-op.

    ``resolve`` raises AttributeError (or the missing-plugin ImportError) for a name it
    cannot provide. The module's class is swapped once, at its import.
    """
    module = sys.modules[module_name]
    attributes = {name: _resolved(name, resolve) for name in names}
    module.__class__ = type(type(module).__name__, (type(module),),
                            {"__slots__": (), "__module__": module_name, **attributes})


def _resolved(name: str, resolve: Callable[[str], Any]) -> property:
    def get(module: types.ModuleType) -> Any:
        return resolve(name)

    def set_(module: types.ModuleType, value: Any) -> None:
        if not isinstance(value, types.ModuleType):
            raise AttributeError(f"{module.__name__}.{name} is looked up on access: "
                                 f"it cannot be set")

    return property(get, set_, doc=f"``{name}``, looked up on access")
