"""Run SQL in a Spark session with Hive support pointed at a metastore, in a child process, and return
the rows as JSON. The shared test SparkSession has no Hive support and `spark.sql.catalogImplementation`
cannot change once a JVM runs, hence the child.

From a test:

    results = run_probe(metastore_uri, ["SHOW TABLES IN db", "SHOW PARTITIONS db.t"], workdir)
    results[1]["rows"]  # [["dt=2024-01-01"], ...]

As a script (what `run_probe` starts):

    python tests/support/hive_spark_probe.py --metastore-uri thrift://127.0.0.1:9083 --warehouse DIR \
        [--register-pyhudi] "SQL" ["SQL" ...]

prints one JSON document on its last stdout line: a list with, per statement, `sql`, `columns` and `rows`
(values that JSON cannot hold become strings), or `error` (the exception's class and message) for a
statement that failed; the statements after a failure still run. Besides SQL, `@partitions db.t` and
`@table db.t` read Spark's external catalog directly (see `_catalog`), and `@pyhudi-table SQL` runs SQL
whose `db.t` tables are read through `pyhudi.spark.table`. `--register-pyhudi` calls
`pyhudi.spark.register(spark)` first (the `hudi` data source) when that module exists.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import pathlib
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARK = "HIVE_SPARK_PROBE_RESULT "


def run_probe(metastore_uri: str, statements: Sequence[str], workdir: pathlib.Path | str, *,
              register_pyhudi: bool = False, timeout: float = 300.0) -> list[dict[str, Any]]:
    """Run `statements` in a child Spark-with-Hive session; raise with its output when it fails."""
    workdir = pathlib.Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable,
               SPARK_LOCAL_IP="127.0.0.1", PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, str(pathlib.Path(__file__).resolve()), "--metastore-uri", metastore_uri,
           "--warehouse", str(workdir / "spark-warehouse")]
    if register_pyhudi:
        cmd.append("--register-pyhudi")
    done = subprocess.run([*cmd, *statements], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=str(workdir))
    for line in reversed(done.stdout.splitlines()):
        if line.startswith(MARK):
            return json.loads(line[len(MARK):])  # type: ignore[no-any-return]
    raise RuntimeError(f"the Spark-with-Hive probe failed (exit {done.returncode}):\n"
                       f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}")


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if hasattr(value, "asDict"):
        return _jsonable(value.asDict(recursive=True))
    return str(value)


def _session(metastore_uri: str, warehouse: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master("local[1]").appName("hive-spark-probe")
            .config("spark.sql.catalogImplementation", "hive")
            .config("spark.hadoop.hive.metastore.uris", metastore_uri)
            .config("spark.sql.warehouse.dir", warehouse)
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "1")
            .config("spark.driver.extraJavaOptions", f"-Dderby.system.home={warehouse}")
            .enableHiveSupport().getOrCreate())


def _catalog(spark: Any, command: str) -> dict[str, Any]:
    """`@partitions db.t` / `@table db.t`: what Spark's external catalog (its Hive client) reads from the
    metastore, without resolving the table's provider: a table synced as a data source
    (`spark.sql.sources.provider=hudi`) fails SQL lookups in a session without a `hudi` source."""
    verb, _, name = command[1:].partition(" ")
    db, _, table = name.strip().partition(".")
    catalog = spark._jsparkSession.sharedState().externalCatalog()
    if verb == "partitions":
        names = catalog.listPartitionNames(db, table, spark._jvm.scala.Option.empty())
        rows = [[names.apply(i)] for i in range(names.size())]
        return {"sql": command, "columns": ["partition"], "rows": rows}
    if verb == "table":
        t = catalog.getTable(db, table)
        storage = t.storage()
        info = {"tableType": t.tableType().name(), "provider": str(t.provider()),
                "location": str(storage.locationUri()), "inputFormat": str(storage.inputFormat()),
                "serde": str(storage.serde()), "partitionColumns": str(t.partitionColumnNames()),
                "schema": t.schema().simpleString(), "properties": str(t.properties()),
                "storageProperties": str(storage.properties())}
        return {"sql": command, "columns": ["key", "value"], "rows": [[k, v] for k, v in info.items()]}
    raise ValueError(f"unknown probe command {command!r}: @partitions db.t or @table db.t")


def _through_pyhudi(spark: Any, command: str) -> dict[str, Any]:
    """`@pyhudi-table SQL`: the SQL with each `db.t` after FROM/JOIN read through `pyhudi.spark.table`
    (the documented way to query a synced table, see README), as a temp view named `db__t`."""
    import re

    import pyhudi.spark

    sql = command.split(" ", 1)[1]
    for db, table in set(re.findall(r"(?:FROM|JOIN)\s+(\w+)\.(\w+)", sql, flags=re.IGNORECASE)):
        pyhudi.spark.table(spark, f"{db}.{table}").createOrReplaceTempView(f"{db}__{table}")
        sql = re.sub(rf"\b{db}\.{table}\b", f"{db}__{table}", sql)
    frame = spark.sql(sql)
    return {"sql": command, "columns": list(frame.columns), "rows": [_jsonable(list(r)) for r in frame.collect()]}


def _run(spark: Any, sql: str) -> dict[str, Any]:
    try:
        if sql.startswith("@pyhudi-table "):
            return _through_pyhudi(spark, sql)
        if sql.startswith("@"):
            return _catalog(spark, sql)
        frame = spark.sql(sql)
        rows = frame.collect()
        return {"sql": sql, "columns": list(frame.columns), "rows": [_jsonable(list(r)) for r in rows]}
    except Exception as exc:  # noqa: BLE001 - reported to the test, which decides
        return {"sql": sql, "error": f"{type(exc).__name__}: {exc}"[:4000]}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--metastore-uri", required=True)
    parser.add_argument("--warehouse", required=True)
    parser.add_argument("--register-pyhudi", action="store_true")
    parser.add_argument("statements", nargs="*")
    args = parser.parse_args(argv)
    spark = _session(args.metastore_uri, args.warehouse)
    spark.sparkContext.setLogLevel("ERROR")
    try:
        if args.register_pyhudi and importlib.util.find_spec("pyhudi.spark") is not None:
            import pyhudi.spark

            pyhudi.spark.register(spark)
        results = [_run(spark, sql) for sql in args.statements]
    finally:
        spark.stop()
    print(MARK + json.dumps(results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
