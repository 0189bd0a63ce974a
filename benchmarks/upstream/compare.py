"""Time ``workloads.py`` under our packages and under upstream tensordict 0.15.3, in two
interpreters of two environments, alternating runs, and print ours / upstream per workload
(the median of the rounds) and their geometric mean; ``--script sweep`` times the broad
sweep of ``sweep.py`` instead.

    python benchmarks/upstream/compare.py --ours .tox/bench-upstream/bin/python \\
        --upstream .tox/bench-upstream/upstream/bin/python [--rounds 3] [--only KEY] \\
        [--script sweep]

A ratio below 1.0 means ours is faster. ``tox -e bench-upstream`` builds both
environments and runs this.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent


def run_once(python: str, script: str, only: str, budget: float) -> dict[str, float]:
    """The seconds per call of every workload of ``script`` (``workloads`` or ``sweep``),
    from one run under ``python``; the script runs from its own folder so that nothing of
    the repository shadows the installed packages."""
    out = subprocess.run([python, str(HERE / f"{script}.py"), "--only", only, "--budget",
                          str(budget)], check=True, capture_output=True, text=True, cwd=HERE)
    return json.loads(out.stdout)


def which_tensordict(python: str) -> str:
    code = "import tensordict; print(tensordict.__version__, tensordict.__file__)"
    return subprocess.run([python, "-c", code], check=True, capture_output=True,
                          text=True).stdout.strip()


def table(ours: dict[str, list[float]], upstream: dict[str, list[float]]) -> tuple[str, float]:
    rows, ratios = [], []
    for name in ours:
        if name not in upstream:
            continue
        mine, theirs = statistics.median(ours[name]), statistics.median(upstream[name])
        ratio = mine / theirs
        ratios.append(ratio)
        rows.append((ratio, f"| {name} | {mine * 1e6:,.1f} | {theirs * 1e6:,.1f} | {ratio:.2f} |"))
    if not ratios:
        raise SystemExit("no workload timed under both implementations: check --only")
    rows.sort()
    geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
    head = ("| workload | ours (µs) | upstream (µs) | ours / upstream |\n"
            "| --- | ---: | ---: | ---: |")
    return "\n".join([head, *(row for _, row in rows)]), geomean


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ours", required=True, help="python of the env with our packages")
    parser.add_argument("--upstream", required=True, help="python of the upstream-only env")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--budget", type=float, default=0.2, help="seconds per repeat")
    parser.add_argument("--only", default="", help="the workloads whose name holds this")
    parser.add_argument("--script", choices=("workloads", "sweep"), default="workloads",
                        help="the hot paths (workloads.py) or the broad sweep (sweep.py)")
    parser.add_argument("--json", help="also write the raw timings here")
    args = parser.parse_args(argv)
    for label, python in (("ours", args.ours), ("upstream", args.upstream)):
        print(f"{label}: tensordict {which_tensordict(python)}", flush=True)
    times: dict[str, dict[str, list[float]]] = {"ours": {}, "upstream": {}}
    errors: dict[str, str] = {}
    for round_ in range(args.rounds):
        order = [("ours", args.ours), ("upstream", args.upstream)]
        for label, python in order if round_ % 2 == 0 else order[::-1]:
            for name, seconds in run_once(python, args.script, args.only, args.budget).items():
                if isinstance(seconds, float):
                    times[label].setdefault(name, []).append(seconds)
                else:  # "ERROR: ...": the workload failed under this implementation
                    errors[f"{label}: {name}"] = seconds
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)
    text, geomean = table(times["ours"], times["upstream"])
    print(text)
    slower = sum(statistics.median(v) > statistics.median(times["upstream"][k])
                 for k, v in times["ours"].items() if k in times["upstream"])
    print(f"\ngeometric mean ours / upstream: {geomean:.2f} "
          f"({slower} of {len(times['ours'])} workloads slower than upstream)")
    for name, error in errors.items():
        print(f"not timed, {name}: {error}")
    if args.json:
        Path(args.json).write_text(json.dumps(times, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
