"""Which handle writes a bucket: merge (rewrite a base file), append (MOR logs) or create; and a task's
run of several buckets, their markers written ahead in one go.

Its own module so handles.py and append_handle.py (which uses handles' record helpers) do not import
each other; every engine's write tasks call `run_handles` or `run_handle`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np
import pyarrow as pa

from pyhudi.engine.base import task_count
from pyhudi.model.file_names import base_file_name, log_file_name
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.writer.append_handle import append_handle, log_name_instant, log_start
from pyhudi.writer.binpack import pack_balanced
from pyhudi.writer.handles import HandleContext, create_handle, created_file_id
from pyhudi.writer.markers import premark
from pyhudi.writer.merge_handle import MergeItem, merge_handle, merge_handles
from pyhudi.writer.partition_meta import ensure_partition_metadata
from pyhudi.writer.partitioner import Bucket, BucketKind

# A rewritten file costs about as much as this many rows beyond its rows (file creation, footer, old
# file's read), measured on small files: what `bucket_chunks` balances.
FILE_COST_ROWS = 2000
THREAD_TASKS_PER_WORKER = 2
# From this many buckets per worker a write's buckets go to one task per worker thread (`bucket_chunks`).
ONE_TASK_PER_WORKER_FROM = 8


def run_handle(ctx: HandleContext, storage: Storage, bucket: Bucket, records: pa.Table, token: str,
               pid: int) -> list[WriteStat]:
    """The handle a bucket's kind calls for: merge (rewrite a base file), append (MOR logs) or create."""
    ensure_partition_metadata(storage, bucket.partition, ctx.instant)
    if bucket.kind is BucketKind.UPDATE:
        return [merge_handle(ctx, storage, bucket, records, token, pid)]
    if bucket.writes_logs:
        return append_handle(ctx, storage, bucket, records, token, pid)
    return create_handle(ctx, storage, bucket, records, token, pid)[0]


def first_output(ctx: HandleContext, bucket: Bucket, token: str) -> tuple[str, str, str]:
    """(partition, file name, IO type) of the file a bucket's handle creates first, known before it runs.
    A handle may create more (rollover, a log name another writer took): those are marked as they come."""
    if bucket.kind is BucketKind.UPDATE:
        return bucket.partition, base_file_name(bucket.file_id, token, ctx.instant), "MERGE"
    if bucket.writes_logs:
        fid, base_instant, version = log_start(ctx.instant, bucket)
        return bucket.partition, log_file_name(fid, log_name_instant(ctx, base_instant), version, token), "APPEND"
    return bucket.partition, base_file_name(created_file_id(bucket, 0), token, ctx.instant), "CREATE"


def run_handles(ctx: HandleContext, storage: Storage, work: Sequence[tuple[Bucket, np.ndarray | None]],
                records: pa.Table, token_for: Callable[[int], str]) -> list[WriteStat]:
    """One task's buckets: the markers of their first files are written ahead in one go (one `MARKERS<n>`
    file in Hudi's batched layout instead of a marker file and directory per file); the update buckets are
    merged in batches (`merge_handles`), every other bucket goes to its handle. Each bucket's rows are
    `records` at its row numbers, or all of them for None; the stats come back in bucket order."""
    tokens = [token_for(b.number) for b, _ in work]
    ctx = replace(ctx, marking=premark(storage, ctx.instant, [first_output(ctx, b, t) for (b, _), t in
                                                              zip(work, tokens)], ctx.marking))

    def taken(rows: np.ndarray | None) -> pa.Table:
        return records if rows is None else records.take(pa.array(rows))

    merged = [i for i, (b, _) in enumerate(work) if b.kind is BucketKind.UPDATE]
    for partition in dict.fromkeys(work[i][0].partition for i in merged):
        ensure_partition_metadata(storage, partition, ctx.instant)

    items = [MergeItem(work[i][0], work[i][1], tokens[i], work[i][0].number) for i in merged]
    out: list[list[WriteStat]] = [[] for _ in work]
    for i, stat in zip(merged, merge_handles(ctx, storage, records, items)):
        out[i] = [stat]
    for i, ((bucket, rows), token) in enumerate(zip(work, tokens)):
        if bucket.kind is not BucketKind.UPDATE:
            out[i] = run_handle(ctx, storage, bucket, taken(rows), token, bucket.number)
    return [stat for stats in out for stat in stats]


def bucket_chunks(work: Sequence[tuple[Bucket, np.ndarray]], workers: int, record_bytes: int = 0
                  ) -> list[list[tuple[Bucket, np.ndarray]]]:
    """Split a write's buckets into a few tasks of about equal cost (the bin-packer's largest first into the
    least-loaded task): few enough that the batched markers are few files, enough that `workers` stay busy to
    the end. Within a task the largest buckets run first. A bucket costs its incoming rows, the rows of the
    base file it rewrites, if it rewrites one (its size over `record_bytes`, the plan's bytes a record;
    not counted without it) and FILE_COST_ROWS.

    Threads of one process take THREAD_TASKS_PER_WORKER tasks each, not the engines' four: a task costs a
    marker file and a merge batch's fixed passes, and on a 30-partition upsert stream on two threads
    eight tasks a write took 8% longer than four (paired runs, median; 300 partitions and a 3-partition
    insert stream unchanged). With ONE_TASK_PER_WORKER_FROM buckets a worker or more, one task per worker:
    so many buckets pack evenly (0.94x on that stream). Below, two per worker let the pool even out what
    the costs misjudge: one per worker took a 3-partition insert stream (three buckets on two threads)
    10-13% longer."""
    def cost(item: tuple[Bucket, np.ndarray]) -> int:
        rewrites = item[0].kind is BucketKind.UPDATE and record_bytes > 0  # MOR logs leave the base as it is
        old_rows = item[0].base_size // record_bytes if rewrites else 0
        return len(item[1]) + old_rows + FILE_COST_ROWS

    per_worker = 1 if len(work) >= ONE_TASK_PER_WORKER_FROM * workers else THREAD_TASKS_PER_WORKER
    return pack_balanced(work, cost, task_count(len(work), workers, per_worker))


def bucket_tasks(buckets: Sequence[Bucket], workers: int, record_bytes: int, task_bytes: int
                 ) -> tuple[list[int], int]:
    """Each bucket's task, and the number of tasks, for an engine that sends every task its records
    (Spark's shuffle): the same few tasks per worker of about equal cost as `bucket_chunks` (a spread
    write's hundreds of small buckets are a few tasks, not a task each, whose fixed cost dominated), but
    at least enough tasks that one holds about `task_bytes` of incoming records (a task keeps its records
    in memory), so large buckets still get a task each."""
    def cost(i: int) -> int:
        return buckets[i].expected_inserts + buckets[i].expected_updates + FILE_COST_ROWS

    records = sum(b.expected_inserts + b.expected_updates for b in buckets)
    by_size = -(-records * max(1, record_bytes) // max(1, task_bytes))
    n = max(task_count(len(buckets), workers), min(len(buckets), by_size))
    task_of = [0] * len(buckets)
    bins = pack_balanced(list(range(len(buckets))), cost, n)
    for t, members in enumerate(bins):
        for i in members:
            task_of[i] = t
    return task_of, len(bins)
