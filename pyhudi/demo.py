"""The main job: a stream of small batches ingested with auto-sizing, then a file-size summary.

It shows the small-files problem being avoided: every batch is far smaller
than a target file, yet the table ends with files near the max size, because
each commit tops up the existing small files (writing new versions) before
opening new file groups. Sizes are scaled down (a few MB instead of 120 MB)
so it runs in a couple of minutes on a laptop.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from typing import Any

from pyhudi.errors import HudiError

CITIES = ("san_francisco", "sao_paulo", "chennai")


def demo_options(args: argparse.Namespace) -> dict[str, str]:
    return {
        "hoodie.table.name": "demo_trips",
        "hoodie.datasource.write.recordkey.field": "uuid",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.operation": "upsert",
        "hoodie.parquet.max.file.size": str(args.max_file_size),
        "hoodie.parquet.small.file.limit": str(args.small_file_limit),
        # A smaller bloom filter keeps the fixed per-file footer cost proportionate to demo-sized files.
        "hoodie.index.bloom.num_entries": "10000",
    }


def make_batch(spark: Any, batch_no: int, rows: int, update_fraction: float, seen: int) -> Any:
    """`rows` trips: a fraction updates earlier trips (same uuid, later ts), the rest are new."""
    from pyspark.sql import functions as F

    n_updates = min(int(rows * update_fraction), seen)
    n_new = rows - n_updates
    new = spark.range(seen, seen + n_new)
    upd = spark.range(0, max(seen, 1)).sample(False, min(1.0, n_updates / max(seen, 1)), seed=batch_no) \
        .limit(n_updates) if n_updates else spark.range(0, 0)
    ids = new.unionByName(upd)
    return ids.select(
        F.concat(F.lit("trip-"), F.lpad(F.col("id").cast("string"), 9, "0")).alias("uuid"),
        (F.lit(1_700_000_000_000) + F.lit(batch_no) * 1000 + F.col("id") % 997).cast("long").alias("ts"),
        F.concat(F.lit("rider-"), (F.col("id") % 5000).cast("string")).alias("rider"),
        F.concat(F.lit("driver-"), (F.col("id") % 800).cast("string")).alias("driver"),
        F.round(F.lit(5.0) + (F.hash(F.col("id"), F.lit(batch_no)) % 9000) / 100.0, 2).alias("fare"),
        F.sha2(F.concat(F.col("id").cast("string"), F.lit(batch_no)), 256).alias("route_hash"),
        F.element_at(F.array(*[F.lit(c) for c in CITIES]), (F.col("id") % len(CITIES) + 1).cast("int"))
        .alias("city"),
    ), n_new


def run(args: argparse.Namespace) -> int:
    from pyhudi.spark_env import create_session

    spark = create_session(master=args.master, app_name="pyhudi-demo")
    import pyhudi
    from pyhudi.cli import progress
    from pyhudi.cli.files_cmd import main as files_main

    path = args.path
    shutil.rmtree(path, ignore_errors=True)
    options = demo_options(args)
    print(f"pyhudi demo: {args.batches} batches of {args.rows_per_batch:,} trips into {path}")
    print(f"  max file size {args.max_file_size:,} B, small-file limit {args.small_file_limit:,} B, "
          "copy-on-write, upsert with ~20% updates\n")
    seen = 0
    started = time.monotonic()
    for b in range(args.batches):
        df, n_new = make_batch(spark, b, args.rows_per_batch, 0.2 if b else 0.0, seen)
        t0 = time.monotonic()
        # The batch line below is the summary; the status line only shows while the batch is written.
        with progress.status(f"  batch {b + 1:>3}", enabled=progress.wanted(args), summary=False):
            instant = pyhudi.write(df, path, options)
        seen += n_new
        print(f"  batch {b + 1:>3}: commit {instant}  {args.rows_per_batch:,} records  "
              f"{time.monotonic() - t0:5.1f}s")
    total = pyhudi.read(spark, path).count()
    print(f"\ningested {args.batches} batches in {time.monotonic() - started:.0f}s; table has {total:,} "
          f"records (expected {seen:,} distinct trips): {'OK' if total == seen else 'MISMATCH'}\n")
    files_main([path, "--small-file-limit", str(args.small_file_limit), "--max-file-size",
                str(args.max_file_size)])
    return 0 if total == seen else 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--path", default="./demo/trips", help="table location (default ./demo/trips)")
    parser.add_argument("--batches", type=int, default=25)
    parser.add_argument("--rows-per-batch", type=int, default=25000)
    parser.add_argument("--max-file-size", type=int, default=2 * 1024 * 1024)
    # Same proportion as Hudi's defaults (100 MB limit for a 120 MB max).
    parser.add_argument("--small-file-limit", type=int, default=2 * 1024 * 1024 * 5 // 6)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--no-progress", action="store_true",
                        help="no status line on stderr while a batch is written (also PYHUDI_NO_PROGRESS=1)")


def main(args: argparse.Namespace | list[str] | None = None) -> int:
    if not isinstance(args, argparse.Namespace):
        parser = argparse.ArgumentParser(prog="pyhudi demo")
        add_arguments(parser)
        args = parser.parse_args(args)
    try:
        return run(args)
    except HudiError as exc:
        print(f"pyhudi demo: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
