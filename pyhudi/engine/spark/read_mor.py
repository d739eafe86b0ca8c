"""Merge-on-read snapshot and incremental reads.

Slices without log files are plain parquet and go through Spark's own reader.
Slices with log files are merged (base + committed log blocks) in executors,
one slice per task, by `reader.log_merge`; the driver only ships slice
descriptions. The two halves are unioned into one DataFrame.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType

from pyhudi.engine.spark.read_files import read_base_files
from pyhudi.engine.spark.runtime import default_parallelism
from pyhudi.reader.log_merge import MergeSpec, merge_file_slice
from pyhudi.storage import Storage
from pyhudi.timeline.timeline import ActiveTimeline
from pyhudi.view.file_system_view import FileSlice

SLICE_SCHEMA = "partition string, file_id string, base_path string, log_paths string"


@dataclass(frozen=True)
class MorRead:
    base_only: list[str]  # base file paths of slices without logs
    merged: list[FileSlice]  # slices that need a merge


def split_slices(slices: list[FileSlice]) -> MorRead:
    base_only = [s.base_file.path for s in slices if not s.log_files and s.base_file is not None]
    merged = [s for s in slices if s.log_files]
    return MorRead(base_only, merged)


def _merge_task(storage: Storage, spec: MergeSpec, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        for fid, base, logs in zip(batch.column("file_id").to_pylist(), batch.column("base_path").to_pylist(),
                                   batch.column("log_paths").to_pylist()):
            table, _ = merge_file_slice(storage, fid, base, json.loads(logs), spec)
            yield from table.to_batches(max_chunksize=10000)


def read_mor(spark: SparkSession, storage: Storage, slices: list[FileSlice], schema: StructType,
             spec: MergeSpec, timeline: ActiveTimeline | None = None) -> DataFrame:
    """`timeline` tells which base files Spark cannot read with the latest schema (read_files)."""
    plan = split_slices(slices)
    parts: list[DataFrame] = []
    if plan.base_only:
        parts.append(read_base_files(spark, storage, plan.base_only, schema, spec.target_schema, timeline))
    if plan.merged:
        rows = [(s.partition, s.file_id, s.base_file.path if s.base_file else None,
                 json.dumps([lf.path for lf in s.log_files])) for s in plan.merged]
        descs = spark.createDataFrame(rows, SLICE_SCHEMA)
        descs = descs.repartition(max(1, min(len(rows), default_parallelism(spark) * 4)))
        parts.append(descs.mapInArrow(lambda it: _merge_task(storage, spec, it), schema))
    if not parts:
        return spark.createDataFrame([], schema)
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out
