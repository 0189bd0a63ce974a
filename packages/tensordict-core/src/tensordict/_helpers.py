"""Small tensor and shape helpers that clients of ``tensordict.utils`` import.

Example:
    >>> import torch
    >>> expand_right(torch.arange(2.0), (2, 3)).shape
    torch.Size([2, 3])
    >>> _maybe_correct_neg_dim(-1, torch.Size([4, 5]))
    1
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from typing import Any

import torch

from tensordict._nested_key import unravel_key_to_tuple

#: ``zip`` that raises ``ValueError`` when its arguments have different lengths.
_zip_strict = functools.partial(zip, strict=True)

#: The level of tensordict's logger, set with ``TD_LOGGING_LEVEL`` (default ``INFO``).
LOGGING_LEVEL = os.environ.get("TD_LOGGING_LEVEL", "INFO")
logger = logging.getLogger("tensordict")
logger.setLevel(LOGGING_LEVEL)
formatter = logging.Formatter("%(asctime)s [%(name)s][%(levelname)s] %(message)s")
console_handler = logging.StreamHandler()
console_handler.setFormatter(formatter)
if not logger.handlers:
    logger.addHandler(console_handler)


def expand_right(tensor: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Expand ``tensor`` to ``shape`` by adding singleton dims on the right.

    >>> expand_right(torch.zeros(3), (3, 4, 5)).shape
    torch.Size([3, 4, 5])
    """
    extra = len(shape) - tensor.ndim
    if extra < 0:
        raise RuntimeError(
            f"cannot expand a tensor of shape {tuple(tensor.shape)} to the smaller shape "
            f"{tuple(shape)}"
        )
    if extra == 1:  # (the usual case: unsqueeze costs less than an index of ... and None)
        tensor = tensor.unsqueeze(-1)
    elif extra:
        tensor = tensor[(..., *(None,) * extra)]
    return tensor.expand(shape)


def expand_as_right(tensor: Any, dest: Any) -> Any:
    """Expand ``tensor`` (or a TensorDict) to the shape of ``dest``, adding dims on the right.

    >>> expand_as_right(torch.ones(2), torch.zeros(2, 3)).shape
    torch.Size([2, 3])
    >>> expand_as_right(torch.ones(2, 1), torch.zeros(2, 3, 1)).shape  # size-1 dims broadcast
    torch.Size([2, 3, 1])
    """
    shape, target = tensor.shape, dest.shape
    if len(target) < len(shape):
        raise RuntimeError(
            f"expand_as_right needs a destination with at least as many dims as the input: "
            f"got {tuple(shape)} and {tuple(target)}"
        )
    if target[: len(shape)] != shape and any(
            t not in (1, d) for t, d in zip(shape, target)):  # (size-1 dims broadcast)
        raise RuntimeError(
            f"expand_as_right needs the input shape {tuple(shape)} to lead (or "
            f"broadcast to) the destination shape {tuple(target)}"
        )
    if not isinstance(tensor, torch.Tensor):  # a tensor collection
        return tensor.reshape(tuple(shape) + (1,) * (len(target) - len(shape))).expand(target)
    return expand_right(tensor, target)


def _shape(tensor: Any, nested_shape: bool = False) -> torch.Size:
    """The shape of a tensor or a collection's batch size; a nested tensor gives ``-1``
    where its components differ (or, with ``nested_shape``, its nested size tensor).

    >>> _shape(torch.zeros(2, 3))
    torch.Size([2, 3])
    """
    if not isinstance(tensor, torch.Tensor):
        return tensor.shape
    if not tensor.is_nested or tensor.layout is torch.jagged:  # jagged shapes are symbolic
        return tensor.shape
    if nested_shape:
        return tensor._nested_tensor_size()
    sizes = tensor._nested_tensor_size()
    ragged = (sizes != sizes[:1]).any(0)
    return torch.Size([sizes.shape[0]] + [
        -1 if differs else int(size) for differs, size in zip(ragged.tolist(), sizes[0].tolist())
    ])


def _maybe_correct_neg_dim(dim: int, shape: torch.Size | None, ndim: int | None = None) -> int:
    """``dim`` as a non-negative index into ``shape`` (or into ``ndim`` dims)."""
    if ndim is None:
        ndim = len(shape)  # type: ignore[arg-type]
    if not -ndim <= dim < ndim:
        raise IndexError(f"dim {dim} is out of range for {ndim} dims")
    return dim + ndim if dim < 0 else dim


def is_seq_of_nested_key(seq: Sequence[Any]) -> bool:
    """Whether ``seq`` is a list or tuple of keys (an empty one counts).

    >>> is_seq_of_nested_key(["a", ("b", "c")]), is_seq_of_nested_key("a")
    (True, True)
    """
    if isinstance(seq, str):
        return True
    if not isinstance(seq, (list, tuple)):
        return False
    return all(unravel_key_to_tuple(key) for key in seq)
