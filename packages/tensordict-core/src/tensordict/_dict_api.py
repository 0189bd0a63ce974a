"""The dictionary side of a TensorDict: get/set, nested keys, views, selection, locks.

Written once on the primitives of :class:`~tensordict._base.TensorDictBase`
(``_get_str``, ``_set_str``, ``_del_str``, ``_keys_str``, ``_apply_nest``).

Example:
    >>> import torch
    >>> from tensordict import TensorDict
    >>> td = TensorDict(batch_size=[2])
    >>> td["a", "b"] = torch.zeros(2)
    >>> td.flatten_keys()
    TensorDict(batch_size=[2], fields={a.b: f32[]})
    >>> td.select(("a", "b")).exclude("a").is_empty()
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from tensordict import errors
from tensordict._collection import (
    NO_DEFAULT,
    acts_as_tensordict,
    classes,
    is_sub_tensordict,
    is_tensor_collection,
)
from tensordict._keys import (
    TensorDictKeysView,
    TopKeysView,
    has_leaf,
    is_leaf_nontensor,
    iter_items,
    iter_values,
)
from tensordict._metadata import MetadataMixin
from tensordict._nested_key import NestedKey, key_to_path
from tensordict._nontensor import (
    NonTensorData,
    check_non_tensor_write,
    is_non_tensor,
    unwrap_non_tensor,
)
from tensordict._options import get_defaults_to_none
from tensordict._plan import WritePlan, broadcasts_to, check_target, check_write
from tensordict._pointwise import copy_matching_leaves
from tensordict._resize_update import planned_resize
from tensordict._restructure import RestructureMixin
from tensordict._setitem import copy_matching_at, plan_leaf_at_index
from tensordict._update_keys import KeyPaths, update_paths

if TYPE_CHECKING:
    from tensordict._base import TensorDictBase

_new_view = object.__new__
_NUMBERS = frozenset((int, float, bool))  # the values set_at_ writes as they are


def _write_row(target: torch.Tensor, index: int, value: Any, key: NestedKey) -> None:
    """``target[index] = value``, one write that torch checks whole before writing (shape,
    a leaf requiring grad), but for an inference tensor, which it writes first, and an
    expanded one, whose row it writes into every row sharing it: those are checked here;
    a failure is raised again naming ``key``."""
    if not target.is_contiguous() or (not torch.compiler.is_compiling() and
                                      target.is_inference()):
        check_target(target, key)
    try:
        target[index] = value
    except (RuntimeError, TypeError):
        check_write(target, value, key, target.shape[1:])  # raises, naming the entry
        raise

#: How a lazy stack reads entries of different shapes (``get(key, as_list=True)``...);
#: a dense collection, whose values already are one tensor, accepts and ignores them.
_STACK_READ_OPTIONS = frozenset(
    ("as_list", "as_padded_tensor", "as_nested_tensor", "padding_side", "layout",
     "padding_value")
)


class DictMixin(RestructureMixin, MetadataMixin):
    """Mapping behaviour over nested keys (reading, writing, deleting, updating)."""

    __slots__ = ()
    #: whether parts hold keys others lack (only lazy stacks can)
    _has_exclusive_keys = False

    # -- nested access -------------------------------------------------------------------
    def _get_path(self, key: NestedKey, default: Any = NO_DEFAULT, *,
                  leaf_raises: bool = False) -> Any:
        """The stored value at ``key`` (non-tensor data not unwrapped); ``default`` for a
        missing key, and for a key through a leaf unless ``leaf_raises``."""
        if key.__class__ is str:
            return self._get_str(key, default)
        path = key_to_path(key)
        node: Any = self
        for depth, part in enumerate(path):
            if not acts_as_tensordict(node) or \
                    getattr(node, "_is_non_tensor", False):
                if default is not NO_DEFAULT and not leaf_raises:
                    return default
                raise errors.KeyThroughLeafError(
                    f"{path[depth - 1]!r} is a {type(node).__name__}, not a tensordict, "
                    f"so it has no entry {part!r} (looking up {path!r})."
                )
            try:
                node = node._get_str(part)
            except KeyError:
                if default is not NO_DEFAULT:
                    return default
                available = list(node._keys_str())
                raise errors.missing_key(path if depth else part, available, path[:depth]) from None
        return node

    def _parent_of(self, path: tuple[str, ...], create: bool) -> Any:
        """The sub-TensorDict holding ``path[-1]`` (created on the way if asked)."""
        if len(path) == 1:
            return self
        node, depth = self._deepest_node(path)
        if depth < len(path) - 1:
            if not create:
                raise errors.missing_key(path, list(node._keys_str()), path[:depth])
            for part in path[depth:-1]:
                child = node._empty_child()
                node._set_str(part, child, inplace=False, validated=True)
                node = child
        return node

    def _deepest_node(self, path: tuple[str, ...]) -> tuple[Any, int]:
        """The deepest existing sub-TensorDict on the way to ``path[-1]``, and its depth
        (``len(path) - 1`` when it is the parent of ``path[-1]``); KeyError through a leaf."""
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            child = node._get_str(part, None)
            if child is None:
                return node, depth
            if not acts_as_tensordict(child) or \
                    getattr(child, "_is_non_tensor", False):
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a tensordict, so it has "
                    f"no entry {path[depth + 1]!r} (writing {path!r})."
                )
            node = child
        return node, len(path) - 1

    def _empty_child(self) -> Any:
        return classes.TensorDict._from_entries({}, self.batch_size, self.device,
                                              getattr(self, "_names", None))

    # -- reading -------------------------------------------------------------------------
    def get(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """The value at ``key`` (non-tensor data as ``NonTensorData``), or ``default``.

        A missing key gives ``default`` (None unless given; an explicit ``NO_DEFAULT``
        raises KeyError, as upstream).

        >>> td = TensorDict(a=torch.zeros(1))
        >>> td.get("a"), td.get("zzz"), td.get("zzz", 0)
        (tensor([0.]), None, 0)
        """
        if len(args) > 1 or args and "default" in kwargs:
            raise TypeError(f"get() takes one default, got {len(args)} positional "
                            f"{'and a keyword one' if 'default' in kwargs else 'ones'}")
        given = bool(args) or "default" in kwargs
        default = kwargs.pop("default", args[0] if args else NO_DEFAULT)
        if kwargs and kwargs.keys() - _STACK_READ_OPTIONS:
            unexpected = sorted(kwargs.keys() - _STACK_READ_OPTIONS)
            raise TypeError(f"get() got unexpected arguments {unexpected}")
        if kwargs and key.__class__ is not str:  # a lazy stack on the way reads its parts
            stack, rest = self._stack_on_path(key_to_path(key))
            if stack is not None:
                return stack.get(rest, *((default,) if given else ()), **kwargs)
        leaf_raises = default is NO_DEFAULT  # a key through a leaf is an error then
        if leaf_raises and not given and get_defaults_to_none():
            default = None
        return self._get_path(key, default, leaf_raises=leaf_raises)

    def _stack_on_path(self, path: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
        """The first lazy stack holding the rest of ``path``, and that rest (None and ()
        when the path meets none before its last key)."""
        node: Any = self
        for depth, part in enumerate(path[:-1]):
            node = node._get_str(part, None) if acts_as_tensordict(node) else None
            if node is None:
                break
            if isinstance(node, classes.LazyStackedTensorDict):
                return node, path[depth + 1:]
        return None, ()

    def get_non_tensor(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """The Python object stored at ``key`` (tensors are returned as they are)."""
        value = self._get_path(key, default)
        return unwrap_non_tensor(value)

    def is_non_tensor(self, key: NestedKey) -> bool:
        """Whether ``key`` holds non-tensor data."""
        return getattr(self._get_path(key), "_is_non_tensor", False)

    def non_tensor_items(self, include_nested: bool = False) -> tuple[tuple[NestedKey, Any], ...]:
        """``(key, NonTensorData)`` pairs."""
        return tuple(
            (k, v) for k, v in self.items(include_nested, True, is_leaf=is_leaf_nontensor)
            if getattr(v, "_is_non_tensor", False)
        )

    def get_item_shape(self, key: NestedKey) -> torch.Size:
        """The shape of the entry at ``key`` (batch size for collections)."""
        value = self._get_path(key)
        return value.batch_size if is_tensor_collection(value) else value.shape

    def entry_class(self, key: NestedKey) -> type:
        """The class of the entry at ``key``."""
        return type(self._get_path(key))

    def keys(self, include_nested: bool = False, leaves_only: bool = False,
             is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
             ) -> TensorDictKeysView:
        """A live view of the keys (nested ones as tuples with ``include_nested``)."""
        if is_leaf is None and not (include_nested or leaves_only or sort):
            view = _new_view(TopKeysView)  # (no __init__ call: this is a hot path)
            view._td = self
            return view
        return TensorDictKeysView(self, include_nested, leaves_only, is_leaf, sort)

    def values(self, include_nested: bool = False, leaves_only: bool = False,
               is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
               ) -> Iterator[Any]:
        """The values matching :meth:`keys` with the same flags, as an iterator (upstream's
        is a generator; the top level of a TensorDict gives its dict's own view).

        >>> values = TensorDict(a=torch.zeros(1), n={"b": torch.ones(1)}).values(True, True)
        >>> next(values), list(values)
        (tensor([0.]), [tensor([1.])])
        """
        return iter_values(self.keys(include_nested, leaves_only, is_leaf, sort=sort))

    def items(self, include_nested: bool = False, leaves_only: bool = False,
              is_leaf: Callable[[type], bool] | None = None, *, sort: bool = False
              ) -> Iterator[tuple[NestedKey, Any]] | list[tuple[NestedKey, Any]]:
        """``(key, value)`` pairs matching :meth:`keys` with the same flags, as an iterator
        (upstream's is a generator; the top level of a TensorDict gives its dict's own
        view, and every leaf of one, ``items(True, True)``, a list, as upstream).

        >>> [key for key, _ in TensorDict(a=torch.zeros(1), n={"b": torch.ones(1)}).items(True)]
        ['a', 'n', ('n', 'b')]
        """
        return iter_items(self.keys(include_nested, leaves_only, is_leaf, sort=sort))

    @property
    def sorted_keys(self) -> list[str]:
        """The top-level keys in alphabetical order."""
        return sorted(self._keys_str())

    def is_empty(self) -> bool:
        """True if no tensor or non-tensor leaf is stored (empty sub-TensorDicts aside).

        >>> TensorDict(a={}, b={"c": {}}).is_empty(), TensorDict(n={"s": "text"}).is_empty()
        (True, False)
        """
        entries = getattr(self, "_tensordict", None)
        if entries.__class__ is dict:
            return not has_leaf(entries, self.__class__)
        return next(iter(self.keys(True, True)), None) is None  # (a lazy stack...)

    @property
    def depth(self) -> int:
        """The maximum nesting depth of the leaves (0 for a flat TensorDict)."""
        return max((len(k) - 1 if isinstance(k, tuple) else 0
                    for k in self.keys(True, True)), default=0)

    # -- writing -------------------------------------------------------------------------
    def set(self, key: NestedKey, item: Any, inplace: bool = False, *,
            non_blocking: bool = False, **kwargs: Any) -> Any:
        """Write ``item`` at ``key``, creating intermediate levels; returns self.

        With ``inplace=True`` an existing entry is overwritten in its storage.
        """
        if key.__class__ is str:
            return self._set_str(key, item, inplace=inplace, validated=False,
                                 non_blocking=non_blocking)
        path = key_to_path(key)
        node, depth = self._deepest_node(path)
        if depth < len(path) - 1:  # new levels: check the value before creating them
            item = node._validate_value(item, path, non_blocking)  # errors name the full path
            if node.is_locked:
                raise errors.locked(key=path[depth])
            node = self._parent_of(path, create=True)
        node._set_str(path[-1], item, inplace=inplace, validated=depth < len(path) - 1,
                      non_blocking=non_blocking)
        return self

    def __setitem__(self, key: Any, value: Any) -> None:
        if key.__class__ is str:
            self._set_str(key, value, inplace=False, validated=False)
        elif key.__class__ is tuple and key and all(isinstance(k, (str, tuple)) for k in key):
            self.set(key, value)
        else:
            self._set_at_index(key, value)

    def set_(self, key: NestedKey, item: Any, *, non_blocking: bool = False) -> Any:
        """Copy ``item`` into the existing entry ``key`` (KeyError if absent).

        Allowed on locked TensorDicts.
        """
        path = key_to_path(key)
        parent = self._existing_parent(path)
        parent._set_str(path[-1], item, inplace=True, validated=False, non_blocking=non_blocking)
        return self

    def _existing_parent(self, path: tuple[str, ...]) -> Any:
        """The sub-TensorDict holding the existing entry ``path`` (KeyError naming it if it
        is absent); the entry itself is not read, so ragged lazy stacks are fine."""
        parent = self._parent_of(path, create=False)
        if parent._peek_str(path[-1], None) is None:
            shown = path if len(path) > 1 else path[0]
            raise errors.missing_key(shown, list(parent._keys_str()), path[:-1])
        return parent

    def set_non_tensor(self, key: NestedKey, value: Any) -> Any:
        """Store ``value`` as non-tensor data, whatever its type."""
        path = key_to_path(key)
        parent = self._parent_of(path, create=True)
        data = NonTensorData(value, batch_size=parent.batch_size, device=parent.device,
                             names=parent._names)
        parent._set_str(path[-1], data, inplace=False, validated=True)
        return self

    def setdefault(self, key: NestedKey, default: Any = None) -> Any:
        """The value at ``key``; ``default`` is written there first if it is missing."""
        if key not in self:
            self.set(key, default)
        return self[key]

    def __delitem__(self, key: NestedKey) -> None:
        self.del_(key)

    def del_(self, key: NestedKey) -> Any:
        """Delete the (nested) entry ``key``; returns self. A locked TensorDict raises
        whatever the key (as upstream: the lock is checked first)."""
        if self.is_locked:
            raise errors.locked("delete an entry of a")
        path = key_to_path(key)
        self._parent_of(path, create=False)._del_str(path[-1])
        return self

    def pop(self, key: NestedKey, default: Any = NO_DEFAULT) -> Any:
        """Remove ``key`` and return its stored value (or ``default`` if missing)."""
        value = self._get_path(key, default if default is not NO_DEFAULT else NO_DEFAULT)
        if key in self:
            self.del_(key)
        return value

    def popitem(self) -> tuple[str, Any]:
        """Remove and return the last top-level ``(key, value)`` pair."""
        keys = list(self._keys_str())
        if not keys:
            raise KeyError("popitem(): TensorDict is empty")
        value = self._get_str(keys[-1])
        self._del_str(keys[-1])
        return keys[-1], value

    def clear(self) -> Any:
        """Remove every entry; returns self."""
        for key in list(self._keys_str()):
            self._del_str(key)
        return self

    def update(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
               clone: bool = False, inplace: bool = False, *,
               keys_to_update: Sequence[NestedKey] | None = None,
               non_blocking: bool = False, is_leaf: Any = None, update_batch_size: bool = False,
               ignore_lock: bool = False) -> Any:
        """Write every entry of ``input_dict_or_td`` (sub-TensorDicts are merged).

        Validates everything first: on error nothing has been written. With
        ``update_batch_size=True``, a source TensorDict of another batch size gives this
        one (and each nested one) its batch size, provided it has every key of this one.

        >>> td = TensorDict({"a": {"b": torch.zeros(())}})
        >>> td.update({"a": {"c": torch.ones(())}})
        TensorDict(batch_size=[], fields={a: {b: f32[], c: f32[]}})
        """
        paths = update_paths(keys_to_update)
        if input_dict_or_td is self:  # every entry is already there
            if self.is_locked and not ignore_lock:
                raise errors.locked()
            return self
        if update_batch_size and hasattr(input_dict_or_td, "batch_size"):
            resize = planned_resize(self, input_dict_or_td, clone, inplace, paths)
            if resize is not None:
                resize.run()
                return self
        self._update_plan(input_dict_or_td, clone, inplace, paths, non_blocking,
                          update_batch_size).run()
        return self

    def _update_plan(self, source: Any, clone: bool, inplace: bool, paths: KeyPaths | None,
                     non_blocking: bool, resize: bool = False) -> WritePlan:
        """The checked writes of :meth:`update` of the entries that ``paths`` selects
        (``resize``: its ``update_batch_size``)."""
        plan = WritePlan()
        writes = self._plan_update(source, (), paths, clone, inplace, resize)
        plan.call(self._write_entries, writes, inplace, non_blocking)
        return plan

    def _write_entries(self, writes: list[tuple[tuple[str, ...], str, Any]], inplace: bool,
                       non_blocking: bool) -> None:
        """Write the validated ``(parent path, key, value)`` of ``writes``, creating the
        missing levels."""
        for parent_path, key, value in writes:
            if value.__class__ is WritePlan:  # checked writes: into a lazy stack, a resize
                value.run()
                continue
            parent = self._parent_of(parent_path + (key,), create=True) if parent_path else self
            parent._set_str(key, value, inplace=inplace, validated=True,
                            non_blocking=non_blocking)

    def _plan_update(self, source: Any, prefix: tuple[str, ...], paths: KeyPaths | None,
                     clone: bool, inplace: bool = False, resize: bool = False
                     ) -> list[tuple[tuple[str, ...], str, Any]]:
        """Validated ``(parent path, key, value)`` writes for :meth:`update` (each one
        allowed by the locks and, in place, fitting the entry it overwrites): an entry a key
        of ``paths`` runs through is merged into the sub-TensorDict there, or else written
        whole."""
        is_mapping = isinstance(source, Mapping) or acts_as_tensordict(source)
        if not is_mapping and not isinstance(source, Iterable):
            raise errors.NotAMappingError(
                f"update expects a mapping or a TensorDict, got {type(source).__name__}")
        items = source.items() if is_mapping else source
        writes: list[tuple[tuple[str, ...], str, Any]] = []
        for key, value in items:
            path = prefix + ((key,) if key.__class__ is str else key_to_path(key))
            if paths is not None and not paths.runs_through(path):
                continue
            parent = self if len(path) == 1 else self._planned_parent(path)
            if value.__class__ is not torch.Tensor and _is_mapping_like(value):
                target = parent._get_str(path[-1], None)
                if getattr(target, "tensordicts", None) is not None:
                    # a lazy stack gives each part its slice of the input (which may be a
                    # lazy stack of ragged entries, never read as one)
                    below = None if paths is None else paths.below(path)
                    writes.append((path[:-1], path[-1],
                                   target._update_plan(value, clone, inplace, below, False)))
                    continue
                if is_sub_tensordict(target):
                    planned = None
                    if resize and hasattr(value, "batch_size") and paths is None:
                        planned = planned_resize(target, value, clone, inplace)
                    if planned is not None:  # the nested TensorDict takes value's batch size
                        writes.append((path[:-1], path[-1], planned))
                    else:
                        writes += self._plan_update(value, path, paths, clone, inplace,
                                                    resize)
                    continue
            name = path if len(path) > 1 else path[0]
            present = parent._get_str(path[-1], None)
            if parent._is_locked and (present is None or not inplace):
                raise errors.locked(key=name)
            if clone and isinstance(value, torch.Tensor):
                value = value.clone()
            value = parent._validate_value(value, name)
            if inplace and present is not None:  # checked here: nothing written on error
                if getattr(present, "_is_non_tensor", False):
                    check_non_tensor_write(present, value, name)
                elif isinstance(present, torch.Tensor) is not isinstance(value, torch.Tensor):
                    raise errors.inplace_mismatch(name, present, value)
                elif isinstance(value, torch.Tensor):
                    check_write(present, value, name)
            writes.append((path[:-1], path[-1], value))
        return writes

    def _planned_parent(self, path: tuple[str, ...]) -> Any:
        """The existing parent of ``path`` or, if it does not exist yet, a stand-in (a
        locked TensorDict cannot get the missing levels)."""
        node: Any = self
        for part in path[:-1]:
            child = node._get_str(part, None)
            if child is None:
                if node._is_locked:
                    raise errors.locked(key=part)
                return node._empty_child()
            if not acts_as_tensordict(child):
                raise errors.KeyThroughLeafError(
                    f"{part!r} is a {type(child).__name__}, not a TensorDict (writing {path!r})."
                )
            node = child
        return node

    def update_(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
                clone: bool = False, *, non_blocking: bool = False,
                keys_to_update: Sequence[NestedKey] | None = None) -> Any:
        """Copy every entry of the input into the existing entries (KeyError if absent).

        Every entry is checked (it exists, the value fits it) before the first copy: on
        error nothing has been written.

        >>> td = TensorDict(a=torch.zeros(2), b=torch.zeros(2, 3), batch_size=[2])
        >>> try:
        ...     td.update_({"a": torch.ones(2), "b": torch.ones(2, 4)})
        ... except RuntimeError:
        ...     print(td["a"])
        tensor([0., 0.])
        """
        if keys_to_update is None:
            if not clone and copy_matching_leaves(self, input_dict_or_td, non_blocking):
                return self  # same keys, same shapes: one checked copy of every leaf
            paths = None
        else:
            paths = update_paths(keys_to_update)
        self._plan_update_(input_dict_or_td, paths, clone, non_blocking).run()
        return self

    def _plan_update_(self, source: Any, paths: KeyPaths | None, clone: bool,
                      non_blocking: bool) -> WritePlan:
        """The checked copies of :meth:`update_` (of the leaves under ``paths``; without
        them, an entry this TensorDict lacks is skipped unless all are, as upstream)."""
        plan = WritePlan()
        for key, path, parent, value in self._existing_items(source, paths, clone,
                                                             skip_missing=paths is None):
            if isinstance(value, torch.Tensor) and not value.is_nested and \
                    value.shape[:parent.batch_dims] != parent.batch_size:
                value = _broadcast_to_entry(parent, path[-1], value)
            parent._plan_set_(plan, path[-1], value, key, non_blocking)
        return plan

    def _plan_set_(self, plan: WritePlan, key: str, value: Any, path: NestedKey,
                   non_blocking: bool) -> None:
        """Add to ``plan`` the checked in-place write of ``value`` into the existing entry
        ``key`` (``path`` names it in errors)."""
        value = self._validate_value(value, path, non_blocking)  # errors name the full path
        present = self._get_str(key)
        if isinstance(present, torch.Tensor) and isinstance(value, torch.Tensor):
            plan.copy(present, value, path, non_blocking=non_blocking)
        elif is_sub_tensordict(present) and is_sub_tensordict(value):
            plan.extend(present._plan_update_(value, None, False, non_blocking))
        elif isinstance(present, torch.Tensor) or isinstance(value, torch.Tensor) or \
                is_sub_tensordict(present) or is_sub_tensordict(value):
            raise errors.inplace_mismatch(path, present, value)
        else:  # non-tensor data: its content is replaced in place
            check_non_tensor_write(present, value, path)
            plan.call(partial(self._set_str, key, value, inplace=True, validated=True))

    def _plan_at_index(self, index: Any, value: Any) -> WritePlan:
        """The checked writes of ``self[index] = value``; a collection that cannot check
        them ahead overrides nothing and writes when the plan runs."""
        plan = WritePlan()
        plan.call(self._set_at_index, index, value)
        return plan

    def update_at_(self, input_dict_or_td: Mapping[NestedKey, Any] | TensorDictBase,
                   idx: Any, clone: bool = False, *, non_blocking: bool = False,
                   keys_to_update: Sequence[NestedKey] | None = None) -> Any:
        """Write the leaves of the input into the existing entries at the batch index
        ``idx`` (in place; KeyError, before any write, if an entry is absent).

        >>> td = TensorDict(a=torch.zeros(3), n={"b": torch.zeros(3)}, batch_size=[3])
        >>> td.update_at_({"a": 1.0, "n": {"b": 2.0}}, 1)["n", "b"]
        tensor([0., 2., 0.])
        """
        paths = update_paths(keys_to_update)
        if acts_as_tensordict(input_dict_or_td):  # one indexed write, part by part
            source = input_dict_or_td if paths is None else \
                input_dict_or_td.select(*paths.paths, strict=False)
            if copy_matching_at(self, idx, source):
                return self  # the same keys, every leaf fitting: one checked copy
            self._require_entries(source, ())
            self._set_at_index(idx, source)
            return self
        try:
            items = self._existing_items(input_dict_or_td, paths, clone)
        except errors.MissingKeyError as err:
            if all(isinstance(value, torch.Tensor) or is_tensor_collection(value)
                   for _, value in _flat_items(input_dict_or_td)):
                raise
            raise errors.MissingKeyTypeError(*err.args) from None
        plan = WritePlan()
        for _, path, _, value in items:
            plan.extend(self._plan_write_at(path, idx, value))
        plan.run()
        return self

    def _require_entries(self, source: Any, prefix: tuple[str, ...]) -> None:
        """KeyError naming the first entry of ``source`` that this collection lacks (an
        empty sub-collection too, as upstream's dense ``update_at_``), looked up level by
        level (each sub-collection once); leaves are peeked at, never built, so ragged lazy
        stacks are fine."""
        for key in source._keys_str():
            theirs = source._peek_str(key)
            mine = self._peek_str(key, None)
            if mine is not None:
                if is_sub_tensordict(mine) and is_sub_tensordict(theirs):
                    self._get_str(key)._require_entries(source._get_str(key), prefix + (key,))
                continue  # (a leaf and a collection: the write names the mismatch)
            path = prefix + (key,)
            below = next(iter(source._get_str(key).keys(True, True)), None) if \
                is_sub_tensordict(theirs) else None
            if below is not None:  # named by its first leaf, as the dict path does
                path += key_to_path(below)
            raise errors.missing_key(path if len(path) > 1 else key, list(self._keys_str()),
                                     prefix)

    def set_at_(self, key: NestedKey, value: Any, index: Any, *,
                non_blocking: bool = False) -> Any:
        """Write ``value`` into the existing entry ``key`` at the batch index ``index``
        (in place); returns self.

        >>> td = TensorDict(a=torch.zeros(3, 2), batch_size=[3])
        >>> td.set_at_("a", torch.ones(2), 1)["a"][1]
        tensor([1., 1.])
        """
        tensor = value.__class__ is torch.Tensor
        if (tensor or value.__class__ in _NUMBERS) and self.__class__ is classes.TensorDict:
            path = key_to_path(key)  # one leaf: its checked write, without a source walk
            target = self._get_path(path, None)
            if target.__class__ is torch.Tensor:
                batch = self._batch_size
                if index.__class__ is int and batch and -batch[0] <= index < batch[0]:
                    _write_row(target, index, value, key)
                    return self
                if tensor:
                    if index.__class__ is tuple and not index:  # all of it (a lazy part)
                        check_write(target, value, key)
                        target.copy_(value)
                    else:
                        plan_leaf_at_index(self, index, target, value, key).run()
                    return self
        return self.update_at_({key: value}, index, non_blocking=non_blocking)

    def get_at(self, key: NestedKey, *args: Any, **kwargs: Any) -> Any:
        """``td.get(key)[index]``: the entry ``key`` at the batch index (given second or as
        ``index=``). A missing key gives the default, as :meth:`get` does.

        >>> td = TensorDict(a=torch.arange(3), batch_size=[3])
        >>> td.get_at("a", 1), td.get_at("zzz", 1), td.get_at("zzz", 1, "default")
        (tensor(1), None, 'default')
        """
        if args:
            index, args = args[0], args[1:]
        elif "index" in kwargs:
            index = kwargs.pop("index")
        else:
            raise TypeError("index argument missing from get_at")
        value = self._get_path(key, None)  # entries are never None: None means missing
        if value is None:
            return self.get(key, *args, **kwargs)
        return value[index]

    def _existing_items(self, source: Any, paths: KeyPaths | None, clone: bool,
                        skip_missing: bool = False
                        ) -> list[tuple[NestedKey, tuple[str, ...], Any, Any]]:
        """``(key, path, parent, value)`` for the leaves of ``source`` (those under
        ``paths``) to write in place; ``parent`` holds it. An entry this TensorDict lacks
        raises KeyError naming it; with ``skip_missing`` it is skipped, unless they are all
        missing."""
        items = []
        missing: KeyError | None = None
        for key, value in _flat_items(source):
            path = key_to_path(key)
            if paths is not None and not paths.selects(path):
                below = paths.below(path)  # a lazy stack is one entry: its part
                if not below.paths or not isinstance(value, classes.LazyStackedTensorDict):
                    continue
                value = value.select(*below.paths, strict=False)
            try:
                parent = self._existing_parent(path)  # KeyError naming the missing key
            except KeyError as err:
                if not skip_missing:
                    raise
                missing = missing or err
                continue
            if clone and isinstance(value, torch.Tensor):
                value = value.clone()
            items.append((key, path, parent, value))
        if missing is not None and not items:
            raise missing
        return items

    def _plan_write_at(self, path: tuple[str, ...], index: Any, value: Any) -> WritePlan:
        """The checked write of ``value`` into the existing entry at ``path``, at the batch
        ``index``."""
        target = self._get_path(path)
        if isinstance(target, torch.Tensor):
            return plan_leaf_at_index(self, index, target, value,
                                      path if len(path) > 1 else path[0])  # (errors name it)
        if getattr(target, "_is_non_tensor", False):
            if not isinstance(value, torch.Tensor) and not is_tensor_collection(value):
                raise errors.raw_non_tensor_at(path if len(path) > 1 else path[0], value)
            return self._parent_of(path, create=False)._plan_at_index(index, {path[-1]: value})
        return target._plan_at_index(index, value)

    # -- construction helpers ---------------------------------------------------------------
    @classmethod
    def fromkeys(cls, keys: Iterable[NestedKey], value: Any = 0) -> Any:
        """A TensorDict with ``value`` at each (nested) key.

        >>> TensorDict.fromkeys(["a", ("b", "c")], 0)
        TensorDict(batch_size=[], fields={a: i64[], b: {c: i64[]}})
        """
        out = classes.TensorDict()
        for key in keys:
            out.set(key, value)
        return out


def _is_mapping_like(value: Any) -> bool:
    """A TensorDict (not non-tensor data) or another mapping: merged into sub-TensorDicts
    by update."""
    return is_sub_tensordict(value) or (isinstance(value, Mapping)
                                        and not is_tensor_collection(value))


def _flat_items(source: Any) -> Iterable[tuple[NestedKey, Any]]:
    """The leaves of ``source`` by nested key; a lazy stack below the root is one entry
    (it writes itself, part by part: its parts may differ in shape)."""
    if isinstance(source, classes.LazyStackedTensorDict):
        return source.items(True, True, is_leaf=is_leaf_nontensor)
    if acts_as_tensordict(source):
        return _leaves_and_lazy_nodes(source, ())
    out: list[tuple[NestedKey, Any]] = []
    for key, value in source.items():
        if isinstance(value, Mapping) and not is_non_tensor(value):
            out += [((key, *key_to_path(k)), v) for k, v in _flat_items(value)]
        else:
            out.append((key, value))
    return out


def _leaves_and_lazy_nodes(td: Any, prefix: tuple[str, ...]) -> list[tuple[NestedKey, Any]]:
    out: list[tuple[NestedKey, Any]] = []
    for key, value in td.items():
        name = prefix + (key,) if prefix else key
        if is_tensor_collection(value) and not getattr(value, "_is_non_tensor", False) and \
                not isinstance(value, classes.LazyStackedTensorDict):
            out += _leaves_and_lazy_nodes(value, prefix + (key,))
        else:
            out.append((name, value))
    return out


def _broadcast_to_entry(parent: Any, key: str, value: torch.Tensor) -> torch.Tensor:
    """``value`` expanded to the shape of the tensor entry ``key`` of ``parent`` when it
    broadcasts to it (``update_``/``copy_`` copy as ``Tensor.copy_`` does, as upstream);
    else ``value`` as it is (the write names the mismatch).

    >>> td = TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    >>> _broadcast_to_entry(td, "a", torch.arange(3.0)).shape
    torch.Size([2, 3])
    """
    try:
        shape = parent.get_item_shape(key)
    except (KeyError, RuntimeError):  # (absent, or non-tensor data)
        return value
    if -1 in shape or not isinstance(parent._peek_str(key, None), torch.Tensor) or \
            not broadcasts_to(value.shape, shape):
        return value
    return value.expand(shape)
