"""The `pyhudi` command: a small argparse dispatcher.

Subcommands live in their own modules; this file only wires them up and
turns pyhudi's own errors into a one-line message and exit code 2, because a
traceback for "this path is not a table" helps nobody.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

from pyhudi.cli import (
    clustering_cmd,
    compaction_cmd,
    delete_partition_cmd,
    files_cmd,
    maintenance_cmd,
    read_cmd,
    request_cost,
    streamer_cmd,
    sync_cmd,
    timeline_cmd,
    write_cmd,
)
from pyhudi.cli.common import add_master_argument, guarded, non_negative_int, parse_size
from pyhudi.errors import HudiError


def _register_demo(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The demo's options (and their defaults) belong to pyhudi.demo; importing it does not start Spark."""
    p = sub.add_parser("demo", help="write a demo table (in-process, or with Spark) and show how files are sized",
                       description="Runs pyhudi.demo: in-process unless --master asks for Spark.")
    add_arguments: Callable[[argparse.ArgumentParser], None] = _demo_arguments
    try:
        from pyhudi import demo  # type: ignore[attr-defined,unused-ignore]

        add_arguments = getattr(demo, "add_arguments", _demo_arguments)
    except ImportError:
        pass
    add_arguments(p)
    p.set_defaults(func=_run_demo)


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    """Fallback when pyhudi.demo is missing, so `pyhudi demo` reports that instead of a usage error."""
    p.add_argument("--path", default="./demo", metavar="DIR", help="table path (default ./demo)")
    p.add_argument("--batches", type=non_negative_int, default=None, metavar="N", help="number of batches")
    p.add_argument("--rows-per-batch", type=non_negative_int, default=None, metavar="N", help="rows per batch")
    p.add_argument("--max-file-size", type=parse_size, default=None, metavar="BYTES")
    p.add_argument("--small-file-limit", type=parse_size, default=None, metavar="BYTES")
    add_master_argument(p)


def _run_demo(args: argparse.Namespace) -> int:
    """Imported lazily: only this subcommand needs the demo's code."""
    try:
        from pyhudi import demo  # type: ignore[attr-defined,unused-ignore]
    except ImportError as exc:
        raise HudiError(f"the demo is not available: {exc}") from exc
    return int(demo.main(args) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyhudi", description="Write, inspect and maintain Apache Hudi (table version 6) tables.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    timeline_cmd.register(sub)
    files_cmd.register(sub)
    read_cmd.register(sub)
    compaction_cmd.register(sub)
    clustering_cmd.register(sub)
    maintenance_cmd.register(sub)
    streamer_cmd.register(sub)
    write_cmd.register(sub)
    delete_partition_cmd.register(sub)
    sync_cmd.register(sub)
    _register_demo(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The CLI run in-process, returning the exit code (tests call it); the `pyhudi` command is `entry`."""
    args = build_parser().parse_args(argv)
    if getattr(args, "explain", False):
        func = args.func
        return guarded(lambda a: request_cost.run_explained(func, a), args, f"pyhudi {args.command}")
    return guarded(args.func, args, f"pyhudi {args.command}")


def entry() -> None:
    """The `pyhudi` command: run, then leave without interpreter teardown. A native I/O thread (pyarrow
    reading an object store through Python file objects) still alive at teardown made the C++ runtime
    abort (SIGABRT, "terminate called without an active exception") after a command that had succeeded.
    Background table services finish first; output is flushed."""
    code = main()
    from pyhudi.services import background

    background.wait(None, None)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    entry()
