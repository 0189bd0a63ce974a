"""What a write leaves behind, as plain JSON: the same under upstream tensordict and ours.

A snapshot records, for a TensorDict-like object (TensorDict, lazy stack, tensorclass,
TensorDictParams, a persistent file or a store), its batch size, dim names and lock state,
and every entry, nested ones as nested snapshots: tensors as shape, dtype and values
(rounded, so that float noise does not count), non-tensor data as its value (be it
wrapped in ``NonTensorData`` or bare, text be it ``str`` or ``bytes``). A part that
cannot be read is recorded as the class of the error it raised, so that reading a
corrupted entry is a difference too.

>>> import torch
>>> from tensordict import TensorDict
>>> snapshot(TensorDict(a=torch.zeros(2), batch_size=[2]))["entries"]["a"]
{'shape': [2], 'dtype': 'torch.float32', 'values': [0.0, 0.0]}
"""

from __future__ import annotations

from typing import Any

import torch

from tensordict import NonTensorStack, is_non_tensor, is_tensor_collection

DECIMALS = 4


def snapshot(obj: Any) -> dict:
    """The JSON-able state of a TensorDict-like ``obj`` (see the module docstring)."""
    return {
        "batch_size": _read(lambda: list(obj.batch_size)),
        "names": _read(lambda: list(obj.names)),
        "locked": _read(lambda: bool(obj.is_locked)),
        "entries": _read(lambda: _entries(obj)),
    }


def _entries(obj: Any) -> dict:
    return {str(key): _read(lambda key=key: _value(obj.get(key))) for key in _sorted_keys(obj)}


def _sorted_keys(obj: Any) -> list:
    return sorted(obj.keys(), key=str)


def _value(value: Any) -> Any:
    if is_non_tensor(value):
        data = value.tolist() if isinstance(value, NonTensorStack) else value.data
        return {"non_tensor": _plain(data)}
    if is_tensor_collection(value):
        return snapshot(value)
    if isinstance(value, torch.Tensor):
        return {
            "shape": list(value.shape),
            "dtype": str(value.dtype),
            "values": _rounded(value.detach().cpu().tolist()),
        }
    return {"non_tensor": _plain(value)}  # a store gives upstream's non-tensor data bare


def _rounded(values: Any) -> Any:
    if isinstance(values, list):
        return [_rounded(v) for v in values]
    if isinstance(values, float):
        return round(values, DECIMALS)
    return values


def _plain(data: Any) -> Any:
    if isinstance(data, bytes):  # upstream reads the strings of an h5 file back as bytes
        return data.decode()
    if isinstance(data, (list, tuple)):
        return [_plain(d) for d in data]
    if isinstance(data, (str, int, float, bool)) or data is None:
        return data
    return repr(data)


def _read(read: Any) -> Any:
    try:
        return read()
    except Exception as err:  # noqa: BLE001 - the class of a failed read is the state
        return {"read_error": type(err).__name__}
