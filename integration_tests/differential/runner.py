"""Run every differential case under the interpreter that runs this script; write JSON lines.

    python runner.py OUT.jsonl [--skip N] [--containers dense,memmap]

The first line describes the tensordict imported; then one line per case, in case order:
``{"index", "id", "family", "before", "state", "ms"}`` when the write returned, or
``{"index", "id", "family", "before", "raised", "mro", "message", "phase", "ms"}`` when
building, writing or reading back raised. ``--skip N`` starts at case N (``compare.py``
resumes after a case that killed the interpreter). A redis-server on a free local port
serves the store cases when the binary is installed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import socket
import subprocess
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
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with _redis_server() as address, open(args.out, "a") as out:
        cases.REDIS_ADDRESS = address
        selected = cases.all_cases(args.containers.split(",") if args.containers else None)
        if not args.skip:
            _emit(out, {"meta": _meta(), "total": len(selected)})
        with tempfile.TemporaryDirectory(dir=_FAST_TMP if _FAST_TMP.is_dir() else None) as tmp:
            for index in range(args.skip, len(selected)):
                case, case_dir = selected[index], Path(tmp) / f"case{index}"
                record = {"index": index, "id": case.id, "family": case.family}
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


@contextlib.contextmanager
def _redis_server():
    """(host, port) of a throwaway redis-server, or None without the binary."""
    binary = shutil.which("redis-server")
    if binary is None:
        yield None
        return
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    try:
        _wait_for(port)
        yield ("127.0.0.1", port)
    finally:
        server.terminate()
        server.wait()


def _wait_for(port: int) -> None:
    for _ in range(100):
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.1):
            return
        time.sleep(0.05)
    raise RuntimeError(f"redis-server did not start on port {port}")


if __name__ == "__main__":
    signal.signal(signal.SIGALRM, _timeout)
    main()
