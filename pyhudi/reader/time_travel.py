"""Honest time travel: refuse an instant whose files the cleaner already deleted.

A listing alone cannot tell a cleaned version from one that never existed:
a reader that trusts it silently returns the wrong rows (hudi-rs does). The
commits' write stats can: from them we know, for each file group live at
instant X, the base file and log files a reader at X needs. If any is gone,
reading X fails and the error names the earliest instant still readable.
"""

from __future__ import annotations

from pyhudi.errors import InstantNotFoundError
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline


def _needed_files(timeline: ActiveTimeline, as_of: str) -> set[str]:
    """Paths (relative) a snapshot at `as_of` reads, from the write stats of commits at or before it."""
    base_of: dict[tuple[str, str], tuple[str, str]] = {}  # group -> (base instant, base path)
    logs_of: dict[tuple[str, str], list[tuple[str, str]]] = {}  # group -> [(slice base instant, log path)]
    replaced: set[tuple[str, str]] = set()
    for inst in timeline.completed():
        if inst.action not in WRITE_ACTIONS or inst.timestamp > as_of:
            continue
        meta = timeline.commit_metadata(inst)
        for p, ids in (meta.partition_to_replace_file_ids or {}).items():
            replaced.update((p, f) for f in ids)
        for s in meta.all_stats():
            if not s.path:
                continue
            key = (s.partition_path or "", s.file_id)
            if s.is_delta:
                logs_of.setdefault(key, []).append((s.prev_commit, s.path))
            elif s.path.endswith(".parquet"):
                base_of[key] = (inst.timestamp, s.path)
    needed: set[str] = set()
    for key in set(base_of) | set(logs_of):
        if key in replaced:
            continue
        base = base_of.get(key)
        if base is not None:
            needed.add(base[1])
        floor = base[0] if base else ""
        needed.update(path for slice_base, path in logs_of.get(key, []) if slice_base >= floor)
    return needed


def missing_files(storage: Storage, timeline: ActiveTimeline, as_of: str) -> list[str]:
    return sorted(p for p in _needed_files(timeline, as_of) if not storage.exists(p))


def check_readable(storage: Storage, timeline: ActiveTimeline, as_of: str) -> None:
    """Raise InstantNotFoundError when a read as of `as_of` would silently miss cleaned files."""
    writes = [i for i in timeline.completed() if i.action in WRITE_ACTIONS]
    first = writes[0].timestamp if writes else None
    # A pending clean counts: an interrupted one may already have deleted part of its plan.
    cleaned = bool(timeline.actions(Action.CLEAN)) or _archived(storage)
    if not cleaned:
        return  # no clean ever started and nothing was archived: every version is still on disk
    if first is not None and as_of < first and _archived(storage):
        raise _error(storage, timeline, as_of, writes, "it is older than the active timeline (archived)")
    missing = missing_files(storage, timeline, as_of)
    if missing:
        raise _error(storage, timeline, as_of, writes, f"the cleaner deleted {len(missing)} file(s) it needs, "
                     f"e.g. {missing[0]}")


def _archived(storage: Storage) -> bool:
    return any(not i.is_dir for i in storage.list_dir(".hoodie/archived"))


def _error(storage: Storage, timeline: ActiveTimeline, as_of: str, writes: list[Instant],
           why: str) -> InstantNotFoundError:
    earliest = next((w.timestamp for w in writes if w.timestamp > as_of
                     and not missing_files(storage, timeline, w.timestamp)), None)
    hint = f"the earliest instant still readable is {earliest}" if earliest else "no earlier instant is readable"
    return InstantNotFoundError(
        f"cannot read {storage.base_uri} as of {as_of}: {why}; {hint}. Keep more history with "
        "hoodie.cleaner.commits.retained (or .hours.retained) if you need to go further back")
