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

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

from pyspark import TaskContext
from pyspark.sql import SparkSession

from pyhudi.engine.base import TaskInfo
from pyhudi.errors import from_worker
from pyhudi.spark_env import ensure_worker_python

T = TypeVar("T")
R = TypeVar("R")


def _task_info() -> TaskInfo:
    tc = TaskContext.get()
    assert tc is not None, "not inside a Spark task"
    return TaskInfo(tc.partitionId(), tc.stageId(), tc.taskAttemptId())


class SparkEngine:
    """Hudi's HoodieSparkEngineContext."""

    name = "spark"

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        ensure_worker_python(spark)

    @property
    def session(self) -> SparkSession:
        return self.spark

    @property
    def parallelism(self) -> int:
        return max(1, int(self.spark.sparkContext.defaultParallelism))

    def map_tasks(self, fn: Callable[[T, TaskInfo], list[R]], items: Sequence[T],
                  parallelism: int | None = None, description: str = "") -> list[R]:
        items = list(items)
        if not items:
            return []
        slices = max(1, min(len(items), parallelism or len(items)))

        def run(part: Iterable[T]) -> Iterator[R]:
            info = _task_info()
            for item in part:
                yield from fn(item, info)

        sc = self.spark.sparkContext
        if description:
            sc.setJobDescription(description)
        try:
            return sc.parallelize(items, slices).mapPartitions(run).collect()
        except Exception as exc:
            raised = from_worker(exc)  # a HudiError raised in a task arrives as a PythonException
            if raised is None:
                raise
            raise raised from exc
        finally:
            if description:
                sc.setJobDescription(None)  # type: ignore[arg-type]

    def __repr__(self) -> str:
        return f"SparkEngine({self.spark.sparkContext.master})"
