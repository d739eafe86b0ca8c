"""Rollback of a completed write, savepoints, and restore to a savepoint.

A completed instant is rolled back from its own write stats (markers are gone by then): files it
created are deleted, and log blocks it appended to an older slice are undone the Hudi v6 way, by a
ROLLBACK command block in a new log version. Only the newest write can be rolled back, because
every later write may have read it; `restore` rolls back everything after a savepoint, newest
first, and is recorded as `<R>.restore.requested` (HoodieRestorePlan) -> `.inflight` -> `.restore`
(HoodieRestoreMetadata), each step being an ordinary, resumable rollback.

A savepoint (`<ts>.savepoint.inflight` -> `<ts>.savepoint`, Avro HoodieSavepointMetadata) lists
every file a reader at `ts` needs; the cleaner keeps them and archival stops before it.

Table versions 8 and 9 (timeline layout 2) follow Hudi 1.x: a savepoint completes as
`<ts>_<completion>.savepoint` and lists the latest file slices at `ts`, logs included
(SavepointActionExecutor); a completed write is rolled back by deleting every file named by its
instant, found by listing the partitions it wrote (ListingBasedRollbackStrategy); a restore rolls
back pending clusterings after the savepoint first, then every write that completed after the
savepointed commit, newest completion first, except that on MERGE_ON_READ tables a compaction is
placed by its requested time (RestorePlanActionExecutor, RestoreInstantComparatorFactory), each by
listing, and removes the rollback instants after the savepoint before it completes
(BaseRestoreActionExecutor#finishRestore removes them right after).
"""

from __future__ import annotations

import getpass
import logging
import time
from collections import defaultdict
from dataclasses import dataclass

from pyhudi.errors import HudiError, InstantNotFoundError
from pyhudi.faults import fault_point
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_log_file
from pyhudi.reader.time_travel import missing_files, needed_files
from pyhudi.services.rollback import (
    ROLLBACKABLE,
    RollbackResult,
    execute_rollback,
    is_clustering,
    listed_rollback_plan,
    partition_of,
    plan_rollback,
    resume_pending_rollbacks,
)
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.timeline import META_DIR, ActiveTimeline
from pyhudi.transaction.lock import LockSettings, table_lock
from pyhudi.writer.markers import list_marked_files

log = logging.getLogger(__name__)
_DATA_ACTIONS = (*ROLLBACKABLE, Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING)


class RollbackRefusedError(HudiError):
    """The requested rollback or restore would break the table; nothing was changed."""


@dataclass(frozen=True)
class SavepointInfo:
    instant: str
    savepointed_by: str
    savepointed_at: int
    comments: str
    files: int


def plan_completed_rollback(storage: Storage, timeline: ActiveTimeline, target: Instant,
                            doomed: frozenset[str] = frozenset()) -> dict[str, object]:
    """HoodieRollbackPlan of a completed instant, from its write stats.

    Base files and logs that belong to a slice the target (or another instant of `doomed`, in a
    restore) started are deleted; logs appended to an older, surviving slice get a command block.
    Timeline layout 2: `listed_rollback_plan` over the partitions the instant wrote.
    """
    meta = timeline.commit_metadata(target)
    if timeline.layout.is_v2:
        return listed_rollback_plan(storage, target, {*meta.partition_to_write_stats,
                                                      *(meta.partition_to_replace_file_ids or {})})
    requests = []
    for s in meta.all_stats():
        if not s.path:
            continue
        partition = s.partition_path or partition_of(s.path)
        name = s.path.rsplit("/", 1)[-1]
        lf = parse_log_file(name)
        if lf is None:
            requests.append(am.rollback_request(partition_path=partition, files_to_be_deleted=[storage.uri(s.path)]))
        elif lf.base_instant == target.timestamp or lf.base_instant in doomed:
            requests.append(am.rollback_request(partition_path=partition, file_id=lf.file_id,
                                                latest_base_instant=lf.base_instant,
                                                files_to_be_deleted=[storage.uri(s.path)]))
        elif storage.exists(s.path):
            requests.append(am.rollback_request(
                partition_path=partition, file_id=lf.file_id, latest_base_instant=lf.base_instant,
                log_blocks_to_be_deleted={storage.uri(s.path): int(s.file_size_in_bytes or 0)}))
    return am.rollback_plan(instant_to_rollback=am.instant_info(target.timestamp, target.action.value),
                            rollback_requests=requests)


def _start_rollback(storage: Storage, timeline: ActiveTimeline, target: Instant,
                    doomed: frozenset[str] = frozenset(), restoring: bool = False) -> RollbackResult:
    """Plan, record and run the rollback of `target`. Layout 2: a completed target, and every target of a
    restore, is planned by listing (Hudi 1.x restores schedule their rollbacks without markers); a
    pending one outside a restore by its markers."""
    if target.is_completed:
        plan = plan_completed_rollback(storage, timeline, target, doomed)
    elif restoring and timeline.layout.is_v2:
        marked = list_marked_files(storage, target.timestamp)
        plan = listed_rollback_plan(storage, target, {*_pending_partitions(timeline, target),
                                                      *(partition_of(r) for r in marked)}, also=marked)
    else:
        plan = plan_rollback(storage, target, timeline.layout.is_v2)
    rollback_ts = timeline.create_new_requested(Action.ROLLBACK, am.write_instant_avro("HoodieRollbackPlan", plan)
                                                ).timestamp
    fault_point("rollback.after_plan")
    return execute_rollback(storage, timeline, rollback_ts, plan)


def _check_rollback(storage: Storage, timeline: ActiveTimeline, target: Instant,
                    lazy: tuple[int, int] | None) -> None:
    later = [i for i in timeline.write_timeline().after(target.timestamp)
             if i.is_completed or i.action in (Action.COMPACTION, Action.LOG_COMPACTION) or is_clustering(timeline, i)]
    if later:
        raise RollbackRefusedError(
            f"cannot roll back {target.action.value} {target.timestamp}: {later[0].action.value} "
            f"{later[0].timestamp} came after it and may depend on it; only the latest write can be rolled back "
            "(use restore to a savepoint to go further back). Nothing was changed")
    saved = [s.timestamp for s in timeline.savepoints() if s.timestamp >= target.timestamp]
    if saved:
        raise RollbackRefusedError(
            f"cannot roll back {target.timestamp}: savepoint {saved[0]} protects it; delete the savepoint first "
            "(pyhudi savepoint PATH delete). Nothing was changed")
    if target.is_pending and lazy is not None:
        from pyhudi.transaction.heartbeat import is_expired

        if not is_expired(storage, target.timestamp, *lazy):
            raise RollbackRefusedError(
                f"cannot roll back {target.timestamp}: its writer is alive (heartbeat in .hoodie/.heartbeat is "
                "fresh). Stop that writer or wait for its heartbeat to expire. Nothing was changed")
    if target.is_completed:
        before = [i for i in timeline.completed().write_timeline() if i.timestamp < target.timestamp]
        if before and missing_files(storage, timeline, before[-1].timestamp):
            raise RollbackRefusedError(
                f"cannot roll back {target.timestamp}: the cleaner already deleted files of the previous version "
                f"({before[-1].timestamp}), so the table could not go back to it. Nothing was changed")


def rollback(storage: Storage, instant: str, lock: LockSettings | None = None,
             lazy: tuple[int, int] | None = None) -> RollbackResult:
    """Roll back the latest completed write (commit, deltacommit, replacecommit, compaction) or a
    failed (pending) write; a pending compaction plan is simply removed."""
    with table_lock(storage, lock or LockSettings()):
        resumed = resume_pending_rollbacks(storage, ActiveTimeline.load(storage))
        timeline = ActiveTimeline.load(storage)
        target = timeline.find(instant)
        finished = next((r for r in resumed if r.target == instant), None)
        if target is None and finished is not None:
            return finished  # a rollback of this instant that a crash interrupted, now finished: a re-run's result
        if target is None or target.action not in _DATA_ACTIONS:
            newest = timeline.write_timeline().last()
            raise InstantNotFoundError(
                f"no write instant {instant!r} on the active timeline of {storage.base_uri}; the latest write is "
                f"{newest.timestamp if newest else '(none)'}")
        _check_rollback(storage, timeline, target, lazy)
        return _start_rollback(storage, timeline, target)


def _pending_partitions(timeline: ActiveTimeline, target: Instant) -> set[str]:
    """Partitions a pending instant says it writes: its inflight workload profile (writes), or its plan
    (compaction operations, clustering input groups). Unreadable or empty details say nothing."""
    out: set[str] = set()
    try:
        if target.action in (Action.COMPACTION, Action.LOG_COMPACTION):
            from pyhudi.view.builder import compaction_plan_bytes

            plan = am.read_instant_avro(compaction_plan_bytes(timeline, target))
            out.update(str(op.get("partitionPath") or "") for op in plan.get("operations") or [])
        elif is_clustering(timeline, target):
            plan = am.read_instant_avro(timeline.requested_details(target)).get("clusteringPlan") or {}
            out.update(str(sl.get("partitionPath") or "") for group in plan.get("inputGroups") or []
                       for sl in group.get("slices") or [])
        elif target.state is State.INFLIGHT:
            meta = timeline.commit_metadata(target)
            out.update(meta.partition_to_write_stats)
    except (HudiError, ValueError):
        pass
    return out


# -- savepoints --------------------------------------------------------------------------------
def create_savepoint(storage: Storage, instant: str | None = None, user: str | None = None,
                     comments: str = "", lock: LockSettings | None = None) -> str:
    with table_lock(storage, lock or LockSettings()):
        timeline = ActiveTimeline.load(storage)
        fault_point("savepoint.after_timeline")
        writes = timeline.completed().write_timeline()
        target = writes.find(instant) if instant else writes.last()
        if target is None:
            raise InstantNotFoundError(
                f"cannot savepoint {instant or 'the latest commit'}: no such completed write on the active timeline "
                f"of {storage.base_uri}")
        gone = missing_files(storage, timeline, target.timestamp)
        if gone:
            raise RollbackRefusedError(f"cannot savepoint {target.timestamp}: the cleaner already deleted {len(gone)} "
                                       f"of its files (e.g. {gone[0]})")
        ts = target.timestamp
        if timeline.layout.is_v2 and ts in {s.timestamp for s in timeline.savepoints()}:
            log.info("savepoint %s exists already; left as it is", ts)
            return ts
        by_partition = _latest_files(storage, timeline, ts)
        meta = am.savepoint_metadata(savepointed_by=user or _user(), comments=comments, latest_files=by_partition)
        folder = timeline.layout.timeline_dir
        storage.write_atomic(f"{folder}/{ts}.savepoint.inflight", b"")
        fault_point("savepoint.before_complete")
        body = am.write_instant_avro("HoodieSavepointMetadata", meta)
        if timeline.layout.is_v2:  # `<ts>_<completion>.savepoint`, with no requested file before it (Hudi 1.x)
            timeline.complete(Instant(ts, Action.SAVEPOINT, State.INFLIGHT), body)
        else:
            storage.write_atomic(f"{META_DIR}/{ts}.savepoint", body)
    log.info("savepoint %s created (%d files protected)", ts, sum(len(v) for v in by_partition.values()))
    return ts


def _latest_files(storage: Storage, timeline: ActiveTimeline, ts: str) -> dict[str, list[str]]:
    """partition -> names of the files a reader at `ts` needs. Layout 1: from the write stats. Layout 2: the
    latest file slice at `ts` of every file group, its base file and logs, in every partition, as Hudi 1.x's
    SavepointActionExecutor lists them (write stats cannot tell which slice a 1.x log joined: that follows
    its commit's completion time)."""
    by_partition: dict[str, list[str]] = defaultdict(list)
    if not timeline.layout.is_v2:
        for path in sorted(needed_files(timeline, ts)):
            by_partition[partition_of(path)].append(path.rsplit("/", 1)[-1])
        return by_partition
    from pyhudi.model.table_config import load_table_config
    from pyhudi.view.builder import build_view

    view = build_view(storage, load_table_config(storage), timeline)
    for partition in view.partition_paths:
        names = by_partition[partition]
        for sl in view.latest_file_slices(partition, as_of=ts):
            names.extend(p.rsplit("/", 1)[-1] for p in sl.all_paths())
    return by_partition


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:
        return "pyhudi"


def list_savepoints(storage: Storage) -> list[SavepointInfo]:
    timeline = ActiveTimeline.load(storage)
    out = []
    for sp in timeline.savepoints():
        meta = am.read_instant_avro(timeline.details(sp))
        files = sum(len(pm.get("savepointDataFile") or []) for pm in (meta.get("partitionMetadata") or {}).values())
        out.append(SavepointInfo(sp.timestamp, str(meta.get("savepointedBy") or ""),
                                 int(meta.get("savepointedAt") or 0), str(meta.get("comments") or ""), files))
    return out


def delete_savepoint(storage: Storage, instant: str, lock: LockSettings | None = None) -> None:
    with table_lock(storage, lock or LockSettings()):
        timeline = ActiveTimeline.load(storage)
        if instant not in {s.timestamp for s in timeline.savepoints()}:
            raise InstantNotFoundError(f"no savepoint {instant} in {storage.base_uri}")
        folder = timeline.layout.timeline_dir
        names = sorted(n for n in timeline.instant_files(instant) if ".savepoint" in n)
        for name in sorted(names, key=lambda n: n.endswith(".inflight")):  # completed first, inflight last
            storage.delete(f"{folder}/{name}")


# -- restore ---------------------------------------------------------------------------------
def restore(storage: Storage, savepoint: str, lock: LockSettings | None = None) -> str:
    """Bring the table back to `savepoint`: roll back every write after it, newest first."""
    with table_lock(storage, lock or LockSettings()):
        resume_pending_rollbacks(storage, ActiveTimeline.load(storage))
        timeline = ActiveTimeline.load(storage)
        pending = timeline.actions(Action.RESTORE).pending()
        if pending:
            return _execute_restore(storage, pending.instants[0].timestamp)
        if savepoint not in {s.timestamp for s in timeline.savepoints()}:
            known = ", ".join(s.timestamp for s in timeline.savepoints()) or "none"
            raise InstantNotFoundError(f"no savepoint {savepoint} in {storage.base_uri} (savepoints: {known}); create "
                                       "one with pyhudi.savepoint")
        later = [s.timestamp for s in timeline.savepoints() if s.timestamp > savepoint]
        if later:
            raise RollbackRefusedError(f"savepoint {later[0]} is newer than {savepoint}; restore to it first or delete "
                                       "it. Nothing was changed")
        targets = _restore_targets_v2(storage, timeline, savepoint) if timeline.layout.is_v2 else \
            sorted((i for i in timeline.write_timeline() if i.timestamp > savepoint), key=lambda i: i.timestamp,
                   reverse=True)
        _refuse_live_targets(storage, targets)
        plan = am.restore_plan(instants_to_rollback=[am.instant_info(i.timestamp, i.action.value) for i in targets],
                               savepoint_to_restore_timestamp=savepoint)
        ts = timeline.create_new_requested(Action.RESTORE, am.write_instant_avro("HoodieRestorePlan", plan)).timestamp
        fault_point("restore.after_plan")
        return _execute_restore(storage, ts)


def _refuse_live_targets(storage: Storage, targets: list[Instant]) -> None:
    """A pending instant a live process is executing (its heartbeat is fresh: a compaction or clustering
    executor, a writer under optimistic concurrency) must not be rolled back under it: the process would
    go on writing files after the restore removed its instant, orphans that no rollback ever finds (and
    that, on a Hudi 1.x table, open a file slice that hides every later log of their file group)."""
    from pyhudi.transaction.heartbeat import is_expired

    live = [i for i in targets if i.is_pending and not is_expired(storage, i.timestamp, 60000, 2)]
    if live:
        raise RollbackRefusedError(
            f"cannot restore {storage.base_uri} now: {live[0].action.value} {live[0].timestamp} is being executed by "
            "a live process (its heartbeat in .hoodie/.heartbeat is fresh). Let it finish (or stop it and wait for "
            "its heartbeat to expire), then restore again. Nothing was changed")


def _restore_targets_v2(storage: Storage, timeline: ActiveTimeline, savepoint: str) -> list[Instant]:
    """The instants a Hudi 1.x restore rolls back, in its order (RestorePlanActionExecutor): pending
    clusterings requested after the savepoint, newest first; then every write-timeline instant that is
    "after" the savepointed commit by RestoreInstantComparatorFactory's order, newest completion first,
    pending ones (no completion yet) before all others. "After" compares completion times, except on a
    MERGE_ON_READ table where either side is a commit or compaction: there requested times decide, so a
    compaction requested before the savepoint stays although it completed after it."""
    saved_at = timeline.completion_time(savepoint)
    if saved_at is None:
        raise RollbackRefusedError(f"cannot restore to {savepoint}: the completion time of the savepointed commit is "
                                   "not on the active timeline. Nothing was changed")
    from pyhudi.model.table_config import load_table_config

    mor = load_table_config(storage).is_mor
    clustering = sorted((i for i in timeline.pending() if is_clustering(timeline, i) and i.timestamp > savepoint),
                        key=lambda i: i.timestamp, reverse=True)
    chosen = {i.timestamp for i in clustering}
    order = sorted((i for i in timeline.write_timeline() if i.timestamp not in chosen),
                   key=lambda i: _completion_key(timeline, i), reverse=True)
    return [*clustering, *(i for i in order if _after_savepoint(timeline, i, savepoint, saved_at, mor))]


def _completion_key(timeline: ActiveTimeline, inst: Instant) -> tuple[int, str, str]:
    """Hudi 1.x's completion-time order: completed instants by completion time, pending ones after them by
    requested time."""
    done = timeline.completion_time(inst.timestamp) if inst.is_completed else None
    return (0, done, inst.timestamp) if done is not None else (1, inst.timestamp, "")


def _after_savepoint(timeline: ActiveTimeline, inst: Instant, savepoint: str, saved_at: str, mor: bool) -> bool:
    if mor and inst.action in (Action.COMMIT, Action.COMPACTION):
        return inst.timestamp > savepoint
    done = timeline.completion_time(inst.timestamp) if inst.is_completed else None
    return done is None or done > saved_at


def _execute_restore(storage: Storage, ts: str) -> str:
    started = time.monotonic()
    timeline = ActiveTimeline.load(storage)
    requested = Instant(ts, Action.RESTORE, State.REQUESTED)
    plan = am.read_instant_avro(timeline.requested_details(requested))
    if timeline.find(ts) == requested:
        timeline.transition_to_inflight(requested, b"")
    doomed = frozenset(str(i["commitTime"]) for i in plan.get("instantsToRollback") or [])
    done: dict[str, list[dict[str, object]]] = {}
    for info in plan.get("instantsToRollback") or []:
        timeline = ActiveTimeline.load(storage)
        target = timeline.find(str(info["commitTime"]))
        if target is None or target.action not in _DATA_ACTIONS:
            continue  # rolled back before a crash interrupted the restore
        result = _start_rollback(storage, timeline, target, doomed, restoring=True)
        rb = Instant(result.rollback_instant, Action.ROLLBACK)
        done[target.timestamp] = [am.read_instant_avro(ActiveTimeline.load(storage).details(rb))]
        fault_point("restore.mid_rollback")
    meta = am.restore_metadata(
        start_restore_time=ts, restore_instant_info=list(plan.get("instantsToRollback") or []),
        rollback_metadata_by_instant=done, time_taken_in_millis=int((time.monotonic() - started) * 1000))
    timeline = ActiveTimeline.load(storage)
    if timeline.layout.is_v2:
        _drop_rollbacks_after(storage, timeline, str(plan.get("savepointToRestoreTimestamp") or ts))
    fault_point("restore.before_complete")
    timeline.complete(Instant(ts, Action.RESTORE, State.INFLIGHT), am.write_instant_avro("HoodieRestoreMetadata", meta))
    log.info("restore %s to savepoint %s rolled back %d instants", ts, plan.get("savepointToRestoreTimestamp"),
             len(done))
    return ts


def _drop_rollbacks_after(storage: Storage, timeline: ActiveTimeline, savepoint: str) -> None:
    """Remove every rollback instant requested after the savepoint, completed file first (Hudi 1.x's
    finishRestore): the restore metadata keeps what they did. Done before the restore completes, so a
    crash leaves a pending restore whose re-run finishes this too (Hudi does it right after)."""
    folder = timeline.layout.timeline_dir
    order = {State.COMPLETED: 0, State.INFLIGHT: 1, State.REQUESTED: 2}
    for inst in timeline.actions(Action.ROLLBACK).after(savepoint):
        names = [n for n in timeline.instant_files(inst.timestamp) if ".rollback" in n]
        for name in sorted(names, key=lambda n: order[_state_of(n)]):
            storage.delete(f"{folder}/{name}")


def _state_of(name: str) -> State:
    return State.REQUESTED if name.endswith(".requested") else State.INFLIGHT if name.endswith(".inflight") \
        else State.COMPLETED
