"""File-backed TensorDicts: :class:`PersistentTensorDict` over HDF5 or Zarr files.

The class lives here; each file format comes from its own plugin package
(``tensordict-h5`` for ``backend="h5"``, ``tensordict-zarr`` for ``backend="zarr"``),
which registers an adapter with :func:`register_format`.

>>> from tensordict.persistent import PersistentTensorDict
>>> PersistentTensorDict.__name__
'PersistentTensorDict'
"""

from tensordict.persistent._formats import FileFormat, get_format, known_formats, register_format
from tensordict.persistent._td import PersistentTensorDict
from tensordict.persistent._version import __version__

__all__ = ["FileFormat", "PersistentTensorDict", "__version__", "get_format", "known_formats",
           "register_format"]
