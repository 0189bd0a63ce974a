"""Tensorclasses kept in a store: the class path recorded under ``__tensorclass__`` when a
tensorclass is written, and how :meth:`TensorDictStore.from_store` finds the class again.

A recorded path is resolved only in the modules this process has imported already:
the path comes from the server, and importing a module runs its code. A class the user
names (``tensorclass_cls="my_pkg.MyClass"``) is imported as asked.

>>> class_of(None, None) is None
True
"""

from __future__ import annotations

import importlib
import sys
import warnings
from typing import Any

#: the Redis key (under the store's key space) holding the class path
TENSORCLASS_KEY = "__tensorclass__"


def class_path(cls: type) -> str:
    """``module.QualName`` of ``cls``, as recorded in the store."""
    return f"{cls.__module__}.{cls.__qualname__}"


def class_of(tensorclass_cls: type | str | None, recorded: str | None) -> type | None:
    """The tensorclass a store opens as: ``tensorclass_cls`` (a class, or a dotted path
    imported if need be), else the ``recorded`` path found among the imported modules
    (None, with a warning, where its module is not imported), else None."""
    if tensorclass_cls is not None:
        found = _lookup(tensorclass_cls, allow_import=True) \
            if isinstance(tensorclass_cls, str) else tensorclass_cls
    elif recorded:
        found = _lookup(recorded, allow_import=False)
        if found is None:
            warnings.warn(f"the store holds a {recorded} (a tensorclass) but its module is "
                          "not imported: opened as a TensorDictStore. Import the module, or "
                          "pass tensorclass_cls=, to open it as that class.", stacklevel=3)
            return None
    else:
        return None
    if not (isinstance(found, type) and getattr(found, "_is_tensorclass", False)):
        raise TypeError(f"Expected a TensorClass type, got {found!r}")
    return found


def _lookup(path: str, allow_import: bool) -> Any:
    """The object at the dotted ``path``: its longest prefix naming a module imported
    already (or, with ``allow_import``, one that imports), then attributes. None where no
    module of the path is imported; AttributeError where the module lacks the name."""
    if not isinstance(path, str):
        raise TypeError(f"tensorclass_cls must be a tensorclass or its dotted path, got "
                        f"{path!r}")
    parts = path.split(".")
    for split in range(len(parts) - 1, 0, -1):
        name = ".".join(parts[:split])
        module = sys.modules.get(name)
        if module is None and allow_import:
            try:
                module = importlib.import_module(name)
            except ModuleNotFoundError as err:
                if err.name != name or split == 1:
                    raise
                continue  # the prefix may name a class inside a shorter module path
        if module is not None:
            found: Any = module
            for attr in parts[split:]:
                found = getattr(found, attr)
            return found
    if allow_import:
        raise ValueError(f"tensorclass_cls={path!r} is no dotted path module.ClassName")
    return None
