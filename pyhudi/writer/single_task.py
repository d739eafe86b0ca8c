"""The small-batch write: index lookup, bucket planning and the write handles in one Spark task.

A distributed write costs a fixed set of Spark jobs per batch (a count job, the index lookup and
profile, the write job with its shuffle), which dominates when the batch is small: a streaming
micro-batch of a few MB. When the batch is small enough for one task (Spark's size estimate of the
input at most `hoodie.pyhudi.write.single.task.max.bytes`) and the table already exists, the driver
ships the table's file layout (latest base files, small-file candidates, log targets: metadata only)
to a single task, which does what the distributed path does in the same order and with the same
code: tag with the keys stored in the latest base files (SIMPLE/BLOOM semantics), profile, plan
buckets with the UpsertPartitioner, and run the create/merge/append handles, one bucket after the
other. Only write stats (or a reason to fail) leave the task. The data never passes through the
driver.

What the one task cannot know in advance, the driver checks afterwards (conflicts at commit time), or
the task reports as an `error` row before it writes anything (null keys, updates to file groups under
pending clustering); the driver turns those into the same exceptions the distributed path raises.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pyhudi.engine.local import LocalEngine
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.storage.metrics import bind
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.dispatch import bucket_chunks, run_handles
from pyhudi.writer.handles import IS_UPDATE, HandleContext, is_delete
from pyhudi.writer.local_tagging import KeyFile, locate_in_files
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import (
    Bucket,
    BucketPlan,
    LogTarget,
    MergeOnRead,
    SmallFile,
    UpdateBase,
    plan_buckets,
)
from pyhudi.writer.prepare import BAD_KEY
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.record_size import average_record_size
from pyhudi.writer.small_files import small_file_candidates

OUTPUT_SCHEMA = "kind string, payload string"
_OUT = pa.schema([("kind", pa.string()), ("payload", pa.string())])
ERR_BAD_KEYS = "bad_keys"
ERR_NULL_ORDERING = "null_ordering"
ERR_CLUSTERING = "updates_under_clustering"
_IN_TASK = LocalEngine(1)  # the one task's own lookups run one after the other, in its thread


@dataclass(frozen=True)
class StoredFile:
    """A latest base file the index reads keys from, and its file group's slice instant."""

    file_id: str
    base_instant: str
    path: str


@dataclass(frozen=True)
class TableLayout:
    """What the task needs to know about the table: metadata only, built on the driver from one view."""

    base_files: dict[str, tuple[StoredFile, ...]]  # partition -> latest base files (index lookup)
    small_files: dict[str, list[SmallFile]]  # partition -> small-file candidates
    log_targets: dict[tuple[str, str], LogTarget]  # MOR: every live group's next log file
    pending_clustering: dict[tuple[str, str], str]  # (partition, fileId) -> clustering instant
    average_record_size: int
    tag: bool  # the operation looks up existing keys (upsert, delete)
    reject_updates_under_clustering: bool
    mor: bool
    handle_threads: int = 1  # bucket handles run at once (the executor's cores the batch may use)

    @property
    def index_files(self) -> int:
        """How many base files the task's index lookup may have to read (all partitions' latest)."""
        return sum(len(files) for files in self.base_files.values())


def write_batch(ctx: HandleContext, layout: TableLayout, storage: Storage, records: pa.Table,
                token_for: Callable[[int], str]) -> list[WriteStat | dict[str, object]]:
    """Tag, profile, plan and write `records`; returns write stats, or a single error dict."""
    refusal = bad_keys_refusal(records) or null_ordering_refusal(ctx, records)
    if refusal is not None:
        return [refusal]
    records = records.drop_columns([BAD_KEY])
    deletes = is_delete(records)
    if layout.tag:
        file_ids, instants = _locate(storage, layout, records)
        located = ~pc.is_null(file_ids).to_numpy(zero_copy_only=False)
        keep = located | ~deletes  # deletes of keys the table does not have are no-ops
    else:
        file_ids = instants = pa.nulls(records.num_rows, pa.string())
        located = np.zeros(records.num_rows, dtype=bool)
        keep = ~deletes
    records = records.filter(pa.array(keep))
    file_ids, instants, located = file_ids.filter(pa.array(keep)), instants.filter(pa.array(keep)), located[keep]
    profile = _profile(ctx.operation, records, file_ids, instants)
    conflict = _clustering_conflict(layout, profile)
    if conflict is not None:
        return [conflict]
    plan = _plan(ctx, layout, profile)
    if not plan.num_buckets:
        return []
    records = records.append_column(IS_UPDATE, pa.array(located))
    return _run_buckets(ctx, storage, plan, records, _route(plan, records, file_ids), token_for,
                        layout.handle_threads)


def null_ordering_refusal(ctx: HandleContext, records: pa.Table) -> dict[str, object] | None:
    """The error a task reports, before it writes anything, when records the write must order by their
    precombine value have none (Hudi refuses them; see writer/prepare.ordering_required)."""
    if not ctx.require_ordering or not ctx.precombine_field:
        return None
    parts = ctx.precombine_field.split(".")
    values = records.column(parts[0])
    for part in parts[1:]:
        values = pc.struct_field(values, part)  # a null parent struct makes the child null
    return {"error": ERR_NULL_ORDERING, "count": values.null_count} if values.null_count else None


def bad_keys_refusal(records: pa.Table) -> dict[str, object] | None:
    """The error a task reports, before it writes anything more, when records have no usable key."""
    bad = int(pc.sum(records.column(BAD_KEY).cast(pa.int64())).as_py() or 0)
    return {"error": ERR_BAD_KEYS, "count": bad} if bad else None


def _locate(storage: Storage, layout: TableLayout, records: pa.Table) -> tuple[pa.Array, pa.Array]:
    """(fileId, base instant) of every record whose key is stored in its partition's latest base files
    (null otherwise): the SIMPLE index, reading only the record-key column of each file, with the
    in-process write's lookup (local_tagging.locate_in_files) run file after file in this task."""
    touched = [p for p in pc.unique(records.column(PARTITION_COL)).to_pylist() if p in layout.base_files]
    files = [KeyFile(p, sf.file_id, sf.base_instant, sf.path) for p in touched for sf in layout.base_files[p]]
    fids, insts, _ = locate_in_files(_IN_TASK, storage, files, records)
    return fids, insts


def _profile(op: WriteOperation, records: pa.Table, file_ids: pa.Array, instants: pa.Array) -> WorkloadProfile:
    profile = WorkloadProfile(operation_type=op.operation_type)
    counts = pa.table({"p": records.column(PARTITION_COL), "f": file_ids, "i": instants}) \
        .group_by(["p", "f", "i"], use_threads=False).aggregate([([], "count_all")])
    for part, fid, inst, n in zip(*(counts.column(c).to_pylist() for c in ("p", "f", "i", "count_all"))):
        profile.count(part, fid, inst, n)
    return profile


def _clustering_conflict(layout: TableLayout, profile: WorkloadProfile) -> dict[str, object] | None:
    """Hudi's SparkRejectUpdateStrategy, checked before anything is written."""
    if not layout.reject_updates_under_clustering:
        return None
    hit = profile.updates_in(layout.pending_clustering)
    if not hit:
        return None
    part, fid = hit[0]
    return {"error": ERR_CLUSTERING, "count": len(hit), "partition": part, "file_id": fid,
            "clustering": layout.pending_clustering[(part, fid)]}


def _plan(ctx: HandleContext, layout: TableLayout, profile: WorkloadProfile) -> BucketPlan:
    bases = {(p, sf.file_id): UpdateBase(sf.path) for p, files in layout.base_files.items() for sf in files}
    small = {p: files for p, files in layout.small_files.items()
             if p in profile.partitions and profile.partitions[p].num_inserts > 0}
    mor = MergeOnRead(False, layout.log_targets) if layout.mor else None
    return plan_buckets(profile, small, bases, ctx.sizing, layout.average_record_size, mor)


def _route(plan: BucketPlan, records: pa.Table, file_ids: pa.Array) -> np.ndarray:
    """The bucket of every record, by the distributed path's routing rule."""
    return plan.buckets_for(records.column(PARTITION_COL), records.column(RECORD_KEY_COL), file_ids)


def _run_buckets(ctx: HandleContext, storage: Storage, plan: BucketPlan, records: pa.Table, routes: np.ndarray,
                 token_for: Callable[[int], str], threads: int) -> list[WriteStat | dict[str, object]]:
    """Run every bucket's handle. Handles of different buckets touch different files, and pyarrow's
    parquet encoding releases the GIL, so up to `threads` of them run at once: a small batch has the
    executor to itself, and a COW upsert rewrites several files."""
    ctx = replace(ctx, buckets=tuple(plan.buckets), salts=())
    order = np.argsort(routes, kind="stable")
    bounds = np.searchsorted(routes[order], np.arange(plan.num_buckets + 1))
    work = [(b, order[bounds[b.number]:bounds[b.number + 1]]) for b in plan.buckets]
    work = [(b, rows) for b, rows in work if len(rows)]
    if len(work) > 1:  # several takes: from one contiguous copy, not from every chunk each time
        records = records.combine_chunks()

    def run(chunk: list[tuple[Bucket, np.ndarray]]) -> list[WriteStat]:
        return run_handles(ctx, storage, chunk, records, token_for)

    workers = max(1, min(threads, len(work), os.cpu_count() or 1))
    chunks = bucket_chunks(work, workers)
    if workers == 1:
        results = [run(chunk) for chunk in chunks]
    else:
        with ThreadPoolExecutor(workers) as pool:
            results = list(pool.map(bind(run), chunks))
    return [s for stats in results for s in stats]


# --------------------------------------------------------------------------- driver side
def table_layout(cfg: WriteConfig, view: FileSystemView, timeline: ActiveTimeline, threads: int,
                 partitions: Sequence[str] | None = None) -> TableLayout:
    """The table's layout for one small-batch write, from the view the write commits against. With the
    batch's `partitions` (the count job's), only those are listed and described: the task tags, tops up
    and appends to nothing else, as Hudi's index and partitioner take only the records' partitions."""
    parts = view.partitions_of(partitions)
    base_files = {p: tuple(StoredFile(bf.file_id, bf.instant, bf.path) for bf in view.latest_base_files(p))
                  for p in parts} if cfg.operation.needs_tagging else {}
    small = small_file_candidates(cfg, view, timeline, parts)
    log_targets = {(p, g.file_id): LogTarget(*view.log_target(p, g.file_id))
                   for p in parts for g in view.live_groups(p)} if cfg.table.is_mor else {}
    return TableLayout(
        base_files=base_files, small_files=small, log_targets=log_targets,
        pending_clustering=view.pending_clustering_file_ids(),
        average_record_size=average_record_size(timeline, cfg.sizing), tag=cfg.operation.needs_tagging,
        reject_updates_under_clustering=cfg.clustering.reject_updates, mor=cfg.table.is_mor,
        handle_threads=threads)


def eligible_operation(cfg: WriteConfig) -> bool:
    """Whether a write's operation and index allow the one-task path at all."""
    if cfg.single_task_max_bytes <= 0:
        return False
    if cfg.operation not in (WriteOperation.INSERT, WriteOperation.UPSERT, WriteOperation.DELETE):
        return False
    return cfg.index.type in ("SIMPLE", "BLOOM")  # global, bucket and log-aware indexes: distributed


def fits(cfg: WriteConfig, timeline: ActiveTimeline, counts: dict[str, tuple[int, int]]) -> bool:
    """For an input Spark could not size: its rows at the table's average record size (parquet bytes,
    like Spark's estimate of a file scan) within the one-task limit."""
    rows = sum(n for n, _ in counts.values())
    return rows * average_record_size(timeline, cfg.sizing) <= cfg.single_task_max_bytes
