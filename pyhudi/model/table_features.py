"""Table features pyhudi does not implement: refused by name, never misread or silently broken.

Two checks, both raising `UnsupportedTableError` that names the feature and the property (or folder)
that shows it:

* `check_readable` runs whenever `hoodie.properties` is loaded (`table_config.load_table_config`), so
  every read, write, table service and CLI command passes it. It refuses what would make pyhudi's
  reader return wrong rows: bootstrap tables, ORC/HFile base files (LANCE ones without the `lance`
  package), another log file format or table format, partition metadata files in base-file format,
  partition columns left out of the data files, merge semantics pyhudi's merge of MOR logs does not
  implement (payload classes, merge strategies, CUSTOM merge modes, partial updates, merge
  properties), key generators it does not know, and any `hoodie.table.*` or `hoodie.timeline.*`
  property that is not on the allow-lists below.
* `check_writable` runs where every write and table service builds its configuration
  (`writer/config.build_write_config`). On top of the above it refuses what a pyhudi write would break
  for other readers and writers: table versions and layouts outside `WRITTEN_VERSIONS`, a
  `hoodie.write.table.version` that would downgrade the table (`write_version`), CDC-enabled tables (a
  write without CDC logs breaks CDC queries), a consistent-hashing bucket index (table folder or option),
  RECORD_INDEX/HBASE as the write index, a secondary index, non-blocking concurrency control, payload
  classes / merge modes pyhudi does not implement (COW tables too), on tables of version 8 and 9 the
  merge settings the write path cannot carry (`_write_merge`: several ordering fields, a delete marker)
  and a metadata table holding an index pyhudi cannot rebuild (`_metadata_indexes`), and on tables with
  virtual keys (`hoodie.populate.meta.fields=false`) every operation that has to find the stored records
  by key.

Merge semantics (`resolve_merge`) follow Hudi 1.x's `HoodieTableConfig.inferMergingConfigsForPreV9Table`
for table versions 8 and 9, and Hudi 0.14/0.15's payload classes for versions 4-6 (see the function).

Unknown properties: a property of HoodieTableConfig (0.14/0.15, 1.0.2, 1.1.x) that pyhudi handles, or
that does not change how files are read, is on `KNOWN_TABLE_PROPERTIES` / `KNOWN_TIMELINE_PROPERTIES`;
any other `hoodie.table.*` / `hoodie.timeline.*` key may (it is how Hudi adds table-level switches), so
it is refused on read and on write. Keys outside these prefixes that matter are checked one by one
(`_READ_CHECKS`); other keys are left alone, because Hudi writers put write options into
hoodie.properties that change nothing.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pyhudi.errors import UnsupportedTableError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from pyhudi.model.table_config import TableConfig
    from pyhudi.storage import Storage

_MODEL = "org.apache.hudi.common.model."
OVERWRITE_PAYLOAD = _MODEL + "OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = _MODEL + "DefaultHoodieRecordPayload"
EVENT_TIME_PAYLOAD = _MODEL + "EventTimeAvroPayload"
AWS_DMS_PAYLOAD = _MODEL + "AWSDmsAvroPayload"
# Hudi 0.14/0.15 semantics pyhudi implements for tables of version 4-6 (reader/log_merge.py).
SUPPORTED_PAYLOADS = frozenset({OVERWRITE_PAYLOAD, DEFAULT_PAYLOAD})
PAYLOAD_KEY = "hoodie.compaction.payload.class"
LEGACY_PAYLOAD_KEY = "hoodie.table.legacy.payload.class"

# HoodieRecordMerger's built-in strategy ids (Hudi 1.x). EVENT_TIME's id is also the one Hudi 0.14/0.15
# wrote for its payload-based HoodieAvroRecordMerger (its DEFAULT_MERGER_STRATEGY_UUID).
EVENT_TIME_STRATEGY = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
CUSTOM_STRATEGY = "1897ef5f-18bc-4557-939c-9d6a8afd1519"
PAYLOAD_STRATEGY = "00000000-0000-0000-0000-000000000000"
STRATEGY_KEY = "hoodie.record.merge.strategy.id"  # Hudi 1.x's name
OLD_STRATEGY_KEY = "hoodie.compaction.record.merger.strategy"  # Hudi 0.13-0.15's name (1.x's alternative)
SUPPORTED_MERGER_STRATEGIES = frozenset({EVENT_TIME_STRATEGY})  # what a 0.x writer's strategy may be

MERGE_MODE_KEY = "hoodie.record.merge.mode"
COMMIT_TIME, EVENT_TIME, CUSTOM = "COMMIT_TIME_ORDERING", "EVENT_TIME_ORDERING", "CUSTOM"
# hoodie.record.merge.mode (Hudi 1.x) and the payload class each mode stands for in pyhudi.
MERGE_MODE_PAYLOADS = {COMMIT_TIME: OVERWRITE_PAYLOAD, EVENT_TIME: DEFAULT_PAYLOAD}
# The payload-mode names of reader/log_merge.MergeMode (Hudi 0.14/0.15 rules, table versions 4-6).
OVERWRITE_MODE, DEFAULT_MODE = "OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload"

PARTIAL_UPDATE_KEY = "hoodie.table.partial.update.mode"
# PartialUpdateMode (1.1.x) values and what each does to a MOR read: the merged record's columns are not all
# the winning record's. NONE is the no-op default of 1.1 development builds (absent in released tables).
PARTIAL_UPDATE_MODES = {
    "KEEP_VALUES": "columns missing from a partial log record keep the older record's values",
    "IGNORE_DEFAULTS": "columns holding their schema default keep the older record's values",
    "FILL_UNAVAILABLE": "columns holding the 'unavailable' marker keep the older record's values",
    "IGNORE_MARKERS": "columns holding a custom marker keep the older record's values",
}
MERGE_PROPERTY_PREFIX = "hoodie.record.merge.property."
# DefaultHoodieRecordPayload.DELETE_KEY / DELETE_MARKER as 1.1 stores them: a record whose field's value
# (as text) equals the marker is a delete (DeleteContext); AWSDmsAvroPayload tables get Op / D.
DELETE_KEY = MERGE_PROPERTY_PREFIX + "hoodie.payload.delete.field"
DELETE_MARKER = MERGE_PROPERTY_PREFIX + "hoodie.payload.delete.marker"
# hoodie.table.legacy.payload.class (1.1, RFC-97) whose 1.x semantics pyhudi implements: the merge mode, the
# ordering fields and (AWS DMS) the delete marker say all of it. Others are refused by class name.
LEGACY_PAYLOADS = frozenset({OVERWRITE_PAYLOAD, DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD, AWS_DMS_PAYLOAD})

_KEYGEN = "org.apache.hudi.keygen."
SIMPLE, COMPLEX, NONPARTITIONED = (_KEYGEN + "SimpleKeyGenerator", _KEYGEN + "ComplexKeyGenerator",
                                   _KEYGEN + "NonpartitionedKeyGenerator")
KNOWN_KEYGENS = frozenset({
    SIMPLE, COMPLEX, NONPARTITIONED, _KEYGEN + "TimestampBasedKeyGenerator",
    _KEYGEN + "TimestampBasedAvroKeyGenerator", _KEYGEN + "CustomKeyGenerator", _KEYGEN + "CustomAvroKeyGenerator",
    _KEYGEN + "SimpleAvroKeyGenerator", _KEYGEN + "ComplexAvroKeyGenerator", _KEYGEN + "NonpartitionedAvroKeyGenerator",
})
# The Avro twins of Hudi's Spark key generators make the same keys and paths (the Spark classes extend
# them); pyhudi names them by the Spark class (keygen/spec.py compares class names).
AVRO_TWINS = {_KEYGEN + "SimpleAvroKeyGenerator": SIMPLE, _KEYGEN + "ComplexAvroKeyGenerator": COMPLEX,
              _KEYGEN + "NonpartitionedAvroKeyGenerator": NONPARTITIONED}
# hoodie.table.keygenerator.type (Hudi 1.x KeyGeneratorType) -> the class pyhudi renders keys with
KEYGEN_TYPES = {
    "SIMPLE": SIMPLE, "SIMPLE_AVRO": SIMPLE, "COMPLEX": COMPLEX, "COMPLEX_AVRO": COMPLEX,
    "NON_PARTITION": NONPARTITIONED, "NON_PARTITION_AVRO": NONPARTITIONED,
    "TIMESTAMP": _KEYGEN + "TimestampBasedKeyGenerator", "TIMESTAMP_AVRO": _KEYGEN + "TimestampBasedAvroKeyGenerator",
    "CUSTOM": _KEYGEN + "CustomKeyGenerator", "CUSTOM_AVRO": _KEYGEN + "CustomAvroKeyGenerator",
}
# KeyGeneratorType values pyhudi does not implement (1.x has them; most were never table key generators).
UNKNOWN_KEYGEN_TYPES = {
    "GLOBAL_DELETE": "the global-delete key generator", "GLOBAL_DELETE_AVRO": "the global-delete key generator",
    "AUTO_RECORD": "auto-generated record keys", "AUTO_RECORD_AVRO": "auto-generated record keys",
    "HOODIE_TABLE_METADATA": "the metadata table's key generator", "SPARK_SQL": "Spark SQL's key generator",
    "SPARK_SQL_UUID": "Spark SQL's UUID key generator", "SPARK_SQL_MERGE_INTO": "Spark SQL's MERGE INTO key generator",
    "STREAMER_TEST": "a test key generator", "USER_PROVIDED": "a key generator class of the user's",
}
CONSISTENT_HASHING_DIR = ".hoodie/.bucket_index/consistent_hashing_metadata"
UNSUPPORTED_WRITE_INDEXES = {"RECORD_INDEX": "the record-level index (kept in the metadata table)",
                             "HBASE": "the HBase index", "FLINK_STATE": "Flink's state index"}
LANCE_EXTRA = "pip install 'pyhudi[lance]'"

KNOWN_TABLE_PROPERTIES = frozenset({
    # identity and layout pyhudi reads (model/table_config.py)
    "hoodie.table.name", "hoodie.table.type", "hoodie.table.version", "hoodie.table.precombine.field",
    "hoodie.table.partition.fields", "hoodie.table.recordkey.fields", "hoodie.table.keygenerator.class",
    "hoodie.table.create.schema", "hoodie.table.timeline.timezone", "hoodie.table.checksum",
    "hoodie.table.keygenerator.type",
    # 1.1's name of the ordering (precombine) fields, a comma list: read first (table_config.ordering_fields)
    "hoodie.table.ordering.fields",
    # the table version at creation (1.x): upgrade bookkeeping, nothing is read differently
    "hoodie.table.initial.version",
    # checked by value below
    "hoodie.table.base.file.format", "hoodie.table.ro.file.format", "hoodie.table.log.file.format",
    "hoodie.table.rt.file.format", "hoodie.table.cdc.enabled", "hoodie.table.cdc.supplemental.logging.mode",
    "hoodie.table.secondary.indexes.metadata", "hoodie.table.format", "hoodie.table.multiple.base.file.formats.enable",
    PARTIAL_UPDATE_KEY, LEGACY_PAYLOAD_KEY,
    # the metadata table: pyhudi never reads it and removes it on write (model/metadata_table.py)
    "hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight",
    # where the metadata table's index definitions (secondary / expression indexes) live: metadata-table only
    "hoodie.table.index.defs.path",
})
# hoodie.timeline.*: the layout (checked against the table version by table_config) and, for layout 2, the
# timeline and history folders under .hoodie (table_config.timeline_dir / history_dir; checked below)
KNOWN_TIMELINE_PROPERTIES = frozenset({
    "hoodie.timeline.layout.version", "hoodie.timeline.path", "hoodie.timeline.history.path",
})
TIMELINE_PATH_KEYS = ("hoodie.timeline.path", "hoodie.timeline.history.path")


def _fail(feature: str, prop: str, fix: str, where: str) -> UnsupportedTableError:
    return UnsupportedTableError(f"{where}: {feature} ({prop}) is not supported by pyhudi; {fix}")


def _flag(props: Mapping[str, str], key: str) -> bool:
    return props.get(key, "false").strip().lower() == "true"


def table_version_of(props: Mapping[str, str]) -> int:
    """hoodie.table.version; 6 when absent or malformed (table_config refuses those before any read)."""
    try:
        return int(props.get("hoodie.table.version", "6").strip())
    except ValueError:
        return 6


def ordering_fields_of(props: Mapping[str, str]) -> tuple[str, ...]:
    """The fields an event-time merge compares, in order: `hoodie.table.ordering.fields` (1.1) when the key
    is there, even empty (Java reads it with the precombine key as its alternative), else the older
    `hoodie.table.precombine.field` (a comma list since 1.1 as well)."""
    key = "hoodie.table.ordering.fields" if "hoodie.table.ordering.fields" in props else "hoodie.table.precombine.field"
    return tuple(f.strip() for f in props.get(key, "").split(",") if f.strip())


# ----------------------------------------------------------------------------- files and layout

def _bootstrap(props: Mapping[str, str], where: str) -> None:
    base = props.get("hoodie.bootstrap.base.path", "").strip()
    if base:
        raise _fail("a bootstrapped table (its data stays in the source files, joined through a bootstrap "
                    "index)", f"hoodie.bootstrap.base.path={base}",
                    "read and write it with Apache Hudi, or rewrite it into a regular table first", where)


def lance_available() -> bool:
    """Whether the `lance` package (pylance, the `lance` extra) imports: io/lance_file.py reads with it."""
    try:
        importlib.import_module("lance")
    except ImportError:
        return False
    return True


def _base_file_formats(props: Mapping[str, str], where: str, write: bool) -> None:
    """PARQUET is read and written; LANCE (Hudi 1.2) is read when the `lance` package is installed."""
    for key in ("hoodie.table.base.file.format", "hoodie.table.ro.file.format"):
        value = props.get(key, "PARQUET").strip().upper()
        if value == "PARQUET":
            continue
        if value == "LANCE" and not write:
            if not lance_available():
                raise UnsupportedTableError(
                    f"{where}: LANCE base files ({key}={props[key]}) are read with the lance package, which is "
                    f"not installed; install it with {LANCE_EXTRA}")
            continue
        fix = ("pyhudi writes parquet base files only; write this table with Apache Hudi" if value == "LANCE"
               else "pyhudi reads parquet and lance base files and writes parquet ones; use Apache Hudi")
        raise _fail(f"{value} base files", f"{key}={props[key]}", fix, where)


def _file_formats(props: Mapping[str, str], where: str, write: bool = False) -> None:
    _base_file_formats(props, where, write)
    for key in ("hoodie.table.log.file.format", "hoodie.table.rt.file.format"):
        value = props.get(key, "HOODIE_LOG").strip().upper()
        if value != "HOODIE_LOG":
            raise _fail(f"{value} log files", f"{key}={props[key]}",
                        "pyhudi reads Hudi log files (HOODIE_LOG) only; use Apache Hudi", where)
    if _flag(props, "hoodie.partition.metafile.use.base.format"):
        raise _fail("partition metadata files in base-file format (pyhudi finds partitions by "
                    ".hoodie_partition_metadata)", "hoodie.partition.metafile.use.base.format=true",
                    "use Apache Hudi", where)
    if _flag(props, "hoodie.table.multiple.base.file.formats.enable"):
        raise _fail("base files of several formats in one table", "hoodie.table.multiple.base.file.formats.enable=true",
                    "pyhudi reads one base file format per table; use Apache Hudi", where)


def _table_format(props: Mapping[str, str], where: str) -> None:
    """hoodie.table.format (1.1): `native` is Hudi's own timeline; another format plugs in a timeline
    pyhudi cannot read (HoodieTableConfig.getTableFormat loads it by name)."""
    value = props.get("hoodie.table.format", "native").strip()
    if value.lower() != "native":
        raise _fail(f"the table format {value}", f"hoodie.table.format={value}",
                    "pyhudi reads Hudi's native table format only; use Apache Hudi", where)


def _dropped_partition_columns(props: Mapping[str, str], where: str) -> None:
    if _flag(props, "hoodie.datasource.write.drop.partition.columns"):
        raise _fail("partition columns left out of the data files (their values are only in the paths)",
                    "hoodie.datasource.write.drop.partition.columns=true",
                    "read and write it with Apache Hudi", where)


def _timeline_paths(props: Mapping[str, str], where: str) -> None:
    """The layout-2 timeline and history folders are relative paths under .hoodie; anything else would
    send pyhudi to list (or write) outside the table's metadata folder."""
    for key in TIMELINE_PATH_KEYS:
        value = props.get(key)
        if value is None:
            continue
        parts = value.strip().strip("/").split("/")
        if value.strip().startswith("/") or "\\" in value or any(p in ("", ".", "..") for p in parts):
            raise _fail(f"a timeline folder outside .hoodie ({value!r})", f"{key}={value}",
                        "pyhudi reads a timeline kept in a folder under .hoodie only; use Apache Hudi", where)


# ----------------------------------------------------------------------------- merge semantics

@dataclass(frozen=True)
class MergeConfig:
    """How a table's records combine (reader/log_merge.py carries it out).

    `mode` is a `log_merge.MergeMode` value: one of Hudi 1.x's orderings, or (table versions 4-6 without
    a 1.x merge configuration) the Hudi 0.14/0.15 payload class whose rules apply. `ordering_fields` are
    the table's, whatever the mode; `delete_marker` is (field, value): a record whose field equals the
    value is a delete.
    """

    mode: str
    ordering_fields: tuple[str, ...] = ()
    delete_marker: tuple[str, str] | None = None


def resolve_merge(props: Mapping[str, str], where: str, version: int | None = None,
                  ordering: tuple[str, ...] | None = None) -> MergeConfig:
    """The merge a read of this table applies, refusing what pyhudi does not implement by property name.

    `version` / `ordering` default to the ones `props` records. Table versions 8 and 9 follow Hudi 1.x
    (`_inferred_mode`), versions 4-6 Hudi 0.14/0.15 unless the table records 1.x merge settings
    (`_legacy_mode`). Partial updates, merge properties other than the delete marker, and legacy
    payload classes whose semantics are more than a mode are refused (`_merge_extras`).
    """
    version = table_version_of(props) if version is None else version
    ordering = ordering_fields_of(props) if ordering is None else ordering
    recorded = _recorded_mode(props, where)
    payload = props.get(PAYLOAD_KEY, "").strip() or None
    key, strategy = _strategy(props)
    if version < 8:
        mode = _legacy_mode(recorded, payload, key, strategy, where)
        if mode in (OVERWRITE_MODE, DEFAULT_MODE) and len(ordering) > 1:
            prop = "hoodie.table.ordering.fields" if "hoodie.table.ordering.fields" in props \
                else "hoodie.table.precombine.field"
            raise _fail(f"{mode}'s merge over several precombine fields", f"{prop}={','.join(ordering)}",
                        "Hudi 0.14/0.15's payload classes compare one field; use Apache Hudi", where)
    else:
        mode = _inferred_mode(recorded, payload, key, strategy, ordering, version, where)
    return MergeConfig(mode, ordering, _merge_extras(props, where))


def _recorded_mode(props: Mapping[str, str], where: str) -> str | None:
    mode = props.get(MERGE_MODE_KEY, "").strip().upper() or None
    if mode is not None and mode not in (COMMIT_TIME, EVENT_TIME, CUSTOM):
        raise _fail(f"the merge mode {mode}", f"{MERGE_MODE_KEY}={props[MERGE_MODE_KEY]}",
                    "Hudi 1.x knows COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING and CUSTOM; use Apache Hudi", where)
    return mode


def _strategy(props: Mapping[str, str]) -> tuple[str, str | None]:
    """(key, id) of the record merger strategy: 1.x's key first, then 0.13-0.15's (its alternative)."""
    for key in (STRATEGY_KEY, OLD_STRATEGY_KEY):
        value = props.get(key, "").strip()
        if value:
            return key, value
    return STRATEGY_KEY, None


def _mode_of_payload(payload: str | None) -> str | None:
    """HoodieTableConfig.inferRecordMergeModeFromPayloadClass (1.0.2 / 1.1.x)."""
    if not payload:
        return None
    if payload in (DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD):
        return EVENT_TIME
    return COMMIT_TIME if payload == OVERWRITE_PAYLOAD else CUSTOM


def _mode_of_strategy(strategy: str | None) -> str | None:
    """HoodieTableConfig.inferRecordMergeModeFromMergeStrategyId (1.0.2 / 1.1.x)."""
    if not strategy:
        return None
    return {EVENT_TIME_STRATEGY: EVENT_TIME, COMMIT_TIME_STRATEGY: COMMIT_TIME}.get(strategy, CUSTOM)


def _inferred_mode(recorded: str | None, payload: str | None, key: str, strategy: str | None,
                   ordering: tuple[str, ...], version: int, where: str) -> str:
    """Hudi 1.x's mode for table versions 8 and 9.

    Version 9: the recorded `hoodie.record.merge.mode` as it is (1.1's FileGroupReaderSchemaHandler infers
    below version 9 only). Version 8, and a version-9 table recording no mode:
    `HoodieTableConfig.inferMergingConfigsForPreV9Table` - with neither payload class nor strategy id, the
    recorded mode, else EVENT_TIME_ORDERING when ordering fields are set, else COMMIT_TIME_ORDERING;
    otherwise the strategy's mode (`inferRecordMergeModeFromMergeStrategyId`), else the payload's
    (`inferRecordMergeModeFromPayloadClass`), after checking that a built-in strategy and the payload
    agree; a recorded mode must equal what is inferred (Java fails the same checks).
    """
    if version >= 9 and recorded is not None:
        mode = recorded
    elif not payload and not strategy:
        mode = recorded or (EVENT_TIME if ordering else COMMIT_TIME)
    else:
        by_payload, by_strategy = _mode_of_payload(payload), _mode_of_strategy(strategy)
        if by_payload and by_strategy and by_strategy != CUSTOM and by_payload != by_strategy:
            raise _fail(f"a payload class and merge strategy that conflict ({by_payload} and {by_strategy})",
                        f"{PAYLOAD_KEY}={payload}, {key}={strategy}",
                        "Hudi 1.x refuses the combination too; fix hoodie.properties with Apache Hudi", where)
        mode = by_strategy or by_payload or COMMIT_TIME
        if recorded is not None and recorded != mode:
            raise _fail(f"the merge mode {recorded}, which contradicts the payload class / merge strategy "
                        f"({mode})", f"{MERGE_MODE_KEY}={recorded}",
                        "Hudi 1.x refuses the combination too; fix hoodie.properties with Apache Hudi", where)
    if mode == CUSTOM:
        raise _custom(payload, key, strategy, where)
    return mode


def _custom(payload: str | None, key: str, strategy: str | None, where: str) -> UnsupportedTableError:
    if payload:
        what, prop = f"the CUSTOM merge mode through the payload class {payload}", f"{PAYLOAD_KEY}={payload}"
    elif strategy:
        what, prop = f"the CUSTOM merge mode through the record merger {strategy}", f"{key}={strategy}"
    else:
        what, prop = "the CUSTOM merge mode", f"{MERGE_MODE_KEY}={CUSTOM}"
    return _fail(what, prop, "pyhudi merges by COMMIT_TIME_ORDERING or EVENT_TIME_ORDERING only; read the table "
                 "with Apache Hudi", where)


def _legacy_mode(recorded: str | None, payload: str | None, key: str, strategy: str | None, where: str) -> str:
    """Table versions 4-6: Hudi 0.14/0.15's payload semantics, unless the table carries a 1.x merge setting.

    A 0.x writer records the payload class and (0.13+) its payload merger's strategy id under the old key;
    pyhudi implements OverwriteWithLatestAvroPayload and DefaultHoodieRecordPayload. A 1.x writer keeping
    the table at version 6 records the strategy under 1.x's key: EVENT_TIME's id (also 0.x's payload
    merger) and PAYLOAD_BASED leave the payload deciding, COMMIT_TIME's id is 1.x commit-time ordering.
    A recorded `hoodie.record.merge.mode` is followed as 1.x's ordering; its payload class must match.
    """
    allowed = {EVENT_TIME_STRATEGY} if key == OLD_STRATEGY_KEY else {EVENT_TIME_STRATEGY, COMMIT_TIME_STRATEGY,
                                                                      PAYLOAD_STRATEGY}
    if strategy and strategy not in allowed:
        raise _fail(f"the record merger strategy {strategy}", f"{key}={strategy}",
                    f"pyhudi merges through the payload class (strategy {EVENT_TIME_STRATEGY}) or, on tables "
                    "written by Hudi 1.x, by commit or event time; use Apache Hudi", where)
    if payload and payload not in SUPPORTED_PAYLOADS:
        raise _fail(f"the payload class {payload}", f"{PAYLOAD_KEY}={payload}",
                    "pyhudi merges records as OverwriteWithLatestAvroPayload or DefaultHoodieRecordPayload only; "
                    "use Apache Hudi", where)
    implied = COMMIT_TIME if strategy == COMMIT_TIME_STRATEGY else None
    mode = recorded or implied
    if mode is None:
        return DEFAULT_MODE if payload == DEFAULT_PAYLOAD else OVERWRITE_MODE
    wanted = MERGE_MODE_PAYLOADS.get(mode)
    prop = f"{MERGE_MODE_KEY}={mode}" if recorded else f"{key}={strategy}"
    if wanted is None or (payload and payload != wanted) or (recorded and implied and recorded != implied):
        raise _fail(f"the merge mode {mode}", prop, "pyhudi implements COMMIT_TIME_ORDERING "
                    "(OverwriteWithLatestAvroPayload) and EVENT_TIME_ORDERING (DefaultHoodieRecordPayload) only; "
                    "use Apache Hudi", where)
    return mode


def _merge_extras(props: Mapping[str, str], where: str) -> tuple[str, str] | None:
    """Partial updates, merge properties and legacy payload classes (Hudi 1.1, RFC-97): the delete marker
    is returned for the merge; anything else that changes how records combine is refused by name."""
    partial = props.get(PARTIAL_UPDATE_KEY, "").strip()
    if partial and partial.upper() != "NONE":
        what = PARTIAL_UPDATE_MODES.get(partial.upper(), "an unknown partial-update rule")
        raise _fail(f"partial updates ({what})", f"{PARTIAL_UPDATE_KEY}={partial}",
                    "pyhudi merges whole records only; read the table with Apache Hudi", where)
    extra = sorted(k for k in props if k.startswith(MERGE_PROPERTY_PREFIX) and k not in (DELETE_KEY, DELETE_MARKER))
    if extra:
        raise _fail("a merge property pyhudi does not implement", f"{extra[0]}={props[extra[0]]}",
                    "pyhudi implements the delete marker (hoodie.payload.delete.field / .marker) only; "
                    "use Apache Hudi", where)
    field, marker = props.get(DELETE_KEY, "").strip(), props.get(DELETE_MARKER, "")
    if bool(field) != bool(marker):
        key, other = (DELETE_KEY, DELETE_MARKER) if field else (DELETE_MARKER, DELETE_KEY)
        raise _fail("a delete marker without its field or value", f"{key}={props.get(key, '')} without {other}",
                    "Hudi needs both hoodie.payload.delete.field and hoodie.payload.delete.marker; fix the "
                    "table with Apache Hudi", where)
    _legacy_payload(props, bool(field), where)
    return (field, marker) if field else None


def _legacy_payload(props: Mapping[str, str], has_marker: bool, where: str) -> None:
    """hoodie.table.legacy.payload.class names the payload a version-9 table was written with before 1.1;
    its merge mode and properties now say how records combine, which is all of it for the classes in
    LEGACY_PAYLOADS (AWS DMS: commit time plus the Op=D delete marker)."""
    legacy = props.get(LEGACY_PAYLOAD_KEY, "").strip()
    if not legacy or (legacy in LEGACY_PAYLOADS and (legacy != AWS_DMS_PAYLOAD or has_marker)):
        return
    raise _fail(f"the payload class {legacy} (migrated to merge settings by Hudi 1.1)",
                f"{LEGACY_PAYLOAD_KEY}={legacy}", "pyhudi implements OverwriteWithLatestAvroPayload, "
                "DefaultHoodieRecordPayload, EventTimeAvroPayload and AWSDmsAvroPayload tables only; use "
                "Apache Hudi", where)


def _merge_semantics(props: Mapping[str, str], where: str) -> None:
    resolve_merge(props, where)


def _merge_semantics_if_mor(props: Mapping[str, str], where: str) -> None:
    """Only MOR reads merge records (a COW table's files are already merged), so only there does the
    merge semantics change what a read returns; writes check it for every table."""
    if props.get("hoodie.table.type", "").strip().upper() in ("MERGE_ON_READ", "MOR"):
        _merge_semantics(props, where)


# ----------------------------------------------------------------------------- key generators

def keygen_class_of(props: Mapping[str, str]) -> str | None:
    """The class pyhudi renders keys with: hoodie.table.keygenerator.class when set (Java's
    KeyGeneratorType.getKeyGeneratorClassName reads it first), else the class of
    hoodie.table.keygenerator.type; Avro twins of the simple / complex / nonpartitioned key generators by
    their Spark class. None when neither names one (or `_keygen` refuses what is named)."""
    named = props.get("hoodie.table.keygenerator.class", "").strip()
    if named:
        return AVRO_TWINS.get(named, named)
    return KEYGEN_TYPES.get(props.get("hoodie.table.keygenerator.type", "").strip().upper())


def _family(keygen: str) -> str:
    """A key generator and its Avro twin are one family (TimestampBased / Custom ones too)."""
    keygen = AVRO_TWINS.get(keygen, keygen)
    return keygen.replace("AvroKeyGenerator", "KeyGenerator")


def _keygen(props: Mapping[str, str], where: str) -> None:
    keygen = props.get("hoodie.table.keygenerator.class", "").strip()
    kind = props.get("hoodie.table.keygenerator.type", "").strip()
    if kind and kind.upper() in UNKNOWN_KEYGEN_TYPES and not (kind.upper() == "USER_PROVIDED" and keygen):
        raise _fail(f"{UNKNOWN_KEYGEN_TYPES[kind.upper()]} (key generator type {kind})",
                    f"hoodie.table.keygenerator.type={kind}", "pyhudi knows the types " + ", ".join(KEYGEN_TYPES)
                    + "; use Apache Hudi", where)
    mapped = KEYGEN_TYPES.get(kind.upper()) if kind else None
    if kind and kind.upper() != "USER_PROVIDED" and (mapped is None or (keygen and _family(mapped) != _family(keygen))):
        raise _fail(f"the key generator type {kind}", f"hoodie.table.keygenerator.type={kind}",
                    "pyhudi knows the types " + ", ".join(KEYGEN_TYPES) + " (matching "
                    "hoodie.table.keygenerator.class when both are set); use Apache Hudi", where)
    if keygen and keygen not in KNOWN_KEYGENS:
        raise _fail(f"the key generator {keygen}", f"hoodie.table.keygenerator.class={keygen}",
                    "pyhudi knows Hudi's Simple, Complex, Nonpartitioned, TimestampBased and Custom key "
                    "generators (and their Avro variants) only; use Apache Hudi", where)


# ----------------------------------------------------------------------------- unknown properties

def _unknown_properties(props: Mapping[str, str], where: str) -> None:
    unknown = sorted(k for k in props if (k.startswith("hoodie.table.") and k not in KNOWN_TABLE_PROPERTIES)
                     or (k.startswith("hoodie.timeline.") and k not in KNOWN_TIMELINE_PROPERTIES))
    if unknown:
        key = unknown[0]
        raise _fail(f"an unknown table property that may change how files are read ({', '.join(unknown)})",
                    f"{key}={props[key]}", "pyhudi refuses table properties it does not know rather than "
                    "misread the table; use Apache Hudi", where)


_READ_CHECKS: tuple[Callable[[Mapping[str, str], str], None], ...] = (
    _bootstrap, _file_formats, _table_format, _dropped_partition_columns, _timeline_paths,
    _merge_semantics_if_mor, _keygen, _unknown_properties,
)


def check_properties_readable(props: Mapping[str, str], where: str) -> None:
    """Refuse a `hoodie.properties` whose table pyhudi would read wrong (see the module docstring)."""
    for check in _READ_CHECKS:
        check(props, where)


def check_readable(config: TableConfig, storage: Storage | None = None) -> None:
    """The read check on a loaded table config (with `storage`, the table's folders are checked too)."""
    where = storage.base_uri if storage is not None else config.name
    check_properties_readable(config.raw, where)


def on_disk_features(storage: Storage) -> frozenset[str]:
    """Features only the table's folders show (Hudi 0.14 does not record them in hoodie.properties)."""
    found = set()
    if storage.folder_exists(CONSISTENT_HASHING_DIR):  # a folder: one LIST on an object store, no HEAD
        found.add(CONSISTENT_HASHING_DIR)
    return frozenset(found)


# ----------------------------------------------------------------------------- writes

# Table versions pyhudi writes, by timeline layout (4 and 5 are upgraded to 6 by the first write).
WRITTEN_VERSIONS = {1: (4, 5, 6), 2: (8, 9)}  # timeline layout -> table versions written on it
NBCC = "NON_BLOCKING_CONCURRENCY_CONTROL"


def check_writable(config: TableConfig, options: Any, needs_tagging: bool, where: str = "") -> None:
    """Refuse a write or table service that would break the table for Hudi (see the module docstring).

    `options` is the write's parsed `Options`; `needs_tagging`: the operation matches stored records by
    key (upsert, delete, an insert with hoodie.merge.allow.duplicate.on.inserts=false). pyhudi matches
    them by `_hoodie_record_key`, which virtual-key files hold as null (Hudi computes the key from the
    record with the key generator): such a write would duplicate or keep what it should replace.
    """
    where = where or f"table {config.name!r}"
    props = config.raw
    check_properties_readable(props, where)
    _written_version(config, where)
    _write_options(options, where)
    target = write_version(config, options, where)
    if target >= 8:
        _metadata_indexes(config, options, target, where)
    if config.version >= 8:
        _write_merge(config, where)
    _base_file_formats(props, where, write=True)
    _merge_semantics(props, where)
    _cdc(props, options, where)
    _feature_options(options, where)
    _write_index(config, options, where)
    if props.get("hoodie.table.secondary.indexes.metadata", "").strip():
        raise _fail("a secondary index", "hoodie.table.secondary.indexes.metadata",
                    "pyhudi does not maintain secondary indexes; write with Apache Hudi", where)
    if not config.populate_meta_fields and needs_tagging:
        raise _fail("updates, deletes and de-duplicating inserts on a table with virtual keys (no "
                    "_hoodie_record_key in its files)", "hoodie.populate.meta.fields=false",
                    "only insert (with hoodie.merge.allow.duplicate.on.inserts=true, the default) and "
                    "bulk_insert are supported on such tables", where)


def _written_version(config: TableConfig, where: str) -> None:
    """Versions 8 and 9 (timeline layout 2) are read, not written: every write and table service stops here."""
    if config.version in WRITTEN_VERSIONS.get(config.layout_version, ()):
        return
    raise UnsupportedTableError(
        f"{where}: table version {config.version} is read by pyhudi but not written yet "
        f"(hoodie.table.version={config.version}, hoodie.timeline.layout.version={config.layout_version}); "
        "write it with Apache Hudi 1.x, or downgrade it to version 6 with Hudi 1.x's `hudi-cli` "
        "(`downgrade table --toVersion SIX`) to write it with pyhudi")


def _option(options: Any, key: str, default: Any) -> Any:
    """A write option by key: the parsed value when pyhudi declares the key, else the raw one passed through."""
    if options is None:
        return default
    from pyhudi.config import keys as K

    prop = {"hoodie.write.concurrency.mode": K.CONCURRENCY_MODE, "hoodie.write.table.version": K.TABLE_VERSION,
            "hoodie.write.auto.upgrade": K.AUTO_UPGRADE,
            "hoodie.write.drop.unrebuildable.metadata.indexes": K.DROP_UNREBUILDABLE_INDEXES}[key]
    if options.is_set(prop):
        return options.get(prop)
    return getattr(options, "extras", {}).get(key, default)


def _write_options(options: Any, where: str) -> None:
    """Write options asking for what pyhudi does not write: another table version, and non-blocking
    concurrency control (concurrent writers to one file group, which pyhudi's conflict checks do not
    allow for; it must never run as single-writer or OCC)."""
    mode = str(_option(options, "hoodie.write.concurrency.mode", "SINGLE_WRITER") or "").strip().upper()
    if mode in (NBCC, "NBCC"):
        raise _fail("non-blocking concurrency control", f"hoodie.write.concurrency.mode={mode}",
                    "use SINGLE_WRITER or OPTIMISTIC_CONCURRENCY_CONTROL, or write with Apache Hudi 1.x", where)


def _feature_options(options: Any, where: str) -> None:
    """Write options asking for a feature a table would be created with (pyhudi does not know these keys,
    so they would be ignored with a warning and the table written without the feature)."""
    extras = getattr(options, "extras", {})
    asked = {k: str(v) for k, v in extras.items() if k.startswith(("hoodie.table.", "hoodie.bootstrap."))}
    asked.pop("hoodie.table.cdc.enabled", None)  # _cdc names it
    _bootstrap(asked, f"{where} (write options)")
    _file_formats(asked, f"{where} (write options)", write=True)
    _table_format(asked, f"{where} (write options)")


def _cdc(props: Mapping[str, str], options: Any, where: str) -> None:
    extras = getattr(options, "extras", {})
    for source, values in (("the table's", props), ("the option", extras)):
        if str(values.get("hoodie.table.cdc.enabled", "false")).strip().lower() == "true":
            raise _fail("change data capture (a write without CDC log files would break CDC queries)",
                        f"{source} hoodie.table.cdc.enabled=true",
                        "write CDC tables with Apache Hudi, or create the table without CDC", where)


def _write_index(config: TableConfig, options: Any, where: str) -> None:
    from pyhudi.config import keys as K

    index = str(options.get(K.INDEX_TYPE)).upper() if options is not None else "SIMPLE"
    if index in UNSUPPORTED_WRITE_INDEXES:
        raise _fail(f"{UNSUPPORTED_WRITE_INDEXES[index]} as the write index", f"hoodie.index.type={index}",
                    "use SIMPLE, BLOOM, GLOBAL_SIMPLE, GLOBAL_BLOOM, INMEMORY or BUCKET", where)
    extras = getattr(options, "extras", {})
    engine = str(extras.get("hoodie.index.bucket.engine", "SIMPLE")).strip().upper()
    if engine == "CONSISTENT_HASHING":
        raise _fail("the consistent-hashing bucket index", "hoodie.index.bucket.engine=CONSISTENT_HASHING",
                    "use the SIMPLE bucket engine (fixed bucket count) or Apache Hudi", where)
    if CONSISTENT_HASHING_DIR in config.features:
        raise _fail("the consistent-hashing bucket index (the table has its hashing metadata)",
                    f"{CONSISTENT_HASHING_DIR}/", "write this table with Apache Hudi", where)


# ----------------------------------------------------------------------------- Hudi 1.x writes

def write_version(config: TableConfig, options: Any, where: str = "") -> int:
    """The table version this write leaves the table at, as Hudi 1.x's UpgradeDowngrade.needsUpgrade and
    CommonClientUtils.validateTableVersion decide it from `hoodie.write.table.version`.

    Without the option an existing table is written at its own version (pyhudi's default, 6, only
    applies to a new table); a later version upgrades it (6 -> 8/9, 8 -> 9; model/upgrade.py) unless
    hoodie.write.auto.upgrade=false, which keeps the table's version (Hudi: "skipping table version
    upgrade process"); an earlier one is refused with Hudi's message. Versions 4 and 5 go to 6 first
    (pyhudi's 4/5 -> 6 upgrade), and Hudi refuses to take them to 8 or 9 in one step.
    """
    where = where or f"table {config.name!r}"
    asked = _option(options, "hoodie.write.table.version", None)
    have = config.version
    if asked is None or int(asked) == have:
        return have if have >= 6 else 6
    asked = int(asked)
    if have < 6:
        if asked == 6:
            return 6
        raise UnsupportedTableError(
            f"{where}: Please upgrade table from version {have} to 6 before upgrading to version {asked} "
            f"(hoodie.table.version={have}, hoodie.write.table.version={asked}), as Hudi 1.x requires: write "
            "it once with hoodie.write.table.version=6 (pyhudi upgrades it to 6), then with the later version")
    if asked > have:
        if not _option(options, "hoodie.write.auto.upgrade", True):
            log.warning("%s: hoodie.write.auto.upgrade=false: writing table version %d, not upgrading it to "
                        "hoodie.write.table.version=%d (as Hudi 1.x does)", where, have, asked)
            return have
        return asked
    raise UnsupportedTableError(
        f"{where}: Table version ({have}) and Writer version ({asked}) do not match "
        f"(hoodie.table.version={have}, hoodie.write.table.version={asked}); pyhudi, like Hudi 1.x, writes a "
        f"table at its own version or upgrades it, never downgrades it: drop the option (or set it to {have}), or "
        f"downgrade the table with Hudi 1.x's `hudi-cli` (`downgrade table --toVersion ...`)")


def _write_merge(config: TableConfig, where: str) -> None:
    """What pyhudi's write path (dedupe, the COW merge handle, a global index's partition moves) cannot
    carry on a 1.x table: it compares one ordering field and knows no custom delete marker. Reads and
    table services merge by the full rules (log_merge.table_merge_rules); a write would merge by less."""
    merge = resolve_merge(config.raw, where, config.version, config.ordering_fields)
    if merge.mode == EVENT_TIME and len(merge.ordering_fields) > 1:
        prop = "hoodie.table.ordering.fields" if "hoodie.table.ordering.fields" in config.raw \
            else "hoodie.table.precombine.field"
        raise _fail("writes ordered by several fields (EVENT_TIME_ORDERING compares them in turn; pyhudi's write "
                    "path compares one)", f"{prop}={','.join(merge.ordering_fields)}",
                    "write this table with Apache Hudi; pyhudi reads it", where)
    if merge.delete_marker is not None:
        raise _fail("writes to a table with a delete marker (a written record holding the marker must be "
                    "dropped, which pyhudi's write path does not do)",
                    f"{DELETE_KEY}={merge.delete_marker[0]}, {DELETE_MARKER}={merge.delete_marker[1]}",
                    "write this table with Apache Hudi; pyhudi reads it", where)


def write_payload(config: TableConfig, where: str = "") -> str:
    """The payload class whose write path (writer/config.WriteConfig) has a 1.x table's merge semantics:
    COMMIT_TIME_ORDERING writes as OverwriteWithLatestAvroPayload (the incoming record wins), EVENT_TIME_ORDERING
    as DefaultHoodieRecordPayload (a stored record with a greater ordering value stays)."""
    merge = resolve_merge(config.raw, where or f"table {config.name!r}", config.version, config.ordering_fields)
    return MERGE_MODE_PAYLOADS[merge.mode]


def creation_merge_properties(version: int, mode: str | None, payload: str | None, ordering: tuple[str, ...],
                              where: str = "") -> tuple[dict[str, str], str | None]:
    """(merge properties, payload class) a table created at `version` 8 or 9 records, from the write's merge
    mode, payload class (each None when not given) and ordering fields.

    Both follow HoodieTableConfig.inferMergingConfigsForPreV9Table: a payload class decides the mode
    (DefaultHoodieRecordPayload -> EVENT_TIME_ORDERING, OverwriteWithLatestAvroPayload -> COMMIT_TIME_ORDERING;
    a given mode must agree, "Configured record merge mode ... is inconsistent"), else the given mode, else
    EVENT_TIME_ORDERING with ordering fields and COMMIT_TIME_ORDERING without. Version 8 (1.0.2's
    TableBuilder) records the mode, the mode's strategy id and payload class. Version 9 (1.1,
    inferMergingConfigsForV9TableCreation) records the mode only, as the 1.1.1 samples show, and for a
    given payload class the mode, hoodie.table.legacy.payload.class and the strategy id instead; plus
    hoodie.table.format=native. CUSTOM is refused: pyhudi merges by the two orderings only.
    """
    inferred = _mode_of_payload(payload) or mode or (EVENT_TIME if ordering else COMMIT_TIME)
    if payload and mode and mode != inferred:
        from pyhudi.errors import InvalidConfigError

        raise InvalidConfigError(
            f"{where}: Configured record merge mode ({mode}) is inconsistent with payload class ({payload}) "
            f"(hoodie.write.record.merge.mode={mode}, hoodie.datasource.write.payload.class={payload}), as Hudi "
            "1.x refuses it: set only one of them")
    if inferred == CUSTOM:
        raise _fail("the CUSTOM merge mode", f"hoodie.write.record.merge.mode={CUSTOM}",
                    "pyhudi writes COMMIT_TIME_ORDERING and EVENT_TIME_ORDERING tables; create it with Apache Hudi",
                    where)
    strategy = EVENT_TIME_STRATEGY if inferred == EVENT_TIME else COMMIT_TIME_STRATEGY
    if version < 9:
        return {MERGE_MODE_KEY: inferred, STRATEGY_KEY: strategy}, payload or MERGE_MODE_PAYLOADS[inferred]
    props = {MERGE_MODE_KEY: inferred, "hoodie.table.format": "native"}
    if payload:
        props.update({LEGACY_PAYLOAD_KEY: payload, STRATEGY_KEY: strategy})
    return props, None


def _metadata_indexes(config: TableConfig, options: Any, target: int, where: str) -> None:
    """A write that leaves the table at version 8 or 9 removes its metadata table (model/metadata_table.py)
    like Hudi with hoodie.metadata.enable=false; an index in it that pyhudi cannot rebuild is only deleted
    when the write says so (hoodie.write.drop.unrebuildable.metadata.indexes=true)."""
    from pyhudi.model.metadata_table import allow_index_drop_of, unrebuildable_indexes

    found = unrebuildable_indexes(config.raw, target)
    if not found:
        return
    if _option(options, "hoodie.write.drop.unrebuildable.metadata.indexes", False):
        allow_index_drop_of(config.raw)
        return
    key = next(k for k in ("hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight")
               if any(p in config.raw.get(k, "").split(",") for p in found))
    raise UnsupportedTableError(
        f"{where}: its metadata table holds {', '.join(found)} ({key}={config.raw[key]}), an index pyhudi cannot "
        "rebuild; pyhudi removes the metadata table before it commits (as Hudi does with "
        "hoodie.metadata.enable=false), which would delete it. Write this table with Apache Hudi with the metadata "
        "table enabled, or set hoodie.write.drop.unrebuildable.metadata.indexes=true to let pyhudi delete it (Hudi "
        "then has to rebuild it: a write with hoodie.metadata.enable=true and that index enabled)")
