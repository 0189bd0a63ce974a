"""The one leaf-wise traversal, and the ``apply`` family built on it.

Every op that touches each leaf (apply, indexing, shape ops, device moves, clone,
pointwise math) is a function handed to :meth:`TraverseMixin._traverse`. The function
sees tensor leaves only. Shape ops and indexing pass the resulting ``batch_size``:
sub-TensorDicts then get ``batch_size + their extra dims`` and non-tensor data is
moved with the batch. Without ``batch_size`` non-tensor data is kept as it is.

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2, 3)}}, batch_size=[2])
    >>> td.apply(lambda x: x * 2)["n", "b"].sum().item()
    12.0
    >>> td.named_apply(lambda key, x: x if key == "a" else None)
    TensorDict(batch_size=[2], fields={a: f32[]})
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch

from tensordict._base import NO_DEFAULT
from tensordict._shapes import as_device, as_size

_Tensor = torch.Tensor


class TraverseMixin:
    """The traversal (for classes storing entries in ``self._tensordict``)."""

    __slots__ = ()

    def _traverse(
        self,
        fn: Callable[..., Any],
        others: Sequence[Any] = (),
        *,
        batch_size: torch.Size | None = None,
        names: Any = NO_DEFAULT,
        device: Any = NO_DEFAULT,
        inplace: bool = False,
        call_on_nested: bool = False,
        default: Any = NO_DEFAULT,
        named: bool = False,
        nested_keys: bool = False,
        prefix: tuple[str, ...] = (),
        filter_empty: bool | None = None,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> Any:
        parent_ndim = len(self._batch_size)
        out: dict[str, Any] = {}
        for key, value in self._tensordict.items():
            if others:
                other_values = [_entry(other, key, default) for other in others]
            else:
                other_values = ()
            if value.__class__ is _Tensor or isinstance(value, _Tensor):
                if named:
                    new = fn(prefix + (key,) if nested_keys else key, value, *other_values)
                else:
                    new = fn(value, *other_values)
            elif getattr(value, "_is_non_tensor", False):
                if batch_size is not None:
                    child_size = batch_size + value.batch_size[parent_ndim:]
                    new = value._restructure(fn, child_size)
                else:
                    new = value
                if device is not NO_DEFAULT and new.device != device:
                    new = new.to(device)
            elif call_on_nested or (is_leaf is not None and is_leaf(type(value))):
                key_arg = (prefix + (key,) if nested_keys else key,) if named else ()
                new = fn(*key_arg, value, *other_values)
            else:
                child_size = (
                    None if batch_size is None else batch_size + value.batch_size[parent_ndim:]
                )
                child_names = NO_DEFAULT
                if names is not NO_DEFAULT:
                    extra = value.names[parent_ndim:]
                    child_names = None if names is None else tuple(names) + tuple(extra)
                new = value._apply_nest(
                    fn, *other_values, batch_size=child_size, names=child_names,
                    device=device, inplace=inplace, call_on_nested=call_on_nested,
                    default=default, named=named, nested_keys=nested_keys,
                    prefix=prefix + (key,), filter_empty=filter_empty, is_leaf=is_leaf,
                )
                if not inplace and filter_empty is not False and _emptied(value, new):
                    new = None
            if new is None:
                continue
            if inplace:
                if new is not value:
                    _write_back(self, key, value, new)
            else:
                out[key] = new
        if inplace:
            return self
        if names is NO_DEFAULT:
            names = self._names if batch_size is None or len(batch_size) == parent_ndim else None
        elif names is not None:
            names = tuple(names)
            if not any(n is not None for n in names):
                names = None
        return type(self)._new_unsafe(
            out,
            self._batch_size if batch_size is None else batch_size,
            self._device if device is NO_DEFAULT else device,
            names,
        )

    # -- public apply family -------------------------------------------------------------
    def apply(
        self,
        fn: Callable[..., Any],
        *others: Any,
        batch_size: Sequence[int] | None = None,
        device: Any = NO_DEFAULT,
        names: Sequence[str | None] | None = NO_DEFAULT,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
        filter_empty: bool | None = None,
        call_on_nested: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
        **constructor_kwargs: Any,
    ) -> Any:
        """A TensorDict of ``fn(leaf, *other_leaves)``; leaves for which fn returns None
        are dropped.

        Args:
            fn: called on every tensor leaf (with the leaves at the same key of
                ``others``).
            *others: TensorDicts with the same structure.
            batch_size, device, names: of the result, if fn changes them.
            inplace: write the results back into this TensorDict.
            default: used for keys missing in ``others`` (otherwise KeyError).
            filter_empty: drop sub-TensorDicts left empty (default True).
            call_on_nested: call fn on sub-TensorDicts instead of recursing.

        >>> td = TensorDict({"a": torch.zeros(2), "b": torch.ones(2)}, [2])
        >>> td.apply(lambda x, y: x + y, td)["b"]
        tensor([2., 2.])
        """
        if constructor_kwargs:
            raise TypeError(f"unexpected arguments {sorted(constructor_kwargs)}")
        size = None if batch_size is None else as_size(batch_size)
        dev = NO_DEFAULT if device is NO_DEFAULT else as_device(device)
        if size is not None and names is NO_DEFAULT:
            names = None
        return self._apply_nest(
            fn, *others, batch_size=size, names=names, device=dev, inplace=inplace,
            default=default, filter_empty=filter_empty, call_on_nested=call_on_nested,
            is_leaf=is_leaf,
        )

    def apply_(self, fn: Callable[..., Any], *others: Any, **kwargs: Any) -> Any:
        """Like :meth:`apply`, writing each result into the existing leaf.

        >>> x = torch.zeros(2)
        >>> _ = TensorDict(x=x).apply_(lambda t: t + 1)
        >>> x
        tensor([1., 1.])
        """
        return self.apply(fn, *others, inplace=True, **kwargs)

    def named_apply(
        self,
        fn: Callable[..., Any],
        *others: Any,
        nested_keys: bool = False,
        batch_size: Sequence[int] | None = None,
        names: Any = NO_DEFAULT,
        inplace: bool = False,
        default: Any = NO_DEFAULT,
        filter_empty: bool | None = None,
        **kwargs: Any,
    ) -> Any:
        """Like :meth:`apply`, with the key passed first (a tuple path with
        ``nested_keys=True``).

        >>> td = TensorDict({"n": {"a": torch.zeros(())}})
        >>> td.named_apply(lambda k, x: print(k), nested_keys=True)
        ('n', 'a')
        TensorDict(batch_size=[], fields={})
        """
        size = None if batch_size is None else as_size(batch_size)
        return self._apply_nest(
            fn, *others, named=True, nested_keys=nested_keys, batch_size=size,
            names=names, inplace=inplace, default=default, filter_empty=filter_empty, **kwargs,
        )

    def _tensor_leaves(self) -> list[_Tensor]:
        """The tensor leaves, in traversal order (see :meth:`_from_leaves`)."""
        leaves: list[_Tensor] = []
        self._apply_nest(leaves.append, filter_empty=False)
        return leaves

    def _from_leaves(self, leaves: Sequence[_Tensor], **kwargs: Any) -> Any:
        """A TensorDict of this structure whose tensor leaves are ``leaves``, in order."""
        it = iter(leaves)
        return self._apply_nest(lambda _: next(it), filter_empty=False, **kwargs)


def _entry(other: Any, key: str, default: Any) -> Any:
    if isinstance(other, dict):
        value = other.get(key, default)
    else:
        value = other._get_str(key, default)
    if value is NO_DEFAULT:
        raise KeyError(f"key {key!r} is missing from one of the TensorDicts passed to apply")
    return value


def _emptied(old: Any, new: Any) -> bool:
    """Whether a traversal dropped every entry of a non-empty sub-TensorDict."""
    new_empty = next(iter(new._keys_str()), None) is None
    return new_empty and next(iter(old._keys_str()), None) is not None


def _write_back(td: Any, key: str, old: Any, new: Any) -> None:
    if isinstance(old, _Tensor) and isinstance(new, _Tensor):
        old.copy_(new)
    else:
        td._set_str(key, new, inplace=True, validated=False)
