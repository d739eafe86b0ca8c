"""Compaction: fold a file slice's log files into a new base file of the same file group.

Schedule (driver): pick the latest slices with log files, largest log volume
first, until `hoodie.compaction.target.io` is spent; store them as an Avro
HoodieCompactionPlan in `<C>.compaction.requested`. From then on new logs of
those groups are written against C and the groups take no new inserts.

Execute (executors): merge base + plan's logs (committed blocks only) into
`<fileId>_<token>_<C>.parquet`, then complete as `<C>.commit` with
`"compacted": true`. An interrupted execution is resumed from its plan: files
it left behind are deleted (via markers) and the merge runs again.

On a table of version 8 or 9 (timeline layout 2) the same steps write what Hudi 1.x writes: the plan in
1.x's HoodieCompactionPlan schema (missingSchedulePartitions), its slices as the view builds them by
completion time (a log belongs to the latest slice started at or before its delta commit completed, so a
log completing after C was scheduled lands in C's slice, which the readers merge onto the slice before
it until C completes); operations list a slice's logs in Hudi's log-file order (CompactionUtils
#buildFromFileSlice), by file name, not full path; `.compaction.inflight` is empty and the commit is
`<C>_<completion>.commit` in Avro (ActiveTimelineV2#transitionCompactionInflightToComplete), its write stats
naming the base file each one replaced (prevBaseFile, as 1.x's merge handle records it).

Planning lists only the partitions deltacommits wrote since the last completed compaction's watermark,
plus those that plan left out (cut by the IO budget, or with slices under a pending compaction or
clustering): `compaction_scope`, `plan_scope` (Hudi 1.x's incremental table services).
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from typing import Any

from pyhudi.engine.base import Engine, TaskInfo
from pyhudi.errors import CompactionInProgressError, HudiError, InstantAlreadyCompletedError, TimelineError
from pyhudi.faults import fault_point
from pyhudi.io import schema as S
from pyhudi.io.base_file import ParquetSettings, write_parquet
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.file_names import base_file_name, join_path, parse_log_file
from pyhudi.model.instant_time import instant_to_ms, now_instant, zone
from pyhudi.model.table_config import TableConfig
from pyhudi.model.write_stat import RuntimeStats, WriteStat
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice, table_merge_rules
from pyhudi.services.plan_scope import (
    PlanScope,
    carried_over,
    incremental_scope,
    last_compaction,
    plan_extra,
    settings_key,
)
from pyhudi.storage import Storage
from pyhudi.storage.metrics import note
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.heartbeat import Heartbeat, is_expired
from pyhudi.transaction.lock import LockSettings, ensure_held, table_lock
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSlice, FileSystemView
from pyhudi.writer.binpack import take_within_budget
from pyhudi.writer.config import CompactionConfig
from pyhudi.writer.markers import (
    DEFAULT_MARKER_TYPE,
    Marking,
    begin_markers,
    create_marker,
    delete_markers,
    delete_unreported_files,
    list_marked_files,
    undo_marked_files,
)
from pyhudi.writer.partition_meta import ensure_partition_metadata

log = logging.getLogger(__name__)


MB = 1024 * 1024


@dataclass(frozen=True)
class CompactionCandidate:
    """A slice with its IO metrics, computed as Hudi's FileSliceMetricUtils does (whole MB, truncated)."""

    slice: FileSlice
    default_base_size: int  # hoodie.parquet.max.file.size: the write estimate for a slice without base

    @property
    def log_bytes(self) -> int:
        return self.slice.log_size

    @property
    def io_read_mb(self) -> int:
        return (self.slice.base_size + self.slice.log_size) // MB

    @property
    def io_write_mb(self) -> int:
        return (self.slice.base_size if self.slice.base_file else self.default_base_size) // MB

    @property
    def io_mb(self) -> int:
        return self.io_read_mb + self.io_write_mb


# --------------------------------------------------------------------------- triggers
def deltas_since_last_compaction(timeline: ActiveTimeline) -> tuple[int, str | None]:
    """Completed deltacommits after the last completed commit or replacecommit (Hudi 0.14's commit
    timeline: on a MOR table those are compactions, clusterings and overwrites), and that instant."""
    done = timeline.completed().actions(Action.COMMIT, Action.REPLACE_COMMIT).last()
    last = done.timestamp if done else None
    deltas = [i for i in timeline.completed().actions(Action.DELTA_COMMIT) if last is None or i.timestamp > last]
    return len(deltas), last


def trigger_fired(timeline: ActiveTimeline, cfg: CompactionConfig, local_tz: bool = False,
                  now_ms: int | None = None) -> bool:
    """Hudi's inline compaction triggers (counts since the last *completed* compaction)."""
    count, last = deltas_since_last_compaction(timeline)
    if cfg.trigger == "NUM_COMMITS_AFTER_LAST_REQUEST":
        # Hudi counts from the last pending compaction request whenever there is one.
        pending = timeline.actions(Action.COMPACTION).pending().last()
        anchor = pending.timestamp if pending else last
        count = sum(1 for i in timeline.completed().actions(Action.DELTA_COMMIT)
                    if anchor is None or i.timestamp > anchor)
    enough = count >= cfg.max_delta_commits
    first = timeline.completed().actions(Action.DELTA_COMMIT).first()
    start = last or (first.timestamp if first else None)
    now = now_ms if now_ms is not None else int(datetime.now(timezone.utc).timestamp() * 1000)
    # Whole seconds on both sides, as Hudi compares them.
    elapsed = start is not None and \
        now // 1000 - instant_to_ms(start, zone(local_tz)) // 1000 >= cfg.max_delta_seconds
    return {
        "NUM_COMMITS": enough, "NUM_COMMITS_AFTER_LAST_REQUEST": enough, "TIME_ELAPSED": elapsed,
        "NUM_AND_TIME": enough and elapsed, "NUM_OR_TIME": enough or elapsed,
    }[cfg.trigger]


# --------------------------------------------------------------------------- planning
@dataclass
class CompactionDraft:
    """A compaction plan before it is written: the chosen slices, the partitions it looked at (and why),
    and the partitions it left out on purpose, which the next plan looks at again."""

    chosen: list[CompactionCandidate]
    scope: PlanScope
    missing: list[str] = field(default_factory=list)


def compaction_settings(cfg: CompactionConfig) -> str:
    """The settings that decide for good whether a slice qualifies (a change means a full scan)."""
    return settings_key({"strategy": cfg.strategy, "logfile.size.threshold": cfg.log_size_threshold})


def compaction_scope(view: FileSystemView, cfg: CompactionConfig) -> PlanScope:
    """Which partitions a compaction plan looks at (plan_scope: incremental, as Hudi 1.x's RFC-83)."""
    timeline = view.timeline

    def written(inst: Instant, meta: dict[str, Any] | None) -> set[str] | None:
        # Only log files make a candidate, and only deltacommits write them (also against a pending
        # compaction). Compactions, clusterings and overwrites write base files without logs, or replace
        # groups (which removes candidates): Hudi takes deltacommits and replacecommits on a merge-on-read
        # table; pyhudi skips the replacecommits, which would bring in every partition a clustering touched.
        if inst.action is Action.REPLACE_COMMIT or timeline.is_compaction_commit(inst):
            return set()
        return None if meta is None else set(meta.get("partitionToWriteStats") or {})

    return incremental_scope(timeline, "compaction", last_compaction(timeline), cfg.incremental,
                             compaction_settings(cfg), written)


def plan_compaction(view: FileSystemView, cfg: CompactionConfig, max_file_size: int = 125829120,
                    scope: PlanScope | None = None) -> CompactionDraft:
    """Slices with logs, not under pending compaction or clustering, ordered and bounded by Hudi's
    strategy, from the partitions of `scope` (default: `compaction_scope`); only those are listed."""
    scope = scope or compaction_scope(view, cfg)
    partitions = view.partitions_of(scope.partitions)
    blocked_ids = {**view.pending_clustering_file_ids(), **view.pending_compaction_file_ids(),
                   **groups_with_unsettled_logs(view, partitions)}
    found: list[CompactionCandidate] = []
    blocked: set[str] = set()
    for p in partitions:
        for s in view.latest_file_slices(p):
            if not s.log_files:
                continue
            if (p, s.file_id) in blocked_ids:
                blocked.add(p)  # eligible again once that operation completes or is rolled back
            else:
                found.append(CompactionCandidate(s, max_file_size))
    if cfg.strategy == "UnBoundedCompactionStrategy":
        return CompactionDraft(found, scope, sorted(blocked))
    found = [c for c in found if c.log_bytes >= cfg.log_size_threshold]
    found.sort(key=lambda c: c.log_bytes, reverse=True)
    chosen = take_within_budget(found, lambda c: c.io_mb, cfg.target_io)
    left = {c.slice.partition for c in found[len(chosen):]}  # cut by hoodie.compaction.target.io
    return CompactionDraft(chosen, scope, sorted(blocked | left))


def groups_with_unsettled_logs(view: FileSystemView, partitions: list[str]) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> an instant, not settled on the planner's timeline, that has (or may have)
    written or removed a log file there: a deltacommit pending or completed since `view.timeline` was
    loaded, or a rollback not completed then.

    A log file's name carries its slice's base instant, not the deltacommit that wrote it, and the listing
    comes after the timeline: a write that started in between has its log listed in a committed slice. A
    plan naming it could never run once that write failed and its rollback deleted the log (and a write
    that completed in between would lose its log to a plan that left it out). So the partitions are
    listed first, then a timeline loaded afterwards names the unsettled writes: pending ones through their
    markers (a marker precedes its file), completed ones through their write stats; such groups wait for
    the next plan, as the clustering planner's do (`clustering_plan.groups_with_pending_logs`).
    """
    for p in partitions:
        view.file_groups(p)
    fault_point("compaction.after_listing")
    later = ActiveTimeline.load(view.storage)
    settled = view.committed_instants
    known_rollbacks = {i.timestamp for i in view.timeline.actions(Action.ROLLBACK).completed()}
    out: dict[tuple[str, str], str] = {}
    for inst in later.actions(Action.DELTA_COMMIT):
        if inst.timestamp in settled:
            continue
        if inst.is_completed:
            rels = [s.path for s in later.commit_metadata(inst).all_stats() if s.path]
        else:
            rels = list_marked_files(view.storage, inst.timestamp)
        _note_log_groups(out, rels, inst.timestamp)
    for inst in later.actions(Action.ROLLBACK):
        if inst.timestamp not in known_rollbacks:
            _note_log_groups(out, _rollback_paths(later, inst), inst.timestamp)
    return out


def _note_log_groups(out: dict[tuple[str, str], str], paths: list[str], instant: str) -> None:
    for path in paths:
        head, _, name = path.rpartition("/")
        parsed = parse_log_file(name)
        if parsed is not None:
            out[(head, parsed.file_id)] = instant


def _rollback_paths(timeline: ActiveTimeline, inst: Instant) -> list[str]:
    """Paths (relative to the table) of every file a rollback plan deletes or appends a command block to:
    the plan names full URIs, and the partition beside them."""
    try:
        plan = am.read_instant_avro(timeline.requested_details(inst))
    except HudiError:
        return []
    out: list[str] = []
    for request in plan.get("RollbackRequests") or []:
        partition = str(request.get("partitionPath") or "")
        for uri in [*(request.get("filesToBeDeleted") or []), *(request.get("logBlocksToBeDeleted") or {})]:
            out.append(join_path(partition, str(uri).rsplit("/", 1)[-1]))
    return out


def candidates(view: FileSystemView, cfg: CompactionConfig,
               max_file_size: int = 125829120) -> list[CompactionCandidate]:
    """The slices a compaction scheduled now would pick (`plan_compaction`)."""
    return plan_compaction(view, cfg, max_file_size).chosen


def _operation(c: CompactionCandidate) -> dict[str, object]:
    s = c.slice
    return am.compaction_operation(
        base_instant_time=s.base_instant, file_id=s.file_id, partition_path=s.partition,
        data_file_path=s.base_file.name if s.base_file else None,
        delta_file_paths=[lf.name for lf in s.log_files],
        metrics={"TOTAL_LOG_FILES": float(len(s.log_files)), "TOTAL_LOG_FILES_SIZE": float(s.log_size),
                 "TOTAL_IO_READ_MB": float(c.io_read_mb), "TOTAL_IO_WRITE_MB": float(c.io_write_mb),
                 "TOTAL_IO_MB": float(c.io_mb)})


def _plan_bytes(timeline: ActiveTimeline, chosen: list[CompactionCandidate], extra: dict[str, str],
                missing: list[str]) -> bytes:
    """The `.compaction.requested` file: Hudi 0.14's plan, or on a Hudi 1.x table 1.x's, which also lists the
    partitions the plan left out in missingSchedulePartitions for Hudi's next incremental plan
    (BaseTableServicePlanActionExecutor#fetchMissingPartitions; pyhudi reads its own copy in `extra`)."""
    ops = [_operation(c) for c in chosen]
    if timeline.layout.is_v2:
        plan = am.compaction_plan(operations=ops, extra_metadata=extra, missing_schedule_partitions=missing)
        return am.write_instant_avro_1x("HoodieCompactionPlan", plan)
    return am.write_instant_avro("HoodieCompactionPlan", am.compaction_plan(operations=ops, extra_metadata=extra))


def schedule(storage: Storage, table: TableConfig, cfg: CompactionConfig, *, force: bool = False,
             max_file_size: int = 125829120, lock: LockSettings | None = None) -> str | None:
    """Write a compaction plan if the trigger fired (or `force`) and something has logs; return its instant.
    The plan records where the next plan's window starts (`plan_scope`): taken before the timeline loads.

    Under the table lock, as Hudi schedules table services and as the clustering planner does: writers
    complete under it, so none completes between the listing and the plan (a write that completed there
    would have a log the plan leaves out, under a slice the compaction then supersedes). Writes that
    start meanwhile are seen by `groups_with_unsettled_logs`; their commit finds the plan and fails."""
    if not table.is_mor:
        raise HudiError(f"{storage.base_uri} is a {table.table_type} table; only merge-on-read tables compact")
    started = now_instant(table.local_timezone)
    with table_lock(storage, lock or LockSettings()):
        timeline = ActiveTimeline.load(storage)
        pending_writes = [i for i in timeline.pending() if i.action in (Action.DELTA_COMMIT, Action.COMMIT)
                          or (i.action is Action.REPLACE_COMMIT and not _is_clustering(timeline, i))]
        if pending_writes:
            log.info("not scheduling compaction: write %s is still pending", pending_writes[0])
            return None
        if not force and not trigger_fired(timeline, cfg, table.local_timezone):
            return None
        fault_point("compaction.after_timeline")
        draft = plan_compaction(build_view(storage, table, timeline), cfg, max_file_size)
        note(f"compaction: {draft.scope.reason}")
        chosen = draft.chosen
        if not chosen:
            return None
        extra = plan_extra(started, timeline, draft.missing, compaction_settings(cfg))
        instant = timeline.create_new_requested(Action.COMPACTION, _plan_bytes(timeline, chosen, extra, draft.missing),
                                                table.local_timezone).timestamp
    fault_point("compaction.after_schedule")
    log.info("scheduled compaction %s of %d file slices (%s)", instant, len(chosen), draft.scope.reason)
    return instant


# --------------------------------------------------------------------------- execution
@dataclass(frozen=True)
class CompactContext:
    storage: Storage  # pickles as its URI and explicit storage options
    instant: str
    spec: MergeSpec
    avro_with_meta: str
    parquet: ParquetSettings
    marking: Marking = Marking()
    hudi_1x: bool = False  # a table of version 8/9: stats carry 1.x's prevBaseFile


def _compact_task(ctx: CompactContext, op: dict[str, str], task: TaskInfo) -> list[WriteStat]:
    """One file slice, merged and written by whichever engine runs the task."""
    return [_compact_one(ctx, ctx.storage, op, task.token())]


def _compact_one(ctx: CompactContext, storage: Storage, op: dict[str, str], token: str) -> WriteStat:
    start = time.monotonic()
    partition, fid = op["partition"], op["file_id"]
    base = join_path(partition, op["base_file"]) if op["base_file"] else None
    logs = [join_path(partition, n) for n in json.loads(op["log_files"])]
    scan = time.monotonic()
    try:
        merged, stats = merge_file_slice(storage, fid, base, logs, ctx.spec)
    except FileNotFoundError:
        present = _present_logs(storage, ctx.instant, base, logs)
        if present is None:
            raise
        logs = present
        merged, stats = merge_file_slice(storage, fid, base, logs, ctx.spec)
    name = base_file_name(fid, token, ctx.instant)
    path = join_path(partition, name)
    ensure_partition_metadata(storage, partition, ctx.instant)
    create_marker(storage, ctx.instant, partition, name, "MERGE" if base else "CREATE", ctx.marking)
    size = write_parquet(storage, path, merged, ctx.avro_with_meta, ctx.parquet)
    fault_point("compaction.mid_execute")
    scan_ms = int((time.monotonic() - scan) * 1000)
    extra = _stats_1x(op, scan_ms) if ctx.hudi_1x else {}
    return WriteStat(
        file_id=fid, path=path, partition_path=partition, prev_commit=op["base_instant"],
        num_writes=merged.num_rows, num_update_writes=stats.updated_records, num_deletes=stats.deleted_records,
        total_write_bytes=size, file_size_in_bytes=size, total_log_records=stats.total_log_records,
        total_log_files_compacted=len(logs), total_log_size_compacted=stats.log_bytes_read,
        total_updated_records_compacted=stats.updated_records, total_log_blocks=stats.total_log_blocks,
        total_corrupt_log_block=stats.total_corrupt_blocks, total_rollback_blocks=stats.total_rollback_blocks,
        runtime_stats=RuntimeStats(total_scan_time=scan_ms if ctx.hudi_1x else 0,
                                   total_upsert_time=int((time.monotonic() - start) * 1000)), extra=extra,
    )


def _stats_1x(op: dict[str, str], scan_ms: int) -> dict[str, Any]:
    """The write-stat fields Hudi 1.x's compactor adds: the base file it replaced (HoodieWriteHandle sets
    prevBaseFile when merging one) and the time spent reading the logs (totalLogReadTimeMs, which Hudi 1.x
    also reports as the runtime's scan time)."""
    out: dict[str, Any] = {"totalLogReadTimeMs": scan_ms}
    if op["base_file"]:
        out["prevBaseFile"] = op["base_file"]
    return out


def _present_logs(storage: Storage, instant: str, base: str | None, logs: list[str]) -> list[str] | None:
    """The plan's log files without those a completed rollback deleted, or a HudiError naming the file
    (None: every file of the slice is there).

    A rollback deletes a log file only when its failed write alone wrote it (`rollback.instant_wrote`),
    so nothing committed is lost by skipping it. Rollbacks of pyhudi before it kept logs named by a
    pending plan did delete them (and a plan of Hudi or of an older pyhudi may name an unfinished
    write's log); such a compaction runs without them instead of failing for good. hudi-rs and every
    other reader never see the missing file: they list the slice."""
    missing = [p for p in ([base] if base else []) + logs if not storage.exists(p)]
    if not missing:
        return None  # not a file of the plan: the caller raises the original error
    deleted = files_deleted_by_rollbacks(storage)
    unexplained = [p for p in missing if p == base or p not in deleted]
    if unexplained:
        raise HudiError(
            f"compaction {instant} cannot run: its plan names {unexplained[0]}, which is missing, and no rollback "
            "on the active timeline deleted it (it was removed outside Hudi, or by a rollback archived since). "
            "Nothing was written for it. Put the file back from a copy, or restore the table to a savepoint taken "
            f"before {instant} (pyhudi.restore / `pyhudi savepoint PATH restore`)")
    log.warning("compaction %s: skipping %s, deleted by a rollback of a failed write (it held only that write's "
                "log blocks)", instant, ", ".join(missing))
    return [p for p in logs if p not in missing]


def files_deleted_by_rollbacks(storage: Storage) -> frozenset[str]:
    """Paths (relative to the table) that completed rollbacks on the active timeline deleted."""
    timeline = ActiveTimeline.load(storage)
    out: set[str] = set()
    for inst in timeline.actions(Action.ROLLBACK).completed():
        try:
            meta = am.read_instant_avro(timeline.details(inst))
        except HudiError:
            continue
        for partition, pm in (meta.get("partitionMetadata") or {}).items():
            out.update(join_path(str(partition), str(uri).rsplit("/", 1)[-1])
                       for uri in pm.get("successDeleteFiles") or [])
    return frozenset(out)


def execute(engine: Engine, storage: Storage, table: TableConfig, instant: str,
            parquet: ParquetSettings, marker_type: str = DEFAULT_MARKER_TYPE,
            lock: LockSettings | None = None, heartbeat: tuple[int, int] = (60000, 2)) -> CommitMetadata:
    """Run a pending compaction: every file slice of the plan is merged by one task of `engine`. The
    execution beats the compaction instant's heartbeat, taken under the table lock, so a second executor
    of the same plan (another process, a retry) is refused instead of deleting or duplicating this one's
    files; an inflight compaction whose heartbeat expired is a dead attempt, undone and run again.
    `heartbeat`: hoodie.client.heartbeat.interval_in_ms and .tolerable.misses."""
    lock = lock or LockSettings()
    with table_lock(storage, lock):
        timeline = ActiveTimeline.load(storage)
        current = timeline.find(instant)
        if current is None or current.action is not Action.COMPACTION or current.is_completed:
            raise TimelineError(f"{instant} is not a pending compaction on {storage.base_uri}")
        if being_executed(storage, instant, heartbeat):
            raise CompactionInProgressError(
                f"compaction {instant} is being executed by another process (its heartbeat is live); it is left "
                "to that process. Run it again only if that process died (its heartbeat expires after "
                "hoodie.client.heartbeat.interval_in_ms x (hoodie.client.heartbeat.tolerable.misses + 1))")
        beat = Heartbeat(storage, instant, heartbeat[0]).start()
        try:
            if current.state is State.INFLIGHT:
                undo_marked_files(storage, instant)  # a previous attempt died part-way; start clean
            else:
                timeline.transition_to_inflight(current, b"")
        except BaseException:
            beat.stop()
            raise
    try:
        return _execute(engine, storage, table, timeline, instant, parquet, marker_type, lock)
    finally:
        beat.stop()


def being_executed(storage: Storage, instant: str, heartbeat: tuple[int, int] = (60000, 2)) -> bool:
    """Whether a live process executes the pending compaction `instant` (its heartbeat is fresh; a missing
    heartbeat counts as expired)."""
    return not is_expired(storage, instant, *heartbeat)


def _execute(engine: Engine, storage: Storage, table: TableConfig, timeline: ActiveTimeline, instant: str,
             parquet: ParquetSettings, marker_type: str, lock: LockSettings) -> CommitMetadata:
    plan = am.read_instant_avro(timeline.requested_details(Instant(instant, Action.COMPACTION, State.REQUESTED)))
    avro = table_schema(timeline, table)
    if avro is None:
        raise HudiError(f"cannot compact {storage.base_uri}: the table has no schema yet")
    first = timeline.write_timeline().first()
    spec = MergeSpec(committed=frozenset(i.timestamp for i in timeline.write_timeline().completed()),
                     as_of=instant, **table_merge_rules(table).spec_options(),
                     target_schema=S.avro_to_arrow(S.with_meta_fields(avro)),
                     populate_meta=table.populate_meta_fields, record_key_fields=table.record_key_fields,
                     committed_before=first.timestamp if first else None, whole_base=True)
    ops = [{"partition": o["partitionPath"] or "", "file_id": o["fileId"], "base_instant": o["baseInstantTime"],
            "base_file": o.get("dataFilePath"), "log_files": json.dumps(list(o.get("deltaFilePaths") or []))}
           for o in plan.get("operations") or []]
    # A task per operation, a file each: DIRECT markers (see begin_markers) cost a request less.
    marking = begin_markers(storage, instant, marker_type, files=len(ops), tasks=len(ops))
    ctx = CompactContext(storage, instant, spec, S.to_json(S.with_meta_fields(avro)), parquet, marking,
                         timeline.layout.is_v2)
    stats: list[WriteStat] = engine.map_tasks(partial(_compact_task, ctx), ops,
                                              description=f"pyhudi compaction {instant}")
    delete_unreported_files(storage, instant, {s.path for s in stats})
    fault_point("compaction.before_commit")
    meta = CommitMetadata(compacted=True, operation_type="COMPACT",
                          extra_metadata={"schema": S.to_json(avro), **carried_over(plan.get("extraMetadata"))})
    for s in stats:
        meta.add(s)
    with table_lock(storage, lock) as held:
        ensure_held(held)  # as every commit: a lease lost to a pause must not complete
        try:
            timeline.complete(Instant(instant, Action.COMPACTION, State.INFLIGHT), meta.to_bytes(instant))
        except InstantAlreadyCompletedError:
            for s in stats:  # another executor completed the plan: our files would duplicate its slices
                if s.path:
                    storage.delete(s.path)
            raise
    delete_markers(storage, instant)
    log.info("completed compaction %s: %d file groups", instant, len(stats))
    return meta


def _is_clustering(timeline: ActiveTimeline, instant: Instant) -> bool:
    from pyhudi.services.rollback import is_clustering

    return is_clustering(timeline, instant)






def pending_compactions(storage: Storage) -> list[str]:
    timeline = ActiveTimeline.load(storage)
    return [i.timestamp for i in timeline.actions(Action.COMPACTION).pending()]
