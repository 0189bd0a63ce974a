"""Hook specifications: everything a plugin can contribute to tensordict.

A plugin is a module or object with functions marked by :data:`tensordict.plugins.hookimpl`
whose names match the specs below. Plugins are found through the ``tensordict``
entry-point group (loaded lazily, the first time a plugin-provided feature is asked
for) or registered at run time with :func:`tensordict.plugins.register`.

Each hook is called with no arguments and returns a mapping; the mappings of every
registered plugin are merged, and two plugins claiming the same name is an error.

Example, a plugin module ``my_plugin.py``::

    from tensordict.plugins import hookimpl

    @hookimpl
    def tensordict_methods():
        return {"double_all": lambda td: td.apply(lambda x: x * 2)}

and in its ``pyproject.toml``::

    [project.entry-points.tensordict]
    my_plugin = "my_plugin"
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import pluggy

hookspec = pluggy.HookspecMarker("tensordict")

# --------------------------------------------------------------------------------------
# Names and methods
# --------------------------------------------------------------------------------------


@hookspec
def tensordict_top_level_names() -> Mapping[str, Any]:
    """Names this plugin adds to the ``tensordict`` namespace.

    Called the first time ``tensordict.<name>`` is looked up and not found in core.

    Returns:
        A mapping from attribute name to the object, or to a ``"module:attribute"``
        string that is imported only when the name is first used (keeps
        ``import tensordict`` fast).

    Example:
        >>> @hookimpl  # doctest: +SKIP
        ... def tensordict_top_level_names():
        ...     return {"MemoryMappedTensor": "tensordict.memmap:MemoryMappedTensor"}
    """


@hookspec
def tensordict_methods() -> Mapping[str, Callable[..., Any]]:
    """Methods this plugin adds to every tensor collection (TensorDict, lazy stacks,
    tensorclasses).

    Called the first time an attribute is missing on a tensor collection. A plain
    function is bound as an instance method (it receives the collection first); wrap
    it in :func:`classmethod` to make a class-level constructor such as
    ``TensorDict.load_memmap``.

    Returns:
        A mapping from method name to function.

    Example:
        >>> @hookimpl  # doctest: +SKIP
        ... def tensordict_methods():
        ...     return {"double_all": lambda td: td.apply(lambda x: x * 2)}
    """


# --------------------------------------------------------------------------------------
# torch integration
# --------------------------------------------------------------------------------------


@hookspec
def tensordict_torch_functions() -> Mapping[Callable[..., Any], Callable[..., Any]]:
    """``torch`` functions this plugin teaches ``TensorDict.__torch_function__``.

    Called the first time a torch function that core does not handle receives a
    tensor collection.

    Returns:
        A mapping from the torch function (e.g. ``torch.softmax``) to a handler called
        with the same ``*args, **kwargs``.

    Example:
        >>> @hookimpl  # doctest: +SKIP
        ... def tensordict_torch_functions():
        ...     return {torch.sigmoid: lambda td: td.apply(torch.sigmoid)}
    """


# --------------------------------------------------------------------------------------
# Storage
# --------------------------------------------------------------------------------------


@runtime_checkable
class StorageBackend(Protocol):
    """What a storage backend offers (see :func:`tensordict_storage_backends`).

    ``td.save(path, *args, backend=name, **kwargs)`` calls ``save(td, path, *args,
    **kwargs)`` and ``TensorDict.load(path, *args, **kwargs)`` calls ``load(path, *args,
    **kwargs)`` of the backend whose ``can_load(path)`` is true.

    A backend may also offer ``from_schema(prototype, *, device=None, **kwargs)``, which
    ``TensorDict.from_schema(..., storage=name, **kwargs)`` calls: a new collection stored
    by the backend with the keys, shapes and dtypes of ``prototype`` (whose tensors are
    zeros expanded from one element, so they take no memory), filled with zeros.

    >>> class Discard:
    ...     def save(self, td, path): return td
    ...     def load(self, path): raise FileNotFoundError(path)
    ...     def can_load(self, path): return False
    >>> isinstance(Discard(), StorageBackend)
    True
    """

    def save(self, td: Any, path: Any, *args: Any, **kwargs: Any) -> Any:
        """Write ``td`` under ``path`` and return the saved collection."""

    def load(self, path: Any, *args: Any, **kwargs: Any) -> Any:
        """Read the collection saved under ``path``."""

    def can_load(self, path: Any) -> bool:
        """Whether ``path`` holds data written by this backend."""


@hookspec
def tensordict_storage_backends() -> Mapping[str, StorageBackend]:
    """Storage formats that ``td.save(path, backend=...)`` and ``TensorDict.load``
    dispatch to.

    Returns:
        A mapping from backend name to an object following
        :class:`StorageBackend` (``save``, ``load`` and
        ``can_load``).

    Example:
        >>> @hookimpl  # doctest: +SKIP
        ... def tensordict_storage_backends():
        ...     return {"memmap": MemmapBackend()}
    """
