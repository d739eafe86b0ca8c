"""Which partitions a sync registers, and how a partition path becomes catalog values.

The extractors are Hudi's PartitionValueExtractor classes (org.apache.hudi.hive.*), with Java's
`String.split` semantics. The change detection is Hudi's: TimelineUtils.getWrittenPartitions (every
partition a completed write touched since the sync point), TimelineUtils.getDroppedPartitions (partitions a
delete_partition / insert_overwrite(_table) replaced, or a clean deleted, and no later write refilled) and
HoodieSyncClient.getPartitionEvents (add, update a moved location, drop). Only the instants after the sync
point are read, so an incremental sync costs what the new commits wrote, not the table's size.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from urllib.parse import unquote

from pyhudi.errors import MetaSyncError
from pyhudi.model import avro_models as am
from pyhudi.sync.catalog import PartitionDef
from pyhudi.timeline.instant import Action, Instant
from pyhudi.timeline.timeline import ActiveTimeline

log = logging.getLogger(__name__)

MULTI_PART = "MultiPartKeysValueExtractor"
HIVE_STYLE = "HiveStylePartitionValueExtractor"
SINGLE_PART = "SinglePartPartitionValueExtractor"
NON_PARTITIONED = "NonPartitionedExtractor"
SLASH_DAY = "SlashEncodedDayPartitionValueExtractor"
SLASH_HOUR = "SlashEncodedHourPartitionValueExtractor"
DELETE_OPERATIONS = frozenset({"DELETE_PARTITION", "INSERT_OVERWRITE_TABLE", "INSERT_OVERWRITE"})


def _java_split(text: str, sep: str) -> list[str]:
    """Java's String.split(sep): trailing empty strings removed; an empty input gives [""]."""
    if text == "":
        return [""]
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _fail(extractor: str, path: str, why: str) -> MetaSyncError:
    return MetaSyncError(f"{extractor}: partition path {path!r} {why}; set "
                         "hoodie.datasource.hive_sync.partition_extractor_class to match the table's layout")


def _multi_part(path: str) -> list[str]:
    if path == "":
        return []
    out = []
    for part in _java_split(path, "/"):
        if "=" in part:
            more = _java_split(part, "=")
            if len(more) != 2:
                raise _fail(MULTI_PART, path, f"has the field {part!r} not in the form key=value")
            part = more[1]
        out.append(part)
    return out


def _hive_style(path: str) -> list[str]:
    parts = _java_split(path, "=")
    if len(parts) != 2:
        raise _fail(HIVE_STYLE, path, "is not in the form partition_key=partition_value")
    return [parts[1]]


def _date_parts(path: str, count: int, extractor: str) -> list[int]:
    parts = _java_split(path, "/")
    if len(parts) != count:
        raise _fail(extractor, path, "is not in the form yyyy/mm/dd" + ("/hh" if count == 4 else ""))
    try:
        return [int(_java_split(p, "=")[1] if "=" in p else p) for p in parts]
    except (ValueError, IndexError) as exc:
        raise _fail(extractor, path, "does not hold numbers") from exc


def _slash_day(path: str) -> list[str]:
    y, m, d = _date_parts(path, 3, SLASH_DAY)
    return [_checked(SLASH_DAY, path, lambda: datetime(y, m, d).strftime("%Y-%m-%d"))]


def _slash_hour(path: str) -> list[str]:
    y, m, d, h = _date_parts(path, 4, SLASH_HOUR)
    return [_checked(SLASH_HOUR, path, lambda: datetime(y, m, d, h).strftime("%Y-%m-%d-%H"))]


def _checked(extractor: str, path: str, make: Callable[[], str]) -> str:
    try:
        return make()
    except ValueError as exc:
        raise _fail(extractor, path, f"is not a date ({exc})") from exc


EXTRACTORS: dict[str, Callable[[str], list[str]]] = {
    MULTI_PART: _multi_part,
    HIVE_STYLE: _hive_style,
    SINGLE_PART: lambda path: [path.replace("/", "-")],
    NON_PARTITIONED: lambda path: [],
    SLASH_DAY: _slash_day,
    SLASH_HOUR: _slash_hour,
}


def infer_extractor(fields: Iterable[str], hive_style: bool) -> str:
    """HoodieSyncConfig's PARTITION_EXTRACTOR_CLASS_FUNCTION: none -> NonPartitionedExtractor; one field ->
    HiveStylePartitionValueExtractor with hive-style partitioning, else SinglePartPartitionValueExtractor;
    several -> MultiPartKeysValueExtractor."""
    count = len([f for f in fields if f])
    if count == 0:
        return NON_PARTITIONED
    if count == 1:
        return HIVE_STYLE if hive_style else SINGLE_PART
    return MULTI_PART


def partition_values(extractor: str, path: str, decode: bool) -> tuple[str, ...]:
    """The catalog values of a partition path; URL-decoded with hoodie.meta.sync.decode_partition."""
    values = EXTRACTORS[extractor](path)
    return tuple(unquote(v) for v in values) if decode else tuple(values)


def partition_location(base_path: str, partition: str) -> str:
    """FSUtils.getPartitionPath: the base path, `/`, the relative partition path."""
    return f"{base_path.rstrip('/')}/{partition}" if partition else base_path


def path_only(location: str) -> str:
    """Path.getPathWithoutSchemeAndAuthority(...).toUri().getPath(): locations are compared without
    scheme and authority, so `s3a://b/t/p` and `s3://b/t/p` are the same partition."""
    rest = location
    if "://" in rest:
        rest = rest.split("://", 1)[1]
        rest = "/" + rest.split("/", 1)[1] if "/" in rest else "/"
    elif rest.startswith("file:"):
        rest = rest[len("file:"):]
    return "/" + rest.strip("/") if rest.strip("/") else "/"


# ----------------------------------------------------------------------------- events

class EventType(str, Enum):
    ADD = "add"
    UPDATE = "update"
    DROP = "drop"


@dataclass(frozen=True)
class PartitionEvent:
    """Hudi's PartitionEvent: the storage partition path, and the catalog values/location it maps to."""

    type: EventType
    path: str
    partition: PartitionDef


@dataclass(frozen=True)
class Layout:
    """How storage partitions map to catalog partitions for one sync."""

    base_path: str
    extractor: str
    decode: bool

    def values(self, path: str) -> tuple[str, ...]:
        return partition_values(self.extractor, path, self.decode)

    def partition(self, path: str) -> PartitionDef:
        return PartitionDef(self.values(path), partition_location(self.base_path, path))


def _catalog_index(catalog: Iterable[PartitionDef]) -> dict[tuple[str, ...], PartitionDef]:
    return {p.values: p for p in catalog}


def incremental_events(layout: Layout, catalog: Iterable[PartitionDef], written: Iterable[str],
                       dropped: set[str]) -> list[PartitionEvent]:
    """HoodieSyncClient.getPartitionEvents(metastore, written, dropped): a written partition that was dropped
    is dropped (only when the catalog has it, so that a repeated sync changes nothing); otherwise it is
    added when the catalog lacks its values, updated when the catalog's location differs."""
    known = _catalog_index(catalog)
    events: list[PartitionEvent] = []
    for path in sorted(set(written)):
        values = layout.values(path)
        if path in dropped:
            if values in known:
                events.append(PartitionEvent(EventType.DROP, path, known[values]))
            continue
        if values:
            events.extend(_add_or_update(layout, path, known))
    return events


def full_events(layout: Layout, catalog: Iterable[PartitionDef], on_storage: Iterable[str]) -> list[PartitionEvent]:
    """HoodieSyncClient.getPartitionEvents(metastore, storage): add and update as above for every partition of
    the table; drop every catalog partition the table does not have."""
    known = _catalog_index(catalog)
    keep: set[tuple[str, ...]] = set()
    events: list[PartitionEvent] = []
    for path in sorted(set(on_storage)):
        values = layout.values(path)
        if not values:
            continue
        keep.add(values)
        events.extend(_add_or_update(layout, path, known))
    for values, part in sorted(known.items()):
        if values not in keep:
            events.append(PartitionEvent(EventType.DROP, _relative(layout.base_path, part.location), part))
    return events


def _add_or_update(layout: Layout, path: str, known: dict[tuple[str, ...], PartitionDef]) -> list[PartitionEvent]:
    wanted = layout.partition(path)
    current = known.get(wanted.values)
    if current is None:
        return [PartitionEvent(EventType.ADD, path, wanted)]
    if path_only(current.location) != path_only(wanted.location):
        return [PartitionEvent(EventType.UPDATE, path, wanted)]
    return []


def _relative(base_path: str, location: str) -> str:
    base, loc = path_only(base_path), path_only(location)
    return loc[len(base):].strip("/") if loc.startswith(base) else location


# ----------------------------------------------------------------------------- the timeline's side

def written_partitions(timeline: ActiveTimeline, window: list[Instant]) -> list[str]:
    """TimelineUtils.getWrittenPartitions: the partitions each completed write of the window wrote, and for a
    replacecommit also those it replaced."""
    out: set[str] = set()
    for inst in window:
        meta = timeline.commit_metadata(inst)
        out.update(meta.partition_to_write_stats)
        if meta.partition_to_replace_file_ids is not None:
            out.update(meta.partition_to_replace_file_ids)
    out.discard("")
    return sorted(out)


def dropped_partitions(timeline: ActiveTimeline, window: list[Instant], cleans: list[Instant]) -> set[str]:
    """TimelineUtils.getDroppedPartitions: partitions a delete_partition / insert_overwrite(_table) of the
    window replaced, or a clean marked `isPartitionDeleted`, unless a write of the window at or after that
    time wrote them again (the latest delete is compared with the latest write, as Hudi does)."""
    deleted: dict[str, str] = {}
    for inst in window:
        if inst.action is not Action.REPLACE_COMMIT:
            continue
        meta = timeline.commit_metadata(inst)
        if meta.operation_type in DELETE_OPERATIONS:
            for p in meta.partition_to_replace_file_ids or {}:
                deleted[p] = inst.timestamp
    for inst in cleans:
        for p in _cleaned_away(timeline, inst):
            deleted[p] = inst.timestamp
    if not deleted:
        return set()
    earliest = min(deleted.values())
    last_write: dict[str, str] = {}
    for inst in window:
        if inst.timestamp >= earliest:
            for p in timeline.commit_metadata(inst).partition_to_write_stats:
                last_write[p] = inst.timestamp
    return {p for p, ts in deleted.items() if p and (p not in last_write or ts > last_write[p])}


def cleaned_partitions(timeline: ActiveTimeline, cleans: list[Instant]) -> list[str]:
    """Partitions the cleans deleted (a table written by Hudi; pyhudi's cleaner leaves partitions in place)."""
    return sorted({p for inst in cleans for p in _cleaned_away(timeline, inst) if p})


def _cleaned_away(timeline: ActiveTimeline, inst: Instant) -> list[str]:
    """Partitions a completed clean deleted (HoodieCleanPartitionMetadata.isPartitionDeleted)."""
    try:
        meta = am.read_instant_avro(timeline.details(inst))
    except Exception as exc:  # an unreadable clean must not stop the sync: Hudi skips archived ones too
        log.warning("meta sync: cannot read clean %s (%s); its deleted partitions are not dropped", inst, exc)
        return []
    return [p for p, m in (meta.get("partitionMetadata") or {}).items() if (m or {}).get("isPartitionDeleted")]
