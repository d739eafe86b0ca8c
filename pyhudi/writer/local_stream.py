"""A streamed `insert`: a stream larger than memory written in bounded memory, in one instant.

`pyhudi.write(reader, path, {...operation: insert})` with a `pyarrow.RecordBatchReader` (or any
`__arrow_c_stream__` object) does not concatenate the whole stream before writing:

1. The stream's first chunk is read and prepared: batches until its records, at the planner's record-size
   estimate (`record_size.average_record_size`), reach `FIRST_CHUNK_FILES` max file sizes
   (`hoodie.parquet.max.file.size`) plus the room left in the table's small files (so the chunk can top
   them up), or its Arrow bytes reach `FIRST_CHUNK_ARROW_FILES` max file sizes (the memory bound). Null
   keys in it are refused before anything exists. If the stream ends within the chunk, the write is
   exactly the in-memory insert (local_write's `_write_records`) and nothing below applies.
2. Otherwise the chunk is planned as the in-memory insert is (tag_records -> profile -> the client's
   `_plan`); its records routed to small files top them up (COW, and MOR with an index blind to logs:
   the merge handle rewrites the small base file, as Hudi's delta-commit partitioner does), one engine
   task per small file.
3. The chunk's records the plan sends to new file groups, then every later batch as it arrives, go to one
   more engine task running bulk_insert's rolling writer (`bulk_insert.write_tables`): one open writer per
   table partition writing a file each time a file's worth is buffered, rolling over at the max file size.
   New files are full except at most one tail per table partition. (The planner's evenly split new
   buckets would leave the chunk's own small tail besides the stream's; they are not used here.)
4. All of it is one instant (one commit / deltacommit). A null or empty key in a later batch is found when
   the batch arrives: the write is refused and its instant rolled back, so nothing becomes visible (as a
   streamed bulk_insert). The inflight file carries the operation without per-partition counts (known
   only at the end; rollback works from markers), as the streamed bulk_insert's and the one-task write's.

Peak memory follows the first chunk plus the rolling writer's buffer per table partition (two files' worth
of encoded bytes each, bulk_insert's rule), not the stream.

What streams (`materialize_reason` says why not): a stream (not a Table or pandas, already in memory) with
operation `insert`, COW or MOR, any index except:
* `hoodie.combine.before.insert=true`: dedupe by precombine needs every record of a key at once, so the
  stream is materialized (memory then follows the stream) and no duplicate Hudi would remove is written;
* the BUCKET index: inserts are planned per bucket over the whole batch; materialized.
MOR with an index that sees log files (INMEMORY) streams too, but its new file groups start log-only as
in Hudi (INSERT_LOG buckets, the append handle): `write_log_groups` instead of the rolling base-file
writer, a new log-only group every `records_per_new_file` records of a partition (Hudi's
insertRecordsPerBucket; the planner would split a batch's inserts evenly over its groups instead).
upsert, delete and the overwrites materialize; bulk_insert streams on its own (local_write).

Deliberate difference: with `hoodie.copyonwrite.insert.auto.split=false` the streamed new files still roll
over by size, not every `hoodie.copyonwrite.insert.split.size` records.
"""

from __future__ import annotations

import itertools
import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.engine.base import TaskInfo
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.model.file_names import new_file_id_prefix
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.arrow_prepare import ArrowBatchSpec, ArrowSource, bad_key_count, checked_batches
from pyhudi.writer.bulk_insert import by_partition, write_tables
from pyhudi.writer.client import WriteClient, WriteResult, _Rejected
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.dispatch import run_handle
from pyhudi.writer.handles import HandleContext, without_deletes
from pyhudi.writer.local_tagging import LOC_FILE_ID, LOC_INSTANT, tag_records
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import Bucket, BucketKind, BucketPlan, records_per_new_file
from pyhudi.writer.prepare import BAD_KEY, null_ordering_error
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.record_size import average_record_size
from pyhudi.writer.small_files import small_file_candidates

log = logging.getLogger(__name__)
FIRST_CHUNK_FILES = 2  # the first chunk: this many max file sizes of records at the record-size estimate
FIRST_CHUNK_ARROW_FILES = 8  # ... and never more than this many max file sizes of Arrow bytes
_STREAM = -1  # the engine task item that runs the rolling writer


def materialize_reason(cfg: WriteConfig) -> str | None:
    """Why an insert stream with this config is read into memory first; None when it streams."""
    if cfg.operation is not WriteOperation.INSERT:
        return f"operation {cfg.operation.value}"
    if cfg.combine_before_write:
        return "hoodie.combine.before.insert=true (dedupe needs every record of a key)"
    if cfg.index.type == "BUCKET":
        return "the BUCKET index (inserts are planned per bucket over the whole batch)"
    return None


class StreamedInsert(WriteClient):
    """The streamed insert's part of the in-process write client (LocalWriteClient inherits it)."""

    def _checked_batches(self, spec: ArrowBatchSpec, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.Table]:
        """Each non-empty batch prepared; a null key or null required precombine value refuses the write
        (`_Rejected`: the instant is withdrawn, or rolled back once files exist)."""
        return checked_batches(spec, self.config, batches, self._bad_keys, _Rejected)

    def _first_chunk(self, spec: ArrowBatchSpec, source: ArrowSource, timeline: ActiveTimeline | None
                     ) -> tuple[pa.Table, Iterator[pa.RecordBatch] | None]:
        """The stream's first chunk, prepared and checked as the in-memory write checks its whole input
        (null keys / precombine values refused before anything exists), and the rest of the stream (None
        when the stream ended within the chunk)."""
        cfg = self.config
        avg = average_record_size(timeline, cfg.sizing) if timeline is not None else cfg.sizing.record_size_estimate
        target = FIRST_CHUNK_FILES * cfg.sizing.max_file_size
        by_arrow = FIRST_CHUNK_ARROW_FILES * cfg.sizing.max_file_size
        room_pending = timeline is not None  # a new table has no small files
        tables: list[pa.Table] = []
        rows = nbytes = 0
        rest: Iterator[pa.RecordBatch] | None = None
        batches = source.batches
        for batch in batches:
            if not batch.num_rows:
                continue
            prepared = spec.prepare(batch)
            tables.append(prepared)
            rows, nbytes = rows + prepared.num_rows, nbytes + prepared.nbytes
            if room_pending and timeline is not None and rows * avg >= target:
                room_pending, target = False, target + self._small_file_room(timeline, tables)
            if rows * avg >= target or nbytes >= by_arrow:
                rest = _peeked(batches)
                break
        return self._checked_records(spec, source, tables), rest

    def _checked_records(self, spec: ArrowBatchSpec, source: ArrowSource, tables: list[pa.Table]) -> pa.Table:
        """Prepared batches as one table, refused (nothing written yet) if a key or a required precombine
        value is null."""
        records = pa.concat_tables(tables) if tables else spec.prepare(source.schema.empty_table())
        bad = bad_key_count(records)
        if bad:
            raise self._bad_keys(bad)
        missing = spec.null_ordering(records)
        if missing:
            raise null_ordering_error(self.config, missing)
        return records.drop_columns([BAD_KEY])

    def _small_file_room(self, timeline: ActiveTimeline, tables: list[pa.Table]) -> int:
        """Bytes the small files of the partitions the chunk holds so far may still take: the first chunk
        grows by that much, so it can top them up (the plan tops up only partitions the chunk writes, as
        Hudi's partitioner assigns small files of the profile's partitions only). Only asked once the
        stream outgrows the base chunk (a small stream lists nothing extra)."""
        cfg = self.config
        view = build_view(self.storage, cfg.table, timeline)
        seen: set[str] = set()
        for table in tables:
            seen.update(pc.unique(table.column(PARTITION_COL)).to_pylist())
        small = small_file_candidates(cfg, view, timeline, view.existing_partitions(seen))
        return sum(max(0, cfg.sizing.max_file_size - sf.size) for files in small.values() for sf in files)

    def _write_stream(self, first: pa.Table, rest: Iterator[pa.RecordBatch], spec: ArrowBatchSpec) -> WriteResult:
        """Plan the first chunk as the in-memory insert does, then write it and the rest of the stream in
        one instant (see the module docstring)."""
        cfg = self.config
        # An insert looks no keys up (only a BUCKET index would, which materializes): no view to list.
        tagged, profile = tag_records(self.engine, self.storage, cfg, first, None)
        del first
        self._ensure_table()
        timeline, view = self._recovered_view()
        plan = self._plan(profile, view, timeline, tagged)
        action = Action.DELTA_COMMIT if cfg.table.is_mor else Action.COMMIT
        inflight = WorkloadProfile(operation_type=cfg.operation.operation_type).to_inflight_bytes()
        held = [tagged]  # handed over once, so the chunk is freed as soon as its rows are routed
        del tagged

        def run(instant: str) -> list[WriteStat]:
            return self._run_stream(held.pop(), rest, plan, spec, instant)

        log.info("streamed insert: first chunk planned into %d bucket(s); the rest rolls into new files",
                 plan.num_buckets)
        return self._run_instant(timeline, action, b"", inflight, spec.avro_schema, run, None)

    def _run_stream(self, tagged: pa.Table, rest: Iterator[pa.RecordBatch], plan: BucketPlan,
                    spec: ArrowBatchSpec, instant: str) -> list[WriteStat]:
        """Small-file buckets of the first chunk, one task each, and one task streaming the chunk's
        new-file records followed by the rest of the stream through the rolling writer."""
        pending, head = _split_by_plan(tagged, plan)
        del tagged
        ctx = replace(self._handle_context(spec.avro_schema, instant, plan, []), salts=())
        storage = self.storage
        stream_pid = plan.num_buckets  # after every bucket number: its own write token and sequence numbers
        heads = [head]

        log_groups = self.config.table.is_mor and self.config.index.can_index_log_files
        per_group = records_per_new_file(self.config.sizing, plan.average_record_size)

        def task(number: int, info: TaskInfo) -> list[WriteStat]:
            if number == _STREAM:
                tables = itertools.chain([heads.pop()], self._checked_batches(spec, rest))
                if log_groups:
                    return write_log_groups(ctx, storage, tables, stream_pid, info.token(stream_pid), per_group)
                stats = write_tables(ctx, tables, stream_pid, info.token(stream_pid))
                return [WriteStat.from_json(json.loads(s)) for s in stats]
            bucket, rows = pending.pop(number)
            return run_handle(ctx, storage, bucket, rows, info.token(number), number)

        # The stream first: it is the long task; the small-file merges run beside it.
        order = sorted(pending, key=lambda n: -pending[n][1].num_rows)
        return self.engine.map_tasks(task, [_STREAM, *order], description=f"streamed insert {instant}")


def _split_by_plan(tagged: pa.Table, plan: BucketPlan) -> tuple[dict[int, tuple[Bucket, pa.Table]], pa.Table]:
    """The first chunk's records per small-file bucket, and the records the plan sends to new file groups
    (which the rolling writer writes instead, with the rest of the stream)."""
    routes = plan.buckets_for(tagged.column(PARTITION_COL), tagged.column(RECORD_KEY_COL),
                              tagged.column(LOC_FILE_ID))
    records = tagged.drop_columns([LOC_FILE_ID, LOC_INSTANT])
    fresh = np.array([b.kind in (BucketKind.INSERT, BucketKind.INSERT_LOG) for b in plan.buckets], dtype=bool)
    pending: dict[int, tuple[Bucket, pa.Table]] = {}
    if not bool(fresh[routes].all()):
        records = records.combine_chunks()  # several takes: from one contiguous copy
        order = np.argsort(routes, kind="stable")
        bounds = np.searchsorted(routes[order], np.arange(plan.num_buckets + 1))
        for b in plan.buckets:
            rows = order[bounds[b.number]:bounds[b.number + 1]]
            if len(rows) and not fresh[b.number]:
                pending[b.number] = (b, records.take(pa.array(rows)))
    new_rows = np.flatnonzero(fresh[routes])
    head = records if len(new_rows) == records.num_rows else records.take(pa.array(new_rows))
    return pending, head


def write_log_groups(ctx: HandleContext, storage: Storage, tables: Iterable[pa.Table], pid: int, token: str,
                     per_group: int) -> list[WriteStat]:
    """MOR with an index that sees log files: new file groups start log-only (Hudi's INSERT_LOG buckets,
    written by the append handle), `per_group` records each (the planner's records per new file group);
    the last group of a partition takes the rest. One buffer per table partition, at most a group's worth."""
    pending: dict[str, list[pa.Table]] = {}
    buffered: dict[str, int] = {}
    stats: list[WriteStat] = []

    def flush(part: str, final: bool) -> None:
        rows = pa.concat_tables(pending.pop(part))
        buffered[part] = 0
        while rows.num_rows >= per_group or (final and rows.num_rows):
            n = min(per_group, rows.num_rows)
            bucket = Bucket(-1, BucketKind.INSERT_LOG, part, new_file_id_prefix(), expected_inserts=n)
            stats.extend(run_handle(ctx, storage, bucket, rows.slice(0, n), token, pid))
            rows = rows.slice(n)
        if rows.num_rows:
            pending[part], buffered[part] = [rows], rows.num_rows

    for table in tables:
        for value, rows in by_partition(without_deletes(table)):
            part = str(value)
            # Buffered rows and new batches must share one schema: keep only what gets written.
            rows = rows.select([c for c in rows.column_names if not c.startswith("_pyhudi_")])
            pending.setdefault(part, []).append(rows)
            buffered[part] = buffered.get(part, 0) + rows.num_rows
            if buffered[part] >= per_group:
                flush(part, final=False)
    for part in list(pending):
        flush(part, final=True)
    return stats


def _peeked(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch] | None:
    """The rest of the stream, or None if no non-empty batch is left (the chunk was the whole stream)."""
    for batch in batches:
        if batch.num_rows:
            return itertools.chain([batch], batches)
    return None

