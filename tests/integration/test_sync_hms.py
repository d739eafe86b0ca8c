"""pyhudi's Hive Metastore client (pyhudi/sync/hms.py) against a real metastore (Hive 2.3 from PySpark's
jars, started once per session by tests/support/hms_fixtures.py), and a Spark session with Hive support on
that metastore listing what the client registered."""

from __future__ import annotations

import pathlib
import socket
import urllib.parse

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.errors import MetaSyncError
from pyhudi.sync import hms_thrift as ht
from pyhudi.sync.catalog import Column, PartitionDef, TableDef
from pyhudi.sync.hms import HiveMetastoreClient, connect
from pyhudi.sync.hms_thrift import StorageDescriptorF, TableF, TStruct
from tests.support.hive_spark_probe import run_probe

pytest_plugins = ["tests.support.hms_fixtures"]
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

HUDI_INPUT = "org.apache.hudi.hadoop.HoodieParquetInputFormat"
PARQUET_OUTPUT = "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat"
PARQUET_SERDE = "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
SERVER_ADDED = {"transient_lastDdlTime", "numFiles", "totalSize", "COLUMN_STATS_ACCURATE", "numRows", "rawDataSize"}


def table_def(db: str, name: str, base: pathlib.Path, **changes: object) -> TableDef:
    location = f"file:{base / name}"
    table = TableDef(
        database=db, name=name,
        columns=[Column("_hoodie_commit_time", "string"), Column("id", "bigint", "the key"),
                 Column("fare", "double"), Column("tags", "array<string>"),
                 Column("rider", "struct<name:string,age:int>")],
        partition_keys=[Column("region", "string"), Column("dt", "string")],
        location=location, input_format=HUDI_INPUT, output_format=PARQUET_OUTPUT, serde_library=PARQUET_SERDE,
        serde_parameters={"path": location, "serialization.format": "1", "hoodie.query.as.ro.table": "false"},
        parameters={"EXTERNAL": "TRUE", "last_commit_time_sync": "20240101000000000",
                    "spark.sql.sources.provider": "hudi", "spark.sql.sources.schema.numParts": "1"},
        comment="trips, synced")
    for key, value in changes.items():
        setattr(table, key, value)
    return table


def as_stored(table: TableDef) -> TableDef:
    """`table` without the parameters the metastore adds itself."""
    return TableDef(**{**table.__dict__, "parameters": {k: v for k, v in table.parameters.items()
                                                        if k not in SERVER_ADDED}})


def partitions(table: TableDef, keys: list[tuple[str, str]], folder: str = "") -> list[PartitionDef]:
    return [PartitionDef(k, f"{table.location}/{folder}region={k[0]}/dt={k[1]}") for k in keys]


def raw_partitions(client: HiveMetastoreClient, table: TableDef) -> list[TStruct]:
    found, _ = client._call(ht.GET_PARTITIONS, TStruct().put(1, 11, table.database).put(2, 11, table.name)
                            .put(3, 6, -1), "test")
    return list(found.items)


@pytest.fixture
def client(hive_metastore):
    with hive_metastore.client(**{"hoodie.datasource.hive_sync.batch_num": "3"}) as c:
        yield c


@pytest.fixture
def db(client, hms_database):
    client.create_database(hms_database)
    return hms_database


def test_databases(client, hms_database, hive_metastore):
    print(f"metastore {hive_metastore.uri} answered {hive_metastore.startup_s:.1f} s after start")
    assert not client.database_exists(hms_database)
    client.create_database(hms_database)
    client.create_database(hms_database)  # a concurrent sync created it first: no error
    assert client.database_exists(hms_database)
    assert client.database_exists("default")


def test_table_round_trip(client, db, tmp_path):
    assert client.get_table(db, "trips") is None
    assert client.get_table(db + "_missing", "trips") is None
    table = table_def(db, "trips", tmp_path)
    client.create_table(table)
    stored = client.get_table(db, "trips")
    assert as_stored(stored) == table
    assert "transient_lastDdlTime" in stored.parameters

    raw = client._raw_table(db, "trips")
    assert raw.get(TableF.OWNER) and raw.get(TableF.CREATE_TIME) > 0
    assert raw.get(TableF.SD).get(StorageDescriptorF.NUM_BUCKETS) == 0  # Hudi's `new StorageDescriptor()`


def test_external_flag_is_always_sent(client, db, tmp_path):
    """Without EXTERNAL=TRUE the metastore stores a managed table, whose DROP deletes the Hudi table."""
    table = table_def(db, "t", tmp_path)
    table.parameters.pop("EXTERNAL")
    client.create_table(table)
    stored = client.get_table(db, "t")
    assert stored.table_type == "EXTERNAL_TABLE" and stored.parameters["EXTERNAL"] == "TRUE"


def test_update_table_keeps_what_it_does_not_model(client, db, tmp_path):
    table = table_def(db, "trips", tmp_path)
    client.create_table(table)
    # fields pyhudi does not model, set by someone else (Hive DDL, Spark statistics)
    raw = client._raw_table(db, "trips")
    raw.put(TableF.RETENTION, 8, 7)
    raw.get(TableF.SD).put(StorageDescriptorF.PARAMETERS, 13, ht.string_map({"sd.key": "kept"}))
    client._call(ht.ALTER_TABLE, TStruct().put(1, 11, db).put(2, 11, "trips").put(3, 12, raw), "test")

    evolved = table_def(db, "trips", tmp_path, comment="evolved")
    evolved.columns = [*table.columns, Column("tip", "double", "added")]
    evolved.parameters = {**table.parameters, "last_commit_time_sync": "20240202000000000"}
    evolved.parameters.pop("spark.sql.sources.schema.numParts")
    client.update_table(evolved)

    assert as_stored(client.get_table(db, "trips")) == evolved
    after = client._raw_table(db, "trips")
    assert after.get(TableF.RETENTION) == 7
    assert ht.map_to_dict(after.get(TableF.SD).get(StorageDescriptorF.PARAMETERS)) == {"sd.key": "kept"}


def test_partitions_round_trip_in_batches(client, db, tmp_path):
    """batch_num=3: 8 partitions go in three add_partitions_req and three alter_partitions calls."""
    table = table_def(db, "trips", tmp_path)
    client.create_table(table)
    assert client.list_partitions(table) == []
    keys = [(r, f"2024-01-0{d}") for r in ("eu", "us") for d in range(1, 5)]
    added = partitions(table, keys)
    client.add_partitions(table, added)
    client.add_partitions(table, added[:2])  # already there: ifNotExists, as Hudi
    assert sorted(client.list_partitions(table), key=lambda p: p.values) == added

    # a new partition's descriptor is the table's columns, formats and SerDe (HMSDDLExecutor)
    sd = raw_partitions(client, table)[0].get(6)
    serde = sd.get(StorageDescriptorF.SERDE_INFO)
    assert [c.get(1) for c in sd.get(StorageDescriptorF.COLS).items] == [c.name for c in table.columns]
    assert sd.get(StorageDescriptorF.INPUT_FORMAT) == HUDI_INPUT
    assert serde.get(2) == PARQUET_SERDE and ht.map_to_dict(serde.get(3)) == table.serde_parameters

    moved = partitions(table, keys[:5], folder="moved/")
    client.update_partitions(table, moved)
    client.drop_partitions(table, [keys[5], keys[6], ("asia", "2024-01-01")])  # the last one is not there
    expected = sorted(moved + [added[7]], key=lambda p: p.values)
    assert sorted(client.list_partitions(table), key=lambda p: p.values) == expected

    client.drop_table(db, "trips")
    client.drop_table(db, "trips")  # gone already: no error
    assert client.get_table(db, "trips") is None
    assert client.list_partitions(table) == []
    assert (tmp_path / "trips").is_dir()  # the files stay: deleteData=false


def test_metastore_errors_name_the_call_the_object_and_the_message(client, db, tmp_path):
    table = table_def(db, "trips", tmp_path)
    client.create_table(table)
    with pytest.raises(MetaSyncError, match=rf"create_table of table {db}\.trips .*AlreadyExistsException"):
        client.create_table(table)
    with pytest.raises(MetaSyncError, match=r"create_table of table nodb_x\.t .*(InvalidObject|NoSuchObject)"):
        client.create_table(table_def("nodb_x", "t", tmp_path))
    missing = table_def(db, "missing", tmp_path)
    with pytest.raises(MetaSyncError, match=rf"{db}\.missing does not exist .*cannot update it"):
        client.update_table(missing)
    with pytest.raises(MetaSyncError, match=rf"{db}\.missing does not exist .*cannot add partitions"):
        client.add_partitions(missing, partitions(missing, [("eu", "d")]))
    bad = partitions(table, [("eu", "d", "one-too-many")])  # type: ignore[list-item]
    with pytest.raises(MetaSyncError, match=rf"add_partitions_req of partitions \['eu', 'd', 'one-too-many'\] "
                                            rf"of {db}\.trips failed at thrift://.*: \w+Exception: "):
        client.add_partitions(table, bad)


def test_connection_failures_name_the_uri_and_the_key(hive_metastore):
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_uri = f"thrift://127.0.0.1:{dead.getsockname()[1]}"  # bound, never listening: refused
    try:
        with pytest.raises(MetaSyncError, match=rf"{dead_uri} \(hoodie\.datasource\.hive_sync\.metastore\.uris\)"
                                                r" after 1 attempt"):
            connect({"hoodie.datasource.hive_sync.metastore.uris": dead_uri, "hive.metastore.connect.retries": "0"})
        # several URIs: the reachable one is used, whichever order they are tried in
        with connect({"hoodie.datasource.hive_sync.metastore.uris": f"{dead_uri},{hive_metastore.uri}",
                      "hive.metastore.connect.retries": "0"}) as c:
            assert c.uri == hive_metastore.uri and c.database_exists("default")
    finally:
        dead.close()
    with pytest.raises(MetaSyncError, match=r"'http://h:1' is not a metastore URI"):
        connect({"hoodie.datasource.hive_sync.metastore.uris": "http://h:1"})
    with pytest.raises(MetaSyncError, match=r"hive.metastore.sasl.enabled=true .*SASL/Kerberos"):
        connect({"hoodie.datasource.hive_sync.metastore.uris": hive_metastore.uri,
                 "hive.metastore.sasl.enabled": "true"})


def test_a_broken_connection_is_reopened(client):
    client._transport.close()  # the metastore restarted, a load balancer dropped the idle socket, ...
    assert client.database_exists("default")


@pytest.mark.extended  # test_sync_catalogs lists what sync registered through Spark with Hive in the default run
def test_spark_with_hive_lists_the_tables_and_partitions(hive_metastore, client, db, tmp_path):
    table = table_def(db, "trips", tmp_path)
    table.parameters = {"EXTERNAL": "TRUE", "last_commit_time_sync": "20240101000000000"}
    client.create_table(table)
    client.create_table(table_def(db, "trips_rt", tmp_path, partition_keys=[Column("region", "string")],
                                  parameters={"EXTERNAL": "TRUE"}))
    client.add_partitions(table, partitions(table, [("eu", "2024-01-01"), ("us", "2024-01-02")]))

    results = run_probe(hive_metastore.uri, [f"SHOW TABLES IN {db}", f"SHOW PARTITIONS {db}.trips",
                                             f"DESCRIBE TABLE EXTENDED {db}.trips"], tmp_path / "probe")
    assert all("error" not in r for r in results), results
    tables, parts, described = (r["rows"] for r in results)
    assert sorted(row[1] for row in tables) == ["trips", "trips_rt"]
    assert [row[0] for row in parts] == ["region=eu/dt=2024-01-01", "region=us/dt=2024-01-02"]
    info = {row[0]: row[1] for row in described}
    assert info["id"] == "bigint" and info["rider"] == "struct<name:string,age:int>"
    assert info["Type"] == "EXTERNAL" and info["Location"] == table.location
    assert info["InputFormat"] == HUDI_INPUT and info["Serde Library"] == PARQUET_SERDE
    assert "last_commit_time_sync=20240101000000000" in info["Table Properties"]


# ---- pyhudi.write with meta sync on: what the sync tool registers, read from the metastore and by Spark ----

ROWS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])


def _write_opts(hive_metastore, db: str, name: str, table_type: str, hive_style: bool) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.write.hive_style_partitioning": str(hive_style).lower(),
            "hoodie.datasource.meta.sync.enable": "true", "hoodie.datasource.hive_sync.mode": "hms",
            "hoodie.datasource.hive_sync.database": db, **hive_metastore.options()}


def _write_history(path: str, opts: dict[str, str]) -> tuple[str, set[str]]:
    """Two commits: the second updates a row and adds a partition. Returns the last instant and the parts."""
    first = [{"id": i, "name": f"n{i}", "part": f"p{i % 2}", "ts": 1} for i in range(6)]
    second = [{"id": 1, "name": "updated", "part": "p1", "ts": 2}, {"id": 9, "name": "new", "part": "p2", "ts": 2}]
    pyhudi.write(pa.Table.from_pylist(first, schema=ROWS), path, opts)
    instant = pyhudi.write(pa.Table.from_pylist(second, schema=ROWS), path, opts)
    return instant, {"p0", "p1", "p2"}


def test_writes_with_meta_sync_register_cow_and_mor_tables(hive_metastore, client, hms_database, tmp_path):
    pytest.importorskip("pyhudi.sync.tool", reason="the sync tool (pyhudi/sync/tool.py) is not in the tree yet")
    db = hms_database
    expected: dict[str, tuple[str, set[str], str, bool]] = {}  # table -> (base path, parts, instant, hive style)
    for name, table_type, hive_style, names in (("cow", "COPY_ON_WRITE", True, ["cow"]),
                                                ("mor", "MERGE_ON_READ", False, ["mor_ro", "mor_rt"])):
        path = str(tmp_path / name)
        instant, parts = _write_history(path, _write_opts(hive_metastore, db, name, table_type, hive_style))
        for synced in names:
            expected[synced] = (path, parts, instant, hive_style)

    for name, (path, parts, instant, hive_style) in expected.items():
        table = client.get_table(db, name)
        assert table is not None, name
        assert table.parameters["last_commit_time_sync"] == instant
        assert [c.name for c in table.partition_keys] == ["part"]
        assert {"id", "name", "ts", "_hoodie_commit_time"} <= {c.name for c in table.columns}
        assert _path_only(table.location) == path
        folders = {p: f"part={p}" if hive_style else p for p in parts}
        got = {p.values: _path_only(p.location) for p in client.list_partitions(table)}
        assert got == {(p,): f"{path}/{folders[p]}" for p in parts}, name
    assert expected["mor_ro"][0] == expected["mor_rt"][0]
    assert client.get_table(db, "mor_ro").input_format != client.get_table(db, "mor_rt").input_format

    results = run_probe(hive_metastore.uri, [f"SHOW TABLES IN {db}"]
                        + [f"@partitions {db}.{name}" for name in expected]
                        + [f"@table {db}.{name}" for name in expected], tmp_path / "probe")
    assert all("error" not in r for r in results), results
    assert sorted(row[1] for row in results[0]["rows"]) == sorted(expected)
    for name, result in zip(expected, results[1:1 + len(expected)]):
        assert sorted(row[0] for row in result["rows"]) == [f"part={p}" for p in sorted(expected[name][1])]
    for name, result in zip(expected, results[1 + len(expected):]):
        info = dict(result["rows"])
        assert info["tableType"] == "EXTERNAL" and info["partitionColumns"] == "List(part)", (name, info)
        assert _path_only(info["location"].removeprefix("Some(").rstrip(")")) == expected[name][0]


def _path_only(location: str) -> str:
    """A location without scheme and authority (how Hudi compares them: the metastore qualifies paths)."""
    parsed = urllib.parse.urlsplit(location)
    return parsed.path.rstrip("/") if parsed.scheme else location.rstrip("/")
