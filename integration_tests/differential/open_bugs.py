"""Differences from upstream 0.15.3 that are still bugs of ours (issue 43 stays open on them).

Each entry is one case id and the kind of difference the harness reports for it. They are
not deliberate (those are in ``allowlist.py``): each is to be fixed, and then removed from
here, which ``test_differential`` enforces (an entry that no longer differs fails it, as a
difference found in neither list does). Grouped by kind; the worst first:

- ours raises where upstream writes: fast ``copy_at_`` of a Redis store's index view, a
  tensorclass's ``rename_key_``/``set_non_tensor`` of a non-field key;
- upstream raises where ours writes: ``update_`` of a NonTensorStack into a NonTensorData
  through views, a tensorclass's ``_get_sub_tensordict`` taking keys, ``setdefault`` of a
  non-field key in a tensorclass context;
- another exception class: a string ``update_`` through a nested index view of an HDF5 or
  Zarr file.
"""

from allowlist import (
    EXCEPTION,
    OURS_RAISES,
    OURS_RAISES_LOST,
    UP_RAISES,
)

OPEN: dict[str, str] = {
    # another exception (2)
    # ours raises, upstream writes (4)
    "tensorclass/ctx_to_dtype/rename_key_": OURS_RAISES,
    "tensorclass/ctx_to_dtype/set_non_tensor_new": OURS_RAISES,
    "tensorclass/self/rename_key_": OURS_RAISES,
    "tensorclass/self/set_non_tensor_new": OURS_RAISES,
    # ours raises, upstream writes (root unchanged: a lost write?) (13)
    "redis/nested_int/copy_at_": OURS_RAISES_LOST,
    "tensorclass/exclude/rename_key_": OURS_RAISES_LOST,
    "tensorclass/exclude/set_non_tensor_new": OURS_RAISES_LOST,
    "tensorclass/int/rename_key_": OURS_RAISES_LOST,
    "tensorclass/int/set_non_tensor_new": OURS_RAISES_LOST,
    "tensorclass/mask/rename_key_": OURS_RAISES_LOST,
    "tensorclass/mask/set_non_tensor_new": OURS_RAISES_LOST,
    "tensorclass/select/rename_key_": OURS_RAISES_LOST,
    "tensorclass/select/set_non_tensor_new": OURS_RAISES_LOST,
    "tensorclass/slice/rename_key_": OURS_RAISES_LOST,
    "tensorclass/slice/set_non_tensor_new": OURS_RAISES_LOST,
    "tensorclass/tuple/rename_key_": OURS_RAISES_LOST,
    "tensorclass/tuple/set_non_tensor_new": OURS_RAISES_LOST,
    # upstream raises, ours writes (29)
    "dense/ctx_unsqueeze/update__stack": UP_RAISES,
    "lazy/ctx_unsqueeze/update__stack": UP_RAISES,
    "memmap/ctx_unsqueeze/update__stack": UP_RAISES,
    "nested/ctx_unsqueeze/update__stack": UP_RAISES,
    "params/ctx_unsqueeze/update__stack": UP_RAISES,
    "sub_td/ctx_flatten/update__stack": UP_RAISES,
    "sub_td/ctx_flatten_keys/update__stack": UP_RAISES,
    "sub_td/exclude/update__stack": UP_RAISES,
    "sub_td/select/update__stack": UP_RAISES,
    "tensorclass/ctx_flatten/setdefault": UP_RAISES,
    "tensorclass/ctx_permute/setdefault": UP_RAISES,
    "tensorclass/ctx_unsqueeze/setdefault": UP_RAISES,
    "tensorclass/ctx_unsqueeze/update__stack": UP_RAISES,
    "tensorclass/sub_td/delitem": UP_RAISES,
    "tensorclass/sub_td/delitem_nested": UP_RAISES,
    "tensorclass/sub_td/set_inplace_new": UP_RAISES,
    "tensorclass/sub_td/set_inplace_str": UP_RAISES,
    "tensorclass/sub_td/set_new": UP_RAISES,
    "tensorclass/sub_td/set_non_tensor": UP_RAISES,
    "tensorclass/sub_td/setitem": UP_RAISES,
    "tensorclass/sub_td/setitem_nested": UP_RAISES,
    "tensorclass/sub_td/setitem_nested_new": UP_RAISES,
    "tensorclass/sub_td/setitem_new": UP_RAISES,
    "tensorclass/sub_td/setitem_str": UP_RAISES,
    "tensorclass/sub_td/setitem_td": UP_RAISES,
    "tensorclass/sub_td/update": UP_RAISES,
    "tensorclass/sub_td/update_ktu_creates": UP_RAISES,
}
