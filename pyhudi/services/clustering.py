"""Clustering: rewrite groups of small file slices into new, well-sized (optionally sorted) file groups.

Schedule (driver): `clustering_plan.draft_plan` -> `<C>.replacecommit.requested` holding Hudi's Avro
HoodieRequestedReplaceMetadata (operationType CLUSTER, HoodieClusteringPlan). On a table of version 8 or 9
(timeline layout 2) the plan is pending under Hudi 1.x's `clustering` action instead
(`<C>.clustering.requested`, 1.x's plan schema; ActiveTimelineV2#saveToPendingClusterCommit), its inflight
is `<C>.clustering.inflight` (empty) and it completes as `<C>_<completion>.replacecommit`.
Execute (executors): per group, merge each slice (base + logs), order the records (linear, z-order,
Hilbert), write new file groups rolling over at `target.file.max.bytes` as measured from the encoded
bytes, keeping each record's commit time and sequence number; then, where a partition's groups left
more than one file below the small-file limit, those tails are written together once more, so a
partition ends with at most one small file and the next clustering has nothing to redo.
Commit (driver, under the table lock): verify no write slipped into
an input group since scheduling, then complete `<C>.replacecommit` with `partitionToReplaceFileIds`
(layout 2: HoodieReplaceCommitMetadata in Avro, as ActiveTimelineV2#transitionClusterInflightToComplete).
Readers switch to the new groups atomically with that one file; the old files stay for the cleaner.
A conflicting or failed execution is rolled back, never committed over a write.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa

from pyhudi.engine.base import Engine, TaskInfo
from pyhudi.errors import CommitConflictError, HudiError, InvalidConfigError, TimelineError
from pyhudi.faults import fault_point
from pyhudi.io import schema as S
from pyhudi.io.base_file import ParquetSettings, bloom_overhead, encode_within, estimate_bytes_per_row
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.file_names import base_file_name, file_id, join_path, new_file_id_prefix
from pyhudi.model.instant_time import now_instant
from pyhudi.model.table_config import TableConfig
from pyhudi.model.write_stat import RuntimeStats, WriteStat
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice, table_merge_rules
from pyhudi.services.clustering_plan import (
    ClusteringPlanDraft,
    clustering_settings,
    draft_plan,
    recheck_partitions,
    to_avro_plan,
)
from pyhudi.services.layout import order
from pyhudi.services.plan_scope import RECHECK, carried_over, plan_extra
from pyhudi.storage import Storage
from pyhudi.storage.metrics import note
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.conflicts import check_clustering
from pyhudi.transaction.heartbeat import Heartbeat, is_expired, owner_is_gone
from pyhudi.transaction.lock import LockSettings, ensure_held, table_lock
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.config import ClusteringConfig
from pyhudi.writer.handles import FILE_NAME, constant_strings, file_overhead
from pyhudi.writer.markers import (
    DEFAULT_MARKER_TYPE,
    Marking,
    begin_markers,
    create_marker,
    delete_markers,
    delete_unreported_files,
    undo_marked_files,
)
from pyhudi.writer.partition_meta import ensure_partition_metadata

log = logging.getLogger(__name__)
DEFAULT_HEARTBEAT_MS = 60000  # hoodie.client.heartbeat.interval_in_ms


def explain(storage: Storage, table: TableConfig, cfg: ClusteringConfig, max_file_size: int) -> ClusteringPlanDraft:
    timeline = ActiveTimeline.load(storage)
    return draft_plan(build_view(storage, table, timeline), cfg, max_file_size)


def schedule(storage: Storage, table: TableConfig, cfg: ClusteringConfig, max_file_size: int,
             lock: LockSettings | None = None) -> str | None:
    """Write a clustering plan if there is anything worth clustering; return its instant. The plan
    records where the next plan's window starts (`plan_scope`): taken before the timeline loads."""
    with table_lock(storage, lock or LockSettings()):
        started = now_instant(table.local_timezone)
        timeline = ActiveTimeline.load(storage)
        fault_point("clustering.after_timeline")
        _check_sort_columns(timeline, table, cfg.sort_columns)
        view = build_view(storage, table, timeline)
        draft = draft_plan(view, cfg, max_file_size)
        if draft.scope is not None:
            note(f"clustering: {draft.scope.reason}")
        if draft.empty:
            return None
        extra = plan_extra(started, timeline, draft.missing, clustering_settings(cfg, max_file_size),
                           ignore=view.pending_clustering_file_ids().values())
        hudi_1x = timeline.layout.is_v2
        plan = to_avro_plan(draft, storage, cfg, max_file_size, extra, hudi_1x=hudi_1x)
        write = am.write_instant_avro_1x if hudi_1x else am.write_instant_avro
        requested = write("HoodieRequestedReplaceMetadata", plan)
        instant = timeline.create_new_requested(timeline.clustering_action, requested, table.local_timezone).timestamp
    fault_point("clustering.after_schedule")
    log.info("scheduled clustering %s: %d groups (%s)", instant, len(draft.groups),
             draft.scope.reason if draft.scope else "")
    return instant


def _check_sort_columns(timeline: ActiveTimeline, table: TableConfig, columns: tuple[str, ...]) -> None:
    """A plan with a column the table lacks could never execute; refuse it before it exists."""
    if not columns:
        return
    avro = table_schema(timeline, table)
    names = {f["name"] for f in (avro or {}).get("fields", [])} | set(S.META_FIELDS)
    missing = [c for c in columns if c not in names]
    if missing:
        raise InvalidConfigError(
            f"hoodie.clustering.plan.strategy.sort.columns names {', '.join(missing)}, which the table does not "
            f"have (columns: {', '.join(sorted(names - set(S.META_FIELDS)))})")


def commits_since_last_clustering(timeline: ActiveTimeline) -> int:
    """Completed data writes (not compactions) after the last completed clustering."""
    last = None
    for inst in timeline.completed().actions(Action.REPLACE_COMMIT):
        if timeline.commit_metadata(inst).operation_type == "CLUSTER":
            last = inst.timestamp
    return sum(1 for i in timeline.completed().actions(Action.COMMIT, Action.DELTA_COMMIT)
               if (last is None or i.timestamp > last) and not timeline.is_compaction_commit(i))


def is_pending_clustering(timeline: ActiveTimeline, instant: Instant) -> bool:
    """A pending clustering in either layout: Hudi 1.x's `clustering` action (layout 2, ClusteringUtils
    #isClusteringInstant), or a replacecommit whose requested file carries a clustering plan (layout 1, and
    a layout-2 table whose clustering was pending when it was upgraded); an insert overwrite is neither."""
    from pyhudi.services.rollback import is_clustering

    return instant.is_pending and (instant.action is Action.CLUSTERING or is_clustering(timeline, instant))


def pending_clusterings(storage: Storage) -> list[str]:
    timeline = ActiveTimeline.load(storage)
    return [i.timestamp for i in timeline.actions(Action.REPLACE_COMMIT, Action.CLUSTERING).pending()
            if is_pending_clustering(timeline, i)]


def _pending_files(timeline: ActiveTimeline, instant: str) -> list[str]:
    """Paths of the pending clustering's requested and inflight files, under the action it is pending as."""
    found = timeline.find(instant)
    action = found.action if found is not None and found.is_pending else timeline.clustering_action
    return [f"{timeline.layout.timeline_dir}/{Instant(instant, action, state).file_name}"
            for state in (State.REQUESTED, State.INFLIGHT)]


def owner_gone(storage: Storage, instant: str, interval_ms: int, tolerable_misses: int) -> bool:
    """Whether nobody executes the pending clustering `instant` any more: its heartbeat expired or names a
    dead process; without a heartbeat, once the plan's newest instant file is older than the expiry window
    (a plan just scheduled gets its heartbeat when its execution starts)."""
    names = _pending_files(ActiveTimeline.load(storage), instant)
    created = max((m for m in (storage.mtime_ms(n) for n in names) if m is not None), default=None)
    return owner_is_gone(storage, instant, interval_ms, tolerable_misses, created)


def being_executed(storage: Storage, instant: str, interval_ms: int, tolerable_misses: int) -> bool:
    """Whether some process is executing the pending clustering now (its heartbeat is live; `is_expired`
    counts a missing heartbeat as expired, so one read of it decides)."""
    return not is_expired(storage, instant, interval_ms, tolerable_misses)


def read_plan(timeline: ActiveTimeline, instant: str) -> dict[str, Any]:
    """The clustering plan of `instant`, pending (under either action) or completed (a replacecommit whose
    plan the timeline finds in `<ts>.clustering.requested` on layout 2)."""
    found = timeline.find(instant)
    action = found.action if found is not None and found.action is Action.CLUSTERING else Action.REPLACE_COMMIT
    meta = am.read_instant_avro(timeline.requested_details(Instant(instant, action, State.REQUESTED)))
    plan = meta.get("clusteringPlan")
    if not plan:
        raise TimelineError(f"{instant} is a replacecommit without a clustering plan (an insert overwrite)")
    return plan  # type: ignore[no-any-return]


# --------------------------------------------------------------------------- execution (executors)
@dataclass(frozen=True)
class ClusterContext:
    storage: Storage  # pickles as its URI and explicit storage options
    instant: str
    spec: MergeSpec
    avro_with_meta: str
    parquet: ParquetSettings
    target_file_bytes: int
    sort_columns: tuple[str, ...]
    layout: str
    small_file_bytes: int = 0
    marking: Marking = Marking()


def _rel(partition: str, uri: str) -> str:
    """A plan's file path as a table-relative path.

    Plans hold full paths, spelled differently by each writer (`file:/x`, `file:///x`, `s3://` vs
    `s3a://`), so a file is found by its partition and name, which every spelling shares.
    """
    return join_path(partition, uri.rsplit("/", 1)[-1])


def _cluster_task(ctx: ClusterContext, row: dict[str, Any], task: TaskInfo) -> list[WriteStat]:
    """One clustering group, merged, ordered and written by whichever engine runs the task."""
    return _cluster_group(ctx, ctx.storage, row, task.token())


def _cluster_group(ctx: ClusterContext, storage: Storage, row: dict[str, Any], token: str) -> list[WriteStat]:
    start = time.monotonic()
    tables = []
    for sl in json.loads(row["slices"]):
        part = str(sl.get("partitionPath") or "")
        base = _rel(part, sl["dataFilePath"]) if sl.get("dataFilePath") else None
        logs = [_rel(part, p) for p in sl.get("deltaFilePaths") or []]
        merged, _ = merge_file_slice(storage, sl["fileId"], base, logs, ctx.spec)
        tables.append(merged)
    records = order(pa.concat_tables(tables), ctx.sort_columns, ctx.layout)
    partition = row["partition"]
    ensure_partition_metadata(storage, partition, ctx.instant)
    return _write_preserving_meta(ctx, storage, partition, records, token, start)


AIM = 0.97  # a full file aims this far below the target, so compression variance rarely forces a re-encode
EVEN_MARGIN = 1.03  # an even split must clear the small-file limit by this much to be chosen
GROW_ATTEMPTS = 3  # encodes of one file at most, when a file comes out below the small-file limit


@dataclass
class _Measured:
    """What the previous encode of this group measured: data bytes per row, and the footer's bytes beyond
    the bloom filter (Avro schema, row-group metadata, magic), so the next file's size is predicted from
    bytes actually written, not from a sample."""

    per_row: float
    footer_extra: int = 4096 + 12

    def overhead(self, rows: int, settings: ParquetSettings) -> int:
        return bloom_overhead(min(rows, settings.bloom_num_entries + 1), settings) + self.footer_extra

    def update(self, rows: int, data: pa.Buffer, settings: ParquetSettings) -> int:
        """Learn from an encoded file; returns its footer bytes (everything but the column chunks)."""
        n = len(data)
        footer = int.from_bytes(data.slice(n - 8, 4).to_pybytes(), "little") + 12  # + "PAR1" twice + length
        self.per_row = max(1.0, (n - footer) / max(1, rows))
        self.footer_extra = max(0, footer - bloom_overhead(min(rows, settings.bloom_num_entries + 1), settings))
        return footer


def _hard_limit(ctx: ClusterContext, overhead: int) -> int:
    """A file is never larger: the target, unless the fixed footer takes more than half of it (as
    `handles.size_limit`: then the footer plus half the target, so files do not degenerate)."""
    target = ctx.target_file_bytes
    return overhead + target // 2 if overhead > target // 2 else target


def _next_file_rows(ctx: ClusterContext, remaining: int, per_row: float, overhead: int | None = None) -> int:
    """Rows of the next output file, from the data bytes per row and the file's fixed overhead.

    Spread evenly over the files the target needs when every file, footer included, then clears the
    small-file limit (no small remainder); otherwise fill files to the target, so the most bytes land in
    files no later write or clustering touches again, and only the group's last file stays small.
    """
    target = ctx.target_file_bytes
    measured = overhead is not None
    # Unmeasured, a file's overhead follows its own rows (they size its bloom filter): a full file holds at
    # most a full file's rows, an evenly split one its share.
    o = overhead if overhead is not None else \
        file_overhead(min(remaining, max(1, int(target / max(per_row, 1.0)))), ctx.parquet)
    budget = max(target * AIM - o, target * 0.5 * AIM)  # data bytes of a full file, below `_hard_limit`
    full = max(1, int(budget / max(per_row, 1.0)))
    if remaining <= full:
        return remaining
    files = -(-remaining // full)
    even = -(-remaining // files)
    even_overhead = o if measured else file_overhead(even, ctx.parquet)
    return even if even * per_row + even_overhead >= ctx.small_file_bytes * EVEN_MARGIN else full


def _encode_next(ctx: ClusterContext, chunk: Callable[[int], pa.Table], rows: int, remaining: int,
                 measured: _Measured) -> tuple[pa.Buffer, int]:
    """Encode the next file and measure it: re-encode with a corrected row count while it is over the hard
    limit, or (a few times at most) below the small-file limit while rows remain for it."""
    grows = 0
    while True:
        data, _, _, _ = encode_within(chunk, rows, sys.maxsize, ctx.avro_with_meta, ctx.parquet, measured.per_row)
        footer = measured.update(rows, data, ctx.parquet)
        hard = _hard_limit(ctx, footer)
        if len(data) > hard and rows > 1:
            rows = max(1, min(rows - 1, int((hard * 0.99 - footer) / measured.per_row)))
            continue
        if rows < remaining and len(data) < ctx.small_file_bytes and grows < GROW_ATTEMPTS:
            want = _next_file_rows(ctx, remaining, measured.per_row, footer)
            if want > rows:
                rows, grows = want, grows + 1
                continue
        return data, rows


def _write_preserving_meta(ctx: ClusterContext, storage: Storage, partition: str, records: pa.Table, token: str,
                           start: float) -> list[WriteStat]:
    """New file groups of at most the target size; records keep their meta columns but the file name.

    The plan's numOutputFileGroups counts input bytes, which small files inflate (each carries a
    bloom filter and footer of its own), so the split is decided from bytes actually written: each file
    is encoded in memory and measured (data bytes per row, footer bytes), the measure sizes the next
    file, and a file that misses [small-file limit, target] is re-encoded with a corrected row count
    (`_encode_next`). Only the group's last file may stay below the small-file limit (when the group's
    bytes admit no split into files inside [limit, target]); `_stitch_tails` then joins such tails of
    one partition.
    """
    stats: list[WriteStat] = []
    if records.num_rows == 0:
        return stats
    prefix = new_file_id_prefix()
    name_idx = records.schema.get_field_index(FILE_NAME)
    sample = records.slice(0, 20000)
    sample = sample.set_column(name_idx, records.schema.field(name_idx),
                               constant_strings(base_file_name(file_id(prefix, 0), token, ctx.instant), sample.num_rows))
    measured = _Measured(estimate_bytes_per_row(sample, ctx.parquet, sample_rows=20000))
    offset, i = 0, 0
    while offset < records.num_rows:
        remaining = records.num_rows - offset
        rows = _next_file_rows(ctx, remaining, measured.per_row, measured.overhead(remaining, ctx.parquet))
        fid = file_id(prefix, i)
        name = base_file_name(fid, token, ctx.instant)

        def chunk(n: int, start: int = offset, fname: str = name) -> pa.Table:
            part = records.slice(start, n)
            return part.set_column(name_idx, records.schema.field(name_idx), constant_strings(fname, n))

        path = join_path(partition, name)
        data, rows = _encode_next(ctx, chunk, rows, remaining, measured)
        create_marker(storage, ctx.instant, partition, name, "CREATE", ctx.marking)
        storage.write_bytes(path, data)
        fault_point("clustering.mid_execute")
        size = len(data)
        stats.append(WriteStat(
            file_id=fid, path=path, partition_path=partition, num_writes=rows, num_inserts=rows,
            total_write_bytes=size, file_size_in_bytes=size,
            runtime_stats=RuntimeStats(total_create_time=int((time.monotonic() - start) * 1000))))
        offset += rows
        i += 1
    return stats


# --------------------------------------------------------------------------- execution (driver)
def execute(engine: Engine, storage: Storage, table: TableConfig, instant: str, cfg: ClusteringConfig,
            parquet: ParquetSettings, lock: LockSettings | None = None,
            heartbeat_ms: int = DEFAULT_HEARTBEAT_MS, marker_type: str = DEFAULT_MARKER_TYPE) -> CommitMetadata | None:
    """Execute a pending clustering, beating its heartbeat meanwhile, so other processes can tell this
    live execution from one whose process died (which the next writer resumes, see `owner_gone`). None:
    the plan was obsolete (an overwrite replaced its input groups since) and was dropped."""
    timeline = ActiveTimeline.load(storage)
    current = timeline.find(instant)
    if current is None or current.action not in (Action.REPLACE_COMMIT, Action.CLUSTERING) or current.is_completed:
        raise TimelineError(f"{instant} is not a pending clustering on {storage.base_uri}")
    beat = Heartbeat(storage, instant, heartbeat_ms).start()
    try:
        return _execute(engine, storage, table, timeline, current, cfg, parquet, lock, marker_type)
    finally:
        beat.stop()


def replaced_inputs(view: FileSystemView, plan: dict[str, Any]) -> list[tuple[str, str]]:
    """(partition, file id) of the plan's input groups that a completed replacecommit replaced."""
    return sorted((str(sl.get("partitionPath") or ""), str(sl["fileId"]))
                  for g in plan.get("inputGroups") or [] for sl in g.get("slices") or []
                  if str(sl["fileId"]) in view.replaced_in(str(sl.get("partitionPath") or "")))


def _execute(engine: Engine, storage: Storage, table: TableConfig, timeline: ActiveTimeline, current: Instant,
             cfg: ClusteringConfig, parquet: ParquetSettings,
             lock: LockSettings | None, marker_type: str) -> CommitMetadata | None:
    instant = current.timestamp
    plan = read_plan(timeline, instant)
    gone = replaced_inputs(build_view(storage, table, timeline), plan)
    if gone:
        # An overwrite (or delete_partition) replaced input groups after the plan was made: rewriting them
        # would bring back what it replaced. Nothing of the plan is worth keeping, nor anything lost by
        # dropping it (the overwrite's groups are new, the next plan looks at them).
        rollback_clustering(storage, instant)
        log.warning("clustering %s dropped: file group(s) %s were replaced after it was planned", instant,
                    ", ".join(f"{f} ({p or 'table root'})" for p, f in gone[:5]))
        return None
    if current.state is State.INFLIGHT:
        undo_marked_files(storage, instant)  # an earlier attempt died part-way
    else:
        timeline.transition_to_inflight(current, b"")
    avro = table_schema(timeline, table)
    if avro is None:
        raise HudiError(f"cannot cluster {storage.base_uri}: the table has no schema yet")
    params = (plan.get("strategy") or {}).get("strategyParams") or {}
    sort_columns = tuple(c for c in params.get("hoodie.clustering.plan.strategy.sort.columns", "").split(",") if c)
    try:
        _check_sort_columns(timeline, table, sort_columns)
    except InvalidConfigError:
        rollback_clustering(storage, instant)  # an unexecutable plan must not block its file groups
        raise
    first = timeline.write_timeline().first()
    spec = MergeSpec(committed=frozenset(i.timestamp for i in timeline.write_timeline().completed()),
                     as_of=None, **table_merge_rules(table).spec_options(),
                     target_schema=S.avro_to_arrow(S.with_meta_fields(avro)), populate_meta=table.populate_meta_fields,
                     record_key_fields=table.record_key_fields, committed_before=first.timestamp if first else None)
    target = int(params.get("hoodie.clustering.plan.strategy.target.file.max.bytes", cfg.target_file_max_bytes))
    small = int(params.get("hoodie.clustering.plan.strategy.small.file.limit", cfg.small_file_limit))
    groups = plan.get("inputGroups") or []
    # A task per group, each marking its files one at a time as it rolls over (none written ahead): the
    # batched layout would only add its type file (see begin_markers).
    marking = begin_markers(storage, instant, marker_type, files=len(groups), tasks=len(groups))
    ctx = ClusterContext(storage, instant, spec, S.to_json(S.with_meta_fields(avro)), parquet, target,
                         sort_columns, params.get("hoodie.layout.optimize.strategy", cfg.layout), small, marking)
    rows = [{"group": i, "partition": str(g["slices"][0].get("partitionPath") or ""), "slices": json.dumps(g["slices"])}
            for i, g in enumerate(groups)]
    try:
        stats = _run(engine, ctx, rows, cfg.max_parallelism)
        delete_unreported_files(storage, instant, {s.path for s in stats})
        return _commit(storage, table, current, plan, stats, avro, lock)
    except CommitConflictError:
        rollback_clustering(storage, instant)
        raise


def _run(engine: Engine, ctx: ClusterContext, rows: list[dict[str, Any]], parallelism: int) -> list[WriteStat]:
    stats = engine.map_tasks(partial(_cluster_task, ctx), rows, max(1, parallelism),
                             description=f"pyhudi clustering {ctx.instant}")
    return _stitch_tails(engine, ctx, stats, parallelism)


def small_outputs(ctx: ClusterContext, stats: list[WriteStat]) -> dict[str, list[WriteStat]]:
    """Partition -> outputs below the small-file limit, where a partition has more than one."""
    small: dict[str, list[WriteStat]] = {}
    for s in stats:
        if s.file_size_in_bytes < ctx.small_file_bytes:
            small.setdefault(s.partition_path or "", []).append(s)
    return {p: v for p, v in small.items() if len(v) > 1}


def _stitch_tails(engine: Engine, ctx: ClusterContext, stats: list[WriteStat], parallelism: int) -> list[WriteStat]:
    """Leave at most one output below the small-file limit per partition.

    Each group fills its files to the target and only its last file stays small when the group's bytes
    cannot be split into well-sized files. A partition whose small files exceed max.bytes.per.group has
    several groups, run in parallel, and so several such tails, which the next clustering would rewrite
    again (churn). Their rows are written once more here, together, by one task per partition: the tails
    are this instant's own uncommitted files (a few small-file limits at most), dropped from the stats,
    so the commit's finalize step deletes them (`delete_unreported_files`). Hudi writes every group's
    files independently and keeps each group's small remainder.
    """
    tails = small_outputs(ctx, stats)
    if not tails:
        return stats
    items = [{"partition": p, "paths": [s.path for s in v], "file_ids": [s.file_id for s in v]}
             for p, v in sorted(tails.items())]
    stitched = engine.map_tasks(partial(_stitch_task, ctx), items, max(1, parallelism),
                                description=f"pyhudi clustering {ctx.instant}: small tails")
    dropped = {path for item in items for path in item["paths"]}
    return [s for s in stats if s.path not in dropped] + stitched


def _stitch_task(ctx: ClusterContext, item: dict[str, Any], task: TaskInfo) -> list[WriteStat]:
    """One partition's small outputs read back, ordered as the plan orders, and written as new files."""
    start = time.monotonic()
    tables = [merge_file_slice(ctx.storage, fid, path, [], ctx.spec)[0]
              for fid, path in zip(item["file_ids"], item["paths"])]
    records = order(pa.concat_tables(tables), ctx.sort_columns, ctx.layout)
    return _write_preserving_meta(ctx, ctx.storage, item["partition"], records, task.token(), start)


def _commit(storage: Storage, table: TableConfig, current: Instant, plan: dict[str, Any], stats: list[WriteStat],
            avro: dict[str, Any], lock: LockSettings | None) -> CommitMetadata:
    """Complete the clustering from the inflight of the action it is pending as (a `clustering` inflight
    completes as a replacecommit, `Instant.with_state`)."""
    instant = current.timestamp
    replaced: dict[str, list[str]] = {}
    for g in plan.get("inputGroups") or []:
        for sl in g.get("slices") or []:
            replaced.setdefault(str(sl.get("partitionPath") or ""), []).append(str(sl["fileId"]))
    small = int(((plan.get("strategy") or {}).get("strategyParams") or {}).get(
        "hoodie.clustering.plan.strategy.small.file.limit") or 0)
    scope = {**carried_over(plan.get("extraMetadata")), RECHECK: json.dumps(recheck_partitions(stats, small))}
    meta = CommitMetadata(operation_type="CLUSTER", extra_metadata={"schema": S.to_json(avro), **scope},
                          partition_to_replace_file_ids={p: sorted(ids) for p, ids in replaced.items()})
    for s in stats:
        meta.add(s)
    fault_point("clustering.before_commit")
    with table_lock(storage, lock or LockSettings()) as held:
        timeline = ActiveTimeline.load(storage)
        check_clustering(storage, table, timeline, instant, plan)
        ensure_held(held)  # a lease lost to a pause (or taken over) must not commit, as in the writer's commit
        timeline.complete(Instant(instant, current.action, State.INFLIGHT), meta.to_bytes(instant))
    delete_markers(storage, instant)
    log.info("completed clustering %s: %d groups -> %d files", instant, len(plan.get("inputGroups") or []),
             len(stats))
    return meta


def rollback_clustering(storage: Storage, instant: str) -> None:
    """Undo a clustering attempt: its files, markers and instant files, inflight before requested (the plan
    is dropped, not retried)."""
    undo_marked_files(storage, instant)
    for path in reversed(_pending_files(ActiveTimeline.load(storage), instant)):
        storage.delete(path)



