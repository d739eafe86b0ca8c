"""`--explain` on the commands that write or run table services: the run's object-store requests.

On S3/GCS/Azure every step is a request, billed and slow, so `pyhudi write ... --explain` (and
`compaction schedule|run`, `clustering schedule|run`, `clean`, `delete-partition`) ends with what the run
cost: requests per kind (GET, HEAD, PUT, LIST, DELETE, POST as S3 bills them) and per storage call. The
counts come from pyhudi.storage.metrics; with `--json` they go to stderr so the JSON stays parseable.
Spark executors' requests are not counted (only the driver's).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from pyhudi.storage.metrics import RequestMetrics, request_metrics

HELP = "also print the object-store requests the run made (GET/HEAD/PUT/LIST/DELETE/POST)"


def add_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--explain", action="store_true", help=HELP)


def run_explained(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run the command inside a request collector, then print its counts (also when it failed)."""
    with request_metrics() as m:
        try:
            return func(args)
        finally:
            out = sys.stderr if getattr(args, "json", False) else sys.stdout
            for line in explain_lines(m):
                print(line, file=out, flush=True)


def explain_lines(m: RequestMetrics) -> list[str]:
    notes = [f"plan: {n}" for n in m.notes]
    if m.total == 0:
        return ["requests: 0 object-store requests (a local table's file system calls are not counted)", *notes]
    calls = ", ".join(f"{op} {n}" for op, n in sorted(m.by_op.items()) if n)
    return [m.summary(), f"  by storage call: {calls}", *notes]
