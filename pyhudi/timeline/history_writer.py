"""Writing the LSM timeline history (format: `timeline/history.py`), as J:LSMTimelineWriter does.

One archival batch (`append_history`), in Hudi's crash-safe order:

1. the level-0 data file `<first>_<last>_0.parquet` (instants sorted by instant time, as
   J:TimelineArchiverV2 sorts them), unless the latest manifest already lists it (a re-run after
   a crash that came after the commit: nothing to do); a leftover of a crashed write is replaced;
2. `manifest_<N+1>`: every file of manifest N plus the new one (N = -1 when there is none yet);
3. `_version_` = N+1, the commit point. Until it is written readers keep reading snapshot N, and
   the next writer computes N+1 again and replaces the unused manifest.

Then (J:LSMTimelineWriter.compactAndClean, run by the archiver after it deleted the archived
instant files; `append_history(compact=False)` + `compact_and_clean` keeps that order):

* **Compaction**, level after level: when a level holds `batch_size` (10, `hoodie.timeline.compaction
  .batch.size`) listed files, the oldest (by file name) up to 10, stopping once they exceed 1,000 MiB, are
  merged (rows concatenated in that order) into `<min>_<max>_<level+1>.parquet`, and a new manifest
  lists it instead of them. Fewer than two candidates (huge files) stop compaction.
* **Cleaning**: with more than 3 + (compactions just done) manifests, only that many newest are kept;
  the other manifests are deleted first, then every `*.parquet` of the folder that no kept manifest
  lists (merged inputs, leftovers of crashed writes). Readers of a snapshot up to three versions old
  thus still find its files. 1.0.x/1.1.x keep 3 versions, fixed (made configurable after 1.1).

Manifests and `_version_` are written with `Storage.write_atomic`: a reader sees the old or the
new content, never a torn one (Hudi deletes `_version_` before re-creating it; its readers cover the
gap by listing manifests, which this reader does too). Callers hold the table lock, as Hudi's
archiver does: two writers would pick the same next version.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

import pyarrow as pa

from pyhudi.errors import CorruptFileError, HudiError
from pyhudi.faults import fault_point
from pyhudi.storage import Storage
from pyhudi.timeline.history import (
    ALL_COLUMNS,
    VERSION_FILE,
    DataFileName,
    HistoryInstant,
    HistorySnapshot,
    ManifestEntry,
    data_file_name,
    encode_history_file,
    encode_history_table,
    manifest_bytes,
    manifest_file_name,
    manifest_version,
    read_history_file,
    read_manifest,
    read_version_file,
    snapshot_versions,
)

log = logging.getLogger(__name__)

#: hoodie.timeline.compaction.batch.size (J:HoodieArchivalConfig.TIMELINE_COMPACTION_BATCH_SIZE).
COMPACTION_BATCH_SIZE = 10
#: Manifest versions the cleaner keeps besides those of this round's compactions (J:LSMTimelineWriter.clean).
RETAINED_VERSIONS = 3
#: Once the inputs chosen so far exceed this, no further file joins a compaction
#: (J:LSMTimelineWriter.MAX_FILE_SIZE_IN_BYTES up to 1.1.x; configurable after 1.1).
COMPACTION_MAX_BYTES = 1024 * 1024 * 1000
DEFAULT_CODEC = "gzip"  # HoodieStorageConfig.PARQUET_COMPRESSION_CODEC_NAME's default
_INSTANT_TIME = re.compile(r"[0-9]+")


class InvalidHistoryInstantError(HudiError, ValueError):
    """An instant cannot go into the history as given (empty batch, non-numeric instant time, ...)."""


def append_history(storage: Storage, history_dir: str, instants: Sequence[HistoryInstant], *,
                   codec: str = DEFAULT_CODEC, compact: bool = True,
                   batch_size: int = COMPACTION_BATCH_SIZE) -> None:
    """Archive one batch of completed instants into the history, then compact and clean (see the
    module docstring). `codec` is the table's `hoodie.parquet.compression.codec`."""
    batch = _checked_batch(instants)
    name = data_file_name(batch[0].instant_time, batch[-1].instant_time, 0)
    snapshot = _writable_snapshot(storage, history_dir)
    if name in snapshot.names:
        log.info("%s/%s is already in %s: batch archived before", history_dir, name, snapshot.manifest_name)
    else:
        data = encode_history_file(batch, codec)
        storage.write_bytes(f"{history_dir}/{name}", data)
        fault_point("history.after_data_file")
        snapshot = _commit(storage, history_dir, snapshot, (), ManifestEntry(name, len(data)))
    if compact:
        _compact_and_clean(storage, history_dir, snapshot, codec, batch_size)


def compact_and_clean(storage: Storage, history_dir: str, *, codec: str = DEFAULT_CODEC,
                      batch_size: int = COMPACTION_BATCH_SIZE) -> None:
    """Merge full levels into the next one, level 0 first, then delete what old snapshots no longer
    need (J:LSMTimelineWriter.compactAndClean)."""
    _compact_and_clean(storage, history_dir, _writable_snapshot(storage, history_dir), codec, batch_size)


def _compact_and_clean(storage: Storage, history_dir: str, snapshot: HistorySnapshot, codec: str,
                       batch_size: int) -> None:
    layer = 0
    while (compacted := _compact_layer(storage, history_dir, snapshot, layer, codec, batch_size)) is not None:
        snapshot = compacted
        layer += 1
    clean(storage, history_dir, compacted_versions=layer)


def clean(storage: Storage, history_dir: str, compacted_versions: int = 0) -> None:
    """Keep the newest RETAINED_VERSIONS + `compacted_versions` manifests and the data files they list."""
    listing = [i.name for i in storage.list_dir(history_dir) if not i.is_dir]
    versions = sorted((v for n in listing if (v := manifest_version(n)) is not None), reverse=True)
    keep = versions[:RETAINED_VERSIONS + compacted_versions]
    if len(versions) <= len(keep):
        return
    needed = {name for v in keep for name in read_manifest(storage, history_dir, v).names}
    for v in versions[len(keep):]:
        storage.delete(f"{history_dir}/{manifest_file_name(v)}")
    for name in listing:
        if name.endswith(".parquet") and name not in needed:
            storage.delete(f"{history_dir}/{name}")


def _checked_batch(instants: Sequence[HistoryInstant]) -> list[HistoryInstant]:
    if not instants:
        raise InvalidHistoryInstantError("no instants to archive: a history batch needs at least one")
    batch = sorted(instants, key=lambda i: i.instant_time)
    seen: set[str] = set()
    for inst in batch:
        if not _INSTANT_TIME.fullmatch(inst.instant_time):
            raise InvalidHistoryInstantError(
                f"instant time {inst.instant_time!r} is not all digits; history file names are "
                "<min>_<max>_<level>.parquet of digits, so Hudi could not read it back")
        if not inst.completion_time or not inst.action:
            raise InvalidHistoryInstantError(
                f"instant {inst.instant_time} needs a completion time and an action to be archived")
        if inst.instant_time in seen:
            raise InvalidHistoryInstantError(f"instant {inst.instant_time} appears twice in one batch")
        seen.add(inst.instant_time)
    return batch


def _writable_snapshot(storage: Storage, history_dir: str) -> HistorySnapshot:
    """The latest snapshot, refusing a negative `_version_`: Hudi would start over at manifest_1 and
    its cleaner would then delete the whole history."""
    stated = read_version_file(storage, history_dir)
    if stated is not None and stated < 0:
        raise CorruptFileError(
            f"{history_dir}/{VERSION_FILE} holds {stated}, not a snapshot version; writing would drop "
            f"the history. Delete {VERSION_FILE} (the highest manifest_<N> is then taken)")
    version = stated if stated is not None else max(snapshot_versions(storage, history_dir), default=-1)
    return read_manifest(storage, history_dir, version)


def _commit(storage: Storage, history_dir: str, base: HistorySnapshot, remove: Sequence[str],
            add: ManifestEntry) -> HistorySnapshot:
    """Write manifest base.version+1 (base's files minus `remove`, plus `add`), then `_version_`."""
    version = 1 if base.version < 0 else base.version + 1
    files = tuple(f for f in base.files if f.name not in set(remove)) + (add,)
    storage.write_atomic(f"{history_dir}/{manifest_file_name(version)}", manifest_bytes(files))
    fault_point("history.after_manifest")
    storage.write_atomic(f"{history_dir}/{VERSION_FILE}", str(version).encode("utf-8"))
    return HistorySnapshot(version, files)


def _compact_layer(storage: Storage, history_dir: str, snapshot: HistorySnapshot, layer: int,
                   codec: str, batch_size: int) -> HistorySnapshot | None:
    """Merge the oldest files of `layer` into one file of the next layer when the layer is full."""
    files = sorted((f for f in snapshot.files if (p := DataFileName.parse(f.name)) and p.level == layer),
                   key=lambda f: f.name)
    if len(files) < batch_size:
        return None
    candidates = _candidates(files, batch_size)
    if len(candidates) < 2:
        return None  # the files are too large to merge
    parts = [p for f in candidates if (p := DataFileName.parse(f.name))]
    name = data_file_name(min(p.min_instant for p in parts), max(p.max_instant for p in parts), layer + 1)
    manifest = f"{history_dir}/{snapshot.manifest_name}"
    tables = [read_history_file(storage, history_dir, f, ALL_COLUMNS, manifest) for f in candidates]
    data = encode_history_table(pa.concat_tables(tables), codec)
    storage.write_bytes(f"{history_dir}/{name}", data)
    log.info("history: merged %d level-%d files into %s", len(candidates), layer, name)
    return _commit(storage, history_dir, snapshot, [f.name for f in candidates], ManifestEntry(name, len(data)))


def _candidates(files: Sequence[ManifestEntry], batch_size: int) -> list[ManifestEntry]:
    """The oldest files, at most `batch_size`, adding none once COMPACTION_MAX_BYTES is exceeded
    (J:LSMTimelineWriter.getCandidateFiles as of 1.0.x/1.1.x)."""
    chosen: list[ManifestEntry] = []
    total = 0
    for entry in files[:batch_size]:
        if total > COMPACTION_MAX_BYTES:
            break
        total += entry.size
        chosen.append(entry)
    return chosen
