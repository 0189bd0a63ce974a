"""tensordict.distributed: TensorDicts over ``torch.distributed`` process groups.

Installing tensordict-distributed adds ``send``, ``recv``, ``isend``, ``irecv``,
``asend``, ``arecv``, ``init_remote``/``from_remote_init``, ``broadcast``,
``all_reduce``, ``reduce``, ``all_gather``, ``gather_and_stack`` and ``scatter`` to
TensorDicts, lazy stacks and tensorclass instances. This module exports the errors they
raise and the structure description they exchange. Non-tensor values travel as JSON;
values only ``pickle`` can carry are rebuilt as plain data (sets, tensors...) by a
restricted unpickler, and anything else only by a receiving call given
``allow_pickle=True`` (else :class:`PickledDataError`).

>>> from tensordict.distributed import Structure, StructureMismatchError
>>> issubclass(StructureMismatchError, ValueError)
True
"""

from tensordict.distributed._structure import Structure
from tensordict.distributed._version import __version__ as __version__
from tensordict.distributed._wire import PeerError, PickledDataError, StructureMismatchError

__all__ = ["PeerError", "PickledDataError", "Structure", "StructureMismatchError", "__version__"]
