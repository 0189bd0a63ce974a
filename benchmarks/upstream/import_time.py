"""Time ``import tensordict`` against ``import torch``, each in fresh interpreters of
the same environment (alternating, medians of ``--runs``), for our packages and, given
``--upstream``, for upstream tensordict 0.15.3; ``tox -e bench-upstream`` runs it after
``compare.py``.

    python benchmarks/upstream/import_time.py --ours .tox/bench-upstream/bin/python \\
        [--upstream .tox/bench-upstream/upstream/bin/python] [--runs 9]

Three probes per environment: ``import torch`` alone; ``import tensordict`` (which
imports torch); and ``import tensordict`` once torch is imported, with the garbage
collector paused: tensordict's own cost. A full collection of torch's objects (tens of
milliseconds) falls due in whichever import allocates past torch's own, so each probe also
counts the full collections run during the timed import.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

PROBE = """
import gc, time
full = []
gc.callbacks.append(lambda phase, info: phase == "start" and info["generation"] == 2
                    and full.append(1))
{before}
full.clear()
start = time.perf_counter()
import {module}
print(time.perf_counter() - start, len(full))
"""

PROBES = {
    "import torch": PROBE.format(before="", module="torch"),
    "import tensordict": PROBE.format(before="", module="tensordict"),
    "tensordict's own (torch imported, GC paused)": PROBE.format(
        before="import torch\ngc.disable()", module="tensordict"),
}


def run_probe(python: str, code: str) -> tuple[float, int]:
    """Seconds the import took in a fresh ``python``, and the full collections it ran."""
    out = subprocess.run([python, "-c", code], check=True, capture_output=True, text=True,
                         cwd=HERE)
    seconds, collections = out.stdout.split()
    return float(seconds), int(collections)


def measure(python: str, runs: int) -> dict[str, tuple[float, float]]:
    """Per probe: the median seconds and the median number of full collections."""
    samples: dict[str, list[tuple[float, int]]] = {name: [] for name in PROBES}
    for _ in range(runs):
        for name, code in PROBES.items():
            samples[name].append(run_probe(python, code))
    return {name: (statistics.median(s for s, _ in values),
                   statistics.median(c for _, c in values))
            for name, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ours", required=True, help="python of the env with our packages")
    parser.add_argument("--upstream", help="python of the upstream-only env")
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args(argv)
    envs = {"ours": args.ours, **({"upstream": args.upstream} if args.upstream else {})}
    print("| env | probe | ms (median) | full collections | / import torch |\n"
          "| --- | --- | ---: | ---: | ---: |")
    for label, python in envs.items():
        timings = measure(python, args.runs)
        torch_seconds = timings["import torch"][0]
        for name, (seconds, collections) in timings.items():
            print(f"| {label} | {name} | {seconds * 1e3:,.0f} | {collections:g} | "
                  f"{seconds / torch_seconds:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
