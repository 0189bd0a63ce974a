"""How a tensor is stored as an array of a file and read back, and the JSON text that
non-tensor values are stored as.

Tensors are arrays of their dtype (``bfloat16``, which numpy lacks, as ``int16`` bits
with a dtype attribute). Nothing is ever pickled: non-tensor values must be JSON data.

>>> import torch
>>> to_numpy(torch.ones(2, dtype=torch.bfloat16))[1]
'bfloat16'
>>> json_text({"lr": 0.1}, "cfg")
'{"lr": 0.1}'
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import torch

#: a dtype numpy lacks, stored as the bits of another: attribute value -> torch dtype
DTYPE_ATTR = "__tensordict_dtype__"
_BIT_CASTS = {"bfloat16": (torch.bfloat16, torch.int16)}


def to_numpy(tensor: torch.Tensor) -> tuple[np.ndarray, str | None]:
    """The array to store for ``tensor``, and the dtype attribute it needs (or None)."""
    tensor = tensor.detach()
    for name, (dtype, bits) in _BIT_CASTS.items():
        if tensor.dtype is dtype:
            return tensor.view(bits).cpu().numpy(), name
    return tensor.cpu().numpy(), None


def stored_array(node: Any, tensor: torch.Tensor) -> np.ndarray:
    """The array to write into the existing array ``node`` for ``tensor``: its values
    converted to the node's dtype (a float32 value into a bfloat16 array, or the other
    way round, is converted, never stored as its bits)."""
    return to_numpy(tensor.to(dtype_of(node)))[0]


def write_tensor(file_format: Any, group: Any, name: str, tensor: torch.Tensor,
                 **options: Any) -> None:
    """Create the array ``group[name]`` holding ``tensor`` (with the format's array
    ``options``)."""
    array, dtype_name = to_numpy(tensor)
    node = file_format.write_array(group, name, array, **options)
    if dtype_name is not None:
        node.attrs[DTYPE_ATTR] = dtype_name


def from_numpy(array: Any, node: Any, device: torch.device | None) -> torch.Tensor:
    """The tensor for ``array``, read from the array ``node``."""
    tensor = torch.as_tensor(np.asarray(array))
    dtype_name = node.attrs.get(DTYPE_ATTR)
    if dtype_name is not None:
        tensor = tensor.view(_BIT_CASTS[str(dtype_name)][0])
    return tensor if device is None else tensor.to(device)


def dtype_of(node: Any) -> torch.dtype:
    """The torch dtype of the tensors the array ``node`` gives."""
    return from_numpy(np.empty((0,), dtype=node.dtype), node, None).dtype


def json_text(data: Any, key: Any) -> str:
    """``data`` as JSON text; TypeError naming ``key`` for what JSON cannot hold."""
    try:
        return json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise TypeError(
            f"cannot store the non-tensor value at {key!r} ({type(data).__name__}) in a "
            f"file: only strings and JSON data (numbers, bools, None, lists, dicts) are "
            f"stored, nothing is pickled"
        ) from err
