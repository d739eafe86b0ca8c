"""The LSM timeline history of timeline layout 2 (Hudi 1.x, table versions 8 and 9): reading it.

Archival moves completed instants out of `.hoodie/timeline/` into `.hoodie/timeline/history/`
(`hoodie.timeline.history.path`), which replaces layout 1's `.hoodie/archived/` log files
(`timeline/archived.py`). Writing (archival batches, compaction, cleaning) is in
`timeline/history_writer.py`. The format, as Apache Hudi 1.0.x/1.1.x write it (J: = a class of
apache/hudi; `LSMTimeline`, `LSMTimelineWriter`, `HoodieLSMTimelineManifest`,
`MetadataConversionUtils.createLSMTimelineInstant`, `HoodieLSMTimelineInstant.avsc`):

* **Data files** `<minInstant>_<maxInstant>_<level>.parquet` (J:LSMTimeline's pattern
  `^(\\d+)_(\\d+)_(\\d)\\.parquet`, matched whole). An archival batch writes one level-0 file named
  after its first and last instant; ten files of a level are merged into one file of the next level.
  Rows are `HoodieLSMTimelineInstant` records written by parquet-avro, see `HISTORY_AVRO_SCHEMA`;
  pyarrow writes the same columns, types and footer entries, but names the schema root `schema`
  (parquet-avro: the record's full name) and `created_by` parquet-cpp: readers use neither.
* **Manifests** `manifest_<N>`: Jackson pretty-printed JSON `{"files" : [ {"fileName" : ...,
  "fileLen" : ...} ]}`, the complete list of valid data files of snapshot N. Only listed files count:
  a data file left by a crashed write or awaiting cleaning is invisible to readers.
* **`_version_`**: the latest snapshot number N as decimal text, no newline.

Reading follows J:LSMTimeline.latestSnapshotVersion/latestSnapshotManifest: a missing or unparsable
`_version_` (the writer deletes it before re-creating it) falls back to the highest `manifest_<N>`
listed, or no history when there is none; a `_version_` naming a manifest that does not exist is an
error in Hudi too (it reads the manifest unconditionally), here a `CorruptFileError`. Files whose
name range misses the query range are skipped unread (J:LSMTimeline.isFileInRange), and only the
columns asked for are decoded; without details a file larger than one tail read is fetched as its
footer plus the byte range of the needed column chunks. A listed name that does not parse is always
read (Hudi fails on it when filtering by range).

Row contents (J:MetadataConversionUtils.createLSMTimelineInstant, J:ActiveAction):

* `instantTime`: the requested time; `completionTime`: the completion time.
* `action`: the *completed* action: `commit`, `deltacommit`, `replacecommit`, `clean`, `rollback`
  (a compaction completes as `commit`, a log compaction as `deltacommit`, a clustering as
  `replacecommit`).
* `metadata`: the completed instant file's bytes as they were on the active timeline, or null when
  that file was empty. Version 8/9 files are Avro container files (`Obj\\x01`): HoodieCommitMetadata
  (commit, deltacommit), HoodieReplaceCommitMetadata (replacecommit), HoodieCleanMetadata (clean),
  HoodieRollbackMetadata (rollback). Instants written by Hudi 0.x and moved here by the 6->8 upgrade
  can carry JSON instead: decode by the first bytes (`Obj\\x01` Avro, else JSON), as for active files.
* `plan`, by the instant's *pending* action: clean -> HoodieCleanerPlan (`.clean.requested`);
  compaction / logcompaction -> HoodieCompactionPlan (`.compaction.requested` /
  `.logcompaction.requested`); replacecommit / clustering -> the non-empty `.requested` content
  (HoodieRequestedReplaceMetadata, the clustering plan), replaced by the `.inflight` content when
  that is non-empty (an insert_overwrite's HoodieCommitMetadata); any other action -> null.
* `version`: always 1 (J:LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1).

An instant time found in several listed files (a batch archived twice after a crash) is kept once,
as J:ArchivedTimelineV2 keeps the first record per instant time; here the first in manifest order.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.parquet as pq

from pyhudi.errors import CorruptFileError, HudiError, StorageError
from pyhudi.model import jackson
from pyhudi.storage import Storage

log = logging.getLogger(__name__)

VERSION_FILE = "_version_"
MANIFEST_PREFIX = "manifest_"
_MANIFEST_RE = re.compile(r"manifest_([0-9]+)")
_DATA_FILE_RE = re.compile(r"([0-9]+)_([0-9]+)_([0-9])\.parquet")
_JAVA_INT = re.compile(r"[+-]?\d+")  # Integer.parseInt: optional sign, decimal digits (any script)
_INT_MAX = 2**31 - 1

#: Field names of HoodieLSMTimelineInstant, in schema order.
INSTANT_TIME, COMPLETION_TIME, ACTION, METADATA, PLAN, VERSION = (
    "instantTime", "completionTime", "action", "metadata", "plan", "version")
ALL_COLUMNS = (INSTANT_TIME, COMPLETION_TIME, ACTION, METADATA, PLAN, VERSION)
LSM_TIMELINE_INSTANT_VERSION = 1

_JAVA_STRING = {"type": "string", "avro.java.string": "String"}
#: What parquet-avro stores under `parquet.avro.schema`: the generated class's SCHEMA$ as Java prints
#: it (Hudi's avro-maven-plugin runs with stringType=String, so strings carry `avro.java.string`).
HISTORY_AVRO_SCHEMA = json.dumps({
    "type": "record", "name": "HoodieLSMTimelineInstant", "namespace": "org.apache.hudi.avro.model",
    "fields": [
        {"name": INSTANT_TIME, "type": ["null", _JAVA_STRING], "default": None},
        {"name": COMPLETION_TIME, "type": ["null", _JAVA_STRING], "default": None},
        {"name": ACTION, "type": ["null", _JAVA_STRING], "default": None},
        {"name": METADATA, "type": ["null", "bytes"], "default": None},
        {"name": PLAN, "type": ["null", "bytes"], "default": None},
        {"name": VERSION, "type": "int", "default": LSM_TIMELINE_INSTANT_VERSION},
    ],
}, separators=(",", ":"))
#: The physical schema parquet-avro derives from it: nullable unions become optional columns,
#: Avro strings `binary (STRING)`, bytes plain `binary`, the int `required int32`.
HISTORY_ARROW_SCHEMA = pa.schema([
    pa.field(INSTANT_TIME, pa.string()), pa.field(COMPLETION_TIME, pa.string()),
    pa.field(ACTION, pa.string()), pa.field(METADATA, pa.binary()), pa.field(PLAN, pa.binary()),
    pa.field(VERSION, pa.int32(), nullable=False),
])
#: Footer entries of parquet-avro's AvroWriteSupport; Hudi adds nothing (no bloom filter: the
#: archive writer runs with populateMetaFields=false).
FOOTER_METADATA = {"parquet.avro.schema": HISTORY_AVRO_SCHEMA, "writer.model.name": "avro"}

# A file no larger than this is read whole (one request); a larger one without details is read as
# this much of its tail (footer) plus the byte range of the needed column chunks.
TAIL_BYTES = 64 * 1024
_MERGE_GAP = 64 * 1024  # column-chunk ranges closer than this are fetched by one request


@dataclass(frozen=True)
class HistoryInstant:
    """One archived instant (a HoodieLSMTimelineInstant row; see the module docstring for what
    `metadata` and `plan` hold by action). Both are None when not recorded or not read."""

    instant_time: str
    completion_time: str
    action: str
    metadata: bytes | None = None
    plan: bytes | None = None


@dataclass(frozen=True)
class ManifestEntry:
    """One `{"fileName", "fileLen"}` entry of a manifest."""

    name: str
    size: int


@dataclass(frozen=True)
class HistorySnapshot:
    """The files of one snapshot version; version -1 with no files means no history at all."""

    version: int
    files: tuple[ManifestEntry, ...] = ()

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.files]

    @property
    def manifest_name(self) -> str:
        return manifest_file_name(self.version)


@dataclass(frozen=True)
class DataFileName:
    """The parts of `<min>_<max>_<level>.parquet`."""

    min_instant: str
    max_instant: str
    level: int

    @classmethod
    def parse(cls, name: str) -> DataFileName | None:
        m = _DATA_FILE_RE.fullmatch(name)
        return cls(m.group(1), m.group(2), int(m.group(3))) if m else None

    def file_name(self) -> str:
        return data_file_name(self.min_instant, self.max_instant, self.level)

    def overlaps(self, start: str | None, end: str | None, end_open: bool = False) -> bool:
        """Whether [min, max] meets [start, end] ([start, end) with `end_open`; None: unbounded)."""
        return (start is None or self.max_instant >= start) and (
            end is None or self.min_instant < end or (self.min_instant == end and not end_open))


def data_file_name(min_instant: str, max_instant: str, level: int) -> str:
    return f"{min_instant}_{max_instant}_{level}.parquet"


def manifest_file_name(version: int) -> str:
    return f"{MANIFEST_PREFIX}{version}"


def manifest_version(name: str) -> int | None:
    """N of `manifest_N`, or None for any other name."""
    m = _MANIFEST_RE.fullmatch(name)
    return int(m.group(1)) if m else None


# -- snapshot versions and manifests ------------------------------------------------------------------
def read_version_file(storage: Storage, history_dir: str) -> int | None:
    """The number in `_version_`, or None when it is missing or does not parse as Java's
    Integer.parseInt would (Hudi then lists the manifests instead)."""
    path = f"{history_dir}/{VERSION_FILE}"
    try:
        raw = storage.read_bytes(path)
    except FileNotFoundError:
        return None
    text = raw.decode("utf-8", errors="replace")
    if not _JAVA_INT.fullmatch(text) or not -_INT_MAX - 1 <= int(text) <= _INT_MAX:
        log.warning("%s: %r is not a snapshot version; taking the highest manifest instead", path, raw[:40])
        return None
    return int(text)


def snapshot_versions(storage: Storage, history_dir: str) -> list[int]:
    """Versions of every `manifest_<N>` in the folder (an absent folder has none), unsorted."""
    return [v for info in storage.list_dir(history_dir)
            if not info.is_dir and (v := manifest_version(info.name)) is not None]


def latest_version(storage: Storage, history_dir: str) -> int:
    """J:LSMTimeline.latestSnapshotVersion: `_version_`, else the highest manifest, else -1."""
    version = read_version_file(storage, history_dir)
    if version is not None:
        return version
    return max(snapshot_versions(storage, history_dir), default=-1)


def read_manifest(storage: Storage, history_dir: str, version: int) -> HistorySnapshot:
    """The files of snapshot `version` (a negative version is the empty snapshot, as in Hudi)."""
    if version < 0:
        return HistorySnapshot(-1)
    name = manifest_file_name(version)
    try:
        raw = storage.read_bytes(f"{history_dir}/{name}")
    except FileNotFoundError:
        raise CorruptFileError(
            f"{history_dir}/{VERSION_FILE} names snapshot {version}, but {history_dir}/{name} does not "
            f"exist (Hudi's reader fails here too); delete {VERSION_FILE} so readers take the highest "
            f"manifest_<N> present, or restore {name}") from None
    return HistorySnapshot(version, parse_manifest(raw, f"{history_dir}/{name}"))


def latest_snapshot(storage: Storage, history_dir: str) -> HistorySnapshot:
    return read_manifest(storage, history_dir, latest_version(storage, history_dir))


def parse_manifest(raw: bytes, source: str) -> tuple[ManifestEntry, ...]:
    """Entries of a manifest's JSON, as Jackson reads HoodieLSMTimelineManifest: unknown keys are
    ignored, empty content is an empty manifest, a null or missing `fileLen` is 0."""
    if not raw:
        return ()
    try:
        doc = json.loads(raw.decode("utf-8"))
        files = doc.get("files") or []
        entries = []
        for item in files:
            name, size = item["fileName"], item.get("fileLen") or 0
            if not isinstance(name, str) or isinstance(size, bool):
                raise ValueError(f"bad entry {item!r}")
            entries.append(ManifestEntry(name, int(size)))
    except (ValueError, TypeError, KeyError, AttributeError, UnicodeDecodeError) as exc:
        raise CorruptFileError(
            f"{source}: not a history manifest ({exc}); Hudi cannot read this snapshot either. Restore "
            f"the file, or delete it and {VERSION_FILE} so readers take the previous manifest") from exc
    return tuple(dict.fromkeys(entries))


def manifest_bytes(files: Iterable[ManifestEntry]) -> bytes:
    """A manifest as HoodieLSMTimelineManifest.toJsonString prints it (Jackson's default pretty printer)."""
    doc = {"files": [{"fileName": f.name, "fileLen": f.size} for f in files]}
    return jackson.dumps(doc).encode("utf-8")


# -- data files ---------------------------------------------------------------------------------------
def encode_history_file(instants: Sequence[HistoryInstant], codec: str = "gzip") -> bytes:
    """One data file holding `instants` in the given order, as parquet-avro writes HoodieLSMTimelineInstant
    records: one row group, the Avro schema in the footer, no Arrow schema; GZIP is Hudi's default
    `hoodie.parquet.compression.codec`, which the archive writer takes from the table's config."""
    return encode_history_table(history_table(instants), codec)


def history_table(instants: Sequence[HistoryInstant]) -> pa.Table:
    return pa.Table.from_arrays([
        pa.array([i.instant_time for i in instants], pa.string()),
        pa.array([i.completion_time for i in instants], pa.string()),
        pa.array([i.action for i in instants], pa.string()),
        pa.array([i.metadata for i in instants], pa.binary()),
        pa.array([i.plan for i in instants], pa.binary()),
        pa.array([LSM_TIMELINE_INSTANT_VERSION] * len(instants), pa.int32()),
    ], schema=HISTORY_ARROW_SCHEMA)


def encode_history_table(table: pa.Table, codec: str = "gzip") -> bytes:
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, HISTORY_ARROW_SCHEMA, compression=codec, store_schema=False) as writer:
        writer.write_table(table, row_group_size=max(1, table.num_rows))
        writer.add_key_value_metadata(FOOTER_METADATA)
    return sink.getvalue()


def read_history_file(storage: Storage, history_dir: str, entry: ManifestEntry,
                      columns: Sequence[str] = ALL_COLUMNS, manifest: str = "the manifest") -> pa.Table:
    """`columns` of one listed data file, conformed to HISTORY_ARROW_SCHEMA's types (a column the file
    lacks is null, `version` then 1, as Hudi's Avro reader fills schema defaults).

    FileNotFoundError passes through (the caller decides whether a cleaner removed it meanwhile);
    anything undecodable is a CorruptFileError naming the file."""
    path = f"{history_dir}/{entry.name}"
    try:
        return _conform(_read_columns(storage, path, entry.size, columns), columns)
    except (FileNotFoundError, PermissionError, HudiError):
        raise
    except (pa.ArrowException, OSError, ValueError, EOFError, IndexError) as exc:
        raise CorruptFileError(
            f"{path}: history file listed in {manifest} is not readable parquet ({exc}); Hudi's timeline "
            f"reader fails on it too. Restore it from a backup, or write a manifest without it (its "
            f"instants then drop out of the history)") from exc


def _read_columns(storage: Storage, path: str, size: int, columns: Sequence[str]) -> pa.Table:
    source: pa.BufferReader | _RangedFile | None = None
    if size > TAIL_BYTES and METADATA not in columns and PLAN not in columns:
        try:
            source = _RangedFile(storage, path, size)
        except StorageError:  # an object store refusing the tail's range (file shorter than listed):
            source = None  # one whole read tells a truncated file from a failing store
    if source is None:
        source = pa.BufferReader(storage.read_bytes(path))
    pf = pq.ParquetFile(source)
    present = [c for c in columns if c in pf.schema_arrow.names]
    if isinstance(source, _RangedFile):
        source.prefetch(_chunk_ranges(pf.metadata, present))
    return pf.read(columns=present, use_threads=False)


def _conform(table: pa.Table, columns: Sequence[str]) -> pa.Table:
    arrays = []
    for name in columns:
        field = HISTORY_ARROW_SCHEMA.field(name)
        column = table.column(name).cast(field.type) if name in table.column_names else pa.nulls(
            table.num_rows, field.type)
        if name == VERSION:
            column = column.fill_null(LSM_TIMELINE_INSTANT_VERSION)
        arrays.append(column)
    return pa.Table.from_arrays(arrays, schema=pa.schema([HISTORY_ARROW_SCHEMA.field(c) for c in columns]))


def _chunk_ranges(meta: pq.FileMetaData, columns: Sequence[str]) -> list[tuple[int, int]]:
    """Byte ranges of the column chunks of `columns`, neighbours closer than _MERGE_GAP merged."""
    wanted = set(columns)
    ranges = []
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for c in range(group.num_columns):
            chunk = group.column(c)
            if chunk.path_in_schema not in wanted:
                continue
            start = chunk.data_page_offset
            if chunk.has_dictionary_page and chunk.dictionary_page_offset:
                start = min(start, chunk.dictionary_page_offset)
            ranges.append((start, start + chunk.total_compressed_size))
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start - merged[-1][1] <= _MERGE_GAP:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


class _RangedFile(io.RawIOBase):
    """A read-only file over `Storage.read_range`: the tail (footer) is fetched up front, prefetched
    ranges are served from memory, anything else by one ranged read each."""

    def __init__(self, storage: Storage, path: str, size: int) -> None:
        super().__init__()
        self._storage, self._path, self._size, self._pos = storage, path, size, 0
        start = max(0, size - TAIL_BYTES)
        tail = storage.read_range(path, start, size)
        if len(tail) != size - start:
            raise CorruptFileError(
                f"{path}: shorter than the {size} bytes its manifest entry records (truncated?); Hudi's "
                f"timeline reader fails on it too. Restore it from a backup, or write a manifest without it")
        self._held: list[tuple[int, bytes]] = [(start, tail)]

    def prefetch(self, ranges: Iterable[tuple[int, int]]) -> None:
        for start, end in ranges:
            if self._cached(start, end) is None:
                self._held.append((start, self._storage.read_range(self._path, start, end)))

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        end = min(self._size, self._pos + len(buffer))
        if end <= self._pos:
            return 0
        data = self._cached(self._pos, end)
        if data is None:
            data = self._storage.read_range(self._path, self._pos, end)
        memoryview(buffer)[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def _cached(self, start: int, end: int) -> bytes | None:
        for at, data in self._held:
            if at <= start and end <= at + len(data):
                return data[start - at: end - at]
        return None


# -- reading the history ------------------------------------------------------------------------------

def read_history(storage: Storage, history_dir: str, *, start: str | None = None, end: str | None = None,
                 with_details: bool = True) -> list[HistoryInstant]:
    """Archived instants with start <= instant time <= end (None: unbounded), oldest first.

    Files whose name range misses [start, end] are not read. `with_details=False` leaves `metadata`
    and `plan` None and reads neither column (J:HoodieArchivedTimeline.LoadMode ACTION vs FULL)."""
    columns = [INSTANT_TIME, COMPLETION_TIME, ACTION] + ([METADATA, PLAN] if with_details else [])
    found: dict[str, HistoryInstant] = {}
    for table in _scan(storage, history_dir, columns, start, end):
        rows = table.to_pydict()
        for i, ts in enumerate(rows[INSTANT_TIME]):
            if ts is None or ts in found or not _in_range(ts, start, end):
                continue
            found[ts] = HistoryInstant(
                ts, rows[COMPLETION_TIME][i] or ts, rows[ACTION][i] or "",
                rows[METADATA][i] if with_details else None, rows[PLAN][i] if with_details else None)
    return [found[ts] for ts in sorted(found)]


def history_completion_times(storage: Storage, history_dir: str, start: str | None = None,
                             end: str | None = None) -> dict[str, str]:
    """Instant time -> completion time of archived instants with start <= instant time < end (None:
    unbounded; `end` is exclusive: the first active instant, below which instants are archived),
    reading only those two columns of the files whose range meets it (J:CompletionTimeQueryViewV2:
    LoadMode.TIME with a StartTsFilter, or a ClosedOpenTimeRangeFilter when it loads further back).
    A missing completion time is the instant time itself (CompletionTimeQueryViewV2.setCompletionTime)."""
    times: dict[str, str] = {}
    for table in _scan(storage, history_dir, [INSTANT_TIME, COMPLETION_TIME], start, end, end_open=True):
        for ts, done in zip(table.column(INSTANT_TIME).to_pylist(), table.column(COMPLETION_TIME).to_pylist()):
            if ts is not None and ts not in times and _in_range(ts, start, end, end_open=True):
                times[ts] = done or ts
    return times


def _in_range(ts: str, start: str | None, end: str | None, end_open: bool = False) -> bool:
    return (start is None or ts >= start) and (end is None or ts < end or (ts == end and not end_open))


def _scan(storage: Storage, history_dir: str, columns: Sequence[str], start: str | None,
          end: str | None, end_open: bool = False) -> list[pa.Table]:
    """The tables of the latest snapshot's files that may hold instants in [start, end]. A listed file
    that vanished means a writer advanced and cleaned meanwhile: the new snapshot is read once more."""
    snapshot = latest_snapshot(storage, history_dir)
    try:
        return _read_snapshot(storage, history_dir, snapshot, columns, start, end, end_open)
    except FileNotFoundError as missing:
        newer = latest_snapshot(storage, history_dir)
        if newer.version == snapshot.version:
            raise CorruptFileError(
                f"{missing.filename or history_dir}: listed in {history_dir}/{snapshot.manifest_name} but "
                f"missing; Hudi's reader fails on this snapshot too. Restore the file, or write a manifest "
                f"without it") from missing
        return _read_snapshot(storage, history_dir, newer, columns, start, end, end_open)


def _read_snapshot(storage: Storage, history_dir: str, snapshot: HistorySnapshot, columns: Sequence[str],
                   start: str | None, end: str | None, end_open: bool) -> list[pa.Table]:
    tables = []
    for entry in snapshot.files:
        parsed = DataFileName.parse(entry.name)
        if parsed is not None and not parsed.overlaps(start, end, end_open):
            continue
        try:
            tables.append(read_history_file(storage, history_dir, entry, columns,
                                            f"{history_dir}/{snapshot.manifest_name}"))
        except FileNotFoundError as exc:
            exc.filename = exc.filename or f"{history_dir}/{entry.name}"
            raise
    return tables
