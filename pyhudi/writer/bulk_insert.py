"""bulk_insert: no index lookup, no small-file filling, files still roll over at the max size.

Each Spark task opens one create handle per table partition it sees (so the
file count follows tasks x partitions, as in Hudi), streaming its rows into
files of at most `hoodie.parquet.max.file.size`. `hoodie.bulkinsert.sort.mode`
decides how rows are laid out across tasks first.

With `hoodie.index.type=BUCKET` the file groups must be the index's buckets, as
Hudi's `BucketIndexBulkInsertPartitioner` + `BucketBulkInsertDataInternalWriterHelper`
write them: rows are shuffled so that each (partition, bucket) lands in one task,
which writes it as one file group whose id starts with the bucket number
(`index/bucket.new_bucket_file_id`), without rollover. A bucket that already has a
file group is refused before anything is written (`check_new_buckets`): Hudi 0.14
would add a second group for it, which no later BUCKET write could load.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pyhudi.errors import UnsupportedTableError
from pyhudi.index import bucket as bucket_index
from pyhudi.io.base_file import estimate_bytes_per_row
from pyhudi.keygen.keygen import PARTITION_COL, RECORD_KEY_COL
from pyhudi.model.file_names import new_file_id_prefix, write_token
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.direct_input import DirectInput, InputUnit
from pyhudi.writer.handles import HandleContext, create_handle, with_meta, without_deletes
from pyhudi.writer.partition_meta import ensure_partition_metadata
from pyhudi.writer.partitioner import Bucket, BucketKind
from pyhudi.writer.single_task import bad_keys_refusal

BUCKET_COL = "_pyhudi_bucket_id"
# BUCKET index layout: (hash fields, number of buckets)
BucketSpec = tuple[tuple[str, ...], int]


def with_bucket_ids(df: DataFrame, spec: BucketSpec) -> DataFrame:
    """Each record's bucket number (Hudi's BucketIdentifier over the record key) as BUCKET_COL."""
    from pyhudi.writer.client import arrow_udf

    fields, n = spec
    bid_udf = arrow_udf(lambda keys: bucket_index.bucket_ids(keys, fields, n), "int")
    return df.withColumn(BUCKET_COL, bid_udf(F.col(RECORD_KEY_COL)))


def check_new_buckets(keyed: DataFrame, view: FileSystemView, spec: BucketSpec,
                      partitions: list[str]) -> None:
    """Refuse a BUCKET bulk_insert whose records fall into buckets that already have a file group (one
    aggregation, only when a partition of the batch has bucket file groups already)."""
    known = set(view.partition_paths)
    existing = bucket_index.existing_buckets(view, [p for p in partitions if p in known])
    if not existing:
        return
    rows = (with_bucket_ids(keyed.filter(F.col(PARTITION_COL).isin(sorted({p for p, _ in existing}))), spec)
            .groupBy(PARTITION_COL, BUCKET_COL).count().collect())
    taken = sorted((str(r[PARTITION_COL]), int(r[BUCKET_COL])) for r in rows
                   if (str(r[PARTITION_COL]), int(r[BUCKET_COL])) in existing)
    if taken:
        part, b = taken[0]
        raise UnsupportedTableError(
            f"bulk_insert with hoodie.index.type=BUCKET would write a second file group for bucket {b} of "
            f"partition {part!r} (file group {existing[(part, b)]!r} has it; {len(taken)} bucket(s) in all), "
            "which breaks the bucket index; write these records with operation insert or upsert")


def layout(df: DataFrame, sort_mode: str, parallelism: int, precombine: str | None, combine: bool,
           bucket: BucketSpec | None = None) -> DataFrame:
    """Apply dedup (if asked) and the sort mode's repartitioning/sorting; with `bucket` (BUCKET index),
    shuffle by (partition, bucket) instead, so every bucket is written by one task."""
    if combine:
        order = [F.col(precombine).desc_nulls_last()] if precombine and precombine in df.columns else [F.lit(1)]
        w = Window.partitionBy(PARTITION_COL, RECORD_KEY_COL).orderBy(*order)
        df = df.withColumn("_pyhudi_rn", F.row_number().over(w)).filter("_pyhudi_rn = 1").drop("_pyhudi_rn")
    n = parallelism if parallelism > 0 else None
    if bucket is not None:
        df = with_bucket_ids(df, bucket)
        df = df.repartition(n, PARTITION_COL, BUCKET_COL) if n else df.repartition(PARTITION_COL, BUCKET_COL)
        return df.sortWithinPartitions(PARTITION_COL, BUCKET_COL, RECORD_KEY_COL)
    if sort_mode == "GLOBAL_SORT":
        df = df.repartitionByRange(n, PARTITION_COL, RECORD_KEY_COL) if n else df.repartitionByRange(
            PARTITION_COL, RECORD_KEY_COL)
        return df.sortWithinPartitions(PARTITION_COL, RECORD_KEY_COL)
    if sort_mode == "PARTITION_SORT":
        df = df.coalesce(n) if n else df
        return df.sortWithinPartitions(PARTITION_COL, RECORD_KEY_COL)
    if sort_mode in ("PARTITION_PATH_REPARTITION", "PARTITION_PATH_REPARTITION_AND_SORT"):
        df = df.repartition(n, PARTITION_COL) if n else df.repartition(PARTITION_COL)
        if sort_mode.endswith("AND_SORT"):
            df = df.sortWithinPartitions(PARTITION_COL, RECORD_KEY_COL)
        return df
    return df.coalesce(n) if n else df


class _PartitionWriter:
    """Buffers one table partition's rows of a task and writes a file each time a file's worth is ready."""

    def __init__(self, ctx: HandleContext, storage: Storage, partition: str, token: str, pid: int) -> None:
        self.ctx, self.storage, self.partition, self.token, self.pid = ctx, storage, partition, token, pid
        self.prefix = new_file_id_prefix()
        self.rollover = 0
        self.pending: list[pa.Table] = []
        self.rows = 0
        self.per_row = 0.0
        self.stats: list[str] = []

    def add(self, rows: pa.Table) -> None:
        self.pending.append(rows)
        self.rows += rows.num_rows
        if self.per_row == 0.0:
            self.per_row = estimate_bytes_per_row(with_meta(self.ctx, rows.slice(0, 4000), "x" * 80, self.pid, 0),
                                                  self.ctx.parquet)
        if self.rows * self.per_row >= 2 * self.ctx.sizing.max_file_size:
            self._flush(final=False)

    def _flush(self, final: bool) -> None:
        if not self.pending:
            return
        table = pa.concat_tables(self.pending)
        self.pending, self.rows = [], 0
        bucket = Bucket(-1, BucketKind.INSERT, self.partition, self.prefix)
        written, tail = create_handle(self.ctx, self.storage, bucket, table, self.token, self.pid,
                                      first_rollover=self.rollover, keep_tail=not final)
        self.rollover += len(written)
        self.stats.extend(json.dumps(s.to_json()) for s in written)
        if tail is not None and tail.num_rows:
            self.pending, self.rows = [tail], tail.num_rows

    def close(self) -> list[str]:
        self._flush(final=True)
        return self.stats


class _BucketWriter:
    """BUCKET index: all of one (partition, bucket)'s rows in this task, written at close as the bucket's
    one file group (fixed file id, no rollover: Hudi's bucket writer keeps one handle per bucket)."""

    def __init__(self, ctx: HandleContext, storage: Storage, partition: str, bucket: int, token: str,
                 pid: int) -> None:
        self.ctx, self.storage, self.partition, self.token, self.pid = ctx, storage, partition, token, pid
        self.file_id = bucket_index.new_bucket_file_id(bucket)
        self.pending: list[pa.Table] = []

    def add(self, rows: pa.Table) -> None:
        self.pending.append(rows)

    def close(self) -> list[str]:
        if not self.pending:
            return []
        bucket = Bucket(-1, BucketKind.INSERT, self.partition, self.file_id, fixed_file_id=True)
        written, _ = create_handle(self.ctx, self.storage, bucket, pa.concat_tables(self.pending), self.token,
                                   self.pid)
        return [json.dumps(s.to_json()) for s in written]


def run_bulk_task(ctx: HandleContext, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow body over Spark's rows: write them, emit write stats as JSON rows."""
    pid, token = _task_identity()
    tables = (pa.Table.from_batches([b]) for b in batches if b.num_rows)
    stats = write_tables(ctx, tables, pid, token)
    if stats:
        yield pa.RecordBatch.from_pydict({"stat": stats}, schema=pa.schema([("stat", pa.string())]))


def run_direct_bulk_task(ctx: HandleContext, direct: DirectInput, units: list[InputUnit]
                         ) -> Iterator[tuple[str, str]]:
    """RDD body over input files the task reads itself: ("stat", json) rows, or one ("error", json)
    row when a record has no key (rows before it may be written: the driver rolls the instant back)."""
    pid, token = _task_identity()
    refused: list[dict[str, object]] = []

    def checked() -> Iterator[pa.Table]:
        for table in direct.read_prepared(units):
            refusal = bad_keys_refusal(table)
            if refusal is not None:
                refused.append(refusal)
                return
            yield table

    stats = write_tables(ctx, checked(), pid, token)
    if refused:
        yield "error", json.dumps(refused[0])
        return
    yield from (("stat", s) for s in stats)


def _task_identity() -> tuple[int, str]:
    from pyspark import TaskContext

    tc = TaskContext.get()
    assert tc is not None
    pid = tc.partitionId()
    return pid, write_token(pid, tc.stageId(), tc.taskAttemptId())


def by_partition(table: pa.Table, column: str = PARTITION_COL) -> Iterator[tuple[object, pa.Table]]:
    """The table's rows per value of `column` (the table partition), in their order: the table itself when
    it holds one value (no copy), else one stable sort and zero-copy slices (one pass, where a filter per
    value would scan every column once per value)."""
    parts = table.column(column)
    if pc.count_distinct(parts).as_py() <= 1:
        if table.num_rows:
            yield parts[0].as_py(), table
        return
    ordered = table.take(pc.sort_indices(parts))
    keys = ordered.column(column).combine_chunks()
    starts = [0, *(np.flatnonzero(pc.not_equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False)) + 1)]
    for lo, hi in zip(starts, [*starts[1:], len(keys)]):
        yield keys[int(lo)].as_py(), ordered.slice(int(lo), int(hi - lo))


def write_tables(ctx: HandleContext, tables: Iterator[pa.Table], pid: int, token: str) -> list[str]:
    """One create handle per table partition the task sees, fed table by table; the write stats."""
    storage = Storage(ctx.base_uri)
    writers: dict[object, _PartitionWriter | _BucketWriter] = {}
    seen: set[str] = set()
    for table in tables:
        table = without_deletes(table)
        bucketed = BUCKET_COL in table.column_names
        groups = _by_bucket(table) if bucketed else ((str(p), None, rows) for p, rows in by_partition(table))
        for part, bucket, rows in groups:
            # Buffered tails and new batches must share one schema: keep only what gets written.
            rows = rows.select([c for c in rows.column_names if not c.startswith("_pyhudi_")])
            key = (part, bucket)
            if part not in seen:
                ensure_partition_metadata(storage, part, ctx.instant)
                seen.add(part)
            if key not in writers:
                writers[key] = _PartitionWriter(ctx, storage, part, token, pid) if bucket is None else \
                    _BucketWriter(ctx, storage, part, bucket, token, pid)
            writers[key].add(rows)
    return [s for w in writers.values() for s in w.close()]


def _by_bucket(table: pa.Table) -> Iterator[tuple[str, int, pa.Table]]:
    for part, rows in by_partition(table):
        for bucket, bucket_rows in by_partition(rows, BUCKET_COL):
            yield str(part), int(bucket), bucket_rows  # type: ignore[call-overload]
