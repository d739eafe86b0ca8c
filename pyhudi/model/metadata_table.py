"""Hudi's metadata table (`.hoodie/metadata`), which pyhudi does not maintain: removed before any instant
of pyhudi's completes, as Hudi's own writer does with `hoodie.metadata.enable=false`.

Why this matters: Hudi's writers and Hudi 1.x readers list files through the metadata table whenever
`hoodie.properties` names its partitions (`hoodie.table.metadata.partitions`, `files` by default since
Hudi 0.11), without checking it against the timeline. A commit it does not record would be invisible to
them: the next Hudi upsert duplicates keys, its cleaner and clustering never see the new files. Hudi's
`HoodieTableMetadataUtil.deleteMetadataTable` clears the partitions in the table config first, then
deletes the folder; pyhudi does the same, in the same order, so every crash point leaves a table whose
readers ignore the metadata table (properties cleared, folder maybe still there) and the next pyhudi
instant finishes the removal. Hudi rebuilds the metadata table on its next write with it enabled.

Tables of version 8 and 9 (Hudi 1.x) get the same removal (1.x's HoodieTable#maybeDeleteMetadataTable ->
HoodieTableMetadataUtil.deleteMetadataTable: clearMetadataPartitions empties both partition keys, then
the folder goes), with one difference: Hudi deletes whatever the metadata table holds, pyhudi only
`files`, `column_stats` and `partition_stats` (Hudi recomputes them from the data files when the metadata
table is enabled again). Any other partition - `record_index`, `secondary_index_*`, `expr_index_*`,
`bloom_filters` - is an index a user built on purpose; it is deleted only when the write allows it
(`hoodie.write.drop.unrebuildable.metadata.indexes=true`, checked up front by
table_features.check_writable and registered here by model/upgrade.upgrade_for_write), and a removal
that finds one without that permission (a Hudi writer built it since the check) refuses instead. Like
Java, the index definitions (`.hoodie/.index_defs/index.json`, `hoodie.table.index.defs.path`) stay:
they are how a Hudi writer with the metadata table enabled knows which secondary and expression indexes
to rebuild.
"""

from __future__ import annotations

import logging
import threading
import weakref

from pyhudi.errors import UnsupportedTableError
from pyhudi.faults import fault_point
from pyhudi.model.properties import format_properties, parse_properties
from pyhudi.storage import FileInfo, Storage

log = logging.getLogger(__name__)

PROPERTIES_FILE = ".hoodie/hoodie.properties"
METADATA_DIR = ".hoodie/metadata"
PARTITION_KEYS = ("hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight")
# Metadata partitions Hudi rebuilds from the data files alone when the metadata table is enabled again.
REBUILDABLE_PARTITIONS = frozenset({"files", "column_stats", "partition_stats"})
_told_enable = False
_told_lock = threading.Lock()
# Properties each Storage object's current operation loaded (weak: gone with the Storage object).
_loaded: weakref.WeakKeyDictionary[Storage, dict[str, str]] = weakref.WeakKeyDictionary()
# Storage objects whose operation allows deleting indexes pyhudi cannot rebuild (upgrade_for_write), and
# the table states (name, database, metadata partition keys) a write check allowed it for
# (table_features.check_writable with hoodie.write.drop.unrebuildable.metadata.indexes=true).
_drop_allowed: weakref.WeakKeyDictionary[Storage, bool] = weakref.WeakKeyDictionary()
_allowed_states: set[tuple[str, ...]] = set()


def listed_partitions(props: dict[str, str]) -> dict[str, str]:
    """The metadata-table partition properties that name at least one partition."""
    return {k: props[k] for k in PARTITION_KEYS if props.get(k, "").strip()}


def cleared(props: dict[str, str]) -> dict[str, str]:
    """The properties with the metadata partitions emptied, every other entry and its order kept (the
    table checksum covers only the database and table names, so it stays right). Hudi keeps the keys
    with empty values, so pyhudi does too."""
    return {k: ("" if k in PARTITION_KEYS else v) for k, v in props.items()}


def unrebuildable_indexes(props: dict[str, str], version: int | None = None) -> list[str]:
    """The metadata partitions of a version-8/9 table (completed or being built) that are not
    `REBUILDABLE_PARTITIONS`, sorted; none for older versions, whose whole metadata table pyhudi removes
    as it always has. `version`: the version the operation leaves the table at (an upgrade's), when it is
    not the one `props` record."""
    if version is None:
        try:
            version = int(props.get("hoodie.table.version", "6").strip() or "6")
        except ValueError:
            return []
    if version < 8:
        return []
    found = {p.strip() for k in PARTITION_KEYS for p in props.get(k, "").split(",") if p.strip()}
    return sorted(found - REBUILDABLE_PARTITIONS)


def allow_index_drop(storage: Storage, allowed: bool) -> None:
    """Note whether this operation (through `storage`) may delete indexes pyhudi cannot rebuild."""
    _drop_allowed[storage] = allowed


def _state(props: dict[str, str]) -> tuple[str, ...]:
    return (props.get("hoodie.table.name", ""), props.get("hoodie.database.name", ""),
            *(props.get(k, "") for k in PARTITION_KEYS))


def allow_index_drop_of(props: dict[str, str]) -> None:
    """A write check allowed deleting the indexes these properties list (every write and table service
    builds its configuration through that check, services that never upgrade included)."""
    with _told_lock:
        _allowed_states.add(_state(props))


def remember_properties(storage: Storage, props: dict[str, str]) -> None:
    """Note the properties this operation loaded through `storage` (model/table_config.load_table_config),
    so each instant's completion can check for a metadata table with one LIST (`drop_metadata_table`)."""
    _loaded[storage] = dict(props)


# A listing of `.hoodie` (layout 1: the timeline folder) taken while loading the table's properties, for
# the one timeline load that asks for it (`take_listing`); any other load discards it.
_listings: weakref.WeakKeyDictionary[Storage, list[FileInfo]] = weakref.WeakKeyDictionary()


def remember_listing(storage: Storage, listing: list[FileInfo]) -> None:
    _listings[storage] = listing


def take_listing(storage: Storage, reuse: bool) -> list[FileInfo] | None:
    """The `.hoodie` listing `load_table_config` took through `storage`, if `reuse` and not yet taken; it is
    forgotten either way, so it serves at most the first timeline load after it, and only one that asked."""
    found = _listings.pop(storage, None)
    return found if reuse else None


def loaded_properties(storage: Storage) -> dict[str, str] | None:
    """The properties this operation loaded through `storage`, if it loaded them (timeline/layout.py
    finds the timeline's folder from them without another GET)."""
    found = _loaded.get(storage)
    return dict(found) if found is not None else None


def drop_metadata_table(storage: Storage, folder_listed: bool | None = None) -> list[str]:
    """Remove the metadata table if the table has one; returns what was removed (empty: nothing).

    Called before every completion (under the table lock), so a metadata table a Hudi writer created
    since this operation began is still found. The cheap check is one LIST of `.hoodie/metadata`: Hudi
    creates that folder before it names any partition in `hoodie.properties` (HoodieBackedTableMetadataWriter
    initializes the metadata table's own meta client first, then marks each partition done), and removes
    the names before the folder, as pyhudi does; so names without a folder arise only from someone
    deleting the folder by hand, which the properties loaded at the start of the operation show. Only when
    either says so is `hoodie.properties` read again (fresh) and the removal done. `folder_listed`: whether
    a listing of `.hoodie` the caller took under the same table lock showed the folder (None: not known,
    LIST it)."""
    known = _loaded.get(storage)
    if known is not None and not listed_partitions(known) and not (
            storage.folder_exists(METADATA_DIR) if folder_listed is None else folder_listed):
        return []
    try:
        props = parse_properties(storage.read_bytes(PROPERTIES_FILE).decode("utf-8"))
    except FileNotFoundError:
        return []
    _check_indexes(storage, props)
    removed = [f"{k}={v}" for k, v in listed_partitions(props).items()]
    if removed:
        text = format_properties(cleared(props), comments=["Updated by pyhudi: metadata table removed"])
        storage.write_atomic(PROPERTIES_FILE, text.encode("utf-8"))
        if known is not None:
            _loaded[storage] = cleared(props)
        fault_point("metadata_table.after_properties")
    if storage.is_dir(METADATA_DIR):
        _delete_tree(storage)
        removed.append(METADATA_DIR)
    if removed:
        log.warning("removed Hudi's metadata table of %s (%s) before completing an instant: pyhudi does not "
                    "maintain it, and Hudi's writers would trust it over the timeline. Hudi rebuilds it on "
                    "its next write with hoodie.metadata.enable=true", storage.base_uri, ", ".join(removed))
    return removed


def _check_indexes(storage: Storage, props: dict[str, str]) -> None:
    """Refuse to delete an index of a 1.x table that pyhudi cannot rebuild unless the operation allows it."""
    found = unrebuildable_indexes(props)
    if found and not _drop_allowed.get(storage, False) and _state(props) not in _allowed_states:
        raise UnsupportedTableError(
            f"{storage.base_uri}: the metadata table now holds {', '.join(found)} (hoodie.table.metadata.partitions="
            f"{props.get('hoodie.table.metadata.partitions', '')}), an index pyhudi cannot rebuild, and pyhudi "
            "removes the metadata table before it completes an instant; nothing was deleted and the instant is "
            "not completed. Write this table with Apache Hudi, or set "
            "hoodie.write.drop.unrebuildable.metadata.indexes=true (Hudi then has to rebuild the index)")


def _delete_tree(storage: Storage) -> None:
    """Entry by entry (its own timeline last), so a crash can stop it part-way, as on an object store
    where a folder is many objects; whatever is left goes on the next instant."""
    entries = sorted(storage.list_dir(METADATA_DIR), key=lambda e: e.name == ".hoodie")
    for i, entry in enumerate(entries):
        rel = f"{METADATA_DIR}/{entry.name}"
        if entry.is_dir:
            storage.delete_dir(rel)
        else:
            storage.delete(rel)
        if i == 0:
            fault_point("metadata_table.mid_delete")
    storage.delete_dir(METADATA_DIR)


def note_enable_requested() -> None:
    """`hoodie.metadata.enable=true` from a user: say once per process that pyhudi does not keep it."""
    global _told_enable
    with _told_lock:
        if _told_enable:
            return
        _told_enable = True
    log.warning("hoodie.metadata.enable=true: pyhudi does not maintain Hudi's metadata table; it lists files "
                "from storage, and removes an existing metadata table before its first commit (Hudi rebuilds "
                "it on its next write with the metadata table enabled)")
