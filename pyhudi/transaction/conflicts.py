"""Commit-time conflict detection: no acknowledged write is ever silently lost.

Checked under the table lock, just before an instant completes, in every concurrency mode
(single writer included: two processes writing one table by mistake must not lose a write):

* A data write W fails (and is rolled back) if, since it started, a file group it touched was
  replaced (clustering, insert overwrite), compacted past the slice W wrote to, or is planned
  for a compaction that will not include W's files; if another write that completed meanwhile
  touched one of its file groups (Hudi's SimpleConcurrentFileWritesConflictResolutionStrategy:
  overlapping file groups), unless W's new version was built on that write's version; or if a
  clustering planned after W started (pending replacecommit with a later instant time, as Hudi's
  getCandidateInstants counts them) takes one of its file groups, since that plan cannot hold
  W's data. With a BUCKET index, W also fails if a write that completed meanwhile created a file group
  for a bucket W created one for (two groups for one bucket break the index and duplicate keys).
* A clustering fails (and is rolled back) if any input file group no longer has exactly the
  slice it planned to rewrite: someone wrote to it meanwhile, and replacing it would drop that write.

"Since it started" means completed instants that were not completed when the write loaded its
timeline, or whose instant time is after W's own (so the rule holds whichever clock or
completion order the other writer had).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import CommitConflictError
from pyhudi.index.bucket import bucket_of_file_id
from pyhudi.model.table_config import TableConfig
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view, pending_clustering, pending_compactions


@dataclass
class Footprint:
    """Existing file groups a write changed: (partition, fileId) -> base instant it built on."""

    merged: dict[tuple[str, str], str] = field(default_factory=dict)  # new base versions of existing groups
    appended: dict[tuple[str, str], str] = field(default_factory=dict)  # log files, by the slice they join
    # BUCKET index: (partition, bucket) -> file id of each bucket file group this write wrote. Two writers
    # creating one bucket write two file groups with different ids, so only the bucket tells them apart
    # (Hudi's BucketIndexConcurrentFileWritesConflictResolutionStrategy compares partition and bucket id).
    buckets: dict[tuple[str, int], str] = field(default_factory=dict)

    @property
    def groups(self) -> set[tuple[str, str]]:
        return set(self.merged) | set(self.appended)

    def bucket_clashes(self, written: set[tuple[str, str]]) -> set[tuple[str, str]]:
        """Groups of `written` (another commit's) of a bucket this write wrote under another file id."""
        out: set[tuple[str, str]] = set()
        for part, fid in written:
            b = bucket_of_file_id(fid)
            own = self.buckets.get((part, b)) if b is not None else None
            if own is not None and own != fid:
                out.add((part, fid))
        return out

    def base(self, group: tuple[str, str]) -> str:
        """The instant of the version this write built on in `group` ("" for a new group)."""
        return self.appended.get(group, self.merged.get(group, ""))


def footprint(stats: Iterable[WriteStat], bucket_index: bool = False) -> Footprint:
    fp = Footprint()
    for s in stats:
        key = (s.partition_path or "", s.file_id)
        if s.is_delta:
            fp.appended[key] = s.prev_commit
        elif s.prev_commit not in ("", "null"):
            fp.merged[key] = s.prev_commit
        if bucket_index and (b := bucket_of_file_id(s.file_id)) is not None:
            fp.buckets[(key[0], b)] = s.file_id
    return fp


def _conflict(own: str, groups: set[tuple[str, str]], other: Instant, why: str) -> CommitConflictError:
    shown = _shown(groups)
    return CommitConflictError(
        f"instant {own} conflicts with {other.action.value} {other.timestamp}: {why} file group(s) {shown}. "
        f"{own} was rolled back and nothing of it is visible; retry the write")


def _shown(groups: set[tuple[str, str]]) -> str:
    return ", ".join(f"{fid} ({p or 'table root'})" for p, fid in sorted(groups)[:5])


def _candidates(timeline: ActiveTimeline, own: str, known_completed: frozenset[str]) -> list[Instant]:
    """Completed writes W must be checked against: unknown to W when it started, or started after W."""
    return [i for i in timeline.completed().actions(*WRITE_ACTIONS)
            if i.timestamp != own and (i.timestamp not in known_completed or i.timestamp > own)]


def check_write(timeline: ActiveTimeline, own: str, known_completed: frozenset[str], fp: Footprint,
                known_instants: frozenset[str] | None = None) -> None:
    """`known_instants`: every instant (any state) on the timeline W loaded when it started; a clustering
    plan not among them was made while W was in flight, whatever its time (W takes its own instant only
    after tagging). Without it, plans later than W's own instant count, as Hudi's getCandidateInstants."""
    touched = fp.groups
    if not touched and not fp.buckets:
        return
    _check_bases_live(timeline, own, fp)
    for inst in _candidates(timeline, own, known_completed):
        meta = timeline.commit_metadata(inst)
        clashes = fp.bucket_clashes(meta.file_ids_written())
        if clashes:
            raise _conflict(own, clashes, inst, "it created a file group for the same bucket as this write:")
        if inst.action is Action.REPLACE_COMMIT:
            replaced = {(p, f) for p, ids in (meta.partition_to_replace_file_ids or {}).items() for f in ids}
            if replaced & touched:
                raise _conflict(own, replaced & touched, inst, "it replaced")
        # Groups W built on a version older than `inst`: W's new version would hide what `inst` wrote.
        stale = {g for g in meta.file_ids_written() & touched if fp.base(g) < inst.timestamp}
        if not stale:
            continue
        if timeline.is_compaction_commit(inst):
            raise _conflict(own, stale, inst, "it compacted")
        raise _conflict(own, stale, inst, "it also wrote")
    for pc in pending_compactions(timeline):
        key = (pc.partition, pc.file_id)
        base = fp.appended.get(key, fp.merged.get(key))
        if base is not None and base < pc.instant:
            pending = Instant(pc.instant, Action.COMPACTION)
            raise _conflict(own, {key}, pending, "it plans to compact, without this write's files,")
    planned = {g: ts for g, ts in pending_clustering(timeline).items()
               if g in touched and (ts > own or (known_instants is not None and ts not in known_instants))}
    if planned:
        first = min(planned.values())
        raise _conflict(own, {g for g, ts in planned.items() if ts == first}, Instant(first, Action.REPLACE_COMMIT),
                        "it was planned while this write was in flight and cannot hold its data; it clusters")


def _check_bases_live(timeline: ActiveTimeline, own: str, fp: Footprint) -> None:
    """A version W built on must still be committed: a rollback or restore that removed it while W was in
    flight would be undone by W's new version, which carries the rolled-back rows (Hudi refuses such a
    rollback while a later write is pending; W may have tagged before its instant existed). A rollback
    removes its target's instant files; an instant older than the active timeline was archived instead."""
    present = {i.timestamp for i in timeline.instants}  # a pending compaction is the base of logs written meanwhile
    # The active write timeline's start: Hudi 1.x's archival leaves indexing instants, savepoints, restores
    # and pending cleans in front of archived commits (FileSystemView._first_active counts the same way).
    start = timeline.write_timeline().first()
    first = start.timestamp if start else ""
    gone = {g for g in fp.groups if (b := fp.base(g)) not in ("", "null", own) and b >= first and b not in present}
    if gone:
        g = min(gone)
        raise CommitConflictError(
            f"instant {own} conflicts with a rollback or restore: the version {fp.base(g)} of file group(s) "
            f"{_shown(gone)} it built on was rolled "
            f"back while it was in flight. {own} was rolled back and nothing of it is visible; retry the write")


def check_clustering(storage: Storage, table: TableConfig, timeline: ActiveTimeline, instant: str,
                     plan: dict[str, Any]) -> None:
    """Every input group must still have exactly the planned slice (no write slipped in)."""
    view = build_view(storage, table, timeline)
    by_partition: dict[str, dict[str, object]] = {}
    groups = plan.get("inputGroups") or []
    assert isinstance(groups, list)
    for group in groups:
        for sl in group.get("slices") or []:
            part = str(sl.get("partitionPath") or "")
            if part not in by_partition:
                by_partition[part] = {s.file_id: s for s in view.latest_file_slices(part)}
            fid = str(sl["fileId"])
            now = by_partition[part].get(fid)
            planned_base = _name(str(sl.get("dataFilePath") or ""))
            planned_logs = sorted(_name(str(p)) for p in sl.get("deltaFilePaths") or [])
            if fid in view.replaced_in(part) or now is None:
                raise CommitConflictError(
                    f"clustering {instant}: file group {fid} ({part or 'table root'}) was replaced meanwhile; "
                    "the clustering was rolled back")
            base_name = now.base_file.name if now.base_file else ""  # type: ignore[attr-defined]
            logs = sorted(lf.name for lf in now.log_files)  # type: ignore[attr-defined]
            if base_name != planned_base or logs != planned_logs:
                raise CommitConflictError(
                    f"clustering {instant}: file group {fid} ({part or 'table root'}) was written after the "
                    "clustering was scheduled; committing would drop that write, so the clustering was rolled "
                    "back (the next plan will include the new data)")


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]

