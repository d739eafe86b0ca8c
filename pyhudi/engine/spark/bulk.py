"""bulk_insert's Spark side: dedup and the sort mode's layout as Spark operations, and the BUCKET checks
over a DataFrame. The per-task writing is engine-neutral (bulk_insert.write_tables)."""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from pyhudi.engine.spark.udf import arrow_udf
from pyhudi.index import bucket as bucket_index
from pyhudi.keygen.spec import PARTITION_COL, RECORD_KEY_COL
from pyhudi.view.file_system_view import FileSystemView
from pyhudi.writer.bulk_insert import BUCKET_COL, BucketSpec


def with_bucket_ids(df: DataFrame, spec: BucketSpec) -> DataFrame:
    """Each record's bucket number (Hudi's BucketIdentifier over the record key) as BUCKET_COL."""
    fields, n = spec
    bid_udf = arrow_udf(lambda keys: bucket_index.bucket_ids(keys, fields, n), "int")
    return df.withColumn(BUCKET_COL, bid_udf(F.col(RECORD_KEY_COL)))


def check_new_buckets(keyed: DataFrame, view: FileSystemView, spec: BucketSpec,
                      partitions: list[str]) -> None:
    """Refuse a BUCKET bulk_insert whose records fall into buckets that already have a file group (one
    aggregation, only when a partition of the batch has bucket file groups already)."""
    existing = bucket_index.existing_buckets(view, view.existing_partitions(partitions))
    if not existing:
        return
    rows = (with_bucket_ids(keyed.filter(F.col(PARTITION_COL).isin(sorted({p for p, _ in existing}))), spec)
            .groupBy(PARTITION_COL, BUCKET_COL).count().collect())
    taken = sorted((str(r[PARTITION_COL]), int(r[BUCKET_COL])) for r in rows
                   if (str(r[PARTITION_COL]), int(r[BUCKET_COL])) in existing)
    bucket_index.refuse_taken_buckets(taken, existing)


def layout(df: DataFrame, sort_mode: str, parallelism: int, precombine: str | None, combine: bool,
           bucket: BucketSpec | None = None) -> DataFrame:
    """Apply dedup (if asked) and the sort mode's repartitioning/sorting; with `bucket` (BUCKET index),
    shuffle by (partition, bucket) instead, so every bucket is written by one task."""
    if combine:
        order = [F.col(precombine).desc_nulls_last()] if precombine and precombine in df.columns else [F.lit(1)]
        w = Window.partitionBy(PARTITION_COL, RECORD_KEY_COL).orderBy(*order)
        df = df.withColumn("_pyhudi_rn", F.row_number().over(w)).filter("_pyhudi_rn = 1").drop("_pyhudi_rn")
    n = parallelism if parallelism > 0 else None
    if bucket is not None:
        df = with_bucket_ids(df, bucket)
        df = df.repartition(n, PARTITION_COL, BUCKET_COL) if n else df.repartition(PARTITION_COL, BUCKET_COL)
        return df.sortWithinPartitions(PARTITION_COL, BUCKET_COL, RECORD_KEY_COL)
    if sort_mode == "GLOBAL_SORT":
        df = df.repartitionByRange(n, PARTITION_COL, RECORD_KEY_COL) if n else df.repartitionByRange(
            PARTITION_COL, RECORD_KEY_COL)
        return df.sortWithinPartitions(PARTITION_COL, RECORD_KEY_COL)
    if sort_mode == "PARTITION_SORT":
        df = df.coalesce(n) if n else df
        return df.sortWithinPartitions(PARTITION_COL, RECORD_KEY_COL)
    if sort_mode in ("PARTITION_PATH_REPARTITION", "PARTITION_PATH_REPARTITION_AND_SORT"):
        df = df.repartition(n, PARTITION_COL) if n else df.repartition(PARTITION_COL)
        if sort_mode.endswith("AND_SORT"):
            df = df.sortWithinPartitions(PARTITION_COL, RECORD_KEY_COL)
        return df
    return df.coalesce(n) if n else df
