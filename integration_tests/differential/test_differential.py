"""The differential harness as a test: every write case leaves what upstream leaves.

Runs when ``TENSORDICT_UPSTREAM_PYTHON`` names the python of a venv holding upstream
tensordict 0.15.3 (``tox -e differential`` builds one); skipped otherwise. A difference
fails the test unless ``allowlist.ALLOWED`` (deliberate) or ``open_bugs.OPEN`` (still to
fix) lists that case with that kind; the failure prints the differences grouped by family
(``compare.py --details`` prints the same). Either list fails the tests when one of its
entries no longer differs, so both stay exact.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import compare  # noqa: E402
from allowlist import ALLOWED  # noqa: E402
from open_bugs import OPEN  # noqa: E402

UPSTREAM = os.environ.get("TENSORDICT_UPSTREAM_PYTHON")


@pytest.fixture(scope="module")
def found(tmp_path_factory) -> list[compare.Difference]:
    if not UPSTREAM:
        pytest.skip("set TENSORDICT_UPSTREAM_PYTHON to the python of an upstream 0.15.3 venv")
    up, ours = compare.run_both(UPSTREAM, sys.executable, tmp_path_factory.mktemp("runs"))
    assert len(up) > 5000 and set(up) == set(ours), "both sides run every case"
    return compare.differences(up, ours)


def test_every_write_lands_as_upstreams(found: list[compare.Difference]) -> None:
    not_allowed, _ = compare.split_allowed(found)
    new = [d for d in not_allowed if OPEN.get(d.id) != d.kind]
    if new:
        pytest.fail(
            f"{len(new)} cases differ from upstream:\n" + compare.report(new), pytrace=False
        )


def test_open_bugs_still_differ(found: list[compare.Difference]) -> None:
    """``open_bugs.OPEN`` lists the differences still to fix: a fixed one is removed."""
    still = {d.id: d.kind for d in found}
    fixed = sorted(case for case, kind in OPEN.items() if still.get(case) != kind)
    if fixed:
        pytest.fail(f"listed as open but no longer differing so (remove them): {fixed}",
                    pytrace=False)


def test_allowlist_is_exact(found: list[compare.Difference]) -> None:
    _, allowed = compare.split_allowed(found)
    stale = sorted(set(ALLOWED) - {compare.allowing(d) for d in allowed})
    if stale:
        pytest.fail(f"allowed but no longer differing (remove them): {stale}", pytrace=False)


def test_classify_names_a_silent_no_op() -> None:
    """The comparison itself: a write upstream makes and ours drops is reported as such."""
    before = {"entries": {"a": 0}}
    up = {"before": before, "state": {"root": {"entries": {"a": 1}}}}
    ours = {"before": before, "state": {"root": before}}
    assert compare.classify(up, ours) == "ours writes nothing (silent no-op)"
    raised = {"raised": "KeyError", "mro": ["KeyError", "LookupError", "Exception"]}
    assert compare.classify({"raised": "LookupError"}, raised) is None
    assert compare.classify({"raised": "ValueError"}, raised) == "another exception"
    assert compare.classify({"raised": "_KeyError"}, raised) is None


def test_an_allowlist_entry_needs_its_pattern_and_kind(monkeypatch) -> None:
    kind = "ours raises, upstream writes"
    monkeypatch.setitem(compare.ALLOWED, "redis/int/*", (kind, "a reason"))
    allowed = compare.Difference("redis/int/zero_", "redis|index", kind, "")
    other_kind = allowed._replace(kind="another state")
    other_view = allowed._replace(id="redis/slice/zero_")
    assert compare.split_allowed([allowed, other_kind, other_view]) == (
        [other_kind, other_view],
        [allowed],
    )
