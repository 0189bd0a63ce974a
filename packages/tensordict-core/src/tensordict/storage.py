"""What storage plugins build on: the base of collections whose reads are copies
(entries in a file, in a database) and their index views that write through, the
helpers to read and write them by rows, atomic writes of files and folders, the
zero prototype that ``from_schema`` hands to a backend, and ``lock_views`` (the index
views of a locked collection whose leaves are its storage, memory-mapped files say,
locked too).

>>> from tensordict.storage import WriteBackMixin, split_rows
>>> import torch
>>> split_rows(slice(2, None), torch.Size([5]))
(slice(2, 5, 1), (slice(None, None, None),))
"""

from tensordict._atomic_file import atomic_write
from tensordict._metadata import lock_views
from tensordict._storage import zeros_prototype
from tensordict._sub_tensordict import _SubTensorDict
from tensordict._write_back import IN_PLACE_OPS, WriteBackMixin, check_fits, split_rows

#: ``collection[index]`` of a storage class, as a view writing through: what its ``_index``
#: returns (``IndexView(self, index)``). Reads go through the collection's ``_get_at_str``
#: (one entry's rows) and ``_read_at`` (all of them), writes through its
#: ``_set_at_index``; ``td._get_sub_tensordict(index)`` is the same class.
IndexView = _SubTensorDict

__all__ = ["IN_PLACE_OPS", "IndexView", "WriteBackMixin", "atomic_write", "check_fits",
           "lock_views", "split_rows", "zeros_prototype"]
