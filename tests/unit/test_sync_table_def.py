"""What is registered for COW and MOR tables, field by field against what Hudi's code writes
(HiveSyncTool.initTableNameVars/doSync/syncFirstTime, HMSDDLExecutor.createTable,
HoodieInputFormatUtils, SparkDataSourceTableUtils.getSparkSerdeProperties, HoodieHiveSyncClient's
updateLastCommitTimeSynced), and the typed options (HoodieSyncConfig / HiveSyncConfigHolder defaults)."""

from __future__ import annotations

from typing import Any

import pytest

from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError
from pyhudi.model.table_config import TableConfig
from pyhudi.sync.catalog import Column
from pyhudi.sync.config import catalog_path, resolve, sync_options, to_map
from pyhudi.sync.schema import parquet_schema, spark_table_properties
from pyhudi.sync.table_def import new_table, sync_targets, updated_table, with_sync_point

AVRO = {"type": "record", "name": "r", "fields": [
    {"name": "_hoodie_commit_time", "type": ["null", "string"]}, {"name": "id", "type": "string"},
    {"name": "v", "type": "double"}, {"name": "region", "type": "string"}]}
FIELDS = parquet_schema(AVRO)
ENABLE = {"hoodie.datasource.hive_sync.enable": "true"}


def _cfg(table_type: str = "COPY_ON_WRITE", version: int = 6, **opts: Any):  # type: ignore[no-untyped-def]
    table = TableConfig(name="trips", table_type=table_type, record_key_fields=("id",), partition_fields=("region",),
                        version=version, layout_version=2 if version >= 8 else 1)
    options = sync_options(Options.parse({**ENABLE, **opts}))
    assert options is not None
    return resolve(options, table, "s3://bucket/trips")


def test_defaults_are_hudis() -> None:
    cfg = _cfg()
    o = cfg.options
    assert o.tools == ("org.apache.hudi.hive.HiveSyncTool",) and o.backends == ("hms",)
    assert (o.database, cfg.table, cfg.partition_fields, cfg.extractor) == (
        "default", "trips", ("region",), "SinglePartPartitionValueExtractor")
    assert (o.sync_as_datasource, o.support_timestamp, o.skip_ro_suffix, o.auto_create_database,
            o.create_managed_table, o.batch_num, o.schema_length_threshold) == (True, False, False, True, False, 1000, 4000)
    assert cfg.base_path == "s3://bucket/trips"
    assert sync_options(Options.parse({})) is None  # sync is off unless enabled


def test_hive_style_and_explicit_settings() -> None:
    cfg = _cfg(**{"hoodie.datasource.write.hive_style_partitioning": "true", "hoodie.datasource.hive_sync.table": "t2",
                  "hoodie.datasource.hive_sync.database": "db"})
    assert (cfg.extractor, cfg.table, cfg.database) == ("HiveStylePartitionValueExtractor", "t2", "db")
    cfg = _cfg(**{"hoodie.datasource.hive_sync.partition_extractor_class":
                  "org.apache.hudi.hive.MultiPartKeysValueExtractor"})
    assert cfg.extractor == "MultiPartKeysValueExtractor"


@pytest.mark.parametrize(("key", "value", "match"), [
    ("hoodie.datasource.hive_sync.mode", "jdbc", "HiveServer2"),
    ("hoodie.datasource.hive_sync.mode", "hiveql", "HiveServer2"),
    ("hoodie.meta.sync.client.tool.class", "com.example.MySyncTool", "not a sync tool"),
    ("hoodie.datasource.hive_sync.partition_extractor_class", "com.example.X", "not an extractor"),
    ("hoodie.datasource.hive_sync.bucket_sync", "true", "bucket"),
    ("hoodie.datasource.hive_sync.use_spark_catalog", "true", "JVM"),
    ("hoodie.meta.sync.metadata_file_listing", "true", "metadata table"),
    ("hoodie.datasource.hive_sync.table_properties", "a=b=c", "key-value"),
])
def test_refused_by_name(key: str, value: str, match: str) -> None:
    with pytest.raises(InvalidConfigError, match=match):
        sync_options(Options.parse({**ENABLE, key: value}))


def test_tool_classes_and_hive_sync_enable() -> None:
    opts = sync_options(Options.parse({"hoodie.datasource.meta.sync.enable": "true",
                                       "hoodie.meta.sync.client.tool.class": "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
                                       "hoodie.datasource.hive_sync.enable": "true"}))
    assert opts is not None and opts.backends == ("glue", "hms")


def test_to_map_and_catalog_path() -> None:
    assert to_map("k", "a=1\n\n b = 2 \nc") == {"a": "1", "b": "2", "c": ""}
    assert catalog_path("/tmp/t") == "file:/tmp/t" and catalog_path("file:///tmp/t") == "file:/tmp/t"


def test_cow_table_definition() -> None:
    cfg = _cfg(**{"hoodie.datasource.hive_sync.table_properties": "owner=me",
                  "hoodie.datasource.hive_sync.serde_properties": "x=y"})
    [target] = sync_targets(cfg)
    t = new_table(cfg, target, FIELDS)
    assert (t.database, t.name, t.location, t.table_type) == ("default", "trips", "s3://bucket/trips", "EXTERNAL_TABLE")
    assert t.columns == [Column("_hoodie_commit_time", "string"), Column("id", "string"), Column("v", "double")]
    assert t.partition_keys == [Column("region", "string")]
    assert t.input_format == "org.apache.hudi.hadoop.HoodieParquetInputFormat"
    assert t.output_format == "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
    assert t.serde_library == "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
    assert t.serde_parameters == {"x": "y", "path": "s3://bucket/trips", "hoodie.query.as.ro.table": "false",
                                  "serialization.format": "1"}
    assert t.parameters == {"EXTERNAL": "TRUE", "owner": "me",
                            **spark_table_properties(FIELDS, ("region",), "", 4000)}


def test_mor_tables_per_strategy_and_version() -> None:
    names = lambda cfg: [(t.name, t.realtime, t.read_optimized) for t in sync_targets(cfg)]  # noqa: E731
    assert names(_cfg("MERGE_ON_READ")) == [("trips_ro", False, True), ("trips_rt", True, False)]
    assert names(_cfg("MERGE_ON_READ", **{"hoodie.datasource.hive_sync.skip_ro_suffix": "true"})) == [
        ("trips", False, True), ("trips_rt", True, False)]
    # Hudi 1.x (HUDI-7415): also the snapshot table under the bare name, unless skip_ro_suffix
    assert names(_cfg("MERGE_ON_READ", 8)) == [("trips_ro", False, True), ("trips_rt", True, False),
                                                ("trips", True, False)]
    assert names(_cfg("MERGE_ON_READ", 8, **{"hoodie.datasource.hive_sync.skip_ro_suffix": "true"})) == [
        ("trips", False, True), ("trips_rt", True, False)]
    assert names(_cfg("MERGE_ON_READ", **{"hoodie.datasource.hive_sync.table.strategy": "RO"})) == [
        ("trips", False, True)]
    assert names(_cfg("MERGE_ON_READ", **{"hoodie.datasource.hive_sync.table.strategy": "RT"})) == [
        ("trips", True, False)]


def test_mor_formats_and_serde() -> None:
    cfg = _cfg("MERGE_ON_READ")
    ro, rt = (new_table(cfg, t, FIELDS) for t in sync_targets(cfg))
    assert ro.input_format == "org.apache.hudi.hadoop.HoodieParquetInputFormat"
    assert rt.input_format == "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
    assert ro.serde_parameters["hoodie.query.as.ro.table"] == "true"
    assert rt.serde_parameters["hoodie.query.as.ro.table"] == "false"
    pre = _cfg("MERGE_ON_READ", **{"hoodie.datasource.hive_sync.use_pre_apache_input_format": "true"})
    assert [new_table(pre, t, FIELDS).input_format for t in sync_targets(pre)] == [
        "com.uber.hoodie.hadoop.HoodieInputFormat", "com.uber.hoodie.hadoop.realtime.HoodieRealtimeInputFormat"]


def test_managed_and_not_as_datasource() -> None:
    cfg = _cfg(**{"hoodie.datasource.hive_sync.create_managed_table": "true",
                  "hoodie.datasource.hive_sync.sync_as_datasource": "false"})
    t = new_table(cfg, sync_targets(cfg)[0], FIELDS)
    assert t.table_type == "MANAGED_TABLE" and t.parameters == {}
    assert t.serde_parameters == {"serialization.format": "1"}


def test_update_merges_properties_and_replaces_columns_on_a_schema_change() -> None:
    cfg = _cfg()
    target = sync_targets(cfg)[0]
    old = new_table(cfg, target, parquet_schema({**AVRO, "fields": AVRO["fields"][:3]}))
    old.parameters["someone.else"] = "kept"
    updated, change = updated_table(cfg, target, FIELDS, old)
    assert change.schema.is_empty()  # region is a partition key, not a missing column
    assert updated.parameters["someone.else"] == "kept"
    grown = parquet_schema({**AVRO, "fields": [*AVRO["fields"], {"name": "extra", "type": "int"}]})
    updated, change = updated_table(cfg, target, grown, old)
    assert change.schema.added == ["extra"] and updated.columns[-1] == Column("extra", "int")
    assert change.properties  # the Spark schema parts changed
    same, nothing = updated_table(cfg, target, grown, updated)
    assert not nothing.schema_changed and not nothing.properties_changed and same == updated


def test_sync_point_resets_location_and_path() -> None:
    cfg = _cfg(**{"hoodie.datasource.hive_sync.sync_as_datasource": "false"})
    t = new_table(cfg, sync_targets(cfg)[0], FIELDS)
    t.location = "s3://elsewhere"
    out = with_sync_point(cfg, t, "20240101000000000", "20240101000001000")
    assert out.location == "s3://bucket/trips" and out.serde_parameters["path"] == "s3://bucket/trips"
    assert out.parameters["last_commit_time_sync"] == "20240101000000000"
    assert out.parameters["last_commit_completion_time_sync"] == "20240101000001000"
