"""Print, per benchmark group, our time over the baseline's time.

Usage: ``python benchmarks/ratios.py results.json`` where ``results.json`` comes from
``pytest benchmarks --benchmark-only --benchmark-json=results.json`` (``tox -e bench``
does both). The convention is in benchmarks/README.md: in each group, a test with
``baseline`` in its name times the plain dict-of-tensors (or raw torch) version, every
other test times ours. Medians are compared: on a shared machine a few stalled rounds
move a mean far more than a median.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict
from pathlib import Path


def ratio_rows(results: dict) -> list[tuple[str, str, float, float]]:
    """``(group, test, our median, baseline median)`` for each non-baseline benchmark.

    >>> ratio_rows({"benchmarks": [
    ...     {"group": "get", "name": "test_get", "stats": {"median": 3e-6}},
    ...     {"group": "get", "name": "test_get_baseline", "stats": {"median": 1e-6}},
    ... ]})
    [('get', 'test_get', 3e-06, 1e-06)]
    """
    groups: dict[str, dict[str, list[tuple[str, float]]]] = defaultdict(
        lambda: {"ours": [], "baseline": []}
    )
    for bench in results.get("benchmarks", []):
        side = "baseline" if "baseline" in bench["name"] else "ours"
        group = bench.get("group") or bench["name"]
        groups[group][side].append((bench["name"], bench["stats"]["median"]))
    rows = []
    for group, sides in sorted(groups.items()):
        # several baselines in one group: compare with the fastest
        baseline = min((median for _, median in sides["baseline"]), default=math.nan)
        rows.extend((group, name, median, baseline) for name, median in sorted(sides["ours"]))
    return rows


def format_table(rows: list[tuple[str, str, float, float]]) -> str:
    """The ratio table, slowest ratio last (no baseline: nan), with the geometric mean.

    >>> print(format_table([("get", "test_get", 3e-6, 1e-6)]))
    group  test      ours (us)  baseline (us)    ratio
    get    test_get       3.00           1.00     3.00
    geometric mean of 1 ratios: 3.00
    """
    rows = sorted(rows, key=lambda r: r[2] / r[3] if r[3] == r[3] else math.inf)
    group_width = max([len(r[0]) for r in rows] + [5])
    test_width = max([len(r[1]) for r in rows] + [4])
    lines = [f"{'group':<{group_width}}  {'test':<{test_width}}  {'ours (us)':>10}  "
             f"{'baseline (us)':>13}  {'ratio':>7}"]
    ratios = []
    for group, name, ours, baseline in rows:
        ratio = ours / baseline
        if not math.isnan(ratio):
            ratios.append(ratio)
        lines.append(f"{group:<{group_width}}  {name:<{test_width}}  {ours * 1e6:>10.2f}  "
                     f"{baseline * 1e6:>13.2f}  {ratio:>7.2f}")
    if ratios:
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        lines.append(f"geometric mean of {len(ratios)} ratios: {geomean:.2f}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"no benchmark results at {path} (no benchmark ran)")
        return 0
    rows = ratio_rows(json.loads(path.read_text()))
    print(format_table(rows) if rows else "no benchmark results")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
