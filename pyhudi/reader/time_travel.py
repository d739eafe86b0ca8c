"""Honest time travel: refuse an instant whose files the cleaner already deleted.

A listing alone cannot tell a cleaned version from one that never existed:
a reader that trusts it silently returns the wrong rows (hudi-rs does). The
commits' write stats can: from them we know, for each file group live at
instant X, the base file and log files a reader at X needs. If any is gone,
reading X fails and the error names the earliest instant still readable.

Once the timeline is archived, the write stats of the oldest commits live in
`.hoodie/archived/` (HoodieArchivedMetaEntry records keep them): a file group
last written by an archived commit is still needed by a read at a later,
active instant, so those stats are read too. An instant older than the active
timeline is refused outright: the archived commits are all older than the
cleaner's retention (hoodie.keep.min.commits > hoodie.cleaner.commits.retained).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta

from pyhudi.errors import InstantNotFoundError, InvalidConfigError
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.file_names import BASE_FILE_EXTENSIONS
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant
from pyhudi.timeline.layout import layout_of
from pyhudi.timeline.timeline import ActiveTimeline

#: (instant, metadata) of completed writes that are only in the archived timeline.
ArchivedWrites = Sequence[tuple[Instant, CommitMetadata]]
#: Which partitions a read selects (its partition filter); None: every partition.
PartitionScope = Callable[[str], bool] | None
#: Whether a file (relative path) exists; None: ask the storage (one request per file).
Exists = Callable[[str], bool] | None

_DATE_TIME = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(\.\d{3})?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DIGITS17 = re.compile(r"\d{17}")
_DIGITS14 = re.compile(r"\d{14}")
_QUERY_FORMATS = "yyyyMMddHHmmssSSS, yyyyMMddHHmmss, 'yyyy-MM-dd HH:mm:ss[.SSS]' or yyyy-MM-dd"


def format_query_instant(text: str) -> str:
    """`as.of.instant` as the inclusive 17-digit bound Hudi 0.14 compares instants with
    (`HoodieSqlCommonUtils.formatQueryInstant`), so a time travel returns the rows Hudi returns.

    * `yyyy-MM-dd HH:mm:ss.SSS`: that millisecond; `yyyy-MM-dd HH:mm:ss`: the END of that second (Hudi
      appends its DEFAULT_MILLIS_EXT "999"), so commits made during that second are included;
    * `yyyyMMddHHmmssSSS`: as given;
    * `yyyyMMddHHmmss`: Hudi keeps the 14 digits and compares strings, so every 17-digit instant of that
      second sorts after it: the bound is the last millisecond BEFORE that second;
    * `yyyy-MM-dd`: the first millisecond of that day.

    Anything else (including an empty value) is refused, as Hudi refuses it.
    """
    raw = str(text)
    parsed = _parse_query_instant(raw)
    if parsed is None:
        raise InvalidConfigError(
            f"as.of.instant={text!r} is not a supported instant; use {_QUERY_FORMATS} "
            "(e.g. 20240418173213674 or '2024-04-18 17:32:13')")
    return parsed


def _parse_query_instant(raw: str) -> str | None:
    try:
        if _DATE_TIME.fullmatch(raw):
            with_millis = raw if len(raw) == 23 else raw + ".999"
            return _stamp(datetime.strptime(with_millis, "%Y-%m-%d %H:%M:%S.%f"))
        if _DATE.fullmatch(raw):
            return _stamp(datetime.strptime(raw, "%Y-%m-%d"))
        if _DIGITS17.fullmatch(raw):
            datetime.strptime(raw[:14], "%Y%m%d%H%M%S")
            return raw
        if _DIGITS14.fullmatch(raw):
            if set(raw) == {"0"}:
                return "0" * 17  # Hudi's "before everything" sentinel
            return _stamp(datetime.strptime(raw, "%Y%m%d%H%M%S") - timedelta(milliseconds=1))
    except ValueError:
        return None
    return None


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M%S") + f"{moment.microsecond // 1000:03d}"


def _writes(timeline: ActiveTimeline, archived: ArchivedWrites,
            as_of: str) -> Iterable[tuple[Instant, CommitMetadata]]:
    """Completed writes at or before `as_of`, oldest first: archived ones, then the active timeline's."""
    active = {i.timestamp for i in timeline.completed()}
    for inst, meta in archived:
        if inst.timestamp <= as_of and inst.timestamp not in active:
            yield inst, meta
    for inst in timeline.completed():
        if inst.action in WRITE_ACTIONS and inst.timestamp <= as_of:
            yield inst, timeline.commit_metadata(inst)


def needed_files(timeline: ActiveTimeline, as_of: str, archived: ArchivedWrites = (),
                 scope: PartitionScope = None) -> set[str]:
    """Paths (relative) a snapshot at `as_of` reads, from the write stats of commits at or before it;
    with `scope`, only those of the partitions it accepts."""
    base_of: dict[tuple[str, str], tuple[str, str]] = {}  # group -> (base instant, base path)
    logs_of: dict[tuple[str, str], list[tuple[str, str]]] = {}  # group -> [(slice base instant, log path)]
    replaced: set[tuple[str, str]] = set()
    for inst, meta in _writes(timeline, archived, as_of):
        for p, ids in (meta.partition_to_replace_file_ids or {}).items():
            replaced.update((p, f) for f in ids)
        for s in meta.all_stats():
            if not s.path:
                continue
            key = (s.partition_path or "", s.file_id)
            if scope is not None and not scope(key[0]):
                continue
            if s.is_delta:
                logs_of.setdefault(key, []).append((s.prev_commit, s.path))
            elif s.path.endswith(BASE_FILE_EXTENSIONS):
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


def missing_files(storage: Storage, timeline: ActiveTimeline, as_of: str, archived: ArchivedWrites = (),
                  scope: PartitionScope = None, exists: Exists = None) -> list[str]:
    found = exists or storage.exists
    return sorted(p for p in needed_files(timeline, as_of, archived, scope) if not found(p))


def check_readable(storage: Storage, timeline: ActiveTimeline, as_of: str, scope: PartitionScope = None,
                   exists: Exists = None) -> None:
    """Raise InstantNotFoundError when a read as of `as_of` would silently miss cleaned files. With
    `scope` (the read's partition filter), only the selected partitions' files are checked: a read
    of partition p as of X is exact when p's files at X exist, whatever the cleaner did elsewhere, and
    a filtered time travel then costs requests for what it reads, not for the whole table. `exists`
    answers from a listing the read makes anyway (the file-system view's) instead of a request per file."""
    writes = [i for i in timeline.completed() if i.action in WRITE_ACTIONS]
    first = writes[0].timestamp if writes else None
    archived_any = _archived(storage)
    # A pending clean counts: an interrupted one may already have deleted part of its plan.
    cleaned = bool(timeline.actions(Action.CLEAN)) or archived_any
    if not cleaned:
        return  # no clean ever started and nothing was archived: every version is still on disk
    archived = archived_writes(storage) if archived_any else []
    if first is not None and as_of < first and archived_any:
        raise _error(storage, timeline, as_of, writes, "it is older than the active timeline (archived)", archived,
                     scope, exists)
    missing = missing_files(storage, timeline, as_of, archived, scope, exists)
    if missing:
        raise _error(storage, timeline, as_of, writes, f"the cleaner deleted {len(missing)} file(s) it needs, "
                     f"e.g. {missing[0]}", archived, scope, exists)


def archived_writes(storage: Storage) -> list[tuple[Instant, CommitMetadata]]:
    """Completed writes of the archived timeline that carry their metadata, oldest first."""
    from pyhudi.timeline.archived import ArchivedTimeline

    layout = layout_of(storage)
    if layout.is_v2:
        return history_writes(storage, layout.history_dir)

    arch = ArchivedTimeline.load(storage)
    out = []
    for inst in arch.completed_writes():
        meta = arch.commit_metadata(inst)
        if meta is not None:
            out.append((inst, meta))
    return out


def history_writes(storage: Storage, history_dir: str, start: str | None = None,
                   end: str | None = None) -> list[tuple[Instant, CommitMetadata]]:
    """Completed writes of a layout-2 table's LSM history, with their metadata (Avro in 1.x, JSON for
    instants carried over by the upgrade from version 6), oldest first; `start`/`end` bound the
    requested times (inclusive)."""
    from pyhudi.model.commit_avro import commit_json_bytes
    from pyhudi.timeline.history import read_history

    out = []
    for h in read_history(storage, history_dir, start=start, end=end):
        try:
            action = Action(h.action)
        except ValueError:
            continue
        if action in WRITE_ACTIONS and h.metadata:
            where = f"{history_dir} ({h.instant_time}.{h.action})"
            meta = CommitMetadata.from_bytes(commit_json_bytes(h.metadata, where), where)
            out.append((Instant(h.instant_time, action, completion=h.completion_time), meta))
    return out


def _archived(storage: Storage) -> bool:
    from pyhudi.timeline.archived import archive_folder, list_archive_files

    layout = layout_of(storage)
    if layout.is_v2:
        from pyhudi.timeline.history import latest_snapshot

        return bool(latest_snapshot(storage, layout.history_dir).files)

    return bool(list_archive_files(storage, archive_folder(storage)))


def _error(storage: Storage, timeline: ActiveTimeline, as_of: str, writes: list[Instant],
           why: str, archived: ArchivedWrites = (), scope: PartitionScope = None,
           exists: Exists = None) -> InstantNotFoundError:
    earliest = next((w.timestamp for w in writes if w.timestamp > as_of
                     and not missing_files(storage, timeline, w.timestamp, archived, scope, exists)), None)
    hint = f"the earliest instant still readable is {earliest}" if earliest else "no earlier instant is readable"
    return InstantNotFoundError(
        f"cannot read {storage.base_uri} as of {as_of}: {why}; {hint}. Keep more history with "
        "hoodie.cleaner.commits.retained (or .hours.retained) if you need to go further back")
