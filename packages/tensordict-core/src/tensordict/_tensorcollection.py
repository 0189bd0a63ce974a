"""Upstream's ``tensordict._tensorcollection`` module path (TorchRL imports it).

>>> from tensordict._tensorcollection import TensorCollection
>>> from tensordict import TensorDict
>>> isinstance(TensorDict(), TensorCollection)
True
"""

from tensordict._collection import TensorCollection

__all__ = ["TensorCollection"]
