"""Deprecation warnings that name the release removing a feature and its replacement.

Example:
    >>> from tensordict.utils import deprecation_message
    >>> deprecation_message("old()", removal="0.17", replacement="new()")
    'old() is deprecated and will be removed in TensorDict 0.17. Use new() instead.'
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


def deprecation_message(what: str, *, removal: str, replacement: str | None = None) -> str:
    """The text of the warning :func:`warn_deprecated` emits for ``what``.

    Args:
        what: the deprecated name, as users write it.

    Keyword Args:
        removal: the release that removes ``what``.
        replacement: what to use instead, if anything.

    >>> deprecation_message("tensordict.utils.cache", removal="0.17")
    'tensordict.utils.cache is deprecated and will be removed in TensorDict 0.17.'
    """
    message = f"{what} is deprecated and will be removed in TensorDict {removal}."
    if replacement is not None:
        message += f" Use {replacement} instead."
    return message


def warn_deprecated(what: str, *, removal: str, replacement: str | None = None,
                    stacklevel: int = 2) -> None:
    """Emit a :class:`DeprecationWarning` saying when ``what`` goes away.

    ``stacklevel`` counts from the caller of this function, as in :func:`warnings.warn`:
    the default ``2`` points at the code calling the deprecated function.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_deprecated("old()", removal="0.17", replacement="new()")
    >>> caught[0].category.__name__, str(caught[0].message)[:31]
    ('DeprecationWarning', 'old() is deprecated and will be')
    """
    warnings.warn(deprecation_message(what, removal=removal, replacement=replacement),
                  DeprecationWarning, stacklevel=stacklevel + 1)


def deprecated(what: str, *, removal: str, replacement: str | None = None
               ) -> Callable[[_F], _F]:
    """Decorate a function or method so that each call warns as :func:`warn_deprecated`.

    >>> import warnings
    >>> @deprecated("old()", removal="0.17", replacement="new()")
    ... def old(x):
    ...     return x + 1
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old(1)
    2
    >>> caught[0].category.__name__
    'DeprecationWarning'
    """

    def decorate(function: _F) -> _F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            warn_deprecated(what, removal=removal, replacement=replacement, stacklevel=2)
            return function(*args, **kwargs)

        return wrapper  # type: ignore[return-value]

    return decorate


def warn_deprecated_env_var(name: str, value: str, *, removal: str,
                            replacement: str | None = None) -> None:
    """Emit a :class:`FutureWarning` (shown by default) saying that the environment
    variable setting ``name=value`` goes away; call it where the variable is read.

    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_deprecated_env_var("LIST_TO_STACK", "0", removal="0.17")
    >>> str(caught[0].message)
    'LIST_TO_STACK=0 is deprecated and will be removed in TensorDict 0.17.'
    """
    warnings.warn(deprecation_message(f"{name}={value}", removal=removal,
                                      replacement=replacement), FutureWarning, stacklevel=2)


def deprecated_attributes(module: str, attributes: Mapping[str, tuple[Any, str | None]], *,
                          removal: str) -> Callable[[str], Any]:
    """A module ``__getattr__`` (PEP 562) serving deprecated attributes with a warning.

    Args:
        module: the ``__name__`` of the module.
        attributes: each deprecated name mapped to ``(value, replacement)``; the
            replacement says what to use instead, or is ``None``.

    Keyword Args:
        removal: the release that removes the attributes.

    Any other missing attribute raises :class:`AttributeError`.

    >>> import warnings
    >>> getattr_ = deprecated_attributes("mymod", {"old": (42, "mymod.new")}, removal="0.18")
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     getattr_("old")
    42
    >>> str(caught[0].message)
    'mymod.old is deprecated and will be removed in TensorDict 0.18. Use mymod.new instead.'
    """

    def __getattr__(name: str) -> Any:
        try:
            value, replacement = attributes[name]
        except KeyError:
            raise AttributeError(f"module {module!r} has no attribute {name!r}") from None
        warn_deprecated(f"{module}.{name}", removal=removal, replacement=replacement,
                        stacklevel=2)
        return value

    return __getattr__


def deprecated_fields(cls: type) -> tuple[dataclasses.Field, ...]:
    """``cls.fields()`` of a tensorclass (``NonTensorData`` included), deprecated as
    upstream: :func:`dataclasses.fields` of the class. Tensorclasses bind it as a
    classmethod.

    >>> import warnings
    >>> from tensordict import NonTensorData
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     [field.name for field in NonTensorData("a").fields()]
    ['data', '_metadata', '_is_non_tensor']
    """
    warn_deprecated("TensorClass.fields()", removal="0.17",
                    replacement="dataclasses.fields(cls)")
    return dataclasses.fields(cls)
