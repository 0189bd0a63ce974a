"""The JSON encoding of non-tensor values in ``meta.json``.

JSON holds ``None``, booleans, numbers, strings, lists and dicts with string keys. A few
more values are common in non-tensor data; they are written as tagged objects in strict
JSON (never a bare ``NaN``) so that they load back exactly, without pickle:

* ``nan``, ``inf``, ``-inf``: ``{"__tensordict__": "float", "value": "nan"}``
* a tuple: ``{"__tensordict__": "tuple", "value": [...]}``
* bytes: ``{"__tensordict__": "bytes", "value": "<base64>"}``
* a dict that holds the key ``"__tensordict__"``: ``{"__tensordict__": "dict", "value": {...}}``

Anything else (a set, an object, a dict with non-string keys, a tuple subclass...) raises
:class:`NotRepresentable`; the caller pickles it when allowed. What upstream tensordict
writes (a bare ``NaN``, lists) decodes as it is.

Example:
    >>> encode({"t": (1, 2), "b": b"hi"})
    {'t': {'__tensordict__': 'tuple', 'value': [1, 2]}, 'b': {'__tensordict__': 'bytes', ...}}
    >>> decode(encode([(b"x", float("-inf"))]))
    [(b'x', -inf)]
"""

from __future__ import annotations

import base64
import math
from typing import Any

TAG = "__tensordict__"
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class NotRepresentable(TypeError):
    """A value (or a part of it) has no JSON encoding; ``kind`` is its type's name."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"a {kind} value has no JSON encoding")
        self.kind = kind


def encode(value: Any) -> Any:
    """``value`` as JSON-ready Python data (NotRepresentable if it has no encoding).

    >>> encode([1, "a", None, float("nan")])
    [1, 'a', None, {'__tensordict__': 'float', 'value': 'nan'}]
    """
    try:
        return _encode(value)
    except RecursionError:
        raise NotRepresentable("self-referencing or too deeply nested") from None


def _encode(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {TAG: "float", "value": "nan" if math.isnan(value) else str(value)}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if type(value) is tuple:
        return {TAG: "tuple", "value": [_encode(item) for item in value]}
    if type(value) is bytes:
        return {TAG: "bytes", "value": base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise NotRepresentable(f"{type(value).__name__} with non-string keys")
        encoded = {key: _encode(item) for key, item in value.items()}
        return {TAG: "dict", "value": encoded} if TAG in value else encoded
    raise NotRepresentable(type(value).__name__)


def decode(data: Any) -> Any:
    """The value :func:`encode` gave ``data`` for (plain JSON data decodes as itself).

    >>> decode({"__tensordict__": "float", "value": "inf"}), decode({"k": [1]})
    (inf, {'k': [1]})
    """
    if isinstance(data, list):
        return [decode(item) for item in data]
    if not isinstance(data, dict):
        return data
    kind, value = data.get(TAG), data.get("value")
    if len(data) == 2 and "value" in data:
        if kind == "float" and value in _FLOATS:
            return _FLOATS[value]
        if kind == "tuple" and isinstance(value, list):
            return tuple(decode(item) for item in value)
        if kind == "bytes" and isinstance(value, str):
            return base64.b64decode(value.encode("ascii"), validate=True)
        if kind == "dict" and isinstance(value, dict):
            return {key: decode(item) for key, item in value.items()}
    return {key: decode(item) for key, item in data.items()}
