"""A lazy stack's entry read as one tensor although its parts differ in shape:
``get(key, as_padded_tensor=True)`` and ``get(key, as_nested_tensor=True)``, from the
values ``get(key, as_list=True)`` gives (a list per part that is a lazy stack itself).
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from tensordict._lazy_ops import pad_stack

_DTYPE = operator.attrgetter("dtype")


def padded_values(values: list[Any], key: Any, padding_value: float,
                   padding_side: str) -> torch.Tensor:
    """``get(key, as_padded_tensor=True)`` of a lazy stack from its ``as_list`` values (a
    list per lazy part): every list and tensor padded to the largest size of each dim, the
    lists stacked along new first dims, in the dtype of the first value, as upstream's.

    >>> values = [[torch.zeros(1), torch.ones(2)], [torch.ones(3)]]
    >>> padded_values(values, "x", -1.0, "right").tolist()
    [[[0.0, -1.0, -1.0], [1.0, 1.0, -1.0]], [[1.0, 1.0, 1.0], [-1.0, -1.0, -1.0]]]
    """
    if padding_side not in ("left", "right"):
        raise RuntimeError(
            f"Expected padding_side to be one of left or right, but got {padding_side}.")
    dims = [len(values)]  # lists of the same length: their values padded all at once
    while all(v.__class__ is list for v in values) and len(set(map(len, values))) == 1:
        dims.append(len(values[0]))
        values = [v for sub in values for v in sub]
    tensors = [padded_values(v, key, padding_value, padding_side) if v.__class__ is list
               else v for v in values]
    first = tensors[0]
    if not first.ndim:  # (pad_stack checks that they all have as many dims)
        raise RuntimeError(f"cannot pad the 0-dim entries {key!r} of a lazy stack: their "
                           f"shapes are {[t.shape for t in tensors]}")
    if len(set(map(_DTYPE, tensors))) > 1:
        tensors = [t.to(first.dtype) for t in tensors]
    padded = pad_stack(tensors, 0, padding_value, padding_side)
    return padded if len(dims) == 1 else padded.reshape(dims + list(padded.shape[1:]))


def nested_values(values: list[Any], layout: torch.layout | None) -> torch.Tensor:
    """``get(key, as_nested_tensor=True)`` of a lazy stack from its ``as_list`` values: a
    ``torch.nested`` tensor (``torch.jagged`` by default) holding one value per part. A
    list per lazy part gives a nested tensor each, which raises: one nested level only.

    >>> nested_values([torch.zeros(1), torch.ones(2)], None).layout
    torch.jagged
    """
    values = [nested_values(v, layout) if v.__class__ is list else v for v in values]
    if any(v.is_nested for v in values):
        raise ValueError(
            "Cannot build a nested tensor from entries that are nested tensors themselves, "
            "as the inner stacks of a lazy stack of lazy stacks return: a nested tensor has "
            "a single nested level. Flatten the lazy stack with view(-1) first, or use "
            "as_padded_tensor=True.")
    return torch.nested.nested_tensor(values, layout=layout or torch.jagged)
