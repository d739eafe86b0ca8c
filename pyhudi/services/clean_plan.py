"""What the cleaner may delete (Hudi's CleanPlanner), with the reason for every file.

Immutable files mean every top-up, compaction and clustering leaves an older
version behind. A version may go once no reader at any retained instant can
need it:

* KEEP_LATEST_COMMITS / KEEP_LATEST_BY_HOURS: per file group keep the latest
  slice, the last slice before the earliest retained commit (what a query at
  that commit reads), every slice at or after it, savepointed slices and slices
  a pending compaction or clustering will read; delete older slices (base and
  logs together). Groups replaced before the earliest retained commit go whole.
  Groups replaced later are left alone until then (Hudi's view hides them).
* KEEP_LATEST_FILE_VERSIONS: keep the newest N slices per group (the slices a
  pending compaction needs are kept and count as one); replaced groups go at once.

Also deleted: orphans, data files of instants that never completed and are no
longer pending (left by crashed writers whose rollback could not name them).

Which partitions are scanned (`partitions_to_clean`) follows Hudi's CleanPlanner with
hoodie.cleaner.incremental.mode (default true): by commits or hours, only the partitions where
completed writes between the last clean's earliest retained commit and the new one superseded or
replaced a file version (nothing else can have a newly cleanable file; Hudi takes every partition
they wrote, apache/hudi#18014 proposes the same narrowing), and none while there is no commit to
retain. With no clean on the active timeline (Hudi: a full scan), the partitions where any commit
before the earliest retained one superseded or replaced a version, or a rollback deleted files
(`scope_without_clean`, which says why that is the whole history). A full scan for file versions,
with the mode off, with a last clean that recorded no earliest retained commit, or while a savepoint exists
(its removal can free files in partitions no write touched); on timeline layout 2 also when a
savepoint the last clean recorded was deleted since (Hudi 1.x's CleanPlanner#isAnySavepointDeleted).
Orphans are looked for in the partitions scanned.

Hudi 1.x plans by requested (instant) times as 0.14 did, completion times do not enter: the earliest
commit to retain is the n-th latest completed commit by requested time, capped before the first
pending instant of its commits-and-compaction timeline (which on layout 2 holds pending clusterings
under their own action), and a slice is older than it when its base instant is. What differs is the
slicing itself (a 1.x log joins the slice of its commit's completion time), which the file-system
view does on layout 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from pyhudi.errors import HudiError
from pyhudi.model import avro_models as am
from pyhudi.model.file_names import parse_base_file, parse_log_file
from pyhudi.model.instant_time import instant_minus, now_instant
from pyhudi.services.plan_scope import commit_json, partitions_rolled_back, partitions_written
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import pending_clustering_files
from pyhudi.view.file_system_view import FileGroup, FileSlice, FileSystemView
from pyhudi.writer.config import CleanConfig

# The clean plan's and metadata's extraMetadata key for the savepoints at planning (Hudi 1.x CleanerUtils).
SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"


@dataclass(frozen=True)
class FileToClean:
    partition: str
    path: str  # relative to the base path
    reason: str


@dataclass
class CleanPlanDraft:
    policy: str
    earliest_to_retain: Instant | None
    last_completed: str
    files: list[FileToClean] = field(default_factory=list)
    partitions_to_delete: list[str] = field(default_factory=list)
    scope: str = ""  # which partitions were scanned, and why (a full scan says so)

    @property
    def empty(self) -> bool:
        return not self.files and not self.partitions_to_delete


def _commits(timeline: ActiveTimeline) -> list[Instant]:
    return [i for i in timeline.completed() if i.action in WRITE_ACTIONS]


def earliest_commit_to_retain(timeline: ActiveTimeline, cfg: CleanConfig, local_tz: bool = False,
                              now: str | None = None) -> Instant | None:
    """Hudi's CleanPlanner.getEarliestCommitToRetain, including the cap by the oldest pending write or
    compaction."""
    commits = _commits(timeline)
    if cfg.policy == "KEEP_LATEST_COMMITS":
        if len(commits) <= cfg.commits_retained:
            return None
        nth = commits[len(commits) - cfg.commits_retained]
        # Hudi caps by its commits-and-compaction timeline: a pending compaction counts too, and so does a
        # pending clustering, which timeline layout 2 keeps under an action of its own (Hudi 1.x's
        # getCommitsAndCompactionTimeline lists CLUSTERING_ACTION).
        pending = [i for i in timeline.pending() if i.action in WRITE_ACTIONS
                   or i.action in (Action.COMPACTION, Action.CLUSTERING)]
        if pending and nth.timestamp > pending[0].timestamp:
            before = [c for c in commits if c.timestamp < pending[0].timestamp]
            return before[-1] if before else None
        return nth
    if cfg.policy == "KEEP_LATEST_BY_HOURS":
        cutoff = instant_minus(now or now_instant(local_tz), timedelta(hours=cfg.hours_retained), local_tz)
        after = [c for c in commits if c.timestamp >= cutoff]
        return after[0] if after else None
    return None


def savepointed_files(timeline: ActiveTimeline) -> set[str]:
    out: set[str] = set()
    for inst in timeline.savepoints():
        meta = am.read_instant_avro(timeline.details(inst))
        for pm in (meta.get("partitionMetadata") or {}).values():
            out.update(pm.get("savepointDataFile") or [])
    return out


def _protected_slices(view: FileSystemView) -> set[tuple[str, str, str]]:
    """(partition, fileId, base instant) of slices a pending compaction or clustering will read."""
    out = {(p.partition, p.file_id, _pending_base(view, p.partition, p.file_id, p.instant))
           for p in view._pending_compactions}
    planned = pending_clustering_files(view.timeline)  # type: ignore[arg-type]
    for (part, fid) in view.pending_clustering_file_ids():
        group = next((g for g in view.file_groups(part) if g.file_id == fid), None)
        for sl in group.slices if group else []:
            names = {p.rsplit("/", 1)[-1] for p in sl.all_paths()}
            if names & planned:
                out.add((part, fid, sl.base_instant))
    return out


def _pending_base(view: FileSystemView, partition: str, fid: str, compaction: str) -> str:
    group = next((g for g in view.file_groups(partition) if g.file_id == fid), None)
    older = [s for s in (group.slices if group else []) if s.base_instant < compaction]
    return older[-1].base_instant if older else ""


def _slice_files(sl: FileSlice) -> list[str]:
    return sl.all_paths()


def _is_savepointed(sl: FileSlice, saved: set[str]) -> bool:
    return any(p.rsplit("/", 1)[-1] in saved for p in sl.all_paths())


def _group_by_commits(group: FileGroup, earliest: Instant, protected: set[tuple[str, str, str]],
                      saved: set[str]) -> list[FileToClean]:
    slices = list(reversed(group.slices))  # newest first
    latest = slices[0].base_instant
    before = next((s.base_instant for s in slices if s.base_instant < earliest.timestamp), None)
    out: list[FileToClean] = []
    for sl in slices:
        if sl.base_instant in (latest, before) or _is_savepointed(sl, saved) or \
                (group.partition, group.file_id, sl.base_instant) in protected:
            continue
        if sl.base_instant < earliest.timestamp:
            why = (f"older version of file group {group.file_id}: superseded before the earliest retained commit "
                   f"{earliest.timestamp}, and the version readers at that commit need is {before}")
            out.extend(FileToClean(group.partition, p, why) for p in _slice_files(sl))
    return out


def _group_by_versions(group: FileGroup, keep: int, protected: set[tuple[str, str, str]],
                       saved: set[str], compaction_base: str | None) -> list[FileToClean]:
    out: list[FileToClean] = []
    kept = 0
    if compaction_base is not None:
        keep -= 1  # as Hudi: the slices a pending compaction needs are kept and count as one version
    for sl in reversed(group.slices):
        if compaction_base is not None and sl.base_instant >= compaction_base:
            continue
        if _is_savepointed(sl, saved) or (group.partition, group.file_id, sl.base_instant) in protected:
            continue
        if kept < keep:
            kept += 1
            continue
        why = f"file group {group.file_id} keeps its newest {keep} versions (hoodie.cleaner.fileversions.retained)"
        out.extend(FileToClean(group.partition, p, why) for p in _slice_files(sl))
    return out


class _Replaced:
    """Which groups of a partition completed replacecommits replaced, asked per partition in the clean's
    scope (a whole-table clustering names every partition; an incremental clean looks at a few)."""

    def __init__(self, timeline: ActiveTimeline, earliest: Instant | None, all_: bool) -> None:
        self._commits = [(inst.timestamp, timeline.replaced_ids(inst))
                         for inst in timeline.actions(Action.REPLACE_COMMIT).completed()]
        self._before = None if all_ else (earliest.timestamp if earliest is not None else "")

    def in_partition(self, partition: str) -> tuple[dict[str, str], set[str]]:
        """(file id -> replacecommit, for those the clean may remove now; every replaced file id)."""
        may_go: dict[str, str] = {}
        every: set[str] = set()
        for ts, ids in self._commits:
            for fid in ids.get(partition):
                every.add(fid)
                if self._before is None or ts < self._before:
                    may_go[fid] = ts
        return may_go, every


def _orphans(storage: Storage, view: FileSystemView, partition: str) -> list[FileToClean]:
    """Data files whose instant is neither committed, pending, nor archived: left by a crashed write.
    From the view's listing of the partition (the one its file groups came from; one listing, not two)."""
    timeline = view.timeline
    first = timeline.write_timeline().first()
    newest = timeline.last()
    out = []
    for info in view.listing(partition):
        base = parse_base_file(info.name)
        lf = parse_log_file(info.name) if base is None else None
        instant = base.instant if base else (lf.base_instant if lf else None)
        if instant is None or timeline.contains(instant) or (first is not None and instant < first.timestamp):
            continue
        # A writer that started after this timeline was loaded has a newer instant; never touch its files.
        if newest is None or instant >= newest.timestamp:
            continue
        out.append(FileToClean(partition, info.path, f"written by instant {instant}, which never completed and "
                               "is no longer pending (a crashed write)"))
    return out


def plan_clean(storage: Storage, view: FileSystemView, cfg: CleanConfig, partitions: list[str] | None = None,
               now: str | None = None) -> CleanPlanDraft:
    timeline = view.timeline
    assert isinstance(timeline, ActiveTimeline)
    earliest = earliest_commit_to_retain(timeline, cfg, view.config.local_timezone, now)
    commits = _commits(timeline)
    draft = CleanPlanDraft(cfg.policy, earliest, commits[-1].timestamp if commits else "")
    saved = savepointed_files(timeline)
    protected = _protected_slices(view)
    by_versions = cfg.policy == "KEEP_LATEST_FILE_VERSIONS"
    # As Hudi's view, replaced groups are no live groups: untouched until their replacecommit may go.
    replaced = _Replaced(timeline, earliest, by_versions)
    compaction_bases = {(p.partition, p.file_id): _pending_base(view, p.partition, p.file_id, p.instant)
                        for p in view._pending_compactions}
    scope, draft.scope = (partitions, "the partitions asked for") if partitions is not None else \
        clean_scope(view, cfg, earliest)
    clustering = view.pending_clustering_file_ids()
    for part in scope if scope is not None else view.partition_paths:
        may_go, replaced_any = replaced.in_partition(part)
        for group in view.file_groups(part):
            if group.file_id in may_go and (part, group.file_id) not in clustering:
                rc = may_go[group.file_id]
                why = f"file group {group.file_id} was replaced by replacecommit {rc}" + (
                    "" if by_versions else f", before the earliest retained commit {earliest.timestamp if earliest else ''}")
                draft.files.extend(FileToClean(part, p, why) for sl in group.slices
                                   if not _is_savepointed(sl, saved) for p in _slice_files(sl))
            elif group.file_id in replaced_any:
                continue
            elif by_versions:
                draft.files.extend(_group_by_versions(group, cfg.file_versions_retained, protected, saved,
                                                      compaction_bases.get((part, group.file_id))))
            elif earliest is not None:
                draft.files.extend(_group_by_commits(group, earliest, protected, saved))
        draft.files.extend(_orphans(storage, view, part))
    return draft


def _last_clean_metadata(timeline: ActiveTimeline) -> dict[str, Any] | None:
    last = timeline.completed().actions(Action.CLEAN).last()
    if last is None:
        return None
    try:
        return am.read_instant_avro(timeline.details(last))
    except HudiError:
        return None


def last_clean_retained(timeline: ActiveTimeline) -> str | None:
    """The earliest commit the last completed clean retained ('' or None: unknown)."""
    meta = _last_clean_metadata(timeline)
    if meta is None:
        return None
    return str(meta.get("earliestCommitToRetain") or "") or None


def savepoint_deleted_since_last_clean(timeline: ActiveTimeline) -> str | None:
    """A savepoint the last clean recorded (Hudi 1.x's extraMetadata `savepointed_timestamps`) that is gone
    now, or None: its files may have become cleanable in partitions no later write touched."""
    meta = _last_clean_metadata(timeline) or {}
    recorded = str((meta.get("extraMetadata") or {}).get(SAVEPOINTED_TIMESTAMPS) or "")
    now = {s.timestamp for s in timeline.savepoints()}
    return next((ts for ts in recorded.split(",") if ts and ts not in now), None)


def partitions_to_clean(view: FileSystemView, cfg: CleanConfig, earliest: Instant | None) -> list[str] | None:
    """The partitions a clean must scan, or None for all of them (Hudi's getPartitionPathsToClean).

    Incremental (by commits or hours, the mode on): a file becomes cleanable only when a newer slice
    of its group lands before the earliest retained commit, and every slice, log or replacement is
    written by a completed commit, deltacommit, replacecommit or compaction, whose metadata names its
    partitions. The last clean already deleted what was cleanable at its earliest retained commit E1,
    so the partitions where commits in [E1, E) superseded or replaced a file version are all that can
    hold something new at E.
    """
    return clean_scope(view, cfg, earliest)[0]


def clean_scope(view: FileSystemView, cfg: CleanConfig, earliest: Instant | None) -> tuple[list[str] | None, str]:
    """`partitions_to_clean` and, for `--explain`, why it scans what it scans."""
    if cfg.policy not in ("KEEP_LATEST_COMMITS", "KEEP_LATEST_BY_HOURS"):
        return None, f"full scan: {cfg.policy} looks at every file group"
    if not cfg.incremental:
        return None, "full scan: hoodie.cleaner.incremental.mode=false"
    if earliest is None:
        return [], "no partition: no commit is retained yet, so nothing is older than it"
    timeline = view.timeline
    assert isinstance(timeline, ActiveTimeline)
    if timeline.completed().actions(Action.CLEAN).last() is None:
        return scope_without_clean(timeline, earliest)
    previous = last_clean_retained(timeline)
    first = timeline.commits().completed().first()
    if previous is None or first is None:
        return None, "full scan: the last clean recorded no earliest retained commit"
    if previous < first.timestamp:
        return None, f"full scan: the last clean's earliest retained commit {previous} was archived"
    if timeline.savepoints():
        return None, "full scan: a savepoint exists (removing one frees files no write touched)"
    deleted = savepoint_deleted_since_last_clean(timeline) if timeline.layout.is_v2 else None
    if deleted is not None:  # Hudi 1.x's CleanPlanner#isAnySavepointDeleted
        return None, f"full scan: savepoint {deleted}, recorded by the last clean, was deleted since"
    # Of those commits, only the ones that superseded or replaced a file version (`superseded_in`) can have
    # made anything cleanable: a commit of new file groups only frees nothing (Hudi's open apache/hudi#18014).
    # The partitions of rollbacks since then too: a rollback that could not delete a failed write's file
    # leaves an orphan there (a write of new file groups only is no longer scanned to find it).
    rolled = partitions_rolled_back(timeline, previous)
    if rolled is None:
        return None, f"full scan: a rollback since {previous} is unreadable"
    touched = partitions_written(timeline, previous, earliest.timestamp,
                                 only=lambda inst, _: set(superseded_in(timeline, inst)))
    scope = sorted(touched | rolled)
    return scope, (f"incremental: {len(scope)} partition(s) where commits in [{previous}, {earliest.timestamp}) "
                   f"superseded or replaced a file version ({len(touched)}), or rollbacks since deleted files "
                   f"({len(rolled)})")


def scope_without_clean(timeline: ActiveTimeline, earliest: Instant) -> tuple[list[str] | None, str]:
    """The partitions to scan while no clean is on the active timeline (by commits or hours, incremental).

    Hudi scans every partition here (CleanPlanner#getPartitionPathsForFullCleaning), so an append-only
    table, whose cleans never delete anything and (with hoodie.write.empty.clean.create.duration.ms=-1,
    Hudi's default) never leave a clean instant, lists the whole table after every commit (hudi#6953).
    pyhudi scans only the partitions where something can have become cleanable:

    * a file version becomes cleanable only when a later commit writes a new version of its file group
      (a base-file write stat with a previous commit: update, merge, small-file top-up; any stat of a
      compaction), replaces its group (a replacecommit's partitionToReplaceFileIds: clustering,
      insert_overwrite, delete_partition), or by a rollback or restore (files of failed writes, the
      cleaner's orphans). A log appended to a slice starts no new slice, so it frees nothing (on layout 2 a
      pending compaction's slice frees the older one only once that compaction completes, as a commit);
    * under KEEP_LATEST_COMMITS / KEEP_LATEST_BY_HOURS a version superseded by a commit at or after the
      earliest commit to retain is still kept (it is what readers at that commit read), so only commits
      before it count. Every commit's metadata names its partitions, so the partitions to scan are exactly
      those these commits name, plus the partitions of the rollbacks on the timeline; none means nothing is
      listed at all;
    * that is the whole history while nothing is archived. Archived commits are covered by archival: with no
      clean on the timeline pyhudi's archival moves a commit out only once the versions it superseded are
      gone (`archival_plan._Planner.clean_bound`), so an archived commit leaves nothing to clean. What that
      does not cover is written in docs/architecture.md: history archived by Hudi, or by pyhudi with its
      cleaner off, while versions it superseded were still there; one clean with
      hoodie.cleaner.incremental.mode=false scans everything;
    * a savepoint (its removal frees files no write touched) or a restore (rollbacks of completed
      commits, and layout 2 drops the rollback instants) make it a full scan; so does an unreadable rollback.

    Savepointed slices, pending compactions and clusterings, MOR log files and the retention policy are
    applied to the scanned partitions exactly as in a full scan; KEEP_LATEST_FILE_VERSIONS and
    hoodie.cleaner.incremental.mode=false never come here (`clean_scope`). Each commit's answer is kept for
    the process (completed instant files never change), so a long-running writer reads each commit once."""
    if timeline.savepoints():
        return None, "full scan: no clean yet and a savepoint exists (removing one frees files no write touched)"
    restores = list(timeline.actions(Action.RESTORE))
    if restores:
        return None, f"full scan: no clean yet and restore {restores[0].timestamp} is on the timeline"
    rolled = partitions_rolled_back(timeline, "")
    if rolled is None:
        return None, "full scan: no clean yet and a rollback is unreadable"
    superseding: set[str] = set()
    for inst in timeline.completed():
        if inst.action in WRITE_ACTIONS and inst.timestamp < earliest.timestamp:
            superseding |= superseded_in(timeline, inst)
    scope = sorted(superseding | rolled)
    return scope, (f"no clean yet: {len(scope)} partition(s) where commits before the earliest retained commit "
                   f"{earliest.timestamp} superseded or replaced a file version ({len(superseding)}) or a rollback "
                   f"deleted files ({len(rolled)})")


_SUPERSEDED_CACHE_MAX = 8192
_superseded: dict[tuple[str, str], frozenset[str]] = {}


def superseded_in(timeline: ActiveTimeline, inst: Instant) -> frozenset[str]:
    """Partitions where completed write `inst` wrote a new version of an existing file group or replaced
    one (`scope_without_clean`); kept per process by table and instant file."""
    key = (timeline.storage.base_uri, inst.file_name)
    found = _superseded.get(key)
    if found is not None:
        return found
    meta = commit_json(timeline, inst)
    compaction = inst.timestamp in timeline.compaction_commits \
        or meta.get("operationType") in ("COMPACT", "LOG_COMPACT")
    out = {str(p) for p in (meta.get("partitionToReplaceFileIds") or {})}
    for part, stats in (meta.get("partitionToWriteStats") or {}).items():
        for stat in stats or []:
            path = str(stat.get("path") or "")
            prev = str(stat.get("prevCommit") or "null")
            if compaction or (prev != "null" and parse_log_file(path.rsplit("/", 1)[-1]) is None):
                out.add(str(part))
                break
    if len(_superseded) >= _SUPERSEDED_CACHE_MAX:
        _superseded.clear()
    _superseded[key] = found = frozenset(out)
    return found
