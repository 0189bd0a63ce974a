"""``to_safetensors`` / ``from_safetensors``: tensordicts as safetensors files.

The file layout is upstream tensordict 0.15.3's (see :mod:`tensordict.safetensors._format`),
so files move between the two in both directions. Writes are atomic.

Example:
    >>> import os, tempfile, torch
    >>> from tensordict import TensorDict
    >>> path = os.path.join(tempfile.mkdtemp(), "td.safetensors")
    >>> td = TensorDict({"obs": torch.zeros(3, 2), "meta": {"id": torch.arange(3)}}, [3])
    >>> to_safetensors(td, path)
    >>> from_safetensors(path)
    TensorDict(batch_size=[3], fields={meta: {id: i64[]}, obs: f32[2]})
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import torch

import safetensors
import safetensors.torch
from tensordict.safetensors import _format
from tensordict.storage import atomic_write

DeviceType = torch.device | str | int


def to_safetensors(data: Any, path: str | Path) -> None:
    """Save a tensordict or a tensorclass to a safetensors file.

    Each tensor is stored under its nested key joined with ``"."``; the structure (batch
    sizes, dim names, tensorclasses, lazy stacks, JSON non-tensor values) goes into the
    file's metadata, so :func:`from_safetensors` rebuilds it. The file is written under a
    temporary name and renamed into place: a failure leaves any previous file intact.

    Raises:
        TypeError: a value safetensors cannot hold (see ``_format.encode``).
        ValueError: two keys with the same joined name, e.g. ``"a.b"`` and
            ``("a", "b")``.

    Example:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> path = os.path.join(tempfile.mkdtemp(), "td.safetensors")
        >>> TensorDict(a=torch.ones(2, 3), batch_size=[2]).to_safetensors(path)
        >>> from_safetensors(path).batch_size
        torch.Size([2])
    """
    tensors, meta = _format.encode(data)
    metadata = {_format.METADATA_KEY: json.dumps(meta)}
    atomic_write(path, lambda tmp: safetensors.torch.save_file(tensors, tmp, metadata))


def from_safetensors(path: str | Path, *, device: DeviceType | None = None) -> Any:
    """Load a tensordict from a safetensors file.

    A file written by :func:`to_safetensors` (here or by upstream tensordict) loads with
    its structure; a tensorclass loads only if the module defining it is imported. Any
    other safetensors file (a model checkpoint) loads as a nested TensorDict with an empty
    batch size, each name split on ``"."``, ready for ``to_module``.

    Args:
        path: the file.
        device: where the tensors are loaded, and the device of the result. ``None``:
            the CPU, and a result without a device.

    Example:
        >>> import os, tempfile, torch
        >>> from safetensors.torch import save_file
        >>> path = os.path.join(tempfile.mkdtemp(), "model.safetensors")
        >>> save_file({"0.weight": torch.ones(4, 3), "0.bias": torch.zeros(4)}, path)
        >>> from_safetensors(path)["0", "weight"].shape
        torch.Size([4, 3])
    """
    source = os.fspath(path)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"No such file or directory: {source}")
    device = None if device is None else torch.device(device)
    try:
        with safetensors.safe_open(source, framework="pt",
                                   device="cpu" if device is None else str(device)) as file:
            metadata = file.metadata() or {}
            tensors = {name: file.get_tensor(name) for name in file.keys()}  # noqa: SIM118
    except safetensors.SafetensorError as err:
        raise type(err)(f"{source} is not a readable safetensors file: {err}") from err
    structure = metadata.get(_format.METADATA_KEY)
    if structure is None:
        return _format.decode_plain(tensors, device)
    try:
        meta = json.loads(structure)
    except json.JSONDecodeError as err:
        raise ValueError(f"{source} is corrupt: its tensordict metadata is not JSON "
                         f"({err}).") from None
    return _format.decode(meta, tensors, source, device)


class SafetensorsBackend:
    """The ``"safetensors"`` storage backend: ``td.save(path, backend="safetensors")``
    and ``TensorDict.load(path)`` for a ``*.safetensors`` file.

    Example:
        >>> import os, tempfile, torch
        >>> from tensordict import TensorDict
        >>> path = os.path.join(tempfile.mkdtemp(), "td.safetensors")
        >>> _ = TensorDict(a=torch.ones(2)).save(path, backend="safetensors")
        >>> TensorDict.load(path)["a"]
        tensor([1., 1.])
    """

    def save(self, td: Any, path: str | Path) -> Any:
        """Write ``td`` to the file ``path`` and return ``td``."""
        to_safetensors(td, path)
        return td

    def load(self, path: str | Path, *, device: DeviceType | None = None) -> Any:
        """Read the file ``path``."""
        return from_safetensors(path, device=device)

    def can_load(self, path: str | Path) -> bool:
        """Whether ``path`` is a ``*.safetensors`` file."""
        return os.fspath(path).endswith(".safetensors") and os.path.isfile(path)


def _from_safetensors_method(cls: type, path: str | Path, *,
                             device: DeviceType | None = None) -> Any:
    """``TensorDict.from_safetensors(path, device=None)``: see :func:`from_safetensors`."""
    return from_safetensors(path, device=device)


#: What the plugin adds to every tensor collection.
METHODS = {
    "to_safetensors": to_safetensors,
    "from_safetensors": classmethod(_from_safetensors_method),
}
