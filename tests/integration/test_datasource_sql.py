"""SQL over catalog tables (issue 30, item 4): tables that meta sync registered in a real Hive Metastore
(tests/support/hms_fixtures.py), read from a Spark session with Hive support (a child process: the shared
session has none).

Finding: Spark resolves the synced table's provider (`spark.sql.sources.provider=hudi`) to the registered
`hudi` Python data source, but hands the source no options at all (no location, no `path` serde property),
so `SELECT ... FROM db.t` cannot read it; the source says so and names the workaround,
`pyhudi.spark.table(spark, "db.t")` (location from the catalog), whose rows, also through a temp view in SQL,
equal `pyhudi.read` for COW tables and MOR `_rt` (snapshot) and `_ro` (read-optimized) tables."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pyhudi
import pyhudi.spark
from tests.helpers import same_rows

pytest_plugins = ["tests.support.hms_fixtures"]
pytestmark = [pytest.mark.spark, pytest.mark.filterwarnings("ignore::DeprecationWarning")]
ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ["id", "name", "part", "ts"]
ROWS = pa.schema([("id", pa.int64()), ("name", pa.string()), ("part", pa.string()), ("ts", pa.int64())])

CHILD = r"""
import json, sys
import pyarrow.parquet as pq
from tests.support.hive_spark_probe import _session
import pyhudi.spark

uri, warehouse, out, db = sys.argv[1:5]
spark = _session(uri, warehouse)
spark.sparkContext.setLogLevel("ERROR")
pyhudi.spark.register(spark)
result = {}
try:
    spark.sql(f"SELECT * FROM {db}.cow").collect()
    result["sql_error"] = None
except Exception as exc:
    result["sql_error"] = str(exc)
for name in ("cow", "mor_rt", "mor_ro", "bulk"):
    pq.write_table(pyhudi.spark.table(spark, f"{db}.{name}").toArrow(), f"{out}/{name}.parquet")
pyhudi.spark.table(spark, f"{db}.cow").createOrReplaceTempView("cow_view")
rows = spark.sql("SELECT id, name FROM cow_view WHERE part = 'p1' ORDER BY id").collect()
result["view"] = [[r["id"], r["name"]] for r in rows]
spark.stop()
print("CHILD_RESULT " + json.dumps(result), flush=True)
"""


def _sync_opts(hive_metastore, db: str, name: str, table_type: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type, "hoodie.datasource.write.operation": "upsert",
            "hoodie.datasource.meta.sync.enable": "true", "hoodie.datasource.hive_sync.mode": "hms",
            "hoodie.datasource.hive_sync.database": db, **hive_metastore.options()}


def _write(path: str, hive_metastore, db: str, name: str, table_type: str) -> None:
    opts = _sync_opts(hive_metastore, db, name, table_type)
    first = [{"id": i, "name": f"n{i}", "part": f"p{i % 2}", "ts": 1} for i in range(8)]
    second = [{"id": 1, "name": "updated", "part": "p1", "ts": 2}, {"id": 9, "name": "new", "part": "p2", "ts": 2}]
    pyhudi.write(pa.Table.from_pylist(first, schema=ROWS), path, opts)
    pyhudi.write(pa.Table.from_pylist(second, schema=ROWS), path, opts)


def _child(hive_metastore, db: str, workdir: pathlib.Path) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CHILD, hive_metastore.uri, str(workdir / "warehouse"),
                           str(workdir), db], capture_output=True, text=True, timeout=400, env=env, cwd=str(workdir))
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("CHILD_RESULT "):
            return json.loads(line[len("CHILD_RESULT "):])
    raise AssertionError(f"child failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")


def test_sql_over_synced_tables(spark, hive_metastore, hms_database, tmp_path):
    db = hms_database
    cow, mor, bulk = str(tmp_path / "cow"), str(tmp_path / "mor"), str(tmp_path / "bulk")
    _write(cow, hive_metastore, db, "cow", "COPY_ON_WRITE")
    _write(mor, hive_metastore, db, "mor", "MERGE_ON_READ")
    # a bulk_insert through the data source syncs too (after its commit, as pyhudi.write does)
    pyhudi.spark.register(spark)
    rows = spark.createDataFrame(pa.Table.from_pylist(
        [{"id": i, "name": f"b{i}", "part": f"p{i % 3}", "ts": 1} for i in range(12)], schema=ROWS).to_pandas())
    (rows.repartition(2).write.format("hudi").mode("append")
     .options(**{**_sync_opts(hive_metastore, db, "bulk", "COPY_ON_WRITE"),
                 "hoodie.datasource.write.operation": "bulk_insert"}).save(bulk))
    result = _child(hive_metastore, db, tmp_path / "child")
    # Spark hands the source a catalog table without its location: refused, naming the workaround.
    assert result["sql_error"] and "pyhudi.spark.table" in result["sql_error"]
    expected = {"cow": pyhudi.read(cow), "mor_rt": pyhudi.read(mor), "bulk": pyhudi.read(bulk),
                "mor_ro": pyhudi.read(mor, {"hoodie.datasource.query.type": "read_optimized"})}
    assert expected["mor_rt"].num_rows != expected["mor_ro"].num_rows or not same_rows(
        expected["mor_rt"], expected["mor_ro"], DATA)  # the two MOR views differ (logs not compacted)
    for name, want in expected.items():
        got = pq.read_table(tmp_path / "child" / f"{name}.parquet")
        assert got.num_rows == want.num_rows and same_rows(got, want, DATA + ["_hoodie_commit_time"]), name
    cow_p1 = sorted((r["id"], r["name"]) for r in expected["cow"].to_pylist() if r["part"] == "p1")
    assert [tuple(r) for r in result["view"]] == cow_p1
