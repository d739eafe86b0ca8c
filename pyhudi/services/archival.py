"""Timeline archival: move old instants from `.hoodie/` into `.hoodie/archived/` (layout 1).

Hudi's HoodieTimelineArchiver for table version 6. What may go is decided in
:mod:`pyhudi.services.archival_plan`; this module records it and removes it, so that a crash at any
point leaves a table every reader still reads correctly:

1. everything happens under the table lock, so no commit or other archiver interleaves;
2. every state file of the chosen instants becomes a HoodieArchivedMetaEntry record (filled as
   Hudi's MetadataConversionUtils fills it) in Avro data blocks of one *new* archive log file
   `.commits_.archive.<N>_1-0-1` (N = next version; a closed file is never appended to). The file
   appears atomically with its full content (exclusive create of a complete temp file), and is read
   back before anything is deleted;
3. only then are the instants' files deleted from `.hoodie/`, oldest instant first, and for each
   instant the requested and inflight files before the completed one. A crash mid-way therefore
   leaves a timeline whose start has moved forward by whole instants, and never an inflight without
   its completed file (which the next writer would take for a failed write and roll back, deleting
   committed data), nor a `.compaction.requested` without its `.commit` (a "pending" compaction);
4. a re-run finishes instants that are already in the archive but still in `.hoodie/` without
   writing them again, so the archived timeline never holds an instant twice and no instant is ever
   missing from both timelines.

Timeline layout 2 (table versions 8/9) archives as Hudi 1.x's TimelineArchiverV2 does, into the LSM
history `.hoodie/<timeline>/<history>` (`hoodie.archivelog.folder` is ignored there, as in 1.x). The
instants are chosen by `archival_plan.plan_archival_v2`; then, under the table lock:

1. the markers left by the chosen instants are deleted (J:TimelineArchiverV2.deleteAnyLeftOverMarkers,
   the writer's pre-write callback);
2. one history row per instant (J:MetadataConversionUtils.createLSMTimelineInstant: instant time, the
   completion time of its completed file, the completed action, that file's bytes as `metadata` (null
   when empty) and the plan by pending action, see `history_row`) goes into one level-0 file, committed
   by a new manifest and `_version_` (`timeline/history_writer.append_history`, J:LSMTimelineWriter.write).
   The rows are read back before anything is deleted;
3. the requested and inflight files of every chosen instant are deleted first, then the completed files,
   oldest instant first (J:TimelineArchiverV2.deleteArchivedActions: a completed file deleted first would
   leave a "pending" instant that services would act on; ascending order, HUDI-7207, leaves no hole);
4. the history is compacted and cleaned (J:LSMTimelineWriter.compactAndClean), only after the deletes.

A crash before step 2's `_version_` leaves the history as it was (a re-run selects the same instants and
replaces the unlisted file); after it, the instants are in both timelines, which every reader tolerates,
and a re-run recognises them (`ArchivalPlan.leftovers`: same instant time and action in the history) and
only deletes them, so the history never holds a row twice. A crash before step 4 leaves an uncompacted
but valid history, compacted by the next archival.
"""

from __future__ import annotations

import json
import logging
import threading
from dataclasses import dataclass
from typing import Any

from pyhudi.errors import HudiError, TimelineError
from pyhudi.faults import fault_point
from pyhudi.io.column_encoding import pyarrow_codec
from pyhudi.io.log_blocks import encode_avro_records
from pyhudi.io.log_format import BlockType, HeaderKey, build_log_file, encode_block
from pyhudi.model import avro_models as am
from pyhudi.model.instant_time import ms_to_instant, zone
from pyhudi.model.table_config import TableConfig
from pyhudi.services.archival_plan import (
    ARCHIVABLE,
    ArchivalPlan,
    InstantGroup,
    completed_files,
    group_key,
    history_keys,
    load_groups,
    plan_archival,
    plan_archival_v2,
)
from pyhudi.storage import Storage
from pyhudi.timeline.archived import (
    ArchivedTimeline,
    archive_file_name,
    list_archive_files,
    read_archive_bytes,
)
from pyhudi.timeline.history import DataFileName, HistoryInstant, data_file_name, latest_snapshot
from pyhudi.timeline.history_writer import append_history, compact_and_clean
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State
from pyhudi.timeline.timeline import META_DIR, ActiveTimeline
from pyhudi.transaction.lock import LockProvider, LockSettings, ensure_held, table_lock
from pyhudi.writer.config import ArchivalConfig, CleanConfig, CompactionConfig, WriteConfig
from pyhudi.writer.markers import delete_markers

log = logging.getLogger(__name__)
ENTRY_SCHEMA = "HoodieArchivedMetaEntry"
_MAX_VERSION_ATTEMPTS = 50


class ArchivalError(TimelineError):
    """An instant could not be archived; nothing was deleted."""


@dataclass(frozen=True)
class ArchiveResult:
    """One archival run: the instants moved out of `.hoodie/` and the archive file written."""

    archived: tuple[Instant, ...]  # each in its latest state, oldest first
    archive_file: str | None  # relative to the base path; None if every entry was already archived
    records: int  # HoodieArchivedMetaEntry records written
    recovered: tuple[Instant, ...]  # finished for an interrupted run (already in the archive)
    stopped_by: str | None  # why fewer commits than hoodie.keep.min.commits allows were archived


# ---------------------------------------------------------------------------------------- entries
def meta_entry(group: InstantGroup, inst: Instant, data: bytes, local_tz: bool = False,
               mtime_ms: int | None = None) -> dict[str, Any]:
    """The HoodieArchivedMetaEntry of one instant file, as MetadataConversionUtils.createMetaWrapper
    builds it: the action's payload where the file holds one, null otherwise (e.g. an empty
    `.commit.requested`, a rollback's plan states, which the Avro model has no field for)."""
    payload: dict[str, Any] = {}
    action, completed = inst.action, inst.is_completed
    try:
        if not data:
            pass  # createMetaWrapperForEmptyInstant: action and state only
        elif action in (Action.COMMIT, Action.DELTA_COMMIT):
            payload["hoodieCommitMetadata"] = am.archived_commit_metadata(json.loads(data))
        elif action is Action.REPLACE_COMMIT:
            if completed:
                payload["hoodieReplaceCommitMetadata"] = am.archived_commit_metadata(json.loads(data), replace=True)
            elif inst.state is State.INFLIGHT:
                if not data.startswith(am.AVRO_MAGIC):  # clustering may leave an Avro copy of its plan here
                    payload["HoodieInflightReplaceMetadata"] = am.archived_commit_metadata(json.loads(data))
            else:
                payload["hoodieRequestedReplaceMetadata"] = am.read_instant_avro(data, "HoodieRequestedReplaceMetadata")
        elif action is Action.CLEAN:
            payload["hoodieCleanMetadata" if completed else "hoodieCleanerPlan"] = am.read_instant_avro(
                data, "HoodieCleanMetadata" if completed else "HoodieCleanerPlan")
        elif action is Action.ROLLBACK and completed:
            payload["hoodieRollbackMetadata"] = am.read_instant_avro(data, "HoodieRollbackMetadata")
        elif action is Action.SAVEPOINT and completed:
            payload["hoodieSavePointMetadata"] = am.read_instant_avro(data, "HoodieSavepointMetadata")
        elif action in (Action.COMPACTION, Action.LOG_COMPACTION) and inst.state is State.REQUESTED:
            payload["hoodieCompactionPlan"] = am.read_instant_avro(data, "HoodieCompactionPlan")
    except (HudiError, ValueError) as exc:
        raise ArchivalError(
            f"cannot archive {group}: {inst.file_name} is unreadable ({' '.join(str(exc).split())}); nothing "
            "was archived. Fix or remove the file (it is part of the timeline) and archive again") from exc
    transition = ms_to_instant(mtime_ms, zone(local_tz)) if mtime_ms else None
    return am.archived_meta_entry(commit_time=inst.timestamp, action_type=action.value,
                                  action_state=inst.state.name, state_transition_time=transition, **payload)


def _entries(storage: Storage, groups: list[InstantGroup], skip: set[tuple[str, str, str]],
             local_tz: bool) -> list[dict[str, Any]]:
    out = []
    for g in groups:
        for inst, mtime in zip(g.files, g.mtimes_ms or (0,) * len(g.files)):
            if (inst.timestamp, inst.action.value, inst.state.value) in skip:
                continue
            try:
                data = storage.read_bytes(f"{META_DIR}/{inst.file_name}")
            except FileNotFoundError as exc:
                raise ArchivalError(f"cannot archive {g}: {inst.file_name} disappeared while archiving (another "
                                    "archiver without the table lock?); nothing was archived") from exc
            out.append(meta_entry(g, inst, data, local_tz, mtime or None))
    return out


# ---------------------------------------------------------------------------------------- the file
def encode_archive(entries: list[dict[str, Any]], batch: int) -> bytes:
    """A complete archive log: Avro data blocks of at most `batch` records, header SCHEMA only, as
    Hudi's archiver writes them (hoodie.commits.archival.batch)."""
    schema = am.avro_schema_json(ENTRY_SCHEMA)
    blocks = []
    for start in range(0, len(entries), max(1, batch)):
        chunk = entries[start:start + max(1, batch)]
        blocks.append(encode_block(BlockType.AVRO_DATA_BLOCK, {HeaderKey.SCHEMA: schema},
                                   encode_avro_records(chunk, schema)))
    return build_log_file(blocks)


def _write_archive(storage: Storage, folder: str, data: bytes, expected: set[tuple[str, str, str]]) -> str:
    """Create the next archive version with its full content at once, then read it back."""
    storage.makedirs(folder)
    version = max((v for v, _ in list_archive_files(storage, folder)), default=0) + 1
    for _ in range(_MAX_VERSION_ATTEMPTS):
        rel = f"{folder}/{archive_file_name(version)}"
        if storage.create_exclusive(rel, data):
            break
        version += 1  # taken (a concurrent archiver outside our lock, or a leftover): never reuse a file
    else:
        raise ArchivalError(f"could not create a new archive file in {folder} after {_MAX_VERSION_ATTEMPTS} tries")
    found, bad, notes = read_archive_bytes(storage.read_bytes(rel), rel)
    missing = expected - {e.key for e in found}
    if bad or missing:
        raise ArchivalError(f"archive file {rel} does not read back ({notes[:1] or sorted(missing)[:3]}); nothing "
                            "was deleted from the active timeline")
    return rel


def _delete_group(storage: Storage, group: InstantGroup) -> None:
    """Requested and inflight first, the completed file last (see the module docstring)."""
    for inst in sorted(group.files, key=lambda i: i.is_completed):
        storage.delete(f"{META_DIR}/{inst.file_name}")
    delete_markers(storage, group.timestamp)  # Hudi's deleteAnyLeftOverMarkers


# ---------------------------------------------------------------------------------------- layout 2
def history_row(storage: Storage, timeline_dir: str, group: InstantGroup) -> HistoryInstant:
    """The HoodieLSMTimelineInstant of one completed instant, as J:MetadataConversionUtils.
    createLSMTimelineInstant fills it from J:ActiveAction: `metadata` = the completed file's bytes (the one
    with the latest completion time; null when empty); `plan` by the pending action (requested file, else
    inflight): a clean's plan; a replacecommit's or clustering's non-empty `.requested`, replaced by a
    non-empty `.inflight`; a compaction's or log compaction's `.requested`; nothing for other actions."""
    done, completion = completed_files(group)[0]

    def read(inst: Instant) -> bytes:
        try:
            return storage.read_bytes(f"{timeline_dir}/{inst.file_name}")
        except FileNotFoundError as exc:
            raise ArchivalError(f"cannot archive {group}: {inst.file_name} disappeared while archiving (another "
                                "archiver without the table lock?); nothing was archived") from exc

    requested = next((f for f in group.files if f.state is State.REQUESTED), None)
    inflight = next((f for f in group.files if f.state is State.INFLIGHT), None)
    pending = requested or inflight
    plan: bytes | None = None
    if pending is not None and pending.action is Action.CLEAN:
        plan = read(pending)
    elif pending is not None and pending.action in (Action.REPLACE_COMMIT, Action.CLUSTERING):
        plan = (read(requested) if requested else b"") or None
        plan = (read(inflight) if inflight else b"") or plan
    elif requested is not None and requested.action in (Action.COMPACTION, Action.LOG_COMPACTION):
        plan = read(requested)
    return HistoryInstant(group.timestamp, completion, done.action.value, read(done) or None, plan)


def _archive_v2(storage: Storage, table: TableConfig, cfg: ArchivalConfig, clean_cfg: CleanConfig,
                lock: LockSettings | None, compaction_cfg: CompactionConfig | None) -> ArchiveResult | None:
    with table_lock(storage, lock or LockSettings()) as held:
        plan = plan_archival_v2(storage, table, cfg, clean_cfg, compaction_cfg)
        if plan.empty:
            if plan.stopped_by:
                log.info("nothing archived: %s", plan.stopped_by)
            return None
        fault_point("archival.after_plan")
        return _run_v2(storage, table, plan, held)


def _run_v2(storage: Storage, table: TableConfig, plan: ArchivalPlan, held: LockProvider) -> ArchiveResult:
    codec = _history_codec(table)
    leftovers = {id(g) for g in plan.leftovers}
    new = [g for g in plan.groups if id(g) not in leftovers]
    for group in plan.groups:
        delete_markers(storage, group.timestamp)
    rows = [history_row(storage, table.timeline_dir, g) for g in new]
    rel = _write_history(storage, table.history_dir, rows, codec) if rows else None
    if rel:
        log.info("archived %d instants into %s", len(rows), rel)
    fault_point("archival.after_archive_file")
    ensure_held(held)  # see _run: the history alone is harmless, deletions need the lock
    _delete_v2(storage, table.timeline_dir, plan.groups)
    fault_point("archival.after_delete")
    compact_and_clean(storage, table.history_dir, codec=codec)
    if plan.stopped_by:
        log.info("archival: %s", plan.stopped_by)
    return ArchiveResult(
        archived=tuple(g.instant for g in plan.groups), archive_file=rel, records=len(rows),
        recovered=tuple(g.instant for g in plan.leftovers), stopped_by=plan.stopped_by)


def _write_history(storage: Storage, history_dir: str, rows: list[HistoryInstant], codec: str) -> str:
    """Append the batch (compaction waits until the active files are gone), then read its keys back."""
    append_history(storage, history_dir, rows, codec=codec, compact=False)
    first = min(r.instant_time for r in rows)
    missing = {(r.instant_time, r.action) for r in rows} - history_keys(storage, history_dir, first)
    if missing:
        raise ArchivalError(f"the history in {history_dir} does not read back {sorted(missing)[:3]}; nothing was "
                            "deleted from the active timeline")
    return f"{history_dir}/{data_file_name(first, max(r.instant_time for r in rows), 0)}"


def _delete_v2(storage: Storage, timeline_dir: str, groups: list[InstantGroup]) -> None:
    """Every requested and inflight file first, then the completed files oldest instant first (the module
    docstring's step 3)."""
    for group in groups:
        for inst in group.files:
            if not inst.is_completed:
                storage.delete(f"{timeline_dir}/{inst.file_name}")
    fault_point("archival.after_pending_deleted")
    for n, group in enumerate(groups):
        for inst, _ in completed_files(group):
            storage.delete(f"{timeline_dir}/{inst.file_name}")
        if n == 0:
            fault_point("archival.mid_delete")


# Parquet codecs pyarrow writes as parquet-mr reads them (pyarrow's lz4 is LZ4_RAW, which Hudi's parquet-mr
# versions may not read: such a table gets gzip, like every other value).
_HISTORY_CODECS = frozenset({"gzip", "snappy", "zstd", "uncompressed"})


def _history_codec(table: TableConfig) -> str:
    """hoodie.parquet.compression.codec (as pyarrow names it) when the table records one of _HISTORY_CODECS,
    else Hudi's default gzip."""
    codec = (table.raw.get("hoodie.parquet.compression.codec") or "").strip().lower()
    return pyarrow_codec(codec if codec in _HISTORY_CODECS else "gzip")


def _history_leftovers(storage: Storage, table: TableConfig, groups: list[InstantGroup]) -> bool:
    """Whether an interrupted run left archived instants on the active timeline: only history files whose
    name range reaches the oldest active instant that could be archived are read (normally none)."""
    done = [g for g in groups if g.completed and g.action in ARCHIVABLE]
    if not done:
        return False
    first = done[0].timestamp
    names = [DataFileName.parse(f.name) for f in latest_snapshot(storage, table.history_dir).files]
    if not any(n is None or n.max_instant >= first for n in names):
        return False
    keys = history_keys(storage, table.history_dir, first)
    return any(group_key(g) in keys for g in done)


# ---------------------------------------------------------------------------------------- entry points
def archive(storage: Storage, table: TableConfig, archival_cfg: ArchivalConfig, clean_cfg: CleanConfig,
            lock: LockSettings | None = None, compaction_cfg: CompactionConfig | None = None) -> ArchiveResult | None:
    """Archive what the rules allow; None when there is nothing to do (a re-run is a no-op)."""
    _forget_check(storage.base_uri)
    try:
        return _archive(storage, table, archival_cfg, clean_cfg, lock, compaction_cfg)
    finally:
        _forget_check(storage.base_uri)  # a check made meanwhile (another thread) saw a run in progress


def _archive(storage: Storage, table: TableConfig, archival_cfg: ArchivalConfig, clean_cfg: CleanConfig,
             lock: LockSettings | None, compaction_cfg: CompactionConfig | None) -> ArchiveResult | None:
    if table.layout_version >= 2:
        return _archive_v2(storage, table, archival_cfg, clean_cfg, lock, compaction_cfg)
    with table_lock(storage, lock or LockSettings()) as held:
        archived = ArchivedTimeline.load(storage, table.archive_folder)
        keys = archived.keys()
        groups = load_groups(storage)
        plan = plan_archival(storage, table, archival_cfg, clean_cfg, compaction_cfg, groups=groups,
                             archived_keys=keys)
        if plan.empty:
            if plan.stopped_by:
                log.info("nothing archived: %s", plan.stopped_by)
            return None
        fault_point("archival.after_plan")
        return _run(storage, table, archival_cfg, plan, keys, held)


def _run(storage: Storage, table: TableConfig, cfg: ArchivalConfig, plan: ArchivalPlan,
         keys: set[tuple[str, str, str]], held: LockProvider) -> ArchiveResult:
    entries = _entries(storage, plan.groups, keys, table.local_timezone)
    rel: str | None = None
    if entries:
        expected = {(e["commitTime"], e["actionType"], State[e["actionState"]].value) for e in entries}
        rel = _write_archive(storage, f"{META_DIR}/{table.archive_folder}", encode_archive(entries, cfg.batch),
                             expected)
        log.info("archived %d instants (%d records) to %s", len(plan.groups), len(entries), rel)
    fault_point("archival.after_archive_file")
    # The deletions below change the active timeline: a lease lost to a pause (or taken over) must not make
    # them. The archive file alone is harmless: the next run finishes a run that stopped here (leftovers).
    ensure_held(held)
    for n, group in enumerate(plan.groups):
        _delete_group(storage, group)
        if n == 0:
            fault_point("archival.mid_delete")
    if plan.stopped_by:
        log.info("archival: %s", plan.stopped_by)
    return ArchiveResult(
        archived=tuple(g.instant for g in plan.groups), archive_file=rel, records=len(entries),
        recovered=tuple(g.instant for g in plan.leftovers), stopped_by=plan.stopped_by)


def dry_run(storage: Storage, table: TableConfig, archival_cfg: ArchivalConfig, clean_cfg: CleanConfig,
            compaction_cfg: CompactionConfig | None = None) -> ArchivalPlan:
    """What `archive` would move now, and why it would stop there; changes nothing."""
    if table.layout_version >= 2:
        return plan_archival_v2(storage, table, archival_cfg, clean_cfg, compaction_cfg)
    archived = ArchivedTimeline.load(storage, table.archive_folder)
    return plan_archival(storage, table, archival_cfg, clean_cfg, compaction_cfg, archived_keys=archived.keys())


def archival_due(storage: Storage, table: TableConfig, cfg: ArchivalConfig,
                 timeline: ActiveTimeline | None = None) -> bool:
    """Cheap check before taking the lock after every commit: more completed commits than
    hoodie.keep.max.commits, or active instants left behind by an interrupted run (they are then in the
    archive too: the next run always finishes what the previous one left). `timeline`: the writer's
    timeline as its commit left it (`ActiveTimeline.with_completed`), counted instead of listing `.hoodie`.

    Hudi's archiver checks only the count. The leftovers check reads the archive, so it runs once per table
    and process until an instant file disappears from the active timeline or this process archives
    (`_unchanged_since_check`): only deletions make leftovers that the count does not show."""
    groups = load_groups(storage, timeline)
    commits = sum(1 for g in groups if g.completed and g.action in WRITE_ACTIONS)
    if commits > cfg.max_commits:
        return True
    if not groups:
        return False
    names = frozenset(f.file_name for g in groups for f in g.files)
    if _unchanged_since_check(storage.base_uri, names):
        return False
    found = _history_leftovers(storage, table, groups) if table.layout_version >= 2 else \
        _archive_leftovers(storage, table, groups)
    if not found:
        with _checked_lock:
            _checked[storage.base_uri] = names
    return found


def _archive_leftovers(storage: Storage, table: TableConfig, groups: list[InstantGroup]) -> bool:
    """Layout 1: the oldest active instant's files are all in the newest archive file."""
    folder = f"{META_DIR}/{table.archive_folder}"
    files = list_archive_files(storage, folder)
    if not files:
        return False
    keys = _newest_archive_keys(storage, f"{folder}/{files[-1][1]}")
    return all((f.timestamp, f.action.value, f.state.value) in keys for f in groups[0].files)


# Per table (base URI): the active timeline's instant files when the leftovers check last found none. An
# interrupted run leaves leftovers either after deleting some of its instants' files (a file of that set is
# then gone) or before deleting any, with the commits still over hoodie.keep.max.commits (due by the count),
# unless that run itself was finishing leftovers or was started by hand with smaller keep limits: a crash on
# top of a crash, whose leftovers then wait for the next archival the count triggers (readers take an instant
# found in both timelines once).
_checked: dict[str, frozenset[str]] = {}
_checked_lock = threading.Lock()


def _unchanged_since_check(uri: str, names: frozenset[str]) -> bool:
    with _checked_lock:
        seen = _checked.get(uri)
    return seen is not None and seen <= names


def _forget_check(uri: str) -> None:
    """This process archives the table: the next check reads the archive again."""
    with _checked_lock:
        _checked.pop(uri, None)


_keys_cache: dict[str, tuple[int, frozenset[tuple[str, str, str]]]] = {}


def _newest_archive_keys(storage: Storage, rel: str) -> frozenset[tuple[str, str, str]]:
    """Keys of one archive file, decoded once per process (archive files never change once written)."""
    uri = storage.uri(rel)
    try:
        size = storage.size(rel)
        cached = _keys_cache.get(uri)
        if cached is None or cached[0] != size:
            found, _, _ = read_archive_bytes(storage.read_bytes(rel))
            cached = (size, frozenset(e.key for e in found))
            if len(_keys_cache) >= 16:  # only each table's newest file is ever asked for
                _keys_cache.clear()
            _keys_cache[uri] = cached
    except FileNotFoundError:
        return frozenset()
    return cached[1]


_queued: set[str] = set()
_queued_lock = threading.Lock()


def archive_after_commit(storage: Storage, cfg: WriteConfig, timeline: ActiveTimeline | None = None) -> None:
    """The writer's automatic archival (hoodie.archive.automatic, .async), after the cleaner. `timeline`:
    see `archival_due` (a clean adds no commit, so the timeline the writer's commit left still counts).

    The commit is already durable here, so a failed archival is logged, not raised: the table is
    consistent at every step and the next commit archives again.
    """
    if not cfg.archival.automatic or not archival_due(storage, cfg.table, cfg.archival, timeline):
        return

    def run() -> ArchiveResult | None:
        try:
            return archive(storage, cfg.table, cfg.archival, cfg.clean, cfg.lock, cfg.compaction)
        except (HudiError, OSError) as exc:
            log.warning("archival of %s failed (the table is unaffected; the next commit retries): %s",
                        storage.base_uri, exc)
            return None

    if not cfg.archival.run_async:
        run()
        return
    from pyhudi.services import background

    with _queued_lock:
        if storage.base_uri in _queued:
            return  # one queued archival per table is enough: it sees every commit made before it runs
        _queued.add(storage.base_uri)

    def job() -> ArchiveResult | None:
        with _queued_lock:
            _queued.discard(storage.base_uri)
        return run()

    if background.submit(storage.base_uri, "archival", job) is None:
        with _queued_lock:  # one is running (it started before this commit); the next commit queues again
            _queued.discard(storage.base_uri)
