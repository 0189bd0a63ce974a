"""Attributes of upstream's module paths that are looked up on access.

The one mechanism behind the facades' two needs (see CONTRIBUTING.md, "Upstream paths"):

- a name that is both a module and an attribute. For a single module,
  ``tensordict.tensorclass``, the attribute wins as upstream's: the package's
  ``tensorclass`` is the decorator, looked up on access, and importing the module does not
  rebind it (the import system's ``setattr`` is ignored); ``from tensordict.tensorclass
  import NonTensorData`` still imports the module. For a package with submodules,
  ``tensordict.memmap``, the attribute must stay the module (``import
  tensordict.memmap._atomic as m`` walks attributes), so the module is made callable as
  the function (``call``);
- names a facade takes from elsewhere that may not be there at import time
  (``tensordict.base.from_h5``, contributed by a plugin).

Either way the module's class is swapped once, at its import, for a subclass carrying
properties (not a module ``__getattr__``: ``from tensordict.base import x`` asks the
module for ``__path__``, which then runs no Python code) and ``__call__``.

Example:
    >>> import sys, types
    >>> sys.modules["demo_path"] = types.ModuleType("demo_path")
    >>> resolve_on_access("demo_path", ["answer"], lambda name: 42, call=abs)
    >>> sys.modules["demo_path"].answer, sys.modules["demo_path"](-1)
    (42, 1)
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


def resolve_on_access(module_name: str, names: Iterable[str] = (),
                      resolve: Callable[[str], Any] = package_attribute, *,
                      call: Callable[..., Any] | None = None) -> None:
    """Make each of ``names`` an attribute of the module ``module_name`` whose value is
    ``resolve(name)`` (by default the package's), looked up on every access; binding a
    submodule over it is a no-op. With ``call``, calling the module calls it.

    >>> import sys, types
    >>> sys.modules["old_path"] = types.ModuleType("old_path")
    >>> resolve_on_access("old_path", ["from_dict"], call=len)
    >>> import old_path
    >>> old_path.from_dict is package_attribute("from_dict"), old_path([1, 2])
    (True, 2)

    ``resolve`` raises AttributeError (or the missing-plugin ImportError) for a name it
    cannot provide. The module's class is swapped once, at its import.
    """
    module = sys.modules[module_name]
    attributes: dict[str, Any] = {name: _resolved(name, resolve) for name in names}
    if call is not None:
        attributes["__call__"] = lambda module, *args, **kwargs: call(*args, **kwargs)
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
