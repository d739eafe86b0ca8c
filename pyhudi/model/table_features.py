"""Table features pyhudi does not implement: refused by name, never misread or silently broken.

Two checks, both raising `UnsupportedTableError` that names the feature and the property (or folder)
that shows it:

* `check_readable` runs whenever `hoodie.properties` is loaded (`table_config.load_table_config`), so
  every read, write, table service and CLI command passes it. It refuses what would make pyhudi's
  reader return wrong rows: bootstrap tables, ORC/HFile base files, another log file format, partition
  metadata files in base-file format, partition columns left out of the data files, payload classes and
  merge strategies pyhudi's merge of MOR logs does not implement, key generators it does not know, and
  any `hoodie.table.*` property that is not on the allow-list below.
* `check_writable` runs where every write and table service builds its configuration
  (`writer/config.build_write_config`). On top of the above it refuses what a pyhudi write would break
  for other readers and writers: CDC-enabled tables (a write without CDC logs breaks CDC queries), a
  consistent-hashing bucket index (table folder or option), RECORD_INDEX/HBASE as the write index, a
  secondary index, payload classes / merge modes pyhudi does not implement (COW tables too), and on
  tables with virtual keys (`hoodie.populate.meta.fields=false`) every operation that has to find the
  stored records by key, whatever the index.

Unknown `hoodie.table.*` properties: a property of Hudi 0.14/0.15's HoodieTableConfig that pyhudi
handles, or that does not change how files are read, is on `KNOWN_TABLE_PROPERTIES`; any other
`hoodie.table.*` key may (it is how Hudi adds table-level switches), so it is refused on read and on
write. Keys outside `hoodie.table.*` that matter are checked one by one (`_READ_CHECKS`); other keys
are left alone, because Hudi writers put write options into hoodie.properties that change nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from pyhudi.errors import UnsupportedTableError

if TYPE_CHECKING:
    from pyhudi.model.table_config import TableConfig
    from pyhudi.storage import Storage

OVERWRITE_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
SUPPORTED_PAYLOADS = frozenset({OVERWRITE_PAYLOAD, DEFAULT_PAYLOAD})
# HoodieRecordMerger.DEFAULT_MERGER_STRATEGY_UUID (0.14/0.15): merge through the payload class.
SUPPORTED_MERGER_STRATEGIES = frozenset({"eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"})
# hoodie.record.merge.mode (Hudi 1.x) and the payload class each mode stands for in pyhudi.
MERGE_MODE_PAYLOADS = {"COMMIT_TIME_ORDERING": OVERWRITE_PAYLOAD, "EVENT_TIME_ORDERING": DEFAULT_PAYLOAD}
KNOWN_KEYGENS = frozenset({
    "org.apache.hudi.keygen.SimpleKeyGenerator", "org.apache.hudi.keygen.ComplexKeyGenerator",
    "org.apache.hudi.keygen.NonpartitionedKeyGenerator", "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator", "org.apache.hudi.keygen.CustomKeyGenerator",
    "org.apache.hudi.keygen.CustomAvroKeyGenerator",
})
# hoodie.table.keygenerator.type (Hudi 1.x KeyGeneratorType; a table may carry it beside the class) -> class
KEYGEN_TYPES = {
    "SIMPLE": "org.apache.hudi.keygen.SimpleKeyGenerator", "COMPLEX": "org.apache.hudi.keygen.ComplexKeyGenerator",
    "NON_PARTITION": "org.apache.hudi.keygen.NonpartitionedKeyGenerator",
    "TIMESTAMP": "org.apache.hudi.keygen.TimestampBasedKeyGenerator",
    "TIMESTAMP_AVRO": "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator",
    "CUSTOM": "org.apache.hudi.keygen.CustomKeyGenerator", "CUSTOM_AVRO": "org.apache.hudi.keygen.CustomAvroKeyGenerator",
}
CONSISTENT_HASHING_DIR = ".hoodie/.bucket_index/consistent_hashing_metadata"
UNSUPPORTED_WRITE_INDEXES = {"RECORD_INDEX": "the record-level index (kept in the metadata table)",
                             "HBASE": "the HBase index", "FLINK_STATE": "Flink's state index"}

KNOWN_TABLE_PROPERTIES = frozenset({
    # identity and layout pyhudi reads (model/table_config.py)
    "hoodie.table.name", "hoodie.table.type", "hoodie.table.version", "hoodie.table.precombine.field",
    "hoodie.table.partition.fields", "hoodie.table.recordkey.fields", "hoodie.table.keygenerator.class",
    "hoodie.table.create.schema", "hoodie.table.timeline.timezone", "hoodie.table.checksum",
    "hoodie.table.keygenerator.type",
    # checked by value below
    "hoodie.table.base.file.format", "hoodie.table.ro.file.format", "hoodie.table.log.file.format",
    "hoodie.table.rt.file.format", "hoodie.table.cdc.enabled", "hoodie.table.cdc.supplemental.logging.mode",
    "hoodie.table.secondary.indexes.metadata",
    # the metadata table: pyhudi never reads it and removes it on write (model/metadata_table.py)
    "hoodie.table.metadata.partitions", "hoodie.table.metadata.partitions.inflight",
})


def _fail(feature: str, prop: str, fix: str, where: str) -> UnsupportedTableError:
    return UnsupportedTableError(f"{where}: {feature} ({prop}) is not supported by pyhudi; {fix}")


def _flag(props: Mapping[str, str], key: str) -> bool:
    return props.get(key, "false").strip().lower() == "true"


def _bootstrap(props: Mapping[str, str], where: str) -> None:
    base = props.get("hoodie.bootstrap.base.path", "").strip()
    if base:
        raise _fail("a bootstrapped table (its data stays in the source files, joined through a bootstrap "
                    "index)", f"hoodie.bootstrap.base.path={base}",
                    "read and write it with Apache Hudi, or rewrite it into a regular table first", where)


def _file_formats(props: Mapping[str, str], where: str) -> None:
    for key in ("hoodie.table.base.file.format", "hoodie.table.ro.file.format"):
        value = props.get(key, "PARQUET").strip().upper()
        if value != "PARQUET":
            raise _fail(f"{value} base files", f"{key}={props[key]}",
                        "pyhudi reads and writes parquet base files only; use Apache Hudi", where)
    for key in ("hoodie.table.log.file.format", "hoodie.table.rt.file.format"):
        value = props.get(key, "HOODIE_LOG").strip().upper()
        if value != "HOODIE_LOG":
            raise _fail(f"{value} log files", f"{key}={props[key]}",
                        "pyhudi reads Hudi log files (HOODIE_LOG) only; use Apache Hudi", where)
    if _flag(props, "hoodie.partition.metafile.use.base.format"):
        raise _fail("partition metadata files in base-file format (pyhudi finds partitions by "
                    ".hoodie_partition_metadata)", "hoodie.partition.metafile.use.base.format=true",
                    "use Apache Hudi", where)


def _dropped_partition_columns(props: Mapping[str, str], where: str) -> None:
    if _flag(props, "hoodie.datasource.write.drop.partition.columns"):
        raise _fail("partition columns left out of the data files (their values are only in the paths)",
                    "hoodie.datasource.write.drop.partition.columns=true",
                    "read and write it with Apache Hudi", where)


def _merge_semantics(props: Mapping[str, str], where: str) -> None:
    """The payload class, merger strategy and merge mode decide how log records merge with base records:
    pyhudi implements OverwriteWithLatestAvroPayload and DefaultHoodieRecordPayload only."""
    payload = props.get("hoodie.compaction.payload.class", "").strip()
    if payload and payload not in SUPPORTED_PAYLOADS:
        raise _fail(f"the payload class {payload}", f"hoodie.compaction.payload.class={payload}",
                    "pyhudi merges records as OverwriteWithLatestAvroPayload or DefaultHoodieRecordPayload only; "
                    "use Apache Hudi", where)
    for key in ("hoodie.compaction.record.merger.strategy", "hoodie.record.merge.strategy.id"):
        strategy = props.get(key, "").strip()
        if strategy and strategy not in SUPPORTED_MERGER_STRATEGIES:
            raise _fail(f"the record merger strategy {strategy}", f"{key}={strategy}",
                        "pyhudi merges through the payload class only (strategy "
                        f"{min(SUPPORTED_MERGER_STRATEGIES)}); use Apache Hudi", where)
    mode = props.get("hoodie.record.merge.mode", "").strip().upper()
    if mode:
        wanted = MERGE_MODE_PAYLOADS.get(mode)
        if wanted is None or (payload and payload != wanted):
            raise _fail(f"the merge mode {mode}", f"hoodie.record.merge.mode={mode}",
                        "pyhudi implements COMMIT_TIME_ORDERING (OverwriteWithLatestAvroPayload) and "
                        "EVENT_TIME_ORDERING (DefaultHoodieRecordPayload) only; use Apache Hudi", where)


def _keygen(props: Mapping[str, str], where: str) -> None:
    keygen = props.get("hoodie.table.keygenerator.class", "").strip()
    kind = props.get("hoodie.table.keygenerator.type", "").strip()
    if kind and (kind.upper() not in KEYGEN_TYPES or (keygen and KEYGEN_TYPES[kind.upper()] != keygen)):
        raise _fail(f"the key generator type {kind}", f"hoodie.table.keygenerator.type={kind}",
                    "pyhudi knows the types " + ", ".join(KEYGEN_TYPES) + " (matching "
                    "hoodie.table.keygenerator.class when both are set); use Apache Hudi", where)
    if keygen and keygen not in KNOWN_KEYGENS:
        raise _fail(f"the key generator {keygen}", f"hoodie.table.keygenerator.class={keygen}",
                    "pyhudi knows Hudi's Simple, Complex, Nonpartitioned, TimestampBased and Custom key "
                    "generators only; use Apache Hudi", where)


def _unknown_table_properties(props: Mapping[str, str], where: str) -> None:
    unknown = sorted(k for k in props if k.startswith("hoodie.table.") and k not in KNOWN_TABLE_PROPERTIES)
    if unknown:
        key = unknown[0]
        raise _fail(f"an unknown table property that may change how files are read ({', '.join(unknown)})",
                    f"{key}={props[key]}", "pyhudi refuses table properties it does not know rather than "
                    "misread the table; use Apache Hudi", where)


def _merge_semantics_if_mor(props: Mapping[str, str], where: str) -> None:
    """Only MOR reads merge records (a COW table's files are already merged), so only there does the
    merge semantics change what a read returns; writes check it for every table."""
    if props.get("hoodie.table.type", "").strip().upper() in ("MERGE_ON_READ", "MOR"):
        _merge_semantics(props, where)


_READ_CHECKS: tuple[Callable[[Mapping[str, str], str], None], ...] = (
    _bootstrap, _file_formats, _dropped_partition_columns, _merge_semantics_if_mor, _keygen,
    _unknown_table_properties,
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


def _feature_options(options: Any, where: str) -> None:
    """Write options asking for a feature a table would be created with (pyhudi does not know these keys,
    so they would be ignored with a warning and the table written without the feature)."""
    extras = getattr(options, "extras", {})
    asked = {k: str(v) for k, v in extras.items() if k.startswith(("hoodie.table.", "hoodie.bootstrap."))}
    asked.pop("hoodie.table.cdc.enabled", None)  # _cdc names it
    _bootstrap(asked, f"{where} (write options)")
    _file_formats(asked, f"{where} (write options)")


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
