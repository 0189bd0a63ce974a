"""Deliberate differences from upstream 0.15.3: case id -> (kind of difference, reason).

Each entry is one case (no patterns): a difference the harness reports and we keep on
purpose, with the one-line reason that docs/migration.md gives. ``test_differential``
fails on an entry that no longer differs, so the list stays exact.
"""

ALLOWED: dict[str, tuple[str, str]] = {}
