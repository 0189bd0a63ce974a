"""The ``npz`` storage backend: tensor leaves in a NumPy archive, structure in JSON."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tensordict import TensorDict, is_non_tensor

FORMAT = "td-example-npz/1"


def _sidecar(path: str | os.PathLike) -> Path:
    return Path(f"{os.fspath(path)}.json")


class NpzBackend:
    """Saves ``td`` as ``<path>`` (a ``.npz`` archive, one member per tensor leaf) plus
    ``<path>.json`` (batch sizes, nested TensorDicts and JSON-able non-tensor data)."""

    def save(self, td: Any, path: str | os.PathLike | None, **kwargs: Any) -> Any:
        if path is None or not os.fspath(path).endswith(".npz") or kwargs:
            raise ValueError(
                "the npz backend needs a path ending in .npz and no options, "
                f"got {path!r} and {sorted(kwargs)}"
            )
        arrays: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {
            "format": FORMAT, "batch_size": list(td.batch_size),
            "tensordicts": [], "tensors": [], "non_tensor": [],
        }
        for key, value in td.items(include_nested=True):
            key = [key] if isinstance(key, str) else list(key)
            if isinstance(value, torch.Tensor):
                arrays[f"leaf{len(arrays)}"] = value.detach().cpu().numpy()
                meta["tensors"].append(key)
            elif is_non_tensor(value):
                try:
                    json.dumps(value.data)
                except TypeError as err:
                    raise TypeError(f"npz backend: non-tensor entry {key} is not JSON") from err
                meta["non_tensor"].append([key, value.data])
            else:
                meta["tensordicts"].append([key, list(value.batch_size)])
        np.savez(path, **arrays)
        _sidecar(path).write_text(json.dumps(meta))
        return td

    def load(self, path: str | os.PathLike) -> TensorDict:
        meta = json.loads(_sidecar(path).read_text())
        result = TensorDict(batch_size=meta["batch_size"])
        for key, batch_size in sorted(meta["tensordicts"], key=lambda item: len(item[0])):
            result[tuple(key)] = TensorDict(batch_size=batch_size)
        with np.load(path, allow_pickle=False) as archive:
            for index, key in enumerate(meta["tensors"]):
                result[tuple(key)] = torch.from_numpy(archive[f"leaf{index}"])
        for key, data in meta["non_tensor"]:
            result[tuple(key)] = data
        return result

    def can_load(self, path: str | os.PathLike) -> bool:
        sidecar = _sidecar(path)
        if not os.fspath(path).endswith(".npz") or not sidecar.is_file():
            return False
        return json.loads(sidecar.read_text()).get("format") == FORMAT
