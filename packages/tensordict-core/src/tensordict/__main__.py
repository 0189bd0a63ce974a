"""``python -m tensordict``: what this installation holds, to paste into a bug report.

Prints each tensordict distribution and its version, torch and its devices, every plugin
(its distribution, entry point, and whether it loaded: the error when it did not), what
each adds (methods, top-level names, torch functions, storage backends) and the plugin API
version. ``--json`` prints the same as JSON, for tools.
"""

from __future__ import annotations

import argparse
import json

from tensordict._report import collect, format_text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tensordict",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    report = collect()
    print(json.dumps(report, indent=2) if args.json else format_text(report))


if __name__ == "__main__":
    main()
