"""What Hudi registers for a table: the catalog table(s), their storage descriptor, SerDe and table
properties, exactly as HiveSyncTool.syncFirstTime / HMSDDLExecutor.createTable build them, and how an existing
table is brought up to date (HiveSyncTool.syncSchema / syncProperties, HoodieHiveSyncClient's
updateSerdeProperties, updateTableProperties and updateLastCommitTimeSynced)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field

from pyhudi.sync.catalog import Column, TableDef
from pyhudi.sync.config import SyncConfig
from pyhudi.sync.schema import (
    PType,
    SchemaDifference,
    hive_columns,
    partition_columns,
    schema_difference,
    spark_table_properties,
)

INPUT_FORMAT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
REALTIME_INPUT_FORMAT = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
PRE_APACHE_INPUT_FORMAT = "com.uber.hoodie.hadoop.HoodieInputFormat"
PRE_APACHE_REALTIME_INPUT_FORMAT = "com.uber.hoodie.hadoop.realtime.HoodieRealtimeInputFormat"
OUTPUT_FORMAT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
LAST_COMMIT_TIME_SYNC = "last_commit_time_sync"
LAST_COMMIT_COMPLETION_TIME_SYNC = "last_commit_completion_time_sync"
SERDE_PATH = "path"
QUERY_AS_RO = "hoodie.query.as.ro.table"
SUFFIX_RO, SUFFIX_RT = "_ro", "_rt"


@dataclass(frozen=True)
class SyncTarget:
    """One catalog table of the Hudi table: its name, and how engines read it."""

    name: str
    realtime: bool  # HoodieParquetRealtimeInputFormat (MOR snapshot)
    read_optimized: bool  # hoodie.query.as.ro.table


def sync_targets(cfg: SyncConfig) -> list[SyncTarget]:
    """HiveSyncTool.initTableNameVars / doSync: COW -> <table>; MOR -> per hoodie.datasource.hive_sync.table.
    strategy: RO -> <table> read-optimized, RT -> <table> snapshot, ALL -> <table>_ro (<table> with
    skip_ro_suffix) and <table>_rt, then <table> as a snapshot table when sync_snapshot_with_table_name is on
    and skip_ro_suffix off (the bare name is the read-optimized table then, as Hudi 1.x decides)."""
    name = cfg.table
    if not cfg.is_mor:
        return [SyncTarget(name, False, False)]
    strategy = cfg.options.table_strategy
    if strategy == "RO":
        return [SyncTarget(name, False, True)]
    if strategy == "RT":
        return [SyncTarget(name, True, False)]
    ro = name if cfg.options.skip_ro_suffix else name + SUFFIX_RO
    out = [SyncTarget(ro, False, True), SyncTarget(name + SUFFIX_RT, True, False)]
    if cfg.snapshot_with_table_name and not cfg.options.skip_ro_suffix:
        out.append(SyncTarget(name, True, False))
    return out


def _as_datasource(cfg: SyncConfig, target: SyncTarget) -> bool:
    """HiveSyncTool turns sync_as_datasource off for a bootstrapped MOR table's snapshot tables."""
    return cfg.options.sync_as_datasource and not (cfg.bootstrap and cfg.is_mor and not target.read_optimized)


def serde_parameters(cfg: SyncConfig, target: SyncTarget) -> dict[str, str]:
    """getSerdeProperties plus HMSDDLExecutor's serialization.format=1."""
    out = dict(cfg.options.serde_properties)
    if _as_datasource(cfg, target):
        out[SERDE_PATH] = cfg.base_path
        out[QUERY_AS_RO] = "true" if target.read_optimized else "false"
    out.setdefault("serialization.format", "1")
    return out


def table_parameters(cfg: SyncConfig, target: SyncTarget, fields: list[PType]) -> dict[str, str]:
    """getTableProperties: the user's table properties, then Spark's data source properties."""
    out = dict(cfg.options.table_properties)
    if _as_datasource(cfg, target):
        out.update(spark_table_properties(fields, cfg.partition_fields, cfg.options.spark_version,
                                          cfg.options.schema_length_threshold))
    return out


def input_format(cfg: SyncConfig, target: SyncTarget) -> str:
    """HoodieInputFormatUtils.getInputFormatClassName for Parquet."""
    if cfg.options.pre_apache_input_format:
        return PRE_APACHE_REALTIME_INPUT_FORMAT if target.realtime else PRE_APACHE_INPUT_FORMAT
    return REALTIME_INPUT_FORMAT if target.realtime else INPUT_FORMAT


def data_columns(cfg: SyncConfig, fields: list[PType]) -> list[Column]:
    return hive_columns(fields, cfg.options.support_timestamp, cfg.partition_fields, cfg.options.sync_comment)


def new_table(cfg: SyncConfig, target: SyncTarget, fields: list[PType]) -> TableDef:
    """HMSDDLExecutor.createTable: columns without the partition fields, partition keys, location, formats,
    SerDe, EXTERNAL=TRUE unless create_managed_table. Column comments are set at creation when sync_comment
    is on (Hudi sets them on the second sync, its first update)."""
    managed = cfg.options.create_managed_table
    params = {} if managed else {"EXTERNAL": "TRUE"}
    params.update(table_parameters(cfg, target, fields))
    return TableDef(
        database=cfg.database, name=target.name, columns=data_columns(cfg, fields),
        partition_keys=partition_columns(fields, cfg.options.support_timestamp, cfg.partition_fields),
        location=cfg.base_path, input_format=input_format(cfg, target), output_format=OUTPUT_FORMAT,
        serde_library=SERDE, serde_parameters=serde_parameters(cfg, target), parameters=params,
        table_type="MANAGED_TABLE" if managed else "EXTERNAL_TABLE")


@dataclass
class DefinitionChange:
    """What an update of an existing table changes (for the sync's report and --explain)."""

    schema: SchemaDifference = field(default_factory=SchemaDifference)
    comments: list[str] = field(default_factory=list)
    serde: bool = False
    properties: list[str] = field(default_factory=list)

    @property
    def schema_changed(self) -> bool:
        return not self.schema.is_empty() or bool(self.comments)

    @property
    def properties_changed(self) -> bool:
        return self.serde or bool(self.properties)


def updated_table(cfg: SyncConfig, target: SyncTarget, fields: list[PType],
                  existing: TableDef) -> tuple[TableDef, DefinitionChange]:
    """The existing table after HiveSyncTool.syncSchema and syncProperties: columns replaced on a schema
    difference (partition keys kept), comments refreshed with sync_comment, the SerDe reset when its
    parameters lack one of ours, our table properties merged into the existing ones."""
    table = copy.deepcopy(existing)
    change = DefinitionChange()
    support_ts = cfg.options.support_timestamp
    change.schema = schema_difference(fields, support_ts, existing.columns, existing.partition_keys,
                                      cfg.partition_fields)
    wanted = data_columns(cfg, fields)
    if not change.schema.is_empty():
        table.columns = wanted
    if cfg.options.sync_comment:
        change.comments = _comment_changes(wanted, table.columns)
        table.columns = [_with_comment(c, wanted) for c in table.columns]
    serde = serde_parameters(cfg, target)
    if not _contains(existing.serde_parameters, serde):
        change.serde = True
        table.serde_parameters = serde
        table.input_format, table.output_format, table.serde_library = input_format(cfg, target), OUTPUT_FORMAT, SERDE
    props = table_parameters(cfg, target, fields)
    if not _contains(existing.parameters, props):
        change.properties = sorted(k for k, v in props.items() if existing.parameters.get(k) != v)
        table.parameters.update(props)
    return table, change


def _contains(current: dict[str, str], wanted: dict[str, str]) -> bool:
    return all(current.get(k) == v for k, v in wanted.items())


def _comment_changes(wanted: list[Column], current: list[Column]) -> list[str]:
    docs = {c.name: c.comment for c in wanted}
    return [c.name for c in current if c.name in docs and (c.comment or None) != (docs[c.name] or None)]


def _with_comment(col: Column, wanted: list[Column]) -> Column:
    docs = {c.name: c.comment for c in wanted}
    return Column(col.name, col.type, docs[col.name]) if col.name in docs else col


def with_sync_point(cfg: SyncConfig, table: TableDef, instant: str, completion: str | None) -> TableDef:
    """HoodieHiveSyncClient.updateLastCommitTimeSynced: the last synced commit (and its completion time), and
    the location and SerDe `path` reset to the base path."""
    out = copy.deepcopy(table)
    out.location = cfg.base_path
    out.serde_parameters[SERDE_PATH] = cfg.base_path
    out.parameters[LAST_COMMIT_TIME_SYNC] = instant
    if completion:
        out.parameters[LAST_COMMIT_COMPLETION_TIME_SYNC] = completion
    return out
