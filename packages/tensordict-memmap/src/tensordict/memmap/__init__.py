"""tensordict.memmap: memory-mapped tensors and TensorDicts saved on disk.

Provided by the tensordict-memmap distribution; it adds ``memmap``, ``memmap_``,
``memmap_like``, ``load_memmap`` and friends to every tensor collection, and
``tensordict.MemoryMappedTensor``, ``tensordict.memmap``/``load_memmap``/``save``/``load``.
As upstream's, ``tensordict.memmap(td, prefix)`` is a function: this module is callable
(:func:`tensordict.extending.resolve_on_access`).

Example:
    >>> import tempfile, torch
    >>> from tensordict import TensorDict
    >>> path = tempfile.mkdtemp()
    >>> _ = TensorDict({"obs": torch.randn(4, 3)}, [4]).memmap(path, num_threads=2)
    >>> TensorDict.load_memmap(path)[torch.tensor([0, 2])]["obs"].shape
    torch.Size([2, 3])
    >>> import tensordict
    >>> tensordict.memmap(TensorDict(a=torch.ones(1)), path)["a"]
    MemoryMappedTensor([1.])
"""

from tensordict.extending import resolve_on_access
from tensordict.memmap._methods import MemmapBackend
from tensordict.memmap._methods import load_memmap_function as load
from tensordict.memmap._methods import load_memmap_function as load_memmap
from tensordict.memmap._methods import memmap_function as memmap
from tensordict.memmap._methods import memmap_function as save
from tensordict.memmap._tensor import MemoryMappedTensor
from tensordict.memmap._version import __version__ as __version__

__all__ = ["MemmapBackend", "MemoryMappedTensor", "load", "load_memmap",
           "memmap", "save"]

resolve_on_access(__name__, call=memmap)
