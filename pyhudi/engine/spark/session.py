"""The pyspark calls behind `pyhudi.spark_env` and the CLI's Spark path: building, finding and stopping a
SparkSession.

They live in the Spark engine so that no module outside `pyhudi/engine/spark*` imports pyspark:
`pyhudi.spark_env` (the Java check, worker-Python pinning) and the CLI only reach pyspark through here,
and only once Spark was asked for. Callers check that Java and pyspark are there first
(`spark_env.check_spark`), so the errors users see name what to install, not a py4j traceback.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession


def spark_version() -> tuple[int, int]:
    major, minor = (int(p) for p in re.findall(r"\d+", pyspark.__version__)[:2])
    return major, minor


def active_context() -> Any:
    """The running SparkContext, or None (the CLI's status line polls it)."""
    return SparkContext._active_spark_context


def build_session(master: str, app_name: str, conf: dict[str, str], quiet: bool, uds_key: str) -> SparkSession:
    """The session pyhudi's CLI, demo and tests use (see spark_env.create_session for why each setting)."""
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.pyspark.python", sys.executable)
               .config("spark.sql.session.timeZone", "UTC")
               # Background table services run their jobs in a pool of their own; FAIR lets a micro-batch's
               # tasks start while a compaction/clustering job is running instead of queueing behind all its
               # tasks (bench/streaming_services.py: micro-batches overlapping a service slowed less)
               .config("spark.scheduler.mode", "FAIR")
               # Python workers talk to their executor over a Unix domain socket, not loopback TCP: over TCP
               # every Python task stalled ~40 ms reading its input (delayed ACK), a large share of a
               # small batch's one-task write (docs/architecture.md, "Small batches")
               .config(uds_key, "true")
               .config("spark.driver.extraJavaOptions", "-Duser.timezone=UTC")
               .config("spark.executor.extraJavaOptions", "-Duser.timezone=UTC"))
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    return spark


@contextmanager
def command_session(create: Callable[[], SparkSession], before_stop: Callable[[], None]) -> Iterator[SparkSession]:
    """A session for one CLI command: one the command started is stopped at the end (after `before_stop`,
    which lets the status line count stages while Spark still answers); one that already existed (a
    notebook, the tests) is kept."""
    created = SparkContext._active_spark_context is None
    spark = create()
    try:
        yield spark
    finally:
        if created:
            before_stop()
            spark.stop()


def empty_frame(spark: SparkSession) -> Any:
    """A DataFrame with no rows (delete_partition by name reads no data)."""
    return spark.createDataFrame([], "_pyhudi_unused string")


def read_files(spark: SparkSession, path: str, fmt: str) -> Any:
    """The streamer's reading rules for `pyhudi write --master`: csv with a header row, inferred types."""
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true").option("inferSchema", "true")
    return reader.load(path)


def set_thread_pool(pool: str | None, description: str) -> None:
    """Run this thread's next Spark jobs in the FAIR scheduler pool `pool` (None: the default pool), under
    `description` (background table services, so a micro-batch's tasks are not queued behind theirs).
    Nothing to do without a running SparkContext."""
    sc = SparkContext._active_spark_context
    if sc is None:
        return
    sc.setLocalProperty("spark.scheduler.pool", pool or None)  # type: ignore[arg-type]
    sc.setJobDescription(description)
