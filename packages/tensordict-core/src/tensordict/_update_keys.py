"""Which entries ``keys_to_update`` selects, for every update method.

The keys are unravelled first (``(("a",), "b")`` is ``("a", "b")``) and a key selects
its whole subtree. ``update`` walks the source from the top and takes an entry when a key
runs through it or lies above it: where this TensorDict holds a sub-TensorDict there it
descends, elsewhere it writes the whole entry (so levels this TensorDict lacks are
created whole, as upstream). The in-place updates (``update_``, ``update_at_``) take the
leaves under a key.

Example:
    >>> paths = update_paths([("agents", "obs"), "x"])
    >>> sorted(paths)
    [('agents', 'obs'), ('x',)]
    >>> runs_through(paths, ("agents",)), selects(paths, ("agents",))
    (True, False)
    >>> selects(paths, ("agents", "obs", "deep")), paths_below(paths, ("agents",))
    (True, frozenset({('obs',)}))
"""

from __future__ import annotations

from collections.abc import Sequence

from tensordict._nested_key import NestedKey, unravel_key_list

#: the selected keys as flat tuples of strings
Paths = frozenset[tuple[str, ...]]


def update_paths(keys_to_update: Sequence[NestedKey] | None) -> Paths | None:
    """``keys_to_update`` as flat paths (None: every entry); TypeError for a single string
    or anything but a list or tuple, RuntimeError for an entry that is not a nested key
    (upstream's classes)."""
    if keys_to_update is None:
        return None
    return frozenset(key if key.__class__ is tuple else (key,)
                     for key in unravel_key_list(keys_to_update))


def runs_through(paths: Paths, path: tuple[str, ...]) -> bool:
    """Whether a key of ``paths`` lies under ``path`` or above it (``update`` takes it)."""
    depth = len(path)
    return any(key[:depth] == path or path[:len(key)] == key for key in paths)


def selects(paths: Paths, path: tuple[str, ...]) -> bool:
    """Whether a key of ``paths`` is ``path`` or lies above it: ``path`` is selected whole."""
    return any(path[:len(key)] == key for key in paths)


def paths_below(paths: Paths, path: tuple[str, ...]) -> Paths | None:
    """The keys relative to the sub-collection at ``path`` (None: all of it, when a key
    selects it whole; empty when none reaches into it)."""
    if selects(paths, path):
        return None
    depth = len(path)
    return frozenset(key[depth:] for key in paths if key[:depth] == path)
