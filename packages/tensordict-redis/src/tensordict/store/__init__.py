"""TensorDicts kept in a Redis server: :class:`TensorDictStore` (and
:class:`LazyStackedTensorDictStore` for stacks of differently shaped elements), shared
by every process that opens them by id. Provided by ``tensordict-redis``.

>>> from tensordict.store import TensorDictStore
>>> TensorDictStore.from_store.__doc__.split(" (")[0]
'Open the existing store ``td_id``'
"""

from tensordict.store._lazy import LazyStackedTensorDictStore
from tensordict.store._store import STORE_BACKENDS, TensorDictStore
from tensordict.store._version import __version__

__all__ = ["STORE_BACKENDS", "LazyStackedTensorDictStore", "TensorDictStore", "__version__"]
