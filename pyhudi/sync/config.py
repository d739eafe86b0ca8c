"""The sync's typed configuration: Hudi's keys (sync/keys.py) parsed once into `SyncConfig`, with Hudi's
inference for what the user left unset (table name, partition fields, partition value extractor), and every
key pyhudi cannot honour refused by name before anything is written.

Two steps, because a write validates its sync options *before* committing (a typo should not leave a
committed write with a failed sync) but only knows the table's identity after: `sync_options` reads the
options alone; `resolve` adds what hoodie.properties says."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError
from pyhudi.model.table_config import TableConfig
from pyhudi.sync import keys as SK
from pyhudi.sync.partitions import EXTRACTORS, infer_extractor

BACKEND_OF_TOOL = {SK.HIVE_SYNC_TOOL: "hms", SK.GLUE_SYNC_TOOL: "glue"}


@dataclass(frozen=True)
class SyncOptions:
    """What the options alone say: which catalogs, and every sync setting that does not depend on the table."""

    tools: tuple[str, ...]  # Hudi tool class names, in the order given
    database: str
    table: str | None
    partition_fields: tuple[str, ...] | None
    extractor: str | None
    skip_ro_suffix: bool
    table_strategy: str
    snapshot_with_table_name: bool | None
    support_timestamp: bool
    sync_as_datasource: bool
    schema_length_threshold: int
    sync_comment: bool
    auto_create_database: bool
    create_managed_table: bool
    batch_num: int
    table_properties: dict[str, str]
    serde_properties: dict[str, str]
    ignore_exceptions: bool
    omit_metadata_fields: bool
    pre_apache_input_format: bool
    conditional_sync: bool
    spark_version: str
    decode_partition: bool | None
    base_path: str | None
    hive_style: bool | None
    raw: dict[str, str] = field(default_factory=dict, compare=False, repr=False)

    @property
    def backends(self) -> tuple[str, ...]:
        return tuple(BACKEND_OF_TOOL[t] for t in self.tools)


@dataclass(frozen=True)
class SyncConfig:
    """`SyncOptions` resolved against one table: the names and fields a sync registers."""

    options: SyncOptions
    table: str
    base_path: str
    partition_fields: tuple[str, ...]
    extractor: str
    decode_partition: bool
    table_version: int
    is_mor: bool
    snapshot_with_table_name: bool
    include_meta_fields: bool
    bootstrap: bool

    @property
    def database(self) -> str:
        return self.options.database


def enabled(opts: Options) -> bool:
    """Hudi's metaSyncEnabled: hive_sync.enable or meta.sync.enable."""
    return bool(opts.get(SK.HIVE_SYNC_ENABLED) or opts.get(SK.META_SYNC_ENABLED))


def sync_options(opts: Options, *, force: bool = False) -> SyncOptions | None:
    """The sync settings of a write's options; None when sync is off (unless `force`: `pyhudi sync`).
    Raises InvalidConfigError naming any refused key or value."""
    if not (force or enabled(opts)):
        return None
    _refuse(opts)
    return SyncOptions(
        tools=_tools(opts), database=opts.get(SK.DATABASE), table=opts.get(SK.TABLE),
        partition_fields=opts.get(SK.PARTITION_FIELDS), extractor=_extractor(opts.get(SK.PARTITION_EXTRACTOR)),
        skip_ro_suffix=opts.get(SK.SKIP_RO_SUFFIX), table_strategy=opts.get(SK.TABLE_STRATEGY),
        snapshot_with_table_name=opts.get(SK.SYNC_SNAPSHOT_WITH_TABLE_NAME),
        support_timestamp=opts.get(SK.SUPPORT_TIMESTAMP), sync_as_datasource=opts.get(SK.SYNC_AS_DATASOURCE),
        schema_length_threshold=opts.get(SK.SCHEMA_STRING_LENGTH_THRESHOLD), sync_comment=opts.get(SK.SYNC_COMMENT),
        auto_create_database=opts.get(SK.AUTO_CREATE_DATABASE),
        create_managed_table=opts.get(SK.CREATE_MANAGED_TABLE), batch_num=opts.get(SK.BATCH_NUM),
        table_properties=to_map(SK.TABLE_PROPERTIES.key, opts.get(SK.TABLE_PROPERTIES)),
        serde_properties=to_map(SK.SERDE_PROPERTIES.key, opts.get(SK.SERDE_PROPERTIES)),
        ignore_exceptions=opts.get(SK.IGNORE_EXCEPTIONS), omit_metadata_fields=opts.get(SK.OMIT_METADATA_FIELDS),
        pre_apache_input_format=opts.get(SK.USE_PRE_APACHE_INPUT_FORMAT),
        conditional_sync=opts.get(SK.CONDITIONAL_SYNC), spark_version=opts.get(SK.SPARK_VERSION) or "",
        decode_partition=opts.get(SK.DECODE_PARTITION), base_path=opts.get(SK.SYNC_BASE_PATH),
        hive_style=opts.get(K.HIVE_STYLE_PARTITIONING) if opts.is_set(K.HIVE_STYLE_PARTITIONING) else None,
        raw=_raw(opts),
    )


def resolve(options: SyncOptions, table: TableConfig, base_uri: str) -> SyncConfig:
    """Hudi's inference against the table: the table name (hoodie.table.name), the partition fields
    (hoodie.table.partition.fields), the extractor (HoodieSyncConfig's PARTITION_EXTRACTOR_CLASS_FUNCTION)."""
    fields = options.partition_fields
    if fields is None:
        fields = tuple(table.partition_fields) if table.is_partitioned else ()
    hive_style = table.hive_style_partitioning if options.hive_style is None else options.hive_style
    extractor = options.extractor or infer_extractor(fields, hive_style)
    snapshot_name = options.snapshot_with_table_name
    if snapshot_name is None:
        snapshot_name = table.version >= 8  # HUDI-7415 flipped the default in Hudi 1.x
    decode = table.urlencode_partitions if options.decode_partition is None else options.decode_partition
    return SyncConfig(
        options=options, table=options.table or table.name, base_path=options.base_path or catalog_path(base_uri),
        partition_fields=tuple(fields), extractor=extractor, decode_partition=decode, table_version=table.version,
        is_mor=table.is_mor, snapshot_with_table_name=snapshot_name,
        include_meta_fields=table.populate_meta_fields and not options.omit_metadata_fields,
        bootstrap=bool(table.raw.get("hoodie.bootstrap.base.path")),
    )


def catalog_path(base_uri: str) -> str:
    """The location Hudi's Spark writer registers: the qualified base path (`file:/tmp/t` for a local table,
    as Hadoop's Path prints it; an object-store URI as given)."""
    if base_uri.startswith("file://"):
        return "file:" + base_uri[len("file://"):]
    if "://" in base_uri:
        return base_uri.rstrip("/")
    return "file:" + base_uri


def to_map(key: str, text: str | None) -> dict[str, str]:
    """Hudi's ConfigUtils.toMap: one `key=value` per line; a line with more than one `=` is refused."""
    out: dict[str, str] = {}
    for line in (text or "").split("\n"):
        if not line.strip():
            continue
        parts = line.split("=")
        if len(parts) > 2:
            raise InvalidConfigError(f"{key}: bad key-value config {line!r}, must be the format 'key = value'")
        out[parts[0].strip()] = parts[1].strip() if len(parts) == 2 else ""
    return out


def _tools(opts: Options) -> tuple[str, ...]:
    """hoodie.meta.sync.client.tool.class, plus HiveSyncTool when hive_sync.enable is on (Hudi's Spark writer
    adds it to the set); classes pyhudi has no backend for are refused by name."""
    tools = list(dict.fromkeys(t.strip() for t in opts.get(SK.SYNC_TOOL_CLASSES) if t.strip()))
    if opts.get(SK.HIVE_SYNC_ENABLED) and SK.HIVE_SYNC_TOOL not in tools:
        tools.append(SK.HIVE_SYNC_TOOL)
    unknown = [t for t in tools if t not in BACKEND_OF_TOOL]
    if unknown:
        raise InvalidConfigError(
            f"{SK.SYNC_TOOL_CLASSES.key}: {', '.join(unknown)} is not a sync tool pyhudi has; use "
            f"{SK.HIVE_SYNC_TOOL} (Hive Metastore) and/or {SK.GLUE_SYNC_TOOL} (AWS Glue)")
    if not tools:
        raise InvalidConfigError(f"{SK.SYNC_TOOL_CLASSES.key} is empty; name {SK.HIVE_SYNC_TOOL} or "
                                 f"{SK.GLUE_SYNC_TOOL}")
    return tuple(tools)


def _extractor(name: str | None) -> str | None:
    if name is None or not name.strip():
        return None
    simple = name.strip().rsplit(".", 1)[-1]
    if simple not in EXTRACTORS:
        raise InvalidConfigError(
            f"{SK.PARTITION_EXTRACTOR.key}={name!r} is not an extractor pyhudi has; use one of "
            f"{', '.join(sorted(EXTRACTORS))} (org.apache.hudi.hive.*)")
    return simple


def _refuse(opts: Options) -> None:
    mode = opts.get(SK.HIVE_SYNC_MODE)
    if mode is not None and mode.strip().lower() != "hms":
        raise InvalidConfigError(
            f"{SK.HIVE_SYNC_MODE.key}={mode!r} is not supported: jdbc and hiveql run DDL through HiveServer2; "
            "pyhudi talks to the metastore's Thrift API directly. Use hms (or leave it unset)")
    if opts.get(SK.USE_JDBC) and mode is None:
        raise InvalidConfigError(f"{SK.USE_JDBC.key}=true is not supported: JDBC sync needs HiveServer2; set "
                                 f"{SK.HIVE_SYNC_MODE.key}=hms")
    if opts.get(SK.BUCKET_SYNC) or opts.get(SK.BUCKET_SYNC_SPEC):
        raise InvalidConfigError(f"{SK.BUCKET_SYNC.key} / {SK.BUCKET_SYNC_SPEC.key} are not supported: pyhudi does "
                                 "not register bucket specs")
    if opts.get(SK.USE_SPARK_CATALOG):
        raise InvalidConfigError(f"{SK.USE_SPARK_CATALOG.key}=true is not supported: Spark's catalog client is "
                                 "JVM-side; pyhudi talks to the metastore over Thrift")
    if opts.get(SK.METADATA_FILE_LISTING):
        raise InvalidConfigError(f"{SK.METADATA_FILE_LISTING.key}=true is not supported: pyhudi keeps no metadata "
                                 "table; partitions are listed from storage")
    if opts.get(SK.ASSUME_DATE_PARTITIONING):
        raise InvalidConfigError(f"{SK.ASSUME_DATE_PARTITIONING.key}=true is not supported (Hudi 0.3 tables)")


def _raw(opts: Options) -> dict[str, str]:
    """Every option as a string, for the backends' connect() (the Glue keys, metastore URIs)."""
    out = {k: _text(v) for k, v in opts.extras.items()}
    out.update({k: _text(v) for k, v in opts.explicit().items()})
    return out


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return str(value)


def raw_options(options: Mapping[str, Any] | None) -> Options:
    """Parse a user mapping once (the sync's own entry points: pyhudi.sync, the CLI)."""
    return Options.parse(options)
