"""Nested keys: a key is a string or a (possibly nested) tuple of strings.

Example:
    >>> unravel_key(("a", ("b", ("c",))))
    ('a', 'b', 'c')
    >>> unravel_key(("a",))
    'a'
"""

from __future__ import annotations

from collections.abc import Iterable

NestedKey = str | tuple["NestedKey", ...]


class InvalidKeyError(KeyError, TypeError):
    """A key that is neither a string nor a non-empty (nested) tuple of strings."""

    def __str__(self) -> str:
        return str(self.args[0])


def _flatten_into(key: object, out: list[str]) -> None:
    if isinstance(key, str):
        out.append(key)
    elif isinstance(key, tuple):
        for part in key:
            _flatten_into(part, out)
    else:
        raise InvalidKeyError(
            f"keys must be strings or non-empty tuples of strings, got {key!r} "
            f"of type {type(key).__name__}"
        )


def unravel_key_to_tuple(key: NestedKey) -> tuple[str, ...]:
    """``key`` as a flat tuple of strings: ``"a"`` -> ``("a",)``.

    >>> unravel_key_to_tuple(("a", ("b",)))
    ('a', 'b')
    """
    if key.__class__ is str:
        return (key,)
    out: list[str] = []
    _flatten_into(key, out)
    if not out:
        raise InvalidKeyError("an empty tuple is not a valid key")
    return tuple(out)


def unravel_key(key: NestedKey) -> NestedKey:
    """``key`` with nested tuples flattened; a 1-tuple becomes its string.

    >>> unravel_key((("a",), "b"))
    ('a', 'b')
    """
    if key.__class__ is str:
        return key
    parts = unravel_key_to_tuple(key)
    return parts[0] if len(parts) == 1 else parts


def unravel_key_list(keys: Iterable[NestedKey]) -> list[NestedKey]:
    """Every key of ``keys`` unravelled.

    >>> unravel_key_list(["a", ("b", ("c",)), ("d",)])
    ['a', ('b', 'c'), 'd']
    """
    return [unravel_key(key) for key in keys]


def is_nested_key(key: object) -> bool:
    """True for a string or a non-empty (nested) tuple of strings."""
    try:
        unravel_key_to_tuple(key)  # type: ignore[arg-type]
    except (TypeError, KeyError):
        return False
    return True
