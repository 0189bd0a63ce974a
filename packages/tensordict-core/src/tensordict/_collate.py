"""``collate``: the ``collate_fn`` that batches TensorDicts and tensorclasses for a
:class:`~torch.utils.data.DataLoader`, optionally padding or nesting ragged entries.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, collate
    >>> td, label = collate([(TensorDict(x=torch.zeros(3)), i) for i in range(2)])
    >>> td.batch_size, label
    (torch.Size([2]), tensor([0, 1]))
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.utils.data import default_collate
from torch.utils.data._utils.collate import default_collate_fn_map

from tensordict._base import TensorCollection, is_tensor_collection, is_tensorclass
from tensordict._collection import classes
from tensordict._nested_key import NestedKey, unravel_key_to_tuple
from tensordict._stack import maybe_dense_stack


def collate(batch: Any, *, pad_keys: Mapping[NestedKey, float] | None = None,
            nested_keys: Sequence[NestedKey] | None = None,
            mask_key: NestedKey | None = None) -> Any:
    """Collate the samples of one batch, by the type of the first one: TensorDicts and
    tensorclasses through :func:`~tensordict.maybe_dense_stack` (a tensorclass keeps its
    type), tensors through :func:`torch.stack`, mappings and (named) tuples entry by
    entry, anything else through :func:`torch.utils.data.default_collate`. Anything but
    a non-empty list is returned as it is.

    Keyword Args:
        pad_keys: entries padded along their first dim with the value given and stacked
            (the samples must have an empty batch size).
        nested_keys: entries stacked as jagged nested tensors; the others must then
            stack densely.
        mask_key: where to store the masks of the ``pad_keys`` entries (``True`` at the
            valid positions); must not be an entry of the samples.

    Raises:
        KeyError: a sample lacks a key of ``pad_keys`` or ``nested_keys``.
        ValueError: inconsistent options, or samples that cannot be collated with them.

    >>> import torch
    >>> from functools import partial
    >>> from tensordict import TensorDict, collate
    >>> samples = [TensorDict(ids=torch.ones(n, dtype=torch.long)) for n in (2, 3)]
    >>> batch = partial(collate, pad_keys={"ids": 0}, mask_key="mask")(samples)
    >>> batch["ids"].tolist(), batch["mask", "ids"].tolist()
    ([[1, 1, 0], [1, 1, 1]], [[True, True, False], [True, True, True]])
    """
    if batch.__class__ is not list or not batch:
        return batch
    pads = {unravel_key_to_tuple(k): v for k, v in (pad_keys or {}).items()}
    nested = [unravel_key_to_tuple(k) for k in nested_keys or ()]
    mask = None if mask_key is None else unravel_key_to_tuple(mask_key)
    if mask is not None and not pads:
        raise ValueError("collate got a mask_key but no pad_keys to mask.")
    both = [_name(k) for k in nested if k in pads]
    if both:
        raise ValueError(f"collate got the keys {both} in both pad_keys and nested_keys.")
    return _collate(batch, pads, nested, mask)


def _name(key: tuple[str, ...]) -> NestedKey:
    return key[0] if len(key) == 1 else key


def _collate(batch: list[Any], pads: dict[tuple[str, ...], float],
             nested: list[tuple[str, ...]], mask: tuple[str, ...] | None) -> Any:
    first = batch[0]
    if is_tensorclass(first):
        if not pads and not nested:
            try:  # the tensorclass's own stack: keeps the classes of nested instances
                return torch.stack(batch)
            except RuntimeError:
                pass  # ragged: a lazy stack of its TensorDicts
        tds = [sample._tensordict for sample in batch]
        return type(first)._from_tensordict(_collate_tds(tds, pads, nested, mask))
    if is_tensor_collection(first):
        return _collate_tds(batch, pads, nested, mask)
    if isinstance(first, torch.Tensor):
        return torch.stack(batch)
    if isinstance(first, Mapping):
        return {key: _collate([sample[key] for sample in batch], pads, nested, mask)
                for key in first}
    if isinstance(first, tuple):
        items = [_collate(list(column), pads, nested, mask) for column in zip(*batch)]
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    return default_collate(batch)


def _collate_tds(tds: list[Any], pads: dict[tuple[str, ...], float],
                 nested: list[tuple[str, ...]], mask: tuple[str, ...] | None) -> Any:
    """Stack TensorDicts, padding ``pads`` and nesting ``nested``."""
    if not pads and not nested:
        return maybe_dense_stack(tds)
    if pads and tds[0].batch_size:
        raise ValueError("collate(pad_keys=...) pads the first dim of each entry, which is a "
                         f"batch dim of these samples (batch_size={tds[0].batch_size}). Give "
                         "the samples an empty batch size, or call pad_sequence.")
    if mask is not None and any(td.get(mask, None) is not None for td in tds):
        raise ValueError(f"collate got mask_key={_name(mask)!r}, which is an entry of a "
                         "sample.")
    ragged = [*pads, *nested]
    columns = {}
    for key in ragged:
        values = [td.get(key, None) for td in tds]
        if any(value is None for value in values):
            raise KeyError(f"collate got the key {_name(key)!r}, which a sample lacks.")
        columns[key] = values
    out = maybe_dense_stack([td.exclude(*ragged) for td in tds])
    if nested and isinstance(out, classes.LazyStackedTensorDict):
        raise ValueError(
            f"collate got nested_keys={[_name(k) for k in nested]}, but the other entries "
            "of the samples differ in shape, so they stack lazily and the nested tensors "
            "could not be read back. Name the entries that vary in length in pad_keys or "
            "nested_keys.")
    for key, value in pads.items():
        padded, valid = _pad(columns[key], value)
        out.set(key, padded)
        if mask is not None:
            out.set((*mask, *key), valid)
    for key in nested:
        out.set(key, torch.nested.nested_tensor(columns[key], layout=torch.jagged))
    return out


def _pad(values: list[torch.Tensor], value: float) -> tuple[torch.Tensor, torch.Tensor]:
    """``values`` right-padded along their first dim with ``value`` and stacked, and the
    ``[len(values), longest]`` mask of their valid positions."""
    lengths = [v.shape[0] for v in values]
    longest = max(lengths)
    padded = values[0].new_full((len(values), longest, *values[0].shape[1:]), value)
    for row, v in enumerate(values):
        padded[row, : v.shape[0]] = v
    lengths_t = torch.tensor(lengths, device=padded.device)
    valid = torch.arange(longest, device=padded.device) < lengths_t[:, None]
    return padded, valid


def _default_collate(batch: Any, *, collate_fn_map: Any = None) -> Any:
    if is_tensor_collection(batch):  # a batch read at once (``__getitems__``)
        return batch
    return _collate(list(batch), {}, [], None)


def register_default_collate() -> None:
    """Let :func:`torch.utils.data.default_collate` (a ``DataLoader`` without
    ``collate_fn``) stack TensorDicts and tensorclasses as :func:`collate` does."""
    default_collate_fn_map[TensorCollection] = _default_collate
