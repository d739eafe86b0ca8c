"""Typed write configuration, resolved once from user options and the table's properties.

The options a user passes and the table's `hoodie.properties` must agree on
the table's identity (type, keys, partitioning); a conflict is an error that
names both values, as Hudi's `validateTableConfig` does. Everything deeper in
pyhudi receives these dataclasses, never raw option strings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError
from pyhudi.io.base_file import ParquetSettings
from pyhudi.io.column_encoding import EncodingMemo
from pyhudi.model.metadata_table import note_enable_requested
from pyhudi.model.table_config import (
    COW,
    CUSTOM_KEYGENS,
    TIMESTAMP_KEYGENS,
    TableConfig,
    infer_keygen,
    new_table_config,
)
from pyhudi.model.table_features import (
    check_writable,
    creation_merge_properties,
    resolve_merge,
    write_payload,
)
from pyhudi.transaction.lock import LockSettings
from pyhudi.writer.markers import DEFAULT_MARKER_TYPE
from pyhudi.writer.operation import WriteOperation

log = logging.getLogger(__name__)
GLOBAL_INDEXES = frozenset({"GLOBAL_SIMPLE", "GLOBAL_BLOOM"})
# Index types whose lookups can see keys in log files (Hudi's canIndexLogFiles).
LOG_AWARE_INDEXES = frozenset({"INMEMORY", "BUCKET"})


@dataclass(frozen=True)
class SizingConfig:
    max_file_size: int = 125829120
    small_file_limit: int = 104857600
    block_size: int = 125829120
    page_size: int = 1048576
    codec: str = "snappy"
    compression_ratio: float = 0.1
    insert_split_size: int = 500000
    auto_split: bool = True
    record_size_estimate: int = 1024
    estimation_threshold: float = 1.0
    estimate_auto: bool = True  # only when the estimate key is not set (see record_size)
    small_file_candidates_limit: int = 1
    log_to_parquet_ratio: float = 0.35
    log_block_max_size: int = 256 * 1024 * 1024
    log_max_size: int = 1024 * 1024 * 1024
    log_block_format: str = "parquet"
    raw_incompressible: bool = True
    append_row_groups: bool = True

    @classmethod
    def from_options(cls, o: Options) -> SizingConfig:
        return cls(
            max_file_size=o.get(K.PARQUET_MAX_FILE_SIZE), small_file_limit=o.get(K.PARQUET_SMALL_FILE_LIMIT),
            block_size=o.get(K.PARQUET_BLOCK_SIZE), page_size=o.get(K.PARQUET_PAGE_SIZE),
            codec=o.get(K.PARQUET_COMPRESSION_CODEC), compression_ratio=o.get(K.PARQUET_COMPRESSION_RATIO),
            insert_split_size=o.get(K.INSERT_SPLIT_SIZE), auto_split=o.get(K.INSERT_AUTO_SPLIT),
            record_size_estimate=o.get(K.RECORD_SIZE_ESTIMATE),
            estimation_threshold=o.get(K.RECORD_SIZE_ESTIMATION_THRESHOLD),
            estimate_auto=o.get(K.RECORD_SIZE_ESTIMATE_AUTO) and not o.is_set(K.RECORD_SIZE_ESTIMATE),
            small_file_candidates_limit=o.get(K.SMALL_FILE_GROUP_CANDIDATES_LIMIT),
            log_to_parquet_ratio=o.get(K.LOGFILE_TO_PARQUET_RATIO),
            log_block_max_size=o.get(K.LOGFILE_DATA_BLOCK_MAX_SIZE), log_max_size=o.get(K.LOGFILE_MAX_SIZE),
            log_block_format=o.get(K.LOGFILE_DATA_BLOCK_FORMAT),
            raw_incompressible=o.get(K.PARQUET_RAW_INCOMPRESSIBLE),
            append_row_groups=o.get(K.PARQUET_APPEND_ROW_GROUPS),
        )


@dataclass(frozen=True)
class IndexConfig:
    type: str = "SIMPLE"
    bloom_num_entries: int = 60000
    bloom_fpp: float = 1e-9
    bloom_type: str = "DYNAMIC_V0"
    bloom_max_entries: int = 100000
    bloom_size_to_records: bool = True
    prune_by_ranges: bool = True
    update_partition_path: bool = True
    bucket_num: int = 256
    bucket_hash_fields: tuple[str, ...] = ()

    @property
    def is_global(self) -> bool:
        return self.type in GLOBAL_INDEXES

    @property
    def can_index_log_files(self) -> bool:
        return self.type in LOG_AWARE_INDEXES

    @classmethod
    def from_options(cls, o: Options) -> IndexConfig:
        return cls(
            type=o.get(K.INDEX_TYPE), bloom_num_entries=o.get(K.BLOOM_NUM_ENTRIES), bloom_fpp=o.get(K.BLOOM_FPP),
            bloom_type=o.get(K.BLOOM_FILTER_TYPE), bloom_max_entries=o.get(K.BLOOM_DYNAMIC_MAX_ENTRIES),
            bloom_size_to_records=o.get(K.BLOOM_SIZE_TO_RECORDS),
            prune_by_ranges=o.get(K.BLOOM_PRUNE_BY_RANGES), update_partition_path=o.get(K.SIMPLE_UPDATE_PARTITION_PATH),
            bucket_num=o.get(K.BUCKET_NUM_BUCKETS), bucket_hash_fields=o.get(K.BUCKET_HASH_FIELD),
        )


@dataclass(frozen=True)
class WriteConfig:
    table: TableConfig
    operation: WriteOperation
    sizing: SizingConfig
    index: IndexConfig
    payload_class: str
    combine_before_write: bool
    allow_duplicate_on_inserts: bool
    reconcile_schema: bool
    bulk_insert_sort_mode: str
    parallelism: int
    storage_level: str
    occ: bool
    failed_writes_lazy: bool
    extra_metadata: dict[str, str] = field(default_factory=dict)
    options: Options = field(default_factory=lambda: Options({}, {}), compare=False, repr=False)
    compaction: CompactionConfig = field(default_factory=lambda: CompactionConfig())
    clustering: ClusteringConfig = field(default_factory=lambda: ClusteringConfig())
    lock: LockSettings = field(default_factory=lambda: LockSettings())
    clean: CleanConfig = field(default_factory=lambda: CleanConfig())
    archival: ArchivalConfig = field(default_factory=lambda: ArchivalConfig())
    services: ServicesConfig = field(default_factory=lambda: ServicesConfig())
    heartbeat_interval_ms: int = 60000
    heartbeat_tolerable_misses: int = 2
    single_task_max_bytes: int = 32 * 1024 * 1024
    local_parallelism: int = 0  # in-process engine's task pool (0: the machine's cores, at most 8)
    single_task_max_index_files: int = 256
    direct_parquet_input: bool = True
    marker_type: str = DEFAULT_MARKER_TYPE  # hoodie.write.markers.type

    @property
    def bucket_hash_fields(self) -> tuple[str, ...]:
        """The fields a BUCKET index hashes: hoodie.bucket.index.hash.field, else the record key fields."""
        return tuple(self.index.bucket_hash_fields or self.table.record_key_fields)

    @property
    def precombine_field(self) -> str | None:
        """The field the write compares records of one key by. A 1.x table in COMMIT_TIME_ORDERING has none:
        Hudi 1.x dedupes a batch with its merge mode (BaseWriteHelper.deduplicateRecords -> deltaMerge, the
        later record wins) and never reads ordering values there, whatever ordering fields it records."""
        if self.table.version >= 8 and not self.uses_event_time_ordering:
            return None
        return self.table.precombine_field

    @property
    def uses_event_time_ordering(self) -> bool:
        return self.payload_class.endswith("DefaultHoodieRecordPayload")

    @property
    def event_time_field(self) -> str | None:
        """Ordering field when merging by event time (DefaultHoodieRecordPayload), else commit time."""
        return self.precombine_field if self.uses_event_time_ordering else None


_IDENTITY_CHECKS = (
    (K.TABLE_TYPE, "table_type", "hoodie.table.type"),
    (K.RECORDKEY_FIELDS, "record_key_fields", "hoodie.table.recordkey.fields"),
    (K.PARTITIONPATH_FIELDS, "partition_fields", "hoodie.table.partition.fields"),
    (K.PRECOMBINE_FIELD, "precombine_field", "hoodie.table.precombine.field"),
    (K.KEYGENERATOR_CLASS, "keygen_class", "hoodie.table.keygenerator.class"),
    (K.HIVE_STYLE_PARTITIONING, "hive_style_partitioning", "hoodie.datasource.write.hive_style_partitioning"),
    (K.PARTITIONPATH_URLENCODE, "urlencode_partitions", "hoodie.datasource.write.partitionpath.urlencode"),
)


def _keygen_from_options(o: Options) -> str | None:
    if o.is_set(K.KEYGENERATOR_CLASS):
        return str(o.get(K.KEYGENERATOR_CLASS))
    if o.is_set(K.KEYGENERATOR_TYPE):
        return K.KEYGENERATOR_CLASS.parse(o.get(K.KEYGENERATOR_TYPE))
    return None


def resolve_table_config(o: Options, existing: TableConfig | None) -> TableConfig:
    """The table identity this write uses: the existing table's, checked against explicit options."""
    if o.get(K.METADATA_ENABLE):
        note_enable_requested()  # once per process: pyhudi removes, never maintains, the metadata table
    keygen = _keygen_from_options(o)
    if existing is not None:
        for prop, attr, table_key in _IDENTITY_CHECKS:
            if not o.is_set(prop) and not (prop is K.KEYGENERATOR_CLASS and keygen):
                continue
            wanted: Any = keygen if prop is K.KEYGENERATOR_CLASS else o.get(prop)
            if prop is K.PARTITIONPATH_FIELDS:
                wanted = _partition_names(o, keygen or existing.keygen_class)
            have = getattr(existing, attr)
            if prop is K.PARTITIONPATH_FIELDS and not existing.is_partitioned and not wanted:
                continue
            if prop is K.PRECOMBINE_FIELD and existing.version >= 8:
                continue  # a comma list there: _check_1x_merge_options compares all the fields
            if wanted != have:
                raise InvalidConfigError(
                    f"{prop.key}={_show(wanted)} conflicts with the table's {table_key}={_show(have)}; "
                    "drop the option or write to a new table")
        _check_stored_names(o, existing)
        _refuse_dropped_partition_columns(existing)
        if existing.version >= 8:
            _check_1x_merge_options(o, existing)
        return _with_keygen_options(o, existing)
    name = o.get(K.TABLE_NAME)
    if not name:
        raise InvalidConfigError("hoodie.table.name is required to create a table; add it to the options")
    record_keys = o.get(K.RECORDKEY_FIELDS)
    partitions = _partition_names(o, keygen)
    if o.get(K.DROP_PARTITION_COLUMNS):
        raise InvalidConfigError("hoodie.datasource.write.drop.partition.columns=true is not supported by pyhudi")
    created = TableConfig(
        name=str(name),
        table_type=o.get(K.TABLE_TYPE) or COW,
        record_key_fields=tuple(record_keys),
        partition_fields=tuple(partitions),
        precombine_field=o.get(K.PRECOMBINE_FIELD),
        keygen_class=keygen or infer_keygen(tuple(record_keys), tuple(partitions)),
        hive_style_partitioning=o.get(K.HIVE_STYLE_PARTITIONING),
        urlencode_partitions=o.get(K.PARTITIONPATH_URLENCODE),
        populate_meta_fields=o.get(K.POPULATE_META_FIELDS),
        # Hudi's datasource writer stores hoodie.database.name= (empty) when no database is given.
        database=str(o.get(K.DATABASE_NAME) or "") if o.is_set(K.DATABASE_NAME) else "",
        payload_class=o.get(K.PAYLOAD_CLASS) if o.is_set(K.PAYLOAD_CLASS) else None,
        timeline_timezone=o.get(K.TIMELINE_TIMEZONE),
        bucket_num=o.get(K.BUCKET_NUM_BUCKETS) if o.get(K.INDEX_TYPE) == "BUCKET" else None,
    )
    if o.get(K.TABLE_VERSION) >= 8:
        created = _new_1x_table(o, created)
    else:
        _note_ignored_1x_options(o)
    return _with_keygen_options(o, created)


def _note_ignored_1x_options(o: Options) -> None:
    """Keys that only shape a 1.x table: a version-6 table records neither (Hudi 1.x drops them there too)."""
    for prop in (K.ORDERING_FIELDS, K.RECORD_MERGE_MODE):
        if o.is_set(prop):
            log.warning("%s is ignored: the table is created at version 6, which has no such setting (use "
                        "hoodie.datasource.write.precombine.field and the payload class there, or "
                        "hoodie.write.table.version=8/9)", prop.key)


def _ordering_option(o: Options) -> tuple[str, ...]:
    """The ordering fields a 1.x write names: hoodie.table.ordering.fields (1.1), else the precombine key."""
    if o.is_set(K.ORDERING_FIELDS):
        return tuple(f.strip() for f in o.get(K.ORDERING_FIELDS) if f.strip())
    return tuple(f.strip() for f in str(o.get(K.PRECOMBINE_FIELD) or "").split(",") if f.strip())


def _new_1x_table(o: Options, draft: TableConfig) -> TableConfig:
    """A table created at version 8 or 9: `draft`'s identity with the ordering fields, merge settings,
    key generator type and (custom key generators) typed partition fields Hudi 1.x records, in its
    timeline layout 2 (model/table_config.new_table_config)."""
    version = int(o.get(K.TABLE_VERSION))
    ordering = _ordering_option(o)
    mode = o.get(K.RECORD_MERGE_MODE) if o.is_set(K.RECORD_MERGE_MODE) else None
    payload = o.get(K.PAYLOAD_CLASS) if o.is_set(K.PAYLOAD_CLASS) else None
    where = f"new table {draft.name!r} (hoodie.write.table.version={version})"
    recorded, payload_class = creation_merge_properties(version, mode, payload, ordering, where)
    if draft.keygen_class in CUSTOM_KEYGENS and o.is_set(K.PARTITIONPATH_FIELDS):
        # SparkKeyGenUtils.getPartitionColumnsForKeyGenerator: version 8+ keeps each field's type
        recorded["hoodie.table.partition.fields"] = ",".join(o.get(K.PARTITIONPATH_FIELDS))
    base = draft.evolve(version=version, ordering_fields=ordering, payload_class=payload_class)
    return new_table_config(base, recorded, where)


def _check_1x_merge_options(o: Options, existing: TableConfig) -> None:
    """A write to a 1.x table that names ordering fields or a merge mode must name the table's (Hudi 1.x
    takes both from the table; a writer that thinks otherwise is pointed at the wrong table)."""
    if o.is_set(K.ORDERING_FIELDS) or o.is_set(K.PRECOMBINE_FIELD):
        wanted = _ordering_option(o)
        if wanted != existing.ordering_fields:
            key = K.ORDERING_FIELDS.key if o.is_set(K.ORDERING_FIELDS) else K.PRECOMBINE_FIELD.key
            raise InvalidConfigError(
                f"{key}={_show(wanted)} conflicts with the table's ordering fields {_show(existing.ordering_fields)} "
                "(hoodie.table.ordering.fields / hoodie.table.precombine.field); drop the option or write to a new "
                "table")
    if o.is_set(K.RECORD_MERGE_MODE):
        have = resolve_merge(existing.raw, f"table {existing.name!r}", existing.version,
                             existing.ordering_fields).mode
        if o.get(K.RECORD_MERGE_MODE) != have:
            raise InvalidConfigError(
                f"hoodie.write.record.merge.mode={o.get(K.RECORD_MERGE_MODE)} conflicts with the table's merge mode "
                f"{have} (hoodie.record.merge.mode); drop the option or write to a new table")


def _partition_names(o: Options, keygen: str | None) -> tuple[str, ...]:
    """The partition field names: for a CustomKeyGenerator without the `:SIMPLE`/`:TIMESTAMP` types, which
    Hudi 0.14 leaves out of hoodie.table.partition.fields (SparkKeyGenUtils.getPartitionColumns)."""
    fields = tuple(o.get(K.PARTITIONPATH_FIELDS))
    if keygen in CUSTOM_KEYGENS:
        return tuple(f.split(":")[0].strip() for f in fields)
    return fields


def _with_keygen_options(o: Options, table: TableConfig) -> TableConfig:
    """The table identity plus this write's TimestampBased/Custom key generator settings (options over any
    hoodie.keygen.timebased.* keys stored in hoodie.properties), checked before anything is written."""
    if table.keygen_class not in TIMESTAMP_KEYGENS | CUSTOM_KEYGENS:
        return table
    from pyhudi.keygen.spec import PARTITION_SPEC_KEY, KeySpec

    merged = dict(table.keygen_options)
    merged.update({prop.key: str(o.get(prop)) for prop in K.TIMEBASED_KEYS if o.is_set(prop)})
    if table.keygen_class in CUSTOM_KEYGENS and o.is_set(K.PARTITIONPATH_FIELDS):
        merged[PARTITION_SPEC_KEY] = ",".join(o.get(K.PARTITIONPATH_FIELDS))
    resolved = table.evolve(keygen_options=merged)
    KeySpec.for_table(resolved)  # refuses missing/invalid settings and unsupported patterns now
    return resolved


# Options Hudi's validateTableConfig compares with hoodie.properties as strings, through Spark's resolver
# (case-insensitive unless spark.sql.caseSensitive): only when the option is given and the table has the key.
_STORED_NAME_CHECKS = (
    (K.TABLE_NAME, "hoodie.table.name"),
    (K.DATABASE_NAME, "hoodie.database.name"),
    (K.DROP_PARTITION_COLUMNS, "hoodie.datasource.write.drop.partition.columns"),
)


def _check_stored_names(o: Options, existing: TableConfig) -> None:
    """A write naming another table or database than the table's (or another drop.partition.columns) is
    refused, as Hudi's validateTableConfig and handleSaveModes refuse it: a writer pointed at the wrong
    path must not silently write into someone else's table. An absent option is not checked, and neither
    is a key the table's hoodie.properties lacks; an empty stored database name is a value (Hudi 0.14)."""
    for prop, table_key in _STORED_NAME_CHECKS:
        have = existing.raw.get(table_key)
        if not o.is_set(prop) or have is None:
            continue
        value = o.get(prop)
        wanted = str(value).lower() if isinstance(value, bool) else str(value if value is not None else "")
        if wanted.lower() != have.lower():
            raise InvalidConfigError(
                f"{prop.key}={wanted!r} conflicts with the table's {table_key}={have!r} in hoodie.properties; "
                f"use {have!r} (or drop the option) to write to this table, or write to another path")


def _refuse_dropped_partition_columns(existing: TableConfig) -> None:
    """Hudi leaves the partition columns out of such a table's data files; pyhudi writes them, which would
    mix two file layouts in one table, so it refuses instead of writing."""
    if existing.drop_partition_columns:
        raise InvalidConfigError(
            "the table was created with hoodie.datasource.write.drop.partition.columns=true (partition columns "
            "left out of its data files), which pyhudi does not support writing; write it with Apache Hudi, "
            "or copy it into a table created without that option")


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(value) or "(none)"
    return str(value)


def build_write_config(o: Options, table: TableConfig, operation: WriteOperation | None = None,
                       streaming: bool = False) -> WriteConfig:
    """`streaming`: the write is a micro-batch of a streaming query, where Hudi runs MOR compaction
    asynchronously by default (hoodie.datasource.compaction.async.enable)."""
    op = operation or WriteOperation(o.get(K.OPERATION))
    combine = {
        WriteOperation.UPSERT: o.get(K.COMBINE_BEFORE_UPSERT),
        WriteOperation.DELETE: o.get(K.COMBINE_BEFORE_DELETE),
    }.get(op, o.get(K.COMBINE_BEFORE_INSERT))
    parallelism = {
        WriteOperation.BULK_INSERT: o.get(K.BULKINSERT_PARALLELISM),
        WriteOperation.UPSERT: o.get(K.UPSERT_PARALLELISM),
        WriteOperation.DELETE: o.get(K.DELETE_PARALLELISM),
    }.get(op, o.get(K.INSERT_PARALLELISM))
    occ = o.get(K.CONCURRENCY_MODE) == "OPTIMISTIC_CONCURRENCY_CONTROL"
    failed = o.get(K.FAILED_WRITES_POLICY) or ("LAZY" if occ else "EAGER")
    if occ and failed == "EAGER":
        raise InvalidConfigError(
            "hoodie.cleaner.policy.failed.writes=EAGER cannot be used with optimistic concurrency control: "
            "it would roll back other live writers; use LAZY")
    index = IndexConfig.from_options(o)
    if index.type == "GLOBAL_BLOOM":
        index = IndexConfig(**{**index.__dict__, "type": "GLOBAL_SIMPLE"})
    clustering = ClusteringConfig.from_options(o)
    if index.type == "BUCKET":
        index = check_bucket_num(index, table, o.is_set(K.BUCKET_NUM_BUCKETS))
        if clustering.runs_with_writes:
            raise InvalidConfigError(
                "hoodie.index.type=BUCKET cannot be used with clustering (hoodie.clustering.inline, "
                "hoodie.clustering.schedule.inline or hoodie.clustering.async.enabled is true): clustering "
                "rewrites file groups into new ones that are not bucket file groups, which the simple bucket "
                "index cannot write again; turn clustering off for this table (its files are sized by "
                "hoodie.bucket.index.num.buckets)")
    payload = _write_payload(o, table)
    # Every write and service: features pyhudi would break, including (on virtual keys) every operation
    # that matches stored records by key: updates, deletes, inserts that must not duplicate stored keys.
    check_writable(table, o, op.needs_tagging or (
        op is WriteOperation.INSERT and not o.get(K.ALLOW_DUPLICATE_ON_INSERTS)))
    clean = CleanConfig.from_options(o)
    prefix = o.get(K.COMMIT_META_PREFIX)
    extra = {k: str(v) for k, v in o.extras.items() if prefix and k.startswith(prefix)}
    return WriteConfig(
        table=table, operation=op, sizing=SizingConfig.from_options(o), index=index, payload_class=str(payload),
        combine_before_write=bool(combine), allow_duplicate_on_inserts=o.get(K.ALLOW_DUPLICATE_ON_INSERTS),
        reconcile_schema=o.get(K.RECONCILE_SCHEMA), bulk_insert_sort_mode=o.get(K.BULKINSERT_SORT_MODE),
        parallelism=int(parallelism), storage_level=str(o.get(K.TAGGED_STORAGE_LEVEL)).upper(), occ=occ,
        failed_writes_lazy=failed == "LAZY", extra_metadata=extra, options=o,
        compaction=CompactionConfig.from_options(o, table.is_mor and streaming),
        clustering=clustering,
        lock=lock_settings(o), clean=clean, archival=ArchivalConfig.from_options(o, clean),
        services=ServicesConfig.from_options(o),
        heartbeat_interval_ms=o.get(K.HEARTBEAT_INTERVAL_MS),
        heartbeat_tolerable_misses=o.get(K.HEARTBEAT_TOLERABLE_MISSES),
        single_task_max_bytes=o.get(K.SINGLE_TASK_MAX_BYTES),
        local_parallelism=o.get(K.LOCAL_PARALLELISM),
        single_task_max_index_files=o.get(K.SINGLE_TASK_MAX_INDEX_FILES),
        direct_parquet_input=o.get(K.DIRECT_PARQUET_INPUT),
        marker_type=str(o.get(K.MARKERS_TYPE)),
    )


def _write_payload(o: Options, table: TableConfig) -> str:
    """The payload class the write merges with: a version-6 table's (or the option's), for a 1.x table the
    one with its merge mode's semantics (table_features.write_payload); an option naming another one is
    refused there, as it would merge differently from every reader."""
    if table.version < 8:
        return str(table.payload_class if table.payload_class and not o.is_set(K.PAYLOAD_CLASS)
                   else o.get(K.PAYLOAD_CLASS))
    payload = write_payload(table)
    if o.is_set(K.PAYLOAD_CLASS) and o.get(K.PAYLOAD_CLASS) != payload:
        raise InvalidConfigError(
            f"hoodie.datasource.write.payload.class={o.get(K.PAYLOAD_CLASS)} conflicts with the table's merge "
            f"semantics (hoodie.record.merge.mode: pyhudi writes it as {payload}); drop the option, Hudi 1.x "
            "merges by the table's merge mode")
    return payload


def check_bucket_num(index: IndexConfig, table: TableConfig, given: bool) -> IndexConfig:
    """A BUCKET write must hash into the table's bucket count, else keys land in other buckets than their
    records (duplicates). pyhudi records the count in hoodie.properties when it creates a bucket table (as
    Spark SQL's TBLPROPERTIES do); a write that does not set the option takes the recorded count, one that
    sets another is refused. Tables without the record are checked against their file groups
    (index/bucket.check_layout, check_bucket_keys)."""
    stored = table.bucket_num
    if stored is None:
        return index
    if given and index.bucket_num != stored:
        raise InvalidConfigError(
            f"hoodie.bucket.index.num.buckets={index.bucket_num} conflicts with the table's "
            f"hoodie.bucket.index.num.buckets={stored} (hoodie.properties); use {stored} or leave the option "
            "out: a simple bucket index cannot change its bucket count, keys would land in other buckets "
            "than their records")
    return replace(index, bucket_num=stored)


def lock_settings(o: Options) -> LockSettings:
    return LockSettings(provider=o.get(K.LOCK_PROVIDER), directory=o.get(K.LOCK_FILESYSTEM_PATH),
                        lease_seconds=o.get(K.LOCK_EXPIRE_MINUTES) * 60, wait_ms=o.get(K.LOCK_ACQUIRE_WAIT_MS),
                        validity_s=o.get(K.LOCK_STORAGE_VALIDITY_SECONDS),
                        renew_interval_s=o.get(K.LOCK_STORAGE_RENEW_SECONDS),
                        occ=o.get(K.CONCURRENCY_MODE) == "OPTIMISTIC_CONCURRENCY_CONTROL")


@dataclass(frozen=True)
class CompactionConfig:
    inline: bool = False
    schedule_inline: bool = False
    trigger: str = "NUM_COMMITS"
    max_delta_commits: int = 5
    max_delta_seconds: int = 3600
    log_size_threshold: int = 0
    target_io: int = 500 * 1024  # MB, as Hudi's hoodie.compaction.target.io
    strategy: str = "LogFileSizeBasedCompactionStrategy"
    run_async: bool = False  # schedule after a micro-batch, execute in the background (streaming MOR)
    incremental: bool = True  # hoodie.table.services.incremental.enabled

    @classmethod
    def from_options(cls, o: Options, streaming_mor: bool = False) -> CompactionConfig:
        """Like Hudi's streaming sink: async compaction needs a streaming write to a MOR table, the
        async key (default true) and no inline compaction, which takes precedence."""
        inline = o.get(K.COMPACT_INLINE)
        return cls(
            inline=inline, schedule_inline=o.get(K.COMPACT_SCHEDULE_INLINE),
            run_async=streaming_mor and bool(o.get(K.COMPACT_ASYNC)) and not inline,
            trigger=o.get(K.COMPACT_TRIGGER_STRATEGY), max_delta_commits=o.get(K.COMPACT_MAX_DELTA_COMMITS),
            max_delta_seconds=o.get(K.COMPACT_MAX_DELTA_SECONDS),
            log_size_threshold=o.get(K.COMPACTION_LOGFILE_SIZE_THRESHOLD), target_io=o.get(K.COMPACTION_TARGET_IO),
            strategy=o.get(K.COMPACTION_STRATEGY), incremental=o.get(K.TABLE_SERVICES_INCREMENTAL),
        )


@dataclass(frozen=True)
class ServicesConfig:
    """Background table services (pyhudi.services.background): retries of a failed compaction or
    clustering, and the Spark scheduler pool their jobs run in."""

    retry_count: int = 3
    retry_interval_ms: int = 2000
    scheduler_pool: str = "pyhudi_table_services"

    @classmethod
    def from_options(cls, o: Options) -> ServicesConfig:
        return cls(retry_count=o.get(K.SERVICES_RETRY_COUNT), retry_interval_ms=o.get(K.SERVICES_RETRY_INTERVAL_MS),
                   scheduler_pool=str(o.get(K.SERVICES_SCHEDULER_POOL) or ""))


@dataclass(frozen=True)
class ClusteringConfig:
    inline: bool = False
    inline_max_commits: int = 4
    schedule_inline: bool = False
    async_enabled: bool = False
    async_max_commits: int = 4
    small_file_limit: int = 314572800
    max_bytes_per_group: int = 2 * 1024 * 1024 * 1024
    target_file_max_bytes: int = 1024 * 1024 * 1024
    max_num_groups: int = 30
    single_group_enabled: bool = True
    sort_columns: tuple[str, ...] = ()
    layout: str = "linear"
    partition_selected: tuple[str, ...] = ()
    partition_regex: str | None = None
    filter_mode: str = "NONE"
    lookback_partitions: int = 2
    skip_latest_partitions: int = 0
    begin_partition: str | None = None
    end_partition: str | None = None
    max_parallelism: int = 15
    reject_updates: bool = True
    rollback_on_conflict: bool = False
    incremental: bool = True  # hoodie.table.services.incremental.enabled
    index_type: str | None = None  # hoodie.index.type when given: a BUCKET table cannot be clustered

    @classmethod
    def from_options(cls, o: Options) -> ClusteringConfig:
        return cls(
            inline=o.get(K.CLUSTERING_INLINE), inline_max_commits=o.get(K.CLUSTERING_INLINE_MAX_COMMITS),
            schedule_inline=o.get(K.CLUSTERING_SCHEDULE_INLINE), async_enabled=o.get(K.CLUSTERING_ASYNC_ENABLED),
            async_max_commits=o.get(K.CLUSTERING_ASYNC_MAX_COMMITS),
            small_file_limit=o.get(K.CLUSTERING_SMALL_FILE_LIMIT),
            max_bytes_per_group=o.get(K.CLUSTERING_MAX_BYTES_PER_GROUP),
            target_file_max_bytes=o.get(K.CLUSTERING_TARGET_FILE_MAX_BYTES),
            max_num_groups=o.get(K.CLUSTERING_MAX_NUM_GROUPS), single_group_enabled=o.get(K.CLUSTERING_SINGLE_GROUP),
            sort_columns=tuple(o.get(K.CLUSTERING_SORT_COLUMNS)), layout=o.get(K.LAYOUT_OPTIMIZE_STRATEGY),
            partition_selected=tuple(o.get(K.CLUSTERING_PARTITION_SELECTED)),
            partition_regex=o.get(K.CLUSTERING_PARTITION_REGEX), filter_mode=o.get(K.CLUSTERING_FILTER_MODE),
            lookback_partitions=o.get(K.CLUSTERING_LOOKBACK_PARTITIONS),
            skip_latest_partitions=o.get(K.CLUSTERING_SKIP_LATEST_PARTITIONS),
            begin_partition=o.get(K.CLUSTERING_BEGIN_PARTITION), end_partition=o.get(K.CLUSTERING_END_PARTITION),
            max_parallelism=o.get(K.CLUSTERING_MAX_PARALLELISM),
            reject_updates=o.get(K.CLUSTERING_UPDATES_STRATEGY) == "SparkRejectUpdateStrategy",
            rollback_on_conflict=o.get(K.CLUSTERING_ROLLBACK_ON_CONFLICT),
            incremental=o.get(K.TABLE_SERVICES_INCREMENTAL),
            index_type=str(o.get(K.INDEX_TYPE)) if o.is_set(K.INDEX_TYPE) else None,
        )

    @property
    def runs_with_writes(self) -> bool:
        return self.inline or self.schedule_inline or self.async_enabled


@dataclass(frozen=True)
class CleanConfig:
    automatic: bool = True
    run_async: bool = False
    max_commits: int = 1
    policy: str = "KEEP_LATEST_COMMITS"
    commits_retained: int = 10
    hours_retained: int = 24
    file_versions_retained: int = 3
    incremental: bool = True
    empty_clean_after_ms: int = -1  # -1: never (Hudi's default)

    @classmethod
    def from_options(cls, o: Options) -> CleanConfig:
        cfg = cls(
            automatic=o.get(K.CLEAN_AUTOMATIC), run_async=o.get(K.CLEAN_ASYNC), max_commits=o.get(K.CLEAN_MAX_COMMITS),
            policy=o.get(K.CLEANER_POLICY), commits_retained=o.get(K.CLEANER_COMMITS_RETAINED),
            hours_retained=o.get(K.CLEANER_HOURS_RETAINED),
            file_versions_retained=o.get(K.CLEANER_FILEVERSIONS_RETAINED), incremental=o.get(K.CLEANER_INCREMENTAL),
            empty_clean_after_ms=o.get(K.EMPTY_CLEAN_DURATION_MS) if o.is_set(K.EMPTY_CLEAN_DURATION_MS)
            or not o.is_set(K.EMPTY_CLEAN_INTERVAL_HOURS) else o.get(K.EMPTY_CLEAN_INTERVAL_HOURS) * 3_600_000,
        )
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Refuse retention that is negative, or that would let the cleaner touch the latest snapshot."""
        for key, value in (("hoodie.cleaner.commits.retained", self.commits_retained),
                           ("hoodie.cleaner.hours.retained", self.hours_retained),
                           ("hoodie.cleaner.fileversions.retained", self.file_versions_retained)):
            if value < 0:
                raise InvalidConfigError(f"{key}={value} is negative; retention must be at least 1")
        chosen = {"KEEP_LATEST_COMMITS": ("hoodie.cleaner.commits.retained", self.commits_retained),
                  "KEEP_LATEST_FILE_VERSIONS": ("hoodie.cleaner.fileversions.retained", self.file_versions_retained),
                  }.get(self.policy)
        if chosen is not None and chosen[1] < 1:
            raise InvalidConfigError(
                f"{chosen[0]}={chosen[1]} with hoodie.cleaner.policy={self.policy} would let the cleaner delete "
                "files of the latest committed snapshot; keep at least 1")


@dataclass(frozen=True)
class ArchivalConfig:
    """hoodie.keep.max/min.commits bound the active timeline; the archiver moves the rest to
    `.hoodie/archived/` (see pyhudi.services.archival)."""

    max_commits: int = 30
    min_commits: int = 20
    batch: int = 10
    automatic: bool = True
    run_async: bool = False

    @classmethod
    def from_options(cls, o: Options, clean: CleanConfig) -> ArchivalConfig:
        cfg = cls(max_commits=o.get(K.KEEP_MAX_COMMITS), min_commits=o.get(K.KEEP_MIN_COMMITS),
                  batch=o.get(K.ARCHIVAL_BATCH), automatic=o.get(K.ARCHIVE_AUTOMATIC),
                  run_async=o.get(K.ARCHIVE_ASYNC))
        if cfg.min_commits <= 0 or cfg.max_commits <= cfg.min_commits:
            raise InvalidConfigError(
                f"hoodie.keep.max.commits={cfg.max_commits} must be greater than hoodie.keep.min.commits="
                f"{cfg.min_commits}, which must be positive")
        if clean.policy == "KEEP_LATEST_COMMITS" and cfg.min_commits <= clean.commits_retained:
            raise InvalidConfigError(
                f"hoodie.keep.min.commits={cfg.min_commits} must be greater than hoodie.cleaner.commits.retained="
                f"{clean.commits_retained}: archiving instants the cleaner still retains would lose them; raise "
                "hoodie.keep.min.commits (and hoodie.keep.max.commits) or lower the retention")
        return cfg


def parquet_settings(cfg: WriteConfig, table_uri: str) -> ParquetSettings:
    """The parquet writer's settings for the write's (or service's) configuration on the table at
    `table_uri` (whose files share their sampled encoding choices: `EncodingMemo`)."""
    return ParquetSettings(
        codec=cfg.sizing.codec, page_size=cfg.sizing.page_size, block_size=cfg.sizing.block_size,
        bloom_type=cfg.index.bloom_type, bloom_num_entries=cfg.index.bloom_num_entries,
        bloom_fpp=cfg.index.bloom_fpp, bloom_max_entries=cfg.index.bloom_max_entries,
        with_bloom=cfg.table.populate_meta_fields, bloom_size_to_records=cfg.index.bloom_size_to_records,
        raw_incompressible=cfg.sizing.raw_incompressible, append_row_groups=cfg.sizing.append_row_groups,
        encoding_memo=EncodingMemo(table_uri),
    )
