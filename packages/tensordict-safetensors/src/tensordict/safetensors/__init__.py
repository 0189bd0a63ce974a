"""tensordict.safetensors: TensorDicts saved as safetensors files, without pickle.

Provided by the tensordict-safetensors distribution; it adds ``tensordict.to_safetensors``
and ``tensordict.from_safetensors``, the methods ``td.to_safetensors(path)`` and
``TensorDict.from_safetensors(path)``, and the ``"safetensors"`` storage backend
(``td.save(path, backend="safetensors")``). Files are upstream tensordict 0.15.3's.

Example:
    >>> import os, tempfile, torch
    >>> import tensordict
    >>> from tensordict import TensorDict
    >>> path = os.path.join(tempfile.mkdtemp(), "td.safetensors")
    >>> td = TensorDict({"a": torch.ones(2), "b": {"c": torch.zeros(2, 1)}}, [2])
    >>> tensordict.to_safetensors(td, path)
    >>> TensorDict.from_safetensors(path)["b", "c"].shape
    torch.Size([2, 1])
"""

from tensordict.safetensors._io import SafetensorsBackend, from_safetensors, to_safetensors
from tensordict.safetensors._version import __version__ as __version__

__all__ = ["SafetensorsBackend", "from_safetensors", "to_safetensors"]
