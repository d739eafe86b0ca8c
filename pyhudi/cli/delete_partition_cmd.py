"""`pyhudi delete-partition PATH --partitions a,b`: Hudi's delete_partition operation from the shell.

The same `pyhudi.write` call as from PySpark (operation delete_partition with
hoodie.datasource.write.partitions.to.delete): one replacecommit that hides every file group of the
partitions; the cleaner deletes the files later. No data is read: the write gets an empty batch with the
table's columns, in-process (no Java) unless --master asks for Spark.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pyarrow as pa

from pyhudi.cli import progress, request_cost
from pyhudi.cli.common import (
    OpenTable,
    add_master_argument,
    add_option_argument,
    open_table,
    parse_options,
    require_spark,
    spark_session,
)
from pyhudi.errors import InvalidConfigError

PROG = "pyhudi delete-partition"
OPERATION_KEY = "hoodie.datasource.write.operation"
PARTITIONS_KEY = "hoodie.datasource.write.partitions.to.delete"


def register(sub: Any) -> None:
    p = sub.add_parser("delete-partition", help="delete whole partitions (one replacecommit; files go at the next clean)",
                       description="Hudi's delete_partition: every file group of the partitions is replaced by one "
                                   "replacecommit (time travel to earlier instants still sees them; the cleaner "
                                   "deletes the files once the commit is out of retention). In-process "
                                   "unless --master asks for Spark.")
    p.add_argument("path", help="table base path")
    p.add_argument("--partitions", required=True, metavar="P1,P2",
                   help="comma-separated partition paths as stored (e.g. 'region=eu,2024/01/02'); '*' matches "
                        "any characters, '/' included (e.g. '2024/*')")
    add_option_argument(p, "hoodie.cleaner.commits.retained=5")
    add_master_argument(p)
    progress.add_argument(p)
    request_cost.add_argument(p)
    p.set_defaults(func=run)


def delete_options(args: argparse.Namespace) -> dict[str, str]:
    """--option pairs, then the operation and the partitions (these two always win)."""
    if not args.partitions.strip(","):
        raise InvalidConfigError(f"{PROG}: --partitions is empty; give partition paths such as 'a,b' or '2024/*'")
    pairs = [*args.options, (OPERATION_KEY, "delete_partition"), (PARTITIONS_KEY, args.partitions)]
    options, _ = parse_options(pairs, PROG)
    return options


def run(args: argparse.Namespace) -> int:
    t = open_table(args.path)  # a clear error for a path that is not a table, before any engine runs
    options = delete_options(args)
    if args.master:
        require_spark(args.master)
        print(f"{PROG}: starting Spark ({args.master}) to delete partitions {args.partitions} of {args.path}",
              file=sys.stderr)
        with progress.status(PROG, enabled=progress.wanted(args)):  # Spark stages: the Spark path only
            instant = _delete_with_spark(args, options)
    else:
        import pyhudi

        instant = pyhudi.write(empty_batch(t), args.path, options, mode="append")
    print(f"{PROG}: replacecommit {instant} deleted partition(s) {args.partitions} of {args.path}", flush=True)
    return 0


def empty_batch(t: OpenTable) -> pa.Table:
    """No rows, the table's columns (its latest schema; key and partition fields as strings when no commit
    records one): the partitions are named by the option, the batch only has to pass the schema checks."""
    from pyhudi.io import schema as S
    from pyhudi.timeline.table_schema import table_schema

    avro = table_schema(t.timeline, t.config)
    if avro is not None:
        return S.avro_to_arrow(avro).empty_table()
    names = dict.fromkeys([*t.config.record_key_fields, *t.config.partition_fields])
    return pa.table({n: pa.array([], pa.string()) for n in names if n})


def _delete_with_spark(args: argparse.Namespace, options: dict[str, str]) -> str | None:
    """A session we started is stopped, one that already existed (a notebook, the tests) is kept."""
    import pyhudi

    with spark_session(args.master, "pyhudi-delete-partition") as spark:
        from pyhudi.engine.spark.session import empty_frame

        return pyhudi.write(empty_frame(spark), args.path, options, mode="append")
