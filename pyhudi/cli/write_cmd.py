"""`pyhudi write`: one batch of files (json, csv or parquet) into a Hudi table, from the shell.

The streamer ingests what keeps landing; this is the one-shot form (a
backfill, a fix-up file, a first load): the source is read, `pyhudi.write`
writes it with the same properties file and `--option` keys the streamer and
the table services take, and one line reports the commit (the streamer's
commit summary). By default everything runs in-process: pyarrow reads the
files (streamer/arrow_source.py: the Spark file sources' rules) and the
in-process engine writes them, no Java needed. With `--master`, Spark reads
and writes instead, after everything that can be checked without Spark (the
properties, option values, the source path) was checked, and a status line
shows the Spark stages while it runs (see progress.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from pyhudi.cli import progress, request_cost
from pyhudi.cli.common import (
    add_master_argument,
    add_option_argument,
    parse_options,
    require_spark,
    spark_session,
)
from pyhudi.errors import HudiError

PROG = "pyhudi write"
FORMATS = ("json", "csv", "parquet")
OPERATIONS = ("upsert", "insert", "bulk_insert", "delete", "insert_overwrite", "insert_overwrite_table")
MODES = ("append", "overwrite", "error", "ignore")
OPERATION_KEY = "hoodie.datasource.write.operation"


def register(sub: Any) -> None:
    p = sub.add_parser("write", help="write a file or directory of json/csv/parquet into a table (one commit)",
                       description="Read --source and write it into the Hudi table at --target as one commit, "
                                   "with hoodie.* keys from --props and --option. In-process (pyarrow, no Java) "
                                   "unless --master asks for Spark.")
    p.add_argument("--source", required=True, metavar="PATH", help="file or directory to read")
    p.add_argument("--source-format", required=True, choices=FORMATS)
    p.add_argument("--target", required=True, metavar="PATH", help="Hudi table base path")
    p.add_argument("--props", default=None, metavar="FILE", help="properties file with hoodie.* keys")
    add_option_argument(p, "hoodie.datasource.write.recordkey.field=id")
    p.add_argument("--operation", choices=OPERATIONS, default=None,
                   help=f"sets {OPERATION_KEY} (default: from --props/--option, else upsert)")
    p.add_argument("--mode", choices=MODES, default="append",
                   help="append (default), overwrite (replace the table's contents), error or ignore "
                        "if the table exists")
    add_master_argument(p)
    progress.add_argument(p)
    request_cost.add_argument(p)
    p.set_defaults(func=run)


def write_options(args: argparse.Namespace) -> dict[str, str]:
    """--props, then --option, then --operation: the later, more specific one wins."""
    pairs: list[tuple[str, str]] = []
    if args.props:
        from pyhudi.model.properties import parse_properties

        with open(args.props, encoding="utf-8") as fh:
            pairs += parse_properties(fh.read()).items()
    pairs += args.options
    if args.operation:
        pairs.append((OPERATION_KEY, args.operation))
    options, parsed = parse_options(pairs, PROG)  # malformed values fail here, before Spark starts
    from pyhudi.config import keys as K

    if not parsed.is_set(K.TABLE_NAME) and not _is_table(args.target):
        raise HudiError(f"{args.target} is not a Hudi table yet; give hoodie.table.name (and the record key "
                        "field) in --props or with -o hoodie.table.name=NAME to create it")
    return options


def _is_table(path: str) -> bool:
    from pyhudi.storage import Storage

    return Storage(path).exists(".hoodie/hoodie.properties")


def _check_source(path: str) -> None:
    """A local source that is not there fails now instead of after Spark started."""
    local = path[len("file:"):] if path.startswith("file:") else path
    if "://" not in local and not os.path.exists(local):
        raise HudiError(f"--source {path!r} does not exist; give a file or a directory of {'/'.join(FORMATS)} files")


def run(args: argparse.Namespace) -> int:
    _check_source(args.source)
    options = write_options(args)
    if args.master:
        require_spark(args.master)
        print(f"{PROG}: starting Spark ({args.master}) to write {args.source} into {args.target}", file=sys.stderr)
        with progress.status(PROG, enabled=progress.wanted(args)):  # Spark stages: the Spark path only
            instant, seconds = _write_with_spark(args, options)
    else:
        instant, seconds = _write_in_process(args, options)
    if instant is None:
        print(f"{PROG}: {args.target} already exists; nothing written (--mode ignore)")
        return 0
    from pyhudi.streamer.commits import commit_summary

    print(commit_summary(args.target, instant, None, seconds, options), flush=True)
    return 0


def _write_in_process(args: argparse.Namespace, options: dict[str, str]) -> tuple[str | None, float]:
    """pyarrow reads the files, the in-process engine writes them: no Java, no pyspark."""
    import pyhudi
    from pyhudi.streamer.arrow_source import read_source, table_schema, type_null_columns

    table = read_source(args.source, args.source_format)
    if table is None:
        raise HudiError(f"--source {args.source!r} has no {args.source_format} records (no files, or only empty "
                        "or hidden ones); nothing written")
    table = type_null_columns(table, table_schema(args.target))
    started = time.monotonic()
    instant = pyhudi.write(table, args.target, options, mode=args.mode)
    return instant, time.monotonic() - started


def _write_with_spark(args: argparse.Namespace, options: dict[str, str]) -> tuple[str | None, float]:
    """Spark reads (the streamer's rules: csv with a header row and inferred types) and writes; a session
    we started is stopped, one that already existed (a notebook, the tests) is kept."""
    import pyhudi

    with spark_session(args.master, "pyhudi-write") as spark:
        from pyhudi.engine.spark.session import read_files

        df = read_files(spark, args.source, args.source_format)
        started = time.monotonic()
        instant = pyhudi.write(df, args.target, options, mode=args.mode)
        return instant, time.monotonic() - started
