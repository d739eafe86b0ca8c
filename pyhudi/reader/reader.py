"""Reads: snapshot, time travel (`as.of.instant`) and incremental, returning Spark DataFrames.

The driver decides which files make up the table at the requested instant
(the file-system view) and hands the list to Spark's own parquet reader; rows
never pass through the driver. Filters on partition columns prune directories
before they are listed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from pyhudi.config import keys as K
from pyhudi.config.registry import Options
from pyhudi.errors import InstantNotFoundError, InvalidConfigError
from pyhudi.io import schema as S
from pyhudi.model.instant_time import INIT_INSTANT, normalize_instant
from pyhudi.model.table_config import TableConfig, load_table_config
from pyhudi.reader import incremental
from pyhudi.reader.mor import merge_spec, read_mor
from pyhudi.reader.spark_files import read_base_files
from pyhudi.reader.time_travel import check_readable, format_query_instant
from pyhudi.spark_env import ensure_worker_python
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.builder import build_view
from pyhudi.view.file_system_view import FileSlice, FileSystemView
from pyhudi.view.partitions import Condition, PartitionFilter
from pyhudi.writer.prepare import table_schema

COMMIT_TIME = "_hoodie_commit_time"
log = logging.getLogger(__name__)


@dataclass
class ReadPlan:
    """What a read resolved to: useful for explain-style tooling and tests."""

    query_type: str
    as_of: str | None
    begin: str | None
    end: str | None
    files: list[str]
    schema: StructType
    slices: list[FileSlice] | None = None  # merge-on-read slices to merge (None for base-file reads)
    avro: dict[str, Any] | None = None
    # Completion-time incremental reads: exactly these commits' rows (None: the range (begin, end]).
    instants: tuple[str, ...] | None = None


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
    view = build_view(storage, config, timeline)
    query = opts.get(K.QUERY_TYPE)
    if query == "incremental":
        plan = _incremental_plan(opts, config, timeline, view, pfilter)
    else:
        plan = _snapshot_plan(opts, config, timeline, view, query, pfilter)
    df = _load(spark, storage, plan, view, config)
    if query == "incremental":
        df = df.filter(_incremental_filter(plan))
    if not config.populate_meta_fields:
        df = df.drop(*[c for c in _meta_names() if c in df.columns])
    if pfilter is not None:
        df = df.filter(_filter_expr(pfilter.conditions))
    return df, plan


def _incremental_filter(plan: ReadPlan) -> Column:
    if plan.instants is not None:
        return F.col(COMMIT_TIME).isin(list(plan.instants)) if plan.instants else F.lit(False)
    return (F.col(COMMIT_TIME) > F.lit(plan.begin)) & (F.col(COMMIT_TIME) <= F.lit(plan.end))


def _avro(config: TableConfig, timeline: ActiveTimeline, as_of: str | None) -> dict[str, Any]:
    avro = table_schema(timeline, config, as_of) or table_schema(timeline, config, None)
    return avro or {"type": "record", "name": f"{config.name}_record", "fields": []}


def _schema(avro: dict[str, Any]) -> StructType:
    return S.avro_to_spark(S.with_meta_fields(avro))


def _prune(view: FileSystemView, config: TableConfig, pfilter: PartitionFilter | None, schema: StructType) -> None:
    """Give the view the partition filter typed by the schema rows are read with, before it lists
    anything: pruning must agree with the row filter Spark applies to those rows."""
    assert "partition_paths" not in view.__dict__, "the view listed partitions before the filter was set"
    view.partition_filter = pfilter.bind(schema, config.partition_fields) if pfilter is not None else None


def _snapshot_plan(opts: Options, config: TableConfig, timeline: ActiveTimeline, view: FileSystemView,
                   query: str, pfilter: PartitionFilter | None) -> ReadPlan:
    as_of = as_of_instant(opts)
    if as_of is not None:
        check_readable(view.storage, timeline, as_of)
    avro = _avro(config, timeline, as_of)
    _prune(view, config, pfilter, _schema(avro))
    if config.is_mor and query == "snapshot":
        slices = view.all_latest_merged_file_slices(as_of)
        return ReadPlan(query, as_of, None, None, [], _schema(avro), slices, avro)
    files = [bf.path for bf in view.all_latest_base_files(as_of)]
    return ReadPlan(query, as_of, None, None, files, _schema(avro), None, avro)


def as_of_instant(opts: Options) -> str | None:
    """`as.of.instant` as an inclusive 17-digit bound (Hudi's formats); an empty value is refused, since
    reading the latest snapshot instead would silently answer a different question."""
    if not opts.is_set(K.AS_OF_INSTANT):
        return None
    return format_query_instant(opts.get(K.AS_OF_INSTANT))


def _incremental_plan(opts: Options, config: TableConfig, timeline: ActiveTimeline,
                      view: FileSystemView, pfilter: PartitionFilter | None) -> ReadPlan:
    begin = opts.get(K.BEGIN_INSTANT)
    if not begin:
        raise InvalidConfigError("incremental reads need hoodie.datasource.read.begin.instanttime (exclusive "
                                 f"start; use {INIT_INSTANT} for the beginning)")
    if not config.populate_meta_fields:
        raise InvalidConfigError("incremental reads need _hoodie_commit_time, but this table was written with "
                                 "hoodie.populate.meta.fields=false")
    if opts.is_set(K.AS_OF_INSTANT):
        raise InvalidConfigError(
            f"as.of.instant={opts.get(K.AS_OF_INSTANT)!r} cannot be combined with an incremental query; bound the "
            f"range with {K.END_INSTANT.key} instead, or drop {K.QUERY_TYPE.key}=incremental for a time travel")
    begin = normalize_instant(begin) if begin.strip("0") else "00000000000000000"
    end_opt = opts.get(K.END_INSTANT)
    rng = incremental.resolve(opts, view.storage, timeline, config, begin,
                              normalize_instant(end_opt) if end_opt else None)
    at = _readable_snapshot(opts, view, timeline, rng)
    avro = _avro(config, timeline, at)
    _prune(view, config, pfilter, _schema(avro))
    # A file can only hold rows committed in the range if it was written at or after the range's first commit.
    floor = rng.instants[0] if rng.instants else None

    def fresh(instant: str) -> bool:
        return instant >= floor if floor is not None else instant > begin

    if config.is_mor:
        # A slice can only hold rows committed after `begin` if it was created after it or has logs.
        slices = [] if rng.instants == () else [
            s for s in view.all_latest_merged_file_slices(at) if fresh(s.base_instant) or s.log_files]
        return ReadPlan("incremental", at, begin, rng.end, [], _schema(avro), slices, avro, rng.instants)
    files = [] if rng.instants == () else [bf.path for bf in view.all_latest_base_files(at) if fresh(bf.instant)]
    return ReadPlan("incremental", None, begin, rng.end, files, _schema(avro), None, avro, rng.instants)


def _readable_snapshot(opts: Options, view: FileSystemView, timeline: ActiveTimeline,
                       rng: incremental.IncrementalRange) -> str | None:
    """The instant the range's files are read as of; None (the latest snapshot, filtered by commit time:
    Hudi's full table scan) when that instant's files were cleaned or archived and
    hoodie.datasource.read.incr.fallback.fulltablescan.enable is on."""
    last = timeline.commits().completed().last()
    at = rng.snapshot_at
    if at is None or last is None or at >= last.timestamp:
        return at  # the latest snapshot: nothing it needs was cleaned
    try:
        check_readable(view.storage, timeline, at)
    except InstantNotFoundError as exc:
        if not opts.get(K.INCR_FALLBACK_FULL_TABLE_SCAN):
            raise InstantNotFoundError(f"incremental read up to {rng.end}: {exc} (or set "
                                       f"{K.INCR_FALLBACK_FULL_TABLE_SCAN.key}=true to scan the latest snapshot "
                                       "filtered by commit time)") from exc
        log.info("incremental read falls back to a full table scan: %s", exc)
        return None
    return at


def _load(spark: SparkSession, storage: Storage, plan: ReadPlan, view: FileSystemView,
          config: TableConfig) -> DataFrame:
    if plan.slices is not None:
        assert plan.avro is not None
        event_field = config.precombine_field if (config.payload_class or "").endswith(
            "DefaultHoodieRecordPayload") else None
        spec = merge_spec(view, config, plan.avro, plan.as_of, event_field)
        return read_mor(spark, storage, plan.slices, plan.schema, spec, view.timeline)
    if not plan.files:
        return spark.createDataFrame([], plan.schema)
    target = S.avro_to_arrow(S.with_meta_fields(plan.avro)) if plan.avro is not None else None
    return read_base_files(spark, storage, plan.files, plan.schema, target, view.timeline)


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
