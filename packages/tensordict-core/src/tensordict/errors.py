"""Errors raised by tensordict, and the messages that explain them.

Every message names the key path involved and, for shape problems, the expected and
actual shapes.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.zeros(3), batch_size=[3])
    >>> try:
    ...     td["b"] = torch.zeros(4)
    ... except RuntimeError as err:
    ...     print(str(err).split(". ")[0])
    batch dimension mismatch, got self.batch_size=torch.Size([3])
    and value.shape=torch.Size([4]) for key 'b'
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class BatchDimError(IndexError, RuntimeError):
    """A dim or an index beyond the batch dims where upstream raises a RuntimeError (an
    index into a 0-dim batch, ``unsqueeze``, ``narrow``, ``cat`` and ``lazy_stack`` dims):
    both that and the IndexError torch raises for the same on a tensor."""


class BatchDimValueError(IndexError, ValueError):
    """A dim beyond the batch dims where upstream raises a ValueError (``logsumexp``): both
    that and the IndexError torch raises for the same on a tensor."""


#: How each op words a dim beyond the batch dims, as upstream does: the class it raises
#: and its phrase (``{dim}``, ``{shape}``, ``{low}``, ``{high}`` filled in); None: the
#: wording of most ops, "torch": that of torch (flip, flatten, stack...).
_DIM_ERRORS: dict[str | None, tuple[type[Exception], str]] = {
    None: (IndexError, "Incompatible dim {dim} for tensordict with shape {shape}"),
    "torch": (IndexError, "Dimension out of range (expected to be in range of [{low}, {high}], "
                          "but got {dim})"),
    "unsqueeze": (BatchDimError, "unsqueezing is allowed for dims comprised between "
                                 "`-td.batch_dims - 1` and `td.batch_dims` only. Got "
                                 "dim={dim} with a batch size of {shape}"),
    "permute": (ValueError, "Received an permutation order incompatible with the tensordict "
                            "shape"),
    "transpose": (ValueError, "dim0 and dim1 must be within the range of the number of "
                              "dimensions"),
    "gather": (BatchDimError, "Cannot gather tensordict with shape {shape} along dim {dim}"),
    "logsumexp": (BatchDimValueError, "The dimension {dim} is incompatible with a tensordict "
                                      "with batch_size {shape}"),
    "all_any": (BatchDimError, "dim must be greater than or equal to -tensordict.batch_dims "
                               "and smaller than tensordict.batch_dims"),
    "cat": (BatchDimError, "dim must be in the range 0 <= dim < len(batch_size), got "
                           "dim={dim} and batch_size={shape}"),
    "lazy_stack": (BatchDimError, "Stack dim {dim} is too big for batch size {shape}"),
}


def dim_out_of_range(dim: Any, batch_size: Any, op: str | None = None,
                     inserting: bool = False) -> Exception:
    """The error for ``dim`` beyond the batch dims of ``batch_size`` in the op ``op`` (a
    key of ``_DIM_ERRORS``), of the class upstream raises; ``inserting``: the op adds a dim.

    >>> str(dim_out_of_range(2, (3, 4))).split(" (")[0]
    'Incompatible dim 2 for tensordict with shape'
    """
    cls, phrase = _DIM_ERRORS[op]
    ndim = len(batch_size) + int(inserting)
    return cls(phrase.format(dim=dim, shape=batch_size, low=-ndim, high=ndim - 1)
               + f" (dim {dim} is out of range for batch size {batch_size}: only batch dims "
               "can be used)")


class ArgumentError(TypeError, ValueError):
    """An argument of the wrong kind where ours raises one of TypeError and ValueError and
    upstream the other (``clamp()`` without bounds, a TensorDict source that is no
    mapping): both."""


class NotAMappingError(ArgumentError, AttributeError):
    """A TensorDict source (of the constructor, ``update``, ``TensorDictParams``...) that
    is no mapping: upstream raises ``AttributeError`` (it calls ``source.items()``) or a
    ``TypeError``/``ValueError``; this is all three."""


class LockedTensorDictError(RuntimeError):
    """A write that adds, removes or replaces an entry of a locked TensorDict."""


class InplaceWriteError(ValueError, RuntimeError):
    """An in-place write (``set_``, ``set(..., inplace=True)``) that does not fit the entry:
    a value of another kind (a tensor into a sub-TensorDict...), of a shape that does not
    broadcast to it, or a leaf that requires grad."""


class MissingKeyError(KeyError):
    """A key that is not in the TensorDict (the message is printed unquoted)."""

    def __str__(self) -> str:
        return str(self.args[0])


class MissingKeyTypeError(MissingKeyError, TypeError):
    """``update_at_`` of a value that is not a tensor (a str, a number) into an entry the
    TensorDict lacks: a ``KeyError`` naming the key, and the ``TypeError`` upstream raises
    for such a value before it looks the key up."""


class KeyThroughLeafError(MissingKeyError, ValueError):
    """A nested key that goes through a leaf (a tensor has no entries). A ``KeyError``,
    and a ``ValueError`` as upstream's for reads.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> try:
    ...     TensorDict(a=torch.zeros(1))["a", "b"]
    ... except ValueError as err:
    ...     isinstance(err, KeyError)
    True
    """


def missing_key(
    key: Any, available: Iterable[str], where: tuple[str, ...] = ()
) -> MissingKeyError:
    """A KeyError naming the key, where it was looked up and what exists there.

    ``key`` is the full path (or a top-level key), ``where`` the path of the
    TensorDict in which its last missing part was looked up.
    """
    if not where:
        return MissingKeyError(
            f'key "{key}" not found in TensorDict with keys {sorted(available)!r}'
        )
    last = key[len(where)]
    return MissingKeyError(
        f"key {key!r} not found: the TensorDict at {where!r} has no entry {last!r}: "
        f'key "{last}" not found in TensorDict with keys {sorted(available)!r}'
    )


def inplace_mismatch(key: Any, present: Any, value: Any) -> InplaceWriteError:
    """The error for an in-place write of ``value`` into the entry ``key``, ``present``,
    of another kind (a tensor, a TensorDict, non-tensor data).

    >>> str(inplace_mismatch("n", {}, 1.0))
    "Failed to update 'n' in place: cannot write a float into the entry, a dict"
    """
    return InplaceWriteError(f"Failed to update {key!r} in place: cannot write a "
                             f"{type(value).__name__} into the entry, a {type(present).__name__}")


def raw_non_tensor_at(key: Any, value: Any) -> TypeError:
    """The error for ``update_at_`` of a bare Python value into the non-tensor entry
    ``key`` (upstream's TypeError: only tensors, collections and NonTensorData fit there).

    >>> str(raw_non_tensor_at("s", "new"))
    "cannot write a str at an index of the non-tensor entry 's': wrap it in NonTensorData"
    """
    return TypeError(f"cannot write a {type(value).__name__} at an index of the non-tensor "
                     f"entry {key!r}: wrap it in NonTensorData")


def names_mismatch(names: Any, ndim: int) -> ValueError:
    """The error for dim names ``names`` that do not fit ``ndim`` batch dims (their number,
    or names given twice).

    >>> str(names_mismatch(["x"], 2)).split(".")[0]
    'the length of the dimension names must equate the tensordict batch_dims attribute'
    """
    names = list(names)
    if len(names) != ndim:
        return ValueError("the length of the dimension names must equate the tensordict "
                          f"batch_dims attribute. Got {names} for batch_dims {ndim} "
                          f"({len(names)} names given for a batch size of {ndim} dims)")
    return ValueError(f"Some dimension names are non-unique: {names} (dim names must be "
                      "unique)")


def batch_mismatch(key: Any, shape: Any, batch_size: Any) -> RuntimeError:
    """A RuntimeError for a value whose leading dims do not match the batch size."""
    err = RuntimeError(
        f"batch dimension mismatch, got self.batch_size={batch_size} and "
        f"value.shape={shape} for key {key!r}. The leading dimensions of a value "
        "must match the batch size."
    )
    err._tensordict_key = True  # type: ignore[attr-defined]  (see with_key)
    return err


def locked(action: str = "modify", key: Any = None) -> LockedTensorDictError:
    """The error for a write to a locked TensorDict (at the entry ``key``, if given);
    ``action`` says what was refused, as in "delete an entry of a".

    >>> str(locked("delete an entry of a")).split(". ")[0]
    'Cannot modify locked TensorDict: cannot delete an entry of a locked TensorDict'
    """
    where = "" if key is None else f" (writing the entry {key!r})"
    what = "" if action == "modify" else f": cannot {action} locked TensorDict"
    return LockedTensorDictError(
        f"Cannot modify locked TensorDict{where}{what}. Unlock it first with `td.unlock_()` "
        "(or `with td.unlock_(): ...`); in-place writes (`set_`, `update_`) are allowed."
    )


class StackMismatchError(RuntimeError):
    """TensorDicts whose keys or leaf shapes do not allow a dense stack or cat, or
    entries of a lazy stack of different shapes read as one tensor (a RuntimeError, as
    upstream raises; ``maybe_dense_stack`` stacks lazily on it)."""


#: Exceptions of exactly these classes, raised while working on one entry, are re-raised
#: naming the entry (subclasses such as torch.OutOfMemoryError pass through unchanged).
_KEYED = frozenset((RuntimeError, ValueError, TypeError, IndexError))


def with_key(err: BaseException, path: tuple[str, ...]) -> BaseException | None:
    """``err`` again, of the same class, its message naming the entry ``path``; None when
    it already names one (raised deeper) or is of a class kept as is.

    >>> str(with_key(RuntimeError("bad shape"), ("n", "c")))
    "bad shape (entry ('n', 'c'))"
    """
    if type(err) not in _KEYED or getattr(err, "_tensordict_key", False):
        return None
    new = type(err)(f"{err} (entry {path[0] if len(path) == 1 else path!r})")
    new._tensordict_key = True  # type: ignore[attr-defined]
    return new
