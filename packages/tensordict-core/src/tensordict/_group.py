"""``group_by``: split a TensorDict into the groups of rows sharing an entry's value.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, group_by
    >>> td = TensorDict(uid=torch.tensor([2, 0, 2]), r=torch.arange(3.0), batch_size=[3])
    >>> values, groups = group_by(td, "uid")
    >>> values, [group["r"].tolist() for group in groups]
    (tensor([0, 2]), [[1.0], [0.0, 2.0]])
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch

from tensordict._collection import acts_as_tensordict
from tensordict._nested_key import NestedKey

T = TypeVar("T")


def _rows(values: list[Any]) -> list[Any]:
    """The rows of a non-tensor entry, nested lists made tuples (so they hash)."""
    return [tuple(_rows(row)) if row.__class__ is list else row for row in values]


def _non_tensor_groups(entry: Any, key: NestedKey, length: int
                       ) -> tuple[list[Any], torch.Tensor]:
    rows = _rows(entry.tolist()) if hasattr(entry, "_flat") else [entry.data] * length
    try:
        values = sorted(set(rows))
    except TypeError:
        raise TypeError(f"group_by: the values of the non-tensor entry {key!r} must be "
                        "hashable and sortable.") from None
    index = {value: i for i, value in enumerate(values)}
    return values, torch.tensor([index[row] for row in rows], dtype=torch.long)


def group_by(tensordict: T, key: NestedKey) -> tuple[torch.Tensor | list[Any], tuple[T, ...]]:
    """Split ``tensordict`` along its first batch dim into the groups of rows whose entry
    ``key`` holds the same value.

    ``values`` holds the sorted unique values (a tensor for a tensor entry, compared row
    by row as :func:`torch.unique` with ``dim=0`` does; a list for a non-tensor entry)
    and ``groups[i]`` the rows equal to ``values[i]``, in their original order, as views
    of one gathered copy. The group sizes are read on the host.

    Raises:
        ValueError: ``tensordict`` has no batch dimension.
        KeyError: there is no entry ``key``.
        TypeError: the entry is a TensorDict, or non-tensor values that cannot be hashed
            or sorted.

    >>> import torch
    >>> from tensordict import NonTensorStack, TensorDict, group_by
    >>> td = TensorDict(tag=NonTensorStack("b", "a", "b"), r=torch.arange(3), batch_size=[3])
    >>> values, groups = group_by(td, "tag")
    >>> values, [group["r"].tolist() for group in groups]
    (['a', 'b'], [[1], [0, 2]])
    """
    td: Any = tensordict
    if not td.batch_size:
        raise ValueError("group_by groups the rows along the first batch dimension of the "
                         "tensordict, which has none.")
    entry = td.get(key, None)
    if entry is None:
        raise KeyError(f"group_by: the tensordict has no entry {key!r}.")
    if getattr(entry, "_is_non_tensor", False):
        values, inverse = _non_tensor_groups(entry, key, td.batch_size[0])
    elif acts_as_tensordict(entry) or not isinstance(entry, torch.Tensor):
        raise TypeError(f"group_by needs a tensor or non-tensor entry, but {key!r} holds a "
                        f"{type(entry).__name__}.")
    elif entry.ndim == 1:  # no dim=0: keeps NaNs together
        values, inverse = torch.unique(entry, return_inverse=True)
    else:
        values, inverse = torch.unique(entry, dim=0, return_inverse=True)
    counts = torch.bincount(inverse, minlength=len(values)).tolist()
    if not counts:
        return values, ()
    gathered = td[torch.argsort(inverse, stable=True)]
    return values, tuple(gathered.split(counts, 0))
