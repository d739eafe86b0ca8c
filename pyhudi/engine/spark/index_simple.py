"""SIMPLE and GLOBAL_SIMPLE index: join incoming keys with the keys stored in latest base files.

Only the `_hoodie_record_key` / `_hoodie_partition_path` columns of the
affected partitions' latest base files are read, by Spark's vectorized
parquet reader; the join runs in Spark. The driver only decides which files
to read. A global index on merge-on-read reads the groups with log files in
executors, merged (index/merged_keys.py), so keys their logs deleted are no
locations; GLOBAL_BLOOM takes this path too.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from pyhudi.engine.base import task_count
from pyhudi.engine.spark.runtime import default_parallelism, map_groups
from pyhudi.index import log_index, merged_keys
from pyhudi.index.locations import DELETE_FLAG, LOC_FILE_ID, LOC_INSTANT, LOC_PARTITION, PARTITION, RECORD_KEY
from pyhudi.reader.log_merge import MergeSpec
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import BaseFile, FileSlice
from pyhudi.writer.binpack import pack_balanced

__all__ = ["DELETE_FLAG", "LOC_FILE_ID", "LOC_INSTANT", "LOC_PARTITION", "PARTITION", "RECORD_KEY"]
KEY_SCHEMA = f"{RECORD_KEY} string, {PARTITION} string"


# Base files up to this size have their keys read by executors with pyarrow (`stored_keys`), larger ones by
# Spark's parquet reader. On small files Spark's reader costs mostly per file (open, and decoding a footer
# that holds Hudi's ~430 KB bloom filter text into JVM strings): profiled on a 300-partition spread upsert,
# reading the keys of 600 files of 166 rows took about 3x what pyarrow tasks take, and was most of the write.
ARROW_LOOKUP_MAX_FILE_BYTES = 16 * 1024 * 1024
_FILE_COST_BYTES = 1 << 20  # a file's fixed cost (open, footer), as bytes, when balancing lookup tasks
_TASK_BYTES = 128 * 1024 * 1024  # at most about this much of base files per lookup task, as Spark splits scans
LOCATION_SCHEMA = StructType([StructField(c, StringType()) for c in ("_loc_key", LOC_PARTITION, LOC_FILE_ID,
                                                                      LOC_INSTANT)])
_LOCATION_ARROW = pa.schema([("_loc_key", pa.string()), (LOC_PARTITION, pa.string()), (LOC_FILE_ID, pa.string()),
                             (LOC_INSTANT, pa.string())])


def existing_locations(spark: SparkSession, storage: Storage, base_files: Sequence[BaseFile]) -> DataFrame | None:
    """(key, partition, fileId, instant) of every record in the given base files: small files read by
    executors with pyarrow, large ones by Spark's parquet reader. The partition is the base file's, as
    Hudi's HoodieKeyLocationFetchHandle pairs a file's keys with the partition it lies in."""
    if not base_files:
        return None
    small = [bf for bf in base_files if bf.size <= ARROW_LOOKUP_MAX_FILE_BYTES]
    large = [bf for bf in base_files if bf.size > ARROW_LOOKUP_MAX_FILE_BYTES]
    parts = []
    if small:
        parts.append(_arrow_locations(spark, storage, small))
    if large:
        parts.append(_spark_locations(spark, storage, large))
    return parts[0] if len(parts) == 1 else parts[0].unionByName(parts[1])


def _spark_locations(spark: SparkSession, storage: Storage, base_files: Sequence[BaseFile]) -> DataFrame:
    from pyhudi.engine.spark.read_files import read_parquet_files

    df = read_parquet_files(spark, [storage.uri(bf.path) for bf in base_files], KEY_SCHEMA)
    name = F.col("_metadata.file_name")
    return df.select(
        F.col(RECORD_KEY).alias("_loc_key"),
        F.col(PARTITION).alias(LOC_PARTITION),
        F.regexp_extract(name, r"^([^_]+)_", 1).alias(LOC_FILE_ID),
        F.regexp_extract(name, r"_([0-9]+)\.parquet$", 1).alias(LOC_INSTANT),
    )


def _arrow_locations(spark: SparkSession, storage: Storage, base_files: Sequence[BaseFile]) -> DataFrame:
    """The files' keys as a DataFrame whose partitions are executor tasks, each reading a share of the files
    (balanced by size) with pyarrow (`runtime.map_groups`: only the file list, a plan, travels to them). A
    Python worker Spark reuses keeps the key columns it read (`stored_keys`' cache: base files never change),
    so the next micro-batch reads only new files."""
    def cost(bf: BaseFile) -> int:
        return bf.size + _FILE_COST_BYTES

    by_size = -(-sum(cost(bf) for bf in base_files) // _TASK_BYTES)
    tasks = max(task_count(len(base_files), default_parallelism(spark)), min(len(base_files), by_size))
    groups = [[(bf.path, bf.partition, bf.file_id, bf.instant) for bf in group]
              for group in pack_balanced(list(base_files), cost, tasks)]

    def read(group: list[tuple[str, str, str, str]]) -> Iterator[pa.RecordBatch]:
        from pyhudi.index.key_cache import stored_keys

        for path, partition, file_id, instant in group:
            keys = stored_keys(storage, path)
            n = len(keys)
            yield pa.RecordBatch.from_arrays(
                [keys.cast(pa.string()), pa.array([partition] * n, pa.string()), pa.array([file_id] * n, pa.string()),
                 pa.array([instant] * n, pa.string())], schema=_LOCATION_ARROW)

    return map_groups(spark, groups, read, LOCATION_SCHEMA)


def existing_merged_locations(spark: SparkSession, storage: Storage, base_files: Sequence[BaseFile],
                              slices: Sequence[FileSlice], spec: MergeSpec) -> DataFrame | None:
    """A global index's lookup on merge-on-read: the keys of base files (Spark's reader), except that a group
    with log files gives only the base keys its merged slice still holds (executors; index/merged_keys), so
    a copy a log block deleted is no location."""
    paths = {bf.path for bf in base_files}
    rows = [r for r in merged_keys.slice_rows(slices) if r[3] in paths]
    merged = {r[3] for r in rows}
    plain = existing_locations(spark, storage, [bf for bf in base_files if bf.path not in merged])
    if not rows:
        return plain
    df = spark.createDataFrame(rows, merged_keys.SLICES_SCHEMA).repartition(
        max(1, min(len(rows), default_parallelism(spark) * 2)))
    live = df.mapInArrow(lambda it: merged_keys.live_base_keys_batches(storage, spec, it), log_index.KEYS_SCHEMA)
    return live if plain is None else plain.unionByName(live)


def existing_log_aware_locations(spark: SparkSession, storage: Storage,
                                 slices: Sequence[FileSlice]) -> DataFrame | None:
    """The INMEMORY index's lookup: keys of base files (Spark's reader) and of log files (executors)."""
    base = existing_locations(spark, storage, [s.base_file for s in slices if s.base_file])
    logs = [(s.partition, s.file_id, s.base_instant, lf.path) for s in slices for lf in s.log_files]
    if not logs:
        return base
    log_df = spark.createDataFrame(logs, log_index.LOGS_SCHEMA).repartition(
        max(1, min(len(logs), default_parallelism(spark) * 2)))
    in_logs = log_df.mapInArrow(lambda it: log_index.log_keys_batches(storage, it), log_index.KEYS_SCHEMA)
    union = in_logs if base is None else base.unionByName(in_logs)
    return union.dropDuplicates(["_loc_key", LOC_PARTITION, LOC_FILE_ID])


def with_empty_location(df: DataFrame) -> DataFrame:
    return (df.withColumn(LOC_FILE_ID, F.lit(None).cast("string"))
            .withColumn(LOC_INSTANT, F.lit(None).cast("string")))


@dataclass(frozen=True)
class StoredOrdering:
    """What a global index needs to compare a moving record with the stored one (DefaultHoodieRecordPayload):
    each file group's base file and log files by (partition, fileId), the merge spec and the ordering field."""

    storage: Storage
    files: dict[tuple[str, str], tuple[str, tuple[str, ...]]]
    spec: MergeSpec
    field: str


def _stay_where_outranked(tagged: DataFrame, ordering: StoredOrdering) -> DataFrame:
    """Moving records (not deletes) whose stored record has a greater ordering value stay at the stored
    location, as Hudi 0.14's mergeForPartitionUpdates keeps the merged (stored) record there; executors read
    the stored values of only those records' files (index/merged_keys.stored_values)."""
    moving = F.coalesce(F.col(LOC_FILE_ID).isNotNull() & (F.col(LOC_PARTITION) != F.col(PARTITION))
                        & ~F.col(DELETE_FLAG), F.lit(False))
    movers = tagged.filter(moving)
    at = movers.columns.index(PARTITION)

    def decide(table: pa.Table) -> pa.Table:
        if not table.num_rows:
            return table
        part, fid = table.column(LOC_PARTITION)[0].as_py(), table.column(LOC_FILE_ID)[0].as_py()
        if (part, fid) not in ordering.files:
            return table
        base, logs = ordering.files[(part, fid)]
        stored = merged_keys.stored_values(ordering.storage, fid, base, logs, ordering.spec,
                                           table.column(RECORD_KEY).combine_chunks(), ordering.field)
        wins = merged_keys.outranked(stored, table.column(ordering.field).combine_chunks())
        homes, parts = (table.column(c).combine_chunks() for c in (LOC_PARTITION, PARTITION))
        return table.set_column(at, table.schema.field(at), pc.if_else(wins, homes, parts))

    checked = movers.groupBy(LOC_PARTITION, LOC_FILE_ID).applyInArrow(decide, movers.schema)
    return tagged.filter(~moving).unionByName(checked)


def tag(df: DataFrame, existing: DataFrame | None, *, global_index: bool,
        update_partition_path: bool, small_batch: bool = False, ordering: StoredOrdering | None = None) -> DataFrame:
    """Add the location columns; for a global index, handle keys that arrive in a new partition.

    `small_batch`: the incoming keys are few enough to broadcast. A left join of the batch with every
    stored key would shuffle and sort the whole table's keys on each write (the batch, the preserved
    side of a left join, cannot be broadcast). Instead the stored keys stream past the broadcast batch
    keys (a semi join: no shuffle of the table), and only the few matching locations are broadcast back
    into the batch.
    """
    if existing is None:
        return with_empty_location(df)
    if small_batch:
        keys = df.select(F.col(RECORD_KEY).alias("_in_key"), F.col(PARTITION).alias("_in_part"))
        semi = existing["_loc_key"] == keys["_in_key"]
        if not global_index:
            semi = semi & (existing[LOC_PARTITION] == keys["_in_part"])
        existing = F.broadcast(existing.join(F.broadcast(keys), semi, "left_semi"))
    if global_index:
        cond = df[RECORD_KEY] == existing["_loc_key"]
    else:
        cond = (df[RECORD_KEY] == existing["_loc_key"]) & (df[PARTITION] == existing[LOC_PARTITION])
    joined = df.join(existing, cond, "left")
    cols = [c for c in df.columns]
    tagged = joined.select(*[joined[c] for c in cols], LOC_FILE_ID, LOC_INSTANT, LOC_PARTITION)
    if not global_index:
        return tagged.drop(LOC_PARTITION)
    if update_partition_path and ordering is not None and ordering.field in df.columns:
        tagged = _stay_where_outranked(tagged, ordering)
    moved = F.col(LOC_FILE_ID).isNotNull() & (F.col(LOC_PARTITION) != F.col(PARTITION))
    if not update_partition_path:
        # The record stays where its key already lives.
        return tagged.withColumn(PARTITION, F.when(moved, F.col(LOC_PARTITION)).otherwise(F.col(PARTITION))) \
            .drop(LOC_PARTITION)
    stay = tagged.filter(~moved)
    old_copy_deleted = tagged.filter(moved).withColumn(PARTITION, F.col(LOC_PARTITION)) \
        .withColumn(DELETE_FLAG, F.lit(True))
    new_copy_inserted = tagged.filter(moved).withColumn(LOC_FILE_ID, F.lit(None).cast("string")) \
        .withColumn(LOC_INSTANT, F.lit(None).cast("string"))
    return stay.unionByName(old_copy_deleted).unionByName(new_copy_inserted).drop(LOC_PARTITION)
