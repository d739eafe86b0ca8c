"""A streaming ingest into a Hudi table, in a process of its own, for test_streaming to SIGKILL.

Usage: `python stream_worker.py LANDING TABLE CHECKPOINT`. Runs `pyhudi.write_stream` over the JSON files
in LANDING (one file per micro-batch, trigger availableNow) and exits 0 once they are all ingested;
the test arms a kill point through PYHUDI_FAULT_POINT (pyhudi/faults.py) to kill it part-way.
"""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import pyhudi

SCHEMA = "id long, name string, part string, ts long"
OPTIONS = {"hoodie.table.name": "stream", "hoodie.datasource.write.recordkey.field": "id",
           "hoodie.datasource.write.partitionpath.field": "part", "hoodie.datasource.write.precombine.field": "ts",
           # insert keeps duplicates, so a batch written twice would show as duplicate keys
           "hoodie.datasource.write.operation": "insert", "hoodie.write.lock.filesystem.expire": "2"}


def main(landing: str, table: str, checkpoint: str) -> int:
    spark = (SparkSession.builder.master("local[1]").appName("stream-worker")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
             .getOrCreate())
    df = spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).json(landing)
    query = pyhudi.write_stream(df, table, OPTIONS, checkpoint, trigger={"availableNow": True})
    query.awaitTermination()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
