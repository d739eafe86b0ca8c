"""The cleaner: delete old file versions the retention policy no longer needs, resumably.

`<T>.clean.requested` (Avro HoodieCleanerPlan, every file to delete) -> `<T>.clean.inflight` ->
deletes -> `<T>.clean` (Avro HoodieCleanMetadata). On timeline layout 2 (Hudi 1.x) the inflight file is
empty, the clean completes as `<T>_<completion>.clean`, and plan and metadata use Hudi 1.x's schemas. A crash leaves a pending clean that the next
clean resumes from its plan (deleting an already deleted file is a no-op). Deletes are plain
metadata operations on storage and run from a small thread pool in the driver.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pyhudi.errors import TimelineError, UnsupportedTableError
from pyhudi.faults import fault_point
from pyhudi.model import avro_models as am
from pyhudi.model.avro_schemas import ADDED_IN_1X
from pyhudi.model.instant_time import instant_to_ms, zone
from pyhudi.model.table_config import TableConfig
from pyhudi.services.clean_plan import (
    SAVEPOINTED_TIMESTAMPS,
    CleanPlanDraft,
    clean_scope,
    earliest_commit_to_retain,
    last_clean_retained,
    plan_clean,
)
from pyhudi.storage import Storage
from pyhudi.storage.metrics import bind, note
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.lock import LockSettings, ensure_held, table_lock
from pyhudi.view.builder import build_view
from pyhudi.writer.config import CleanConfig

log = logging.getLogger(__name__)
SUPPORTED_PLAN_VERSION = 2


@dataclass(frozen=True)
class CleanResult:
    instant: str
    deleted: int
    failed: int
    earliest_retained: str | None


def _rel(storage: Storage, uri: str, partition: str) -> str:
    from pyhudi.model.file_names import join_path

    return join_path(partition, uri.rsplit("/", 1)[-1])


def dry_run(storage: Storage, table: TableConfig, cfg: CleanConfig) -> CleanPlanDraft:
    timeline = ActiveTimeline.load(storage)
    return plan_clean(storage, build_view(storage, table, timeline), cfg)


def schedule(storage: Storage, table: TableConfig, cfg: CleanConfig, lock: LockSettings | None = None) -> str | None:
    """Write a clean plan if anything can be deleted, or an empty one when due (`empty_clean_due`);
    return its instant."""
    scheduled = _schedule(storage, table, cfg, lock)
    return scheduled.instant if scheduled is not None else None


@dataclass(frozen=True)
class _Scheduled:
    """A clean this process just planned: `execute` needs neither a listing nor a read to start it."""

    instant: str
    timeline: ActiveTimeline
    plan_bytes: bytes


def _schedule(storage: Storage, table: TableConfig, cfg: CleanConfig, lock: LockSettings | None) -> _Scheduled | None:
    with table_lock(storage, lock or LockSettings()) as held:
        timeline = ActiveTimeline.load(storage)
        fault_point("clean.after_timeline")
        draft = plan_clean(storage, build_view(storage, table, timeline), cfg)
        note(f"clean: {draft.scope}")
        if draft.empty and not empty_clean_due(timeline, draft, cfg, table.local_timezone):
            return None
        earliest = draft.earliest_to_retain
        if draft.empty and earliest is not None:
            earliest = _not_backwards(timeline, earliest)
            note(f"clean: nothing to delete; an empty clean records the earliest retained commit "
                 f"{earliest.timestamp} for the next incremental clean")
        by_partition: dict[str, list[dict[str, object]]] = defaultdict(list)
        for f in draft.files:
            by_partition[f.partition].append(am.clean_file_info(storage.uri(f.path)))
        plan = am.cleaner_plan(
            policy=cfg.policy, file_paths_to_be_deleted_per_partition=by_partition,
            earliest_instant_to_retain=am.action_instant(earliest.timestamp, earliest.action.value)
            if earliest else None,
            last_completed_commit_timestamp=draft.last_completed, partitions_to_be_deleted=draft.partitions_to_delete)
        ensure_held(held)
        plan_bytes = _instant_avro(timeline, "HoodieCleanerPlan", plan, _extra_metadata(timeline, table))
        instant = timeline.create_new_requested(Action.CLEAN, plan_bytes, table.local_timezone).timestamp
    fault_point("clean.after_plan")
    log.info("scheduled clean %s: %d files", instant, len(draft.files))
    return _Scheduled(instant, timeline, plan_bytes)


def _extra_metadata(timeline: ActiveTimeline, table: TableConfig) -> dict[str, str]:
    """The clean plan's extraMetadata on timeline layout 2, as Hudi 1.x's CleanPlanActionExecutor fills it: the
    savepoints of a partitioned table (CleanerUtils.SAVEPOINTED_TIMESTAMPS), so that the next clean can tell a
    savepoint was deleted since and scan every partition (CleanPlanner#isAnySavepointDeleted)."""
    saved = [s.timestamp for s in timeline.savepoints()] if table.is_partitioned else []
    return {SAVEPOINTED_TIMESTAMPS: ",".join(saved)} if saved else {}


def _instant_avro(timeline: ActiveTimeline, schema: str, record: dict[str, Any], extra: dict[str, str]) -> bytes:
    """A clean plan or metadata file: Hudi 0.14's schema on layout 1; on layout 2 Hudi 1.x's, whose extraMetadata
    field carries `extra` once the 1.x schema declares it (avro_schemas.ADDED_IN_1X)."""
    if not timeline.layout.is_v2:
        return am.write_instant_avro(schema, record)
    if any(f["name"] == "extraMetadata" for f in ADDED_IN_1X.get(schema, [])):
        record = {**record, "extraMetadata": dict(extra)}
    return am.write_instant_avro_1x(schema, record)


def empty_clean_due(timeline: ActiveTimeline, draft: CleanPlanDraft, cfg: CleanConfig, local_tz: bool,
                    now_ms: int | None = None) -> bool:
    """Whether a clean with nothing to delete is still written: Hudi's empty clean (apache/hudi#18337,
    J:CleanPlanActionExecutor#requestClean), which records the earliest retained commit where the next
    incremental clean starts. As Hudi: only with hoodie.cleaner.incremental.mode on, a positive
    `hoodie.write.empty.clean.create.duration.ms` (-1, the default, never) and an earliest commit to
    retain in the plan (none under KEEP_LATEST_FILE_VERSIONS); then when there is no completed clean, or
    the last one was requested more than the duration ago. Hudi writes it whether or not that commit moved
    on since the last clean (its earliest retained commit never goes back: `_not_backwards`).

    Not needed for an append-only table's cleans to stay cheap: without any clean, the cleaner scans only
    the partitions where a commit superseded a file version (`clean_plan.scope_without_clean`)."""
    earliest = draft.earliest_to_retain
    if cfg.empty_clean_after_ms <= 0 or earliest is None or not cfg.incremental or not draft.empty:
        return False
    last = timeline.completed().actions(Action.CLEAN).last()
    if last is None:
        return True
    now = now_ms if now_ms is not None else int(time.time() * 1000)
    return now - instant_to_ms(last.timestamp, zone(local_tz)) > cfg.empty_clean_after_ms


def _not_backwards(timeline: ActiveTimeline, earliest: Instant) -> Instant:
    """An empty clean's earliest retained commit is never older than the last clean's (Hudi's adjustment
    after apache/hudi#18587: a changed cleaner configuration could otherwise move it back)."""
    previous = last_clean_retained(timeline)
    if previous and earliest.timestamp < previous:
        log.warning("empty clean: keeping the last clean's earliest retained commit %s instead of %s (the cleaner "
                    "configuration changed?)", previous, earliest.timestamp)
        return Instant(previous, earliest.action, earliest.state)
    return earliest


def execute(storage: Storage, instant: str, scheduled: _Scheduled | None = None) -> CleanResult:
    """Run a pending clean from its plan; `scheduled`: the clean `_schedule` just wrote (its plan and the
    timeline it was written with), which is requested, so nothing is listed or read to find that out.

    Another process may run the same plan meanwhile (a writer's inline clean and a services process both
    resume a pending clean) and even archive it: a clean that turns out completed, or gone from the active
    timeline, was done by someone else, and counts as done here (its deletes are idempotent)."""
    try:
        return _execute(storage, instant, scheduled)
    except TimelineError as exc:
        if not _finished_elsewhere(storage, instant):
            raise
        log.info("clean %s was completed by another process meanwhile (%s); nothing left to do", instant, exc)
        return CleanResult(instant, 0, 0, None)


def _finished_elsewhere(storage: Storage, instant: str) -> bool:
    """The clean is completed, or archived (its requested plan gone from the active timeline)."""
    timeline = ActiveTimeline.load(storage)
    current = timeline.find(instant)
    requested = Instant(instant, Action.CLEAN, State.REQUESTED)
    return current is None or current.is_completed or \
        not storage.exists(f"{timeline.layout.timeline_dir}/{requested.file_name}")


def _execute(storage: Storage, instant: str, scheduled: _Scheduled | None) -> CleanResult:
    requested = Instant(instant, Action.CLEAN, State.REQUESTED)
    state: State | None
    if scheduled is not None:
        timeline, plan_bytes, state = scheduled.timeline, scheduled.plan_bytes, State.REQUESTED
    else:
        timeline = ActiveTimeline.load(storage)
        plan_bytes = timeline.requested_details(requested)
        current = timeline.find(instant)
        state = current.state if current is not None else None
    plan = am.read_instant_avro(plan_bytes)
    version = int(plan.get("version") or 0)
    if version > SUPPORTED_PLAN_VERSION:
        raise UnsupportedTableError(
            f"pending clean {instant} has a plan of version {version}, written by a newer Hudi/pyhudi; this pyhudi "
            f"understands up to version {SUPPORTED_PLAN_VERSION}. Nothing was deleted; finish it with the newer "
            "version")
    if state is State.REQUESTED:  # Hudi 1.x leaves a clean's inflight file empty (ActiveTimelineV2)
        timeline.transition_to_inflight(requested, b"" if timeline.layout.is_v2 else plan_bytes)
    started = time.monotonic()
    partitions: dict[str, dict[str, Any]] = {}
    files = plan.get("filePathsToBeDeletedPerPartition") or {}
    with ThreadPoolExecutor(8) as pool:
        for partition, infos in files.items():
            rels = [_rel(storage, str(i["filePath"]), partition) for i in infos]
            outcomes = list(pool.map(bind(lambda r: _delete(storage, r)), rels))
            names = [r.rsplit("/", 1)[-1] for r in rels]
            partitions[partition] = am.clean_partition_metadata(
                partition_path=partition, policy=str(plan.get("policy")), delete_path_patterns=names,
                success_delete_files=[n for n, ok in zip(names, outcomes) if ok],
                failed_delete_files=[n for n, ok in zip(names, outcomes) if not ok])
    earliest = (plan.get("earliestInstantToRetain") or {}).get("timestamp")
    fault_point("clean.before_commit")
    meta = am.clean_metadata(
        start_clean_time=instant, earliest_commit_to_retain=earliest or "", partition_metadata=partitions,
        time_taken_in_millis=int((time.monotonic() - started) * 1000),
        last_completed_commit_timestamp=str(plan.get("lastCompletedCommitTimestamp") or ""))
    body = _instant_avro(timeline, "HoodieCleanMetadata", meta, plan.get("extraMetadata") or {})
    timeline.complete(Instant(instant, Action.CLEAN, State.INFLIGHT), body)
    deleted = sum(len(m["successDeleteFiles"]) for m in partitions.values())
    failed = sum(len(m["failedDeleteFiles"]) for m in partitions.values())
    log.info("completed clean %s: %d files deleted, %d failed", instant, deleted, failed)
    return CleanResult(instant, deleted, failed, earliest)


def _delete(storage: Storage, rel: str) -> bool:
    """Delete one planned file; True once it is gone (deleted now or earlier)."""
    gone = storage.delete(rel) or not storage.exists(rel)
    fault_point("clean.mid_delete")
    return gone


def pending_cleans(storage: Storage, timeline: ActiveTimeline | None = None) -> list[str]:
    loaded = timeline if timeline is not None else ActiveTimeline.load(storage)
    return [i.timestamp for i in loaded.actions(Action.CLEAN).pending()]


def clean(storage: Storage, table: TableConfig, cfg: CleanConfig, lock: LockSettings | None = None,
          due: Callable[[ActiveTimeline], bool] | None = None,
          timeline: ActiveTimeline | None = None) -> list[CleanResult]:
    """Resume interrupted cleans, then plan and run a new one if anything can go; also delete temp files
    that crashed processes left (older than an hour).

    Cleans of one table in one process take turns (a writer's clean and a background service's clean
    would otherwise both resume the same pending clean). `due` (the writer's `cleans_due`) is asked
    first, on the timeline loaded once this process's turn has come, which also names the pending
    cleans: one listing instead of two (the plan's own listing, under the table lock, stays fresh).
    `timeline`: the writer's timeline as its commit left it (`ActiveTimeline.with_completed`), taken instead
    of that listing unless it shows a pending clean (one may have completed since, e.g. in this process)."""
    with _process_lock(storage.base_uri):
        if timeline is None or timeline.actions(Action.CLEAN).pending():
            timeline = ActiveTimeline.load(storage)
        if due is not None and not due(timeline):
            return []
        pending = pending_cleans(storage, timeline)
        results = [execute(storage, i) for i in pending]
        scheduled = None if not pending and _nothing_to_plan(storage, table, cfg, timeline) else \
            _schedule(storage, table, cfg, lock)
        if scheduled is not None:
            results.append(execute(storage, scheduled.instant, scheduled))
    purged = storage.purge_temp_files()
    if purged:
        log.info("deleted %d temp files left by crashed processes", purged)
    return results


def _nothing_to_plan(storage: Storage, table: TableConfig, cfg: CleanConfig, timeline: ActiveTimeline) -> bool:
    """Whether a plan is known to be empty, and no empty clean due, on the timeline `clean` just loaded: the
    incremental scope is no partition (an append-only table's usual case, `clean_plan.clean_scope`), and a plan
    scans only its scope. Then the table lock, its fresh listing and its release (three requests on an
    object store, after every commit) are skipped. Lock-free is safe here: skipping a clean is never wrong,
    and a write that commits meanwhile is the next clean's work, as if it had committed a moment later."""
    earliest = earliest_commit_to_retain(timeline, cfg, table.local_timezone)
    scope, why = clean_scope(build_view(storage, table, timeline), cfg, earliest)
    if scope != []:
        return False
    if empty_clean_due(timeline, CleanPlanDraft(cfg.policy, earliest, ""), cfg, table.local_timezone):
        return False
    note(f"clean: {why}")
    return True


_locks_guard = threading.Lock()
_locks: dict[str, threading.Lock] = {}


def _process_lock(table_uri: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(table_uri, threading.Lock())


def cleans_due(timeline: ActiveTimeline, cfg: CleanConfig) -> bool:
    """hoodie.clean.max.commits: commits since the last completed clean."""
    last = timeline.completed().actions(Action.CLEAN).last()
    since = [i for i in timeline.completed().actions(Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
             if last is None or i.timestamp > last.timestamp]
    return len(since) >= cfg.max_commits
