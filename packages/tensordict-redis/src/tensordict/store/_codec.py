"""How entries are laid out in Redis (upstream tensordict 0.15.3's layout).

A store is a set of Redis keys under ``{prefix}:{<td_id>}:``:

- ``__batch_size__`` (JSON list), ``__device__`` (``""`` for none), ``__keys__`` (a set
  of the leaves' keys, nested keys joined with ``"."``);
- per leaf ``key``: ``d:<key>``, the raw bytes of the tensor (C order) or the JSON text of
  a non-tensor value, and ``m:<key>``, a hash: ``shape`` and ``dtype`` of a tensor, or
  ``is_non_tensor`` and ``encoding`` (``json``, or ``json_array`` for one value per
  element).

>>> import torch
>>> meta, data = encode_tensor(torch.arange(3, dtype=torch.int16))
>>> meta, decode_tensor(meta, data)
({'shape': '[3]', 'dtype': 'torch.int16'}, tensor([0, 1, 2], dtype=torch.int16))
"""

from __future__ import annotations

import json
from typing import Any

import torch

from tensordict import NonTensorData, NonTensorStack

SEPARATOR = "."
#: bit-casts for dtypes numpy cannot give bytes of
_BITS = {torch.bfloat16: torch.int16}


def space(prefix: str, td_id: str) -> str:
    """The prefix of every Redis key of one store (a hash tag: one cluster slot)."""
    return f"{prefix}:{{{td_id}}}:"


def encode_tensor(tensor: torch.Tensor) -> tuple[dict[str, str], bytes]:
    """The ``m:`` hash and the ``d:`` bytes of a tensor."""
    tensor = tensor.detach().contiguous().cpu()
    meta = {"shape": json.dumps(list(tensor.shape)), "dtype": str(tensor.dtype)}
    bits = _BITS.get(tensor.dtype)
    return meta, (tensor if bits is None else tensor.view(bits)).numpy().tobytes()


def dtype_of(meta: dict[str, str]) -> torch.dtype:
    dtype = getattr(torch, meta["dtype"].removeprefix("torch."), None)
    if not isinstance(dtype, torch.dtype):
        raise ValueError(f"unknown dtype {meta['dtype']!r} in a store")
    return dtype


def shape_of(meta: dict[str, str]) -> torch.Size:
    return torch.Size(json.loads(meta["shape"]))


class Gone(KeyError):
    """The bytes of a leaf are missing or short: another client deleted (or replaced)
    it since its metadata was read."""


def decode_tensor(meta: dict[str, str], data: bytes | None,
                  shape: torch.Size | None = None) -> torch.Tensor:
    """The tensor of ``data`` (of ``shape``, the stored shape by default); :class:`Gone`
    when ``data`` does not hold that many bytes."""
    dtype = dtype_of(meta)
    shape = shape_of(meta) if shape is None else shape
    if len(data or b"") != shape.numel() * dtype.itemsize:
        raise Gone(f"{len(data or b'')} bytes stored for a tensor of shape {list(shape)}")
    if not data:
        return torch.empty(shape, dtype=dtype)
    raw = torch.frombuffer(bytearray(data), dtype=_BITS.get(dtype, dtype))
    return (raw if dtype not in _BITS else raw.view(dtype)).reshape(shape)


def row_bytes(meta: dict[str, str]) -> int:
    """The bytes of one row (one index of the first dim) of a stored tensor."""
    shape = shape_of(meta)
    return shape[1:].numel() * dtype_of(meta).itemsize


def is_non_tensor(meta: dict[str, str]) -> bool:
    return meta.get("is_non_tensor") == "1"


def encode_non_tensor(value: Any, key: Any) -> tuple[dict[str, str], bytes]:
    """The ``m:`` hash and ``d:`` JSON of a non-tensor value (NonTensorData or
    NonTensorStack); TypeError naming ``key`` for what JSON cannot hold."""
    if isinstance(value, NonTensorStack):
        encoding, data = "json_array", value.tolist()
    else:
        encoding, data = "json", value.data if isinstance(value, NonTensorData) else value
    try:
        text = json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(f"cannot store the non-tensor value at {key!r} "
                        f"({type(data).__name__}) in Redis: only JSON data (strings, "
                        f"numbers, lists, dicts) is stored, nothing is pickled") from err
    return {"is_non_tensor": "1", "encoding": encoding}, text.encode()


def decode_non_tensor(meta: dict[str, str], data: bytes, batch_size: torch.Size,
                      device: Any) -> Any:
    value = json.loads(data)
    if meta.get("encoding") == "json_array":
        return NonTensorStack.from_list(value, batch_size=batch_size, device=device)
    return NonTensorData(value, batch_size=batch_size, device=device)


def as_text(meta: dict[bytes, bytes]) -> dict[str, str]:
    """A hash read from Redis (bytes) as text."""
    return {k.decode(): v.decode() for k, v in meta.items()}
