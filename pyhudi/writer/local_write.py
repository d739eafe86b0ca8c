"""The in-process write client: Arrow data (a table, a stream, pandas, polars, DuckDB) written without a JVM.

The lifecycle, plan and commit are the engine-neutral `client.WriteClient`'s; this module is the Arrow data
path, run on the in-process engine (`engine/local.py`: tasks on a bounded thread pool):

* prepare (arrow_prepare.py): schema checks, the Avro writer schema, keys with Arrow compute;
* a streamed insert (local_stream.py): the stream's first chunk is planned as below (small files topped
  up), its new-file records and the rest of the stream roll into new files as bulk_insert's do, one
  instant, bounded memory; combine.before.insert and the BUCKET index materialize;
* insert / upsert / delete / insert_overwrite(_table): the input is materialized as prepared records
  (keys, partition paths, the data columns conformed: about the input's own Arrow size), checked for null
  keys and null precombine values before anything is written, tagged (local_tagging.py), profiled, planned
  by the client's `_plan`, routed with `BucketPlan.buckets_for`, and each bucket's handle runs as one task;
* bulk_insert: batches are consumed as they come (bounded memory). Each task keeps one open writer per table
  partition and writes a file each time a file's worth is buffered (bulk_insert.write_tables). A pyarrow
  Table input is split over the engine's tasks; a stream is one task. GLOBAL_SORT / PARTITION_SORT and
  combine.before.insert apply to the whole input when it is a Table, and within chunks of
  `BULK_SORT_CHUNK_ROWS` rows for a stream (a stream larger than memory cannot be sorted whole). Null keys
  are found as batches arrive: a stream that holds one is refused and its instant rolled back.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.engine.base import TaskInfo
from pyhudi.faults import fault_point
from pyhudi.index import bucket as bucket_index
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.model.upgrade import upgrade_for_write
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.writer.arrow_prepare import ArrowBatchSpec, ArrowSource, arrow_source, bad_key_count, prepare_spec
from pyhudi.writer.binpack import pack_balanced
from pyhudi.writer.bulk_insert import BUCKET_COL, by_partition, gather, partition_groups, write_tables
from pyhudi.writer.client import WriteResult
from pyhudi.writer.config import WriteConfig, parquet_settings
from pyhudi.writer.dispatch import bucket_chunks, run_handles
from pyhudi.writer.handles import HandleContext, dedupe
from pyhudi.writer.local_stream import StreamedInsert, materialize_reason
from pyhudi.writer.local_tagging import LOC_FILE_ID, LOC_INSTANT, tag_records
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import Bucket, BucketPlan, grouped
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.record_size import sampled_record_size

log = logging.getLogger(__name__)
BULK_SORT_CHUNK_ROWS = 1 << 20  # rows a streamed bulk_insert sorts / combines at once


class LocalWriteClient(StreamedInsert):
    def __init__(self, storage: Storage, config: WriteConfig, engine: Any = None, table_exists: bool = False) -> None:
        super().__init__(engine, storage, config, table_exists)

    # ------------------------------------------------------------------ entry point
    def write(self, data: Any, replace_all: bool = False) -> WriteResult:
        source = arrow_source(data)
        # A version-4/5 table becomes version 6 first, as in Hudi 0.14; hoodie.write.table.version=8|9 upgrades
        # a version-6 one to Hudi 1.x's layout (the write then goes on with the upgraded table's config).
        self.config = cfg = upgrade_for_write(self.storage, self.config)
        if cfg.operation is WriteOperation.DELETE_PARTITION:
            return self._delete_partitions(self._timeline(), lambda: self._partitions_of(source))
        timeline = self._begin()
        table_avro = table_schema(timeline, cfg.table) if timeline is not None else None
        spec = prepare_spec(source.schema, cfg, None if replace_all else table_avro)
        if cfg.operation is WriteOperation.BULK_INSERT:
            result = self._write_bulk(spec, source, timeline)
        elif source.table is None and materialize_reason(cfg) is None:
            first, rest = self._first_chunk(spec, source, timeline)
            result = self._write_records(first, spec, timeline, replace_all) if rest is None else \
                self._write_stream(first, rest, spec)
        else:
            result = self._write_records(self._prepared(spec, source), spec, timeline, replace_all)
        self._inline_services()
        return result

    def _prepared(self, spec: ArrowBatchSpec, source: ArrowSource) -> pa.Table:
        """The whole batch prepared, checked for null keys and null precombine values (nothing written yet)."""
        return self._checked_records(spec, source, [spec.prepare(b) for b in source.batches])

    def _partitions_of(self, source: ArrowSource) -> list[str]:
        """delete_partition's partitions from the records' partition paths (null keys refused)."""
        spec = prepare_spec(source.schema, replace(self.config, operation=WriteOperation.DELETE), None)
        found: set[str] = set()
        for batch in source.batches:
            prepared = spec.prepare(batch)
            bad = bad_key_count(prepared)
            if bad:
                raise self._bad_keys(bad)
            found.update(pc.unique(prepared.column(PARTITION_COL)).to_pylist())
        return sorted(found)

    # ------------------------------------------------------------------ insert, upsert, delete, overwrite
    def _write_records(self, records: pa.Table, spec: ArrowBatchSpec, timeline: ActiveTimeline | None,
                       replace_all: bool) -> WriteResult:
        cfg = self.config
        view = build_view(self.storage, cfg.table, timeline) if timeline is not None else None
        tagged, profile = tag_records(self.engine, self.storage, cfg, records, view)
        fault_point("write.after_tagging")
        self._ensure_table()
        timeline, view = self._recovered_view(timeline, view)
        return self._commit_write(tagged, profile, spec.avro_schema, timeline, view, replace_all)

    def _sampled_record_size(self, tagged: Any) -> int | None:
        return sampled_record_size(tagged, self.config.sizing, parquet_settings(self.config, self.storage.base_uri))

    def _run_handles(self, tagged: pa.Table, plan: BucketPlan, avro_schema: dict[str, Any],
                     instant: str) -> list[WriteStat]:
        routes = plan.buckets_for(tagged.column(PARTITION_COL), tagged.column(RECORD_KEY_COL),
                                  tagged.column(LOC_FILE_ID))
        # One contiguous copy first: a take per bucket from a many-chunk table costs far more in total.
        records = tagged.drop_columns([LOC_FILE_ID, LOC_INSTANT]).combine_chunks()
        ctx = replace(self._handle_context(avro_schema, instant, plan, []), salts=())
        storage = self.storage
        order, bounds = grouped(routes, plan.num_buckets)
        work = [(b, order[bounds[b.number]:bounds[b.number + 1]]) for b in plan.buckets]
        work = [(b, rows) for b, rows in work if len(rows)]

        def run(chunk: list[tuple[Bucket, np.ndarray]], info: TaskInfo) -> list[WriteStat]:
            return run_handles(ctx, storage, chunk, records, info.token)

        log.info("%s: writing %d bucket(s) in-process", instant, len(work))
        return self.engine.map_tasks(run, bucket_chunks(work, self.engine.parallelism, plan.average_record_size),
                                     description=f"write {instant}")

    # ------------------------------------------------------------------ bulk_insert
    def _write_bulk(self, spec: ArrowBatchSpec, source: ArrowSource, timeline: ActiveTimeline | None) -> WriteResult:
        cfg = self.config
        bucket = None
        if cfg.index.type == "BUCKET":
            fields = cfg.bucket_hash_fields
            bucket = (fields, cfg.index.bucket_num)
        existing: dict[tuple[str, int], str] = {}
        partitions: list[str] | None = None  # a stream's partitions are known only as it is read
        if source.table is not None:  # all in memory: refuse null keys before the instant exists
            prepared = self._prepared(spec, source)
            source = ArrowSource(source.schema, iter(()), prepared)
            partitions = pc.unique(prepared.column(PARTITION_COL)).to_pylist()
        if bucket is not None and timeline is not None:
            view = build_view(self.storage, cfg.table, timeline)
            bucket_index.check_layout(view, cfg.index.bucket_num, partitions, hash_fields=cfg.bucket_hash_fields)
            existing = bucket_index.existing_buckets(view, view.partitions_of(partitions))
            if source.table is not None:
                _check_new_buckets(source.table, bucket, existing)
        self._ensure_table()
        timeline = self._recovered_timeline()  # bulk_insert reads no file layout: no view to build
        action = Action.DELTA_COMMIT if cfg.table.is_mor else Action.COMMIT

        def run(instant: str) -> list[WriteStat]:
            ctx = self._handle_context(spec.avro_schema, instant, None, [], combine=False)
            return self._run_bulk_source(ctx, spec, source, bucket, existing)

        inflight = WorkloadProfile(operation_type=cfg.operation.operation_type).to_inflight_bytes()
        return self._run_instant(timeline, action, b"", inflight, spec.avro_schema, run, None)

    def _run_bulk_source(self, ctx: HandleContext, spec: ArrowBatchSpec, source: ArrowSource,
                         bucket: tuple[tuple[str, ...], int] | None,
                         existing: dict[tuple[str, int], str]) -> list[WriteStat]:
        chunks: list[Any] = [None]  # one task consumes a stream
        if source.table is not None:
            chunks = self._bulk_chunks(self._laid_out(source.table, bucket))

        def run(chunk: list[Callable[[], pa.Table]] | None, info: TaskInfo) -> list[WriteStat]:
            tables = (rows() for rows in chunk) if chunk is not None else \
                self._streamed(spec, source, bucket, existing)
            stats = write_tables(ctx, tables, info.partition_id, info.token())
            return [WriteStat.from_json(json.loads(s)) for s in stats]

        return self.engine.map_tasks(run, chunks, description="bulk_insert")

    def _bulk_chunks(self, table: pa.Table) -> list[list[Callable[[], pa.Table]]]:
        """An in-memory input's tasks (at most the engine's or the configured parallelism), each a list of
        row sets a task gathers itself (the gathers then run in parallel). Several table partitions: whole
        partitions per task, balanced by rows, so no partition gets an extra file per task. One partition:
        contiguous slices, at most one per max-file-size of Arrow data."""
        cfg = self.config
        limit = cfg.parallelism if cfg.parallelism > 0 else self.engine.parallelism
        if limit > 1 and BUCKET_COL not in table.column_names:
            groups = partition_groups(table)
            if len(groups) > 1:
                packed = pack_balanced([rows for _, rows in groups], len, limit)
                return [[partial(_gather, table, rows) for rows in chunk] for chunk in packed]
        by_size = max(1, int(table.nbytes // max(1, cfg.sizing.max_file_size)))
        return [[partial(_identity, chunk)] for chunk in _split(table, max(1, min(limit, by_size)))]

    def _streamed(self, spec: ArrowBatchSpec, source: ArrowSource, bucket: tuple[tuple[str, ...], int] | None,
                  existing: dict[tuple[str, int], str]) -> Iterator[pa.Table]:
        """The stream's batches prepared; sorted/combined per chunk when asked; null keys refuse the write."""
        chunk: list[pa.Table] = []
        rows = 0
        reorders = self.config.bulk_insert_sort_mode != "NONE" or self.config.combine_before_write
        for prepared in self._checked_batches(spec, source.batches):
            if bucket is not None:
                _check_new_buckets(prepared, bucket, existing)
            if not reorders and bucket is None:
                yield prepared
                continue
            chunk.append(prepared)
            rows += prepared.num_rows
            if rows >= BULK_SORT_CHUNK_ROWS:
                yield self._laid_out(pa.concat_tables(chunk), bucket)
                chunk, rows = [], 0
        if chunk:
            yield self._laid_out(pa.concat_tables(chunk), bucket)

    def _laid_out(self, records: pa.Table, bucket: tuple[tuple[str, ...], int] | None) -> pa.Table:
        """combine.before.insert (per partition, greatest precombine wins) and the sort mode, as
        spark_bulk.layout does with Spark; BUCKET: rows carry their bucket and sort by it."""
        cfg = self.config
        if cfg.combine_before_write and records.num_rows:
            records = pa.concat_tables([dedupe(rows, cfg.precombine_field if cfg.precombine_field in
                                               rows.column_names else None) for _, rows in by_partition(records)])
        if bucket is not None:
            fields, n = bucket
            bids = bucket_index.bucket_ids(records.column(RECORD_KEY_COL).combine_chunks(), fields, n)
            records = records.append_column(BUCKET_COL, bids)
            return records.sort_by([(PARTITION_COL, "ascending"), (BUCKET_COL, "ascending"),
                                    (RECORD_KEY_COL, "ascending")])
        if cfg.bulk_insert_sort_mode in ("GLOBAL_SORT", "PARTITION_SORT", "PARTITION_PATH_REPARTITION_AND_SORT"):
            return records.sort_by([(PARTITION_COL, "ascending"), (RECORD_KEY_COL, "ascending")])
        return records


def _gather(table: pa.Table, rows: np.ndarray) -> pa.Table:
    return gather(table, rows)  # ascending rows: a filter where a take would concatenate every chunk


def _identity(table: pa.Table) -> pa.Table:
    return table


def _split(table: pa.Table, parts: int) -> list[pa.Table]:
    """Contiguous slices (a sorted table stays range-partitioned, as Spark's repartitionByRange gives).
    BUCKET rows of one (partition, bucket) must stay in one task: split at bucket boundaries."""
    if parts <= 1 or table.num_rows < 2:
        return [table]
    step = -(-table.num_rows // parts)
    cuts = list(range(0, table.num_rows, step)) + [table.num_rows]
    if BUCKET_COL in table.column_names:
        key = pc.binary_join_element_wise(table.column(PARTITION_COL),
                                          pc.cast(table.column(BUCKET_COL), pa.string()), "\u0001")
        values = key.combine_chunks() if isinstance(key, pa.ChunkedArray) else key
        changes = np.flatnonzero(pc.not_equal(values[1:], values[:-1]).to_numpy(zero_copy_only=False)) + 1
        # Each cut moves forward to the next (partition, bucket) boundary.
        at = np.searchsorted(changes, np.asarray(cuts[1:-1], dtype=np.int64))
        moved = [int(changes[i]) if i < len(changes) else table.num_rows for i in at.tolist()]
        cuts = sorted({0, table.num_rows, *moved})
    return [table.slice(lo, hi - lo) for lo, hi in zip(cuts, cuts[1:]) if hi > lo]


def _check_new_buckets(records: pa.Table, bucket: tuple[tuple[str, ...], int],
                       existing: dict[tuple[str, int], str]) -> None:
    """Refuse a BUCKET bulk_insert whose records fall into buckets that already have a file group."""
    if not existing:
        return
    parts = records.column(PARTITION_COL).combine_chunks()
    with_groups = sorted({p for p, _ in existing})
    mine = records.filter(pc.is_in(parts, value_set=pa.array(with_groups, pa.string())))
    if not mine.num_rows:
        return
    fields, n = bucket
    bids = bucket_index.bucket_ids(mine.column(RECORD_KEY_COL).combine_chunks(), fields, n).to_pylist()
    taken = sorted({(p, b) for p, b in zip(mine.column(PARTITION_COL).to_pylist(), bids) if (p, b) in existing})
    bucket_index.refuse_taken_buckets(taken, existing)


