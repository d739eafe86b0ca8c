"""Upgrade a table of version 6 to 8 or 9, and 8 to 9, when a write asks for it (`hoodie.write.table.version`).

What Hudi 1.x's UpgradeDowngrade.run does (J: = apache/hudi; the 1.1 handlers, which a 1.1 writer also runs for
`hoodie.write.table.version=8`):

* before any handler (`performRollbackAndCompactionIfRequired`, handlers 7->8 and 8->9): roll back failed
  writes and, on a MERGE_ON_READ table, schedule and run a compaction of every file group with logs
  (UpgradeDowngradeUtils.rollbackFailedWritesAndCompact, UnBoundedCompactionStrategy): the merged state
  of the old version's rules goes into base files before the merge rules change;
* the metadata table is upgraded along (pyhudi removes it instead, model/metadata_table.py: it never
  maintains one; an index it cannot rebuild is refused unless the write allows deleting it);
* SixToSevenUpgradeHandler: nothing. SevenToEightUpgradeHandler: create `.hoodie/timeline` and its
  `history`; copy every instant file into `.hoodie/timeline`, a completed one named
  `<requested>_<completion>.<action>` with its file's modification time as completion time, commit /
  deltacommit files (every state) and completed replacecommits rewritten as Avro (CommitMetadataSerDeV2),
  a pending replacecommit (a clustering: every other pending write was rolled back) renamed to the
  `clustering` action; convert the archived timeline (`.hoodie/archived`) into the LSM history
  (LegacyArchivedMetaEntryReader: completion time = the archived record's stateTransitionTime);
  properties: `hoodie.timeline.path=timeline`, `hoodie.table.initial.version=6`, key generator class and
  type, typed partition fields of a custom key generator (from the write's partition path option), and
  the merge settings of `upgradeMergeMode` (`_merge_mode`);
* EightToNineUpgradeHandler: the payload class becomes `hoodie.table.legacy.payload.class`, the ordering
  fields move from `hoodie.table.precombine.field` to `hoodie.table.ordering.fields`, index definitions
  without a version get V1;
* one update of `hoodie.properties` with the new version (and alternative keys: the strategy id also
  under hoodie.compaction.record.merger.strategy).

pyhudi runs the same steps, crash-safely: each is re-runnable and `hoodie.properties` flips last. The
timeline is *copied* (the `.hoodie` files stay until the flip) under the table lock, into folders a
version-6 reader never looks at and which each attempt empties first, so a crash before the flip leaves
the version-6 table exactly as it was. The flip records `hoodie.pyhudi.upgrade.cleanup=pending`; the
layout-1 instant files are then deleted and the key removed, and a crash in between is finished by the
next write (`finish_cleanup`). Java moves the files before its flip instead.

Refused (nothing changed): a pending write another (live) writer still runs, a pending restore, rollback
or indexing, an instant file pyhudi does not know, a merge-on-read file group that keeps log files after
the compaction (one in a pending clustering), a custom key generator without its typed partition fields.
Version 7 never reaches here (table_config refuses it).
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import TYPE_CHECKING, Any

from pyhudi.errors import UnsupportedTableError
from pyhudi.faults import fault_point
from pyhudi.model.avro_schemas import AvroModelError
from pyhudi.model.instant_time import ms_to_instant, zone
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.storage import Storage
from pyhudi.timeline.instant import WRITE_ACTIONS, Action, Instant, State, parse_instant_file

if TYPE_CHECKING:
    from pyhudi.timeline.history import HistoryInstant
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.writer.config import WriteConfig

log = logging.getLogger(__name__)

PROPERTIES_FILE = ".hoodie/hoodie.properties"
META_DIR = ".hoodie"
TIMELINE_DIR = ".hoodie/timeline"  # the default hoodie.timeline.path the upgrade records
HISTORY_DIR = ".hoodie/timeline/history"  # hoodie.timeline.history.path's default
CLEANUP_KEY = "hoodie.pyhudi.upgrade.cleanup"  # set by the flip while layout-1 instant files remain
_MODEL = "org.apache.hudi.common.model."
_OVERWRITE, _DEFAULT = _MODEL + "OverwriteWithLatestAvroPayload", _MODEL + "DefaultHoodieRecordPayload"
_EVENT_TIME_ID, _COMMIT_TIME_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5", "ce9acb64-bde0-424c-9b91-f6ebba25356d"
# KeyGeneratorType.fromClassName for the key generators pyhudi writes.
_K = "org.apache.hudi.keygen."
KEYGEN_TYPE_OF = {
    _K + "SimpleKeyGenerator": "SIMPLE", _K + "SimpleAvroKeyGenerator": "SIMPLE_AVRO",
    _K + "ComplexKeyGenerator": "COMPLEX", _K + "ComplexAvroKeyGenerator": "COMPLEX_AVRO",
    _K + "NonpartitionedKeyGenerator": "NON_PARTITION", _K + "NonpartitionedAvroKeyGenerator": "NON_PARTITION_AVRO",
    _K + "TimestampBasedKeyGenerator": "TIMESTAMP", _K + "TimestampBasedAvroKeyGenerator": "TIMESTAMP_AVRO",
    _K + "CustomKeyGenerator": "CUSTOM", _K + "CustomAvroKeyGenerator": "CUSTOM_AVRO",
}
# HoodieRecordMerger's built-in strategy ids (EightToNineUpgradeHandler.BUILTIN_MERGE_STRATEGIES).
_BUILTIN_STRATEGIES = frozenset({_EVENT_TIME_ID, _COMMIT_TIME_ID, "1897ef5f-18bc-4557-939c-9d6a8afd1519",
                                 "00000000-0000-0000-0000-000000000000"})
# Pending actions the copied timeline may hold (others are refused): a clean plan and a crashed
# savepoint carry over as they are, a clustering under 1.x's clustering action.
_CARRIED_PENDING = frozenset({Action.CLEAN, Action.SAVEPOINT, Action.REPLACE_COMMIT})
# The Avro payload of an archived completed instant that the history keeps, by action (besides writes).
_HISTORY_AVRO = {Action.CLEAN: ("hoodieCleanMetadata", "HoodieCleanMetadata"),
                 Action.ROLLBACK: ("hoodieRollbackMetadata", "HoodieRollbackMetadata"),
                 Action.SAVEPOINT: ("hoodieSavePointMetadata", "HoodieSavepointMetadata")}


def read_properties(storage: Storage) -> dict[str, str]:
    return parse_properties(storage.read_bytes(PROPERTIES_FILE).decode("utf-8"))


def _version(props: dict[str, str]) -> int:
    try:
        return int(props.get("hoodie.table.version", "0").strip())
    except ValueError:
        return 0


def upgrade_to(storage: Storage, cfg: WriteConfig, target: int) -> None:
    """Take the table at `storage` to `target` (8 or 9) from 6 or 8; see the module docstring."""
    props = read_properties(storage)
    if _version(props) >= target:
        return
    if _version(props) not in (6, 8):
        raise UnsupportedTableError(
            f"{storage.base_uri}: table version {_version(props)} cannot be upgraded to {target} by pyhudi "
            "(versions 6 and 8 are); write it at its own version")
    _refuse_unrebuildable(storage, props, cfg, target)
    if _version(props) == 6:
        _prepare(storage, cfg)
        _six_to_eight(storage, cfg)
        finish_cleanup(storage)
    if target == 9:
        _prepare(storage, cfg)
        _eight_to_nine(storage, cfg)


def _refuse_unrebuildable(storage: Storage, props: dict[str, str], cfg: WriteConfig, target: int) -> None:
    from pyhudi.config import keys as K
    from pyhudi.model.metadata_table import unrebuildable_indexes

    found = unrebuildable_indexes(props, version=target)
    if found and not cfg.options.get(K.DROP_UNREBUILDABLE_INDEXES):
        raise UnsupportedTableError(
            f"{storage.base_uri}: upgrading to table version {target} removes the metadata table, which holds "
            f"{', '.join(found)} (hoodie.table.metadata.partitions), an index pyhudi cannot rebuild; nothing was "
            "changed. Upgrade with Apache Hudi 1.x, or set hoodie.write.drop.unrebuildable.metadata.indexes=true "
            "(Hudi then has to rebuild the index)")


# ----------------------------------------------------------------------------- shared preparation

def _prepare(storage: Storage, cfg: WriteConfig) -> None:
    """Roll back failed writes, compact a merge-on-read table whole, remove the metadata table: each step
    re-runnable, and run on the table as its current version reads it (rollbackFailedWritesAndCompact)."""
    from pyhudi.model.metadata_table import drop_metadata_table
    from pyhudi.services.rollback import rollback_failed_writes
    from pyhudi.timeline.timeline import ActiveTimeline

    # EAGER (single writer): every pending write is a failed one, as the write's own start treats them;
    # LAZY (optimistic concurrency): only those whose heartbeat expired, a live writer's is left (and refused).
    liveness = (cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses) if cfg.failed_writes_lazy else None
    rollback_failed_writes(storage, ActiveTimeline.load(storage), liveness, cfg.lock)
    fault_point("upgrade_1x.after_rollback")
    drop_metadata_table(storage)
    if cfg.table.is_mor:
        _compact_all(storage, cfg)
    fault_point("upgrade_1x.after_prepare")


def _compact_all(storage: Storage, cfg: WriteConfig) -> None:
    """Every pending compaction, then one plan of every file group with logs (UnBoundedCompactionStrategy:
    no IO cap), executed in this process; then no live file slice may keep a log file."""
    from dataclasses import replace

    from pyhudi.engine import engine_for
    from pyhudi.model.table_config import load_table_config
    from pyhudi.services import compaction
    from pyhudi.writer.config import parquet_settings

    table = load_table_config(storage)
    unbounded = replace(cfg.compaction, target_io=1 << 40, log_size_threshold=0)
    beat = (cfg.heartbeat_interval_ms, cfg.heartbeat_tolerable_misses)
    engine = engine_for(None, cfg.local_parallelism)
    for _ in range(2):  # the pending ones, then the plan of everything they left
        for inst in compaction.pending_compactions(storage):
            if compaction.being_executed(storage, inst, beat):
                raise UnsupportedTableError(
                    f"{storage.base_uri}: compaction {inst} is being executed by another process; the upgrade "
                    "compacts the table first (as Hudi does): write again when it has finished")
            compaction.execute(engine, storage, table, inst, parquet_settings(cfg, storage.base_uri), cfg.marker_type,
                               cfg.lock, beat)
        if compaction.schedule(storage, table, unbounded, force=True, max_file_size=cfg.sizing.max_file_size,
                               lock=cfg.lock) is None:
            break
    _refuse_remaining_logs(storage, table)


def _refuse_remaining_logs(storage: Storage, table: Any) -> None:
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.view.builder import build_view

    view = build_view(storage, table, ActiveTimeline.load(storage))
    for partition in view.partition_paths:
        for fs in view.latest_file_slices(partition):
            if fs.log_files:
                raise UnsupportedTableError(
                    f"{storage.base_uri}: file group {fs.file_id} of partition {partition!r} keeps log files after "
                    "the upgrade's compaction (it is in a pending clustering, or was written meanwhile); its records "
                    "would merge by the new version's rules. Run or roll back the clustering (pyhudi.cluster), then "
                    "write again")


def _pending_left(storage: Storage, timeline: ActiveTimeline) -> None:
    """After the rollback nothing but a clean plan, a crashed savepoint and a clustering may be pending."""
    from pyhudi.services.rollback import is_clustering

    for inst in timeline.pending():
        if inst.action in _CARRIED_PENDING and (inst.action is not Action.REPLACE_COMMIT
                                                or is_clustering(timeline, inst)):
            continue
        raise UnsupportedTableError(
            f"{storage.base_uri}: {inst} is pending (a write of a live writer, or a {inst.action.value} to finish "
            "first); the upgrade needs a timeline where only cleans and clusterings are pending, as Hudi's rolls "
            "back every other one. Let it finish (or roll it back), then write again; nothing was changed")


# ----------------------------------------------------------------------------- 6 -> 8

def _six_to_eight(storage: Storage, cfg: WriteConfig) -> None:
    from pyhudi.model.metadata_table import remember_properties
    from pyhudi.timeline.timeline import ActiveTimeline
    from pyhudi.transaction.lock import ensure_held, table_lock

    with table_lock(storage, cfg.lock) as held:
        props = read_properties(storage)
        if _version(props) >= 8:
            return  # another writer upgraded it meanwhile
        remember_properties(storage, props)  # its timeline is still read as layout 1
        timeline = ActiveTimeline.load(storage)
        _pending_left(storage, timeline)
        new_props = _eight_properties(storage, props, cfg)
        _empty_new_timeline(storage)
        _write_history(storage, props, timeline)
        fault_point("upgrade_1x.after_history")
        _copy_instants(storage, props)
        fault_point("upgrade_1x.before_flip")
        ensure_held(held)
        _write_properties(storage, new_props, "upgraded to table version 8")
        remember_properties(storage, new_props)
    log.info("upgraded %s to table version 8 (timeline layout 2)", storage.base_uri)


def _eight_properties(storage: Storage, props: dict[str, str], cfg: WriteConfig) -> dict[str, str]:
    """SevenToEightUpgradeHandler's table properties, the version and the cleanup note."""
    out = dict(props)
    out["hoodie.timeline.path"] = "timeline"
    out["hoodie.table.initial.version"] = "6"
    keygen = props.get("hoodie.table.keygenerator.class", "").strip()
    if keygen:
        out["hoodie.table.keygenerator.type"] = KEYGEN_TYPE_OF.get(keygen, "USER_PROVIDED")
    if keygen.endswith(("CustomKeyGenerator", "CustomAvroKeyGenerator")):
        out["hoodie.table.partition.fields"] = _typed_partition_fields(storage, cfg)
    out.update(_merge_mode(props))
    out["hoodie.table.version"] = "8"
    out["hoodie.timeline.layout.version"] = "2"
    out[CLEANUP_KEY] = "pending"
    return out


def _typed_partition_fields(storage: Storage, cfg: WriteConfig) -> str:
    """upgradePartitionFields: a custom key generator's table records `field:TYPE` from 1.x on, taken from
    the write's hoodie.datasource.write.partitionpath.field."""
    from pyhudi.config import keys as K

    fields = [f.strip() for f in cfg.options.get(K.PARTITIONPATH_FIELDS) if f.strip()] \
        if cfg.options.is_set(K.PARTITIONPATH_FIELDS) else []
    if not fields or not all(":" in f for f in fields):
        raise UnsupportedTableError(
            f"{storage.base_uri}: a CustomKeyGenerator table records its partition fields with their types from "
            "table version 8 on (hoodie.table.partition.fields=field:SIMPLE,...), which Hudi's upgrade takes from "
            "the write's hoodie.datasource.write.partitionpath.field; pass it with the types (e.g. region:SIMPLE) "
            "to upgrade; nothing was changed")
    return ",".join(fields)


def _merge_mode(props: dict[str, str]) -> dict[str, str]:
    """SevenToEightUpgradeHandler.upgradeMergeMode (1.1): a MERGE_ON_READ table with an ordering field merges
    by event time; otherwise the payload decides, DefaultHoodieRecordPayload (also when the table records
    none: HoodieRecordPayload.getPayloadClassName's default) by event time, any other by commit time. Custom
    payloads never reach here (check_writable refuses them)."""
    payload = props.get("hoodie.compaction.payload.class", "").strip() or _DEFAULT
    ordering = props.get("hoodie.table.precombine.field", "").strip()
    mor = props.get("hoodie.table.type", "").strip().upper() in ("MERGE_ON_READ", "MOR")
    event = (mor and bool(ordering)) or payload in (_DEFAULT, _MODEL + "EventTimeAvroPayload")
    strategy = _EVENT_TIME_ID if event else _COMMIT_TIME_ID
    return {"hoodie.compaction.payload.class": _DEFAULT if event else _OVERWRITE,
            "hoodie.record.merge.mode": "EVENT_TIME_ORDERING" if event else "COMMIT_TIME_ORDERING",
            # UpgradeDowngrade.run sets a property's alternative keys too
            "hoodie.record.merge.strategy.id": strategy, "hoodie.compaction.record.merger.strategy": strategy}


def _empty_new_timeline(storage: Storage) -> None:
    """Remove what an earlier, interrupted attempt copied: the table is still version 6, so nothing reads
    these folders, and the timeline may have changed since."""
    for folder in (HISTORY_DIR, TIMELINE_DIR):
        for info in storage.list_dir(folder):
            if not info.is_dir:
                storage.delete(f"{folder}/{info.name}")
    storage.makedirs(HISTORY_DIR)


def _copy_instants(storage: Storage, props: dict[str, str]) -> None:
    """Every layout-1 instant file into `.hoodie/timeline` under its layout-2 name and content."""
    from pyhudi.timeline.timeline import ActiveTimeline

    tz = zone((props.get("hoodie.table.timeline.timezone") or "LOCAL").strip().upper() == "LOCAL")
    timeline = ActiveTimeline.load(storage)
    clustering = {i.timestamp for i in timeline.pending().actions(Action.REPLACE_COMMIT)}
    for info in storage.list_dir(META_DIR):
        if info.is_dir:
            continue
        inst = parse_instant_file(info.name)
        if inst is None:
            if _looks_like_instant(info.name):
                raise UnsupportedTableError(
                    f"{storage.base_uri}: {META_DIR}/{info.name} looks like an instant file of an action pyhudi does "
                    "not know; upgrade with Apache Hudi 1.x; nothing was changed")
            continue
        data = storage.read_bytes(f"{META_DIR}/{info.name}")
        name = _new_name(inst, info.name, info.mtime_ns, tz, inst.timestamp in clustering)
        storage.write_atomic(f"{TIMELINE_DIR}/{name}", _new_content(inst, data))
        fault_point("upgrade_1x.mid_copy")


def _looks_like_instant(name: str) -> bool:
    head = name.split(".", 1)[0]
    return head.isdigit() and len(head) >= 14


def _new_name(inst: Instant, name: str, mtime_ns: int, tz: Any, clustering: bool) -> str:
    """`<requested>_<completion>.<action>` for a completed instant (its file's modification time in the
    table's zone, never before the requested time), the clustering action for a pending clustering."""
    if inst.state is State.COMPLETED:
        completion = max(ms_to_instant(mtime_ns // 1_000_000, tz), inst.timestamp.ljust(17, "0"))
        return name.replace(inst.timestamp, f"{inst.timestamp}_{completion}", 1)
    if clustering and inst.action is Action.REPLACE_COMMIT:
        return name.replace(f".{Action.REPLACE_COMMIT.value}.", f".{Action.CLUSTERING.value}.", 1)
    return name


def _new_content(inst: Instant, data: bytes) -> bytes:
    """Commit metadata as Hudi 1.x's Avro (CommitMetadataSerDeV2) for commit and deltacommit files of every
    state and completed replacecommits; an empty file stays empty, everything else is copied as it is."""
    from pyhudi.model.commit_avro import commit_avro_bytes, is_avro_container

    rewrite = inst.action in (Action.COMMIT, Action.DELTA_COMMIT) or (
        inst.action is Action.REPLACE_COMMIT and inst.is_completed)
    if not rewrite or not data.strip() or is_avro_container(data):
        return data
    replace = inst.action is Action.REPLACE_COMMIT
    return commit_avro_bytes(json.loads(data), replace, sync_marker=_marker(inst.timestamp, inst.action.value))


def _marker(ts: str, action: str) -> bytes:
    """A sync marker derived from the instant, so a re-run writes the same bytes."""
    return hashlib.md5(f"{ts}.{action}".encode()).digest()


# ----------------------------------------------------------------------------- archived timeline -> history

def _write_history(storage: Storage, props: dict[str, str], active: ActiveTimeline) -> None:
    """The version-6 archive (`.hoodie/<hoodie.archivelog.folder>`) as one level-0 file of the LSM history."""
    from pyhudi.timeline.archived import ArchivedTimeline
    from pyhudi.timeline.history_writer import append_history

    archived = ArchivedTimeline.load(storage, props.get("hoodie.archivelog.folder") or "archived")
    rows = [row for inst in archived.instants if inst.is_completed and not active.contains(inst.timestamp)
            and (row := _history_row(archived, inst)) is not None]
    if rows:
        rows.sort(key=lambda r: r.instant_time)
        append_history(storage, HISTORY_DIR, rows, compact=False)
        log.info("upgrade of %s: %d archived instant(s) moved into the LSM history", storage.base_uri, len(rows))


def _history_row(archived: Any, inst: Instant) -> HistoryInstant | None:
    """LegacyArchivedMetaEntryReader's row: completion time = stateTransitionTime (else the instant time,
    archives of writers that did not record it), metadata = the completed instant's details, plan = the
    pending one's (compaction plan, clean plan, replace requested metadata)."""
    from pyhudi.timeline.archived import commit_json
    from pyhudi.timeline.history import HistoryInstant

    entry = archived.entry(inst)
    if entry is None:
        return None
    completion = str(entry.record.get("stateTransitionTime") or inst.timestamp)
    metadata: bytes | None = None
    if inst.action in WRITE_ACTIONS:
        avro = archived.payload(inst) or entry.record.get("hoodieCommitMetadata")
        if isinstance(avro, dict):
            from pyhudi.model.commit_avro import commit_avro_bytes

            replace = inst.action is Action.REPLACE_COMMIT
            metadata = commit_avro_bytes(commit_json(avro, replace), replace,
                                         sync_marker=_marker(inst.timestamp, inst.action.value))
    elif inst.action in _HISTORY_AVRO:
        field, schema = _HISTORY_AVRO[inst.action]
        metadata = _avro(entry.record.get(field), schema, inst)
    return HistoryInstant(inst.timestamp, completion, inst.action.value, metadata, _plan(archived, inst))


def _plan(archived: Any, inst: Instant) -> bytes | None:
    requested = archived.requested_entry(inst)
    if requested is None:
        return None
    for field, schema in (("hoodieCompactionPlan", "HoodieCompactionPlan"), ("hoodieCleanerPlan", "HoodieCleanerPlan"),
                          ("hoodieRequestedReplaceMetadata", "HoodieRequestedReplaceMetadata")):
        if isinstance(requested.record.get(field), dict):
            return _avro(requested.record[field], schema, inst)
    return None


def _avro(record: Any, schema: str, inst: Instant) -> bytes | None:
    """An archived Avro record as the instant file it came from. The history keeps these for Hudi's
    debugging tools only (no reader of pyhudi's or of Hudi's snapshot paths reads them), so a record that
    does not fit the model is left out with a warning rather than failing the upgrade."""
    from pyhudi.model import avro_models as am

    if not isinstance(record, dict):
        return None
    try:
        return am.write_instant_avro(schema, record, sync_marker=_marker(inst.timestamp, schema))
    except AvroModelError as exc:
        log.warning("upgrade: archived %s of %s left out of the history (%s)", schema, inst, exc)
        return None


# ----------------------------------------------------------------------------- 8 -> 9

def _eight_to_nine(storage: Storage, cfg: WriteConfig) -> None:
    """EightToNineUpgradeHandler for the merge settings pyhudi writes: the payload class becomes the legacy
    payload class (when the strategy id is a built-in one, as reconcilePayloadClassConfig requires), the
    ordering fields move to 1.1's key, index definitions get their version. The merge mode and strategy id
    of DefaultHoodieRecordPayload / OverwriteWithLatestAvroPayload / EventTimeAvroPayload tables stay as
    they are (reconcileMergeModeConfig changes only other payloads, which check_writable refuses)."""
    from pyhudi.model.metadata_table import remember_properties
    from pyhudi.transaction.lock import ensure_held, table_lock

    with table_lock(storage, cfg.lock) as held:
        props = read_properties(storage)
        if _version(props) >= 9:
            return
        out = dict(props)
        strategy = (props.get("hoodie.record.merge.strategy.id") or props.get(
            "hoodie.compaction.record.merger.strategy") or "").strip()
        if strategy in _BUILTIN_STRATEGIES and props.get("hoodie.compaction.payload.class", "").strip():
            out["hoodie.table.legacy.payload.class"] = out.pop("hoodie.compaction.payload.class").strip()
        ordering = out.pop("hoodie.table.precombine.field", None)
        if ordering is not None and "hoodie.table.ordering.fields" not in out:
            out["hoodie.table.ordering.fields"] = ordering
        out["hoodie.table.version"] = "9"
        _version_index_definitions(storage, props)
        ensure_held(held)
        _write_properties(storage, out, "upgraded to table version 9")
        remember_properties(storage, out)
    log.info("upgraded %s to table version 9", storage.base_uri)


def _version_index_definitions(storage: Storage, props: dict[str, str]) -> None:
    """populateIndexVersionIfMissing: every index definition without a version gets V1 (re-runnable)."""
    rel = (props.get("hoodie.table.index.defs.path") or "").strip()
    if not rel or not storage.exists(rel):
        return
    defs = json.loads(storage.read_bytes(rel) or b"{}")
    found = defs.get("indexDefinitions") or {}
    missing = [d for d in found.values() if isinstance(d, dict) and not d.get("version")]
    for d in missing:
        d["version"] = "V1"
    if missing:
        storage.write_atomic(rel, json.dumps(defs, indent=2).encode("utf-8"))


# ----------------------------------------------------------------------------- flip and cleanup

def _write_properties(storage: Storage, props: dict[str, str], why: str) -> None:
    text = format_properties(props, comments=[f"Updated by pyhudi: {why}"])
    storage.write_atomic(PROPERTIES_FILE, text.encode("utf-8"))


def finish_cleanup(storage: Storage, loaded: dict[str, str] | None = None) -> None:
    """After the flip to version 8: delete the layout-1 instant files left in `.hoodie` (copied before the
    flip), then the note that they were left. `loaded`: the properties the operation read; nothing is read
    when they carry no note."""
    if loaded is not None and CLEANUP_KEY not in loaded:
        return
    props = read_properties(storage)
    if CLEANUP_KEY not in props or _version(props) < 8:
        return
    for info in storage.list_dir(META_DIR):
        if not info.is_dir and parse_instant_file(info.name) is not None:
            storage.delete(f"{META_DIR}/{info.name}")
            fault_point("upgrade_1x.mid_cleanup")
    props = read_properties(storage)
    props.pop(CLEANUP_KEY, None)
    _write_properties(storage, props, "upgrade to table version 8 finished")
    from pyhudi.model.metadata_table import remember_properties

    remember_properties(storage, props)
