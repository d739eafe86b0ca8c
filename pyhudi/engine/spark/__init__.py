"""The Spark engine: the driver hands a list of tasks to executors; only the tasks' results come back.

Items are small (plans, file names, key ranges), never rows: a Spark DataFrame's rows stay on the
executors. Each item becomes one Spark partition (up to the parallelism asked for), so a slow task does
not hold up others queued behind it in the same partition.

This package is the only part of pyhudi that imports pyspark. Besides `SparkEngine` it holds Spark's data
paths over the engine-neutral planning: session.py (building/finding sessions, scheduler pools), write.py
(`SparkWriteClient`) with prepare.py, tagging.py, index_simple.py, index_bloom.py, bulk.py, direct.py,
tasks.py and udf.py; read.py, read_mor.py and read_files.py (`pyhudi.read(spark, ...)`); schema.py and
keygen.py (Spark types and column expressions); streaming.py (Structured Streaming sink) and
streamer_*.py (the streamer's landing reads, validation, error table and foreachBatch sink).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from pyspark.sql import SparkSession

from pyhudi.engine.base import TaskInfo
from pyhudi.engine.spark.runtime import default_parallelism, is_connect, run_tasks
from pyhudi.errors import from_worker
from pyhudi.spark_env import ensure_worker_python

T = TypeVar("T")
R = TypeVar("R")


class SparkEngine:
    """Hudi's HoodieSparkEngineContext, on a classic or a Spark Connect session alike: tasks run as a
    DataFrame of pickled items (runtime.run_tasks), never through the SparkContext."""

    name = "spark"

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        ensure_worker_python(spark)

    @property
    def session(self) -> SparkSession:
        return self.spark

    @property
    def parallelism(self) -> int:
        return default_parallelism(self.spark)

    def map_tasks(self, fn: Callable[[T, TaskInfo], list[R]], items: Sequence[T],
                  parallelism: int | None = None, description: str = "") -> list[R]:
        """`description` is not shown: job descriptions need the SparkContext (not there under Connect)."""
        items = list(items)
        if not items:
            return []
        slices = max(1, min(len(items), parallelism or len(items)))
        try:
            return run_tasks(self.spark, fn, items, slices)
        except Exception as exc:
            raised = from_worker(exc)  # a HudiError raised in a task arrives as a PythonException
            if raised is None:
                raise
            raise raised from exc

    def __repr__(self) -> str:
        return f"SparkEngine({'connect' if is_connect(self.spark) else 'classic'})"
