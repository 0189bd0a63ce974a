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
from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from tensordict import TensorDict, TensorDictBase
from tensordict._pytree import _fit_non_tensor
from tensordict.nn.common import TensorDictModuleBase, _module_repr
from tensordict.nn.params import TensorDictParams

__all__ = ["EnsembleModule"]

_Tensor = torch.Tensor
# a plain TensorDict's structure: ((key, None for a tensor, the structure of a
# sub-TensorDict or the non-tensor entry itself), ...), batch size, device
_Structure = tuple[tuple[tuple[str, Any], ...], torch.Size, Any]


def _flatten(td: Any, leaves: list[_Tensor]) -> _Structure | None:
    """Append the tensors of ``td`` to ``leaves`` and return its structure, or None unless
    ``td`` is a plain TensorDict (no dim names) of tensors, non-tensor entries and such
    TensorDicts.

    >>> leaves = []
    >>> _flatten(TensorDict(a=torch.zeros(2), batch_size=[2]), leaves)
    ((('a', None),), torch.Size([2]), None)
    """
    if td.__class__ is not TensorDict or td._names is not None:
        return None
    items = []
    for key, value in td._tensordict.items():
        if value.__class__ is _Tensor or value.__class__ is nn.Parameter:
            leaves.append(value)
            items.append((key, None))
            continue
        if value._is_non_tensor:  # not mapped: the structure carries it
            items.append((key, value))
            continue
        sub = _flatten(value, leaves)
        if sub is None:
            return None
        items.append((key, sub))
    return tuple(items), td._batch_size, td._device


def _rebuild(structure: _Structure, leaves: Iterator[_Tensor], lead: tuple[int, ...],
             drop: int) -> TensorDict:
    """The TensorDict of ``structure`` (see :func:`_flatten`) holding the next ``leaves``;
    its batch size loses its first ``drop`` dims and gains ``lead`` in front.

    >>> leaves = []
    >>> structure = _flatten(TensorDict(a=torch.zeros(2), batch_size=[2]), leaves)
    >>> _rebuild(structure, iter([torch.ones(3, 2)]), (3,), 0).batch_size
    torch.Size([3, 2])
    """
    items, batch_size, device = structure
    batch_size = torch.Size((*lead, *batch_size[drop:]))
    entries = {key: next(leaves) if sub is None else _rebuild(sub, leaves, lead, drop)
               if sub.__class__ is tuple else _fit_non_tensor(sub, batch_size)
               for key, sub in items}
    return TensorDict._from_entries(entries, batch_size, device)


class _Structures:
    """The structures of one call's input, parameters and (once known) output: one
    pytree leaf, that ``vmap`` passes through (``in_dims=None``). ``input_drop``: the
    number of leading dims of the input's batch size that ``vmap`` maps (0 if its tensors
    were expanded to ``num_copies`` without it)."""

    __slots__ = ("input", "input_drop", "params", "output")

    def __init__(self, input: _Structure, input_drop: int,  # noqa: A002
                 params: _Structure) -> None:
        self.input, self.input_drop, self.params = input, input_drop, params
        self.output: _Structure | None = None


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
        self._vmapped_flat = torch.vmap(self._call_flat, (0, None), randomness="different")

    def _call_one(self, tensordict: TensorDictBase, params: TensorDictBase) -> TensorDictBase:
        with params.to_module(self.module):
            return self.module(tensordict)

    def _call_flat(self, tensors: list[_Tensor], structures: _Structures) -> Any:
        """:meth:`_call_one` on the input and parameters rebuilt from their tensors (those
        of the input first); returns the output's tensors (its structure goes in
        ``structures``) if it is a plain TensorDict, else the output itself."""
        leaves = iter(tensors)
        tensordict = _rebuild(structures.input, leaves, (), structures.input_drop)
        out = self._call_one(tensordict, _rebuild(structures.params, leaves, (), 1))
        leaves: list[_Tensor] = []
        structures.output = _flatten(out, leaves)
        return out if structures.output is None else leaves

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Run every copy (on the expanded input if ``expand_input``)."""
        num_copies = self.num_copies
        if not self.expand_input and (not tensordict.batch_size
                                      or tensordict.batch_size[0] != num_copies):
            raise ValueError(
                f"EnsembleModule(expand_input=False) needs an input whose first batch dim "
                f"is num_copies={num_copies}, got batch_size {tensordict.batch_size}"
            )
        # plain TensorDicts go through vmap as lists of tensors: torch's pytree handles
        # those much faster than TensorDict nodes; anything else goes as it is
        tensors: list[_Tensor] = []
        input_structure = _flatten(tensordict, tensors)
        if input_structure is not None and self.expand_input:  # what expand() would give
            tensors = [t.expand((num_copies, *t.shape)) for t in tensors]
        params_structure = (None if input_structure is None
                            else _flatten(getattr(self.params_td, "_param_td", None), tensors))
        if params_structure is None:
            vmapped = self._vmapped_shared if self.expand_input else self._vmapped
            return vmapped(tensordict, self.params_td)
        structures = _Structures(input_structure, 0 if self.expand_input else 1,
                                 params_structure)
        out = self._vmapped_flat(tensors, structures)
        if structures.output is None:
            return out
        return _rebuild(structures.output, iter(out), (num_copies,), 0)

    def __repr__(self) -> str:
        return _module_repr(self, [("module", self.module), ("params_td", self.params_td),
                                   ("in_keys", self.in_keys), ("out_keys", self.out_keys)])
