"""Differences from upstream 0.15.3 that are still bugs of ours (issue 43 stays open on them).

Each entry is one case id and the kind of difference the harness reports for it. They are
not deliberate (those are in ``allowlist.py``): each is to be fixed, and then removed from
here, which ``test_differential`` enforces (an entry that no longer differs fails it, as a
difference found in neither list does). Grouped by kind; the worst first:

- ours raises where upstream writes: fast ``copy_at_`` of a Redis store's index view;
- upstream raises where ours writes: ``update_`` of a NonTensorStack into the entry of a
  NonTensorData inside ``with td.unsqueeze(0) as v:`` (ours writes its elements).
"""

from allowlist import (
    OURS_RAISES_LOST,
    UP_RAISES,
)

OPEN: dict[str, str] = {
    # ours raises, upstream writes (root unchanged: a lost write?) (1)
    "redis/nested_int/copy_at_": OURS_RAISES_LOST,
    # upstream raises, ours writes (6)
    "dense/ctx_unsqueeze/update__stack": UP_RAISES,
    "lazy/ctx_unsqueeze/update__stack": UP_RAISES,
    "memmap/ctx_unsqueeze/update__stack": UP_RAISES,
    "nested/ctx_unsqueeze/update__stack": UP_RAISES,
    "params/ctx_unsqueeze/update__stack": UP_RAISES,
    "tensorclass/ctx_unsqueeze/update__stack": UP_RAISES,
}
