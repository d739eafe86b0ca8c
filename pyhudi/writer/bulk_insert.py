"""bulk_insert: no index lookup, no small-file filling, files still roll over at the max size.

Each Spark task opens one create handle per table partition it sees (so the
file count follows tasks x partitions, as in Hudi), streaming its rows into
files of at most `hoodie.parquet.max.file.size`. `hoodie.bulkinsert.sort.mode`
decides how rows are laid out across tasks first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pyhudi.io.base_file import estimate_bytes_per_row
from pyhudi.keygen.keygen import PARTITION_COL, RECORD_KEY_COL
from pyhudi.model.file_names import new_file_id_prefix, write_token
from pyhudi.storage import Storage
from pyhudi.writer.direct_input import DirectInput, InputUnit
from pyhudi.writer.handles import HandleContext, create_handle, with_meta, without_deletes
from pyhudi.writer.partition_meta import ensure_partition_metadata
from pyhudi.writer.partitioner import Bucket, BucketKind
from pyhudi.writer.single_task import bad_keys_refusal


def layout(df: DataFrame, sort_mode: str, parallelism: int, precombine: str | None, combine: bool) -> DataFrame:
    """Apply dedup (if asked) and the sort mode's repartitioning/sorting."""
    if combine:
        order = [F.col(precombine).desc_nulls_last()] if precombine and precombine in df.columns else [F.lit(1)]
        w = Window.partitionBy(PARTITION_COL, RECORD_KEY_COL).orderBy(*order)
        df = df.withColumn("_pyhudi_rn", F.row_number().over(w)).filter("_pyhudi_rn = 1").drop("_pyhudi_rn")
    n = parallelism if parallelism > 0 else None
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


def by_partition(table: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """The table's rows per table partition, in their order: the table itself when it holds one partition
    (no copy), else one stable sort and zero-copy slices (one pass, where a filter per partition would
    scan every column once per partition)."""
    parts = table.column(PARTITION_COL)
    if pc.count_distinct(parts).as_py() <= 1:
        if table.num_rows:
            yield str(parts[0].as_py()), table
        return
    ordered = table.take(pc.sort_indices(parts))
    keys = ordered.column(PARTITION_COL).combine_chunks()
    starts = [0, *(np.flatnonzero(pc.not_equal(keys[1:], keys[:-1]).to_numpy(zero_copy_only=False)) + 1)]
    for lo, hi in zip(starts, [*starts[1:], len(keys)]):
        yield str(keys[int(lo)].as_py()), ordered.slice(int(lo), int(hi - lo))


def write_tables(ctx: HandleContext, tables: Iterator[pa.Table], pid: int, token: str) -> list[str]:
    """One create handle per table partition the task sees, fed table by table; the write stats."""
    storage = Storage(ctx.base_uri)
    writers: dict[str, _PartitionWriter] = {}
    for table in tables:
        table = without_deletes(table)
        # Buffered tails and new batches must share one schema: keep only what gets written.
        table = table.select([c for c in table.column_names if not c.startswith("_pyhudi_")])
        for part, rows in by_partition(table):
            if part not in writers:
                ensure_partition_metadata(storage, part, ctx.instant)
                writers[part] = _PartitionWriter(ctx, storage, part, token, pid)
            writers[part].add(rows)
    return [s for w in writers.values() for s in w.close()]
