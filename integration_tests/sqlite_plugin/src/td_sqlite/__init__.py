"""TensorDicts stored in one SQLite file: :class:`SqliteTensorDict`, and the ``sqlite``
storage backend (``td.save(path, backend="sqlite")``, ``TensorDict.load(path)``).

>>> import os, tempfile, torch
>>> from tensordict import TensorDict
>>> path = os.path.join(tempfile.mkdtemp(), "data.db")
>>> stored = TensorDict(obs=torch.arange(6.0).view(3, 2), batch_size=[3]).save(
...     path, backend="sqlite")
>>> stored[1:]["obs"]
tensor([[2., 3.],
        [4., 5.]])
>>> stored.close()
"""

from td_sqlite._td import SqliteTensorDict

__version__ = "0.1.0"
__all__ = ["SqliteTensorDict", "__version__"]
