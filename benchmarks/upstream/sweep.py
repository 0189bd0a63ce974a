"""A broad sweep of public operations (about 330), timed under ours and upstream.

Same protocol as ``workloads.py`` (its helpers are imported); the workloads, in
``sweep_tensordict.py``, ``sweep_collections.py``, ``sweep_methods.py`` and
``sweep_steps.py``, are the ones it does not cover: key lookups, casts, conversions, math,
lazy and ragged stacks, tensorclasses, nn modules, memmap, one call of each remaining
TensorDict method, and the small calls of a TorchRL environment step.
Prints one JSON object: seconds per call, or the string "ERROR: ..." when a workload
fails under this implementation. ``compare.py --script sweep`` runs it under both
implementations:

    python benchmarks/upstream/sweep.py [--only SUBSTRING|OTHER] [--budget 0.15]
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import sweep_collections  # noqa: F401 - registers its workloads
import sweep_methods  # noqa: F401 - registers its workloads
import sweep_steps  # noqa: F401 - registers its workloads
import sweep_tensordict  # noqa: F401 - registers its workloads
import torch
from sweep_registry import SWEEP
from workloads import time_one


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--only", default="", help="run the workloads whose name holds this")
    parser.add_argument("--budget", type=float, default=0.15, help="seconds per repeat")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    only = args.only.split("|")
    times: dict[str, object] = {}
    for name, build in SWEEP.items():
        if not any(o in name for o in only):
            continue
        try:
            times[name] = time_one(build, args.budget)
        except Exception as err:  # noqa: BLE001 - report, keep sweeping
            times[name] = f"ERROR: {type(err).__name__}: {str(err)[:300]}"
    json.dump(times, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
