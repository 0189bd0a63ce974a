"""Differences from upstream 0.15.3 that are still bugs of ours.

Each entry is one case id and the kind of difference the harness reports for it (the
kinds are named in ``allowlist.py``). They are not deliberate (those are in
``allowlist.py``): each is to be fixed, and then removed from here, which
``test_differential`` enforces (an entry that no longer differs fails it, as a
difference found in neither list does). None is open today.
"""

OPEN: dict[str, str] = {}
