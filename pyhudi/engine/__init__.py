"""Engines run lists of tasks; everything else (planning, commits, conflict checks) is engine-neutral.

Hudi does the same with `HoodieEngineContext`: one write client and one set of table services, run on
Spark, Flink or plain Java. pyhudi has two engines: `LocalEngine` (tasks in the calling process, on a
bounded thread pool) and `SparkEngine` (tasks on Spark executors; `pyhudi.engine.spark`, the only
package that imports pyspark for running tasks). `engine_for(spark)` picks one: no session means local.
"""

from __future__ import annotations

from typing import Any

from pyhudi.engine.base import Engine, TaskInfo
from pyhudi.engine.local import LocalEngine


def engine_for(spark: Any = None, parallelism: int | None = None) -> Engine:
    """The Spark engine for a SparkSession (or an Engine passed as is), else the in-process engine."""
    if spark is None:
        return LocalEngine(parallelism)
    if isinstance(spark, (LocalEngine,)) or hasattr(spark, "map_tasks"):
        return spark  # type: ignore[no-any-return]
    from pyhudi.engine.spark import SparkEngine

    return SparkEngine(spark)


__all__ = ["Engine", "LocalEngine", "TaskInfo", "engine_for"]
