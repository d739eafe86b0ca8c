"""The archived timeline: instants moved out of `.hoodie/` into `.hoodie/archived/` log files.

Layout 1 (table version 6) archives are Hudi log files named `.commits_.archive.<N>_<writeToken>`
whose Avro data blocks hold `HoodieArchivedMetaEntry` records, one per instant *file* (requested,
inflight and completed states each get a record). The same reader serves archives written by
pyhudi and by Apache Hudi 0.14/0.15: every block is decoded with the schema in its own SCHEMA
header, so fields another version added or dropped do not matter.

Reading is deliberately forgiving, because an archive is history, not something a query needs:

* torn or corrupt blocks (a crashed writer, foreign damage) are skipped and counted;
* a record seen twice (a re-run of an interrupted archival, or Hudi's merge of small archive
  files) is kept once;
* records of actions pyhudi does not know are kept as raw entries but left out of `instants`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyhudi.errors import HudiError, TableNotFoundError
from pyhudi.io.log_blocks import decode_avro_data_block
from pyhudi.io.log_format import BlockType, CorruptBlock, iter_blocks
from pyhudi.model import avro_models as am
from pyhudi.model.commit_metadata import CommitMetadata
from pyhudi.model.file_names import LogFileName
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State
from pyhudi.timeline.timeline import META_DIR, Timeline

log = logging.getLogger(__name__)

ARCHIVE_FILE_PREFIX = ".commits_.archive."
#: HoodieLogFormat.UNKNOWN_WRITE_TOKEN: what Hudi's archiver puts in archive file names.
ARCHIVE_WRITE_TOKEN = "1-0-1"
_ARCHIVE_RE = re.compile(r"^\.commits_\.archive\.(\d+)(?:_.*)?$")
_STATE_ORDER = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}
# Actions whose pending files complete under another action (compaction -> commit).
_COMPARABLE = {Action.COMPACTION: Action.COMMIT, Action.LOG_COMPACTION: Action.DELTA_COMMIT}
# The payload field that carries a completed instant's details, by action.
_COMPLETED_PAYLOAD = {
    Action.COMMIT: "hoodieCommitMetadata", Action.DELTA_COMMIT: "hoodieCommitMetadata",
    Action.REPLACE_COMMIT: "hoodieReplaceCommitMetadata", Action.CLEAN: "hoodieCleanMetadata",
    Action.ROLLBACK: "hoodieRollbackMetadata", Action.SAVEPOINT: "hoodieSavePointMetadata",
}


def archive_folder(storage: Storage, folder: str | None = None) -> str:
    """`.hoodie/<hoodie.archivelog.folder>`; the table's own setting unless given."""
    if folder is None:
        from pyhudi.model.table_config import load_table_config

        try:
            folder = load_table_config(storage).archive_folder
        except TableNotFoundError:
            folder = "archived"
    return f"{META_DIR}/{folder or 'archived'}"


def archive_version(name: str) -> int | None:
    """N of `.commits_.archive.N_token`, or None for any other file."""
    m = _ARCHIVE_RE.match(name)
    return int(m.group(1)) if m else None


def archive_file_name(version: int, token: str = ARCHIVE_WRITE_TOKEN) -> str:
    return f"{ARCHIVE_FILE_PREFIX}{version}_{token}"


def list_archive_files(storage: Storage, folder: str) -> list[tuple[int, str]]:
    """(version, name) of every archive log file in `folder`, oldest version first."""
    found = [(v, info.name) for info in storage.list_dir(folder)
             if not info.is_dir and (v := archive_version(info.name)) is not None]
    return sorted(found)


def comparable_action(action: Action) -> Action:
    """Hudi's getComparableAction: a compaction's files belong with the commit it completes as."""
    return _COMPARABLE.get(action, action)


@dataclass(frozen=True)
class ArchivedEntry:
    """One HoodieArchivedMetaEntry record: an instant file's state and its Avro payload."""

    timestamp: str
    action: str  # as written: "commit", "compaction" (for a compaction's requested file), ...
    state: State
    record: dict[str, Any] = field(compare=False, repr=False, hash=False)
    source: str = field(default="", compare=False)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.timestamp, self.action, self.state.value)

    @property
    def known_action(self) -> Action | None:
        try:
            return Action(self.action)
        except ValueError:
            return None


def entry_from_record(record: dict[str, Any], source: str = "") -> ArchivedEntry | None:
    """The entry a decoded record describes; None when it lacks a timestamp or action."""
    ts, action = record.get("commitTime"), record.get("actionType")
    if not ts or not action:
        return None
    state_text = str(record.get("actionState") or "COMPLETED").upper()  # very old archives: completed only
    try:
        state = State(state_text.lower())
    except ValueError:
        return None
    return ArchivedEntry(str(ts), str(action), state, record, source)


class ArchivedTimeline:
    """Every instant file recorded in the archive, deduplicated, oldest first."""

    def __init__(self, entries: Iterable[ArchivedEntry], files: Iterable[str] = (),
                 corrupt_blocks: int = 0, problems: Iterable[str] = ()) -> None:
        seen: dict[tuple[str, str, str], ArchivedEntry] = {}
        self.duplicates = 0
        for e in entries:
            if e.key in seen:
                self.duplicates += 1
                continue
            seen[e.key] = e
        self.entries: tuple[ArchivedEntry, ...] = tuple(
            sorted(seen.values(), key=lambda e: (e.timestamp, e.action, _STATE_ORDER[e.state])))
        self.files = tuple(files)
        self.corrupt_blocks = corrupt_blocks
        self.problems = tuple(problems)
        self._by_key = {e.key: e for e in self.entries}
        self.timeline = self._build_timeline()

    # -- loading -------------------------------------------------------------------------
    @classmethod
    def load(cls, storage: Storage, folder: str | None = None) -> ArchivedTimeline:
        """Read every `.commits_.archive.*` file of the table (an absent folder is an empty archive)."""
        where = archive_folder(storage, folder)
        entries: list[ArchivedEntry] = []
        names: list[str] = []
        corrupt = 0
        problems: list[str] = []
        for _, name in list_archive_files(storage, where):
            names.append(name)
            try:
                data = storage.read_bytes(f"{where}/{name}")
            except FileNotFoundError:  # removed by a concurrent merge of archive files
                continue
            found, bad, notes = read_archive_bytes(data, name)
            entries.extend(found)
            corrupt += bad
            problems.extend(notes)
        if corrupt:
            log.warning("archived timeline of %s: skipped %d corrupt block(s)", storage.base_uri, corrupt)
        return cls(entries, names, corrupt, problems)

    # -- queries -------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.entries)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def keys(self) -> set[tuple[str, str, str]]:
        """(timestamp, action, state) of every archived instant file."""
        return set(self._by_key)

    def contains(self, timestamp: str, action: Action | str, state: State) -> bool:
        value = action.value if isinstance(action, Action) else action
        return (timestamp, value, state.value) in self._by_key

    @property
    def instants(self) -> tuple[Instant, ...]:
        """One instant per (timestamp, action), in its latest archived state, oldest first."""
        return self.timeline.instants

    @property
    def compaction_commits(self) -> frozenset[str]:
        return self.timeline.compaction_commits

    def entry(self, instant: Instant) -> ArchivedEntry | None:
        return self._by_key.get((instant.timestamp, instant.action.value, instant.state.value))

    def requested_entry(self, instant: Instant) -> ArchivedEntry | None:
        """The requested-state record of `instant` (for a completed compaction: `compaction`)."""
        pending = Action.COMPACTION if self.timeline.is_compaction_commit(instant) else instant.action
        return self._by_key.get((instant.timestamp, pending.value, State.REQUESTED.value))

    def payload(self, instant: Instant) -> dict[str, Any] | None:
        """The Avro details of a completed instant (commit metadata, clean metadata, ...), if recorded."""
        entry = self.entry(instant)
        name = _COMPLETED_PAYLOAD.get(instant.action)
        if entry is None or name is None:
            return None
        value = entry.record.get(name)
        return value if isinstance(value, dict) else None

    def commit_metadata(self, instant: Instant) -> CommitMetadata | None:
        """A completed write's metadata in the shape of its original JSON, or None if not recorded."""
        if instant.action not in WRITE_ACTIONS or not instant.is_completed:
            return None
        entry = self.entry(instant)
        if entry is None:
            return None
        avro = entry.record.get("hoodieReplaceCommitMetadata") if instant.action is Action.REPLACE_COMMIT else None
        avro = avro or entry.record.get("hoodieCommitMetadata")
        if not isinstance(avro, dict):
            return None
        return CommitMetadata.from_json(commit_json(avro, instant.action is Action.REPLACE_COMMIT))

    def completed_writes(self) -> list[Instant]:
        return [i for i in self.instants if i.is_completed and i.action in WRITE_ACTIONS]

    def _build_timeline(self) -> Timeline:
        groups: dict[tuple[str, Action], list[Instant]] = {}
        for e in self.entries:
            action = e.known_action
            if action is None:
                continue
            inst = Instant(e.timestamp, action, e.state)
            groups.setdefault((e.timestamp, comparable_action(action)), []).append(inst)
        latest: list[Instant] = []
        compactions: set[str] = set()
        for (ts, _), found in groups.items():
            latest.append(max(found, key=lambda i: (_STATE_ORDER[i.state], i.action in WRITE_ACTIONS)))
            if any(i.action is Action.COMPACTION for i in found):
                compactions.add(ts)
        return Timeline(latest, frozenset(compactions))


def read_archive_bytes(data: bytes, source: str = "") -> tuple[list[ArchivedEntry], int, list[str]]:
    """Entries of one archive file, the number of unreadable blocks, and notes about them."""
    entries: list[ArchivedEntry] = []
    bad = 0
    notes: list[str] = []
    for block in iter_blocks(data):
        if isinstance(block, CorruptBlock):
            bad += 1
            notes.append(f"{source}: {block.size} byte(s) at offset {block.offset} skipped ({block.reason})")
            continue
        if block.block_type != BlockType.AVRO_DATA_BLOCK:
            continue  # Hudi archives hold only Avro data blocks
        try:
            records = decode_avro_data_block(block)
        except (HudiError, ValueError, EOFError, IndexError, TypeError) as exc:
            bad += 1
            notes.append(f"{source}: block at offset {block.offset} cannot be decoded ({exc})")
            continue
        for rec in records:
            entry = entry_from_record(dict(rec), source)
            if entry is not None:
                entries.append(entry)
    return entries, bad, notes


def commit_json(avro: dict[str, Any], replace: bool = False) -> dict[str, Any]:
    """The JSON form of an archived Avro HoodieCommitMetadata / HoodieReplaceCommitMetadata.

    Inverse of MetadataConversionUtils.convertCommitMetadata as far as the Avro model allows: the
    blanked ROLLING_STAT key is dropped again, `compacted` comes back from operationType COMPACT,
    and log-file stats get their log version back from the file name (the Avro write stat has no
    logVersion), so they are recognised as delta writes.
    """
    stats: dict[str, list[dict[str, Any]]] = {}
    for partition, lst in (avro.get("partitionToWriteStats") or {}).items():
        out = []
        for s in lst or []:
            stat = {k: v for k, v in (s or {}).items() if v is not None}
            stat.setdefault("prevCommit", "null")
            path = stat.get("path")
            lf = LogFileName.parse(str(path).rsplit("/", 1)[-1]) if path else None
            if lf is not None:
                stat.update(logVersion=lf.version, baseFile="", logFiles=[str(path).rsplit("/", 1)[-1]])
            out.append(stat)
        stats[str(partition)] = out
    extra = {str(k): str(v) for k, v in (avro.get("extraMetadata") or {}).items()
             if not (k == am.ROLLING_STAT_METADATA_KEY and not v)}
    data: dict[str, Any] = {
        "partitionToWriteStats": stats,
        "compacted": avro.get("operationType") == "COMPACT",
        "extraMetadata": extra,
        "operationType": avro.get("operationType") or "UNKNOWN",
    }
    if replace or avro.get("partitionToReplaceFileIds") is not None:
        data["partitionToReplaceFileIds"] = {str(p): list(ids or [])
                                             for p, ids in (avro.get("partitionToReplaceFileIds") or {}).items()}
    return data
