"""Run the differential cases under upstream tensordict and ours, and compare what each left.

    python compare.py --upstream /path/to/upstream/bin/python [--ours PY] [--details]
        [--containers dense,memmap] [--only ID,...] [--keep DIR]
        [--by family|container|view|write]

prints the summary (cases, matching, differing by family, or by what ``--by`` names, and
kind) and, with ``--details``, every difference (grouped by family). Both interpreters
run ``runner.py`` at the same time, each in one process (restarted after a case that kills
it), with one throwaway redis-server for the store cases when ``redis-server`` is
installed. The upstream side runs without ``PYTHONPATH``, so that it never imports this
repository; ours inherits it (point it at another checkout's ``packages/*/src`` to measure
an older commit).

A case matches when both wrote and left the same state (root, and files or stores read
back afresh), or when both raised and ours raised an instance of a class named as
upstream's (anywhere in our exception's MRO; a leading underscore aside).
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from allowlist import ALLOWED

HERE = Path(__file__).resolve().parent


class Difference(NamedTuple):
    id: str
    family: str
    kind: str
    detail: str


def run_side(python: str, out: Path, env: dict, extra: list[str]) -> dict[str, dict]:
    """Every case's record under ``python`` (``runner.py`` with the ``extra`` arguments),
    by id; a case that killed the interpreter is recorded as raising ``crashed``."""
    records: dict[str, dict] = {}
    skip, total = 0, None
    while total is None or skip < total:
        proc = subprocess.run(
            [python, str(HERE / "runner.py"), str(out), "--skip", str(skip), *extra],
            env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True,
        )  # fmt: skip
        lines = [json.loads(line) for line in out.read_text().splitlines()]
        if total is None:
            if not lines or "meta" not in lines[0]:
                raise RuntimeError(f"{python} runner.py failed:\n{proc.stderr[-3000:]}")
            total = lines[0]["total"]
        records = {rec["id"]: rec for rec in lines[1:]}
        skip = len(records)
        if proc.returncode != 0 and skip < total:
            _record_crash(out, skip, proc.stderr)
            skip += 1
    return records


def _record_crash(out: Path, index: int, stderr: str) -> None:
    """The case that killed the interpreter (the last one it said it was running)."""
    running = [line for line in stderr.splitlines() if line.startswith("running ")]
    case_id = running[-1].removeprefix("running ") if running else f"#{index}"
    record = {"index": index, "id": case_id, "raised": "crashed", "mro": ["crashed"]}
    record["message"] = stderr[-300:]
    with out.open("a") as lines:
        lines.write(json.dumps(record) + "\n")


def run_both(
    upstream: str, ours: str, tmp: Path, containers: str = "", only: str = ""
) -> tuple[dict, dict]:
    """Both sides' records, run at the same time (one interpreter each), with one
    throwaway redis-server for both when the binary is installed."""
    upstream_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    with redis_server() as address, ThreadPoolExecutor(2) as pool:
        extra = ["--containers", containers] if containers else []
        extra += ["--only", only] if only else []
        extra += ["--redis", address] if address else []
        up = pool.submit(run_side, upstream, tmp / "upstream.jsonl", upstream_env, extra)
        us = pool.submit(run_side, ours, tmp / "ours.jsonl", dict(os.environ), extra)
        return up.result(), us.result()


@contextlib.contextmanager
def redis_server() -> Iterator[str | None]:
    """``host:port`` of a throwaway redis-server on a free local port (None without one)."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    server = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for(port)
        yield f"127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait()


def _wait_for(port: int) -> None:
    for _ in range(100):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"redis-server did not start on port {port}")


def classify(up: dict | None, ours: dict | None) -> str | None:
    """None when the two records match, else the kind of difference."""
    if up is None or ours is None:
        return "missing on " + ("upstream" if up is None else "ours")
    if "raised" in up:
        if "raised" not in ours:
            return "upstream raises, ours writes" + (
                " nothing (silent no-op)" if _unchanged(ours) else ""
            )
        return None if _same_class(up["raised"], ours["mro"]) else "another exception"
    if "raised" in ours:
        return "ours raises, upstream writes" + (
            " (root unchanged: a lost write?)" if _unchanged(up) else ""
        )
    if up["state"] == ours["state"]:
        return None
    if _unchanged(ours) and not _unchanged(up):
        return "ours writes nothing (silent no-op)"
    return "another state"


def _same_class(upstream_class: str, our_mro: list[str]) -> bool:
    """Whether our exception is of upstream's class, by name; upstream's private classes
    (``_InplaceWriteError``) match our public ones of the same name."""
    return upstream_class.lstrip("_") in {name.lstrip("_") for name in our_mro}


def _unchanged(record: dict) -> bool:
    """Whether the root was left as it was built (files and stores are not compared)."""
    return "state" in record and record["state"]["root"] == record.get("before")


def differences(up: dict, ours: dict) -> list[Difference]:
    """Every case whose records differ, allowed or not."""
    found = []
    for case_id in sorted(set(up) | set(ours)):
        a, b = up.get(case_id), ours.get(case_id)
        kind = classify(a, b)
        if kind is not None:
            family = (a or b).get("family", "?")
            found.append(Difference(case_id, family, kind, _detail(a, b)))
    return found


def _detail(up: dict | None, ours: dict | None) -> str:
    """Both outcomes: an exception, or where the two states part (first few paths)."""
    if up and ours and "state" in up and "state" in ours:
        paths = list(_parting(up["state"], ours["state"], ""))
        return "; ".join(paths[:4]) + (f"; ... ({len(paths)} paths)" if len(paths) > 4 else "")
    return f"upstream: {_outcome(up)} | ours: {_outcome(ours)}"


def _outcome(rec: dict | None) -> str:
    if rec is None:
        return "-"
    if "raised" in rec:
        return f"{rec['raised']} in {rec.get('phase')}: {rec.get('message', '')[:120]!r}"
    return "wrote (root " + ("unchanged)" if _unchanged(rec) else "changed)")


def _parting(up: object, ours: object, path: str):
    """'path: upstream X, ours Y' for every place the two snapshots differ."""
    if isinstance(up, dict) and isinstance(ours, dict) and "values" not in up:
        for key in sorted(set(up) | set(ours)):
            yield from _parting(up.get(key, "<absent>"), ours.get(key, "<absent>"), f"{path}.{key}")
    elif up != ours:
        yield f"{path.lstrip('.')}: upstream {_short(up)}, ours {_short(ours)}"


def _short(value: object) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) < 90 else text[:87] + "..."


def split_allowed(found: list[Difference]) -> tuple[list[Difference], list[Difference]]:
    """(not allowed, allowed) differences: an allowed one has its id matched by a pattern of
    ``ALLOWED`` (``fnmatch``: ``redis/int/*``) and its kind equal to that entry's."""
    allowed = [d for d in found if allowing(d)]
    return [d for d in found if d not in allowed], allowed


def allowing(difference: Difference) -> str | None:
    """The ``ALLOWED`` pattern that allows ``difference``, if one does."""
    for pattern, (kind, _reason) in ALLOWED.items():
        if kind == difference.kind and fnmatch.fnmatchcase(difference.id, pattern):
            return pattern
    return None


_COLUMNS = {
    "silent no-op": lambda kind: "silent no-op" in kind,
    "ours raises": lambda kind: kind.startswith("ours raises"),
    "upstream raises": lambda kind: kind == "upstream raises, ours writes",
    "other": lambda kind: "no-op" not in kind and "raises" not in kind,
}
"""How the summary counts the kinds of difference (each kind falls in one column)."""


def summary(families: dict[str, str], found: list[Difference], allowed: list[Difference]) -> str:
    """The table: per family (``families`` maps every case id to its family), the cases,
    those that differ, and how they differ."""
    total = Counter(families.values())
    header = f"{'group':<26}{'cases':>7}{'differ':>8}" + "".join(f"{c:>16}" for c in _COLUMNS)
    lines = [header]
    for family in sorted(total):
        kinds = [d.kind for d in found if d.family == family]
        counts = [sum(map(test, kinds)) for test in _COLUMNS.values()]
        row = f"{family:<26}{total[family]:>7}{len(kinds):>8}"
        lines.append(row + "".join(f"{n:>16}" for n in counts))
    n = len(families)
    lines.append(
        f"\ncases: {n}   matching: {n - len(found)}   differing: {len(found)}"
        f" (allowed: {len(allowed)})"
    )
    return "\n".join(lines)


def report(found: list[Difference], per_group: int = 40) -> str:
    """The differences grouped by family then kind, with both outcomes (at most
    ``per_group`` of each group)."""
    groups: dict[tuple[str, str], list[Difference]] = defaultdict(list)
    for d in found:
        groups[(d.family, d.kind)].append(d)
    lines = []
    for (family, kind), diffs in sorted(groups.items()):
        lines.append(f"== {family}: {kind} ({len(diffs)})")
        lines += [f"  {d.id}: {d.detail}" for d in diffs[:per_group]]
        if len(diffs) > per_group:
            lines.append(f"  ... and {len(diffs) - per_group} more")
    return "\n".join(lines)


GROUPINGS = {
    "family": lambda case_id, rec: rec.get("family", "?"),
    "container": lambda case_id, rec: case_id.split("/")[0],
    "view": lambda case_id, rec: rec.get("family", "?|?").split("|")[-1],
    "write": lambda case_id, rec: case_id.split("/")[-1],
}
"""What ``--by`` sums the summary over (a case id is ``container/view/write``)."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="python of a venv with upstream")
    parser.add_argument("--ours", default=sys.executable)
    parser.add_argument("--containers", default="")
    parser.add_argument("--only", default="", help="comma-separated case ids (a repro)")
    parser.add_argument("--details", action="store_true")
    parser.add_argument(
        "--by", choices=sorted(GROUPINGS), default="family", help="what the summary sums over"
    )
    parser.add_argument("--keep", type=Path, help="keep both sides' JSON lines here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.keep or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        for side in ("upstream", "ours"):
            (out / f"{side}.jsonl").unlink(missing_ok=True)
        up, ours = run_both(args.upstream, args.ours, out, args.containers, args.only)
        for side in ("upstream", "ours"):
            meta = json.loads((out / f"{side}.jsonl").open().readline())["meta"]
            print(f"{side}: {meta['tensordict']}")
    found = differences(up, ours)
    not_allowed, allowed = split_allowed(found)
    group = GROUPINGS[args.by]
    groups = {case_id: group(case_id, rec) for case_id, rec in {**ours, **up}.items()}
    print(summary(groups, [d._replace(family=groups[d.id]) for d in found], allowed))
    if args.details:
        print()
        print(report(not_allowed))


if __name__ == "__main__":
    main()
