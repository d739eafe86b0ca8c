"""Rolling back failed (pending) writes: plan, delete, record, resumable after a crash.

Sequence, as in Hudi: `<R>.rollback.requested` (Avro HoodieRollbackPlan naming
every file to delete) -> `<R>.rollback.inflight` -> delete the files -> remove
the failed instant's timeline files -> `<R>.rollback` (Avro
HoodieRollbackMetadata; `<R>_<completion>.rollback` on timeline layout 2). A crash
anywhere leaves either a pending write (rolled back again next time) or a pending
rollback (re-executed from its plan; file deletes are idempotent).

Table versions 8 and 9 (timeline layout 2) roll back as Hudi 1.x does: every file the
instant wrote is deleted, logs included, since a 1.x log file is named by the delta commit
that wrote it and holds nothing else (RollbackHelper: "the rollback requests for append
only exist in table version 6 and below"); no ROLLBACK command block is ever written. A
pending write's plan comes from its markers, one request per file naming its file group
and the instant (MarkerBasedRollbackStrategy, version >= 8); a completed write's from a
listing of the partitions it wrote, one request per file with the scheme stripped from
the path (ListingBasedRollbackStrategy; `listed_rollback_plan`).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pyhudi.errors import HudiError, InstantAlreadyCompletedError
from pyhudi.faults import fault_point
from pyhudi.io.log_format import ROLLBACK_COMMAND, BlockType, HeaderKey, build_log_file, encode_block
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import join_path, log_file_name, parse_base_file, parse_log_file
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State, parse_instant_file
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.lock import LockSettings, ensure_held, table_lock
from pyhudi.writer.markers import LogOwner, delete_markers, instant_wrote, list_marked_files, log_file_owner

log = logging.getLogger(__name__)
ROLLBACKABLE = (Action.COMMIT, Action.DELTA_COMMIT, Action.REPLACE_COMMIT)
# Every action whose instant files a rollback removes (layout 2 keeps a pending clustering under its own).
_ROLLED_BACK_ACTIONS = (*ROLLBACKABLE, Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING)
# Hudi writes its rollback command blocks from the driver with this token.
ROLLBACK_WRITE_TOKEN = "1-0-1"


@dataclass(frozen=True)
class RollbackResult:
    rollback_instant: str
    target: str
    deleted_files: tuple[str, ...]


def partition_of(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def plan_rollback(storage: Storage, target: Instant, v2: bool = False) -> dict[str, object]:
    """Files a pending write created: those its markers name that it wrote. A marker alone is not
    proof for a log file (another writer of the slice may hold that name, see
    `markers.instant_wrote`): a log file is deleted only if its blocks are the target's; one that also
    holds other instants' blocks gets a rollback command block instead, as in Hudi. `v2` (timeline
    layout 2): `_marker_plan_v2`."""
    if v2:
        return _marker_plan_v2(storage, target)
    ts = target.timestamp
    by_partition: dict[str, list[str]] = defaultdict(list)
    shared: list[str] = []
    for rel in list_marked_files(storage, ts):
        if not storage.exists(rel) or instant_wrote(storage, ts, rel):
            by_partition[partition_of(rel)].append(storage.uri(rel))
        elif parse_log_file(rel.rsplit("/", 1)[-1]) and log_file_owner(storage, rel, ts) is LogOwner.SHARED:
            shared.append(rel)
    requests = [am.rollback_request(partition_path=p, files_to_be_deleted=sorted(files))
                for p, files in sorted(by_partition.items())]
    for rel in sorted(shared):
        parsed = parse_log_file(rel.rsplit("/", 1)[-1])
        assert parsed is not None
        requests.append(am.rollback_request(
            partition_path=partition_of(rel), file_id=parsed.file_id, latest_base_instant=parsed.base_instant,
            log_blocks_to_be_deleted={storage.uri(rel): storage.size(rel)}))
    return am.rollback_plan(instant_to_rollback=am.instant_info(ts, target.action.value),
                            rollback_requests=requests)


def _marker_plan_v2(storage: Storage, target: Instant) -> dict[str, object]:
    """Hudi 1.x's marker-based plan for table versions 8+: one request per marked file, naming its
    file group and, as latestBaseInstant, the instant rolled back; logs too are deleted, not voided.
    A marked file whose name carries another instant is left out: on layout 2 every data file names
    the commit that wrote it, so it is not the target's (Hudi does not check; pyhudi never marks one)."""
    ts = target.timestamp
    requests = []
    for rel in list_marked_files(storage, ts):
        owner = _name_instant(rel.rsplit("/", 1)[-1])
        if owner is not None and owner[1] != ts:
            log.warning("rollback of %s leaves %s alone: its name says %s wrote it", ts, rel, owner[1])
            continue
        requests.append(am.rollback_request(partition_path=partition_of(rel), file_id=owner[0] if owner else "",
                                            latest_base_instant=ts, files_to_be_deleted=[storage.uri(rel)]))
    return am.rollback_plan(instant_to_rollback=am.instant_info(ts, target.action.value),
                            rollback_requests=requests)


def _name_instant(name: str) -> tuple[str, str] | None:
    """(file id, instant in the name) of a data file: a base file's instant, or the one a log is named by
    (on layout 2 the delta commit that wrote it); None for anything else."""
    base = parse_base_file(name)
    if base is not None:
        return base.file_id, base.instant
    lf = parse_log_file(name)
    return (lf.file_id, lf.base_instant) if lf is not None else None


def listed_rollback_plan(storage: Storage, target: Instant, partitions: Iterable[str],
                         also: Iterable[str] = ()) -> dict[str, object]:
    """Hudi 1.x's listing-based plan (ListingBasedRollbackStrategy, table version 8+), used for completed
    instants and in restores: every base or log file of `partitions` whose name carries the target's
    instant, plus the existing files of `also` (a pending target's marked files), one request each with
    an empty file id and base instant, the path without its scheme (formatDeletePath). A compaction's
    logs are named by their own delta commits on layout 2, so only its base files match."""
    ts = target.timestamp
    found = set(_named_by(storage, partitions, ts))
    found.update(rel for rel in also if _owned(rel, ts) and storage.exists(rel))
    requests = [am.rollback_request(partition_path=partition_of(rel), files_to_be_deleted=[_unschemed(storage, rel)])
                for rel in sorted(found)]
    return am.rollback_plan(instant_to_rollback=am.instant_info(ts, target.action.value),
                            rollback_requests=requests)


def _named_by(storage: Storage, partitions: Iterable[str], ts: str, base_only: bool = False) -> list[str]:
    """The data files of `partitions` whose name carries instant `ts` (a base file's instant, or the one a
    log is named by; `base_only`: base files alone)."""
    out = []
    for partition in sorted(set(partitions)):
        for info in storage.list_dir(partition):
            owner = None if info.is_dir else _name_instant(info.name)
            if owner is not None and owner[1] == ts and (not base_only or parse_base_file(info.name) is not None):
                out.append(join_path(partition, info.name))
    return out


def _owned(rel: str, ts: str) -> bool:
    owner = _name_instant(rel.rsplit("/", 1)[-1])
    return owner is not None and owner[1] == ts


def _unschemed(storage: Storage, rel: str) -> str:
    """The path as Hudi's listing-based rollback records it: `file:/t/p/f` -> `/t/p/f`, `s3a://b/t/f` ->
    `//b/t/f` (everything after the scheme's colon of Hadoop's form of the path)."""
    uri = storage.uri(rel)
    if uri.startswith("file://"):
        return uri[len("file://"):]
    return uri.split(":", 1)[1] if "://" in uri else uri


def _rel(storage: Storage, uri: str) -> str:
    """A plan's path relative to the table: full URIs as pyhudi and Hudi's marker-based plans write them,
    and scheme-less ones as Hudi's listing-based plans do."""
    base = storage.uri("")
    for prefix in (base, _unschemed(storage, ""), base.replace("file:///", "file:/", 1)):
        if prefix and uri.startswith(prefix):
            return uri[len(prefix):].lstrip("/")
    return uri


def _append_rollback_block(storage: Storage, log_uri: str, rollback_ts: str, target_ts: str) -> tuple[str, int]:
    """Hudi v6 undoes appended log blocks by appending a ROLLBACK command block, in a new log
    version of the same slice (a closed log file is never appended to)."""
    rel = _rel(storage, log_uri)
    partition = partition_of(rel)
    parsed = parse_log_file(rel.rsplit("/", 1)[-1])
    assert parsed is not None, log_uri
    versions = [lf.version for info in storage.list_dir(partition)
                if (lf := parse_log_file(info.name)) is not None
                and (lf.file_id, lf.base_instant) == (parsed.file_id, parsed.base_instant)]
    header = {HeaderKey.INSTANT_TIME: rollback_ts, HeaderKey.TARGET_INSTANT_TIME: target_ts,
              HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND}
    data = build_log_file([encode_block(BlockType.COMMAND_BLOCK, header, b"")])
    version = max(versions, default=parsed.version) + 1
    while True:
        name = log_file_name(parsed.file_id, parsed.base_instant, version, ROLLBACK_WRITE_TOKEN)
        new_rel = join_path(partition, name)
        if storage.create_exclusive(new_rel, data):
            return storage.uri(new_rel), len(data)
        version += 1


def _delete_instant_files(storage: Storage, timeline: ActiveTimeline, ts: str) -> None:
    """Remove the rolled-back instant from the timeline: completed file first (readers stop seeing
    it), requested last (until then it still shows as pending and the rollback can be resumed). A
    savepoint of the same time stays (its action is none of these)."""
    folder = timeline.layout.timeline_dir
    names = [i.name for i in storage.list_dir(folder) if not i.is_dir and i.name.startswith((ts + ".", ts + "_"))]
    instants = {n: parse_instant_file(n) for n in names}
    doomed = [n for n, inst in instants.items() if inst is not None and inst.timestamp == ts
              and inst.action in _ROLLED_BACK_ACTIONS]
    order = {State.COMPLETED: 0, State.INFLIGHT: 1, State.REQUESTED: 2}
    for name in sorted(doomed, key=lambda n: order[instants[n].state]):  # type: ignore[union-attr]
        storage.delete(f"{folder}/{name}")


def logs_named_by_pending_compactions(storage: Storage) -> frozenset[str]:
    """Log files (relative paths) that pending compaction plans will read, on a fresh timeline.

    Such a log must stay: deleting it would leave a plan that can never execute. pyhudi's planner never
    names a log of an unfinished write (`compaction.groups_with_unsettled_logs`), but Hudi's plans may
    (0.14 plans from the latest file slices, inflight logs included), and so may plans of older pyhudi."""
    from pyhudi.view.builder import compaction_plan_bytes

    timeline = ActiveTimeline.load(storage)
    out: set[str] = set()
    for inst in timeline.actions(Action.COMPACTION, Action.LOG_COMPACTION).pending():
        try:
            plan = am.read_instant_avro(compaction_plan_bytes(timeline, inst))
        except Exception:  # an unreadable plan: the compaction reports it itself
            continue
        for op in plan.get("operations") or []:
            partition = str(op.get("partitionPath") or "")
            out.update(join_path(partition, str(n).rsplit("/", 1)[-1]) for n in op.get("deltaFilePaths") or [])
    return frozenset(out)


def _execute_request(storage: Storage, request: dict[str, Any], rollback_ts: str, target_ts: str,
                     keep: frozenset[str] = frozenset()) -> tuple[list[str], dict[str, object]]:
    """Delete the request's files and append command blocks for its logs. A log in `keep` (named by a
    pending compaction plan) is not deleted even if only the target wrote it: a ROLLBACK command block
    voids its blocks instead, Hudi 0.14's way for every log (`MarkerBasedRollbackStrategy`, APPEND
    markers), so the plan stays runnable; the compaction skips the blocks anyway (their instant is not
    completed), and the command block keeps them void for every reader of the slice until then."""
    partition = str(request["partitionPath"])
    ok, failed = [], []
    from_failed = dict(request.get("logBlocksToBeDeleted") or {})
    for uri in request.get("filesToBeDeleted") or []:
        rel = _rel(storage, uri)
        if rel in keep and storage.exists(rel):
            from_failed[uri] = storage.size(rel)
            continue
        if storage.exists(rel) and not instant_wrote(storage, target_ts, rel):
            # Planned as the target's, but holds other instants' blocks now (a file the plan named was
            # deleted before a crash and another writer took the name since, or a writer appended).
            if log_file_owner(storage, rel, target_ts) is LogOwner.SHARED:
                from_failed[uri] = storage.size(rel)
            continue
        if storage.delete(rel) or not storage.exists(rel):
            ok.append(uri)
        else:
            failed.append(uri)
        fault_point("rollback.mid_delete")
    appended = dict(_append_rollback_block(storage, uri, rollback_ts, target_ts) for uri in from_failed)
    meta = am.rollback_partition_metadata(partition_path=partition, success_delete_files=ok, failed_delete_files=failed)
    if from_failed:
        meta["rollbackLogFiles"] = appended
        meta["logFilesFromFailedCommit"] = from_failed
    return ok, meta


def _execute_request_v2(storage: Storage, request: dict[str, Any]) -> tuple[list[str], dict[str, object]]:
    """Hudi 1.x's RollbackHelper for table versions 8+: delete the request's files (a file already gone
    counts as deleted, as on a retried rollback); a request with log blocks to void is refused, as
    Hudi refuses it ("V8+ rollback should not have logBlocksToBeDeleted")."""
    partition = str(request["partitionPath"])
    if request.get("logBlocksToBeDeleted"):
        raise HudiError(
            f"rollback request for file group {request.get('fileId')!r} of partition {partition!r} asks for "
            f"rollback command blocks in {sorted(request['logBlocksToBeDeleted'])}; tables of version 8+ never "
            "take them (their logs are deleted whole). The plan was written for a version-6 table: finish it "
            "with the writer that planned it, or delete the pending rollback and roll the instant back again")
    ok, failed = [], []
    for uri in request.get("filesToBeDeleted") or []:
        rel = _rel(storage, uri)
        if storage.delete(rel) or not storage.exists(rel):
            ok.append(uri)
        else:
            failed.append(uri)
        fault_point("rollback.mid_delete")
    return ok, am.rollback_partition_metadata(partition_path=partition, success_delete_files=ok,
                                              failed_delete_files=failed)


def _execute_requests(storage: Storage, timeline: ActiveTimeline, requests: list[dict[str, Any]], rollback_ts: str,
                      target_ts: str) -> tuple[list[str], dict[str, dict[str, object]]]:
    """Run every request of a plan; (deleted paths, HoodieRollbackPartitionMetadata by partition)."""
    v2 = timeline.layout.is_v2
    keep = logs_named_by_pending_compactions(storage) if not v2 and _deletes_logs(requests) else frozenset()
    partitions: dict[str, dict[str, object]] = {}
    deleted: list[str] = []
    for request in requests:
        ok, meta = _execute_request_v2(storage, request) if v2 else \
            _execute_request(storage, request, rollback_ts, target_ts, keep)
        deleted.extend(ok)
        partition = str(request["partitionPath"])
        if partition in partitions:  # several file groups of one partition: merge their outcomes
            _merge_partition_meta(partitions[partition], meta)
        else:
            partitions[partition] = meta
    return deleted, partitions


def execute_rollback(storage: Storage, timeline: ActiveTimeline, rollback_ts: str,
                     plan: dict[str, object]) -> RollbackResult:
    started = time.monotonic()
    target_info = plan["instantToRollback"]
    assert isinstance(target_info, dict)
    target_ts, target_action = str(target_info["commitTime"]), Action(str(target_info["action"]))
    inflight = Instant(rollback_ts, Action.ROLLBACK, State.INFLIGHT)
    if not storage.exists(f"{timeline.layout.timeline_dir}/{inflight.file_name}"):
        timeline.transition_to_inflight(Instant(rollback_ts, Action.ROLLBACK, State.REQUESTED), b"")
    target_now = timeline.find(target_ts)
    if target_now is not None and target_now.is_completed:
        timeline.revert_to_inflight(target_now)
    requests = plan.get("RollbackRequests") or []
    assert isinstance(requests, list)
    deleted, partitions = _execute_requests(storage, timeline, requests, rollback_ts, target_ts)
    # The failed write disappears from the timeline before the rollback is marked complete.
    _delete_instant_files(storage, timeline, target_ts)
    delete_markers(storage, target_ts)
    storage.delete(f".hoodie/.heartbeat/{target_ts}")
    fault_point("rollback.before_complete")
    meta = am.rollback_metadata(
        start_rollback_time=rollback_ts,
        instants_rollback=[am.instant_info(target_ts, target_action.value)],
        partition_metadata=partitions, time_taken_in_millis=int((time.monotonic() - started) * 1000))
    try:
        timeline.complete(Instant(rollback_ts, Action.ROLLBACK, State.INFLIGHT),
                          am.write_instant_avro("HoodieRollbackMetadata", meta))
    except InstantAlreadyCompletedError:
        # Another process resumed this pending rollback and completed it first: the plan is fixed and its
        # deletes idempotent, so the rollback is done either way (only the recorded timings differ).
        log.info("rollback %s was completed by another process meanwhile", rollback_ts)
        return RollbackResult(rollback_ts, target_ts, tuple(deleted))
    log.info("rolled back %s@%s with rollback %s (%d files deleted)", target_action.value, target_ts,
             rollback_ts, len(deleted))
    return RollbackResult(rollback_ts, target_ts, tuple(deleted))


def _deletes_logs(requests: list[dict[str, Any]]) -> bool:
    """Whether a rollback would delete a log file (only then are pending compaction plans read)."""
    return any(parse_log_file(str(uri).rsplit("/", 1)[-1]) is not None
               for request in requests for uri in request.get("filesToBeDeleted") or [])


def _merge_partition_meta(into: dict[str, Any], more: dict[str, Any]) -> None:
    for key in ("successDeleteFiles", "failedDeleteFiles"):
        into[key] = list(into.get(key) or []) + list(more.get(key) or [])
    for key in ("rollbackLogFiles", "logFilesFromFailedCommit"):
        if more.get(key):
            into[key] = {**(into.get(key) or {}), **more[key]}


LATE_TASK_GRACE_S = 3.0
"""How long the rollback of a write whose Spark job failed waits before sweeping again. Spark reports the
job failed as soon as one task fails, while it cancels the job's other tasks; a cancelled task's Python
worker is killed spark.python.task.killTimeout (2 s by default) later and can write files until then,
which the rollback, already done, never saw (a CI run left 3 base files of a task killed while the data
source's abort() rolled back)."""


def sweep_after_failed_job(storage: Storage, instant: str) -> list[str]:
    """`sweep_late_files` once the failed job's cancelled tasks are past their kill (best effort: a file
    left is invisible to readers, as the write's instant never completed). An instant still on the
    timeline (its rollback failed) is left whole to the next writer's rollback, which its markers guide."""
    time.sleep(LATE_TASK_GRACE_S)
    try:
        timeline = ActiveTimeline.load(storage)
        if timeline.find(instant) is not None:
            return []
        late = sweep_late_files(storage, instant, timeline)
    except Exception as exc:  # noqa: BLE001 - the write already failed; this only tidies up
        log.warning("could not sweep what tasks of failed write %s wrote after its rollback (%s)", instant, exc)
        return []
    if late:
        log.warning("deleted %d file(s) that tasks of failed write %s wrote after its rollback: %s", len(late),
                    instant, ", ".join(late))
    return late


def sweep_late_files(storage: Storage, instant: str, timeline: ActiveTimeline | None = None) -> list[str]:
    """Delete the base files of rolled-back `instant` that a task of the write still running during the
    rollback wrote after it, then the instant's marker directory. Such a file's marker may be one the
    rollback already consumed (the file was created after the rollback deleted it), or a new one (the
    marker write made the directory again), so the partitions looked at are those of the rollback's plan
    and of the markers now there, and every base file in them named by the instant goes. Log blocks such a
    task appended need nothing: readers skip blocks of an instant that never completed. Returns the files
    deleted."""
    timeline = timeline or ActiveTimeline.load(storage)
    partitions = {partition_of(rel) for rel in list_marked_files(storage, instant)}
    partitions |= _rolled_back_partitions(timeline, instant)
    late = _named_by(storage, partitions, instant, base_only=True)
    for rel in late:
        storage.delete(rel)
    delete_markers(storage, instant)
    return late


def _rolled_back_partitions(timeline: ActiveTimeline, instant: str) -> set[str]:
    """The partitions of the plan of the completed rollback that undid `instant` (none found: empty)."""
    for inst in reversed(list(timeline.actions(Action.ROLLBACK).completed())):
        plan = _plan_targeting(timeline, inst, instant)
        if plan is not None:
            return {str(r.get("partitionPath") or "") for r in plan.get("RollbackRequests") or []}
    return set()


def _plan_targeting(timeline: ActiveTimeline, rollback: Instant, instant: str) -> dict[str, Any] | None:
    """The plan of `rollback` when it targets `instant` (an unreadable plan, of a crashed rollback, targets
    nothing known here)."""
    try:
        plan = am.read_instant_avro(timeline.requested_details(rollback))
    except Exception:  # noqa: BLE001
        return None
    target = plan.get("instantToRollback") or {}
    return plan if isinstance(target, dict) and target.get("commitTime") == instant else None


def rollback_pending_write(storage: Storage, timeline: ActiveTimeline, target: Instant) -> RollbackResult:
    plan = plan_rollback(storage, target, timeline.layout.is_v2)
    rollback_ts = timeline.create_new_requested(Action.ROLLBACK, am.write_instant_avro("HoodieRollbackPlan", plan)
                                                ).timestamp
    fault_point("rollback.after_plan")
    return execute_rollback(storage, timeline, rollback_ts, plan)


def resume_pending_rollbacks(storage: Storage, timeline: ActiveTimeline) -> list[RollbackResult]:
    out = []
    for inst in timeline.actions(Action.ROLLBACK).pending():
        plan = am.read_instant_avro(timeline.requested_details(inst))
        out.append(execute_rollback(storage, timeline, inst.timestamp, plan))
    return out


def is_clustering(timeline: ActiveTimeline, instant: Instant) -> bool:
    """A pending replacecommit is a clustering only if its requested file carries a clustering plan; on
    timeline layout 2 a pending clustering has an action of its own."""
    if instant.action is Action.CLUSTERING:
        return True
    if instant.action is not Action.REPLACE_COMMIT:
        return False
    try:
        meta = am.read_instant_avro(timeline.requested_details(instant))
    except Exception:  # an empty or unreadable requested file is an insert overwrite
        return False
    return meta.get("operationType") == "CLUSTER" or bool(meta.get("clusteringPlan"))


def rollback_failed_writes(storage: Storage, timeline: ActiveTimeline, lazy: tuple[int, int] | None = None,
                           lock: LockSettings | None = None) -> list[RollbackResult]:
    """Undo pending writes of crashed writers (never compactions or clusterings).

    EAGER (single writer, `lazy=None`): every pending write is a failed one. LAZY (optimistic
    concurrency, `lazy=(heartbeat interval ms, tolerable misses)`): only writes whose heartbeat
    has expired, so a live concurrent writer is never rolled back.

    `timeline` may be old: the write it shows pending may have completed since and stopped its
    heartbeat (which then reads as expired). So each rollback is decided again under the table lock,
    on a fresh timeline, where completions happen: a write that completed is left alone, and a
    write rolled back here cannot complete afterwards (`rolled_back_by`, checked in its commit).
    """
    from pyhudi.transaction.heartbeat import is_expired

    results: list[RollbackResult] = []
    if timeline.actions(Action.ROLLBACK).pending():
        # Under the lock, on a fresh timeline: a rollback another process is running under the lock
        # (pyhudi.rollback, restore, a conflicting commit's) is finished by then, not run twice at once.
        with table_lock(storage, lock or LockSettings()):
            results = resume_pending_rollbacks(storage, timeline.reload())
        timeline = timeline.reload()
    for inst in timeline.pending():
        if inst.action not in ROLLBACKABLE or is_clustering(timeline, inst):
            continue
        if lazy is not None and not is_expired(storage, inst.timestamp, *lazy):
            continue
        with table_lock(storage, lock or LockSettings()) as held:
            fresh = timeline.reload()
            current = fresh.find(inst.timestamp)
            if current is None or current.state is State.COMPLETED:
                continue  # completed (or rolled back by someone else) since `timeline` was loaded
            if lazy is not None and not is_expired(storage, inst.timestamp, *lazy):
                continue
            ensure_held(held)  # a lease lost since: the writer may be completing under a new holder
            results.append(rollback_pending_write(storage, fresh, current))
        timeline = timeline.reload()
    return results


def rolled_back_by(timeline: ActiveTimeline, instant: str) -> str | None:
    """The pending rollback that targets `instant`, if any: a write must not complete once another
    writer began rolling it back (a completed rollback has removed the instant from the timeline)."""
    for inst in timeline.actions(Action.ROLLBACK).pending():
        if _plan_targeting(timeline, inst, instant) is not None:
            return inst.timestamp
    return None
