"""The Glue backend of meta sync (pyhudi.sync.glue) against moto's Glue in server mode, through boto3.

Every CatalogClient call is round-tripped and read back with boto3's own Glue client, field by field; the
server (tests/support/glue_server.py) enforces Glue's batch limits and GetPartitions paging, which moto
alone does not, and records each request so that what moto ignores (SkipArchive, CatalogId, batch sizes)
is checked on the wire. No Spark.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from pyhudi.errors import InvalidConfigError, MetaSyncError
from pyhudi.sync import glue as glue_sync
from pyhudi.sync.catalog import Column, PartitionDef, TableDef
from pyhudi.sync.glue_config import GlueSyncConfig, parse_resource_tags, s3a_to_s3
from tests.support.glue_server import ACCESS_KEY, ACCOUNT, REGION, SECRET_KEY

if TYPE_CHECKING:
    from tests.support.glue_fixtures import GlueCatalog

pytest_plugins = ["tests.support.glue_fixtures"]

PARQUET_IN = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
PARQUET_OUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
BASE = "s3a://bucket/warehouse/trips"


def _table(database: str, name: str = "trips", **changes: Any) -> TableDef:
    table = TableDef(
        database=database, name=name,
        columns=[Column("_hoodie_commit_time", "string"), Column("id", "bigint", "the key"),
                 Column("fare", "double"), Column("rider", "struct<name:string,age:int>")],
        partition_keys=[Column("region", "string"), Column("day", "string")],
        location=BASE, input_format=PARQUET_IN, output_format=PARQUET_OUT, serde_library=PARQUET_SERDE,
        serde_parameters={"path": BASE, "hoodie.query.as.ro.table": "false"},
        parameters={"EXTERNAL": "TRUE", "spark.sql.sources.provider": "hudi", "last_commit_time_sync": "001"})
    return replace(table, **changes)


def _parts(n: int, base: str = BASE) -> list[PartitionDef]:
    return [PartitionDef((f"r{i % 7}", f"d{i:04d}"), f"{base}/region=r{i % 7}/day=d{i:04d}") for i in range(n)]


def _sizes(glue: GlueCatalog, operation: str, key: str) -> list[int]:
    return [len(body[key]) for body in glue.server.requests(operation)]


def _client(glue: GlueCatalog, **extra: str) -> Any:
    return glue_sync.connect({**glue.options, **extra})


# ---- options ---------------------------------------------------------------------------------------------


def test_options_parse_with_hudi_defaults() -> None:
    config = GlueSyncConfig.from_options({})
    assert (config.skip_table_archive, config.metadata_file_listing, config.catalog_id) == (True, False, None)
    assert (config.partition_change_parallelism, config.all_partitions_read_parallelism,
            config.changed_partitions_read_parallelism, config.recreate_table_on_error) == (1, 1, 1, False)
    assert (config.role_session_name, config.region, config.endpoint, config.resource_tags) == ("hoodie", None, None, {})
    p = "hoodie.datasource.meta.sync.glue."
    config = GlueSyncConfig.from_options({
        p + "skip_table_archive": "false", p + "metadata_file_listing": "TRUE", p + "catalogId": "999",
        p + "partition_change_parallelism": "4", p + "all_partitions_read_parallelism": "10",
        p + "partition_index_fields": "region;day", p + "partition_index_fields.enable": "false",
        p + "resource_tags": "team:data, env : test,bad", p + "database_name": "db",
        "hoodie.datasource.hive_sync.database": "db", p + "recreate_table_on_error": "false", "hoodie.aws.glue.region": "eu-west-1",
        "hoodie.aws.glue.endpoint": "http://x", "hoodie.aws.role.arn": "arn:r", "hoodie.aws.role.session.name": "s"})
    assert (config.skip_table_archive, config.metadata_listing_flag, config.catalog_id) == (False, "TRUE", "999")
    assert (config.partition_change_parallelism, config.all_partitions_read_parallelism) == (4, 10)
    assert config.resource_tags == {"team": "data", "env": "test"} and config.database_name == "db"
    assert (config.region, config.endpoint, config.role_arn, config.role_session_name) == (
        "eu-west-1", "http://x", "arn:r", "s")
    assert parse_resource_tags("a:b:c") == {"a": "b:c"}
    assert s3a_to_s3("S3A://b/t") == "s3://b/t" and s3a_to_s3("s3://b/t") == "s3://b/t"


@pytest.mark.parametrize("options, text", [
    ({"hoodie.datasource.meta.sync.glue.partition_index_fields.enable": "true"}, "partition_index_fields.enable"),
    ({"hoodie.datasource.meta.sync.glue.skip_table_archve": "true"}, "skip_table_archve"),
    ({"hoodie.datasource.meta.sync.glue.skip_table_archive": "yes"}, "true or false"),
    ({"hoodie.datasource.meta.sync.glue.all_partitions_read_parallelism": "11"}, "in [1, 10]"),
    ({"hoodie.datasource.meta.sync.glue.partition_change_parallelism": "0"}, ">= 1"),
    ({"hoodie.datasource.meta.sync.glue.recreate_table_on_error": "true"}, "recreate_table_on_error"),
    ({"hoodie.datasource.meta.sync.glue.database_name": "a", "hoodie.datasource.hive_sync.database": "b"},
     "hive_sync.database"),
    ({"hoodie.datasource.meta.sync.glue.table_name": "t"}, "hive_sync.table"),
])
def test_options_refused_by_name(options: dict[str, str], text: str) -> None:
    with pytest.raises(InvalidConfigError, match=text.replace("[", r"\[").replace("]", r"\]")):
        GlueSyncConfig.from_options(options)


def test_missing_boto3_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(MetaSyncError, match=r"pip install 'pyhudi\[glue\]'"):
        glue_sync.connect({})


# ---- databases and tables ----------------------------------------------------------------------------------


def test_database_created_once_with_hudis_description(glue: GlueCatalog) -> None:
    client = _client(glue)
    assert not client.database_exists(glue.database)
    client.create_database(glue.database)
    client.create_database(glue.database)  # exists: nothing sent
    assert client.database_exists(glue.database)
    db = glue.raw.get_database(Name=glue.database)["Database"]
    assert db["Description"] == "Automatically created by org.apache.hudi.aws.sync.AWSGlueCatalogSyncClient"
    assert len(glue.server.requests("CreateDatabase")) == 1


def test_table_round_trip_field_by_field(glue: GlueCatalog) -> None:
    client = _client(glue)
    client.create_database(glue.database)
    table = _table(glue.database)
    assert client.get_table(glue.database, "trips") is None
    client.create_table(table)
    got = client.get_table(glue.database, "trips")
    assert got is not None
    assert got.columns == table.columns and got.partition_keys == table.partition_keys
    assert got.location == "s3://bucket/warehouse/trips"  # s3aToS3
    assert (got.input_format, got.output_format, got.serde_library) == (PARQUET_IN, PARQUET_OUT, PARQUET_SERDE)
    assert got.serde_parameters == {**table.serde_parameters, "serialization.format": "1"}
    assert got.parameters == {**table.parameters, "hudi.metadata-listing-enabled": "FALSE"}
    assert (got.table_type, got.comment) == ("EXTERNAL_TABLE", None)
    raw = glue.raw.get_table(DatabaseName=glue.database, Name="trips")["Table"]
    assert raw["TableType"] == "EXTERNAL_TABLE"
    assert raw["StorageDescriptor"]["Columns"][0] == {"Name": "_hoodie_commit_time", "Type": "string", "Comment": ""}
    assert raw["PartitionKeys"][1] == {"Name": "day", "Type": "string", "Comment": ""}
    assert "LastAccessTime" in raw and "LastAnalyzedTime" in raw
    client.create_table(table)  # already there (another writer): left alone, as Hudi
    assert len(glue.server.requests("CreateTable")) == 2


def test_missing_table_and_database_read_as_none(glue: GlueCatalog) -> None:
    client = _client(glue)
    assert client.get_table("no_such_db", "t") is None
    client.create_database(glue.database)
    assert client.get_table(glue.database, "nope") is None
    assert client.list_partitions(_table(glue.database, "nope")) == []
    client.drop_table(glue.database, "nope")  # already gone: fine


def test_update_table_schema_and_properties(glue: GlueCatalog) -> None:
    client = _client(glue)
    client.create_database(glue.database)
    table = _table(glue.database)
    client.create_table(table)
    client.add_partitions(table, _parts(3))
    updated = _table(glue.database, columns=[*table.columns[:2], Column("fare", "decimal(10,2)"),
                                             table.columns[3], Column("tip", "float")],
                     parameters={**table.parameters, "last_commit_time_sync": "002"}, comment="trips table")
    client.update_table(updated)
    got = client.get_table(glue.database, "trips")
    assert got is not None
    assert got.columns == updated.columns and got.comment == "trips table"
    assert got.parameters == {**updated.parameters, "hudi.metadata-listing-enabled": "FALSE"}
    assert got.serde_parameters == {**table.serde_parameters, "serialization.format": "1"}  # kept from Glue's
    assert [b["SkipArchive"] for b in glue.server.requests("UpdateTable")] == [True]
    client.update_table(updated)  # Glue already holds it: no UpdateTable (no table version)
    assert len(glue.server.requests("UpdateTable")) == 1
    part = glue.raw.get_partition(DatabaseName=glue.database, TableName="trips", PartitionValues=["r0", "d0000"])
    assert len(part["Partition"]["StorageDescriptor"]["Columns"]) == 4  # cascade off: partitions keep theirs
    archived = _client(glue, **{"hoodie.datasource.meta.sync.glue.skip_table_archive": "false"})
    archived.update_table(replace(updated, parameters={**updated.parameters, "last_commit_time_sync": "003"}))
    assert [b["SkipArchive"] for b in glue.server.requests("UpdateTable")] == [True, False]


def test_metadata_file_listing_and_drop_table(glue: GlueCatalog) -> None:
    client = _client(glue, **{"hoodie.datasource.meta.sync.glue.metadata_file_listing": "true"})
    client.create_database(glue.database)
    client.create_table(_table(glue.database))
    got = client.get_table(glue.database, "trips")
    assert got is not None and got.parameters["hudi.metadata-listing-enabled"] == "TRUE"
    client.drop_table(glue.database, "trips")
    assert client.get_table(glue.database, "trips") is None


# ---- partitions -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("parallelism", ["1", "4"])
def test_partitions_in_batches_over_glues_limits(glue: GlueCatalog, parallelism: str) -> None:
    client = _client(glue, **{"hoodie.datasource.meta.sync.glue.partition_change_parallelism": parallelism})
    client.create_database(glue.database)
    table = _table(glue.database)
    client.create_table(table)
    glue.server.set_page_size(40)
    parts = _parts(250)
    client.add_partitions(table, parts)
    assert sorted(_sizes(glue, "BatchCreatePartition", "PartitionInputList")) == [50, 100, 100]
    expected = {p.values: s3a_to_s3(p.location) for p in parts}
    listed = client.list_partitions(table)
    assert {p.values: p.location for p in listed} == expected and len(listed) == 250
    assert len(glue.server.requests("GetPartitions")) == 7  # 250 in pages of 40
    assert all(b["ExcludeColumnSchema"] is True for b in glue.server.requests("GetPartitions"))
    table_sd = glue.raw.get_table(DatabaseName=glue.database, Name="trips")["Table"]["StorageDescriptor"]
    part_sd = glue.raw.get_partition(DatabaseName=glue.database, TableName="trips",
                                     PartitionValues=["r3", "d0010"])["Partition"]["StorageDescriptor"]
    assert part_sd == {**table_sd, "Location": "s3://bucket/warehouse/trips/region=r3/day=d0010"}

    moved = _parts(250, base="s3://bucket/moved")
    client.update_partitions(table, moved)
    assert sorted(_sizes(glue, "BatchUpdatePartition", "Entries")) == [50, 100, 100]
    assert {p.values: p.location for p in client.list_partitions(table)} == {p.values: p.location for p in moved}

    client.drop_partitions(table, [p.values for p in parts[:240]])
    deletes = _sizes(glue, "BatchDeletePartition", "PartitionsToDelete")
    assert sorted(deletes) == [15] + [25] * 9  # batches run `parallelism` at a time: any order then
    if parallelism == "1":
        assert deletes == [25] * 9 + [15]
    assert {p.values for p in client.list_partitions(table)} == {p.values for p in parts[240:]}


def test_batch_errors(glue: GlueCatalog) -> None:
    client = _client(glue)
    client.create_database(glue.database)
    table = _table(glue.database)
    client.create_table(table)
    client.add_partitions(table, _parts(5))
    client.add_partitions(table, _parts(8))  # five exist already: skipped as Hudi does, three added
    assert len(client.list_partitions(table)) == 8
    client.drop_partitions(table, [("r0", "d0000"), ("zz", "gone")])  # a partition already gone: fine
    with pytest.raises(MetaSyncError) as error:
        client.update_partitions(table, [PartitionDef(("zz", "gone"), "s3://b/x"), *_parts(3)[1:]])
    text = str(error.value)
    assert "BatchUpdatePartition" in text and f"{glue.database}.trips" in text and "EntityNotFoundException" in text
    assert "['zz', 'gone']" in text
    with pytest.raises(MetaSyncError, match=r"BatchCreatePartition on .*nope: the table does not exist"):
        client.add_partitions(_table(glue.database, "nope"), _parts(1))


def test_client_errors_name_call_table_and_code(glue: GlueCatalog) -> None:
    client = _client(glue)
    with pytest.raises(MetaSyncError, match=r"Glue CreateTable failed for no_db\.trips: EntityNotFoundException"):
        client.create_table(_table("no_db"))
    client.create_database(glue.database)
    glue.server.fail("GetTable", "AccessDeniedException", status=403)
    with pytest.raises(MetaSyncError, match=rf"Glue GetTable failed for {glue.database}\.t: AccessDeniedException"):
        client.get_table(glue.database, "t")
    glue.server.fail("GetPartitions", "InternalServiceException", times=9, status=500)
    with pytest.raises(MetaSyncError, match=r"GetPartitions failed for .*\.trips: InternalServiceException"):
        client.list_partitions(_table(glue.database))


def test_throttling_is_retried(glue: GlueCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    client = _client(glue)
    client.create_database(glue.database)
    glue.server.fail("GetTable", "ThrottlingException", times=2)
    assert client.get_table(glue.database, "t") is None  # third attempt answers: not found
    assert len(glue.server.requests("GetTable")) == 3
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "2")  # the user's retry setting wins over pyhudi's default
    glue.server.fail("GetTable", "ThrottlingException", times=5)
    with pytest.raises(MetaSyncError, match="GetTable failed .*ThrottlingException"):
        _client(glue).get_table(glue.database, "t")
    assert len(glue.server.requests("GetTable")) == 5


# ---- catalog id, tags, credentials ------------------------------------------------------------------------


def test_catalog_id_is_sent_on_every_call(glue: GlueCatalog) -> None:
    client = _client(glue, **{"hoodie.datasource.meta.sync.glue.catalogId": ACCOUNT})
    client.create_database(glue.database)
    table = _table(glue.database)
    client.create_table(table)
    client.add_partitions(table, _parts(2))
    client.list_partitions(table)
    for operation in ("GetDatabase", "CreateDatabase", "CreateTable", "GetTable", "BatchCreatePartition",
                      "GetPartitions"):
        assert {b.get("CatalogId") for b in glue.server.requests(operation)} == {ACCOUNT}, operation


def test_resource_tags_on_created_database(glue: GlueCatalog) -> None:
    options = {"hoodie.datasource.meta.sync.glue.resource_tags": "team:data,env:test",
               "hoodie.aws.sts.endpoint": glue.endpoint}
    _client(glue, **options).create_database(glue.database)
    arn = f"arn:aws:glue:{REGION}:{ACCOUNT}:database/{glue.database}"
    assert glue.raw.get_tags(ResourceArn=arn)["Tags"] == {"team": "data", "env": "test"}
    assert len(glue.server.requests("GetCallerIdentity")) == 1  # the account of the ARN, as Hudi asks STS


def test_assumed_role_credentials(glue: GlueCatalog) -> None:
    options = {"hoodie.aws.role.arn": f"arn:aws:iam::{ACCOUNT}:role/hudi-sync",
               "hoodie.aws.role.external.id": "ext-1", "hoodie.aws.sts.endpoint": glue.endpoint}
    client = _client(glue, **options)
    client.create_database(glue.database)
    assert glue.raw.get_database(Name=glue.database)["Database"]["Name"] == glue.database
    assert len(glue.server.requests("AssumeRole")) == 1


def test_default_chain_from_the_environment(glue: GlueCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MetaSyncError, match="hoodie.aws.glue.region"):
        glue_sync.connect({})
    for var, value in {"AWS_ENDPOINT_URL_GLUE": glue.endpoint, "AWS_REGION": REGION,
                       "AWS_ACCESS_KEY_ID": ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": SECRET_KEY}.items():
        monkeypatch.setenv(var, value)
    client = glue_sync.connect({})
    client.create_database(glue.database)
    assert client.database_exists(glue.database)


# ---- end to end: a write's meta sync through AwsGlueCatalogSyncTool ------------------------------------------


def _tool_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("pyhudi.sync.tool") is not None


@pytest.mark.skipif(not _tool_available(), reason="the sync tool (pyhudi/sync/tool.py) is not in the tree yet")
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_write_syncs_to_glue(glue: GlueCatalog, tmp_path: Any, table_type: str) -> None:
    """pyhudi.write with Hudi's sync options registers the table (and _ro/_rt for MOR) and one partition per
    partition path in Glue, equal to the table; a second write adds its new partition, a delete_partition
    drops one."""
    import pyarrow as pa

    import pyhudi

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])
    path = str(tmp_path / "trips")
    options = {
        **glue.options, "hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "upsert",
        "hoodie.datasource.write.hive_style_partitioning": "true",
        "hoodie.datasource.meta.sync.enable": "true",
        "hoodie.meta.sync.client.tool.class": "org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool",
        "hoodie.datasource.hive_sync.database": glue.database,
    }

    def rows(*items: tuple[int, str, str, int]) -> Any:
        return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in items], schema=schema)

    pyhudi.write(rows((1, "a", "p1", 1), (2, "b", "p2", 1)), path, options)
    pyhudi.write(rows((3, "c", "p3", 2), (1, "a2", "p1", 2)), path, options)

    delete = {**options, "hoodie.datasource.write.operation": "delete_partition",
              "hoodie.datasource.write.partitions.to.delete": "part=p2"}
    last = pyhudi.write(rows((9, "x", "p2", 3)), path, delete)

    realtime = "org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat"
    formats = {"trips": PARQUET_IN} if table_type == "COPY_ON_WRITE" else {
        "trips_ro": PARQUET_IN, "trips_rt": realtime}
    listed = sorted(t["Name"] for t in glue.raw.get_tables(DatabaseName=glue.database)["TableList"])
    assert listed == sorted(formats)
    meta = ["_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_record_key", "_hoodie_partition_path",
            "_hoodie_file_name"]
    for name, input_format in formats.items():
        table = glue.raw.get_table(DatabaseName=glue.database, Name=name)["Table"]
        storage = table["StorageDescriptor"]
        assert table["TableType"] == "EXTERNAL_TABLE"
        assert table["PartitionKeys"] == [{"Name": "part", "Type": "string", "Comment": ""}]
        assert [(c["Name"], c["Type"]) for c in storage["Columns"]] == [
            *[(m, "string") for m in meta], ("id", "bigint"), ("name", "string"), ("ts", "bigint")]
        assert (storage["InputFormat"], storage["OutputFormat"], storage["SerdeInfo"]["SerializationLibrary"]) == (
            input_format, PARQUET_OUT, PARQUET_SERDE)
        assert storage["Location"] == storage["SerdeInfo"]["Parameters"]["path"]
        assert storage["Location"].rstrip("/").endswith("/trips")
        assert table["Parameters"]["hudi.metadata-listing-enabled"] == "FALSE"
        assert table["Parameters"]["EXTERNAL"] == "TRUE"
        assert table["Parameters"]["last_commit_time_sync"] == last
        parts = glue.raw.get_partitions(DatabaseName=glue.database, TableName=name)["Partitions"]
        located = {tuple(p["Values"]): p["StorageDescriptor"]["Location"] for p in parts}
        assert sorted(located) == [("p1",), ("p3",)]  # p2 dropped by the delete_partition's sync
        for (value,), location in located.items():
            assert location.rstrip("/").endswith(f"/trips/part={value}")
        for p in parts:  # each partition carries the table's descriptor with its own location
            assert {**p["StorageDescriptor"], "Location": ""} == {**storage, "Location": ""}
