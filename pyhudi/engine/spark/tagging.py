"""Tagging and profiling: which records update which file group, per index type.

Output of `tag_and_profile`: the records with location columns (file id and
the base instant of its slice; null for inserts), an `is_update` flag, and a
workload profile of counts. Only counts reach the driver.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyhudi.config.registry import size_in_bytes
from pyhudi.engine.spark import index_bloom as bloom_index
from pyhudi.engine.spark import index_simple as simple_index
from pyhudi.index import bucket as bucket_index
from pyhudi.index.merged_keys import liveness_spec
from pyhudi.keygen.spec import PARTITION_COL
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import BaseFile, FileSlice, FileSystemView
from pyhudi.writer.config import WriteConfig
from pyhudi.writer.handles import DELETE_FLAG, IS_UPDATE
from pyhudi.writer.operation import WriteOperation
from pyhudi.writer.profile import WorkloadProfile

LOC_FILE_ID = simple_index.LOC_FILE_ID
LOC_INSTANT = simple_index.LOC_INSTANT
BUCKET_COL = "_pyhudi_bucket_id"


def insert_profile(cfg: WriteConfig, counts: dict[str, tuple[int, int]]) -> WorkloadProfile:
    profile = WorkloadProfile(operation_type=cfg.operation.operation_type)
    for part, (n, d) in counts.items():
        if n - d > 0:
            profile.partition(part).num_inserts = n - d
    return profile


def tag_and_profile(spark: SparkSession, storage: Storage, cfg: WriteConfig, keyed: DataFrame,
                    counts: dict[str, tuple[int, int]], view: FileSystemView | None,
                    level: StorageLevel | None = None) -> tuple[DataFrame, WorkloadProfile]:
    """Tag records and profile them; with `level`, tagged records are persisted before the profile job
    so the index lookup runs once (the write reuses them), as Hudi persists its tagged records."""
    committed = view is not None and bool(view.committed_instants)
    if cfg.index.type == "BUCKET" and view is not None and not cfg.operation.is_overwrite:
        _check_bucket_table(cfg, keyed, view, counts)
    if cfg.index.type == "BUCKET" and cfg.operation is not WriteOperation.BULK_INSERT:
        # An overwrite replaces the partitions' file groups: every record goes to a new bucket file group
        # (Hudi's bucket partitioner with isOverwrite), never into an existing group it then replaces.
        overwrite = cfg.operation.is_overwrite
        return _tag_bucket(spark, cfg, keyed, counts, view if committed and not overwrite else None, level)
    if cfg.operation is WriteOperation.BULK_INSERT or not (cfg.operation.needs_tagging and committed):
        untagged = simple_index.with_empty_location(keyed).withColumn(IS_UPDATE, F.lit(False))
        return untagged.filter(~F.col(DELETE_FLAG)), insert_profile(cfg, counts)
    assert view is not None
    tagged = _tag(spark, storage, cfg, keyed, counts, view)
    # Deletes of keys the table does not have are no-ops.
    tagged = tagged.filter(~(F.col(DELETE_FLAG) & F.col(LOC_FILE_ID).isNull()))
    tagged = tagged.withColumn(IS_UPDATE, F.col(LOC_FILE_ID).isNotNull())
    if level is not None:
        tagged = tagged.persist(level)
    profile = WorkloadProfile(operation_type=cfg.operation.operation_type)
    rows = tagged.groupBy(PARTITION_COL, LOC_FILE_ID, LOC_INSTANT).agg(F.count(F.lit(1)).alias("n")).collect()
    for r in rows:
        profile.count(str(r[PARTITION_COL]), r[LOC_FILE_ID], str(r[LOC_INSTANT]), int(r["n"]))
    return tagged, profile


def _check_bucket_table(cfg: WriteConfig, keyed: DataFrame, view: FileSystemView,
                        counts: dict[str, tuple[int, int]]) -> None:
    """Refuse a BUCKET write the table's file groups cannot serve, before anything is written."""
    from pyhudi.engine.spark.bulk import check_new_buckets

    bucket_index.check_layout(view, cfg.index.bucket_num, list(counts), hash_fields=cfg.bucket_hash_fields)
    if cfg.operation is WriteOperation.BULK_INSERT:
        fields = cfg.bucket_hash_fields
        check_new_buckets(keyed, view, (fields, cfg.index.bucket_num), list(counts))


def _tag(spark: SparkSession, storage: Storage, cfg: WriteConfig, keyed: DataFrame,
         counts: dict[str, tuple[int, int]], view: FileSystemView) -> DataFrame:
    # A non-global index looks only at the batch's partitions (one listing each, not the whole table's).
    partitions = view.partitions_of(None if cfg.index.is_global else list(counts))
    if cfg.index.type == "INMEMORY":
        slices = [s for p in partitions for s in view.latest_merged_file_slices(p)]
        existing = simple_index.existing_log_aware_locations(spark, storage, slices)
        return simple_index.tag(keyed, existing, global_index=False, update_partition_path=False)
    base_files = [bf for p in partitions for bf in view.latest_base_files(p)]
    if cfg.index.type == "BLOOM":
        return bloom_index.tag(spark, storage, keyed, base_files, cfg.index)
    # A global index on merge-on-read confirms keys of groups with logs against their merged slices.
    logged = [s for p in partitions for s in view.latest_merged_file_slices(p) if s.base_file and s.log_files] \
        if cfg.index.is_global and cfg.table.is_mor else []
    if logged:
        spec = liveness_spec(view, cfg.table)
        existing = simple_index.existing_merged_locations(spark, storage, base_files, logged, spec)
    else:
        existing = simple_index.existing_locations(spark, storage, base_files)
    return simple_index.tag(keyed, existing, global_index=cfg.index.is_global,
                            update_partition_path=cfg.index.update_partition_path,
                            small_batch=_broadcastable(spark, sum(n for n, _ in counts.values())),
                            ordering=_stored_ordering(storage, cfg, view, base_files, logged))


def _stored_ordering(storage: Storage, cfg: WriteConfig, view: FileSystemView, base_files: list[BaseFile],
                     logged: list[FileSlice]) -> simple_index.StoredOrdering | None:
    """A global index moving records under DefaultHoodieRecordPayload compares them with the stored ones
    (in the groups' merged slices: `logged` are those with log files)."""
    field = cfg.event_time_field
    if not (cfg.index.is_global and cfg.index.update_partition_path and field):
        return None
    logs = {(s.partition, s.file_id, s.base_file.path if s.base_file else ""): tuple(lf.path for lf in s.log_files)
            for s in logged}
    files = {(bf.partition, bf.file_id): (bf.path, logs.get((bf.partition, bf.file_id, bf.path), ()))
             for bf in base_files}
    return simple_index.StoredOrdering(storage, files, liveness_spec(view, cfg.table, (field,)), field)


# Bytes a key, its partition path and a hash-table entry take when Spark broadcasts them (generous).
_BROADCAST_BYTES_PER_KEY = 128


def _broadcastable(spark: SparkSession, records: int) -> bool:
    """Whether the batch's keys fit Spark's broadcast limit (spark.sql.autoBroadcastJoinThreshold,
    -1 = never), so the index lookup can avoid shuffling the table's keys."""
    try:
        limit = size_in_bytes(spark.conf.get("spark.sql.autoBroadcastJoinThreshold", "10485760b") or "")
    except ValueError:
        return False
    return 0 <= records * _BROADCAST_BYTES_PER_KEY <= limit


def _tag_bucket(spark: SparkSession, cfg: WriteConfig, keyed: DataFrame, counts: dict[str, tuple[int, int]],
                view: FileSystemView | None, level: StorageLevel | None) -> tuple[DataFrame, WorkloadProfile]:
    from pyhudi.engine.spark.bulk import with_bucket_ids

    # The UDF's closure is bound in with_bucket_ids' own scope: Spark Connect pickles a UDF when a plan
    # using it is sent (each action), so a name rebound here later would change the bucket ids.
    with_bid = with_bucket_ids(keyed, (cfg.bucket_hash_fields, cfg.index.bucket_num))
    existing = bucket_index.existing_buckets(view, [p for p in counts]) if view is not None else {}
    bases = {}
    if view is not None:
        for (p, _), fid in existing.items():
            sl = next((s for s in view.latest_file_slices(p) if s.file_id == fid), None)
            bases[(p, fid)] = sl.base_instant if sl else ""
    if existing:
        groups = spark.createDataFrame(
            [(p, b, fid, bases.get((p, fid), "")) for (p, b), fid in existing.items()],
            f"_b_part string, _b_id int, {LOC_FILE_ID} string, {LOC_INSTANT} string")
        cond = (with_bid[PARTITION_COL] == groups["_b_part"]) & (with_bid[BUCKET_COL] == groups["_b_id"])
        tagged = with_bid.join(F.broadcast(groups), cond, "left").drop("_b_part", "_b_id")
    else:
        tagged = simple_index.with_empty_location(with_bid)
    tagged = tagged.filter(~(F.col(DELETE_FLAG) & F.col(LOC_FILE_ID).isNull()))
    tagged = tagged.withColumn(IS_UPDATE, F.col(LOC_FILE_ID).isNotNull())
    if level is not None:
        tagged = tagged.persist(level)
    profile = WorkloadProfile(operation_type=cfg.operation.operation_type)
    rows = tagged.groupBy(PARTITION_COL, LOC_FILE_ID, LOC_INSTANT, BUCKET_COL) \
        .agg(F.count(F.lit(1)).alias("n")).collect()
    for r in rows:
        part, count = str(r[PARTITION_COL]), int(r["n"])
        profile.count(part, r[LOC_FILE_ID], r[LOC_INSTANT], count)
        if r[LOC_FILE_ID] is None:
            bucket_inserts = profile.partition(part).bucket_inserts
            bucket_inserts[int(r[BUCKET_COL])] = bucket_inserts.get(int(r[BUCKET_COL]), 0) + count
    return tagged.drop(BUCKET_COL), profile
