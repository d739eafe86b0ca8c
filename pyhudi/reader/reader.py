"""Reads: snapshot, time travel (`as.of.instant`) and incremental, returning Spark DataFrames.

The driver decides which files make up the table at the requested instant
(the file-system view) and hands the list to Spark's own parquet reader; rows
never pass through the driver. Filters on partition columns prune directories
before they are listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.model.instant_time import INIT_INSTANT, normalize_instant
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.reader.spark_files import read_parquet_files
from pyhudi.spark_env import ensure_worker_python
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.view.partitions import Condition, PartitionFilter
from pyhudi.writer.prepare import table_schema

COMMIT_TIME = "_hoodie_commit_time"


@dataclass
class ReadPlan:
    """What a read resolved to: useful for explain-style tooling and tests."""

    query_type: str
    as_of: str | None
    begin: str | None
    end: str | None
    files: list[str]
    schema: StructType


def _meta_names() -> list[str]:
    return [f["name"] if isinstance(f, dict) else str(f) for f in S.META_FIELDS]


def read(spark: SparkSession, path: str, options: dict[str, Any] | None = None,
         filters: Sequence[Sequence[Any]] | None = None) -> DataFrame:
    """Read a Hudi table. `filters` are (column, op, value) tuples; partition columns prune files."""
    ensure_worker_python(spark)
    df, _ = plan_and_read(spark, path, options, filters)
    return df


def plan_and_read(spark: SparkSession, path: str, options: dict[str, Any] | None,
                  filters: Sequence[Sequence[Any]] | None) -> tuple[DataFrame, ReadPlan]:
    opts = Options.parse(options)
    storage = Storage(path)
    config = load_table_config(storage)
    timeline = ActiveTimeline.load(storage)
    pfilter = PartitionFilter.from_tuples(filters)
    view = build_view(storage, config, timeline, pfilter)
    query = opts.get(K.QUERY_TYPE)
    if query == "incremental":
        plan = _incremental_plan(opts, config, timeline, view)
    else:
        plan = _snapshot_plan(opts, config, timeline, view, query)
    df = _load(spark, storage, plan)
    if query == "incremental":
        df = df.filter((F.col(COMMIT_TIME) > F.lit(plan.begin)) & (F.col(COMMIT_TIME) <= F.lit(plan.end)))
    if not config.populate_meta_fields:
        df = df.drop(*[c for c in _meta_names() if c in df.columns])
    if pfilter is not None:
        df = df.filter(_filter_expr(pfilter.conditions))
    return df, plan


def _schema(config: TableConfig, timeline: ActiveTimeline, as_of: str | None) -> StructType:
    avro = table_schema(timeline, config, as_of)
    if avro is None:
        avro = table_schema(timeline, config, None)
    if avro is None:
        return StructType(S.avro_to_spark(S.with_meta_fields({"type": "record", "name": "empty",
                                                               "fields": []})).fields)
    return S.avro_to_spark(S.with_meta_fields(avro))


def _snapshot_plan(opts: Options, config: TableConfig, timeline: ActiveTimeline, view: FileSystemView,
                   query: str) -> ReadPlan:
    as_of = opts.get(K.AS_OF_INSTANT)
    as_of = normalize_instant(as_of) if as_of else None
    if config.is_mor and query == "snapshot":
        from pyhudi.reader.mor import ensure_mor_supported

        ensure_mor_supported(view, as_of)
    files = [bf.path for bf in view.all_latest_base_files(as_of)]
    return ReadPlan(query, as_of, None, None, files, _schema(config, timeline, as_of))


def _incremental_plan(opts: Options, config: TableConfig, timeline: ActiveTimeline,
                      view: FileSystemView) -> ReadPlan:
    begin = opts.get(K.BEGIN_INSTANT)
    if not begin:
        raise InvalidConfigError("incremental reads need hoodie.datasource.read.begin.instanttime (exclusive "
                                 f"start; use {INIT_INSTANT} for the beginning)")
    if not config.populate_meta_fields:
        raise InvalidConfigError("incremental reads need _hoodie_commit_time, but this table was written with "
                                 "hoodie.populate.meta.fields=false")
    begin = normalize_instant(begin) if begin.strip("0") else "00000000000000000"
    last = timeline.commits().completed().last()
    end_opt = opts.get(K.END_INSTANT)
    end = normalize_instant(end_opt) if end_opt else (last.timestamp if last else begin)
    files = [bf.path for bf in view.all_latest_base_files(end) if bf.instant > begin]
    return ReadPlan("incremental", None, begin, end, files, _schema(config, timeline, end))


def _load(spark: SparkSession, storage: Storage, plan: ReadPlan) -> DataFrame:
    if not plan.files:
        return spark.createDataFrame([], plan.schema)
    return read_parquet_files(spark, [storage.uri(p) for p in plan.files], plan.schema)


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
