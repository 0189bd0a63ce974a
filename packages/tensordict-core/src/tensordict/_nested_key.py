"""Nested keys: a key is a string or a non-empty, possibly nested tuple of strings.

``unravel_key`` and ``unravel_key_to_tuple`` are lenient, like upstream's compiled ones:
a tuple holding anything else (an int, an empty tuple...) unravels to ``()``. Internal
code that needs a valid path uses :func:`key_to_path`, which raises.

Example:
    >>> unravel_key(("a", ("b", ("c",))))
    ('a', 'b', 'c')
    >>> unravel_key(("a",)), unravel_key((0,))
    ('a', ())
    >>> isinstance(("a", ("b",)), NestedKey), isinstance((0,), NestedKey)
    (True, False)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any


class _NestedKeyMeta(type):
    """``isinstance(key, NestedKey)`` tells whether ``key`` is a valid nested key."""

    def __instancecheck__(cls, instance: Any) -> bool:
        return bool(_flatten(instance))


if TYPE_CHECKING:  # for type checkers, the union it stands for
    NestedKey = str | tuple["NestedKey", ...]
else:

    class NestedKey(metaclass=_NestedKeyMeta):
        """A string or a non-empty, possibly nested tuple of strings; usable in
        annotations and with ``isinstance``.

        >>> isinstance("a", NestedKey), isinstance(("a", ("b",)), NestedKey)
        (True, True)
        >>> isinstance(("a", 1), NestedKey), isinstance((), NestedKey)
        (False, False)
        """


class InvalidKeyError(KeyError, TypeError, RuntimeError):
    """A key that is neither a string nor a non-empty (nested) tuple of strings (also the
    RuntimeError upstream's ``select``/``exclude`` raise for one)."""

    def __str__(self) -> str:
        return str(self.args[0])


def _flatten(key: Any) -> tuple[str, ...]:
    """The strings of ``key`` in order, or ``()`` if ``key`` is not a nested key."""
    if isinstance(key, str):
        return (key,)
    if not isinstance(key, tuple):
        return ()
    return _flatten_tuple(key)


def _flatten_tuple(key: tuple[Any, ...]) -> tuple[str, ...]:
    """:func:`_flatten` of a tuple."""
    out: list[str] = []
    for part in key:
        cls = part.__class__
        if cls is str:
            out.append(part)
            continue
        if cls is tuple:  # a flat inner tuple (the usual nesting) is taken as it is
            strings = part if is_flat_path(part) else _flatten_tuple(part)
        else:
            strings = _flatten(part)
        if not strings:
            return ()
        out += strings
    return tuple(out)


def is_flat_path(key: tuple[Any, ...]) -> bool:
    """Whether every part of the tuple ``key`` is a string (no nesting, no other type).

    >>> is_flat_path(("a", "b")), is_flat_path(("a", ("b",))), is_flat_path(())
    (True, False, True)
    """
    for part in key:
        if part.__class__ is not str:
            return False
    return True


def key_to_path(key: NestedKey) -> tuple[str, ...]:
    """``key`` as a flat tuple of strings; raises :class:`InvalidKeyError` (a KeyError)
    for anything that is not a nested key.

    >>> key_to_path(("a", ("b",))), key_to_path("a")
    (('a', 'b'), ('a',))
    """
    path = _flatten(key)
    if not path:
        raise InvalidKeyError(
            "Only NestedKeys are supported: a key must be a string or a non-empty, possibly "
            f"nested tuple of strings. Got key {key!r}."
        )
    return path


def unravel_key_to_tuple(key: NestedKey) -> tuple[str, ...]:
    """``key`` as a flat tuple of strings (``"a"`` -> ``("a",)``), ``()`` if it is not a
    nested key.

    >>> unravel_key_to_tuple(("a", ("b",))), unravel_key_to_tuple(("a", 0))
    (('a', 'b'), ())
    """
    return _flatten(key)


def unravel_key(key: NestedKey) -> NestedKey:
    """``key`` with nested tuples flattened; a 1-tuple becomes its string, a tuple that is
    not a nested key becomes ``()``. Raises RuntimeError for neither a string nor a tuple.

    >>> unravel_key((("a",), "b")), unravel_key(("a", ()))
    (('a', 'b'), ())
    """
    cls = key.__class__
    if cls is str:
        return key
    if cls is tuple:  # the common case, a flat tuple of strings: returned as is
        for part in key:  # (is_flat_path inlined: TorchRL calls this in its step loops)
            if part.__class__ is not str:
                break
        else:
            return key[0] if len(key) == 1 else key
        path = _flatten_tuple(key)
    elif isinstance(key, str):
        return key
    elif isinstance(key, tuple):
        path = _flatten_tuple(key)
    else:
        raise RuntimeError(_bad_key(key))
    return path[0] if len(path) == 1 else path


def _bad_key(key: Any) -> str:
    """The message of the RuntimeError for ``key``, not a nested key (upstream's words first)."""
    return (f"key should be a Sequence<NestedKey>, got {key!r}: a key is a string or a "
            "non-empty, possibly nested tuple of strings")


def unravel_key_list(keys: Iterable[NestedKey]) -> list[NestedKey]:
    """Every key of the list or tuple ``keys`` unravelled; RuntimeError for an entry that
    is not a nested key.

    >>> unravel_key_list(["a", ("b", ("c",)), ("d",)])
    ['a', ('b', 'c'), 'd']
    """
    if not isinstance(keys, (list, tuple)):
        raise TypeError("unravel_key_list(): incompatible function arguments. Expected a list "
                        f"or a tuple of keys, got {type(keys)}.")
    out: list[NestedKey] = []
    for key in keys:
        cls = key.__class__
        if cls is str:
            out.append(key)
            continue
        if cls is tuple and len(key) == 2 and key[0].__class__ is str and \
                key[1].__class__ is str:  # the common ("a", "b") pair
            out.append(key)
            continue
        unravelled = unravel_key(key)  # RuntimeError for other types than str and tuple
        if unravelled == ():
            raise RuntimeError(_bad_key(key))
        out.append(unravelled)
    return out


def is_nested_key(key: object) -> bool:
    """True for a string or a non-empty (nested) tuple of strings.

    >>> is_nested_key(("a", "b")), is_nested_key(["a"])
    (True, False)
    """
    return bool(_flatten(key))
