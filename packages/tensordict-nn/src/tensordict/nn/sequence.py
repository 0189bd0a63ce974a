"""TensorDictSequential: run TensorDict modules one after the other on one TensorDict.

>>> import torch
>>> from torch import nn
>>> from tensordict import TensorDict
>>> from tensordict.nn import TensorDictModule, TensorDictSequential
>>> seq = TensorDictSequential(
...     TensorDictModule(nn.Linear(3, 4), in_keys=["x"], out_keys=["h"]),
...     TensorDictModule(nn.Linear(4, 2), in_keys=["h"], out_keys=["y"]),
... )
>>> seq.in_keys, seq.out_keys
(['x'], ['h', 'y'])
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from torch import nn

from tensordict import LazyStackedTensorDict, NestedKey, TensorDict, TensorDictBase
from tensordict.nn._rollback import record, restore
from tensordict.nn.common import (
    TensorDictModule,
    _as_td_module,
    _normalize_keys,
    dispatch,
)
from tensordict.nn.utils import _set_skip_existing_None

__all__ = ["TensorDictSequential"]


def _run_where_possible(module: nn.Module, tensordict: TensorDictBase, **kwargs: Any) -> None:
    """Run ``module`` in place on the parts of a lazy stack that hold all its inputs
    (recursively); a TensorDict missing some of them is left as it is."""
    if not isinstance(tensordict, LazyStackedTensorDict):
        return
    for part in tensordict.tensordicts:
        if all(part.get(key, None) is not None for key in module.in_keys):
            module(part, **kwargs)
        else:
            _run_where_possible(module, part, **kwargs)


class TensorDictSequential(TensorDictModule):
    """Modules run in order on one TensorDict, each reading what the previous wrote.

    Args:
        *modules: TensorDict modules (anything with ``in_keys``/``out_keys``; a plain
            TensorDict -> TensorDict callable is wrapped in a :class:`WrapModule`), or a
            single ordered dict of named modules.
        partial_tolerant: skip the modules whose inputs are missing instead of raising;
            on a lazy stack, such a module still runs on the stacked TensorDicts that
            hold its inputs.
        selected_out_keys: keep only these of the produced keys (see
            :meth:`select_out_keys`).
        inplace: ``None``/``True`` write into the input TensorDict, ``False`` returns a
            new TensorDict (with no batch size, as upstream) holding only the out keys,
            ``"empty"`` writes them into ``tensordict.empty()``.

    ``in_keys`` are the keys read and not produced by an earlier module; ``out_keys``
    every key produced. The modules live in ``self.module`` (an ``nn.ModuleList``, or an
    ``nn.ModuleDict`` when built from a dict).

    >>> import torch
    >>> from tensordict import TensorDict
    >>> from tensordict.nn import TensorDictModule
    >>> seq = TensorDictSequential(
    ...     TensorDictModule(lambda x: x + 1, in_keys=["x"], out_keys=["y"]),
    ...     TensorDictModule(lambda x, y: x * y, in_keys=["x", "y"], out_keys=["z"]))
    >>> seq(TensorDict(x=torch.ones(2), batch_size=[2]))["z"]
    tensor([2., 2.])
    >>> seq(x=torch.ones(2))  # tensors in, tensors out
    (tensor([2., 2.]), tensor([2., 2.]))
    """

    partial_tolerant: bool = False

    def __init__(
        self,
        *modules: Callable[[TensorDictBase], TensorDictBase] | Mapping[str, Any],
        partial_tolerant: bool = False,
        selected_out_keys: list[NestedKey] | None = None,
        inplace: bool | str | None = None,
    ) -> None:
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            container: nn.Module = nn.ModuleDict(
                OrderedDict((name, _as_td_module(m)) for name, m in modules[0].items()))
        else:
            container = nn.ModuleList([_as_td_module(m) for m in modules])
        in_keys, out_keys = self._compute_in_and_out_keys(list(container.children()))
        super().__init__(container, in_keys=in_keys, out_keys=out_keys, inplace=inplace)
        self.partial_tolerant = partial_tolerant
        if selected_out_keys:
            self.select_out_keys(*_normalize_keys(selected_out_keys, "selected_out_keys"))

    def _compute_in_and_out_keys(self, modules: Iterable[nn.Module]
                                 ) -> tuple[list[NestedKey], list[NestedKey]]:
        """(keys read but not produced by an earlier module, every key produced): inputs in
        order of appearance, outputs in order of their last write (uses nothing of
        ``self``: subclasses call it before ``__init__``).

        >>> from tensordict.nn import TensorDictModule
        >>> first = TensorDictModule(lambda x: x, in_keys=["x"], out_keys=["h"])
        >>> second = TensorDictModule(lambda h, c: h, in_keys=["h", "c"], out_keys=["y"])
        >>> TensorDictSequential._compute_in_and_out_keys(None, [first, second])
        (['x', 'c'], ['h', 'y'])
        """
        in_keys: list[NestedKey] = []
        out_keys: list[NestedKey] = []
        for module in modules:
            in_keys += [key for key in module.in_keys
                        if key not in out_keys and key not in in_keys]
            written = list(dict.fromkeys(module.out_keys))
            out_keys = [key for key in out_keys if key not in written] + written
        return in_keys, out_keys

    def _module_iter(self) -> Iterator[nn.Module]:
        modules = self._modules["module"]
        return iter(modules._modules.values())

    @dispatch(auto_batch_size=False)
    @_set_skip_existing_None()
    def forward(self, tensordict: TensorDictBase | None = None,
                tensordict_out: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        """Run every module on ``tensordict`` (see the class doc for ``inplace``)."""
        return self._run_modules(tensordict, tensordict_out, **kwargs)

    def _run_modules(self, tensordict: TensorDictBase,
                     tensordict_out: TensorDictBase | None = None,
                     **kwargs: Any) -> TensorDictBase:
        inplace = self.inplace is None or self.inplace is True
        writes_input = inplace and tensordict_out is None
        td = tensordict if writes_input else tensordict.clone(False)
        before = record(tensordict, self.out_keys_source) if writes_input else None
        try:
            td = self._run_each(td, **kwargs)
        except Exception:
            if before is not None:
                restore(tensordict, before)
            raise
        if writes_input:
            return td
        produced = td.select(*self.out_keys, strict=False)
        if tensordict_out is not None:
            return tensordict_out.update(produced)
        if self.inplace == "empty":
            return tensordict.empty().update(produced)
        return TensorDict(produced)  # no batch size, as upstream

    def _run_each(self, td: TensorDictBase, **kwargs: Any) -> TensorDictBase:
        """Run the modules one after the other; returns the last TensorDict written."""
        partial_tolerant = self.partial_tolerant
        for module in self._modules["module"]._modules.values():
            if partial_tolerant and any(td.get(key, None) is None for key in module.in_keys):
                _run_where_possible(module, td, **kwargs)
                continue
            out = module(td, **kwargs)
            if out is not None:
                td = out
        return td

    def select_subsequence(self, in_keys: list[NestedKey] | None = None,
                           out_keys: list[NestedKey] | None = None) -> TensorDictSequential:
        """The modules needed to go from ``in_keys`` to ``out_keys``.

        With ``in_keys``, a module is kept when all of its inputs are among ``in_keys`` or
        produced by a kept module; with ``out_keys``, when it produces one of them or an
        input of a later kept module.

        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> seq = TensorDictSequential(
        ...     TensorDictModule(torch.nn.Linear(3, 4), in_keys=["x"], out_keys=["h"]),
        ...     TensorDictModule(torch.nn.Linear(4, 2), in_keys=["h"], out_keys=["y"]))
        >>> len(seq.select_subsequence(out_keys=["h"]))
        1
        """
        named = list(self.module.items()) if isinstance(self.module, nn.ModuleDict) \
            else [(str(i), m) for i, m in enumerate(self.module)]
        if in_keys is not None:
            available = set(_normalize_keys(in_keys, "in_keys"))
            kept = []
            for name, module in named:
                if all(key in available for key in module.in_keys):
                    kept.append((name, module))
                    available.update(module.out_keys)
            named = kept
        if out_keys is not None:
            needed = set(_normalize_keys(out_keys, "out_keys"))
            kept = []
            for name, module in reversed(named):
                if any(key in needed for key in module.out_keys):
                    kept.append((name, module))
                    needed.update(module.in_keys)
            named = kept[::-1]
        if not named:
            raise ValueError(
                f"No modules left after selection with in_keys={in_keys} and "
                f"out_keys={out_keys}. Make sure that in_keys and out_keys are coherent "
                f"(this sequence reads {self.in_keys} and writes {self.out_keys})."
            )
        if isinstance(self.module, nn.ModuleDict):
            return self._rebuild([OrderedDict(named)])
        return self._rebuild([module for _, module in named])

    def _rebuild(self, modules: list[Any]) -> TensorDictSequential:
        """A sequence like this one over ``modules``."""
        return TensorDictSequential(*modules, partial_tolerant=self.partial_tolerant,
                                    inplace=self.inplace)

    def __len__(self) -> int:
        return len(self.module)

    def _refresh_keys(self) -> None:
        """Recompute ``in_keys`` / ``out_keys`` after the modules changed."""
        self.in_keys, self.out_keys = self._compute_in_and_out_keys(self._module_iter())

    def __setitem__(self, index: int | str, module: nn.Module) -> None:
        """Replace (or, by name in a dict-built sequence, add) a module.

        >>> import torch
        >>> from tensordict.nn import TensorDictModule
        >>> seq = TensorDictSequential(TensorDictModule(torch.nn.Linear(2, 2), ["x"], ["y"]))
        >>> seq[0] = TensorDictModule(torch.nn.Linear(2, 2), ["a"], ["b"])
        >>> seq.in_keys, seq.out_keys
        (['a'], ['b'])
        """
        container = self.module
        if isinstance(container, nn.ModuleDict) and isinstance(index, int):
            index = list(container.keys())[index]
        container[index] = _as_td_module(module)
        self._refresh_keys()

    def __delitem__(self, index: int | slice | str) -> None:
        """Remove a module (keys are recomputed)."""
        container = self.module
        if isinstance(container, nn.ModuleDict) and isinstance(index, int):
            index = list(container.keys())[index]
        del container[index]
        self._refresh_keys()

    def __getitem__(self, index: int | slice | str) -> Any:
        if isinstance(index, slice):
            modules = list(self._module_iter())[index]
            return self._rebuild(modules)
        if isinstance(self.module, nn.ModuleDict) and isinstance(index, int):
            return list(self._module_iter())[index]
        return self.module[index]


