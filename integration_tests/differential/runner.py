"""Run every differential case under the interpreter that runs this script; write JSON lines.

    python runner.py OUT.jsonl [--skip N] [--containers dense,memmap] [--only ID,...]
        [--redis HOST:PORT]

The first line describes the tensordict imported; then one line per case, in case order:
``{"index", "id", "family", "before", "state", "ms"}`` when the write returned, or
``{"index", "id", "family", "before", "raised", "mro", "message", "phase", "ms"}`` when
building, writing or reading back raised. ``--skip N`` starts at case N (``compare.py``
resumes after a case that killed the interpreter: the last "running <id>" line of stderr
names it). The store cases run only with ``--redis``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

import cases
from snapshot import snapshot

CASE_TIMEOUT_S = 20
_FAST_TMP = Path("/dev/shm")  # the cases' files, in memory where there is such a folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--skip", type=int, default=0)
    parser.add_argument("--containers", default="")
    parser.add_argument("--only", default="", help="comma-separated case ids to run alone")
    parser.add_argument("--redis", default="", help="HOST:PORT of a redis-server to use")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    if args.redis:
        host, port = args.redis.rsplit(":", 1)
        cases.REDIS_ADDRESS = (host, int(port))
    with open(args.out, "a") as out:
        selected = cases.all_cases(args.containers.split(",") if args.containers else None)
        if args.only:
            selected = [case for case in selected if case.id in args.only.split(",")]
        if not args.skip:
            _emit(out, {"meta": _meta(), "total": len(selected)})
        with tempfile.TemporaryDirectory(dir=_FAST_TMP if _FAST_TMP.is_dir() else None) as tmp:
            for index in range(args.skip, len(selected)):
                case, case_dir = selected[index], Path(tmp) / f"case{index}"
                record = {"index": index, "id": case.id, "family": case.family}
                print(f"running {case.id}", file=sys.stderr, flush=True)
                start = time.perf_counter()
                record.update(_run(case, case_dir))
                record["ms"] = round(1000 * (time.perf_counter() - start), 1)
                _emit(out, record)
                if case_dir.exists():
                    shutil.rmtree(case_dir, ignore_errors=True)


def _run(case: cases.Case, tmp: Path) -> dict:
    """Build, snapshot, write through the view, snapshot again; or the error and its phase."""
    result: dict = {}
    phase = "build"
    signal.alarm(CASE_TIMEOUT_S)
    try:
        fixture = case.build(tmp)
        result["before"] = snapshot(fixture.root)
        phase = "write"
        case.write_through_view(fixture)
        phase = "read"
        result["state"] = fixture.state()
    except BaseException as err:  # noqa: BLE001 - every outcome is recorded
        if isinstance(err, KeyboardInterrupt):
            raise
        result.update(
            raised=type(err).__name__,
            mro=[cls.__name__ for cls in type(err).__mro__],
            message=str(err)[:300],
            phase=phase,
        )
    finally:
        signal.alarm(0)
    return result


def _meta() -> dict:
    import tensordict

    return {"tensordict": tensordict.__file__, "python": sys.executable}


def _emit(out, record: dict) -> None:
    out.write(json.dumps(record) + "\n")
    out.flush()


def _timeout(signum, frame) -> None:
    raise TimeoutError(f"case ran over {CASE_TIMEOUT_S}s")


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, _timeout)
    main()
