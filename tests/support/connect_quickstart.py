"""The README's Spark quick start, end to end on a Spark Connect session (tests/integration/test_spark_connect.py).

Run in a subprocess of its own: `SparkSession.builder.remote("local[2]")` starts a local Connect server from
PySpark's jars, which runs a classic SparkContext in this process; pyhudi must only talk to the Connect
client. Every check compares rows with a model (and with hudi-rs); the outcome is one JSON line on stdout
(`{"ok": true, ...}`, else the failures), printed last.

Python-side SparkContext methods are wrapped to record any call while the script runs: pyhudi's engine must
use none of them (the server's own context is driven from the JVM, not through these Python methods).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, ROOT)

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

CLASSIC_CALLS: list[str] = []
RESULT: dict[str, Any] = {"ok": False, "checks": {}, "failures": []}
COLS = ["name", "city", "ts", "fare"]
SCHEMA = "uuid string, name string, city string, ts long, fare double"


def _watch_classic() -> None:
    from pyspark import SparkContext

    for name in ("parallelize", "setJobDescription", "setLocalProperty", "statusTracker", "setLogLevel",
                 "range", "union", "broadcast", "accumulator", "setJobGroup"):
        original = getattr(SparkContext, name)

        def wrapper(self: Any, *a: Any, _n: str = name, _o: Any = original, **k: Any) -> Any:
            CLASSIC_CALLS.append(_n)
            return _o(self, *a, **k)

        setattr(SparkContext, name, wrapper)
    prop = SparkContext.defaultParallelism

    def default_parallelism(self: Any) -> int:
        CLASSIC_CALLS.append("defaultParallelism")
        return prop.fget(self)  # type: ignore[no-any-return, union-attr]

    SparkContext.defaultParallelism = property(default_parallelism)  # type: ignore[assignment, method-assign]


_CLOCK = [time.monotonic()]


SERVER_CONF = {"spark.sql.session.timeZone": "UTC", "spark.sql.shuffle.partitions": "4", "spark.log.level": "ERROR",
               "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false",
               "spark.python.unix.domain.socket.enabled": "true"}


def start_local_connect(master: str = "local[2]", conf: dict[str, str] | None = None) -> Any:
    """`SparkSession.builder.remote(master)`, on a free port: the builder always serves a local server on
    15002, so two such processes at once (parallel test runs) collide. This does what the builder does
    (pyspark.sql.session.Builder.getOrCreate: start the server in this process, mark the process as a
    Connect client) with spark.connect.grpc.binding.port set, then connects to that port."""
    import socket

    from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    opts = {**SERVER_CONF, **(conf or {}), "spark.connect.grpc.binding.port": str(port)}
    os.environ["SPARK_LOCAL_REMOTE"] = "1"
    RemoteSparkSession._start_connect_server(master, opts)  # leaves the runtime settings in opts
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    return RemoteSparkSession.builder.remote(f"sc://localhost:{port}").config(map=opts).getOrCreate()


def check(name: str, ok: bool, detail: Any = None) -> None:
    now = time.monotonic()
    RESULT.setdefault("seconds", {})[name] = round(now - _CLOCK[0], 1)
    _CLOCK[0] = now
    RESULT["checks"][name] = bool(ok)
    if not ok:
        RESULT["failures"].append(f"{name}: {detail!r}"[:2000])


def rows(table: Any) -> dict[str, tuple]:
    from tests.helpers import rows_by_key

    return rows_by_key(table, "uuid", COLS)


def frame(spark: Any, records: list[tuple]) -> Any:
    return spark.createDataFrame(records, SCHEMA)


def recs(ids: range, ts: int, city_of: Any = None) -> list[tuple]:
    cities = ["sf", "la", "nyc"]
    return [(f"u{i:04d}", f"n{i}-{ts}", (city_of or (lambda j: cities[j % 3]))(i), ts, float(i) + ts / 10)
            for i in ids]


def apply(model: dict[str, tuple], records: list[tuple]) -> dict[str, tuple]:
    out = dict(model)
    for r in records:
        if r[0] not in out or out[r[0]][2] <= r[3]:
            out[r[0]] = tuple(r[1:])
    return out


def options(name: str, table_type: str = "COPY_ON_WRITE", **extra: str) -> dict[str, str]:
    return {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "uuid",
            "hoodie.datasource.write.partitionpath.field": "city", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "upsert", "hoodie.datasource.write.table.type": table_type,
            "hoodie.cleaner.commits.retained": "2", "hoodie.keep.min.commits": "3", "hoodie.keep.max.commits": "4",
            **extra}


def main(work: str) -> None:
    import warnings

    import pyhudi

    # the builder's start-up settings are also sent as session settings, which Connect refuses (harmless)
    warnings.filterwarnings("ignore", message="Failed to set spark", category=UserWarning)

    from tests.helpers import hudi_rs

    started = time.monotonic()
    spark = start_local_connect()
    RESULT["server_start_s"] = round(time.monotonic() - started, 1)
    check("connect_session", type(spark).__module__.startswith("pyspark.sql.connect."), type(spark))
    _watch_classic()

    from pyhudi.engine import engine_for
    from pyhudi.engine.spark.runtime import default_parallelism
    from pyhudi.engine.spark.session import ConnectStages

    progress = ConnectStages.of(spark)  # what the CLI's status line reads under Connect (progress reports)
    RESULT["parallelism"] = default_parallelism(spark)
    check("parallelism", RESULT["parallelism"] == 2, RESULT["parallelism"])
    check("engine", engine_for(spark).name == "spark")

    def read(path: str, opts: dict[str, str] | None = None) -> dict[str, tuple]:
        return rows(pyhudi.read(spark, path, opts).toArrow())

    # ---------------------------------------------------------------- COW: upserts, deletes, reads
    cow = os.path.join(work, "trips_cow")
    o = options("trips_cow")
    b1 = recs(range(0, 60), 1)
    i1 = pyhudi.write(frame(spark, b1), cow, o)
    model = apply({}, b1)
    check("cow_insert", read(cow) == model and rows(hudi_rs(cow)) == model)
    b2 = recs(range(40, 90), 2)
    # the distributed path (count job, index join, bucket tasks) rather than the one-task write
    i2 = pyhudi.write(frame(spark, b2), cow, {**o, "hoodie.pyhudi.write.single.task.max.bytes": "0",
                                              "hoodie.index.type": "BLOOM"})
    model2 = apply(model, b2)
    check("cow_upsert_distributed", read(cow) == model2 and rows(hudi_rs(cow)) == model2)
    gone = [r for r in b2 if int(r[0][1:]) % 5 == 0]
    pyhudi.write(frame(spark, gone), cow, {**o, "hoodie.datasource.write.operation": "delete",
                                           "hoodie.index.type": "GLOBAL_SIMPLE"})
    model3 = {k: v for k, v in model2.items() if k not in {r[0] for r in gone}}
    check("cow_delete", read(cow) == model3 and rows(hudi_rs(cow)) == model3)
    check("cow_time_travel", read(cow, {"as.of.instant": i1}) == model, i1)
    inc = read(cow, {"hoodie.datasource.query.type": "incremental", "hoodie.datasource.read.begin.instanttime": i1,
                     "hoodie.datasource.read.end.instanttime": i2})
    check("cow_incremental", inc == {r[0]: model2[r[0]] for r in b2})
    sf = rows(pyhudi.read(spark, cow, filters=[("city", "=", "sf")]).toArrow())
    check("cow_filters", sf == {k: v for k, v in model3.items() if v[1] == "sf"})
    # bulk_insert from parquet files (the direct-input optimisation is classic-only: Spark's rows here)
    landing = os.path.join(work, "landing_parquet")
    frame(spark, recs(range(1000, 1040), 1)).write.parquet(landing)
    bulk = os.path.join(work, "bulk")
    pyhudi.write(spark.read.parquet(landing), bulk, options("bulk", **{"hoodie.datasource.write.operation": "bulk_insert"}))
    check("bulk_insert_parquet", read(bulk) == apply({}, recs(range(1000, 1040), 1)))
    pyhudi.write(spark.createDataFrame([], "x string"), bulk,
                 options("bulk", **{"hoodie.datasource.write.operation": "delete_partition",
                                    "hoodie.datasource.write.partitions.to.delete": "la"}))
    check("delete_partition", read(bulk) == {k: v for k, v in apply({}, recs(range(1000, 1040), 1)).items()
                                             if v[1] != "la"})

    # ---------------------------------------------------------------- services on COW
    sizing = {"hoodie.parquet.small.file.limit": "0",
              "hoodie.clustering.plan.strategy.small.file.limit": str(10 << 20),
              "hoodie.clustering.plan.strategy.sort.columns": "fare"}
    for k in range(2):
        batch = recs(range(100 + k * 10, 110 + k * 10), 3)
        pyhudi.write(frame(spark, batch), cow, {**o, **sizing, "hoodie.datasource.write.operation": "insert"})
        model3 = apply(model3, batch)
    clustered = pyhudi.cluster(spark, cow, {**o, **sizing})
    check("cluster", len(clustered) == 1 and read(cow) == model3 and rows(hudi_rs(cow)) == model3, clustered)
    sp = pyhudi.savepoint(spark, cow)
    after = recs(range(0, 10), 9)
    bad = pyhudi.write(frame(spark, after), cow, o)
    check("write_after_savepoint", read(cow) == apply(model3, after))
    rolled = pyhudi.rollback(spark, cow, bad)
    check("rollback", read(cow) == model3, rolled)
    pyhudi.write(frame(spark, after), cow, o)
    pyhudi.restore(spark, cow, sp)
    check("restore", read(cow) == model3 and rows(hudi_rs(cow)) == model3)
    cleaned = pyhudi.clean(spark, cow, o)
    check("clean", read(cow) == model3, cleaned)
    pyhudi.archive(spark, cow, o)
    check("archive", read(cow) == model3 and rows(hudi_rs(cow)) == model3)

    # ---------------------------------------------------------------- MOR: log files, compaction
    mor = os.path.join(work, "trips_mor")
    m = options("trips_mor", "MERGE_ON_READ", **{"hoodie.compact.inline": "false", "hoodie.index.type": "BUCKET",
                                                   "hoodie.bucket.index.num.buckets": "2",
                                                   "hoodie.datasource.compaction.async.enable": "false"})
    mmodel: dict[str, tuple] = {}
    for ts, ids in ((1, range(0, 50)), (2, range(30, 70)), (3, range(0, 20))):
        batch = recs(ids, ts)
        pyhudi.write(frame(spark, batch), mor, m)
        mmodel = apply(mmodel, batch)
    dead = recs(range(0, 50, 7), 4)
    pyhudi.write(frame(spark, dead), mor, {**m, "hoodie.datasource.write.operation": "delete"})
    mmodel = {k: v for k, v in mmodel.items() if k not in {r[0] for r in dead}}
    check("mor_snapshot", read(mor) == mmodel and rows(hudi_rs(mor)) == mmodel)
    compacted = pyhudi.compact(spark, mor, {**m, "hoodie.compact.inline.max.delta.commits": "1"})
    check("compact", len(compacted) == 1 and read(mor) == mmodel and rows(hudi_rs(mor)) == mmodel, compacted)
    check("mor_read_optimized", read(mor, {"hoodie.datasource.query.type": "read_optimized"}) == mmodel)

    # ---------------------------------------------------------------- streaming sink (foreachBatch)
    stream_path, landing_json = os.path.join(work, "stream"), os.path.join(work, "landing_json")
    os.makedirs(landing_json)
    smodel: dict[str, tuple] = {}
    for f in range(2):
        batch = recs(range(f * 10, f * 10 + 15), f + 1)
        smodel = apply(smodel, batch)
        name = os.path.join(landing_json, f"part-{f}.json")
        with open(name, "w") as fh:
            for r in batch:
                fh.write(json.dumps(dict(zip(["uuid", *COLS], r))) + "\n")
        os.utime(name, (1_700_000_000 + f * 60, 1_700_000_000 + f * 60))  # the file source's order
    sdf = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(landing_json)
    q = pyhudi.write_stream(sdf, stream_path, options("stream"), os.path.join(work, "ckpt"),
                            trigger={"availableNow": True})
    q.awaitTermination()
    streamed = read(stream_path)
    check("stream", q.exception() is None and streamed == smodel and rows(hudi_rs(stream_path)) == smodel,
          (q.exception(), sorted(set(streamed.items()) ^ set(smodel.items()))[:6]))
    commits = [n for n in os.listdir(os.path.join(stream_path, ".hoodie")) if n.endswith(".commit")]
    check("stream_commits", len(commits) == 2, commits)

    # ---------------------------------------------------------------- the `hudi` data source
    import pyhudi.spark

    pyhudi.spark.register(spark)
    pyhudi.spark.register(spark)  # idempotent
    ds = rows(spark.read.format("hudi").load(cow).toArrow())
    check("datasource", ds == model3, len(ds))
    ds_path = os.path.join(work, "ds")
    bulk = {"hoodie.table.name": "connect_ds", "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "p", "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.operation": "bulk_insert"}
    generated = spark.range(300).selectExpr("concat('k', id) id", "concat('p', id % 3) p", "id ts").repartition(2)
    generated.write.format("hudi").options(**bulk).mode("append").save(ds_path)
    check("datasource_write", pyhudi.read(ds_path).num_rows == 300 and hudi_rs(ds_path).num_rows == 300)
    check("datasource_filter", spark.read.format("hudi").load(ds_path).filter("p = 'p1'").count() == 100)
    ds_query = (spark.readStream.format("hudi").load(ds_path).writeStream.format("memory").queryName("ds_stream")
                .trigger(availableNow=True).start())
    ds_query.awaitTermination(300)
    check("datasource_stream", spark.sql("SELECT count(*) AS n FROM ds_stream").collect()[0]["n"] == 300)
    RESULT["datasource"] = True

    with progress._lock:
        RESULT["progress_stages"] = len(progress._stages)
    RESULT["classic_calls"] = sorted(set(CLASSIC_CALLS))
    check("no_classic_calls", not CLASSIC_CALLS, CLASSIC_CALLS)
    RESULT["elapsed_s"] = round(time.monotonic() - started, 1)
    spark.stop()


if __name__ == "__main__":
    work = tempfile.mkdtemp(prefix="pyhudi-connect-")
    try:
        main(work)
    except Exception:  # noqa: BLE001 - reported in the JSON line
        RESULT["failures"].append(traceback.format_exc()[-4000:])
    finally:
        shutil.rmtree(work, ignore_errors=True)
    RESULT["ok"] = not RESULT["failures"] and bool(RESULT["checks"])
    print(json.dumps(RESULT), flush=True)
    os._exit(0)
