"""Meta sync into both real catalogs at once, after every step of a randomized workload (issue 30, "How it is
checked"): a moto Glue Data Catalog (tests/support/glue_fixtures.py) and a real Hive Metastore
(tests/support/hms_fixtures.py), written through `hoodie.meta.sync.client.tool.class` naming both of Hudi's
tools. Upserts, deletes of partitions, insert_overwrite_table, an added and a widened column, compaction,
clustering, clean and archival run on COW and MOR; after each step that syncs, each catalog, read through
its own client, must equal the table: the tables Hudi registers, their columns, formats and properties,
and one partition per partition holding rows, at its location. The rows come from a plain-Python model
and are checked against pyhudi and hudi-rs. Finally Spark SQL over the Hive Metastore (a Spark-with-Hive
child session) returns the model's rows through `pyhudi.spark.table`."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import pyhudi
from pyhudi.storage import Storage
from pyhudi.sync.catalog import CatalogClient
from pyhudi.timeline.timeline import ActiveTimeline
from tests.helpers import hudi_rs
from tests.support.hive_spark_probe import run_probe

pytest_plugins = ["tests.support.hms_fixtures", "tests.support.glue_fixtures"]
pytestmark = [pytest.mark.filterwarnings("ignore::DeprecationWarning")]

TOOLS = "org.apache.hudi.hive.HiveSyncTool,org.apache.hudi.aws.sync.AwsGlueCatalogSyncTool"
REGIONS = ["eu", "us", "asia", "africa", "oceania"]
Model = dict[tuple[str, str], dict[str, Any]]  # (record key, partition): the index is not global


def _options(table_type: str, database: str, hms: dict[str, str], glue: dict[str, str]) -> dict[str, str]:
    return {"hoodie.table.name": "trips", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "region",
            "hoodie.datasource.write.precombine.field": "ts", "hoodie.datasource.write.hive_style_partitioning": "true",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.meta.sync.enable": "true",
            "hoodie.meta.sync.client.tool.class": TOOLS, "hoodie.datasource.hive_sync.mode": "hms",
            "hoodie.datasource.hive_sync.database": database, "hoodie.parquet.small.file.limit": "0",
            "hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
            "hoodie.clustering.plan.strategy.small.file.limit": str(64 * 1024 * 1024), **hms, **glue}


def _batch(rng: random.Random, regions: list[str], n: int, step: int, columns: set[str]) -> list[dict[str, Any]]:
    ids = rng.sample(range(80), n)  # unique keys within a batch: no precombine ties
    rows = []
    for i in ids:
        row: dict[str, Any] = {"id": f"k{i}", "region": rng.choice(regions), "ts": step, "qty": rng.randrange(100)}
        if "note" in columns:
            row["note"] = f"n{step}-{i}"
        rows.append(row)
    return rows


def _arrow(rows: list[dict[str, Any]], columns: set[str], wide: bool) -> pa.Table:
    fields = [("id", pa.string()), ("region", pa.string()), ("ts", pa.int64()),
              ("qty", pa.int64() if wide else pa.int32())]
    if "note" in columns:
        fields.append(("note", pa.string()))
    return pa.Table.from_pylist(rows, schema=pa.schema(fields))


def _norm(location: str) -> str:
    """Paths compared as Hudi compares them: without the scheme (the metastore stores `file:/p`)."""
    text = location.rstrip("/")
    for prefix in ("file://", "file:"):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def _names(table_type: str) -> list[str]:
    return ["trips"] if table_type == "COPY_ON_WRITE" else ["trips_ro", "trips_rt"]


def assert_catalog_equals(client: CatalogClient, database: str, path: str, table_type: str, model: Model,
                          columns: list[tuple[str, str]], label: str) -> None:
    want_parts = {(row["region"],): f"{path}/region={row['region']}" for row in model.values()}
    last = ActiveTimeline.load(Storage(path)).commits().completed().last()
    assert last is not None
    for name in _names(table_type):
        table = client.get_table(database, name)
        assert table is not None, (label, name)
        got = {p.values: _norm(p.location) for p in client.list_partitions(table)}
        assert got == want_parts, (label, name)
        assert [(c.name, c.type) for c in table.columns][5:] == columns, (label, name)  # after the meta columns
        assert [c.name for c in table.columns][:5] == ["_hoodie_commit_time", "_hoodie_commit_seqno",
                                                       "_hoodie_record_key", "_hoodie_partition_path",
                                                       "_hoodie_file_name"], (label, name)
        assert [(c.name, c.type) for c in table.partition_keys] == [("region", "string")], (label, name)
        assert _norm(table.location) == path and _norm(table.serde_parameters["path"]) == path, (label, name)
        assert table.parameters["last_commit_time_sync"] == last.timestamp, (label, name)
        assert table.parameters["spark.sql.sources.provider"] == "hudi", (label, name)
        assert table.parameters["EXTERNAL"].upper() == "TRUE" and table.table_type == "EXTERNAL_TABLE", (label, name)
        realtime = name.endswith("_rt")
        assert table.input_format == ("org.apache.hudi.hadoop.realtime.HoodieParquetRealtimeInputFormat" if realtime
                                      else "org.apache.hudi.hadoop.HoodieParquetInputFormat"), (label, name)
        assert table.serde_library == "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe", (label, name)


def _check_rows(path: str, model: Model, data_columns: list[str]) -> None:
    want = sorted((r["id"], r["region"], r["ts"], r["qty"], r.get("note")) for r in model.values())
    for label, table in (("pyhudi", pyhudi.read(path)), ("hudi-rs", hudi_rs(path))):
        assert table is not None, label
        rows = table.select(data_columns).to_pylist()
        got = sorted((r["id"], r["region"], r["ts"], r["qty"], r.get("note")) for r in rows)
        assert got == want, label


# COW under -m extended: test_sync_inprocess.py runs COW workloads against every sync rule in the default run.
@pytest.mark.parametrize(("table_type", "seed"), [pytest.param("COPY_ON_WRITE", 4, marks=pytest.mark.extended),
                                                  ("MERGE_ON_READ", 9)])
def test_randomized_workload_keeps_glue_and_the_metastore_equal_to_the_table(
        table_type: str, seed: int, tmp_path: Path, hive_metastore: Any, hms_database: str, glue: Any) -> None:
    from pyhudi.sync import glue as glue_sync
    from pyhudi.sync import hms as hms_sync

    rng = random.Random(seed)
    path = str(tmp_path / "trips")
    database = hms_database
    opts = _options(table_type, database, hive_metastore.options(), glue.options)
    clients = {"hms": hms_sync.connect(hive_metastore.options()), "glue": glue_sync.connect(glue.options)}
    model: Model = {}
    columns: set[str] = set()
    wide = False
    synced = False
    ops: list[str] = []
    # Three upserts, then every other kind of step at least once, in a seeded order, among more upserts.
    later = ["delete_partition", "delete_partition", "insert_overwrite_table", "service", "service", "clean",
             "clean", *["upsert"] * 4]
    rng.shuffle(later)
    for step, kind in enumerate(["upsert"] * 3 + later, start=1):
        present = sorted({r["region"] for r in model.values()})
        if kind == "delete_partition" and len(present) < 2:
            kind = "upsert"
        writes = kind in ("upsert", "insert_overwrite_table")
        if step >= 6 and writes:  # a step below that writes rows (delete_partition carries no schema)
            columns.add("note")  # schema evolution: an added column, on the first write from step 6
        if step >= 10 and writes:
            wide = True  # a widened type: int -> bigint
        if kind == "delete_partition":
            gone = rng.choice(present)
            pyhudi.write(_arrow([], columns, wide), path, {**opts, "hoodie.datasource.write.operation": "delete_partition",
                                                          "hoodie.datasource.write.partitions.to.delete":
                                                          f"region={gone}"})
            model = {k: r for k, r in model.items() if r["region"] != gone}
            synced = True
            ops.append("delete_partition")
        elif kind == "insert_overwrite_table":
            rows = _batch(rng, rng.sample(REGIONS, 2), 12, step, columns)
            pyhudi.write(_arrow(rows, columns, wide), path,
                         {**opts, "hoodie.datasource.write.operation": "insert_overwrite_table"})
            model = {(r["id"], r["region"]): r for r in rows}
            synced = True
            ops.append("insert_overwrite_table")
        elif kind == "service":
            service = pyhudi.compact if table_type == "MERGE_ON_READ" else pyhudi.cluster
            service(None, path, opts)  # no sync after compaction or clustering, as Hudi
            synced = False
            ops.append("service")
        elif kind == "clean":
            pyhudi.clean(None, path, opts)  # syncs (a clean can delete a partition)
            synced = True
            ops.append("clean")
        else:
            rows = _batch(rng, rng.sample(REGIONS, 3), 15, step, columns)
            pyhudi.write(_arrow(rows, columns, wide), path, opts)
            model.update({(r["id"], r["region"]): r for r in rows})
            synced = True
        for row in model.values():
            if "note" in columns:
                row.setdefault("note", None)
        _check_rows(path, model, ["id", "region", "ts", "qty", *sorted(columns)])
        if synced:
            want_columns = [("id", "string"), ("ts", "bigint"), ("qty", "bigint" if wide else "int")]
            want_columns += [("note", "string")] if "note" in columns else []
            for label, client in clients.items():
                assert_catalog_equals(client, database, path, table_type, model, want_columns, f"{label} step {step}")
    assert set(ops) == {"delete_partition", "insert_overwrite_table", "service", "clean"}, ops  # the seed covers all
    assert wide and columns == {"note"}
    for client in clients.values():
        client.close()
    if table_type == "MERGE_ON_READ":
        _sql_equals_model(hive_metastore, database, path, model, tmp_path)


def _sql_equals_model(hive_metastore: Any, database: str, path: str, model: Model, tmp_path: Path) -> None:
    """Spark SQL through the metastore: the synced tables and partitions are listed, and the rows read
    through the catalog (`pyhudi.spark.table`, the documented way; see README) equal the model."""
    pytest.importorskip("pyspark")
    statements = [f"SHOW TABLES IN {database}", f"@partitions {database}.trips_rt",
                  f"@pyhudi-table SELECT id, region, ts, qty FROM {database}.trips_rt"]
    results = run_probe(hive_metastore.uri, statements, tmp_path / "probe", register_pyhudi=True)
    assert sorted(r[1] for r in results[0]["rows"]) == ["trips_ro", "trips_rt"], results[0]
    parts = sorted(str(r[0]) for r in results[1]["rows"])
    assert parts == sorted({f"region={r['region']}" for r in model.values()}), results[1]
    got = sorted(tuple(r) for r in results[2]["rows"])
    assert got == sorted((r["id"], r["region"], r["ts"], r["qty"]) for r in model.values()), results[2]


@pytest.mark.spark
def test_spark_engine_writes_sync_both_catalogs(spark: Any, tmp_path: Path, hive_metastore: Any, hms_database: str,
                                                glue: Any) -> None:
    """The same hook on the Spark engine: a DataFrame written by pyhudi.write (executors write, the driver
    commits) is registered in both catalogs, with Spark's version recorded as Hudi's Spark writer does."""
    from pyhudi.sync import glue as glue_sync
    from pyhudi.sync import hms as hms_sync

    path = str(tmp_path / "trips")
    opts = _options("MERGE_ON_READ", hms_database, hive_metastore.options(), glue.options)
    rows = _batch(random.Random(3), REGIONS[:3], 20, 1, set())
    model: Model = {(r["id"], r["region"]): r for r in rows}
    pyhudi.write(spark.createDataFrame(rows, "id string, region string, ts long, qty int"), path, opts)
    _check_rows(path, model, ["id", "region", "ts", "qty"])
    for label, client in (("hms", hms_sync.connect(hive_metastore.options())), ("glue", glue_sync.connect(glue.options))):
        assert_catalog_equals(client, hms_database, path, "MERGE_ON_READ", model,
                              [("id", "string"), ("ts", "bigint"), ("qty", "int")], label)
        table = client.get_table(hms_database, "trips_rt")
        assert table is not None and table.parameters.get("spark.sql.create.version") == spark.version, label
        client.close()


def test_two_writers_syncing_at_once_leave_both_catalogs_equal_to_the_table(
        tmp_path: Path, hive_metastore: Any, hms_database: str, glue: Any) -> None:
    """Two writers (optimistic concurrency, disjoint partitions, one deleting a partition), each syncing to
    the real metastore and Glue after every commit, their syncs interleaving: afterwards each catalog equals
    the table."""
    import threading

    from pyhudi.sync import glue as glue_sync
    from pyhudi.sync import hms as hms_sync

    path = str(tmp_path / "trips")
    opts = {**_options("COPY_ON_WRITE", hms_database, hive_metastore.options(), glue.options),
            "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
            "hoodie.write.lock.provider": "org.apache.hudi.client.transaction.lock.InProcessLockProvider"}
    errors: list[BaseException] = []

    def writer(regions: list[str], seed: int) -> None:
        rng = random.Random(seed)
        try:
            for step in range(1, 5):
                if step == 3:
                    pyhudi.write(_arrow([], set(), False), path, {
                        **opts, "hoodie.datasource.write.operation": "delete_partition",
                        "hoodie.datasource.write.partitions.to.delete": f"region={regions[0]}"})
                else:
                    pyhudi.write(_arrow(_batch(rng, regions, 8, step, set()), set(), False), path, opts)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    pyhudi.write(_arrow(_batch(random.Random(1), ["eu"], 8, 0, set()), set(), False), path, opts)
    threads = [threading.Thread(target=writer, args=(regions, i)) for i, regions in
               enumerate((["us", "asia"], ["africa", "oceania"]), start=2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    rows = pyhudi.read(path).to_pylist()
    model: Model = {(r["id"], r["region"]): r for r in rows}
    assert "eu" in {r["region"] for r in rows} and len(model) == len(rows)
    for label, client in (("hms", hms_sync.connect(hive_metastore.options())), ("glue", glue_sync.connect(glue.options))):
        assert_catalog_equals(client, hms_database, path, "COPY_ON_WRITE", model,
                              [("id", "string"), ("ts", "bigint"), ("qty", "int")], label)
        client.close()
