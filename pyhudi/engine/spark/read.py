"""Reads with Spark: snapshot, time travel (`as.of.instant`) and incremental, returning Spark DataFrames.

The driver plans the read (`reader/plan.py`, shared with the in-process loader `reader/arrow_read.py`:
which files make up the table at the requested instant) and hands the list to Spark's own parquet
reader; rows never pass through the driver. Filters on partition columns prune directories before
they are listed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pyhudi.engine.spark.read_files import read_base_files
from pyhudi.engine.spark.read_mor import read_mor
from pyhudi.engine.spark.schema import avro_to_spark
from pyhudi.io import schema as S
from pyhudi.reader.plan import COMMIT_TIME, PlannedRead, ReadPlan, meta_names, plan_read, planned_merge_spec
from pyhudi.spark_env import ensure_worker_python
from pyhudi.view.partitions import Condition


def read(spark: SparkSession, path: str | os.PathLike[str], options: dict[str, Any] | None = None,
         filters: Sequence[Sequence[Any]] | None = None, storage_options: dict[str, str] | None = None) -> DataFrame:
    """Read a Hudi table. `filters` are (column, op, value) tuples; partition columns prune files."""
    ensure_worker_python(spark)
    df, _ = plan_and_read(spark, path, options, filters, storage_options)
    return df


def plan_and_read(spark: SparkSession, path: str | os.PathLike[str], options: dict[str, Any] | None,
                  filters: Sequence[Sequence[Any]] | None,
                  storage_options: dict[str, str] | None = None) -> tuple[DataFrame, ReadPlan]:
    planned = plan_read(path, options, filters, storage_options)
    plan, config = planned.plan, planned.config
    df = _load(spark, planned)
    if planned.incremental:
        df = df.filter(_incremental_filter(plan))
    if not config.populate_meta_fields:
        df = df.drop(*[c for c in meta_names() if c in df.columns])
    if planned.pfilter is not None:
        df = df.filter(_filter_expr(planned.pfilter.conditions))
    return df, plan


def _incremental_filter(plan: ReadPlan) -> Column:
    if plan.instants is not None:
        return F.col(COMMIT_TIME).isin(list(plan.instants)) if plan.instants else F.lit(False)
    return (F.col(COMMIT_TIME) > F.lit(plan.begin)) & (F.col(COMMIT_TIME) <= F.lit(plan.end))


def _spark_schema(plan: ReadPlan) -> StructType:
    assert plan.avro is not None
    return avro_to_spark(S.with_meta_fields(plan.avro))


def _load(spark: SparkSession, planned: PlannedRead) -> DataFrame:
    plan, storage, view = planned.plan, planned.storage, planned.view
    schema = _spark_schema(plan)
    if plan.slices is not None:
        return read_mor(spark, storage, plan.slices, schema, planned_merge_spec(planned), view.timeline)
    if not plan.files:
        return spark.createDataFrame([], schema)
    return read_base_files(spark, storage, plan.files, schema, plan.schema, view.timeline)


def _filter_expr(conditions: Sequence[Condition]) -> Column:
    expr: Column = F.lit(True)
    for c in conditions:
        col = F.col(c.column)
        if c.op in ("=", "=="):
            e = col == F.lit(c.value)
        elif c.op == "!=":
            e = col != F.lit(c.value)
        elif c.op == "<":
            e = col < F.lit(c.value)
        elif c.op == "<=":
            e = col <= F.lit(c.value)
        elif c.op == ">":
            e = col > F.lit(c.value)
        elif c.op == ">=":
            e = col >= F.lit(c.value)
        else:
            values = list(c.value) if isinstance(c.value, (list, tuple, set)) else [c.value]
            e = col.isin(values) if c.op == "in" else ~col.isin(values)
        expr = expr & e
    return expr
