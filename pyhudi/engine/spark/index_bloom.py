"""BLOOM index: prune candidate files by footer key ranges and bloom filters, then confirm.

1. Executors read each candidate file's footer min/max record key.
2. Spark joins incoming keys with the ranges of their partition, comparing keys as Hudi does
   (Java's String.compareTo, UTF-16 code units; `key_order`).
3. Per file, an executor tests the candidate keys against the file's bloom
   filter and confirms survivors against the file's actual key column
   (bloom filters have false positives; a wrong tag would corrupt data).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from pyhudi.engine.spark.index_simple import (
    LOC_FILE_ID,
    LOC_INSTANT,
    PARTITION,
    RECORD_KEY,
    with_empty_location,
)
from pyhudi.engine.spark.keygen import spark_sort_key
from pyhudi.engine.spark.runtime import default_parallelism
from pyhudi.index.bloom_filter import MAX_KEY_FOOTER, MIN_KEY_FOOTER, footer_probe
from pyhudi.io.base_file import parallel_read
from pyhudi.storage import Storage
from pyhudi.view.file_system_view import BaseFile
from pyhudi.writer.config import IndexConfig

FILES_SCHEMA = "b_part string, b_file_id string, b_instant string, b_path string"
RANGES_SCHEMA = FILES_SCHEMA + ", b_min string, b_max string"
FOUND_SCHEMA = f"f_key string, f_part string, {LOC_FILE_ID} string, {LOC_INSTANT} string"


def _ranges(storage: Storage, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        mins, maxs = [], []
        for path in batch.column("b_path").to_pylist():
            with storage.open_input_file(path) as f:
                meta = {k.decode(): v.decode() for k, v in (pq.ParquetFile(f).metadata.metadata or {}).items()}
            mins.append(meta.get(MIN_KEY_FOOTER))
            maxs.append(meta.get(MAX_KEY_FOOTER))
        yield pa.RecordBatch.from_arrays(list(batch.columns) + [pa.array(mins, pa.string()),
                                                                pa.array(maxs, pa.string())],
                                         names=list(batch.schema.names) + ["b_min", "b_max"])


def _check_file(storage: Storage, table: pa.Table) -> pa.Table:
    """Keys of one file's candidates that really are in that file."""
    empty = pa.table({"f_key": pa.array([], pa.string()), "f_part": pa.array([], pa.string()),
                      LOC_FILE_ID: pa.array([], pa.string()), LOC_INSTANT: pa.array([], pa.string())})
    if table.num_rows == 0:
        return empty
    path = table.column("b_path")[0].as_py()
    keys = pc.unique(table.column(RECORD_KEY))
    with storage.open_input_file(path) as f:
        pf = pq.ParquetFile(f)
        meta = pf.metadata.metadata or {}
        bloom = footer_probe(meta)  # a candidate's few keys are probed without decoding the whole filter
        if bloom is not None:
            keys = keys.filter(pa.array(bloom.might_contain_many(keys)))
        if len(keys) == 0:
            return empty
        stored = pf.read(columns=[RECORD_KEY], use_threads=parallel_read(storage, f)).column(RECORD_KEY)
    hits = keys.filter(pc.is_in(keys, value_set=pc.unique(stored)))
    n = len(hits)
    first = table.slice(0, 1)
    return pa.table({
        "f_key": hits, "f_part": pa.array([first.column("b_part")[0].as_py()] * n, pa.string()),
        LOC_FILE_ID: pa.array([first.column("b_file_id")[0].as_py()] * n, pa.string()),
        LOC_INSTANT: pa.array([first.column("b_instant")[0].as_py()] * n, pa.string()),
    })


def tag(spark: SparkSession, storage: Storage, keyed: DataFrame, base_files: Sequence[BaseFile],
        cfg: IndexConfig) -> DataFrame:
    if not base_files:
        return with_empty_location(keyed)
    files = spark.createDataFrame([(bf.partition, bf.file_id, bf.instant, bf.path) for bf in base_files],
                                  FILES_SCHEMA)
    files = files.repartition(max(1, min(len(base_files), default_parallelism(spark) * 2)))
    if cfg.prune_by_ranges:
        ranges = files.mapInArrow(lambda it: _ranges(storage, it), RANGES_SCHEMA)
    else:
        ranges = files.withColumn("b_min", F.lit(None).cast("string")).withColumn("b_max", F.lit(None).cast("string"))
    # Ranges compare in Hudi's order (Java's String.compareTo, see key_order): footers written by Hudi
    # hold its min/max, and Spark's own string order would prune files that do hold the key.
    keys = keyed.select(RECORD_KEY, PARTITION).distinct().withColumn("k_sort", spark_sort_key(F.col(RECORD_KEY)))
    ranges = ranges.withColumn("b_min_sort", spark_sort_key(F.col("b_min"))) \
        .withColumn("b_max_sort", spark_sort_key(F.col("b_max")))
    in_range = (keys[PARTITION] == ranges["b_part"]) & (
        ranges["b_min"].isNull() | (keys["k_sort"] >= ranges["b_min_sort"])) & (
        ranges["b_max"].isNull() | (keys["k_sort"] <= ranges["b_max_sort"]))
    candidates = keys.join(F.broadcast(ranges), in_range, "inner")
    found = candidates.groupBy("b_path").applyInArrow(lambda t: _check_file(storage, t), FOUND_SCHEMA)
    cond = (keyed[RECORD_KEY] == found["f_key"]) & (keyed[PARTITION] == found["f_part"])
    joined = keyed.join(found, cond, "left")
    return joined.select(*[keyed[c] for c in keyed.columns], found[LOC_FILE_ID], found[LOC_INSTANT])
