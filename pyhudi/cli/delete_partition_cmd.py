"""`pyhudi delete-partition PATH --partitions a,b`: Hudi's delete_partition operation from the shell.

The same `pyhudi.write` call as from PySpark (operation delete_partition with
hoodie.datasource.write.partitions.to.delete): one replacecommit that hides every file group of the
partitions; the cleaner deletes the files later. No data is read, but the write client (and the table
services it runs after the commit) need Spark, so Spark starts after the arguments are checked.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from pyhudi.cli import progress
from pyhudi.cli.common import add_option_argument, open_table, parse_options
from pyhudi.errors import InvalidConfigError

PROG = "pyhudi delete-partition"
OPERATION_KEY = "hoodie.datasource.write.operation"
PARTITIONS_KEY = "hoodie.datasource.write.partitions.to.delete"


def register(sub: Any) -> None:
    p = sub.add_parser("delete-partition", help="delete whole partitions (one replacecommit; files go at the next clean)",
                       description="Hudi's delete_partition: every file group of the partitions is replaced by one "
                                   "replacecommit (time travel to earlier instants still sees them; the cleaner "
                                   "deletes the files once the commit is out of retention). Starts Spark.")
    p.add_argument("path", help="table base path")
    p.add_argument("--partitions", required=True, metavar="P1,P2",
                   help="comma-separated partition paths as stored (e.g. 'region=eu,2024/01/02'); '*' matches "
                        "any characters, '/' included (e.g. '2024/*')")
    add_option_argument(p, "hoodie.cleaner.commits.retained=5")
    p.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    progress.add_argument(p)
    p.set_defaults(func=run)


def delete_options(args: argparse.Namespace) -> dict[str, str]:
    """--option pairs, then the operation and the partitions (these two always win)."""
    if not args.partitions.strip(","):
        raise InvalidConfigError(f"{PROG}: --partitions is empty; give partition paths such as 'a,b' or '2024/*'")
    pairs = [*args.options, (OPERATION_KEY, "delete_partition"), (PARTITIONS_KEY, args.partitions)]
    options, _ = parse_options(pairs, PROG)
    return options


def run(args: argparse.Namespace) -> int:
    open_table(args.path)  # a clear error for a path that is not a table, before Spark starts
    options = delete_options(args)
    print(f"{PROG}: starting Spark ({args.master}) to delete partitions {args.partitions} of {args.path}",
          file=sys.stderr)
    with progress.status(PROG, enabled=progress.wanted(args)):
        instant = _delete_with_spark(args, options)
    print(f"{PROG}: replacecommit {instant} deleted partition(s) {args.partitions} of {args.path}", flush=True)
    return 0


def _delete_with_spark(args: argparse.Namespace, options: dict[str, str]) -> str | None:
    """A session we started is stopped, one that already existed (a notebook, the tests) is kept."""
    from pyspark import SparkContext

    import pyhudi
    from pyhudi.spark_env import create_session

    created = SparkContext._active_spark_context is None
    spark: Any = create_session(args.master, app_name="pyhudi-delete-partition")
    try:
        empty = spark.createDataFrame([], "_pyhudi_unused string")  # not read: the partitions are given
        return pyhudi.write(empty, args.path, options, mode="append")
    finally:
        if created:
            progress.settle_active()
            spark.stop()
