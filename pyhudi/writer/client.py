"""The write client: one write = one instant, planned here, written by an engine's tasks.

Engine-neutral (no Spark): the instant's lifecycle (take a time, requested -> inflight, run, reconcile
markers, conflict check, complete; withdraw or roll back on failure), recovery of earlier failed writes,
the plan (small files, buckets, MOR log targets), delete_partition's commit and the table services run
after a commit. How records are prepared, tagged and handed to write tasks is the engine's part:
`engine.spark.write.SparkWriteClient` (a Spark DataFrame; rows stay on the executors) and
`local_write.LocalWriteClient` (Arrow data, tasks in this process).

Order of events (each step either fails before anything exists, or is undone
by the rollback of a pending instant):

1. prepare: schema and column checks (no data read);
2. the bad-key check and per-partition counts;
3. tag (index) and profile: which file groups receive updates;
4. create the table if new; roll back earlier failed writes (EAGER);
5. requested -> inflight (with the workload profile);
6. route records to buckets and run a handle per bucket on the engine;
7. reconcile markers (delete files no write stat names), complete the instant.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pyhudi.config import keys as K
from pyhudi.engine import engine_for
from pyhudi.errors import (
    ClusteringUpdateConflictError,
    CommitConflictError,
    HudiError,
    InstantAlreadyCompletedError,
    InstantTimeTakenError,
    InvalidRecordError,
    PostCommitWarning,
    TableNotFoundError,
    TimelineError,
)
from pyhudi.faults import fault_point
from pyhudi.io import schema as S
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.instant_time import new_instant_time
from pyhudi.model.table_config import load_table_config, save_table_config
from pyhudi.model.write_stat import WriteStat
from pyhudi.services import archival, background, table_services
from pyhudi.services import clean as cleaner
from pyhudi.services.rollback import rollback_failed_writes, rollback_pending_write, rolled_back_by
from pyhudi.storage import Storage
from pyhudi.timeline.instant import Action, Instant, State
from pyhudi.timeline.table_schema import table_schema
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.transaction.conflicts import Footprint, check_write, footprint
from pyhudi.transaction.heartbeat import Heartbeat
from pyhudi.transaction.lock import check_lock_usable, ensure_held, table_lock
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer import delete_partition, single_task
from pyhudi.writer.config import SizingConfig, WriteConfig, parquet_settings
from pyhudi.writer.handles import HandleContext
from pyhudi.writer.markers import begin_markers, delete_markers, list_marked_files, unreported_files
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.partitioner import (
    BucketPlan,
    LogTarget,
    MergeOnRead,
    SmallFile,
    UpdateBase,
    plan_bucket_index,
    plan_buckets,
    records_per_new_file,
)
from pyhudi.writer.prepare import bad_keys_error, null_ordering_error, ordering_required
from pyhudi.writer.profile import WorkloadProfile
from pyhudi.writer.record_size import average_record_size
from pyhudi.writer.small_files import small_file_candidates

log = logging.getLogger(__name__)


@dataclass
class WriteResult:
    instant: str
    stats: list[WriteStat]
    operation: WriteOperation
    # Table services after the commit that failed (the write itself succeeded): see PostCommitWarning.
    post_commit_failures: list[PostCommitWarning] = field(default_factory=list)




class WriteClient:
    """The engine-neutral write client. `engine` is an Engine, a SparkSession (its Spark engine) or None
    (the in-process engine)."""

    def __init__(self, engine: Any, storage: Storage, config: WriteConfig, table_exists: bool = False) -> None:
        self.engine = engine_for(engine, config.local_parallelism)
        self.storage = storage
        self.config = config
        self._known_completed: frozenset[str] = frozenset()
        self._known_instants: frozenset[str] = frozenset()
        self._committed: WriteResult | None = None  # the write's result once its commit exists
        self._after_commit: ActiveTimeline | None = None  # the timeline as this write's commit left it
        # The caller (writer/entry.py) has just read hoodie.properties: no second read to learn the same.
        self._table_exists = table_exists

    def _begin(self) -> ActiveTimeline | None:
        """Before planning: resume orphaned clusterings, note the completed instants this write knows about
        (anything completing later is checked for conflicts)."""
        check_lock_usable(self.storage, self.config.lock)  # e.g. OCC on a store without conditional writes
        timeline = self._timeline()
        if timeline is not None and self._resume_orphaned_clusterings(timeline):
            timeline = timeline.reload()
        self._know(timeline)
        return timeline

    def _know(self, timeline: ActiveTimeline | None) -> None:
        """The instants this write's timeline holds when it starts: what completes or is planned later is
        what its commit is checked against (this write takes its own instant only after tagging, so a plan
        made meanwhile can have an earlier time than it)."""
        self._known_completed = frozenset(i.timestamp for i in timeline.completed()) if timeline else frozenset()
        self._known_instants = frozenset(i.timestamp for i in timeline.instants) if timeline else frozenset()

    def _delete_partitions(self, timeline: ActiveTimeline | None,
                           from_records: Callable[[], list[str]]) -> WriteResult:
        """delete_partition: a replacecommit of every live file group of the partitions, no data written
        (Hudi's SparkDeletePartitionCommitActionExecutor). Refusals come before the instant exists."""
        cfg = self.config
        if timeline is None:
            raise TableNotFoundError(f"delete_partition: no Hudi table at {self.storage.base_uri}; nothing to delete")
        self._know(timeline)
        requested = self._requested_partitions(from_records)
        timeline, view = self._recovered_view()
        # Only a wildcard needs the table's partitions; named ones are looked at one by one.
        wild = any(delete_partition.WILDCARD in p for p in requested)
        partitions = delete_partition.resolve(requested, view.partition_paths if wild else ())
        named = requested if cfg.options.is_set(K.PARTITIONS_TO_DELETE) else None
        delete_partition.refuse_empty(partitions, named, self.storage.base_uri)
        delete_partition.check_no_pending_services(view, partitions)
        replaced = delete_partition.replaced_file_ids(view, partitions)
        if any(not ids for ids in replaced.values()):
            log.warning("delete_partition: no file groups in %s (kept in the commit, as Hudi does)",
                        sorted(p for p, ids in replaced.items() if not ids))
        requested_bytes = am.write_instant_avro("HoodieRequestedReplaceMetadata",
                                                am.empty_requested_replace_metadata())
        inflight = WorkloadProfile(operation_type=cfg.operation.operation_type).to_inflight_bytes()
        result = self._run_instant(timeline, Action.REPLACE_COMMIT, requested_bytes, inflight,
                                   table_schema(timeline, cfg.table), lambda _instant: [], lambda: replaced)
        self._inline_services()
        return result

    def _requested_partitions(self, from_records: Callable[[], list[str]]) -> list[str]:
        """The option's entries, else the distinct partition paths of the batch's records (an engine's
        `from_records`; a null or empty record key is refused, as Hudi's key generator refuses it)."""
        cfg = self.config
        if cfg.options.is_set(K.PARTITIONS_TO_DELETE):
            return delete_partition.split_option(str(cfg.options.get(K.PARTITIONS_TO_DELETE)))
        return from_records()

    def _resume_orphaned_clusterings(self, timeline: ActiveTimeline) -> bool:
        """Run pending clusterings whose executor died (services/table_services.py) before planning."""
        if not timeline.actions(Action.REPLACE_COMMIT, Action.CLUSTERING).pending():
            return False
        return bool(table_services.resume_orphaned_clusterings(self.engine, self.storage, self.config))

    def _inline_services(self) -> None:
        """Table services the writer runs after its commit: clustering, compaction, the cleaner, then
        archival (as Hudi orders them). The commit is done: a failure of one is reported with the
        committed instant (`PostCommitWarning`) and the next still runs; none is raised."""
        for service, run in (("clustering", self._clustering_service), ("compaction", self._compaction_service),
                             ("clean", self._clean_service), ("archival", self._archive_service)):
            try:
                run()
            except Exception as exc:
                self._post_commit_failed(service, exc)

    def _post_commit_failed(self, service: str, exc: Exception) -> None:
        result = self._committed
        instant = result.instant if result is not None else "(none)"
        warning = PostCommitWarning(instant, service, exc)
        log.warning("%s (table %s)", warning, self.storage.base_uri, exc_info=exc)
        if result is not None:
            result.post_commit_failures.append(warning)
        warnings.warn(warning, stacklevel=2)

    def _archive_service(self) -> None:
        archival.archive_after_commit(self.storage, self.config, self._services_timeline())

    def _services_timeline(self) -> ActiveTimeline | None:
        """The timeline the commit left, for the cleaner and archival's check instead of a listing each, when
        no inline or async clustering or compaction may have added an instant since (otherwise None: list)."""
        cfg = self.config
        cc, c = cfg.clustering, cfg.compaction
        if cc.inline or cc.schedule_inline or cc.async_enabled or (
                cfg.table.is_mor and (c.inline or c.schedule_inline or c.run_async)):
            return None
        return self._after_commit

    def _clean_service(self) -> None:
        cfg = self.config
        if not cfg.clean.automatic:
            return

        def due(timeline: ActiveTimeline) -> bool:
            return cleaner.cleans_due(timeline, cfg.clean)

        if not cfg.clean.run_async:
            cleaner.clean(self.storage, cfg.table, cfg.clean, cfg.lock, due=due, timeline=self._services_timeline())
            return
        committed = self._services_timeline()
        if not due(committed if committed is not None else ActiveTimeline.load(self.storage)):  # no job: not due
            return

        def run() -> object:
            return cleaner.clean(self.storage, cfg.table, cfg.clean, cfg.lock)

        background.submit(self.storage.base_uri, "clean", run)  # skipped while one is still running

    def _compaction_service(self) -> None:
        table_services.compaction_service(self.engine, self.storage, self.config)

    # ------------------------------------------------------------------ steps
    def _timeline(self) -> ActiveTimeline | None:
        """The timeline this write starts from; the `.hoodie` listing of the properties' load just before
        stands for it (ActiveTimeline.load's `reuse_listing`)."""
        if not self._table_exists:
            try:
                load_table_config(self.storage)
            except TableNotFoundError:
                return None
        return ActiveTimeline.load(self.storage, reuse_listing=True)

    def _ensure_table(self) -> None:
        if self._table_exists:  # writer/entry.py read hoodie.properties at the start of this write
            return
        if not self.storage.exists(".hoodie/hoodie.properties"):
            save_table_config(self.storage, self.config.table)

    # ------------------------------------------------------------------ the instant
    def _commit_write(self, tagged: Any, profile: WorkloadProfile, avro_schema: dict[str, Any],
                      timeline: ActiveTimeline, view: FileSystemView, replace_all: bool) -> WriteResult:
        """Plan against the recovered view and run the instant; `tagged` is the engine's records (a Spark
        DataFrame, an Arrow table), written by its `_run_bulk` / `_run_handles`."""
        cfg = self.config
        op = cfg.operation
        action = Action.REPLACE_COMMIT if op.is_overwrite else (
            Action.DELTA_COMMIT if cfg.table.is_mor else Action.COMMIT)
        write_avro = am.write_instant_avro_1x if timeline.layout.is_v2 else am.write_instant_avro
        requested_bytes = write_avro("HoodieRequestedReplaceMetadata", am.empty_requested_replace_metadata()) \
            if action is Action.REPLACE_COMMIT else b""
        bulk = op is WriteOperation.BULK_INSERT
        self._reject_updates_under_clustering(profile, view)
        self._check_update_targets_live(profile, view)
        plan = None if bulk else self._plan(profile, view, timeline, tagged)

        def run(instant: str) -> list[WriteStat]:
            if bulk:
                return self._run_bulk(tagged, avro_schema, instant) if profile.total_inserts else []
            assert plan is not None
            return self._run_handles(tagged, plan, avro_schema, instant) if plan.num_buckets else []

        def replaced() -> dict[str, list[str]]:
            return self._replaced_file_ids(view, profile, replace_all)

        return self._run_instant(timeline, action, requested_bytes, profile.to_inflight_bytes(), avro_schema, run,
                                 replaced if op.is_overwrite else None)

    def _task_stats(self, rows: list[tuple[str, str]]) -> list[WriteStat]:
        """Write stats from ("stat"|"error", json) task rows; an error row refuses the write."""
        errors = [json.loads(p) for k, p in rows if k == "error"]
        if errors:
            raise _Rejected(self._task_error(errors[0]))
        return [WriteStat.from_json(json.loads(p)) for _, p in rows]

    def _recovered_timeline(self, loaded: ActiveTimeline | None = None) -> ActiveTimeline:
        """The timeline after rolling back earlier failed writes; `loaded`, the timeline this write began
        with, saves a second load when nothing was rolled back.

        In every mode (EAGER included) only pending writes whose owner is gone are rolled back (see
        transaction/heartbeat.py): a second process writing the same table has a live heartbeat, and
        deleting its files would lose a write it is about to acknowledge."""
        cfg = self.config
        timeline = loaded if loaded is not None else ActiveTimeline.load(self.storage)
        liveness = (cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses)
        if rollback_failed_writes(self.storage, timeline, liveness, cfg.lock):
            timeline = timeline.reload()
        return timeline

    def _recovered_view(self, loaded: ActiveTimeline | None = None,
                        view: FileSystemView | None = None) -> tuple[ActiveTimeline, FileSystemView]:
        """The recovered timeline and the view a write commits against. As in Hudi (one HoodieTable per
        write: the index and the partitioner share its file-system view), the view the records were
        tagged with is reused when no rollback changed the timeline it was built from: its partitions
        are not listed twice. Commits completed since are checked at commit time (`_known_completed`)."""
        timeline = self._recovered_timeline(loaded)
        if view is not None and timeline is loaded:
            return timeline, view
        return timeline, build_view(self.storage, self.config.table, timeline)

    def _run_instant(self, timeline: ActiveTimeline, action: Action, requested_bytes: bytes, inflight_bytes: bytes,
                     schema: dict[str, Any] | None, run: Callable[[str], list[WriteStat]],
                     replaced: Callable[[], dict[str, list[str]]] | None) -> WriteResult:
        """One write instant: requested -> inflight -> `run` writes files -> reconcile markers -> complete;
        on failure the instant is rolled back (or, when nothing was written, withdrawn). Once the commit
        file exists the write has succeeded: a later failure (releasing the lock, the heartbeat, markers)
        is reported with the instant (`PostCommitWarning`), never raised, and never rolls the commit back."""
        cfg = self.config
        self._after_commit = None
        fault_point("write.before_instant")
        started, heartbeat = self._start_instant(timeline, action, requested_bytes, inflight_bytes)
        instant = started.timestamp
        after_commit: list[tuple[str, Exception]] = []
        # Once committed, the heartbeat file goes with the markers in one batch delete (markers known here)
        batched = False
        try:
            stats = run(instant)
            self._reconcile_markers(instant, stats)
            fault_point("write.before_complete")
            meta = CommitMetadata(operation_type=cfg.operation.operation_type)
            for s in stats:
                meta.add(s)
            schema_meta = {"schema": S.to_json(schema)} if schema is not None else {}
            meta.extra_metadata = {**schema_meta, **cfg.extra_metadata}
            if replaced is not None:
                meta.partition_to_replace_file_ids = replaced()
            self._complete(instant, action, meta, stats)
            batched = self._in_process and self.storage.is_object_store
        except CommitConflictError:
            self._rollback_unless_undone(instant, action)  # _complete rolls back its conflicts itself
            raise
        except _Rejected as rejected:
            self._withdraw(instant, action)
            raise rejected.error from None
        except InstantAlreadyCompletedError:
            raise  # someone else's commit file: neither ours to report nor to roll back
        except BaseException as exc:
            committed = self._commit_exists(instant, action)
            if not committed:
                self._rollback_own(instant, action)
            if not committed or not isinstance(exc, Exception):
                raise  # an interrupt after the commit still stops the caller, but never undoes the commit
            after_commit.append(("commit", exc))  # e.g. releasing the table lock, after the commit file
        finally:
            try:
                heartbeat.stop(delete=not batched)
            except Exception as exc:
                if not self._commit_exists(instant, action):
                    raise
                after_commit.append(("heartbeat", exc))
        self._committed = result = WriteResult(instant, stats, cfg.operation)
        for service, failure in after_commit:
            self._post_commit_failed(service, failure)
        try:
            delete_markers(self.storage, instant, in_process=self._in_process, also=[heartbeat.path] if batched else [])
        except Exception as exc:
            self._post_commit_failed("marker cleanup", exc)
        log.info("completed %s %s: %d files written", action.value, instant, len(stats))
        return result

    def _commit_exists(self, instant: str, action: Action) -> bool:
        """Whether this write's completed instant file exists (it then has succeeded, whatever failed after)."""
        try:
            return self.storage.exists(f".hoodie/{Instant(instant, action, State.COMPLETED).file_name}")
        except Exception:  # cannot tell: treat as not committed (roll back, as before the commit)
            return False

    def _withdraw(self, instant: str, action: Action) -> None:
        """A write refused before it wrote any file leaves no trace, as if refused before it started
        (the distributed path refuses before creating its instant). If markers exist after all (a task
        attempt that wrote before the refusal), it is rolled back instead."""
        if list_marked_files(self.storage, instant):
            self._rollback_own(instant, action)
            return
        ActiveTimeline.load(self.storage).delete_pending(Instant(instant, action, State.INFLIGHT))
        delete_markers(self.storage, instant)

    def _task_error(self, error: dict[str, object]) -> HudiError:
        if error.get("error") == single_task.ERR_BAD_KEYS:
            return self._bad_keys(int(str(error["count"])))
        if error.get("error") == single_task.ERR_NULL_ORDERING:
            return null_ordering_error(self.config, int(str(error["count"])))
        if error.get("error") == single_task.ERR_CLUSTERING:
            return _updates_under_clustering(int(str(error["count"])), str(error["partition"]),
                                             str(error["file_id"]), str(error["clustering"]), self.storage.base_uri)
        return HudiError(f"the write task refused the batch: {error}")

    def _bad_keys(self, count: int) -> InvalidRecordError:
        return bad_keys_error(self.config, count)

    def _clustering_service(self) -> None:
        table_services.clustering_service(self.engine, self.storage, self.config)

    def _footprint(self, meta: CommitMetadata, stats: list[WriteStat]) -> Footprint:
        """The file groups this write changed. An overwrite (insert_overwrite(_table), mode="overwrite",
        delete_partition) hides whole groups: a write or clustering that completed into one of them meanwhile
        would leave its rows live beside the overwrite (a clustering's new group is not in the replaced set),
        so they count as changed from no base: any concurrent write to them, or replacement of them, conflicts,
        as Hudi's ConcurrentOperation counts an overwrite's replaced file ids (WriteOperationType.isOverwrite)."""
        fp = footprint(stats, bucket_index=self.config.index.type == "BUCKET")
        if self.config.operation.is_overwrite:
            for part, ids in (meta.partition_to_replace_file_ids or {}).items():
                fp.merged.update({(part, fid): "" for fid in ids})
        return fp

    def _complete(self, instant: str, action: Action, meta: CommitMetadata, stats: list[WriteStat]) -> None:
        """Check for conflicting commits and complete, atomically with respect to other committers."""
        cfg = self.config
        with table_lock(self.storage, cfg.lock) as lock:
            timeline = ActiveTimeline.load(self.storage)
            self._check_not_rolled_back(timeline, instant)
            try:
                check_write(timeline, instant, self._known_completed, self._footprint(meta, stats),
                            known_instants=self._known_instants)
                fault_point("write.before_commit")
                ensure_held(lock)  # a lease lost to a pause (or taken over) must not commit
            except CommitConflictError:
                rollback_pending_write(self.storage, timeline, Instant(instant, action, State.INFLIGHT))
                raise
            # `timeline` was listed under this lock and showed the instant inflight (_check_not_rolled_back)
            done = timeline.complete(Instant(instant, action, State.INFLIGHT), meta.to_bytes(instant),
                                     listed_under_lock=True)
            self._after_commit = timeline.with_completed(done)  # the cleaner's and archival's start
            fault_point("write.after_commit")

    def _check_not_rolled_back(self, timeline: ActiveTimeline, instant: str) -> None:
        """Under the lock, before completing: another writer that took this write for a crashed one (its
        heartbeat expired during a long pause) may have rolled it back, or begun to. Completing then would
        publish a commit whose files are gone."""
        current = timeline.find(instant)
        by = rolled_back_by(timeline, instant)
        if current is None or current.state is not State.INFLIGHT or by is not None:
            cfg = self.config
            raise CommitConflictError(
                f"write {instant} was rolled back by another writer{f' (rollback {by})' if by else ''} while it "
                f"ran: its heartbeat had expired (no beat for {cfg.heartbeat_interval_ms} ms x "
                f"{cfg.heartbeat_tolerable_misses + 1}: hoodie.client.heartbeat.interval_in_ms and "
                "hoodie.client.heartbeat.tolerable.misses). Nothing of it is visible; please retry the write")

    def _rollback_unless_undone(self, instant: str, action: Action) -> None:
        """A conflict found while writing (a file deleted by a concurrent rollback) leaves the instant
        inflight: roll it back now, unless it is gone or being rolled back (by _complete, or by another
        writer that took this one for dead: two rollbacks of one instant must not race)."""
        timeline = ActiveTimeline.load(self.storage)
        current = timeline.find(instant)
        if current is not None and current.state is State.INFLIGHT and rolled_back_by(timeline, instant) is None:
            self._rollback_own(instant, action)

    def _rollback_own(self, instant: str, action: Action) -> None:
        """A write that failed after creating its instant undoes itself at once (best effort; otherwise
        the next writer's rollback does it)."""
        try:
            rollback_pending_write(self.storage, ActiveTimeline.load(self.storage),
                                   Instant(instant, action, State.INFLIGHT))
        except Exception as exc:
            log.warning("could not roll back failed write %s now (%s); the next write will", instant, exc)

    def _check_update_targets_live(self, profile: WorkloadProfile, view: FileSystemView) -> None:
        """Records were tagged on an older view; if a clustering or overwrite replaced one of their
        file groups since, fail cleanly before creating an instant (nothing is written)."""
        replaced_by: dict[tuple[str, str], str] | None = None
        for part, prof in profile.partitions.items():
            if not prof.updates:
                continue
            live = {g.file_id for g in view.live_groups(part)}
            gone = sorted(fid for fid in prof.updates if fid not in live)
            if gone:
                replaced_by = replaced_by if replaced_by is not None else _replacing_instants(view)
                by = replaced_by.get((part, gone[0]))
                raise CommitConflictError(
                    f"file group {gone[0]} ({part or 'table root'}) that this write updates was replaced by "
                    f"replacecommit {by or '(unknown)'} after the write looked it up; nothing was written. "
                    "Please retry the write")

    def _reject_updates_under_clustering(self, profile: WorkloadProfile, view: FileSystemView) -> None:
        """Hudi's default SparkRejectUpdateStrategy: updating a file group under pending clustering fails
        the whole write before anything is written."""
        if not self.config.clustering.reject_updates:
            return
        pending = view.pending_clustering_file_ids()
        hit = profile.updates_in(pending)
        if hit:
            p, fid = hit[0]
            raise _updates_under_clustering(len(hit), p, fid, pending[(p, fid)], self.storage.base_uri)

    def _start_instant(self, timeline: ActiveTimeline, action: Action, content: bytes,
                       inflight: bytes) -> tuple[Instant, Heartbeat]:
        """Take a fresh instant time and move it to inflight; if another writer took the same time first,
        take the next. One listing after both timeline files serves both checks (`transition_to_inflight`'s
        `check_time`). A failure once the requested file exists rolls the instant back.

        In every mode the heartbeat starts before the instant exists and always carries the instant's
        own time, so no other writer ever sees this live write without one (and rolls it back). It is
        one small file write per interval.
        """
        cfg = self.config
        after = timeline.last().timestamp if timeline.last() else None  # type: ignore[union-attr]
        for _ in range(20):
            instant = new_instant_time(after=after, local=cfg.table.local_timezone)
            beat = Heartbeat(self.storage, instant, cfg.heartbeat_interval_ms).start()
            try:
                requested = timeline.create_requested(Instant(instant, action, State.REQUESTED), content,
                                                      check_time=False)
            except TimelineError:
                beat.stop(delete=False)  # the file of this time may be the other writer's too (see below)
                after = instant
                continue
            except BaseException:
                beat.stop()
                raise
            try:
                return timeline.transition_to_inflight(requested, inflight, check_time=True), beat
            except InstantTimeTakenError:  # both files withdrawn
                # The heartbeat file is named by the time alone: the writer that kept the time beats the
                # same file, and deleting it would leave that live write without one until its next beat
                # (open to a rollback by a third process). Left behind, it only names a time no instant has.
                beat.stop(delete=False)
                after = instant
            except BaseException:
                try:
                    self._rollback_own(instant, action)
                finally:
                    beat.stop()
                raise
        raise TimelineError("could not take a new instant time after 20 attempts; is the clock or the "
                            "storage misbehaving?")

    def _plan(self, profile: WorkloadProfile, view: FileSystemView, timeline: ActiveTimeline,
              tagged: Any = None) -> BucketPlan:
        cfg = self.config
        sample = partial(self._sampled_record_size, tagged) if _sample_may_matter(profile, cfg.sizing) else None
        avg = average_record_size(timeline, cfg.sizing, sample)
        bases = self._update_bases(profile, view)
        mor = None
        if cfg.table.is_mor and not cfg.operation.is_overwrite:
            targets = {(p, fid): LogTarget(*view.log_target(p, fid))
                       for p, prof in profile.partitions.items() for fid in prof.updates}
            mor = MergeOnRead(cfg.index.can_index_log_files, targets)
        if cfg.index.type == "BUCKET":  # an overwrite writes fresh bucket file groups (no updates tagged)
            fields = cfg.bucket_hash_fields
            return plan_bucket_index(profile, bases, tuple(fields), cfg.index.bucket_num, mor, avg)
        small = self._small_files(profile, view, timeline)
        if mor is not None:
            for p, files in small.items():
                for sf in files:
                    mor.log_targets.setdefault((p, sf.file_id), LogTarget(*view.log_target(p, sf.file_id)))
        return plan_buckets(profile, small, bases, cfg.sizing, avg, mor)

    def _sampled_record_size(self, tagged: Any) -> int | None:
        """Bytes a record of `tagged` takes in a base file, measured on a sample, for a table with no
        commit to estimate from (`record_size`); None where the engine's records are not at hand."""
        return None

    def _small_files(self, profile: WorkloadProfile, view: FileSystemView,
                     timeline: ActiveTimeline) -> dict[str, list[SmallFile]]:
        partitions = [p for p, prof in profile.partitions.items() if prof.num_inserts > 0]
        return small_file_candidates(self.config, view, timeline, partitions)

    def _update_bases(self, profile: WorkloadProfile, view: FileSystemView) -> dict[tuple[str, str], UpdateBase]:
        """The base file of each group the write updates, with its size (what its rewrite costs)."""
        bases: dict[tuple[str, str], UpdateBase] = {}
        for part, prof in profile.partitions.items():
            if not prof.updates:
                continue
            latest = {bf.file_id: bf for bf in view.latest_base_files(part)}
            for fid in prof.updates:
                bf = latest.get(fid)
                bases[(part, fid)] = UpdateBase(bf.path, bf.size) if bf else UpdateBase(None)
        return bases

    def _run_handles(self, tagged: Any, plan: BucketPlan, avro_schema: dict[str, Any], instant: str) -> list[WriteStat]:
        """Write every bucket of the plan (the engine's data path)."""
        raise NotImplementedError

    def _run_bulk(self, records: Any, avro_schema: dict[str, Any], instant: str) -> list[WriteStat]:
        """bulk_insert's files (the engine's data path)."""
        raise NotImplementedError

    @property
    def _in_process(self) -> bool:
        """Whether every task of this write runs in this process (the in-process engine), so the markers
        this process wrote are all there are (writer/markers.py: no LIST and GET of them at commit)."""
        return getattr(self.engine, "name", "") == "local"

    def _handle_context(self, avro_schema: dict[str, Any], instant: str, plan: BucketPlan | None,
                        salts: list[int], combine: bool | None = None) -> HandleContext:
        cfg = self.config
        return HandleContext(
            storage=self.storage, instant=instant, operation=cfg.operation,
            file_schema=S.avro_to_arrow(S.with_meta_fields(avro_schema)),
            avro_schema_with_meta=S.to_json(S.with_meta_fields(avro_schema)),
            populate_meta=cfg.table.populate_meta_fields, precombine_field=cfg.precombine_field,
            event_time_ordering=cfg.uses_event_time_ordering,
            allow_duplicate_on_inserts=cfg.allow_duplicate_on_inserts, sizing=cfg.sizing,
            parquet=parquet_settings(cfg, self.storage.base_uri), buckets=tuple(plan.buckets) if plan else (),
            salts=tuple(salts),
            # bulk_insert deduplicates in Spark (layout) when asked; handles must not redo it per file.
            combine=(cfg.combine_before_write and plan is not None) if combine is None else combine,
            require_ordering=ordering_required(cfg), marking=begin_markers(self.storage, instant, cfg.marker_type,
                                                                    files=len(plan.buckets) if plan else None),
            logs_named_by_commit=cfg.table.layout_version >= 2, keep_tables=self._in_process,
        )

    def _reconcile_markers(self, instant: str, stats: list[WriteStat]) -> None:
        """Delete data files that markers name but no write stat does (failed or speculative attempts)."""
        written: set[str | None] = {s.path for s in stats if s.path}
        for rel in unreported_files(self.storage, instant, written, in_process=self._in_process):
            log.info("deleting %s: written by a failed or duplicate task attempt", rel)
            self.storage.delete(rel)

    def _replaced_file_ids(self, view: FileSystemView, profile: WorkloadProfile,
                           replace_all: bool) -> dict[str, list[str]]:
        op = self.config.operation
        whole_table = replace_all or op is WriteOperation.INSERT_OVERWRITE_TABLE
        if whole_table:
            partitions = view.partition_paths
        else:  # the written partitions only, listed one by one (not the whole table)
            known = set(view.existing_partitions(profile.partitions))
            partitions = [p for p in profile.partitions if p in known]
        out: dict[str, list[str]] = {}
        for part in partitions:
            ids = sorted(g.file_id for g in view.live_groups(part))
            if ids:
                out[part] = ids
        return out


class _Rejected(Exception):
    """A write task refused its batch before writing anything; `error` is what the user sees."""

    def __init__(self, error: HudiError) -> None:
        super().__init__(str(error))
        self.error = error


def _updates_under_clustering(count: int, partition: str, file_id: str, clustering: str, table: str
                              ) -> ClusteringUpdateConflictError:
    return ClusteringUpdateConflictError(
        f"{count} file group(s) receiving updates are under pending clustering (e.g. {file_id} in "
        f"{partition or 'the table root'}, clustering {clustering}); nothing was written. Retry after the "
        f"clustering completes: if no process is executing it, run `pyhudi clustering {table} run --instant "
        f"{clustering}` or `pyhudi.cluster(spark, {table!r}, instant={clustering!r})` (a writer with "
        "hoodie.clustering.async.enabled or hoodie.clustering.inline resumes it itself once its heartbeat "
        "expires), or set hoodie.clustering.updates.strategy="
        "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy")


def _replacing_instants(view: FileSystemView) -> dict[tuple[str, str], str]:
    """(partition, fileId) -> the completed replacecommit (clustering, overwrite) that replaced it."""
    out: dict[tuple[str, str], str] = {}
    for inst in view.timeline.actions(Action.REPLACE_COMMIT).completed():
        meta = view.timeline.commit_metadata(inst)
        for p, ids in (meta.partition_to_replace_file_ids or {}).items():
            for fid in ids:
                out[(p, fid)] = inst.timestamp
    return out


def _sample_may_matter(profile: WorkloadProfile, sizing: SizingConfig) -> bool:
    """Whether a first write's plan can depend on its records' measured size: only when some partition
    gets more inserts than one new file of the configured estimate's records holds. Below that every
    partition is one new file whatever the size (a smaller size cannot split it; a file larger than the
    max is rolled over by its create handle), so the sample (on Spark, a job) is not taken."""
    per_file = records_per_new_file(sizing, sizing.record_size_estimate)
    return any(p.num_inserts > per_file for p in profile.partitions.values())
