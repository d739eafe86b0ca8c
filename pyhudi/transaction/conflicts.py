"""Commit-time conflict detection: no acknowledged write is ever silently lost.

Checked under the table lock, just before an instant completes:

* A data write W fails (and is rolled back) if, since it started, a file group it touched was
  replaced (clustering, insert overwrite), compacted past the slice W wrote to, or is planned
  for a compaction that will not include W's files; and, under optimistic concurrency control,
  if another completed write touched one of its file groups.
* A clustering fails (and is rolled back) if any input file group no longer has exactly the
  slice it planned to rewrite: someone wrote to it meanwhile, and replacing it would drop that write.

"Since it started" means completed instants that were not completed when the write loaded its
timeline, so the rule follows completion order, not instant times.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import CommitConflictError
from pyhudi.model.table_config import TableConfig
from pyhudi.model.write_stat import WriteStat
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view, pending_compactions


@dataclass
class Footprint:
    """Existing file groups a write changed: (partition, fileId) -> base instant it built on."""

    merged: dict[tuple[str, str], str] = field(default_factory=dict)  # new base versions of existing groups
    appended: dict[tuple[str, str], str] = field(default_factory=dict)  # log files, by the slice they join

    @property
    def groups(self) -> set[tuple[str, str]]:
        return set(self.merged) | set(self.appended)


def footprint(stats: Iterable[WriteStat]) -> Footprint:
    fp = Footprint()
    for s in stats:
        key = (s.partition_path or "", s.file_id)
        if s.is_delta:
            fp.appended[key] = s.prev_commit
        elif s.prev_commit not in ("", "null"):
            fp.merged[key] = s.prev_commit
    return fp


def _conflict(own: str, groups: set[tuple[str, str]], other: Instant, why: str) -> CommitConflictError:
    shown = ", ".join(f"{fid} ({p or 'table root'})" for p, fid in sorted(groups)[:5])
    return CommitConflictError(
        f"instant {own} conflicts with {other.action.value} {other.timestamp}: {why} file group(s) {shown}. "
        f"{own} was rolled back and nothing of it is visible; retry the write")


def check_write(timeline: ActiveTimeline, own: str, known_completed: frozenset[str], fp: Footprint,
                occ: bool) -> None:
    touched = fp.groups
    if not touched:
        return
    for inst in timeline.completed().actions(*WRITE_ACTIONS):
        if inst.timestamp in known_completed or inst.timestamp == own:
            continue
        meta = timeline.commit_metadata(inst)
        if inst.action is Action.REPLACE_COMMIT:
            replaced = {(p, f) for p, ids in (meta.partition_to_replace_file_ids or {}).items() for f in ids}
            if replaced & touched:
                raise _conflict(own, replaced & touched, inst, "it replaced")
        written = meta.file_ids_written()
        if timeline.is_compaction_commit(inst):
            hit = {g for g in written & touched if fp.appended.get(g, fp.merged.get(g, "")) < inst.timestamp}
            if hit:
                raise _conflict(own, hit, inst, "it compacted")
        elif occ and inst.action in WRITE_ACTIONS and written & touched:
            raise _conflict(own, written & touched, inst, "it also wrote")
    for pc in pending_compactions(timeline):
        key = (pc.partition, pc.file_id)
        base = fp.appended.get(key, fp.merged.get(key))
        if base is not None and base < pc.instant:
            pending = Instant(pc.instant, Action.COMPACTION)
            raise _conflict(own, {key}, pending, "it plans to compact, without this write's files,")


def check_clustering(storage: Storage, table: TableConfig, timeline: ActiveTimeline, instant: str,
                     plan: dict[str, Any]) -> None:
    """Every input group must still have exactly the planned slice (no write slipped in)."""
    view = build_view(storage, table, timeline)
    replaced = view.replaced_file_ids()
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
            if (part, fid) in replaced or now is None:
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

