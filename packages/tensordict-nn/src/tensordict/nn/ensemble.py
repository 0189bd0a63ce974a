"""EnsembleModule: run several independently initialised copies of a module with vmap.

>>> import torch
>>> from torch import nn
>>> from tensordict import TensorDict
>>> from tensordict.nn import EnsembleModule, TensorDictModule
>>> mod = TensorDictModule(nn.Linear(4, 2), in_keys=["a"], out_keys=["b"])
>>> ensemble = EnsembleModule(mod, num_copies=3)
>>> ensemble(TensorDict(a=torch.randn(10, 4), batch_size=[10]))["b"].shape
torch.Size([3, 10, 2])
"""

from __future__ import annotations

import copy

import torch

from tensordict import TensorDict, TensorDictBase
from tensordict.nn.common import TensorDictModuleBase, _module_repr
from tensordict.nn.params import TensorDictParams

__all__ = ["EnsembleModule"]


class EnsembleModule(TensorDictModuleBase):
    """``num_copies`` copies of ``module``, each with freshly initialised parameters
    (``reset_parameters`` of every sub-module), run together with ``torch.vmap``.

    With ``expand_input=True`` the input TensorDict is expanded to
    ``[num_copies, *batch_size]``; otherwise its first dim must already be
    ``num_copies``. The copies' parameters live in ``ensemble.params_td`` (a
    :class:`TensorDictParams`, leading dim ``num_copies``); ``module`` stays a registered
    submodule with its own parameters, untouched (as upstream, ``parameters()`` lists
    both).

    >>> import torch
    >>> from tensordict.nn import TensorDictModule
    >>> ensemble = EnsembleModule(
    ...     TensorDictModule(torch.nn.Linear(2, 2), in_keys=["x"], out_keys=["y"]), 2)
    >>> ensemble.params_td["module", "weight"].shape
    torch.Size([2, 2, 2])
    """

    def __init__(self, module: TensorDictModuleBase, num_copies: int,
                 expand_input: bool = True) -> None:
        super().__init__()
        if num_copies < 1:
            raise ValueError(f"num_copies must be >= 1, got {num_copies}")
        self.in_keys = list(module.in_keys)
        self.out_keys = list(module.out_keys)
        copies = []
        for _ in range(num_copies):
            replica = copy.deepcopy(module)
            for sub in replica.modules():
                if hasattr(sub, "reset_parameters"):
                    sub.reset_parameters()
            copies.append(TensorDict.from_module(replica))
        self.module = module  # kept as it is: each call swaps the copies in, then back
        self.params_td = TensorDictParams(torch.stack(copies).detach())
        self.num_copies = num_copies
        self.expand_input = expand_input
        self._vmapped = torch.vmap(self._call_one, (0, 0), randomness="different")
        # expand_input: every copy sees the input as it is (non-tensor entries stay whole)
        self._vmapped_shared = torch.vmap(self._call_one, (None, 0), randomness="different")

    def _call_one(self, tensordict: TensorDictBase, params: TensorDictBase) -> TensorDictBase:
        with params.to_module(self.module):
            return self.module(tensordict)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Run every copy (on the expanded input if ``expand_input``)."""
        num_copies = self.num_copies
        if not self.expand_input and (not tensordict.batch_size
                                      or tensordict.batch_size[0] != num_copies):
            raise ValueError(
                f"EnsembleModule(expand_input=False) needs an input whose first batch dim "
                f"is num_copies={num_copies}, got batch_size {tensordict.batch_size}"
            )
        # the parameters go as the plain TensorDict the TensorDictParams wraps: vmap takes
        # a plain TensorDict as one unit (see tensordict._vmap)
        params = getattr(self.params_td, "_param_td", self.params_td)
        vmapped = self._vmapped_shared if self.expand_input else self._vmapped
        return vmapped(tensordict, params)

    def __repr__(self) -> str:
        return _module_repr(self, [("module", self.module), ("params_td", self.params_td),
                                   ("in_keys", self.in_keys), ("out_keys", self.out_keys)])
