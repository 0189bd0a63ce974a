"""Stacking, concatenating and padding TensorDicts: ``stack``, ``cat``, ``maybe_dense_stack``,
``pad``, ``pad_sequence``.

A dense stack makes one ``torch.stack`` call per leaf and wraps the results without
re-validating them. Keys must match at every level (the error names the key and the
shapes); non-tensor values become a ``NonTensorStack`` (a single ``NonTensorData`` when
they are equal and :func:`~tensordict.capture_non_tensor_stack` is on). Lazy stacks
are stacked (or concatenated) part by part, so the result holds a lazy stack of the
stacked parts and entries that differ in shape between parts are never stacked. With
``out=``, every leaf is checked before the first write. A TypedTensorDict (the first
TensorDict, or an entry of it) keeps its class; ``pad`` gives plain TensorDicts.

Example:
    >>> import torch
    >>> from tensordict import TensorDict, stack, cat
    >>> tds = [TensorDict(a=torch.zeros(3), s="x", batch_size=[3]) for _ in range(2)]
    >>> stack(tds, 1).batch_size, cat(tds, 0).batch_size, stack(tds)["s"][0][0]
    (torch.Size([3, 2]), torch.Size([6]), 'x')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from operator import attrgetter, is_, itemgetter
from typing import Any

import torch

from tensordict import errors
from tensordict._collection import classes, is_tensor_collection, is_tensorclass
from tensordict._helpers import _shape
from tensordict._keys import is_leaf_nontensor
from tensordict._nontensor import merged_non_tensor
from tensordict._options import capture_non_tensor_stack, lazy_legacy
from tensordict._plan import WritePlan, copy_all
from tensordict._unbatched import UnbatchedTensor, stack_unbatched
from tensordict.errors import StackMismatchError

_Tensor = torch.Tensor


class KeyMismatchError(StackMismatchError, KeyError):
    """TensorDicts with different keys: a RuntimeError for ``stack``, a KeyError for
    ``cat`` (as upstream raises each), printed unquoted."""

    def __str__(self) -> str:
        return str(self.args[0])


def entries_of(td: Any) -> dict[str, Any]:
    """The entries of a collection as a dict (a TensorDict's own dict, not a copy)."""
    entries = getattr(td, "_tensordict", None)
    if entries.__class__ is dict:
        return entries
    return {key: td._get_str(key) for key in td._keys_str()}


def _all_dense(values: Sequence[Any]) -> bool:
    """Whether every value is a plain TensorDict, whose slots can be read in one C loop
    (a rollout stacks a thousand of them)."""
    kinds = set(map(type, values))
    return len(kinds) == 1 and classes.TensorDict in kinds


def all_entries(values: Sequence[Any], dense: bool) -> list[dict[str, Any]]:
    """:func:`entries_of` each value (``dense``: all are plain TensorDicts)."""
    return list(map(attrgetter("_tensordict") if dense else entries_of, values))


def _sizes(values: Sequence[Any], dense: bool) -> set[torch.Size]:
    """The batch sizes of the values (``dense``: all are plain TensorDicts)."""
    # (attrgetters made where called: dynamo traces those, not stored ones)
    return set(map(attrgetter("_batch_size" if dense else "batch_size"), values))


def _common_device(tds: Sequence[Any], dense: bool = False) -> torch.device | None:
    devices = set(map(attrgetter("_device" if dense else "device"), tds))
    return devices.pop() if len(devices) == 1 else None


def _combine(parts: list[dict[str, Any]], op: Callable[[list[_Tensor]], _Tensor],
             batch_size: torch.Size, parent_ndim: int, names: Any, device: Any,
             path: tuple[str, ...], non_tensor_op: Callable[[list[Any], torch.Size], Any],
             lazy_op: Callable[[list[Any]], Any]) -> Any:
    """Combine the entries of several TensorDicts level by level (one ``op`` per leaf;
    non-tensor entries by ``non_tensor_op`` given their combined batch size; lazy stacks
    by ``lazy_op``, part by part)."""
    first = parts[0]
    if len(set(map(len, parts))) != 1:
        raise _key_mismatch(parts, path)
    out: dict[str, Any] = {}
    for key, value in first.items():
        try:
            values = list(map(itemgetter(key), parts))
        except KeyError:
            raise _key_mismatch(parts, path) from None
        if isinstance(value, _Tensor):
            try:
                out[key] = (stack_unbatched(values, key, batch_size)
                            if value.__class__ is UnbatchedTensor else op(values))
            except (RuntimeError, TypeError) as err:
                shapes = [tuple(_shape(v)) if isinstance(v, _Tensor) else type(v).__name__
                          for v in values]
                raise StackMismatchError(
                    f"The shapes of the tensors to stack is incompatible: cannot stack or cat "
                    f"the entry {path + (key,)!r}: incompatible shapes {shapes} ({err})"
                ) from None
        elif getattr(value, "_is_non_tensor", False):
            extra = value.batch_size[parent_ndim:]
            out[key] = non_tensor_op(values, batch_size + extra)
        elif _all_lazy(values):
            out[key] = lazy_op(values)
        else:
            extra = value.batch_size[parent_ndim:]
            dense = _all_dense(values)
            sizes = _sizes(values, dense)
            if any(size[parent_ndim:] != extra for size in sizes):
                raise StackMismatchError(
                    f"cannot stack or cat the entry {path + (key,)!r}: batch sizes "
                    f"{[list(v.batch_size) for v in values]}"
                )
            child_names = None if names is None else tuple(names) + tuple(
                value.names[parent_ndim:])
            combined = _combine(all_entries(values, dense), op, batch_size + extra,
                                parent_ndim, child_names, device, path + (key,),
                                non_tensor_op, lazy_op)
            out[key] = combined if value.__class__ is classes.TensorDict else \
                _like(value, combined)
    if names is not None:
        names = None if all(n is None for n in names) else tuple(names)
    return classes.TensorDict._from_entries(out, batch_size, device, names)


_TYPED: tuple[type, ...] = ()  # TypedTensorDict, set by register_typed (no import cycle)


def register_typed(cls: type) -> type:
    """Class decorator of :class:`~tensordict.TypedTensorDict` (its module imports this one):
    its instances keep their class through stack, cat and pad_sequence."""
    global _TYPED
    _TYPED = (cls,)
    return cls


def typed_hook(value: Any) -> Any:
    """The ``_typed`` method of a :class:`~tensordict.TypedTensorDict` (it wraps a
    TensorDict in its class); None for any other value.

    >>> typed_hook(TensorDict()) is None
    True
    """
    cls = value.__class__
    if cls is classes.TensorDict or cls is _Tensor or not isinstance(value, _TYPED):
        return None
    return value._typed


def typed_like(first: Any, out: Any) -> Any:
    """``out``, a TensorDict combined from ``first`` and others, as ``first``'s class when
    that is a :class:`~tensordict.TypedTensorDict`.

    >>> import torch
    >>> from torch import Tensor
    >>> from tensordict import TypedTensorDict
    >>> class S(TypedTensorDict):
    ...     x: Tensor
    >>> type(typed_like(S(x=torch.zeros(1)), TensorDict(x=torch.ones(1)))).__name__
    'S'
    """
    typed = typed_hook(first)
    return out if typed is None else typed(out)


def _like(first: Any, out: Any) -> Any:
    """``out`` as ``first``'s class when that is a tensorclass or a TypedTensorDict."""
    if is_tensorclass(first):
        return type(first)._from_tensordict(out)
    return typed_like(first, out)


def _untyped(td: Any) -> Any:
    """``td`` (a new TensorDict, or a TypedTensorDict over one) with every TypedTensorDict
    in it, itself included, replaced by the TensorDict holding its entries."""
    if typed_hook(td) is not None:
        td = td._source
    if td.__class__ is classes.TensorDict:
        entries = td._tensordict
        for key, value in entries.items():
            if value.__class__ is not _Tensor and not getattr(value, "_is_non_tensor", True):
                entries[key] = _untyped(value)
    return td


def _retyped(first: Any, out: Any) -> Any:
    """``out`` (a new TensorDict of ``first``'s structure) with the class of every
    TypedTensorDict in ``first``, itself included."""
    entries = out._tensordict
    for key, value in entries_of(first).items():
        if value.__class__ is not _Tensor and not getattr(value, "_is_non_tensor", True) and \
                key in entries:
            entries[key] = _retyped(value, entries[key])
    return typed_like(first, out)


def _key_mismatch(parts: list[dict[str, Any]], path: tuple[str, ...]) -> StackMismatchError:
    keys = parts[0].keys()
    i, other = next((i, p) for i, p in enumerate(parts) if p.keys() != keys)
    missing = sorted(path + (k,) for k in keys - other.keys())
    extra = sorted(path + (k,) for k in other.keys() - keys)
    return KeyMismatchError(
        f"The sets of keys in the tensordicts to stack are exclusive: cannot stack or cat "
        f"TensorDicts with different keys: tensordict {i} lacks "
        f"{missing} and has the extra keys {extra} (use "
        f"LazyStackedTensorDict.maybe_dense_stack or lazy_stack for heterogeneous structures)"
    )


def combine_non_tensor(values: Sequence[Any], positions_op: Callable[[list[_Tensor]], _Tensor],
                       batch_size: torch.Size, merge_equal: bool) -> Any:
    """Stack or cat non-tensor entries (``positions_op`` combines their index tensors);
    equal ``NonTensorData`` values stay one value if ``merge_equal``."""
    merged = merged_non_tensor(values, batch_size, merge_equal)
    if merged is not None:
        return merged
    first = values[0]
    flat: list[Any] = []
    positions = []
    for value in values:
        items = flatten_nested(value.tolist(), len(value.batch_size))
        positions.append(torch.arange(len(flat), len(flat) + len(items)).reshape(
            value.batch_size))
        flat += items
    combined = positions_op(positions)
    nested = map_nested(combined.tolist(), flat) if combined.ndim else flat[int(combined)]
    return classes.NonTensorStack.from_list(nested, combined.shape, first.device)


def stack_non_tensor_entries(values: list[Any], batch_size: torch.Size, dim: int,
                             capture: bool) -> Any:
    """Stack non-tensor entries of one batch size along ``dim`` into ``batch_size``: a
    ``NonTensorStack`` of copies of them (the objects shared, not the entries, so a write
    into the stack leaves the inputs as they were), or one entry as
    :func:`~tensordict._nontensor.merged_non_tensor` merges them (``capture``).

    >>> from tensordict import NonTensorData
    >>> stack_non_tensor_entries([NonTensorData("a"), NonTensorData("b")], torch.Size([2]),
    ...                          0, False).tolist()
    ['a', 'b']
    """
    merged = merged_non_tensor(values, batch_size, capture)
    if merged is not None:
        return merged
    size = values[0].batch_size
    if any(value.batch_size != size for value in values):  # raises, naming the shapes
        return combine_non_tensor(values, leaf_stacker(dim), batch_size, capture)
    copies = [value.clone(False) for value in values]
    return classes.NonTensorStack._from_entries(copies, dim)


def flatten_nested(nested: Any, depth: int) -> list[Any]:
    if not depth:
        return [nested]
    return [item for part in nested for item in flatten_nested(part, depth - 1)]


def map_nested(nested: Any, values: list[Any]) -> Any:
    if isinstance(nested, list):
        return [map_nested(part, values) for part in nested]
    return values[nested]


def _check_batch(tds: Sequence[Any], dense: bool, skip_dim: int | None = None
                 ) -> torch.Size:
    """The batch size ``tds`` share (but along ``skip_dim``); ``dense``: all are plain
    TensorDicts (:func:`_all_dense`)."""
    if not tds:
        raise RuntimeError("stack and cat need a non-empty sequence of TensorDicts")
    if not dense and not all(map(is_tensor_collection, set(map(type, tds)))):
        i, td = next((i, td) for i, td in enumerate(tds) if not is_tensor_collection(td))
        raise TypeError(f"stack and cat need TensorDicts, got a {type(td).__name__} at "
                        f"position {i}")
    batch = tds[0].batch_size
    if skip_dim is None:
        if len(_sizes(tds, dense)) == 1:
            return batch
        bad = next((i for i, td in enumerate(tds) if td.batch_size != batch), None)
    else:  # the sizes must agree but along skip_dim
        reference = list(batch)
        del reference[skip_dim:skip_dim + 1]
        bad = None
        for i, td in enumerate(tds):
            size = list(td.batch_size)
            del size[skip_dim:skip_dim + 1]
            if size != reference or len(td.batch_size) != len(batch):
                bad = i
                break
    if bad is not None:
        if skip_dim is not None and set(tds[bad].keys()) != set(tds[0].keys()):
            # upstream's cat compares the keys first (its stack, the batch sizes)
            raise _key_mismatch([dict.fromkeys(td.keys()) for td in tds], ())
        raise StackMismatchError(
            ("stacking tensordicts requires them to have congruent batch sizes: "
             if skip_dim is None else "Sizes of tensors must match except in dimension "
             f"{skip_dim}: ")
            + f"cannot stack or cat TensorDicts of batch sizes {batch} (tensordict 0) and "
            f"{tds[bad].batch_size} (tensordict {bad})"
            + ("" if skip_dim is None else f" along dim {skip_dim}")
        )
    return batch


def stack(input: Sequence[Any], dim: int = 0, *, out: Any = None) -> Any:  # noqa: A002
    """Stack TensorDicts of the same batch size and keys along a new batch dim ``dim``.

    >>> tds = [TensorDict(a=torch.full((2,), float(i)), batch_size=[2]) for i in range(3)]
    >>> stack(tds, 0)["a"]
    tensor([[0., 0.],
            [1., 1.],
            [2., 2.]])
    """
    tds = list(input)
    dense = _all_dense(tds)
    batch = _check_batch(tds, dense)
    ndim = len(batch)
    if not -ndim - 1 <= dim <= ndim:
        raise errors.dim_out_of_range(dim, batch, "torch", inserting=True)
    dim = dim % (ndim + 1)
    if out is not None:
        new = batch[:dim] + torch.Size([len(tds)]) + batch[dim:]
        if not _write_out(out, tds, new, dim, True):  # lazy stacks: written part by part
            return _update_out(out, stack(tds, dim))
        return out
    if lazy_legacy():
        return classes.LazyStackedTensorDict.lazy_stack(tds, dim)
    if _all_lazy(tds):
        return stack_lazy(tds, dim, maybe_dense_stack)
    new = batch[:dim] + torch.Size([len(tds)]) + batch[dim:]
    names = tds[0].names
    names = names[:dim] + [None] + names[dim:]
    capture = capture_non_tensor_stack()
    out = _combine(all_entries(tds, dense), leaf_stacker(dim), new, ndim,
                   names, _common_device(tds, dense), (),
                   lambda values, size: stack_non_tensor_entries(values, size, dim, capture),
                   lambda stacks: stack_lazy(stacks, dim, maybe_dense_stack))
    return typed_like(tds[0], out)


def leaf_stacker(dim: int) -> Callable[[list[_Tensor]], _Tensor]:
    """``torch.stack(tensors, dim)`` as the leaf op of :func:`stack`. One tensor repeated
    (a constant of every step of a rollout, such as its parameters; a plain strided
    tensor) is expanded and copied once, without the pass over the list in torch (a
    quarter of a microsecond a tensor for 0-dim ones).

    >>> x = torch.tensor(2.0)
    >>> leaf_stacker(0)([x, x, x])
    tensor([2., 2., 2.])
    """
    def stack_leaf(tensors: list[_Tensor]) -> _Tensor:
        first = tensors[0]
        if tensors[-1] is first and first.__class__ is _Tensor and \
                first.layout is torch.strided and not first.is_nested and \
                all(map(is_, tensors, repeat(first))):
            shape = list(first.shape)
            shape.insert(dim, len(tensors))
            return first.unsqueeze(dim).expand(shape).clone(
                memory_format=torch.contiguous_format)
        return torch.stack(tensors, dim)
    return stack_leaf


def cat(input: Sequence[Any], dim: int = 0, *, out: Any = None) -> Any:  # noqa: A002
    """Concatenate TensorDicts along the existing batch dim ``dim``.

    >>> tds = [TensorDict(a=torch.zeros(n), batch_size=[n]) for n in (1, 2)]
    >>> cat(tds)["a"].shape
    torch.Size([3])
    """
    tds = list(input)
    batch = tds[0].batch_size if tds else torch.Size()
    ndim = len(batch)
    if not ndim or not -ndim <= dim < ndim:
        raise errors.dim_out_of_range(dim, batch, "cat")
    dim = dim % ndim
    if out is None and _all_lazy(tds):
        joined = cat_lazy(tds, dim)
        if joined is not None:
            return joined
    dense = _all_dense(tds)
    _check_batch(tds, dense, dim)
    new = batch[:dim] + torch.Size([sum(td.batch_size[dim] for td in tds)]) + batch[dim + 1:]
    if out is not None:
        if not _write_out(out, tds, new, dim, False):
            return _update_out(out, cat(tds, dim))
        return out
    def cat_leaves(tensors: list[_Tensor]) -> _Tensor:
        return torch.cat(tensors, dim)

    out = _combine(all_entries(tds, dense), cat_leaves, new, ndim,
                   tds[0].names, _common_device(tds, dense), (),
                   lambda values, size: combine_non_tensor(values, cat_leaves, size, True),
                   lambda stacks: _cat_or_dense(stacks, dim))
    return typed_like(tds[0], out)


def _all_lazy(values: Sequence[Any]) -> bool:
    """Whether every value (at least one) is a lazy stack (not a subclass such as a
    non-tensor stack)."""
    kind = classes.LazyStackedTensorDict
    return bool(values) and values[0].__class__ is kind and \
        all(value.__class__ is kind for value in values)


def stack_lazy(stacks: Sequence[Any], dim: int,
               stack_parts: Callable[[list[Any], int], Any]) -> Any:
    """Lazy stacks stacked along ``dim``: when they share their stack dim and batch size,
    a lazy stack of their parts stacked with ``stack_parts`` (so ragged entries stay in
    their parts); else a lazy stack of the stacks.

    >>> from tensordict import lazy_stack
    >>> inner = lazy_stack([TensorDict(x=torch.zeros(3)), TensorDict(x=torch.zeros(4))])
    >>> out = stack_lazy([inner, inner.clone()], 0, maybe_dense_stack)
    >>> out.stack_dim, out.tensordicts[1]["x"].shape
    (1, torch.Size([2, 4]))
    """
    first = stacks[0]
    sd = first.stack_dim
    if any(s.stack_dim != sd or s.batch_size != first.batch_size for s in stacks[1:]):
        return classes.LazyStackedTensorDict.lazy_stack(list(stacks), dim)
    ndim = len(first.batch_size)
    if not -ndim - 1 <= dim <= ndim:
        raise errors.dim_out_of_range(dim, first.batch_size, "torch", inserting=True)
    dim %= ndim + 1
    part_dim = dim if dim <= sd else dim - 1
    parts = [stack_parts(list(group), part_dim)
             for group in zip(*(s.tensordicts for s in stacks))]
    return classes.LazyStackedTensorDict._from_entries(parts, sd + 1 if dim <= sd else sd)


def cat_lazy(stacks: Sequence[Any], dim: int) -> Any:
    """Lazy stacks of the same stack dim concatenated along ``dim``: their parts joined
    (along the stack dim) or concatenated pairwise (along another dim); None when they
    cannot be (other stack dims or numbers of parts).

    >>> from tensordict import lazy_stack
    >>> inner = lazy_stack([TensorDict(x=torch.zeros(3)), TensorDict(x=torch.zeros(4))])
    >>> cat_lazy([inner, inner], 0).batch_size
    torch.Size([4])
    """
    first = stacks[0]
    sd = first.stack_dim
    if any(s.stack_dim != sd for s in stacks[1:]):
        return None
    if dim == sd:
        parts = [td for s in stacks for td in s.tensordicts]
        return classes.LazyStackedTensorDict(*parts, stack_dim=sd)
    if any(len(s.tensordicts) != len(first.tensordicts) for s in stacks[1:]):
        return None
    part_dim = dim if dim < sd else dim - 1
    parts = [cat(list(group), part_dim) for group in zip(*(s.tensordicts for s in stacks))]
    return classes.LazyStackedTensorDict._from_entries(parts, sd)


def _cat_or_dense(stacks: list[Any], dim: int) -> Any:
    """Nested lazy stacks concatenated part by part, or densely when they cannot be."""
    joined = cat_lazy(stacks, dim)
    return joined if joined is not None else cat([s.contiguous() for s in stacks], dim)


def _update_out(out: Any, result: Any) -> Any:
    """Write ``result`` (a stack or cat, of ``out``'s batch size) into ``out`` in place,
    every entry checked first."""
    plan = WritePlan()
    _plan_into(out, result, plan)
    plan.run()
    return out


def _plan_into(out: Any, result: Any, plan: WritePlan) -> None:
    """The in-place writes of ``result`` into ``out``, level by level: lazy stacks write
    part by part (so entries that differ in shape between parts are never stacked).
    Entries ``out`` lacks are left out, as upstream."""
    if out.__class__ is classes.LazyStackedTensorDict:
        plan.extend(out._plan_update_(result, None, False, False))
        return
    leaves = {}
    for key in result._keys_str():
        value = result._get_str(key)
        target = out._get_str(key, None)
        if target is None:
            continue
        if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False):
            _plan_into(target, value, plan)
        else:
            leaves[key] = value
    if leaves:
        source = classes.TensorDict._from_entries(leaves, result.batch_size, result.device, None)
        plan.extend(out._plan_update_(source, None, False, False))


def _write_out(out: Any, tds: Sequence[Any], batch_size: torch.Size, dim: int,
               stacking: bool) -> bool:
    """Write the stack (or concatenation) of ``tds`` along ``dim`` into the leaves of
    ``out``: every leaf's result is computed and checked first (raising, naming the key
    and shapes, before anything is written), then all are copied at once. False, having
    written nothing, when a lazy stack is met (see :func:`_update_out`). As upstream,
    ``out`` may hold entries the TensorDicts lack (they are left as they are) and lack
    entries they hold (those are not written)."""
    if out.batch_size != batch_size:
        raise RuntimeError(f"out has the batch size {list(out.batch_size)}, the result "
                           f"{list(batch_size)}")
    targets: list[_Tensor] = []
    results: list[_Tensor] = []
    non_tensors: list[tuple[Any, str, Any]] = []
    if not _collect_results(out, list(tds), dim, stacking, (), targets, results, non_tensors):
        return False
    for node, key, _ in non_tensors:  # replaced, not written into: not in a locked node
        if node.is_locked:
            raise errors.locked("stack or cat non-tensor data into", key)
    copy_all(targets, results, non_blocking=False)
    for node, key, value in non_tensors:
        node._set_str(key, value, inplace=False, validated=True)
    return True


def _collect_results(out: Any, tds: list[Any], dim: int, stacking: bool,
                     path: tuple[str, ...], targets: list[_Tensor], results: list[_Tensor],
                     non_tensors: list[tuple[Any, str, Any]]) -> bool:
    """Append to ``targets`` and ``results`` each leaf of ``out`` and what to copy into
    it, and to ``non_tensors`` ``(node, key, stacked non-tensor data)`` to set in ``out``;
    False for a lazy stack."""
    lazy = classes.LazyStackedTensorDict
    if out.__class__ is lazy or tds[0].__class__ is lazy:
        return False
    mine = entries_of(out)
    parts = list(map(entries_of, tds))
    for key, value in parts[0].items():
        target = mine.get(key)
        if target is None:
            continue
        try:
            values = list(map(itemgetter(key), parts))
        except KeyError:
            raise _key_mismatch(parts, path) from None
        if isinstance(value, _Tensor):
            targets.append(target)
            results.append(_checked_result(path + (key,), target, values, dim, stacking))
        elif getattr(value, "_is_non_tensor", False):
            joined = torch.stack(values, dim) if stacking else torch.cat(values, dim)
            non_tensors.append((out, key, joined))
        elif not _collect_results(target, values, dim, stacking, path + (key,), targets,
                                  results, non_tensors):
            return False
    return True


def _checked_result(path: tuple[str, ...], target: Any, values: list[Any], dim: int,
                    stacking: bool) -> _Tensor:
    """The stack (or cat) of ``values`` along ``dim``, to be copied into ``target``:
    raises unless it has ``target``'s shape and a dtype that casts to ``target``'s."""
    key = path[0] if len(path) == 1 else path
    try:
        result = torch.stack(values, dim) if stacking else torch.cat(values, dim)
    except (RuntimeError, TypeError):
        result = None
    if result is None or not isinstance(target, _Tensor):
        if not isinstance(target, _Tensor) or not all(isinstance(v, _Tensor) for v in values):
            raise TypeError(f"cannot stack or cat the entry {key!r} into out: not all "
                            "tensors")
        raise StackMismatchError(f"cannot stack or cat the entry {key!r}: incompatible "
                                 f"shapes {[tuple(v.shape) for v in values]}")
    if result.shape != target.shape:
        raise RuntimeError(f"the entry {key!r} of out has the shape {list(target.shape)}, "
                           f"the result {list(result.shape)}")
    if result.dtype is not target.dtype and not torch.can_cast(result.dtype, target.dtype):
        raise TypeError(f"the entry {key!r} of out has the dtype {target.dtype}, which "
                        f"{result.dtype} values cannot be cast to")
    return result


def maybe_dense_stack(input: Sequence[Any], dim: int = 0, *, out: Any = None,  # noqa: A002
                      **kwargs: Any) -> Any:
    """A dense :func:`stack` when the TensorDicts share keys and shapes, a lazy stack
    (``LazyStackedTensorDict``) otherwise.

    >>> tds = [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2))]
    >>> type(maybe_dense_stack(tds)).__name__
    'TensorDict'
    """
    tds = list(input)
    if out is None and not lazy_legacy():
        try:
            return stack(tds, dim)
        except StackMismatchError:
            pass
    elif out is not None:
        return stack(tds, dim, out=out)
    return classes.LazyStackedTensorDict.lazy_stack(tds, dim, **kwargs)


def pad_sequence(list_of_tensordicts: Sequence[Any], pad_dim: int = 0,
                 padding_value: float | Mapping[Any, float] = 0.0, out: Any = None,
                 return_mask: bool | Any = False, padding_side: str = "right") -> Any:
    """Pad TensorDicts to the longest along ``pad_dim`` and stack them.

    ``pad_dim`` is a batch dim when the TensorDicts have it, else a dim of each leaf.
    ``padding_value`` may map keys to values; ``return_mask`` adds the masks of valid
    elements under ``"masks"`` (or the key given).

    >>> tds = [TensorDict(a=torch.ones(n, 2), batch_size=[n]) for n in (1, 3)]
    >>> out = pad_sequence(tds, return_mask=True)
    >>> out.batch_size, out["masks", "a"].tolist()
    (torch.Size([2, 3]), [[True, False, False], [True, True, True]])
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    tds = list(list_of_tensordicts)
    if not tds:
        raise RuntimeError("pad_sequence needs at least one TensorDict")
    batched = all(len(td.batch_size) > pad_dim for td in tds)
    longest = max(td.batch_size[pad_dim] for td in tds) if batched else None

    def pad_to(x: _Tensor, length: int, value: Any) -> _Tensor:
        missing = length - x.shape[pad_dim]
        flat = [0, 0] * (x.ndim - pad_dim - 1) + (
            [0, missing] if padding_side == "right" else [missing, 0])
        return torch.nn.functional.pad(x, flat, value=value) if missing else x

    def value_for(key: tuple[str, ...]) -> Any:
        if isinstance(padding_value, Mapping):
            return padding_value.get(key, padding_value.get(key[-1] if len(key) == 1 else key,
                                                            0.0))
        return padding_value

    keys = list(tds[0].keys(True, True, is_leaf=is_leaf_nontensor))
    inner = tds[0].batch_size
    if batched:
        inner = inner[:pad_dim] + torch.Size([longest]) + inner[pad_dim + 1:]
    batch_size = torch.Size([len(tds)]) + inner
    result = classes.TensorDict(batch_size=batch_size, device=_common_device(tds))
    masks = {}
    for key in keys:
        path = key if isinstance(key, tuple) else (key,)
        leaves = [td.get(key) for td in tds]
        if getattr(leaves[0], "_is_non_tensor", False):
            if batched:
                leaves = [_pad_stack(v, lambda x: pad_to(x, longest, 0)) if
                          v.batch_size[pad_dim] < longest else v for v in leaves]
            size = torch.Size([len(tds)]) + leaves[0].batch_size
            result.set(key, combine_non_tensor(leaves, torch.stack, size,
                                               capture_non_tensor_stack()))
            continue
        length = longest if batched else max(x.shape[pad_dim] for x in leaves)
        value = value_for(path)
        result.set(key, torch.stack([pad_to(x, length, value) for x in leaves]))
        if return_mask:
            valid = [pad_to(torch.ones(x.shape[:pad_dim + 1], dtype=torch.bool,
                                       device=x.device), length, False) for x in leaves]
            masks[key] = torch.stack(valid)
    result = _retyped(tds[0], result)
    if return_mask:
        mask_key = "masks" if return_mask is True else return_mask
        result.set(mask_key, classes.TensorDict(masks, batch_size=batch_size))
    if out is not None:
        return out.update_(result)
    return result


def pad(tensordict: Any, pad_size: Sequence[int], value: float = 0.0, inplace: bool = False,
        safe: bool = True) -> Any:
    """Pad the batch dims with ``value``: ``pad_size`` holds (before, after) pairs for the
    first batch dims in order. Non-tensor entries become NonTensorStacks padded with None.

    ``inplace``: ``tensordict`` takes the padded entries and batch size and is returned
    (its sub-collections and the parts of its lazy stacks stay the same objects and are
    padded too; a lazy stack padded along its stack dim gets new parts). ``safe`` is
    accepted for compatibility.

    >>> import tensordict
    >>> td = TensorDict(a=torch.ones(2), s="x", batch_size=[2])
    >>> padded = tensordict.pad(td, [1, 0], value=-1.0)
    >>> padded["a"], padded["s"]
    (tensor([-1.,  1.,  1.]), LinkedList([None, 'x', 'x']))
    """
    pad_size = list(pad_size)
    ndim = len(tensordict.batch_size)
    if len(pad_size) % 2 or len(pad_size) > 2 * ndim:
        raise RuntimeError(f"pad_size {pad_size} must hold (before, after) pairs for at most "
                           f"the {ndim} batch dims of batch size {tensordict.batch_size} "
                           "(The length of pad_size must be <= 2 * the number of batch "
                           "dimensions)")
    if inplace:
        if tensordict.is_locked:
            raise errors.locked()
        if not _pads_in_place(tensordict):
            raise RuntimeError(f"pad(inplace=True) is not supported by "
                               f"{type(tensordict).__name__}")
    pairs = [pad_size[i:i + 2] for i in range(0, len(pad_size), 2)]
    new = torch.Size([s + sum(pairs[i]) if i < len(pairs) else s
                      for i, s in enumerate(tensordict.batch_size)])

    def fn(x: _Tensor, fill: float = value) -> _Tensor:
        flat = [0, 0] * (x.ndim - len(pairs))
        for before_after in reversed(pairs):
            flat += before_after
        return torch.nn.functional.pad(x, flat, value=fill)

    as_lists = _is_non_tensor if any(pad_size) else _is_stack  # (nothing added: kept)
    lists = {key: entry for key, entry in tensordict.items(True, True, is_leaf=as_lists)
             if as_lists(type(entry))}
    rest = tensordict.exclude(*lists) if lists else tensordict
    result = rest._apply_nest(fn, batch_size=new, names=tensordict.names, filter_empty=False)
    result = _untyped(result)  # a TypedTensorDict gives a TensorDict, as upstream's
    for key, entry in lists.items():
        result.set(key, _pad_stack(entry, lambda x: fn(x, 0)))
    if lists:
        _ordered_as(result, tensordict)
    if not inplace:
        return result
    _take_padded(tensordict, result, [tuple(pair) for pair in pairs])
    return tensordict


def _ordered_as(out: Any, source: Any) -> None:
    """List the entries of ``out``, a new TensorDict, and of its sub-TensorDicts in the
    order of ``source``'s."""
    entries = out._tensordict
    ordered = {key: entries[key] for key in source._keys_str() if key in entries}
    out._tensordict = {**ordered, **entries}
    for key, value in ordered.items():
        if value.__class__ is classes.TensorDict:
            _ordered_as(value, source._get_str(key))


def _pads_in_place(td: Any) -> bool:
    """Whether :func:`_take_padded` can write into ``td``: a TensorDict holding its
    entries in memory, or a lazy stack of such."""
    if isinstance(td, classes.LazyStackedTensorDict):
        return not _is_non_tensor(type(td)) and all(map(_pads_in_place, td.tensordicts))
    return getattr(td, "_tensordict", None).__class__ is dict


def _is_non_tensor(cls: type) -> bool:
    return getattr(cls, "_is_non_tensor", False)


def _take_padded(td: Any, padded: Any, pairs: list[tuple[int, int]]) -> None:
    """Make ``td`` hold the entries of ``padded``, its copy padded by ``pairs``: its
    TensorDicts and lazy stacks (and their parts) are kept and take theirs in turn; a
    lazy stack padded along its stack dim gets the added parts."""
    if isinstance(td, classes.LazyStackedTensorDict):
        sd = td.stack_dim
        before, after = pairs[sd] if sd < len(pairs) else (0, 0)
        new_parts = padded.unbind(sd)
        part_pairs = pairs[:sd] + pairs[sd + 1:]
        for i, part in enumerate(td.tensordicts):
            _take_padded(part, new_parts[before + i], part_pairs)
        size = padded.batch_size
        td._batch_size = size[:sd] + torch.Size([len(td.tensordicts)]) + size[sd + 1:]
        for i in range(before):
            td.insert(i, new_parts[i])
        for part in new_parts[len(new_parts) - after:] if after else ():
            td.append(part)
        return
    for key in padded._keys_str():
        value = padded._get_str(key)
        present = td._get_str(key, None)
        if present.__class__ is classes.TensorDict or (
                isinstance(present, classes.LazyStackedTensorDict)
                and not _is_non_tensor(type(present))):
            _take_padded(present, value, pairs)
        else:
            td._set_str(key, value, inplace=False, validated=True)
    td.batch_size = padded.batch_size


def _is_stack(cls: type) -> bool:
    return getattr(cls, "_is_non_tensor", False) and hasattr(cls, "from_list")


def _pad_stack(stack: Any, fn: Callable[[_Tensor], _Tensor]) -> Any:
    """A NonTensorStack (or non-tensor data, read as one) padded with None (``fn`` pads a
    tensor of its batch shape with 0)."""
    flat = flatten_nested(stack.tolist(), len(stack.batch_size))
    positions = fn(torch.arange(1, len(flat) + 1).reshape(stack.batch_size))
    values = [flat[i - 1] if i else None for i in positions.reshape(-1).tolist()]
    nested = torch.arange(len(values)).reshape(positions.shape).tolist()
    kind = type(stack) if _is_stack(type(stack)) else classes.NonTensorStack
    return kind.from_list(map_nested(nested, values), positions.shape)
