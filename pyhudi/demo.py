"""The main job: a stream of small batches ingested with auto-sizing, then a file-size summary.

It shows the small-files problem being avoided: every batch is far smaller
than a target file, yet the table ends with files near the max size, because
each commit tops up the existing small files (writing new versions) before
opening new file groups. Sizes are scaled down (a few MB instead of 120 MB)
so it runs in a couple of minutes on a laptop.

Without `--master` it runs in-process (pyarrow batches, the in-process engine, no Java); with
`--master local[2]` the same batches are built and written with Spark.
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


def make_arrow_batch(batch_no: int, rows: int, update_fraction: float, seen: int) -> tuple[Any, int]:
    """`rows` trips as an Arrow table: a fraction updates earlier trips (same uuid, later ts), the rest are
    new. Both engines write the same batches (Spark gets them as a DataFrame made from this table)."""
    import hashlib

    import numpy as np
    import pyarrow as pa

    n_updates = min(int(rows * update_fraction), seen)
    n_new = rows - n_updates
    rng = np.random.default_rng(batch_no)
    upd = rng.choice(seen, size=n_updates, replace=False) if n_updates else np.empty(0, np.int64)
    ids = np.concatenate([np.arange(seen, seen + n_new, dtype=np.int64), upd.astype(np.int64)])
    mixed = (ids * 2654435761 + batch_no * 40503) % 9000  # a stable stand-in for Spark's hash()
    return pa.table({
        "uuid": [f"trip-{i:09d}" for i in ids.tolist()],
        "ts": pa.array(1_700_000_000_000 + batch_no * 1000 + ids % 997, pa.int64()),
        "rider": [f"rider-{i % 5000}" for i in ids.tolist()],
        "driver": [f"driver-{i % 800}" for i in ids.tolist()],
        "fare": np.round(5.0 + mixed / 100.0, 2),
        "route_hash": [hashlib.sha256(f"{i}{batch_no}".encode()).hexdigest() for i in ids.tolist()],
        "city": [CITIES[i % len(CITIES)] for i in ids.tolist()],
    }), n_new


def run(args: argparse.Namespace) -> int:
    spark: Any = None
    if args.master:
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
          f"copy-on-write, upsert with ~20% updates, {'Spark (' + args.master + ')' if spark else 'in-process'}\n")
    seen = 0
    started = time.monotonic()
    for b in range(args.batches):
        df, n_new = make_arrow_batch(b, args.rows_per_batch, 0.2 if b else 0.0, seen)
        if spark is not None:
            df = spark.createDataFrame(df)
        t0 = time.monotonic()
        # The batch line below is the summary; the status line (Spark's stages) only shows while the batch
        # is written on Spark.
        with progress.status(f"  batch {b + 1:>3}", enabled=progress.wanted(args) and spark is not None,
                             summary=False):
            instant = pyhudi.write(df, path, options)
        seen += n_new
        print(f"  batch {b + 1:>3}: commit {instant}  {args.rows_per_batch:,} records  "
              f"{time.monotonic() - t0:5.1f}s")
    total = pyhudi.read(path, columns=["uuid"]).num_rows if spark is None else pyhudi.read(spark, path).count()
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
    parser.add_argument("--master", default=None,
                        help="run on Spark with this master (e.g. local[2]); default: in-process, no Java needed")
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
