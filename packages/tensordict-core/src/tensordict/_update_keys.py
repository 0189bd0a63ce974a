"""Which entries ``keys_to_update`` selects, for every update method.

The keys are unravelled first (``(("a",), "b")`` is ``("a", "b")``) and a key selects
its whole subtree. ``update`` walks the source from the top and takes an entry when a key
runs through it or lies above it: where this TensorDict holds a sub-TensorDict there it
descends, elsewhere it writes the whole entry (so levels this TensorDict lacks are
created whole, as upstream). The in-place updates (``update_``, ``update_at_``) take the
leaves under a key.

Example:
    >>> keys = update_paths([("agents", "obs"), "x"])
    >>> sorted(keys.paths)
    [('agents', 'obs'), ('x',)]
    >>> keys.runs_through(("agents",)), keys.selects(("agents",))
    (True, False)
    >>> keys.selects(("agents", "obs", "deep")), keys.below(("agents",)).paths
    (True, frozenset({('obs',)}))
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tensordict._nested_key import NestedKey, unravel_key_list


class KeyPaths:
    """Keys as flat paths, each entry matched by set lookups (an update asks for every
    entry of its source)."""

    __slots__ = ("paths", "_prefixes")

    def __init__(self, paths: Iterable[tuple[str, ...]]) -> None:
        self.paths = frozenset(paths)
        self._prefixes = frozenset(path[:depth] for path in self.paths
                                   for depth in range(1, len(path) + 1))

    def selects(self, path: tuple[str, ...]) -> bool:
        """Whether a key is ``path`` or lies above it: ``path`` is selected whole."""
        paths = self.paths
        return any(path[:depth] in paths for depth in range(1, len(path) + 1))

    def runs_through(self, path: tuple[str, ...]) -> bool:
        """Whether a key lies under ``path`` or above it (``update`` takes it)."""
        if path in self._prefixes:
            return True
        paths = self.paths
        return any(path[:depth] in paths for depth in range(1, len(path)))

    def below(self, path: tuple[str, ...]) -> KeyPaths | None:
        """The keys relative to the sub-collection at ``path`` (None: all of it, when a key
        selects it whole; no keys when none reaches into it)."""
        if self.selects(path):
            return None
        depth = len(path)
        return KeyPaths(key[depth:] for key in self.paths if key[:depth] == path)


def update_paths(keys_to_update: Sequence[NestedKey] | None) -> KeyPaths | None:
    """``keys_to_update`` as :class:`KeyPaths` (None: every entry); TypeError for a single
    string or anything but a list or tuple, RuntimeError for an entry that is not a nested
    key (upstream's classes)."""
    if keys_to_update is None:
        return None
    return KeyPaths(key if key.__class__ is tuple else (key,)
                    for key in unravel_key_list(keys_to_update))
