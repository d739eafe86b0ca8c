"""The `pyhudi` command: a small argparse dispatcher.

Subcommands live in their own modules; this file only wires them up and
turns pyhudi's own errors into a one-line message and exit code 2, because a
traceback for "this path is not a table" helps nobody.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pyhudi.cli import files_cmd, timeline_cmd
from pyhudi.cli.common import non_negative_int, parse_size
from pyhudi.errors import HudiError

EXIT_ERROR = 2


def _register_demo(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("demo", help="write a demo table with Spark and show how files are sized",
                       description="Runs pyhudi.demo (starts Spark).")
    p.add_argument("--path", default="./demo", metavar="DIR", help="table path (default ./demo)")
    p.add_argument("--batches", type=non_negative_int, default=None, metavar="N", help="number of batches")
    p.add_argument("--rows-per-batch", type=non_negative_int, default=None, metavar="N", help="rows per batch")
    p.add_argument("--max-file-size", type=parse_size, default=None, metavar="BYTES",
                   help="hoodie.parquet.max.file.size")
    p.add_argument("--small-file-limit", type=parse_size, default=None, metavar="BYTES",
                   help="hoodie.parquet.small.file.limit")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    p.set_defaults(func=_run_demo)


def _run_demo(args: argparse.Namespace) -> int:
    """Imported lazily: only this subcommand needs Spark."""
    try:
        from pyhudi import demo  # type: ignore[attr-defined,unused-ignore]
    except ImportError as exc:
        raise HudiError(f"the demo is not available: {exc}") from exc
    return int(demo.main(args) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyhudi", description="Inspect Apache Hudi (table version 6) tables.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    timeline_cmd.register(sub)
    files_cmd.register(sub)
    _register_demo(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the exit code (console script wrappers pass it to sys.exit)."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except HudiError as exc:
        print(f"pyhudi {args.command}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_ERROR
    except BrokenPipeError:  # `pyhudi timeline ... | head`
        sys.stderr.close()
        return 0
    except OSError as exc:
        print(f"pyhudi {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
