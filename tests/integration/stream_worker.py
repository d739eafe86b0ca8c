"""A streaming ingest into a Hudi table, in a process of its own, for test_streaming to SIGKILL.

Usage: `python stream_worker.py LANDING TABLE CHECKPOINT [plain|services]`. Runs `pyhudi.write_stream` over
the JSON files in LANDING (one file per micro-batch, trigger availableNow) and exits 0 once they are all
ingested; the test arms a kill point through PYHUDI_FAULT_POINT (pyhudi/faults.py) to kill it part-way.

`services` writes a MERGE_ON_READ table whose inserts go to log files (INMEMORY index), with async
compaction every 2 delta commits and async clustering every 3 commits running in the background; the
worker waits for them before it exits (as a job should before stopping its SparkSession).
With WORKER_LOG=<file>, pyhudi's INFO log goes to that file (for debugging a kill sequence).
"""

from __future__ import annotations

import logging
import os
import sys

from pyspark.sql import SparkSession

import pyhudi

SCHEMA = "id long, name string, part string, ts long"
OPTIONS = {"hoodie.table.name": "stream", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
           # insert keeps duplicates, so a batch written twice would show as duplicate keys
           "hoodie.datasource.write.operation": "insert", "hoodie.write.lock.filesystem.expire": str(2 / 60)}  # 2 s
SERVICES = {**OPTIONS, "hoodie.datasource.write.table.type": "MERGE_ON_READ", "hoodie.index.type": "INMEMORY",
            "hoodie.index.bloom.num_entries": "1000", "hoodie.parquet.max.file.size": str(48 * 1024),
            "hoodie.compact.inline.max.delta.commits": "2",  # async compaction: the streaming default on MOR
            "hoodie.clustering.async.enabled": "true", "hoodie.clustering.async.max.commits": "3",
            "hoodie.clustering.plan.strategy.small.file.limit": str(32 * 1024),
            "hoodie.clustering.plan.strategy.target.file.max.bytes": str(48 * 1024),
            "hoodie.table.services.async.retry.interval.ms": "0",
            # background jobs hold the lock while planning; a short lease must not expire under them
            "hoodie.write.lock.filesystem.expire": str(10 / 60)}  # 10 s


def main(landing: str, table: str, checkpoint: str, mode: str = "plain") -> int:
    if os.environ.get("WORKER_LOG"):
        logging.basicConfig(filename=os.environ["WORKER_LOG"], level=logging.INFO,
                            format="%(asctime)s %(threadName)s %(name)s %(message)s")
        logging.getLogger("py4j").setLevel(logging.WARNING)
    spark = (SparkSession.builder.master("local[1]").appName("stream-worker")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .getOrCreate())
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(landing)
    options = SERVICES if mode == "services" else OPTIONS
    query = pyhudi.write_stream(df, table, options, checkpoint, trigger={"availableNow": True})
    query.awaitTermination()
    errors = pyhudi.wait_for_table_services(table)
    spark.stop()
    if errors:
        print(f"background table services failed: {errors}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:5]))
