"""An example third-party tensordict plugin: the ``npz`` backend and ``td.l2_norm()``.

Importing this module stays cheap (tensordict loads it on first use of a plugin feature);
everything it contributes goes through the public hooks of :mod:`tensordict.hookspecs`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from td_example_plugin._npz import NpzBackend
from tensordict.plugins import hookimpl

__version__ = "0.1.0"
#: the versions of tensordict's plugin API this plugin works with
TENSORDICT_PLUGIN_API = (1,)


def l2_norm(td: Any) -> torch.Tensor:
    """The L2 norm of every floating-point leaf of ``td`` taken as one vector.

    >>> import torch
    >>> from tensordict import TensorDict
    >>> TensorDict(a=torch.tensor([3.0]), b=TensorDict(c=torch.tensor([4.0]))).l2_norm()
    tensor(5.)
    """
    norms = [
        torch.linalg.vector_norm(value.detach())
        for value in td.values(include_nested=True, leaves_only=True)
        if isinstance(value, torch.Tensor) and value.is_floating_point()
    ]
    return torch.linalg.vector_norm(torch.stack(norms)) if norms else torch.zeros(())


@hookimpl
def tensordict_methods() -> dict[str, Callable[..., Any]]:
    return {"l2_norm": l2_norm}


@hookimpl
def tensordict_storage_backends() -> dict[str, NpzBackend]:
    return {"npz": NpzBackend()}
