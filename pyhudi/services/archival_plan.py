"""Which instants the archiver may move out of the active timeline.

Layout 1 (table version 6: `.hoodie/` -> `.hoodie/archived/`, Hudi 0.14's HoodieTimelineArchiver rules)
-------------------------------------------------------------------------------------------------------

Archival runs once the completed commits (commit, deltacommit, replacecommit; a compaction completes
as a commit) exceed hoodie.keep.max.commits and trims them to hoodie.keep.min.commits, oldest first.
It never archives at or after:

* the oldest pending instant of any action; as Hudi does, the last completed commit before it is
  kept too, so the timeline has no hole in front of a write that is still running;
* the first savepoint (savepoints themselves are never archived);
* the earliest commit the latest completed clean retains. Hudi's incremental cleaner finds the
  partitions to scan from the commits after that point, so they must stay readable. When the
  cleaner has nothing left to delete, the retained point the cleaner would record now is used instead
  (Hudi records it with an empty clean, hoodie.write.empty.clean.create.duration.ms; at its default
  of -1 there is none, and without this the archive would freeze behind the last clean of a table
  that only appends). With no clean on the active timeline and the cleaner enabled, the point the
  cleaner would retain now bounds archival, and so does the first commit that superseded a file
  version the cleaner has not deleted yet (`no_clean_bound`: the cleaner, finding no clean, trusts
  archived commits to have left nothing to clean);
* a replacecommit whose replaced file groups still have files on storage: without its metadata the
  file-system view would show the replaced and the replacing files side by side;
* the slices and delta commits a pending compaction still needs, and (MOR, NUM_COMMITS trigger)
  the delta commits Hudi keeps so the compaction trigger can still count them;
* the files of a write that never completed and that a rollback or restore on the active timeline
  undid (an orphan a partial rollback left, older than the new start of the timeline, would look
  archived, hence committed, to every reader). Only then are data files listed, and only in the
  partitions that rollback or restore names (`_Planner.orphan_bound`); a file with no trace in any
  timeline file is not looked for (see there: what this gives up, and that Hudi lists nothing);
* actions pyhudi does not archive (restore, indexing).

Cleans and rollbacks older than the first commit kept go with the commits. The result is always a
*prefix* of the timeline: every archived instant is older than every instant left in `.hoodie/`,
which is what readers rely on when they treat an instant older than the active timeline as
archived, hence committed.

Layout 2 (table versions 8/9: `.hoodie/timeline/` -> the LSM history, `plan_archival_v2`)
-----------------------------------------------------------------------------------------

Hudi 1.x's TimelineArchiverV2 (1.0.x; `HoodieTimelineArchiver` before the versioning split, same
rules) with ArchivalUtils, CompactionUtils, ClusteringUtils and CleanerUtils. Commits are the
completed commit/deltacommit/replacecommit instants (`getCompletedCommitsTimeline`); times compare
as requested times. Rules (J: = apache/hudi):

1. **Keep limits** (J:ArchivalUtils.getMinAndMaxInstantsToKeep): min/max are hoodie.keep.min/max.commits,
   unless the cleaner's earliest commit to retain now (J:CleanerUtils.getEarliestCommitToRetain over the
   commits, hours counted back from the latest commit's time, not the clock) leaves more commits after it:
   then min = (commits after it) + 2 and max = min + (configured max - configured min).
2. **Trigger**: nothing new is archived while the commits number max or fewer
   (J:TimelineArchiverV2.getCommitInstantsToArchive).
3. **Earliest instant to retain** = the earliest of (J:getCommitInstantsToArchive, steps 1-4):
   a. the latest completed commit before the earliest *pending instant of the write timeline*
      (commit, deltacommit, replacecommit, compaction, logcompaction, clustering), or that pending
      instant itself when no commit precedes it. Pending cleans, rollbacks, restores and indexing do
      not count;
   b. MOR with hoodie.compact.inline.trigger.strategy NUM_COMMITS or NUM_AND_TIME
      (J:CompactionUtils.getEarliestInstantToRetainForCompaction): the delta commits (any state) after
      the last completed `commit` (a compaction; replacecommits do not count) are kept up to
      hoodie.compact.inline.max.delta.commits of them; with fewer, the last compaction (or, without
      one, the first delta commit) stays;
   c. clustering (J:ClusteringUtils.getEarliestInstantToRetainForClustering): when the active timeline
      has replacecommit or clustering instants (any state), the first of them at or after the latest
      completed clean's lower bound: the earliest savepoint named in that clean's plan
      (`savepointed_timestamps`) when a completed replacecommit lies between it and the plan's
      earliestInstantToRetain (J:getEarliestReplacedSavepointInClean; not for KEEP_LATEST_FILE_VERSIONS),
      else that earliestInstantToRetain, else the clean's own time. Without a completed clean, the
      first of them. This keeps a replacecommit until the cleaner has removed the groups it replaced;
   d. a metadata table named in hoodie.properties (`files` among hoodie.table.metadata.partitions,
      J:HoodieTableConfig.isMetadataTableAvailable; 1.0.x does not ask whether the writer enables it):
      the first commit that completed after the metadata table's latest compaction (its last completed
      commit or replacecommit, J:HoodieBackedTableMetadata.getLatestCompactionTime;
      J:findInstantsModifiedAfterByCompletionTime); nothing at all while it has none. pyhudi removes the
      metadata table before its first instant completes, so this binds only on tables Hudi wrote last.
4. **Savepoints**: no commit at or after the first completed savepoint (hoodie.archive.beyond.savepoint,
   default false, is not supported). Savepoints are never archived.
5. **Selection**: the oldest commits before every bound of 3 and 4, at most (commits - min)
   (J:getCommitInstantsToArchive's final `limit`); then every completed clean and rollback older than the
   last of them (J:getCleanAndRollbackInstantsToArchive), whatever their number. Restores, indexing,
   savepoints and pending instants stay.

pyhudi adds three bounds Hudi 1.x does not have; all only ever archive less; 6 and 7 protect readers
(Hudi's and pyhudi's treat anything older than the first active write as committed,
J:HoodieFileGroup.isFileSliceCommitted):

6. a replacecommit whose replaced file groups still have files on storage stays (rule 3c trusts the
   cleaner to have removed them; a failed delete would let the replaced files reappear);
7. the files of a write that never completed in the range about to go (an orphan) stop archival before
   it, and the commit before it stays; looked for only when a rollback or restore undid a write in that
   range, in the partitions it names (`_Planner.orphan_bound`).
8. with the cleaner on, nothing from the first commit that wrote a new version of a file group (or replaced
   one) whose superseded version the cleaner has not deleted yet (`_Planner.superseded_bound`: only the
   partitions those commits name are listed); with no clean on the active timeline, also nothing at or after
   the commit the cleaner retains now (`_Planner.no_clean_bound`). The cleaner, finding no clean, scans only
   the partitions the active timeline's superseding commits name, and trusts archived ones to have left
   nothing; Hudi 1.x bounds only replacecommits by the cleaner (rule 3c) and would archive past a lagging
   cleaner (async, or hoodie.clean.max.commits > 1).

Differences from pyhudi's layout-1 (0.14) rules above: the keep limits follow the cleaner (rule 1; pyhudi's
config refuses hoodie.keep.min.commits <= hoodie.cleaner.commits.retained for both layouts, so this binds with
KEEP_LATEST_BY_HOURS, or when a pending write holds the cleaner's retained commit back); pending cleans/rollbacks and unknown actions (restore, indexing)
no longer stop archival, and the result need not be a prefix of the timeline (savepoints, restores,
indexing and pending cleans/rollbacks may stay behind older archived instants; the archived commits are
still a prefix of the write timeline, which is what readers use); the latest clean's earliest retained
commit bounds only replacecommits (rule 3c), not every commit; the compaction bound counts pending delta
commits, starts after the last `commit` only (not after a replacecommit) and ignores pending compaction
plans (a pending compaction is a pending write, rule 3a); the metadata-table bound (3d) is new; cleans and
rollbacks go only when older than the last archived commit (layout 1: everything before the first kept
commit).

A re-run after a crash finds the instants the interrupted run already wrote to the history (same
instant time and completed action, `history_keys`) and only deletes them from the active timeline
(`ArchivalPlan.leftovers`), whether or not the keep limits would select them now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_base_file, parse_log_file
from pyhudi.model.instant_time import ms_to_instant, zone
from pyhudi.model.table_config import TableConfig
from pyhudi.storage import Storage
from pyhudi.timeline.archived import comparable_action
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State, parse_instant_file
from pyhudi.timeline.timeline import META_DIR, ActiveTimeline, instant_files
from pyhudi.writer.config import ArchivalConfig, CleanConfig, CompactionConfig

log = logging.getLogger(__name__)

#: Completed instants the archiver moves (savepoints, restores and indexing stay in `.hoodie/`).
ARCHIVABLE = WRITE_ACTIONS | {Action.CLEAN, Action.ROLLBACK}
#: Actions the archiver knows how to record; anything else stops archival in front of it.
KNOWN = ARCHIVABLE | {Action.SAVEPOINT, Action.COMPACTION, Action.LOG_COMPACTION}
_STATE_ORDER = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


@dataclass(frozen=True)
class InstantGroup:
    """Every file one instant left in `.hoodie/` (requested, inflight, completed), in that order.

    A completed compaction's group holds `.compaction.requested`, `.compaction.inflight` and the
    `.commit` it completed as, as Hudi groups them (getComparableAction).
    """

    timestamp: str
    files: tuple[Instant, ...]
    mtimes_ms: tuple[int, ...] = ()

    @property
    def completed(self) -> bool:
        return any(f.is_completed for f in self.files)

    @property
    def instant(self) -> Instant:
        """The instant in its latest state (the completed file if there is one)."""
        return self.files[-1]

    @property
    def action(self) -> Action:
        return self.instant.action

    @property
    def is_compaction_commit(self) -> bool:
        return self.completed and any(f.action is Action.COMPACTION for f in self.files)

    def __str__(self) -> str:
        return f"{self.action.value}@{self.timestamp}"


def _comparable(action: Action) -> Action:
    """Hudi's getComparableAction; layout 2's clustering belongs with the replacecommit it completes as
    (J:InstantComparatorV2; layout-1 timelines have no clustering files)."""
    return Action.REPLACE_COMMIT if action is Action.CLUSTERING else comparable_action(action)


def load_groups(storage: Storage, timeline: ActiveTimeline | None = None) -> list[InstantGroup]:
    """The raw active timeline: one group per (timestamp, comparable action), oldest first.

    Unlike ActiveTimeline, a savepoint and the commit it names (same timestamp) stay apart. `timeline`: take
    the instant files that timeline listed instead of listing (no modification times then: only for
    counting and the leftovers check, never for archive entries).
    """
    found: dict[tuple[str, Action], list[tuple[Instant, int]]] = {}
    if timeline is None:
        listed = [(inst, info.mtime_ns // 1_000_000) for inst, info in instant_files(storage)]
    else:
        listed = [(inst, 0) for ts in timeline.timestamps() for name in sorted(timeline.instant_files(ts))
                  if (inst := parse_instant_file(name)) is not None]
    for inst, mtime_ms in listed:
        found.setdefault((inst.timestamp, _comparable(inst.action)), []).append((inst, mtime_ms))
    groups = []
    for (ts, _), files in found.items():
        files.sort(key=lambda f: (_STATE_ORDER[f[0].state], f[0].action in WRITE_ACTIONS))
        groups.append(InstantGroup(ts, tuple(f[0] for f in files), tuple(f[1] for f in files)))
    groups.sort(key=lambda g: (g.timestamp, g.action.value))
    return groups


@dataclass
class ArchivalPlan:
    """What to archive (oldest first) and why it stops where it stops."""

    groups: list[InstantGroup] = field(default_factory=list)
    leftovers: list[InstantGroup] = field(default_factory=list)  # already archived by an interrupted run
    commits_total: int = 0
    commits_archived: int = 0
    stopped_by: str | None = None

    @property
    def empty(self) -> bool:
        return not self.groups


@dataclass(frozen=True)
class _Bound:
    timestamp: str  # archive strictly before this
    reason: str


class _Planner:
    def __init__(self, storage: Storage, table: TableConfig, groups: list[InstantGroup], cfg: ArchivalConfig,
                 clean_cfg: CleanConfig, compaction_cfg: CompactionConfig | None,
                 archived_keys: set[tuple[str, str, str]]) -> None:
        self.storage = storage
        self.table = table
        self.groups = groups
        self.cfg = cfg
        self.clean_cfg = clean_cfg
        self.compaction_cfg = compaction_cfg
        self.archived_keys = archived_keys
        self.commits = [g for g in groups if g.completed and g.action in WRITE_ACTIONS]
        self._listing: dict[str, list[str]] = {}

    @cached_property
    def timeline(self) -> ActiveTimeline:
        return ActiveTimeline.load(self.storage)

    @cached_property
    def view(self):  # type: ignore[no-untyped-def]
        from pyhudi.view.builder import build_view

        return build_view(self.storage, self.table, self.timeline)

    def _files(self, partition: str) -> list[str]:
        if partition not in self._listing:
            self._listing[partition] = [i.name for i in self.storage.list_dir(partition) if not i.is_dir]
        return self._listing[partition]

    # -- the hard stops (no count involved) ---------------------------------------------------
    def first_of(self, pred: Callable[[InstantGroup], bool]) -> InstantGroup | None:
        return next((g for g in self.groups if pred(g)), None)

    def hard_bounds(self) -> list[_Bound]:
        out = []
        pending = self.first_of(lambda g: not g.completed)
        if pending is not None:
            before = [c for c in self.commits if c.timestamp < pending.timestamp]
            at = before[-1].timestamp if before else pending.timestamp
            out.append(_Bound(at, f"the oldest pending instant {pending.instant} (the completed commit "
                                  "before it stays too)" if before else f"the oldest pending instant {pending.instant}"))
        savepoint = self.first_of(lambda g: g.action is Action.SAVEPOINT)
        if savepoint is not None:
            out.append(_Bound(savepoint.timestamp, f"the first savepoint {savepoint.timestamp}"))
        other = self.first_of(lambda g: g.action not in KNOWN)
        if other is not None:
            out.append(_Bound(other.timestamp, f"{other.instant}, an action pyhudi does not archive"))
        return out

    def compaction_bounds(self) -> list[_Bound]:
        out = []
        for g in self.groups:
            if g.completed or g.action not in (Action.COMPACTION, Action.LOG_COMPACTION):
                continue
            try:
                plan = am.read_instant_avro(self.storage.read_bytes(
                    f"{META_DIR}/{Instant(g.timestamp, g.action, State.REQUESTED).file_name}"))
            except (HudiError, OSError) as exc:
                out.append(_Bound(g.timestamp, f"pending {g} whose plan cannot be read ({exc})"))
                continue
            bases = [str(op.get("baseInstantTime")) for op in plan.get("operations") or []
                     if op.get("baseInstantTime")]
            if bases:
                out.append(_Bound(min(bases), f"pending {g}, which still needs the file slices based at "
                                              f"{min(bases)} and the delta commits after it"))
        cc = self.compaction_cfg
        if self.table.is_mor and cc is not None and cc.trigger in ("NUM_COMMITS", "NUM_AND_TIME"):
            bound = self._compaction_trigger_bound(cc.max_delta_commits)
            if bound is not None:
                out.append(bound)
        return out

    def _compaction_trigger_bound(self, max_deltas: int) -> _Bound | None:
        """Hudi's CompactionUtils.getOldestInstantToRetainForCompaction: the trigger counts delta
        commits since the last compaction, so the newest `max_deltas` of them (or, with fewer, the
        last compaction and everything after it) stay on the active timeline."""
        done = [c for c in self.commits if c.action in (Action.COMMIT, Action.REPLACE_COMMIT)]
        last = done[-1].timestamp if done else None
        deltas = [c for c in self.commits if c.action is Action.DELTA_COMMIT and (last is None or c.timestamp > last)]
        if len(deltas) < max_deltas:
            at = last or (deltas[0].timestamp if deltas else None)
            return _Bound(at, f"the compaction trigger (fewer than {max_deltas} delta commits since the last "
                              "compaction)") if at else None
        return _Bound(deltas[len(deltas) - max_deltas].timestamp,
                      f"the newest {max_deltas} delta commits the compaction trigger counts")

    # -- bounds that need more reading, applied to a tentative selection ------------------------
    def clean_bound(self, tentative_last: str) -> _Bound | None:
        latest = next((g for g in reversed(self.groups) if g.completed and g.action is Action.CLEAN), None)
        if latest is None:
            return self.no_clean_bound(tentative_last)
        try:
            meta = am.read_instant_avro(self.storage.read_bytes(f"{META_DIR}/{latest.instant.file_name}"))
        except (HudiError, OSError) as exc:
            return _Bound(latest.timestamp, f"the latest clean {latest.timestamp}, whose metadata cannot be read "
                                            f"({exc})")
        retained = str(meta.get("earliestCommitToRetain") or "")
        if not retained or retained > tentative_last:
            return None
        # The last clean retained from `retained`; if nothing is left to clean now, a clean run now
        # would retain from where the cleaner stands today (Hudi would record that in an empty clean).
        from pyhudi.services.clean_plan import plan_clean

        # A full scan, not the incremental one: a file an earlier clean left behind (a failed delete)
        # must still hold archival back, wherever it is.
        draft = plan_clean(self.storage, self.view, replace(self.clean_cfg, incremental=False))
        if draft.empty:
            now = draft.earliest_to_retain
            return _Bound(now.timestamp, "the earliest commit the cleaner retains now (nothing is left to "
                                         "clean)") if now else None
        return _Bound(retained, f"the earliest commit the latest clean {latest.timestamp} retains ({retained}); "
                                f"the cleaner still has {len(draft.files)} file(s) to delete")

    def no_clean_bound(self, tentative_last: str) -> _Bound | None:
        """With no clean on the active timeline (and the cleaner on): nothing at or after the commit the
        cleaner retains now, and no commit that superseded a file version still on storage
        (`superseded_bound`)."""
        if not self.clean_cfg.automatic:
            return None
        from pyhudi.services.clean_plan import earliest_commit_to_retain

        now = earliest_commit_to_retain(self.timeline, self.clean_cfg, self.table.local_timezone)
        if now is None:
            return None
        bound = _Bound(now.timestamp, "the earliest commit the cleaner retains (no clean has run yet)")
        superseded = self.superseded_bound(min(tentative_last, now.timestamp))
        return superseded if superseded is not None and superseded.timestamp < bound.timestamp else bound

    def superseded_bound(self, last: str) -> _Bound | None:
        """The first commit up to `last` that wrote a new version of a file group, or replaced one, while the
        cleaner still has something to delete in a partition where it did so.

        This is what lets the cleaner, finding no clean on the active timeline, trust archived history
        (`clean_plan.scope_without_clean` scans only the partitions the active timeline's superseding commits
        name): a commit goes only once the versions it superseded are gone. Only the partitions those commits
        name are listed (none on an append-only table); the inline cleaner ran just before, so normally
        nothing is left."""
        if not self.clean_cfg.automatic:
            return None
        from pyhudi.services.clean_plan import plan_clean, superseded_in

        by_commit = {c.timestamp: superseded_in(self.timeline, c) for c in self.timeline.completed()
                     if c.action in WRITE_ACTIONS and c.timestamp <= last}
        partitions = sorted(set().union(*by_commit.values())) if by_commit else []
        if not partitions:
            return None
        draft = plan_clean(self.storage, self.view, self.clean_cfg, partitions=partitions)
        left = {f.partition for f in draft.files}
        first = next((ts for ts, parts in sorted(by_commit.items()) if parts & left), None)
        if first is None:
            return None
        example = next(f.path for f in draft.files if f.partition in by_commit[first])
        return _Bound(first, f"commit {first} superseded file versions the cleaner has not deleted yet (e.g. "
                             f"{example})")

    def replace_bound(self, candidates: list[InstantGroup]) -> _Bound | None:
        for g in candidates:
            if g.action is not Action.REPLACE_COMMIT:
                continue
            meta = self.timeline.commit_metadata(g.instant)
            for partition, ids in (meta.partition_to_replace_file_ids or {}).items():
                live = self._group_files(partition, set(ids))
                if live:
                    return _Bound(g.timestamp, f"replacecommit {g.timestamp}: replaced file group(s) still on "
                                               f"storage (e.g. {live[0]}); the cleaner has not removed them yet")
        return None

    def _group_files(self, partition: str, file_ids: set[str]) -> list[str]:
        out = []
        for name in self._files(partition):
            parsed = parse_base_file(name) or parse_log_file(name)
            if parsed is not None and parsed.file_id in file_ids:
                out.append(f"{partition}/{name}" if partition else name)
        return out

    def orphan_bound(self, last_selected: str) -> _Bound | None:
        """Data files a rollback or restore left behind of a write in the range about to leave the timeline.

        Option (b) of pyhudi issue 31: data files are listed only when the range holds a write that a
        rollback or restore undid, and only in the partitions that rollback or restore names (cost follows
        the work); otherwise nothing is listed. A write that never completed leaves a trace in the timeline:
        while its requested or inflight file exists it is a pending instant, which already bounds archival;
        once rolled back, the rollback (or the restore) names it and its partitions, and a partial rollback is
        the one way its files outlive that trace. What (b) gives up: a file with no trace in any timeline
        file (a writer that crashed before creating its requested instant, whose instant files were deleted
        by hand, or that a rollback naming no partition left behind) is not looked for; if older than the
        new start of the timeline, readers would take it for archived, hence committed, data. Hudi's archiver
        lists no data files at all (J:TimelineArchiverV2 / HoodieTimelineArchiver: failed writes are left to
        the marker-based rollback), so pyhudi still finds more than Hudi does."""
        first_write = next((g.timestamp for g in self.groups if g.action in WRITE_ACTIONS
                            or g.action in (Action.COMPACTION, Action.LOG_COMPACTION)), None)
        if first_write is None:
            return None
        undone = self.undone_writes(first_write, last_selected)
        if not undone:
            return None
        named: set[str] = set()
        for parts in undone.values():
            named |= parts if parts is not None else set(self.view.partition_paths)
        committed = {c.timestamp for c in self.commits}
        oldest: tuple[str, str] | None = None
        for partition in sorted(named):
            for name in self._files(partition):
                base = parse_base_file(name)
                lf = parse_log_file(name) if base is None else None
                instant = base.instant if base else (lf.base_instant if lf else None)
                if instant is None or instant in committed or not first_write <= instant <= last_selected:
                    continue
                if oldest is None or instant < oldest[0]:
                    oldest = (instant, f"{partition}/{name}" if partition else name)
        if oldest is None:
            return None
        log.warning("archival stops before %s: %s was written by an instant that never completed; the "
                    "cleaner deletes such files", oldest[0], oldest[1])
        # The last commit before the orphan stays too, so the orphan is never older than the active
        # timeline's first write (which is what "archived, hence committed" means to readers).
        before = [c for c in self.commits if c.timestamp < oldest[0]]
        return _Bound(before[-1].timestamp if before else oldest[0],
                      f"{oldest[1]} was written by {oldest[0]}, which never completed and was rolled back (an "
                      "orphan the rollback left and the cleaner has not removed; the timeline must keep starting "
                      "before it, or readers would take it for archived data)")

    def undone_writes(self, first_write: str, last_selected: str) -> dict[str, set[str] | None]:
        """Instants in [first_write, last_selected] that a rollback or restore on the active timeline undid
        (completed or pending), with the partitions it names (None: every partition, when the rollback or
        restore cannot be read or does not say). Only rollbacks and restores after `first_write` are read:
        one is always requested after the instant it undoes."""
        out: dict[str, set[str] | None] = {}

        def note(instant: str, parts: set[str] | None) -> None:
            if first_write <= instant <= last_selected:
                known = out.get(instant, set())
                out[instant] = None if parts is None or known is None else known | parts

        for g in self.groups:
            if g.action not in (Action.ROLLBACK, Action.RESTORE) or g.timestamp <= first_write:
                continue
            try:
                record = self._trace_record(g)
            except (HudiError, OSError, ValueError) as exc:
                log.warning("archival: %s is unreadable (%s); listing every partition for orphans", g, exc)
                note(last_selected, None)
                continue
            for instant, parts in _undone_by(g, record):
                note(instant, parts)
        return out

    def _trace_record(self, g: InstantGroup) -> dict:
        """A completed rollback's or restore's metadata, else its plan."""
        inst = g.instant if g.completed else Instant(g.timestamp, g.action, State.REQUESTED)
        return am.read_instant_avro(self.storage.read_bytes(f"{self.table.timeline_dir}/{inst.file_name}"))


def _undone_by(g: InstantGroup, record: dict) -> list[tuple[str, set[str] | None]]:
    """(instant undone, partitions named) of one rollback or restore record (metadata or plan)."""
    def rollback_parts(meta: dict) -> set[str]:
        return {str(p) for p in (meta.get("partitionMetadata") or {})}

    if g.action is Action.ROLLBACK and g.completed:
        parts = rollback_parts(record)
        undone = [str(i) for i in record.get("commitsRollback") or []]
        undone += [str(i.get("commitTime")) for i in record.get("instantsRollback") or [] if isinstance(i, dict)]
        return [(i, parts) for i in undone]
    if g.action is Action.ROLLBACK:
        target = str((record.get("instantToRollback") or {}).get("commitTime") or "")
        requests = record.get("RollbackRequests") or record.get("rollbackRequests") or []
        return [(target, {str(r.get("partitionPath") or "") for r in requests})] if target else []
    if g.completed:  # a restore: its rollbacks' metadata per undone instant
        by_instant = record.get("hoodieRestoreMetadata") or {}
        out: list[tuple[str, set[str] | None]] = [
            (str(i), set().union(*[rollback_parts(m) for m in metas]) if metas else set())
            for i, metas in by_instant.items()]
        listed = [str(i.get("commitTime")) if isinstance(i, dict) else str(i) for i in record.get("instantsToRollback") or []]
        return out + [(i, None) for i in listed if i not in by_instant]
    # a pending restore: which partitions its rollbacks will name is not known yet
    return [(str(i.get("commitTime")), None) for i in record.get("instantsToRollback") or [] if isinstance(i, dict)]


def plan_archival(storage: Storage, table: TableConfig, cfg: ArchivalConfig, clean_cfg: CleanConfig,
                  compaction_cfg: CompactionConfig | None = None, *, groups: list[InstantGroup] | None = None,
                  archived_keys: set[tuple[str, str, str]] | None = None) -> ArchivalPlan:
    """Choose the instants to archive; `archived_keys` are the (ts, action, state) already archived."""
    groups = load_groups(storage) if groups is None else groups
    keys = archived_keys or set()
    p = _Planner(storage, table, groups, cfg, clean_cfg, compaction_cfg, keys)
    plan = ArchivalPlan(commits_total=len(p.commits))
    # Instants an interrupted run wrote to the archive but did not delete: finish them too (the walk
    # below stops at the first pending, savepoint or unknown instant, so only a prefix can go).
    leftovers = {id(g) for g in groups if g.completed and g.action in ARCHIVABLE
                 and all((f.timestamp, f.action.value, f.state.value) in keys for f in g.files)}
    k = 0
    if len(p.commits) > cfg.max_commits:
        bounds = p.hard_bounds() + p.compaction_bounds()
        k, stop = _count(p, bounds, len(p.commits) - cfg.min_commits)
        # The bounds below read more (clean metadata, listings): only for what is left to archive.
        if k:
            extra = [b for b in (p.clean_bound(p.commits[k - 1].timestamp),
                                 p.replace_bound(p.commits[:k])) if b is not None]
            k, stop = _count(p, bounds + extra, k, stop)
        if k:
            orphan = p.orphan_bound(p.commits[k - 1].timestamp)
            k, stop = _count(p, bounds + ([orphan] if orphan else []), k, stop)
        plan.stopped_by = stop
    # Everything completed and archivable before the first commit kept goes (cleans, rollbacks too).
    cut = p.commits[k].timestamp if k else ""
    for g in groups:
        new = g.completed and g.action in ARCHIVABLE and g.timestamp < cut
        if not (new or id(g) in leftovers):
            break  # a prefix only: everything archived is older than everything kept
        plan.groups.append(g)
        if id(g) in leftovers:
            plan.leftovers.append(g)
    plan.commits_archived = sum(1 for g in plan.groups if g.action in WRITE_ACTIONS)
    return plan


def _count(p: _Planner, bounds: list[_Bound], limit: int, stop: str | None = None) -> tuple[int, str | None]:
    """How many of the oldest commits lie before every bound (at most `limit`), and what stopped them
    (`stop`: what already held them back to `limit`)."""
    first = min(bounds, key=lambda b: b.timestamp, default=None)
    eligible = sum(1 for c in p.commits if first is None or c.timestamp < first.timestamp)
    # Commits are sorted, so the eligible ones are exactly the oldest `eligible`.
    if first is not None and eligible < limit:
        return eligible, f"archival stops before {first.timestamp}: {first.reason}"
    return min(limit, eligible), stop


# ------------------------------------------------------------------------------------------------------
# Layout 2 (Hudi 1.x): the rules of the module docstring's second part.
#: The write timeline of Hudi 1.x (J:BaseHoodieTimeline.getWriteTimeline): its pending instants bound archival.
_WRITE_TIMELINE = WRITE_ACTIONS | {Action.COMPACTION, Action.LOG_COMPACTION, Action.CLUSTERING}
_TRIGGERS_COUNTING_COMMITS = ("NUM_COMMITS", "NUM_AND_TIME")
_SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"  # J:CleanerUtils.SAVEPOINTED_TIMESTAMPS
_MDT_DIR = f"{META_DIR}/metadata"


def group_key(group: InstantGroup) -> tuple[str, str]:
    """(instant time, completed action): how a history row names the instant it archived."""
    return group.timestamp, group.action.value


def history_keys(storage: Storage, history_dir: str, start: str | None) -> set[tuple[str, str]]:
    """(instant time, action) of the history's rows from `start` on; only files whose name range reaches
    `start` are read, and only their three small columns."""
    from pyhudi.timeline.history import read_history

    return {(h.instant_time, h.action) for h in read_history(storage, history_dir, start=start, with_details=False)}


class _PlannerV2(_Planner):
    """Hudi 1.x's TimelineArchiverV2 selection (module docstring, rules 1-7)."""

    def keep_limits(self) -> tuple[int, int]:
        """Rule 1 (J:ArchivalUtils.getMinAndMaxInstantsToKeep)."""
        from pyhudi.services.clean_plan import earliest_commit_to_retain

        lo, hi = self.cfg.min_commits, self.cfg.max_commits
        if not self.commits:
            return lo, hi
        retained = earliest_commit_to_retain(self.timeline, self.clean_cfg, self.table.local_timezone,
                                             now=self.commits[-1].timestamp)
        if retained is None:
            return lo, hi
        by_cleaning = sum(1 for c in self.commits if c.timestamp > retained.timestamp) + 2
        if lo >= by_cleaning:
            return lo, hi
        log.warning("hoodie.keep.min.commits=%d is more aggressive than the cleaner, whose earliest retained "
                    "commit is %s: archival keeps min=%d, max=%d commits, as Hudi 1.x adjusts them", lo,
                    retained.timestamp, by_cleaning, by_cleaning + hi - lo)
        return by_cleaning, by_cleaning + hi - lo

    def pending_bound(self) -> _Bound | None:
        """Rule 3a."""
        pending = self.first_of(lambda g: not g.completed and g.action in _WRITE_TIMELINE)
        if pending is None:
            return None
        before = [c for c in self.commits if c.timestamp < pending.timestamp]
        if before:
            return _Bound(before[-1].timestamp, f"the oldest pending write {pending.instant} (the completed commit "
                                                "before it stays too)")
        return _Bound(pending.timestamp, f"the oldest pending write {pending.instant}")

    def compaction_bound_v2(self) -> _Bound | None:
        """Rule 3b (J:CompactionUtils.getEarliestInstantToRetainForCompaction)."""
        cc = self.compaction_cfg
        if not self.table.is_mor or cc is None or cc.trigger not in _TRIGGERS_COUNTING_COMMITS:
            return None
        done = [g for g in self.commits if g.action is Action.COMMIT]
        last = done[-1].timestamp if done else None
        deltas = [g for g in self.groups if g.action is Action.DELTA_COMMIT and (last is None or g.timestamp > last)]
        if len(deltas) >= cc.max_delta_commits:
            return _Bound(deltas[len(deltas) - cc.max_delta_commits].timestamp,
                          f"the newest {cc.max_delta_commits} delta commits the compaction trigger counts")
        since = last or (deltas[0].timestamp if deltas else None)
        return _Bound(since, f"the compaction trigger (fewer than {cc.max_delta_commits} delta commits since the "
                             "last compaction)") if since else None

    def clustering_bound(self) -> _Bound | None:
        """Rule 3c (J:ClusteringUtils.getEarliestInstantToRetainForClustering)."""
        replaces = [g for g in self.groups if g.action in (Action.REPLACE_COMMIT, Action.CLUSTERING)]
        if not replaces:
            return None
        clean = next((g for g in reversed(self.groups) if g.completed and g.action is Action.CLEAN), None)
        lower, why = ("", "no clean has completed yet") if clean is None else self._clean_lower_bound(clean)
        first = next((g for g in replaces if g.timestamp >= lower), None)
        return _Bound(first.timestamp, f"{first}: a replacecommit or clustering at or after {why}; it stays until "
                                       "the cleaner has passed it") if first else None

    def _clean_lower_bound(self, clean: InstantGroup) -> tuple[str, str]:
        requested = Instant(clean.timestamp, Action.CLEAN, State.REQUESTED)
        try:
            plan = am.read_instant_avro(self.storage.read_bytes(f"{self.table.timeline_dir}/{requested.file_name}"))
        except (HudiError, OSError, ValueError) as exc:
            log.warning("archival: the plan of clean %s is unreadable (%s); keeping every replacecommit",
                        clean.timestamp, exc)
            return "", f"the latest clean {clean.timestamp}, whose plan cannot be read"
        retain = str((plan.get("earliestInstantToRetain") or {}).get("timestamp") or "")
        savepoint = self._replaced_savepoint(plan, retain)
        if savepoint:
            return savepoint, f"the savepoint {savepoint} the latest clean {clean.timestamp} kept files for"
        if retain:
            return retain, f"the earliest commit the latest clean {clean.timestamp} retains ({retain})"
        return clean.timestamp, f"the latest clean {clean.timestamp}"

    def _replaced_savepoint(self, plan: dict, retain: str) -> str | None:
        """J:ClusteringUtils.getEarliestReplacedSavepointInClean."""
        if self.clean_cfg.policy == "KEEP_LATEST_FILE_VERSIONS" or not retain:
            return None
        named = str((plan.get("extraMetadata") or {}).get(_SAVEPOINTED_TIMESTAMPS) or "")
        earliest = min(named.split(","), default="")
        if not earliest or retain <= earliest:
            return None
        replaced = any(g.completed and g.action is Action.REPLACE_COMMIT and earliest <= g.timestamp <= retain
                       for g in self.groups)
        return earliest if replaced else None

    def metadata_table_bound(self) -> _Bound | None:
        """Rule 3d."""
        if not (_names_files_partition(self.table.raw) and _names_files_partition(_current_properties(self.storage))):
            return None  # the second look: the writer that runs this archival may have just removed it
        latest = _metadata_table_compaction(self.storage)
        if latest is None:  # a bound at the first commit archives nothing
            return _Bound(self.commits[0].timestamp, "the metadata table has no compaction yet (Hudi archives "
                                                     "nothing until it has one)") if self.commits else None
        after = next((c for c in self.commits if c.timestamp != latest
                      and (completion_of(c) or c.timestamp) > latest), None)
        return _Bound(after.timestamp, f"the first commit completed after the metadata table's latest compaction "
                                       f"{latest}") if after else None

    def savepoint_bound(self) -> _Bound | None:
        """Rule 4."""
        first = self.first_of(lambda g: g.completed and g.action is Action.SAVEPOINT)
        return _Bound(first.timestamp, f"the first savepoint {first.timestamp}") if first else None


def completed_files(group: InstantGroup) -> list[tuple[Instant, str]]:
    """A layout-2 group's completed files with their completion times, latest first (J:ActiveAction sorts
    them so; a completion race can leave two). A legacy name (no `_`) completes at its modification time
    in the local zone, as ActiveTimeline takes it."""
    found = [(inst, inst.completion or ms_to_instant(mtime, zone(True)))
             for inst, mtime in zip(group.files, group.mtimes_ms or (0,) * len(group.files)) if inst.is_completed]
    return sorted(found, key=lambda f: f[1], reverse=True)


def completion_of(group: InstantGroup) -> str | None:
    """When a completed layout-2 instant completed (its latest completed file); None for a pending one."""
    found = completed_files(group)
    return found[0][1] if found else None


def _names_files_partition(props: dict[str, str]) -> bool:
    """J:HoodieTableConfig.isMetadataTableAvailable: the `files` partition is among the listed ones."""
    from pyhudi.model.metadata_table import listed_partitions

    listed = ",".join(listed_partitions(props).values())
    return "files" in {p.strip() for p in listed.split(",")}


def _current_properties(storage: Storage) -> dict[str, str]:
    from pyhudi.model.metadata_table import PROPERTIES_FILE
    from pyhudi.model.properties import parse_properties

    try:
        return parse_properties(storage.read_bytes(PROPERTIES_FILE).decode("utf-8"))
    except FileNotFoundError:
        return {}


def _metadata_table_compaction(storage: Storage) -> str | None:
    """The requested time of the metadata table's last completed commit or replacecommit (its compactions)."""
    for folder in (f"{_MDT_DIR}/{META_DIR}/timeline", f"{_MDT_DIR}/{META_DIR}"):
        found = [inst.timestamp for info in storage.list_dir(folder) if not info.is_dir
                 and (inst := parse_instant_file(info.name)) is not None and inst.is_completed
                 and inst.action in (Action.COMMIT, Action.REPLACE_COMMIT)]
        if found:
            return max(found)
    return None


def plan_archival_v2(storage: Storage, table: TableConfig, cfg: ArchivalConfig, clean_cfg: CleanConfig,
                     compaction_cfg: CompactionConfig | None = None, *,
                     groups: list[InstantGroup] | None = None) -> ArchivalPlan:
    """Choose the instants of a layout-2 table to move into its LSM history (module docstring)."""
    groups = load_groups(storage) if groups is None else groups
    p = _PlannerV2(storage, table, groups, cfg, clean_cfg, compaction_cfg, set())
    plan = ArchivalPlan(commits_total=len(p.commits))
    k, plan.stopped_by = _commits_to_archive(p)
    chosen = {id(c) for c in p.commits[:k]}
    if k:
        last = p.commits[k - 1].timestamp
        chosen |= {id(g) for g in groups if g.completed and g.action in (Action.CLEAN, Action.ROLLBACK)
                   and g.timestamp < last}
    done = [g for g in groups if g.completed and g.action in ARCHIVABLE]
    archived = history_keys(storage, table.history_dir, done[0].timestamp) if done else set()
    leftovers = {id(g) for g in done if group_key(g) in archived}
    plan.groups = [g for g in groups if id(g) in chosen or id(g) in leftovers]
    plan.leftovers = [g for g in plan.groups if id(g) in leftovers]
    plan.commits_archived = sum(1 for g in plan.groups if g.action in WRITE_ACTIONS)
    return plan


def _commits_to_archive(p: _PlannerV2) -> tuple[int, str | None]:
    """How many of the oldest commits go (rules 1-7), and what stopped them."""
    low, high = p.keep_limits()
    if len(p.commits) <= high:
        return 0, None
    bounds = [b for b in (p.pending_bound(), p.compaction_bound_v2(), p.clustering_bound(),
                          p.metadata_table_bound(), p.savepoint_bound()) if b is not None]
    k, stop = _count(p, bounds, len(p.commits) - low)
    if k:  # rules 6 to 8 read more (commit metadata, listings): only for what is left to archive
        replace = p.replace_bound(p.commits[:k])
        k, stop = _count(p, bounds + ([replace] if replace else []), k, stop)
    if k:
        last = p.commits[k - 1].timestamp
        cleaned = any(g.completed and g.action is Action.CLEAN for g in p.groups)
        cleaner = p.superseded_bound(last) if cleaned else p.no_clean_bound(last)
        k, stop = _count(p, bounds + ([cleaner] if cleaner else []), k, stop)
    if k:
        orphan = p.orphan_bound(p.commits[k - 1].timestamp)
        k, stop = _count(p, bounds + ([orphan] if orphan else []), k, stop)
    return k, stop
