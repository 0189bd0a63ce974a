"""An example third-party plugin adding ops to every tensor collection: a method
(``clip_norm_``), a ``torch`` function (``torch.nan_to_num``) and a leaf-wise op
(``softsign``/``softsign_``), through the public hooks alone.

>>> import torch
>>> from tensordict import TensorDict
>>> td = TensorDict(a=torch.tensor([3.0, float("nan")]), b=torch.tensor([4.0, 0.0]))
>>> torch.nan_to_num(td)["a"]
tensor([3., 0.])
>>> td.softsign()["b"]
tensor([0.8000, 0.0000])
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F  # noqa: N812

from tensordict.extending import pointwise_methods
from tensordict.plugins import hookimpl

__version__ = "0.1.0"
#: the versions of tensordict's plugin API this plugin works with
TENSORDICT_PLUGIN_API = (1,)


def clip_norm_(td: Any, max_norm: float) -> torch.Tensor:
    """Scale the floating-point leaves of ``td`` in place so that their L2 norm, taken as
    one vector, is at most ``max_norm``; the norm before clipping.

    >>> from tensordict import TensorDict
    >>> td = TensorDict(a=torch.tensor([3.0]), b=TensorDict(c=torch.tensor([4.0])))
    >>> td.clip_norm_(1.0), td["a"], td["b", "c"]
    (tensor(5.), tensor([0.6000]), tensor([0.8000]))
    """
    if max_norm <= 0:
        raise ValueError(f"clip_norm_: max_norm must be positive, got {max_norm}")
    floats = [value for value in td.values(include_nested=True, leaves_only=True)
              if isinstance(value, torch.Tensor) and value.is_floating_point()]
    if not floats:
        return torch.zeros(())
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(x) for x in floats]))
    if norm > max_norm:
        scale = max_norm / norm
        td.apply_(lambda x: x * scale if x.is_floating_point() else x)
    return norm


def nan_to_num(input: Any, nan: float = 0.0, posinf: float | None = None,  # noqa: A002
               neginf: float | None = None) -> Any:
    """``torch.nan_to_num`` of every leaf of a tensor collection."""
    return input.apply(lambda x: torch.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf))


@hookimpl
def tensordict_methods() -> dict[str, Callable[..., Any]]:
    return {"clip_norm_": clip_norm_, **pointwise_methods("softsign", F.softsign)}


@hookimpl
def tensordict_torch_functions() -> dict[Callable[..., Any], Callable[..., Any]]:
    return {torch.nan_to_num: nan_to_num}
