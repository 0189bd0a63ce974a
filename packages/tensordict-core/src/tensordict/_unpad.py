"""``unpad_sequence``: the inverse of :func:`~tensordict.pad_sequence`.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, pad_sequence, unpad_sequence
    >>> tds = [TensorDict(a=torch.arange(n), batch_size=[n]) for n in (2, 3)]
    >>> samples = unpad_sequence(pad_sequence(tds, return_mask=True))
    >>> [sample["a"].tolist() for sample in samples.tensordicts]
    [[0, 1], [0, 1, 2]]
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict._base import TensorDictBase
from tensordict._collection import classes
from tensordict._nested_key import NestedKey

_MASKS = "masks"


def _runs(mask: torch.Tensor, key: NestedKey, rows: int) -> list[tuple[int, int]]:
    """``(start, length)`` of the one run of ``True`` of each row of an ``[rows, ..., L]``
    mask (its leading row of each sample: padding runs along its last dim)."""
    mask = mask.reshape(rows, -1, mask.shape[-1])[:, 0].bool()
    lengths = mask.sum(-1)
    starts = mask.int().argmax(-1)
    positions = torch.arange(mask.shape[-1], device=mask.device)
    run = (positions >= starts[:, None]) & (positions < (starts + lengths)[:, None])
    if not torch.equal(run, mask):
        raise ValueError(f"The mask of key {key!r} marks positions that are not contiguous in "
                         "some row: unpad_sequence keeps one contiguous run per row.")
    return list(zip(starts.tolist(), lengths.tolist()))


def unpad_sequence(padded: TensorDictBase, mask: TensorDictBase | torch.Tensor | None = None,
                   *, pad_dim: int = 0) -> Any:
    """Split a padded batch back into its samples, keeping in every entry the positions
    its mask marks along ``pad_dim`` (counted from each sample's first dim).

    ``mask`` is a TensorDict of one mask per entry, as ``pad_sequence(...,
    return_mask=True)`` builds, or one ``[len(padded), max_len]`` boolean tensor for
    every entry; ``None`` reads (and drops) the ``"masks"`` entry of ``padded``. The
    samples are views of ``padded``, lazily stacked; the lengths are read on the host.

    Raises:
        ValueError: ``padded`` has no batch dim, no mask is found, a tensor mask has the
            wrong shape, or a row's marked positions are not contiguous.
        KeyError: a mask TensorDict has no mask for an entry.

    >>> import torch
    >>> from tensordict import TensorDict, pad_sequence, unpad_sequence
    >>> tds = [TensorDict(a=torch.zeros(2, n)) for n in (1, 3)]
    >>> padded = pad_sequence(tds, pad_dim=1, return_mask=True)
    >>> [s["a"].shape for s in unpad_sequence(padded, pad_dim=1).tensordicts]
    [torch.Size([2, 1]), torch.Size([2, 3])]
    """
    if not padded.batch_size:
        raise ValueError("unpad_sequence needs the samples along the first batch dimension "
                         "of padded, which has none.")
    rows = padded.batch_size[0]
    if mask is None:
        mask = padded.get(_MASKS, None)
        if mask is None:
            raise ValueError("unpad_sequence needs a mask: pass mask=..., or pad with "
                             "pad_sequence(..., return_mask=True).")
        padded = padded.exclude(_MASKS)
    tensors = {key: value for key, value in padded.items(include_nested=True, leaves_only=True)
               if isinstance(value, torch.Tensor)}
    batch_pad = padded.batch_dims > pad_dim + 1
    if isinstance(mask, torch.Tensor):
        longest = (padded.batch_size[pad_dim + 1] if batch_pad else
                   max((value.shape[pad_dim + 1] for value in tensors.values()), default=0))
        if tuple(mask.shape) != (rows, longest):
            raise ValueError(f"A tensor mask must have shape [len(padded), max_len] = "
                             f"[{rows}, {longest}], got {tuple(mask.shape)}.")
    if batch_pad:  # one run per row for the whole sample
        if isinstance(mask, torch.Tensor):
            key, row_mask = next(iter(tensors), "mask"), mask
        else:
            key, row_mask = next(iter(mask.items(include_nested=True, leaves_only=True)))
        runs = _runs(row_mask, key, rows)
        index = (slice(None),) * pad_dim
        samples = [padded[row][(*index, slice(start, start + length))]
                   for row, (start, length) in enumerate(runs)]
        return classes.LazyStackedTensorDict.lazy_stack(samples, 0)
    key_runs = {}
    for key in tensors:
        key_mask = mask if isinstance(mask, torch.Tensor) else mask.get(key, None)
        if key_mask is None:
            raise KeyError(f"The mask tensordict has no mask for the key {key!r} of padded.")
        key_runs[key] = _runs(key_mask, key, rows)
    samples = []
    for row in range(rows):
        sample = padded[row].copy()
        for key, runs in key_runs.items():
            start, length = runs[row]
            sample.set(key, sample.get(key).narrow(pad_dim, start, length))
        samples.append(sample)
    return classes.LazyStackedTensorDict.lazy_stack(samples, 0)

