"""Deliberate differences from upstream 0.15.3: case id pattern -> (kind, reason).

A pattern (``fnmatch``, over ``container/view/write`` ids) names the cases of one
deliberate difference, as narrowly as it can (one container and view: ``redis/int/*``,
never ``*``), with the kind of difference the harness reports for them and the one-line
reason that docs/migration.md gives. ``test_differential`` fails on an entry that no
longer matches any difference, so the list stays exact.
"""

STATE = "another state"
EXCEPTION = "another exception"
UP_RAISES = "upstream raises, ours writes"
UP_RAISES_NO_OP = "upstream raises, ours writes nothing (silent no-op)"
OURS_RAISES = "ours raises, upstream writes"
OURS_RAISES_LOST = "ours raises, upstream writes (root unchanged: a lost write?)"
NO_OP = "ours writes nothing (silent no-op)"


#: the writes of a string into the non-tensor entry "s"
_STRING_WRITES = (
    "set__str", "set_inplace_str", "set_non_tensor", "setitem_str", "update__str",
    "update_inplace_str",
)


def _each(patterns: list[str], kind: str, reason: str) -> dict[str, tuple[str, str]]:
    return {pattern: (kind, reason) for pattern in patterns}


_NOT_WRITTEN_BACK = (
    "; a delete inside a shape-op context is not written back, as upstream does for a TensorDict"
)
_STORE_VIEWS_WRITE = (
    "a Redis store's index view writes through (upstream's is a copy: the write is lost)"
)
_STORE_STACK_READ = "upstream cannot read the non-tensor entry of a lazy stack of Redis stores"
_STORE_NON_TENSOR_AT_INDEX = (
    "a non-tensor write at an index of a store raises TypeError (one value per entry);"
    " upstream loses it or raises from an internal error"
)
_STORE_NEW_NON_TENSOR_AT_INDEX = (
    "a new non-tensor entry cannot be created through an index view of a Redis store"
    " (TypeError: set it on the store); upstream writes it into a copy, where it is lost"
)
_STORE_FAST_COPY = (
    "upstream's index read of a Redis store gives its non-tensor entry as a bare str, which"
    " the source's apply trips over (TypeError); ours then refuses copy_at_(fast=True) into"
    " a store (RuntimeError), as upstream does"
)
_STORE_FAST_COPY_NESTED = (
    "copy_at_(fast=True) into a nested view of a Redis store's index raises, as into the"
    " store itself (upstream writes into an index copy: the write is lost)"
)
_STORE_CAST = "an in-place write into a stored leaf converts bfloat16 by value (upstream raises)"
_STORE_GLITCH = (
    "upstream's op trips over the store's non-tensor entry (h5py/zarr indexing, str has no"
    " zero_, flatten of a str); ours writes"
)
_STORE_NON_TENSOR = (
    "non-tensor writes reach the h5/zarr file or Redis store (upstream raises or keeps the "
    "old value)"
)
_STORE_SUB_BATCH = (
    "a sub-TensorDict written into a file or store keeps its own batch size (upstream reopens"
    " it with the parent's)"
)
_STORE_DEL_MISSING = (
    "deleting or renaming a key a store view lacks raises KeyError (upstream returns, doing "
    "nothing)"
)

ALLOWED: dict[str, tuple[str, str]] = {
    # Storage-backed collections (h5, zarr, Redis)
    **_each(
        ["redis/int/*", "redis/mask/*", "redis/slice/*", "redis/nested_int/*"],
        STATE,
        _STORE_VIEWS_WRITE,
    ),
    **_each(
        [
            f"redis_stack/{view}/*"
            for view in ("self", "int", "mask", "slice", "nested", "nested_int")
        ],
        STATE,
        _STORE_STACK_READ + "; its index views write through (upstream's are copies)",
    ),
    **_each(
        ["redis/nested_int/set_non_tensor", "redis/nested_int/setitem_str"],
        OURS_RAISES_LOST,
        _STORE_NEW_NON_TENSOR_AT_INDEX,
    ),
    **_each(
        [
            "redis/[ims]*/copy_at_",
            "redis_stack/[ims]*/copy_at_",
            "redis_stack/ctx_flatten/copy_at_",
        ],
        EXCEPTION,
        _STORE_FAST_COPY,
    ),
    **_each(["redis/nested_int/copy_at_"], OURS_RAISES_LOST, _STORE_FAST_COPY_NESTED),
    **_each(
        [
            "h5/[ims]*/set__str",
            "h5/[ims]*/setitem_str",
            "h5/[ims]*/update__stack",
            "h5/[ims]*/set_non_tensor",
            "h5/nested_int/setitem_str",
            "h5/nested_int/set_non_tensor",
            "zarr/int/set_non_tensor",
        ],
        EXCEPTION,
        _STORE_NON_TENSOR_AT_INDEX,
    ),
    **_each(
        ["h5/*/set_bf16_", "zarr/*/set_bf16_", "redis/self/set_bf16_", "redis_stack/*/set_bf16_"],
        UP_RAISES,
        _STORE_CAST,
    ),
    **_each(
        [
            "h5/[ims]*/apply_",
            "h5/[ims]*/copy_",
            "h5/[ims]*/masked_fill_",
            "h5/[ims]*/setitem_index",
            "zarr/[is]*/apply_",
            "zarr/int/copy_",
            "zarr/int/masked_fill_",
            "zarr/int/setitem_index",
            "zarr/self/set__str",
            "zarr/self/setitem_str",
            "redis/[ims]*/add_",
            "redis/[ims]*/apply_",
            "redis/[ims]*/masked_fill_",
            "redis/[ims]*/zero_",
            "redis/[ims]*/copy_",
            "redis/[ims]*/setitem_index",
            "redis_stack/[ims]*/setitem_index",
            "redis_stack/[ims]*/apply_",
            "redis_stack/[ims]*/copy_",
            "redis/ctx_flatten/*",
            "redis_stack/ctx_flatten/*",
        ],
        UP_RAISES,
        _STORE_GLITCH,
    ),
    **_each(
        [
            "redis/ctx_flatten/set_wrong_shape_",
            "redis/ctx_flatten/update__stack",
            "redis_stack/ctx_flatten/set_wrong_shape_",
        ],
        EXCEPTION,
        _STORE_GLITCH.replace("; ours writes", "; ours raises its own error for the bad input"),
    ),
    "redis/ctx_flatten/delitem": (
        UP_RAISES_NO_OP,
        "upstream's flatten trips over the store's str" + _NOT_WRITTEN_BACK,
    ),
    **_each(
        [
            "h5/*/set_non_tensor",
            "zarr/self/set_non_tensor",
            "redis/self/set_non_tensor",
            "redis/nested/set_non_tensor",
            "redis_stack/int/set_non_tensor",
            "redis/[ims]*/set__str",
            "redis/[ims]*/update__st[ar]*",
            "redis_stack/[ims]*/update__st[ar]*",
        ],
        UP_RAISES,
        _STORE_NON_TENSOR,
    ),
    "redis_stack/nested_int/set_non_tensor": (
        UP_RAISES_NO_OP,
        _STORE_NON_TENSOR + "; the key lands in the first store alone, so the stack of stores"
        " does not show it, as a lazy stack of TensorDicts",
    ),
    **_each(["h5/self/update__str", "zarr/self/update__str"], STATE, _STORE_NON_TENSOR),
    **_each(
        [
            "h5/*/setitem_td",
            "zarr/*/setitem_td",
            "redis/self/setitem_td",
            "redis/nested/setitem_td",
        ],
        STATE,
        _STORE_SUB_BATCH,
    ),
    **_each(
        [
            "redis/nested/delitem",
            "redis/nested/rename_key_",
            "redis_stack/nested/rename_key_",
            "redis_stack/nested_int/delitem",
            "redis_stack/nested_int/rename_key_",
            "zarr/nested_int/delitem",
        ],
        OURS_RAISES_LOST,
        _STORE_DEL_MISSING,
    ),
}

_SUB_TD_NON_TENSOR = (
    "a _SubTensorDict writes a string into an existing non-tensor entry at its index "
    "(upstream raises)"
)
_SUB_TD_VIEWS = (
    "a _SubTensorDict's sub-TensorDicts, select/exclude and index views are views of its"
    " parent (upstream's are copies: the write is lost)"
)
_SUB_TD_SHAPE = "shape ops and to() of a _SubTensorDict return TensorDicts (upstream raises)"
_SUB_TD_SHAPE_DELETE = _SUB_TD_SHAPE + _NOT_WRITTEN_BACK
_SUB_TD_METADATA = (
    "lock_/names/batch_size of a view of a _SubTensorDict raise (upstream sets them on a copy)"
)
_EQUAL_STRINGS = (
    "a non-tensor entry stays one NonTensorData where every element holds the same string"
    " (upstream turns it into a NonTensorStack of equal strings)"
)
_TO_NON_TENSOR = (
    "with td.to(dtype) as out: writes out's non-tensor entries back too (upstream drops them)"
)
_KTU_SIBLING = (
    'update(keys_to_update=[("nested", "c")]) writes no sibling the list does not name'
    ' (upstream also creates ("nested", "new"))'
)
_TC_KTU = "a tensorclass's update_ honours keys_to_update (upstream writes every key)"
_TC_FLATTEN_KEYS = (
    "flatten_keys() of a tensorclass works (upstream raises: keys must match the fields)"
)
_TC_NEW_KEY = (
    "a new non-field key set on a tensorclass holds its value (upstream stores None, or reads"
    " None back)"
)
_TC_BARE_AT_INDEX = (
    "update_at_ of a bare string into a tensorclass's non-tensor field raises TypeError"
    " (upstream writes it into every element, or into an index copy where it is lost)"
)
_MEMMAP_INDEX_LOCKED = (
    "every index view of a memory-mapped TensorDict is locked: a new key raises"
    " LockedTensorDictError (upstream's lands nowhere)"
)
_MEMMAP_NON_TENSOR_AT_INDEX = (
    'td[i].set_("s", v) on a memory-mapped TensorDict writes v in memory and in the file'
    " (upstream writes the file at most)"
)
_MEMMAP_TO = (
    "with td.to(dtype) as out: on a memory-mapped TensorDict writes back on exit (upstream raises)"
)
_PARAMS_GRAD = (
    "new keys through a _SubTensorDict of TensorDictParams land (upstream raises from autograd"
    " or drops them)"
)
_NAMES = (
    "a sub-TensorDict set through a _SubTensorDict of a named TensorDict gets the parent's "
    "names (upstream shifts them)"
)

_CORE_CONTAINERS = ("dense", "lazy", "lazy_locked", "locked", "named", "nested", "params")
_WHOLE_BATCH_VIEW = (
    "a non-tensor write through a view covering the whole batch (td[:, 0] of a size-1 dim,"
    " reshape) reaches the source (upstream's view holds a copy: the write is lost)"
)
_NON_TENSOR_INPLACE = (
    "set__str",
    "set_inplace_str",
    "update__str",
    "update_at__str",
    "update_inplace_str",
)
_UNSQUEEZED_STACK = (
    "an unsqueeze context reads a string entry as a NonTensorStack, and update_ of a"
    " NonTensorStack into it lands (upstream reads the same stack, then raises that the"
    " entry is a NonTensorData)"
)
_STR_WRITES = ("set_non_tensor", "update__str", "update_at__str", "update_inplace_str")

ALLOWED.update(
    {
        # _SubTensorDict (sub_td views of every container; the sub_td container's own views)
        **_each(
            [f"{c}/sub_td*/{w}" for c in _CORE_CONTAINERS for w in _STR_WRITES]
            + [
                f"sub_td/{v}/{w}"
                for v in ("self", "int", "mask", "slice", "tuple", "sub_td")
                for w in _STR_WRITES
            ]
            + ["sub_td/int_nested/update_at__str", "sub_td/nested/update_at__str"]
            + ["lazy*/sub_td/update__stack", "tensorclass/sub_td/set_non_tensor"],
            UP_RAISES,
            _SUB_TD_NON_TENSOR,
        ),
        **_each(
            [
                "sub_td/select/*",
                "sub_td/exclude/*",
                "sub_td/nested/*",
                "sub_td/int_nested/*",
                "sub_td/[imst]*/update_ktu_creates",
                "sub_td/[imst]*/update_ktu_subtree",
                "sub_td/[imst]*/update_nested",
                "params/sub_td/update_ktu_creates",
            ],
            STATE,
            _SUB_TD_VIEWS,
        ),
        **_each(
            ["sub_td/ctx_permute/*", "sub_td/ctx_unsqueeze/*", "sub_td/ctx_to_dtype/*"],
            UP_RAISES,
            _SUB_TD_SHAPE,
        ),
        **_each(
            [
                f"sub_td/{v}/{w}"
                for v in ("ctx_permute", "ctx_unsqueeze", "ctx_to_dtype")
                for w in ("delitem", "delitem_nested", "pop")
            ],
            UP_RAISES_NO_OP,
            _SUB_TD_SHAPE_DELETE,
        ),
        **_each(
            ["sub_td/ctx_permute/update_at__str", "sub_td/ctx_unsqueeze/update_at__str"],
            EXCEPTION,
            _SUB_TD_SHAPE,
        ),
        **_each(
            [
                "sub_td/nested/lock_",
                "sub_td/nested/set_*",
                "sub_td/int_nested/lock_",
                "sub_td/int_nested/set_*",
            ],
            OURS_RAISES_LOST,
            _SUB_TD_METADATA,
        ),
        "named/sub_td/setitem_td": (STATE, _NAMES),
        **_each(
            ["tensorclass/sub_td/update_at__str", "tensorclass/sub_td/update_inplace_str"],
            STATE,
            _SUB_TD_NON_TENSOR,
        ),
        **_each(["params/sub_td/set*"], UP_RAISES, _PARAMS_GRAD),
        # Non-tensor entries holding one string everywhere
        **_each(["dense/ctx_squeeze/*", "dense/sub_td_tuple/*"], STATE, _EQUAL_STRINGS),
        **_each(["dense/ctx_squeeze/delitem*", "dense/ctx_squeeze/pop"], NO_OP, _EQUAL_STRINGS),
        **_each(
            [
                f"{c}/ctx_to_dtype/{w}"
                for c in ("dense", "lazy", "nested")
                for w in _STRING_WRITES
            ]
            + ["lazy/ctx_to_dtype/update_at__str"]
            + [
                f"tensorclass/ctx_to_dtype/{w}"
                for w in ("set__str", "set_non_tensor", "update__str", "update_inplace_str")
            ]
            + [
                f"lazy_locked/ctx_flatten/{w}"
                for w in (
                    "set__str",
                    "set_inplace_str",
                    "update__str",
                    "update_at__str",
                    "update_inplace_str",
                )
            ]
            + [
                f"sub_td/ctx_flatten/{w}"
                for w in _STRING_WRITES
            ]
            + ["sub_td/ctx_flatten_keys/set_non_tensor", "sub_td/ctx_flatten_keys/setitem_str"],
            STATE,
            _TO_NON_TENSOR
            + "; a shape-op context writes non-tensor values back (upstream drops them)",
        ),
        **_each(
            [
                f"{c}/{v}/{w}"
                for c, v in [
                    *((c, "tuple") for c in ("dense", "locked", "named", "nested", "params")),
                    ("dense", "ctx_reshape"),
                ]
                for w in ("set__str", "set_inplace_str", "update__str", "update_inplace_str")
            ]
            + [
                f"{c}/{v}/{w}"
                for c, v in [("lazy", "tuple"), ("lazy_locked", "tuple"), ("lazy", "ctx_reshape")]
                for w in _NON_TENSOR_INPLACE
            ]
            + [f"tensorclass/tuple/{w}" for w in ("set__str", "update__str", "update_inplace_str")],
            STATE,
            _WHOLE_BATCH_VIEW,
        ),
        # keys_to_update
        **_each(
            [
                "dense/*/update_ktu_tuple",
                "nested/*/update_ktu_tuple",
                "named/*/update_ktu_tuple",
                "params/*/update_ktu_tuple",
                "locked/ctx_unlock/update_ktu_tuple",
                "sub_td/ctx_flatten/update_ktu_tuple",
            ],
            STATE,
            _KTU_SIBLING,
        ),
        **_each(
            ["tensorclass/*/update__ktu_subtree", "tensorclass/*/update__ktu_tuple"], STATE, _TC_KTU
        ),
        # Tensorclasses
        **_each(["tensorclass/ctx_flatten_keys/*"], UP_RAISES, _TC_FLATTEN_KEYS),
        **_each(
            [
                f"tensorclass/ctx_flatten_keys/{w}"
                for w in (
                    "delitem_nested",
                    "fill_nested",
                    "rename_key_nested",
                    "set_nested_",
                    "set_wrong_shape_",
                    "setitem_nested",
                    "update_",
                    "update__ktu_subtree",
                    "update__ktu_tuple",
                    "update_at__str",
                    "update_ktu_subtree",
                    "update_ktu_tuple",
                    "update_nested",
                )
            ],
            EXCEPTION,
            _TC_FLATTEN_KEYS,
        ),
        **_each(
            ["tensorclass/ctx_flatten_keys/delitem", "tensorclass/ctx_flatten_keys/pop"],
            UP_RAISES_NO_OP,
            _TC_FLATTEN_KEYS + _NOT_WRITTEN_BACK,
        ),
        **_each(
            [
                "tensorclass/*/setdefault",
                "tensorclass/sub_td/rename_key_",
                "tensorclass/sub_td/set_non_tensor_new",
            ]
            + [
                f"tensorclass/{v}/{w}"
                for v in ("self", "ctx_to_dtype")
                for w in ("rename_key_", "set_non_tensor_new")
            ],
            STATE,
            _TC_NEW_KEY,
        ),
        **_each(
            [
                f"tensorclass/{v}/update_at__str"
                for v in ("self", "ctx_flatten", "ctx_permute", "ctx_unsqueeze")
            ],
            OURS_RAISES,
            _TC_BARE_AT_INDEX,
        ),
        **_each(
            [
                f"tensorclass/{v}/update_at__str"
                for v in ("ctx_to_dtype", "exclude", "int", "mask", "select", "slice", "tuple")
            ],
            OURS_RAISES_LOST,
            _TC_BARE_AT_INDEX,
        ),
        # Memory-mapped TensorDicts
        **_each(
            ["memmap/slice/*", "memmap/int_nested/unlock_"], OURS_RAISES_LOST, _MEMMAP_INDEX_LOCKED
        ),
        **_each(
            [
                f"memmap/{v}/{w}"
                for v in ("int", "mask", "slice", "tuple")
                for w in ("set__str", "set_inplace_str", "update__str", "update_inplace_str")
            ],
            STATE,
            _MEMMAP_NON_TENSOR_AT_INDEX,
        ),
        **_each(["memmap/ctx_to_dtype/*"], UP_RAISES, _MEMMAP_TO),
        **_each(
            [
                f"{c}/ctx_unsqueeze/update__stack"
                for c in ("dense", "lazy", "memmap", "nested", "params", "tensorclass")
            ],
            UP_RAISES,
            _UNSQUEEZED_STACK,
        ),
        **_each(
            [f"memmap/sub_td/{w}" for w in ("update__str", "update_at__str", "update_inplace_str")],
            EXCEPTION,
            "a string written at an index of a memory-mapped non-tensor entry raises"
            " LockedTensorDictError: its file could not hold it (upstream: TypeError)",
        ),
    }
)
